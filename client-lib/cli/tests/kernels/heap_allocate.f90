! Heap arrays of an unmodified Fortran program: ALLOCATE statements named by their source
! lines. Lines matter: the test names the sites by line.
module heap_kernel
  implicit none
contains
  subroutine sweep(a, m)
    integer, intent(in) :: m
    real(8), intent(inout) :: a(m)
    integer :: i
    do i = 1, m
      a(i) = a(i) + 1.0d0
    end do
  end subroutine sweep
end module heap_kernel

program heap_allocate
  use heap_kernel
  implicit none
  integer, parameter :: n = 20000
  real(8), allocatable :: x(:), y(:, :)
  allocate(x(n))
  allocate(y(100, 200))
  x = 1.0d0
  y = 2.0d0
  call sweep(x, n)
  call sweep(y, 100 * 200)
  print '(F0.1)', x(3) + y(4, 5)
  deallocate(x, y)
end program heap_allocate
