! Gauss elimination without pivoting, the EP-Cache paper's example (section 5), in Fortran 90.
!
! A is REAL A(100,100), column-major. The original loop order walks rows of A in its inner loop
! (a stride of 400 bytes), the optimised one columns (contiguous), so read misses of A fall
! sharply. The arrays live in a module: TSan (and so `epcache cc`) does not instrument a main
! program's non-escaping local arrays.
!
! Regions: the module procedures elim_original and elim_optimised (automatic), inside the markers
! gauss_original and gauss_optimised when built with -DEPCACHE_MARKERS under `epcache cc` (the
! markers need epcache's Fortran module; a plain gfortran build leaves them out). Data
! structures: the module variables gauss_mod::a, gauss_mod::b, gauss_mod::x.
!
! Built with -DGAUSS_ALLOCATABLE, the arrays are ALLOCATABLE and allocated by the main program
! (on the heap, as most Fortran programs keep their arrays): epcache follows each one's
! descriptor to its data, so gauss_mod::a is still the array the kernels use, and a tool can ask
! for it before it is allocated.
module gauss_mod
  implicit none
  integer, parameter :: n = 100
#ifdef GAUSS_ALLOCATABLE
  real, allocatable :: a(:, :), b(:), x(:)
#else
  real :: a(n, n), b(n), x(n)
#endif
contains
  ! Diagonally dominant, so elimination without pivoting is stable; b = A * ones, so x = ones.
  subroutine init()
    integer :: i, j
    do j = 1, n
      do i = 1, n
        if (i == j) then
          a(i, j) = real(n)
        else
          a(i, j) = 1.0 / real(i + j - 1)
        end if
      end do
    end do
    do i = 1, n
      b(i) = sum(a(i, :))
    end do
  end subroutine init

  ! Row-oriented update: the inner loop runs along row i of A.
  subroutine elim_original()
    integer :: i, j, k
    real :: l
    do k = 1, n - 1
      do i = k + 1, n
        l = a(i, k) / a(k, k)
        do j = k + 1, n
          a(i, j) = a(i, j) - l * a(k, j)
        end do
        b(i) = b(i) - l * b(k)
      end do
    end do
  end subroutine elim_original

  ! Multipliers stored in place, then column-oriented updates: the inner loop runs down a column.
  subroutine elim_optimised()
    integer :: i, j, k
    real :: l
    do k = 1, n - 1
      do i = k + 1, n
        l = a(i, k) / a(k, k)
        a(i, k) = l
        b(i) = b(i) - l * b(k)
      end do
      do j = k + 1, n
        do i = k + 1, n
          a(i, j) = a(i, j) - a(i, k) * a(k, j)
        end do
      end do
    end do
  end subroutine elim_optimised

  ! Solves the upper triangle; returns the largest error against the known solution (all ones).
  real function back_substitute() result(err)
    integer :: i, j
    real :: s
    err = 0.0
    do i = n, 1, -1
      s = b(i)
      do j = i + 1, n
        s = s - a(i, j) * x(j)
      end do
      x(i) = s / a(i, i)
      err = max(err, abs(x(i) - 1.0))
    end do
  end function back_substitute
end module gauss_mod

program gauss
  use gauss_mod
#ifdef EPCACHE_MARKERS
  use epcache
  use iso_c_binding, only: c_null_char
#endif
  implicit none
  real :: err_original, err_optimised

#ifdef GAUSS_ALLOCATABLE
  allocate(a(n, n), b(n), x(n))
#endif
  call init()
#ifdef EPCACHE_MARKERS
  call epcache_region_begin("gauss_original"//c_null_char)
#endif
  call elim_original()
#ifdef EPCACHE_MARKERS
  call epcache_region_end()
#endif
  err_original = back_substitute()

  call init()
#ifdef EPCACHE_MARKERS
  call epcache_region_begin("gauss_optimised"//c_null_char)
#endif
  call elim_optimised()
#ifdef EPCACHE_MARKERS
  call epcache_region_end()
#endif
  err_optimised = back_substitute()

  print '(a, i0, a, es8.1, a, es8.1)', 'gauss ', n, ': max error original ', err_original, &
    ' optimised ', err_optimised
  if (err_original >= 1e-3 .or. err_optimised >= 1e-3) stop 1
end program gauss
