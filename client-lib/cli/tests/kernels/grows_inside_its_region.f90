! One instance of `setup` allocates grid::u at 1,000 doubles, writes it, and allocates it
! again at 3,000 (see fortran_allocatables.rs).
module grid
  implicit none
  real(8), allocatable :: u(:)
end module

program grows_inside_its_region
  use grid
  implicit none
  call setup()
  print '(f4.1)', u(5)
contains
  subroutine setup()
    allocate(u(1000))
    u = 1.0d0
    deallocate(u)
    allocate(u(3000))
    u = 2.0d0
  end subroutine
end program
