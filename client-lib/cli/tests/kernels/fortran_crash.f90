! A Fortran program that crashes (a write through a null pointer) after one sweep of a module
! array: gfortran's backtrace handler, installed at the main program's start, took the crash
! signals before the report could be written (runtime_signals.rs).
module kernel
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
  subroutine crash(p)
    integer, pointer :: p
    p = 7
  end subroutine crash
end module kernel

program fortran_crash
  use kernel
  implicit none
  integer, pointer :: p => null()
  call sweep()
  call crash(p)
  print *, a(1)
end program fortran_crash
