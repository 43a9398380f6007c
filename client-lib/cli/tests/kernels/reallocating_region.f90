! A region that deallocates and allocates again the module arrays it then writes, at a larger
! size each call: u(n) first, then v(n), so the new u may lie where the old v was. Each call
! writes every element of both once.
module grid2
  implicit none
  real(8), allocatable :: u(:), v(:)
contains
  subroutine setup(n)
    integer, intent(in) :: n
    deallocate(u)
    deallocate(v)
    allocate(u(n))
    allocate(v(n))
    u = 1.0d0
    v = 2.0d0
  end subroutine setup
end module grid2

program reallocating_region
  use grid2
  implicit none
  integer :: step
  integer, parameter :: sizes(3) = [1000, 4000, 9000]
  allocate(u(10), v(10))
  do step = 1, 3
    call setup(sizes(step))
  end do
  print '(F0.1)', u(1) + v(sizes(3))
end program reallocating_region
