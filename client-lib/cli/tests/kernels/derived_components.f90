! ALLOCATABLE and POINTER components of module variables of a derived type, one nested a type
! deeper, two allocated on one line: each is named by its variable and component path
! (`state::rho%val`, `state::rho%grid%u`) and measured over its data.
module state
  implicit none
  type grid_t
    real(8), allocatable :: u(:,:)
  end type grid_t
  type field_t
    real(8), allocatable :: val(:)
    real(8), pointer :: p(:) => null()
    type(grid_t) :: grid
  end type field_t
  type(field_t) :: rho, vel
contains
  subroutine setup(n)
    integer, intent(in) :: n
    allocate(rho%val(n), vel%val(n))
    allocate(rho%grid%u(n, 2))
    rho%val = 1.0d0
    vel%val = 2.0d0
  end subroutine setup

  subroutine advect(n)
    integer, intent(in) :: n
    integer :: i
    do i = 1, n
      rho%val(i) = rho%val(i) + vel%val(i)
    end do
  end subroutine advect

  subroutine fill_grid(n)
    integer, intent(in) :: n
    integer :: i
    do i = 1, n
      rho%grid%u(i, 2) = rho%val(i)
    end do
  end subroutine fill_grid
end module state

program derived
  use state
  implicit none
  integer, parameter :: n = 4000
  call setup(n)
  call advect(n)
  call fill_grid(n)
  print '(f4.1)', rho%val(1) + rho%grid%u(n, 2)
end program derived
