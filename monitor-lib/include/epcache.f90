! The epcache Fortran module: region markers and array registration for Fortran programs built
! with `epcache cc`, which compiles this module and puts it on the include path.
!
!   use epcache
!   call epcache_region_begin("elimination"//c_null_char)
!   ...
!   call epcache_region_end()
!   call epcache_register("a"//c_null_char, c_loc(a), int(sizeof(a), c_int64_t))  ! a needs TARGET
!
! A region is keyed by the source line of its epcache_region_begin call; regions nest and
! epcache_region_end closes the innermost. Names end with c_null_char, as C strings do.
module epcache
  use, intrinsic :: iso_c_binding, only: c_char, c_ptr, c_int64_t, c_null_char, c_loc
  implicit none
  interface
    ! Begins a marker region called name at the caller's source line.
    subroutine epcache_region_begin(name) bind(C, name="epcache_region_begin")
      import :: c_char
      character(kind=c_char), dimension(*), intent(in) :: name
    end subroutine epcache_region_begin

    ! Ends the innermost marker region.
    subroutine epcache_region_end() bind(C, name="epcache_region_end")
    end subroutine epcache_region_end

    ! Registers bytes bytes at addr as the data structure name.
    subroutine epcache_register(name, addr, bytes) bind(C, name="epcache_register")
      import :: c_char, c_ptr, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: name
      type(c_ptr), value :: addr
      integer(c_int64_t), value :: bytes
    end subroutine epcache_register

    ! Forgets the data structure registered at addr (before deallocating it).
    subroutine epcache_unregister(addr) bind(C, name="epcache_unregister")
      import :: c_ptr
      type(c_ptr), value :: addr
    end subroutine epcache_unregister
  end interface
end module epcache
