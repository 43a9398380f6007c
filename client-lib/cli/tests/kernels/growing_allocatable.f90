! A module ALLOCATABLE array allocated again at another size before each call of the region
! that reads it: 1,000, then 3,000, then 2,000 doubles. Element k is read once per call whose
! array has it.
module grid
  implicit none
  real(8), allocatable :: u(:)
contains
  subroutine total(n, s)
    integer, intent(in) :: n
    real(8), intent(inout) :: s
    integer :: i
    do i = 1, n
      s = s + u(i)
    end do
  end subroutine total
end module grid

program growing_allocatable
  use grid
  implicit none
  integer :: step
  integer, parameter :: sizes(3) = [1000, 3000, 2000]
  real(8) :: s
  s = 0
  do step = 1, 3
    allocate(u(sizes(step)))
    u = 1.0d0
    call total(sizes(step), s)
    deallocate(u)
  end do
  print '(F0.1)', s
end program growing_allocatable
