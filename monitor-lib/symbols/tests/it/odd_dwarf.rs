//! Hand-written DWARF that gfortran and gcc do not emit but a reader must survive: an array declared `a(5:0)` with its bounds as written, an all-ones unsigned upper bound, a function whose `DW_AT_high_pc` length wraps the address space (each once panicked, u64 underflow or overflow, inside the runtime's start-up in a debug build; now each is an empty or absent size or range), and locations that are an address plus an offset, a dereference, or an offset past the address space's top.

use epcache_symbols::DebugInfo;

use crate::programs::build;

/// A program whose one compilation unit (`odd.f90`, DWARF 4, Fortran 95) declares the odd
/// arrays `a` and `huge`, the variables `second`, `indirect` and `wraps` by their locations,
/// and the function `main` with a wrapping length. Neither array symbol
/// carries an ELF size, so the sizes come from the DWARF types.
const PROGRAM: &str = r#"	.text
	.globl	main
	.type	main, @function
main:
	xorl	%eax, %eax
	ret
	.size	main, .-main

	.bss
	.globl	zm_a
	.p2align 4
zm_a:
	.zero	16
	.globl	zm_huge
zm_huge:
	.zero	16

	.section	.debug_abbrev,"",@progbits
# 1 compile_unit: name string, language data1
	.uleb128 1
	.uleb128 0x11
	.byte	1
	.uleb128 0x03
	.uleb128 0x08
	.uleb128 0x13
	.uleb128 0x0b
	.byte	0, 0
# 2 base_type: byte_size data1, encoding data1, name string
	.uleb128 2
	.uleb128 0x24
	.byte	0
	.uleb128 0x0b
	.uleb128 0x0b
	.uleb128 0x3e
	.uleb128 0x0b
	.uleb128 0x03
	.uleb128 0x08
	.byte	0, 0
# 3 array_type: type ref4
	.uleb128 3
	.uleb128 0x01
	.byte	1
	.uleb128 0x49
	.uleb128 0x13
	.byte	0, 0
# 4 subrange_type: type ref4, lower_bound sdata, upper_bound sdata
	.uleb128 4
	.uleb128 0x21
	.byte	0
	.uleb128 0x49
	.uleb128 0x13
	.uleb128 0x22
	.uleb128 0x0d
	.uleb128 0x2f
	.uleb128 0x0d
	.byte	0, 0
# 5 variable: name string, type ref4, location exprloc
	.uleb128 5
	.uleb128 0x34
	.byte	0
	.uleb128 0x03
	.uleb128 0x08
	.uleb128 0x49
	.uleb128 0x13
	.uleb128 0x02
	.uleb128 0x18
	.byte	0, 0
# 6 subprogram: name string, low_pc addr, high_pc data8 (a length)
	.uleb128 6
	.uleb128 0x2e
	.byte	0
	.uleb128 0x03
	.uleb128 0x08
	.uleb128 0x11
	.uleb128 0x01
	.uleb128 0x12
	.uleb128 0x07
	.byte	0, 0
# 7 subrange_type: type ref4, upper_bound data8
	.uleb128 7
	.uleb128 0x21
	.byte	0
	.uleb128 0x49
	.uleb128 0x13
	.uleb128 0x2f
	.uleb128 0x07
	.byte	0, 0
	.byte	0

	.section	.debug_info,"",@progbits
.Lcu:
	.long	.Lcu_end - .Lcu_start
.Lcu_start:
	.value	4
	.long	.debug_abbrev
	.byte	8
	.uleb128 1
	.string	"odd.f90"
	.byte	0x0e	# DW_LANG_Fortran95
.Lreal8:
	.uleb128 2
	.byte	8
	.byte	4
	.string	"real(kind=8)"
.Lindex:
	.uleb128 2
	.byte	8
	.byte	5
	.string	"integer(kind=8)"
.Luindex:
	.uleb128 2
	.byte	8
	.byte	7
	.string	"unsigned"
# a(5:0) with its bounds as declared (gfortran would write 5..4)
.Lempty:
	.uleb128 3
	.long	.Lreal8 - .Lcu
	.uleb128 4
	.long	.Lindex - .Lcu
	.sleb128 5
	.sleb128 0
	.byte	0
# an unsigned upper bound of all ones, no lower bound
.Lhuge:
	.uleb128 3
	.long	.Lreal8 - .Lcu
	.uleb128 7
	.long	.Luindex - .Lcu
	.quad	-1
	.byte	0
	.uleb128 5
	.string	"a"
	.long	.Lempty - .Lcu
	.uleb128 9
	.byte	0x03
	.quad	zm_a
	.uleb128 5
	.string	"huge"
	.long	.Lhuge - .Lcu
	.uleb128 9
	.byte	0x03
	.quad	zm_huge
# second = a + 8: a COMMON member placed as the block's address plus its offset
	.uleb128 5
	.string	"second"
	.long	.Lreal8 - .Lcu
	.uleb128 11
	.byte	0x03
	.quad	zm_a
	.byte	0x23
	.uleb128 8
# a pointer's target, not a fixed address
	.uleb128 5
	.string	"indirect"
	.long	.Lreal8 - .Lcu
	.uleb128 10
	.byte	0x03
	.quad	zm_huge
	.byte	0x06
# an offset that carries past the top of the address space
	.uleb128 5
	.string	"wraps"
	.long	.Lreal8 - .Lcu
	.uleb128 20
	.byte	0x03
	.quad	zm_a
	.byte	0x23
	.uleb128 0xffffffffffffffff
	.uleb128 6
	.string	"main"
	.quad	main
	.quad	-16	# a length that carries past the top of the address space
	.byte	0
.Lcu_end:
	.section	.note.GNU-stack,"",@progbits
"#;

#[test]
fn odd_bounds_ranges_and_locations_are_read_without_panic() {
    let dir = tempfile::tempdir().unwrap();
    let Some(exe) = build(
        dir.path(),
        &["gcc"],
        "odd.s",
        PROGRAM,
        "to assemble the odd-DWARF test program",
    ) else {
        return;
    };
    for (label, info) in [
        ("load", DebugInfo::load(&exe).unwrap()),
        ("load_program", DebugInfo::load_program(&exe).unwrap()),
    ] {
        let a = info
            .global("a")
            .unwrap_or_else(|| panic!("{label}: {:?}", info.globals));
        assert_eq!(a.size, 0, "{label}: a(5:0) is empty");
        let huge = info.global("huge").expect("huge");
        assert_eq!(huge.size, 0, "{label}: 2^64 reals have no 64-bit size");
        assert_ne!(a.address, huge.address, "{label}");
        let second = info.global("second").expect("second");
        assert_eq!(
            (second.address, second.size),
            (a.address + 8, 8),
            "{label}: DW_OP_addr a, DW_OP_plus_uconst 8"
        );
        for not_fixed in ["indirect", "wraps"] {
            assert!(info.global(not_fixed).is_none(), "{label}: {not_fixed}");
        }
        // A range that wraps is no range: main is no function rather than one ending below
        // its start.
        assert!(
            info.functions.iter().all(|f| f.high_pc > f.low_pc),
            "{label}: {:?}",
            info.functions
        );
        assert!(
            info.functions.iter().all(|f| f.name != "main"),
            "{label}: {:?}",
            info.functions
        );
    }
}
