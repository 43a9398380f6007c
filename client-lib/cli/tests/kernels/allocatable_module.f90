! A module ALLOCATABLE array, used, deallocated, allocated again at another size with other
! bounds and used again, and a module POINTER array: each named by its module and measured over
! its data. Lines matter: the test names the allocations by line.
module fields
  implicit none
  real(8), allocatable :: u(:)
  real(8), pointer :: p(:) => null()
contains
  subroutine first_sweep(n)
    integer, intent(in) :: n
    integer :: i
    do i = 1, n
      u(i) = u(i) + 1.0d0
    end do
  end subroutine first_sweep

  subroutine second_sweep(n)
    integer, intent(in) :: n
    integer :: i
    do i = 0, n - 1
      u(i) = u(i) * 3.0d0
    end do
  end subroutine second_sweep

  subroutine touch_pointer(n)
    integer, intent(in) :: n
    integer :: i
    do i = 1, n
      p(i) = p(i) * 2.0d0
    end do
  end subroutine touch_pointer
end module fields

program allocatable_module
  use fields
  implicit none
  integer, parameter :: n1 = 2000, n2 = 3000, np = 2048
  allocate(u(n1))
  u = 1.0d0
  call first_sweep(n1)
  deallocate(u)
  allocate(u(0:n2 - 1))
  u = 2.0d0
  call second_sweep(n2)
  allocate(p(np))
  p = 1.5d0
  call touch_pointer(np)
  print '(F0.1)', u(0) + u(n2 - 1) + p(np)
  deallocate(u)
  deallocate(p)
end program allocatable_module
