! Two arrays a main program allocates in one statement (their descriptors are the main
! program's locals, which the runtime cannot follow): each is named by its own name and the
! statement's line. Lines matter: the test names the statement by its line.
program statement_arrays
  implicit none
  integer, parameter :: n = 200
  real(8), allocatable :: t(:,:), tnew(:,:)
  integer :: sweep
  allocate(t(n, n), tnew(n, n))
  t = 1.0d0
  tnew = 0.0d0
  do sweep = 1, 2
    call relax(t, tnew, n)
  end do
  print '(f4.1)', t(2, 2) + tnew(2, 2)
contains
  subroutine relax(a, b, m)
    integer, intent(in) :: m
    real(8), intent(inout) :: a(m, m), b(m, m)
    integer :: i, j
    do j = 2, m - 1
      do i = 2, m - 1
        b(i, j) = 0.25d0 * (a(i - 1, j) + a(i + 1, j) + a(i, j - 1) + a(i, j + 1))
      end do
    end do
  end subroutine relax
end program statement_arrays
