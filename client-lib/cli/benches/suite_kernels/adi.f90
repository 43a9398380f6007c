! ADI integration (as in the METRIC and EP-Cache papers' kernel): a sweep along the columns,
! unit stride in Fortran, then one along the rows, of stride n.
module adi_data
  implicit none
  integer, parameter :: n = 1024
  real(8) :: x(n, n), a(n, n), b(n, n)
end module adi_data

program adi
  use adi_data
  implicit none
  integer :: i, j, t, reps
  character(len=32) :: arg
  real(8) :: total
  reps = 1
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *) reps
  end if
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
end program adi
