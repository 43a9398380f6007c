! Hand-countable kernel for `epcache cc`: N stores, then N loads, over a module array
! (a main program's local array would not be instrumented).
module kernel
  implicit none
  integer, parameter :: n = 4096
  integer(4) :: a(n)
contains
  subroutine fill()
    integer :: i
    do i = 1, n
      a(i) = i - 1
    end do
  end subroutine fill
  function total() result(s)
    integer(8) :: s
    integer :: i
    s = 0
    do i = 1, n
      s = s + a(i)
    end do
  end function total
end module kernel

program capture_sum
  use kernel
  implicit none
  call fill()
  print '(I0)', total()
end program capture_sum
