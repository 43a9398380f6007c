! A five-point Jacobi sweep over module arrays, for recording a partial trace of some of its
! instances: `sweep` runs three times, the caches warm from the sweeps before.
module grids
  implicit none
  integer, parameter :: n = 96
  real(8) :: u(n, n), v(n, n)
contains
  subroutine sweep(src, dst)
    real(8), intent(in) :: src(n, n)
    real(8), intent(out) :: dst(n, n)
    integer :: i, j
    do j = 2, n - 1
      do i = 2, n - 1
        dst(i, j) = 0.25d0 * (src(i - 1, j) + src(i + 1, j) + src(i, j - 1) + src(i, j + 1))
      end do
    end do
  end subroutine sweep
end module grids

program partial_sweep
  use grids
  implicit none
  integer :: i, j
  do j = 1, n
    do i = 1, n
      u(i, j) = mod(i * 31 + j * 17, 101)
    end do
  end do
  v = 0
  call sweep(u, v)
  call sweep(v, u)
  call sweep(u, v)
  print '(F0.3)', sum(v)
end program partial_sweep
