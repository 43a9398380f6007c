! A main program that allocates its array itself, then works on it: a request on the main
! program, entered before the array exists, counts it from the ALLOCATE on. The array is
! written once and read once (see fortran_allocatables.rs).
program main_allocates
  implicit none
  integer, parameter :: n = 5000
  real(8), allocatable :: t(:)
  real(8) :: s
  allocate(t(n))
  t = 1.0d0
  s = sum(t)
  print '(f8.1)', s
  deallocate(t)
end program main_allocates
