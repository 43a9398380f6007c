! Prints where gfortran's ALLOCATEs place a program's arrays relative to the first, as a
! monitored run must print what the plain build prints (heap_layout.rs); not `local`, which
! the C library maps on its own, at a page the kernel picks.
module fields
  implicit none
  real(8), allocatable :: u(:), v(:), w(:,:)
end module fields

program heap_layout
  use fields
  implicit none
  integer(8) :: base
  integer :: n
  real(8), allocatable :: local(:)
  n = 4096
  allocate(u(n), v(n))
  allocate(w(64, 64))
  u = 1; v = 2; w = 3
  allocate(local(100000))
  local = 4
  base = loc(u)
  print '(i0)', loc(v) - base
  print '(i0)', loc(w) - base
  deallocate(v)
  allocate(v(2 * n))
  v = 5
  print '(i0)', loc(v) - base
  write(0, *) sum(u) + sum(v) + sum(w) + sum(local)
end program heap_layout
