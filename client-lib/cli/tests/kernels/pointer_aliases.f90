! POINTER arrays associated with other arrays' data: two slices of a pool (the usual memory-pool
! pattern, as components of a derived type) and a pointer to an ALLOCATABLE. Each pointer is
! measured over the bytes it points to, and those bytes still count for their owner; a pointer
! at a strided section (`evens`) is not measured over its span.
module aliases
  implicit none
  type view_t
    real(8), pointer, contiguous :: val(:) => null()
  end type view_t
  real(8), allocatable, target :: pool(:), xx(:)
  type(view_t) :: u, v
  real(8), pointer :: q(:) => null()
  real(8), pointer :: evens(:) => null()
contains
  subroutine setup(n)
    integer, intent(in) :: n
    allocate(pool(2 * n), xx(n))
    pool = 1.0d0
    xx = 0.0d0
    u%val => pool(1:n)
    v%val => pool(n + 1:2 * n)
    q => xx
    evens => pool(2:2 * n:2)
  end subroutine setup

  subroutine axpy(n)
    integer, intent(in) :: n
    integer :: i
    do i = 1, n
      u%val(i) = u%val(i) + 2.0d0 * v%val(i)
    end do
  end subroutine axpy

  subroutine viaq(n)
    integer, intent(in) :: n
    integer :: i
    do i = 1, n
      q(i) = q(i) + 1.0d0
    end do
  end subroutine viaq

  subroutine read_evens(total)
    real(8), intent(out) :: total
    total = sum(evens)
  end subroutine read_evens
end module aliases

program pointer_aliases
  use aliases
  implicit none
  integer, parameter :: n = 2048
  integer :: it
  real(8) :: total
  call setup(n)
  do it = 1, 3
    call axpy(n)
  end do
  call viaq(n)
  call read_evens(total)
  print '(f5.1)', u%val(1) + xx(n)
  print '(f7.1)', total
end program pointer_aliases
