! A contained procedure holding a parallel loop: gfortran names its outlined body
! `relax.0._omp_fn.0`, after the procedure's local symbol `relax.0`.
program omp_contained
  implicit none
  integer, parameter :: n = 4096
  real(8) :: t(n), u(n)
  integer :: k
  t = 1.0d0
  u = 2.0d0
  do k = 1, 3
    call relax()
  end do
  print '(f12.1)', sum(t)
contains
  subroutine relax()
    integer :: i
    !$omp parallel do schedule(static)
    do i = 1, n
      t(i) = t(i) + u(i)
    end do
    !$omp end parallel do
  end subroutine relax
end program omp_contained
