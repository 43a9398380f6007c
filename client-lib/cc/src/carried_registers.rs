//! Which inline capture sites of a listing find the tag word and the table's offset mask still
//! in `%r11` and `%r10`, left there by an earlier site, so they need not load and decode them.
//!
//! Why: the monitored matmul kernel runs three sites per inner iteration, which are most of
//! what its thread does. Each site used to load the tag word and take the mask out of its top
//! byte (one load, three instructions). Every site leaves both registers set on all its paths
//! (`epcache_inline::emit`); a later site may use them when no instruction in between can have
//! written them.
//!
//! What holds them: a site sets both, whichever way it leaves (its slow path reloads them after
//! the call). In between, the registers are clobbered by anything that mentions `%r10` or
//! `%r11`, any call (the compiler treats both as clobbered by a call, so it may keep nothing of
//! its own in them across our sites either), system calls, inline assembly, a section switch and
//! any directive that could emit bytes.
//!
//! Where paths meet, at a label something jumps to, the *mask* survives only when it survives on
//! every way in: the fall-through and each jump, found by iterating to a fixed point, so a loop
//! whose body holds a site keeps its mask around the back edge. The *word* is reloaded at every
//! such label, so a loop picks up a new key (a switch every thread must sync for, `tag_key.rs`
//! in the runtime) within one iteration, as it did when every site loaded it. A label that is
//! referenced any other way than by a direct jump (a jump table, an exception landing pad, a
//! computed goto, a numeric label, a named symbol) is a way in we cannot follow: nothing
//! survives it. References from debug sections are only addresses for the debugger.
//!
//! Carrying the word between sites in straight-line code delays a thread's view of a new key by
//! at most the instructions between two sites, as a delayed load would; the mask changes only
//! while no filter of the process is on (`tag_key::set_shape`), so it is never stale in a
//! thread whose table holds anything.

use std::collections::{HashMap, HashSet};

use epcache_inline::emit::{CARRIED_REGISTERS, Carried};

use crate::asm_tokens::{is_symbol_char, symbols};

/// What a point of the listing is known to hold, ordered by the meet of two ways in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Holds {
    Nothing,
    Mask,
    MaskAndWord,
    /// No way reaches this point (after an unconditional jump): the meet keeps the other side.
    Unreachable,
}

/// What one line does to the registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect<'a> {
    Neutral,
    /// May write `%r10` or `%r11`, or is a way in or out we do not follow.
    Clobber,
    Site,
    /// A label definition; `None` for one nothing survives (a label referenced other than by
    /// a direct jump, see [`Analysis::new`]).
    Label(Option<&'a str>),
    /// A jump; `target` is the local label of a direct one.
    Jump {
        target: Option<&'a str>,
        conditional: bool,
    },
}

/// Instruction prefixes that come before the mnemonic (`notrack jmp *%rax` in jump tables).
const PREFIXES: &[&str] = &[
    "rep", "repe", "repz", "repne", "repnz", "lock", "notrack", "bnd",
];

/// Calls into a hypervisor, which may return with any register changed.
const HYPERVISOR_CALLS: &[&str] = &["vmcall", "vmmcall", "vmfunc", "tdcall"];

/// Directives that emit nothing a site's registers could depend on; any other directive is a
/// clobber (bytes written by hand may be any instruction).
const HARMLESS_DIRECTIVES: &[&str] = &[
    ".p2align", ".align", ".balign", ".loc", ".type", ".size", ".globl", ".global", ".hidden",
    ".local", ".weak", ".file", ".ident",
];

/// Directives that switch sections; a switch is a clobber, as the next line does not follow the
/// last one.
const SECTION_SWITCHES: &[&str] = &[".section", ".text", ".data", ".bss"];

/// Directives whose section we cannot follow; a listing with one carries nothing.
const SECTION_STACK: &[&str] = &[".pushsection", ".popsection", ".previous", ".subsection"];

/// For each line of `lines`, what a site written in front of it would find in the registers;
/// `is_site` tells the lines that become sites. Only the entries of site lines mean anything.
pub(crate) fn carried(lines: &[&str], is_site: impl Fn(&str) -> bool) -> Vec<Carried> {
    match Analysis::new(lines, is_site) {
        Some(analysis) => analysis.solve(),
        None => vec![Carried::Nothing; lines.len()],
    }
}

struct Analysis<'a> {
    effects: Vec<Effect<'a>>,
    /// The local labels some direct jump targets.
    jumped_to: HashSet<&'a str>,
}

impl<'a> Analysis<'a> {
    /// Classifies every line; `None` when the listing uses a section stack.
    fn new(lines: &[&'a str], is_site: impl Fn(&str) -> bool) -> Option<Self> {
        let mut effects = Vec::with_capacity(lines.len());
        let mut in_debug = false;
        let mut in_inline_assembly = false;
        // Labels referenced other than as a direct jump's target, from outside debug sections.
        let mut pinned = HashSet::new();
        let mut jumped_to = HashSet::new();
        for line in lines {
            let trimmed = line.trim();
            let first = trimmed.split_whitespace().next().unwrap_or("");
            if trimmed.starts_with("#APP") || trimmed.starts_with("#NO_APP") {
                in_inline_assembly = trimmed.starts_with("#APP");
                effects.push(Effect::Clobber);
                continue;
            }
            let effect = if trimmed.is_empty() || trimmed.starts_with('#') {
                Effect::Neutral
            } else if in_inline_assembly {
                Effect::Clobber
            } else if let Some(name) = first.strip_suffix(':') {
                // A label, perhaps with a statement after it on the same line.
                if first.len() < trimmed.len() || !name.starts_with(".L") {
                    Effect::Label(None)
                } else {
                    Effect::Label(Some(name))
                }
            } else if first.starts_with('.') {
                if SECTION_STACK.contains(&first) {
                    return None;
                }
                if SECTION_SWITCHES.contains(&first) {
                    in_debug = first == ".section"
                        && trimmed[first.len()..].trim_start().starts_with(".debug");
                    Effect::Clobber
                } else if first.starts_with(".cfi_") || HARMLESS_DIRECTIVES.contains(&first) {
                    Effect::Neutral
                } else {
                    Effect::Clobber
                }
            } else if is_site(line) {
                Effect::Site
            } else {
                instruction_effect(trimmed)
            };
            let target = match effect {
                Effect::Jump {
                    target: Some(t), ..
                } => {
                    jumped_to.insert(t);
                    Some(t)
                }
                _ => None,
            };
            if !in_debug {
                let defined = match effect {
                    Effect::Label(Some(name)) => Some(name),
                    _ => None,
                };
                for label in symbols(trimmed).filter(|s| s.starts_with(".L")) {
                    if Some(label) != target && Some(label) != defined {
                        pinned.insert(label);
                    }
                }
            }
            effects.push(effect);
        }
        for effect in &mut effects {
            if let Effect::Label(Some(name)) = *effect
                && pinned.contains(name)
            {
                *effect = Effect::Label(None);
            }
        }
        Some(Analysis { effects, jumped_to })
    }

    /// Iterates to the fixed point: every label jumped to starts assumed reached only by ways
    /// that keep everything, and each pass lowers what it assumed to what its jumps carried.
    fn solve(&self) -> Vec<Carried> {
        let mut assumed: HashMap<&str, Holds> = self
            .jumped_to
            .iter()
            .map(|&label| (label, Holds::Unreachable))
            .collect();
        loop {
            let (carried, reached) = self.pass(&assumed);
            if reached == assumed {
                return carried;
            }
            assumed = reached;
        }
    }

    /// One pass in order with `assumed` at the labels jumped to: what each line finds, and what
    /// the jumps to each label carried.
    fn pass(&self, assumed: &HashMap<&'a str, Holds>) -> (Vec<Carried>, HashMap<&'a str, Holds>) {
        let mut reached: HashMap<&str, Holds> = self
            .jumped_to
            .iter()
            .map(|&label| (label, Holds::Unreachable))
            .collect();
        let mut carried = Vec::with_capacity(self.effects.len());
        let mut holds = Holds::Nothing;
        for effect in &self.effects {
            carried.push(match holds {
                Holds::Nothing | Holds::Unreachable => Carried::Nothing,
                Holds::Mask => Carried::Mask,
                Holds::MaskAndWord => Carried::MaskAndWord,
            });
            holds = match *effect {
                Effect::Neutral => holds,
                Effect::Clobber | Effect::Label(None) => Holds::Nothing,
                Effect::Site => Holds::MaskAndWord,
                Effect::Label(Some(name)) => match assumed.get(name) {
                    // Paths meet: the word is reloaded, the mask kept where all ways keep it.
                    Some(&jumps) => holds.min(jumps).min(Holds::Mask),
                    // Nothing jumps here: a debug label in straight-line code.
                    None => holds,
                },
                Effect::Jump {
                    target,
                    conditional,
                } => {
                    if let Some(label) = target
                        && let Some(at) = reached.get_mut(label)
                    {
                        *at = (*at).min(holds);
                    }
                    if conditional {
                        holds
                    } else {
                        Holds::Unreachable
                    }
                }
            };
        }
        (carried, reached)
    }
}

/// What an instruction (not a site) does to the registers.
fn instruction_effect(instruction: &str) -> Effect<'_> {
    // Any width of either register (`%r10d`, `%r11b`, ...) starts with its 64-bit name.
    if CARRIED_REGISTERS.iter().any(|r| instruction.contains(r)) {
        return Effect::Clobber;
    }
    let mut words = instruction
        .split_whitespace()
        .skip_while(|w| PREFIXES.contains(w));
    let Some(mnemonic) = words.next() else {
        return Effect::Neutral;
    };
    let operand = words.next();
    let target = operand.filter(|o| o.starts_with(".L") && o.chars().all(is_symbol_char));
    match mnemonic {
        "jmp" | "jmpq" => Effect::Jump {
            target,
            conditional: false,
        },
        "ret" | "retq" | "iret" | "iretq" | "ud2" => Effect::Jump {
            target: None,
            conditional: false,
        },
        m if m.starts_with('j') || m.starts_with("loop") => Effect::Jump {
            target,
            conditional: true,
        },
        m if m.starts_with("call")
            || m.starts_with("sys")
            || m.starts_with("int")
            || HYPERVISOR_CALLS.contains(&m) =>
        {
            Effect::Clobber
        }
        _ => Effect::Neutral,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SITE: &str = "\tcall\t__tsan_read8@PLT";

    /// What each site of `listing` finds, in order.
    fn sites(listing: &str) -> Vec<Carried> {
        let lines: Vec<&str> = listing.lines().collect();
        let carried = carried(&lines, |l| l == SITE);
        lines
            .iter()
            .zip(carried)
            .filter(|(l, _)| **l == SITE)
            .map(|(_, c)| c)
            .collect()
    }

    /// A listing from `;`-separated statements, `S` standing for a site.
    fn listing(statements: &str) -> String {
        statements
            .split(';')
            .map(|s| match s.trim() {
                "S" => SITE.to_owned(),
                s if s.ends_with(':') => s.to_owned(),
                s => format!("\t{s}"),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    use Carried::{Mask, MaskAndWord, Nothing};

    #[test]
    fn straight_line_code_carries_both_until_something_may_write_them() {
        assert_eq!(
            sites(&listing(
                "S; movq %rbx, %rdi; movsd (%rbx), %xmm1; S; addq $8, %r10; S; S"
            )),
            [Nothing, MaskAndWord, Nothing, MaskAndWord]
        );
        for clobber in [
            "call f@PLT",
            "callq *%rax",
            "movl %r11d, %eax",
            "syscall",
            "rep stosq",
            ".byte 0x0f, 0x05",
            ".section .text.unlikely",
            ".text",
        ] {
            let expected: &[Carried] = if clobber == "rep stosq" {
                &[Nothing, MaskAndWord]
            } else {
                &[Nothing, Nothing]
            };
            assert_eq!(
                sites(&listing(&format!("S; {clobber}; S"))),
                expected,
                "{clobber}"
            );
        }
        // Inline assembly is a clobber from start to end, whatever it holds.
        assert_eq!(
            sites("\tcall\t__tsan_read8@PLT\n#APP\n\tnop\n#NO_APP\n\tcall\t__tsan_read8@PLT"),
            [Nothing, Nothing]
        );
        // Debug labels and harmless directives are not in the way.
        assert_eq!(
            sites(&listing(
                "S; .LVL5:; .LBB3:; .p2align 4; .cfi_def_cfa_offset 16; S"
            )),
            [Nothing, MaskAndWord]
        );
    }

    #[test]
    fn a_loop_keeps_its_mask_around_the_back_edge_and_reloads_the_word() {
        // The matmul shape: a site before the loop, three in its body.
        let loop_ = "S; .L6:; S; movsd (%rbx), %xmm1; S; S; addq $8, %rbx; jne .L6; ret";
        assert_eq!(
            sites(&listing(loop_)),
            [Nothing, Mask, MaskAndWord, MaskAndWord]
        );
        // Without a site before the loop, its head meets a way in that carries nothing.
        assert_eq!(
            sites(&listing(".L6:; S; S; jne .L6; ret")),
            [Nothing, MaskAndWord]
        );
        // A call on one way spoils the meet where the ways join, and, on the way back, at
        // the loop's head.
        assert_eq!(
            sites(&listing("S; .L6:; S; je .L7; call f; .L7:; S; jne .L6")),
            [Nothing, Mask, Nothing]
        );
        assert_eq!(
            sites(&listing("S; .L6:; S; je .L7; call f; .L7:; jne .L6")),
            [Nothing, Nothing]
        );
        // AVX arithmetic is not in the way.
        assert_eq!(
            sites(&listing(".L6:; S; vmulsd %xmm1, %xmm0, %xmm0; S; jne .L6")),
            [Nothing, MaskAndWord]
        );
        // gcc's rotated loop: the jump into the test makes the fall-through unreachable.
        assert_eq!(
            sites(&listing(
                "S; jmp .L3; .L4:; S; .L3:; cmpq %rax, %rbx; jne .L4"
            )),
            [Nothing, Mask]
        );
    }

    #[test]
    fn labels_reached_other_than_by_direct_jumps_carry_nothing() {
        for pinning in [
            // A jump table.
            "\t.section\t.rodata\n\t.long\t.L6-.L4\n",
            // A computed goto.
            "\tleaq\t.L6(%rip), %rax\n",
            // An exception landing pad.
            "\t.section\t.gcc_except_table\n\t.uleb128\t.L6-.LFB0\n",
        ] {
            let text = format!("{}\n{pinning}", listing("S; .L6:; S; jne .L6"));
            assert_eq!(sites(&text), [Nothing, Nothing], "{pinning}");
        }
        // A debug section's reference is only an address.
        let text = format!(
            "{}\n\t.section\t.debug_loclists\n\t.quad\t.L6\n",
            listing("S; .L6:; S; jne .L6")
        );
        assert_eq!(sites(&text), [Nothing, Mask]);
        // A label's name inside another symbol is no reference to it.
        let text = format!(
            "{}
	.section	.rodata
	.quad	x.L6
",
            listing("S; .L6:; S; jne .L6")
        );
        assert_eq!(sites(&text), [Nothing, Mask]);
        // Named and numeric labels are ways in we cannot follow.
        assert_eq!(
            sites(&listing("S; f:; S; S; 1:; S")),
            [Nothing, Nothing, MaskAndWord, Nothing]
        );
        assert_eq!(
            sites(&listing("S; .L2:\tmovq %rax, %rbx; S")),
            [Nothing, Nothing]
        );
    }

    #[test]
    fn a_listing_with_a_section_stack_carries_nothing() {
        assert_eq!(
            sites(&listing("S; S; .pushsection .data; .popsection")),
            [Nothing, Nothing]
        );
    }

    mod properties {
        //! Between two sites, anything that may write either register makes the second load
        //! both again, and anything else lets it use what the first left.

        use super::*;
        use proptest::prelude::*;

        /// Registers and memory operands that name neither `%r10` nor `%r11`.
        const OTHER_OPERANDS: &[&str] = &[
            "%rax",
            "%eax",
            "%ax",
            "%al",
            "%rbx",
            "%ecx",
            "%cl",
            "%rdx",
            "%rsi",
            "%rdi",
            "%r8",
            "%r8d",
            "%r9w",
            "%r9b",
            "%r12",
            "%r13d",
            "%r14w",
            "%r15b",
            "%xmm0",
            "%xmm1",
            "%ymm3",
            "(%rbx)",
            "8(%rsp)",
            "-16(%rbp,%rax,8)",
            "A(%rip)",
            "$42",
            "$0x7f",
        ];
        /// Every width of the two registers, as operands and in addresses.
        const CARRIED_OPERANDS: &[&str] = &[
            "%r10",
            "%r10d",
            "%r10w",
            "%r10b",
            "%r11",
            "%r11d",
            "%r11w",
            "%r11b",
            "(%r11)",
            "8(%r10)",
            "(%rax,%r10,8)",
            "(,%r11,4)",
            "-8(%r11,%rbx)",
        ];
        const MNEMONICS: &[&str] = &[
            "movq",
            "movl",
            "movw",
            "movb",
            "addq",
            "subl",
            "xorl",
            "andq",
            "orq",
            "leaq",
            "cmpq",
            "testl",
            "imulq",
            "movzbl",
            "movsbq",
            "shrq",
            "sarl",
            "cmovne",
            "movsd",
            "vaddsd",
            "movdqu",
            "popcntq",
            "bsfq",
            "xchgq",
            "lock addl",
            "rep movsb",
        ];

        /// An instruction or directive that leaves both registers alone.
        fn plain() -> impl Strategy<Value = String> {
            let two = (
                prop::sample::select(MNEMONICS),
                prop::sample::select(OTHER_OPERANDS),
                prop::sample::select(OTHER_OPERANDS),
            )
                .prop_map(|(m, a, b)| format!("\t{m}\t{a}, {b}"));
            let one = (
                prop::sample::select(&["pushq", "popq", "incq", "negl", "notq", "bswapq"][..]),
                prop::sample::select(OTHER_OPERANDS),
            )
                .prop_map(|(m, a)| format!("\t{m}\t{a}"));
            let fixed = prop::sample::select(
                &[
                    "\tnop",
                    "\tcqto",
                    "\trep stosq",
                    "\tpause",
                    "\t.p2align 4,,10",
                    "\t.p2align 3",
                    "\t.cfi_def_cfa_offset 16",
                    "\t.cfi_offset 3, -24",
                    "\t.loc 1 12 5",
                    "# a comment",
                    "\t.type\tf, @function",
                    ".LVL7:",
                    ".LBB12:",
                ][..],
            )
            .prop_map(str::to_owned);
            prop_oneof![4 => two, 2 => one, 2 => fixed]
        }

        /// Anything that may write `%r10` or `%r11`, or through which the registers cannot be
        /// followed: an instruction naming either in any width and position, a call, a system
        /// or hypervisor call, inline assembly, a section switch, a directive that emits bytes.
        fn clobber() -> impl Strategy<Value = Vec<String>> {
            let naming = (
                prop::sample::select(MNEMONICS),
                prop::sample::select(CARRIED_OPERANDS),
                prop::sample::select(OTHER_OPERANDS),
                any::<bool>(),
            )
                .prop_map(|(m, carried, other, first)| {
                    let (a, b) = if first {
                        (carried, other)
                    } else {
                        (other, carried)
                    };
                    vec![format!("\t{m}\t{a}, {b}")]
                });
            let single = prop::sample::select(&["pushq", "popq", "incq", "bswapq"][..])
                .prop_flat_map(|m| {
                    prop::sample::select(CARRIED_OPERANDS)
                        .prop_map(move |r| vec![format!("\t{m}\t{r}")])
                });
            let call = (
                prop::sample::select(&["call", "callq"][..]),
                prop::sample::select(
                    &[
                        "f",
                        "f@PLT",
                        "*%rax",
                        "*8(%rbx)",
                        "*%r12",
                        "__tsan_func_entry@PLT",
                        "__tsan_read_range@PLT",
                        "__tsan_volatile_read8@PLT",
                        "memcpy@PLT",
                    ][..],
                ),
            )
                .prop_map(|(c, t)| vec![format!("\t{c}\t{t}")]);
            let system = prop::sample::select(
                &[
                    "\tsyscall",
                    "\tsysenter",
                    "\tint\t$0x80",
                    "\tint3",
                    "\tvmcall",
                    "\tvmmcall",
                ][..],
            )
            .prop_map(|l| vec![l.to_owned()]);
            let inline_assembly = prop::collection::vec(plain(), 0..3).prop_map(|body| {
                let mut lines = vec!["#APP".to_owned()];
                lines.extend(body);
                lines.push("#NO_APP".to_owned());
                lines
            });
            let section = prop::sample::select(
                &[
                    "\t.section\t.text.unlikely",
                    "\t.section\t.rodata",
                    "\t.text",
                    "\t.data",
                    "\t.bss",
                ][..],
            )
            .prop_map(|l| vec![l.to_owned()]);
            let bytes = prop::sample::select(
                &[
                    "\t.byte\t0x0f, 0x05",
                    "\t.long\t0",
                    "\t.quad\t0",
                    "\t.zero\t8",
                    "\t.value\t1",
                    "\t.ascii\t\"x\"",
                    "\t.insn\t0x90",
                ][..],
            )
            .prop_map(|l| vec![l.to_owned()]);
            prop_oneof![
                4 => naming,
                2 => single,
                2 => call,
                1 => system,
                1 => inline_assembly,
                1 => section,
                1 => bytes,
            ]
        }

        /// What the second of two sites finds with `between` between them.
        fn second_site(between: &[String]) -> Carried {
            let mut text = format!("{SITE}\n");
            for line in between {
                text.push_str(line);
                text.push('\n');
            }
            text.push_str(SITE);
            let found = sites(&text);
            assert_eq!(found.len(), 2, "{text}");
            found[1]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]

            #[test]
            fn anything_that_may_write_either_register_makes_the_next_site_reload(
                before in prop::collection::vec(plain(), 0..6),
                clobber in clobber(),
                after in prop::collection::vec(plain(), 0..6),
            ) {
                let between: Vec<String> =
                    before.into_iter().chain(clobber).chain(after).collect();
                prop_assert_eq!(second_site(&between), Carried::Nothing, "{:#?}", between);
            }

            #[test]
            fn plain_instructions_between_two_sites_let_the_second_carry_both(
                between in prop::collection::vec(plain(), 0..12),
            ) {
                prop_assert_eq!(second_site(&between), Carried::MaskAndWord, "{:#?}", between);
            }
        }
    }
}
