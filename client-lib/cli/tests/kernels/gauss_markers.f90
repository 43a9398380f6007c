! Gauss elimination and back substitution (Fortran 90) for tests/it/fortran_markers.rs: module
! arrays with TARGET, two subroutines, epcache marker regions around their calls, and the
! solution in an ALLOCATABLE array registered with epcache_register. Line numbers of the
! epcache_region_begin calls are asserted by the test; keep them when editing.
module gauss_mod
  implicit none
  integer, parameter :: n = 60
  real(8), target :: a(n, n)
  real(8), target :: rhs(n)
contains
  subroutine elim()
    integer :: i, j, k
    do k = 1, n - 1
      do j = k + 1, n
        do i = k + 1, n
          a(i, j) = a(i, j) - a(i, k) * a(k, j) / a(k, k)
        end do
      end do
      do i = k + 1, n
        rhs(i) = rhs(i) - a(i, k) * rhs(k) / a(k, k)
      end do
    end do
  end subroutine elim

  subroutine back_subst(x)
    real(8), intent(inout) :: x(n)
    integer :: i, j
    do i = n, 1, -1
      x(i) = rhs(i)
      do j = i + 1, n
        x(i) = x(i) - a(i, j) * x(j)
      end do
      x(i) = x(i) / a(i, i)
    end do
  end subroutine back_subst
end module gauss_mod

program gauss_markers
  use, intrinsic :: iso_c_binding, only: c_null_char, c_loc, c_int64_t
  use epcache
  use gauss_mod
  implicit none
  real(8), allocatable, target :: x(:)
  integer :: i, j

  do j = 1, n
    do i = 1, n
      a(i, j) = 1.0d0 / real(i + j, 8)
    end do
    a(j, j) = real(n, 8)
    rhs(j) = 1.0d0
  end do
  allocate(x(n))
  call epcache_register("x"//c_null_char, c_loc(x), int(sizeof(x), c_int64_t))

  call epcache_region_begin("elimination"//c_null_char)
  call elim()
  call epcache_region_end()

  call epcache_region_begin("substitution"//c_null_char)
  call back_subst(x)
  call epcache_region_end()

  print '(F12.9)', x(1)
  call epcache_unregister(c_loc(x))
  deallocate(x)
end program gauss_markers
