! A module procedure holding an OpenMP loop, called in a loop from the main program:
! gfortran -O2 -fopenmp inlines the calls into the main program, so the procedure's own copy
! never runs and a request on it counts nothing (its loop's body still runs).
module heatmod
  implicit none
  type grid
     integer :: n
     real(8), allocatable :: u(:,:), unew(:,:)
  end type grid
  type(grid) :: g
contains
  subroutine sweep()
    integer :: i, j, n
    n = g%n
    !$omp parallel do private(i)
    do j = 2, n-1
       do i = 2, n-1
          g%unew(i,j) = 0.25d0*(g%u(i-1,j) + g%u(i+1,j) + g%u(i,j-1) + g%u(i,j+1))
       end do
    end do
    !$omp end parallel do
  end subroutine sweep

  subroutine copyback()
    g%u = g%unew
  end subroutine copyback
end module heatmod

program heat
  use heatmod
  implicit none
  integer :: it
  g%n = 100
  allocate(g%u(100,100), g%unew(100,100))
  g%u = 0
  g%u(:,1) = 1
  g%unew = g%u
  do it = 1, 5
     call sweep()
     call copyback()
  end do
  print *, sum(g%u)
end program heat
