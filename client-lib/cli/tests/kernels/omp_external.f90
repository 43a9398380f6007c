! An external subroutine (outside any module) holding an OpenMP loop: gfortran names its body
! `twice_._omp_fn.0` after the linkage name, while its region is `twice` (capture_cc.rs).
subroutine twice(a, n)
  implicit none
  integer, intent(in) :: n
  real(8), intent(inout) :: a(n)
  integer :: i
  !$omp parallel do schedule(static) num_threads(2)
  do i = 1, n
    a(i) = 2 * a(i)
  end do
  !$omp end parallel do
end subroutine twice

program omp_external
  implicit none
  integer, parameter :: n = 100000
  real(8), allocatable :: a(:)
  allocate(a(n))
  a = 1
  call twice(a, n)
  print '(f0.1)', sum(a)
end program omp_external
