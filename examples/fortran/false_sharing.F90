! False sharing and its fix in Fortran with OpenMP (see examples/c/false_sharing.c): each
! thread adds to a counter of its own, N times; in `packed` the counters are neighbours in one
! cache line, in `padded` a line (8 integers of 8 bytes) apart. gfortran has no alignment
! attribute for module variables, so the counters start at the first element of `packed` that
! begins a 64-byte line (`first`). The counters live in a module: TSan does not instrument a
! main program's local arrays. The additions come in rounds of `round` that end at a barrier,
! as in the C version.
!
!   epcache cc -- gfortran -O1 -fopenmp -o false_sharing_f examples/fortran/false_sharing.F90
!   epcache run --cores 2 --all-regions -- ./false_sharing_f
module counters
  use iso_fortran_env, only: int64
  implicit none
  integer, parameter :: threads = 2
  integer(int64), parameter :: round = 100
  integer(int64), volatile :: packed(16)
  integer(int64), volatile :: padded(8, threads)
contains
  ! The index of the first element of `packed` that starts a 64-byte line.
  integer function first()
    first = 1 + int(mod(64 - mod(loc(packed(1)), 64_int64), 64_int64) / 8)
  end function first

  subroutine count_packed(n)
    use omp_lib
    integer(int64), intent(in) :: n
    integer(int64) :: i, r
    integer :: t
    !$omp parallel num_threads(threads) private(i, r, t)
    t = first() + omp_get_thread_num()
    do r = 1, n / round
      do i = 1, round
        packed(t) = packed(t) + 1
      end do
      !$omp barrier
    end do
    !$omp end parallel
  end subroutine count_packed

  subroutine count_padded(n)
    use omp_lib
    integer(int64), intent(in) :: n
    integer(int64) :: i, r
    integer :: t
    !$omp parallel num_threads(threads) private(i, r, t)
    t = omp_get_thread_num() + 1
    do r = 1, n / round
      do i = 1, round
        padded(1, t) = padded(1, t) + 1
      end do
      !$omp barrier
    end do
    !$omp end parallel
  end subroutine count_padded
end module counters

program false_sharing
  use counters
  implicit none
  integer(int64), parameter :: n = 200000
  packed = 0
  padded = 0
  call count_packed(n)
  call count_padded(n)
  print '(a, i0, a, i0)', 'packed ', sum(packed), ' padded ', sum(padded(1, :))
  if (sum(packed) /= threads * n .or. sum(padded(1, :)) /= threads * n) then
    print '(a)', 'wrong sums'
    stop 1
  end if
end program false_sharing
