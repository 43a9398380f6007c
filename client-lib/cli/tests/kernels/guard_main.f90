! A Fortran main program whose C part handles its own SIGSEGV (guard_handler.c): one sweep,
! a write to the guard page the handler makes writable, then ten more sweeps.
module guarded
  implicit none
  integer, parameter :: n = 4096
  real(8) :: a(n)
contains
  subroutine sweep()
    integer :: i
    do i = 1, n
      a(i) = a(i) + 1.0d0
    end do
  end subroutine sweep
end module guarded

program guard_main
  use guarded
  implicit none
  interface
    subroutine touch_guard() bind(c)
    end subroutine touch_guard
  end interface
  integer :: k
  call sweep()
  call touch_guard()
  do k = 1, 10
    call sweep()
  end do
  print '(A)', 'end'
end program guard_main
