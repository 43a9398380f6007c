! ADI integration (as in the METRIC and EP-Cache papers' kernel): a sweep along the columns,
! unit stride in Fortran, then one along the rows, of stride n.
!
! The three arrays are carved out of one allocation at its first 2 MiB boundary and passed to
! the kernel as explicit-shape arrays, so, as the C kernels' arrays (common.h), they start in set
! 0 of every cache the bench simulates whatever the runtime linked in before them: static
! module arrays would follow the runtime's own data in .bss and move with its size.
module adi_data
  use iso_c_binding, only: c_intptr_t, c_loc
  implicit none
  integer, parameter :: n = 1024
  integer, parameter :: alignment = 2 * 1024 * 1024
contains
  ! The index of the first element of `pool` at a multiple of `alignment` bytes.
  integer function aligned_start(pool)
    real(8), target, intent(in) :: pool(:)
    integer(c_intptr_t) :: address
    address = transfer(c_loc(pool(1)), address)
    aligned_start = int(modulo(-address, int(alignment, c_intptr_t)) / 8) + 1
  end function aligned_start

  subroutine sweeps(x, a, b, reps)
    real(8), intent(inout) :: x(n, n), a(n, n), b(n, n)
    integer, intent(in) :: reps
    integer :: i, j, t
    real(8) :: total
    do j = 1, n
      do i = 1, n
        x(i, j) = dble(mod(i + j, 11)) + 1.0d0
        a(i, j) = dble(mod(i * j, 7)) * 0.01d0
        b(i, j) = dble(mod(i + 2 * j, 5)) + 2.0d0
      end do
    end do
    do t = 1, reps
      do j = 1, n
        do i = 2, n
          x(i, j) = x(i, j) - x(i - 1, j) * a(i, j) / b(i - 1, j)
          b(i, j) = b(i, j) - a(i, j) * a(i, j) / b(i - 1, j)
        end do
      end do
      do i = 1, n
        do j = 2, n
          x(i, j) = x(i, j) - x(i, j - 1) * a(i, j) / b(i, j - 1)
          b(i, j) = b(i, j) - a(i, j) * a(i, j) / b(i, j - 1)
        end do
      end do
    end do
    total = 0.0d0
    do j = 1, n
      do i = 1, n
        total = total + x(i, j)
      end do
    end do
    write (*, '(es14.6)') total
  end subroutine sweeps
end module adi_data

program adi
  use adi_data
  implicit none
  integer :: reps, k
  character(len=32) :: arg
  real(8), allocatable, target :: pool(:)
  reps = 1
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *) reps
  end if
  allocate (pool(3 * n * n + alignment / 8))
  k = aligned_start(pool)
  call sweeps(pool(k), pool(k + n * n), pool(k + 2 * n * n), reps)
end program adi
