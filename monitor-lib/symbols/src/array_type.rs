//! What a variable's array type says, read from DWARF: the shape of a fixed-size array (element
//! size, each dimension's lower bound and extent, storage order), or, for an array whose data
//! lives behind a descriptor (a Fortran ALLOCATABLE or POINTER array, `DW_AT_data_location`),
//! where the descriptor keeps the data and the bounds, as small stack expressions over the
//! descriptor's address, with their evaluator. Pure: the caller reads the descriptor's words
//! (the runtime's `capture/descriptors.rs`).

use gimli::AttributeValue;

use super::dwarf_types::{Reader, bound, extent, index_type_is_signed, subrange_count, type_size};

/// One dimension of an array: its lower bound and its number of elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Extent {
    /// The first index (0 in C, 1 by default in Fortran).
    pub lower: i64,
    /// Elements along it.
    pub count: u64,
}

/// A fixed-size array's shape as its type declares it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ArrayShape {
    /// Bytes of one element.
    pub element_bytes: u64,
    /// Dimensions in declaration order (`double a[100][50]`: 100 then 50; Fortran
    /// `real a(100,50)`: 100 then 50).
    pub dims: Vec<Extent>,
    /// Whether the first dimension varies fastest in memory (Fortran), rather than the last (C).
    pub column_major: bool,
}

/// The operations of a DWARF expression that a descriptor's bounds use; anything else (a
/// register, a branch, a call) makes the descriptor one epcache does not follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum DescriptorOp {
    /// `DW_OP_push_object_address`: the descriptor's address.
    PushObjectAddress,
    /// A literal.
    Constant(u64),
    /// `DW_OP_plus_uconst`.
    PlusConstant(u64),
    /// `DW_OP_deref` / `DW_OP_deref_size`: the top is replaced by the bytes it points to.
    Deref(u8),
    Plus,
    Minus,
    Mul,
    Div,
    Mod,
    And,
    Or,
    Xor,
    Neg,
    Not,
    Abs,
    Shl,
    Shr,
    Shra,
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
    Drop,
    /// `DW_OP_dup` (0), `DW_OP_over` (1), `DW_OP_pick`.
    Pick(u8),
    Swap,
    Rot,
}

/// An array bound or stride: a constant, or an expression over the descriptor.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub enum DescriptorValue {
    Constant(i64),
    Expression(Vec<DescriptorOp>),
}

/// One dimension of a descriptor-backed array.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DescriptorDim {
    pub lower: DescriptorValue,
    /// The upper bound; `count` stands in when it is absent.
    pub upper: Option<DescriptorValue>,
    pub count: Option<DescriptorValue>,
    /// Bytes from one element to the next along the dimension; contiguous when absent.
    pub byte_stride: Option<DescriptorValue>,
}

/// Where an ALLOCATABLE or POINTER array keeps its data and bounds: gfortran's descriptor
/// starts with `base_addr` (`DW_OP_push_object_address; DW_OP_deref`), and each bound is a
/// word further in.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ArrayDescriptor {
    /// `DW_AT_data_location`: the address of the first element.
    pub data_location: Vec<DescriptorOp>,
    /// `DW_AT_allocated` (or `DW_AT_associated` for a pointer): nonzero while there is data.
    pub present: Option<Vec<DescriptorOp>>,
    /// A POINTER array (`DW_AT_associated`) rather than an ALLOCATABLE one.
    pub pointer: bool,
    pub element_bytes: u64,
    pub dims: Vec<DescriptorDim>,
    pub column_major: bool,
}

/// The array a descriptor describes at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedArray {
    /// Address of the first element.
    pub start: u64,
    /// Bytes from the first element to the end of the last (for a contiguous array, element
    /// size times the number of elements).
    pub bytes: u64,
    pub shape: ArrayShape,
}

/// The most operations an expression may have, and the deepest its stack may grow: gfortran's
/// need four and two; malformed DWARF cannot make the evaluator work or allocate much.
const MAX_OPS: usize = 64;
const MAX_STACK: usize = 32;

/// Reads `size` (1 to 8) bytes at an address, little-endian as the target stores them; `None`
/// when the address is not one the caller lets the expression read.
pub type ReadWord<'a> = &'a dyn Fn(u64, u8) -> Option<u64>;

/// Evaluates `ops` with the object (descriptor) at `object`: the top of the stack at the end.
/// `None` when an operation has too few operands, divides by zero, reads where `read` refuses,
/// or the stack grows past its bound.
pub fn evaluate(ops: &[DescriptorOp], object: u64, read: ReadWord<'_>) -> Option<u64> {
    use DescriptorOp as Op;
    let mut stack: Vec<u64> = Vec::with_capacity(8);
    for &op in ops.iter().take(MAX_OPS + 1) {
        if stack.len() >= MAX_STACK {
            return None;
        }
        match op {
            Op::PushObjectAddress => stack.push(object),
            Op::Constant(v) => stack.push(v),
            Op::PlusConstant(v) => {
                let top = stack.pop()?;
                stack.push(top.wrapping_add(v));
            }
            Op::Deref(size) => {
                let addr = stack.pop()?;
                stack.push(read(addr, size)?);
            }
            Op::Neg | Op::Not | Op::Abs => {
                let v = stack.pop()?;
                stack.push(match op {
                    Op::Neg => v.wrapping_neg(),
                    Op::Not => !v,
                    _ => (v as i64).unsigned_abs(),
                });
            }
            Op::Drop => {
                stack.pop()?;
            }
            Op::Pick(index) => {
                let i = stack.len().checked_sub(1 + usize::from(index))?;
                stack.push(stack[i]);
            }
            Op::Swap => {
                let n = stack.len();
                if n < 2 {
                    return None;
                }
                stack.swap(n - 1, n - 2);
            }
            Op::Rot => {
                let n = stack.len();
                if n < 3 {
                    return None;
                }
                // The top goes third; the second and third move up.
                stack[n - 3..].rotate_right(1);
            }
            binary => {
                let b = stack.pop()?;
                let a = stack.pop()?;
                let (sa, sb) = (a as i64, b as i64);
                stack.push(match binary {
                    Op::Plus => a.wrapping_add(b),
                    Op::Minus => a.wrapping_sub(b),
                    Op::Mul => a.wrapping_mul(b),
                    Op::Div => sa.checked_div(sb)? as u64,
                    Op::Mod => a.checked_rem(b)?,
                    Op::And => a & b,
                    Op::Or => a | b,
                    Op::Xor => a ^ b,
                    Op::Shl => a.checked_shl(u32::try_from(b).ok()?).unwrap_or(0),
                    Op::Shr => a.checked_shr(u32::try_from(b).ok()?).unwrap_or(0),
                    Op::Shra => sa
                        .checked_shr(u32::try_from(b).ok()?)
                        .map_or(if sa < 0 { u64::MAX } else { 0 }, |v| v as u64),
                    Op::Eq => u64::from(a == b),
                    Op::Ne => u64::from(a != b),
                    Op::Lt => u64::from(sa < sb),
                    Op::Gt => u64::from(sa > sb),
                    Op::Le => u64::from(sa <= sb),
                    Op::Ge => u64::from(sa >= sb),
                    _ => return None,
                });
            }
        }
    }
    if ops.len() > MAX_OPS {
        return None;
    }
    stack.pop()
}

impl DescriptorValue {
    fn value(&self, object: u64, read: ReadWord<'_>) -> Option<i64> {
        match self {
            DescriptorValue::Constant(v) => Some(*v),
            DescriptorValue::Expression(ops) => evaluate(ops, object, read).map(|v| v as i64),
        }
    }
}

impl ArrayDescriptor {
    /// The array the descriptor at `object` describes now; `None` while it is unallocated
    /// (unassociated), and when an expression cannot be evaluated, a dimension's extent does
    /// not fit, or a stride is negative (a section running backwards is no range of bytes).
    pub fn array(&self, object: u64, read: ReadWord<'_>) -> Option<DescribedArray> {
        if let Some(present) = &self.present
            && evaluate(present, object, read)? == 0
        {
            return None;
        }
        let start = evaluate(&self.data_location, object, read)?;
        if start == 0 {
            return None;
        }
        let mut dims = Vec::with_capacity(self.dims.len());
        // Bytes from the first element to the last one's first byte.
        let mut last = 0u64;
        let mut contiguous = 1u64;
        for dim in &self.dims {
            let lower = dim.lower.value(object, read)?;
            let count = match (&dim.upper, &dim.count) {
                (Some(upper), _) => {
                    extent(i128::from(lower), i128::from(upper.value(object, read)?))?
                }
                (None, Some(count)) => u64::try_from(count.value(object, read)?.max(0)).ok()?,
                (None, None) => return None,
            };
            if let Some(stride) = &dim.byte_stride {
                let stride = u64::try_from(stride.value(object, read)?).ok()?;
                last = last.checked_add(stride.checked_mul(count.saturating_sub(1))?)?;
            }
            contiguous = contiguous.checked_mul(count)?;
            dims.push(Extent { lower, count });
        }
        let bytes = if contiguous == 0 {
            0
        } else if self.dims.iter().all(|d| d.byte_stride.is_none()) {
            self.element_bytes.checked_mul(contiguous)?
        } else {
            last.checked_add(self.element_bytes)?
        };
        start.checked_add(bytes)?;
        Some(DescribedArray {
            start,
            bytes,
            shape: ArrayShape {
                element_bytes: self.element_bytes,
                dims,
                column_major: self.column_major,
            },
        })
    }
}

/// What the type of variable `entry` says when it is an array (through typedefs and
/// qualifiers): its fixed shape, or its descriptor. `lower_default` is the language's lower
/// bound for dimensions that give none, `column_major` its storage order for arrays that do not
/// say (`DW_AT_ordering`).
pub(super) fn array_type<'a>(
    unit: &gimli::Unit<Reader<'a>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'a>>,
    lower_default: i64,
    column_major: bool,
) -> Option<ArrayType> {
    let mut ty = entry.clone();
    // Typedefs and qualifiers, a few deep (a cycle in malformed DWARF ends).
    for _ in 0..8 {
        let AttributeValue::UnitRef(offset) = ty.attr_value(gimli::DW_AT_type)? else {
            return None;
        };
        ty = unit.entry(offset).ok()?;
        match ty.tag() {
            gimli::DW_TAG_array_type => return read_array(unit, &ty, lower_default, column_major),
            gimli::DW_TAG_typedef
            | gimli::DW_TAG_const_type
            | gimli::DW_TAG_volatile_type
            | gimli::DW_TAG_restrict_type => {}
            _ => return None,
        }
    }
    None
}

/// An array variable's type: fixed, or behind a descriptor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ArrayType {
    Fixed(ArrayShape),
    Described(ArrayDescriptor),
}

fn read_array<'a>(
    unit: &gimli::Unit<Reader<'a>>,
    array: &gimli::DebuggingInformationEntry<Reader<'a>>,
    lower_default: i64,
    column_major_default: bool,
) -> Option<ArrayType> {
    let element_bytes = type_size(unit, array, lower_default, 8).filter(|&b| b > 0)?;
    let column_major = match array.attr_value(gimli::DW_AT_ordering) {
        Some(AttributeValue::Ordering(order)) => order == gimli::DW_ORD_col_major,
        Some(value) => value.udata_value() == Some(u64::from(gimli::DW_ORD_col_major.0)),
        None => column_major_default,
    };
    let mut tree = unit.entries_tree(Some(array.offset())).ok()?;
    let root = tree.root().ok()?;
    let mut children = root.children();
    let mut subranges = Vec::new();
    while let Ok(Some(child)) = children.next() {
        let d = child.entry();
        match d.tag() {
            gimli::DW_TAG_subrange_type => subranges.push(d.clone()),
            // An assumed-rank array's rank is only known at run time.
            gimli::DW_TAG_generic_subrange => return None,
            _ => {}
        }
    }
    if subranges.is_empty() {
        return None;
    }
    if let Some(location) = array.attr_value(gimli::DW_AT_data_location) {
        let data_location = expression(unit, location)?;
        let (present, pointer) = match (
            array.attr_value(gimli::DW_AT_allocated),
            array.attr_value(gimli::DW_AT_associated),
        ) {
            (Some(allocated), _) => (Some(expression(unit, allocated)?), false),
            (None, Some(associated)) => (Some(expression(unit, associated)?), true),
            (None, None) => (None, false),
        };
        let dims = subranges
            .iter()
            .map(|d| {
                let signed = index_type_is_signed(unit, d);
                // Absent is `Ok(None)`; present but unreadable makes the descriptor unusable.
                let value = |attr| match d.attr_value(attr) {
                    None => Ok(None),
                    Some(v) => descriptor_value(unit, v, signed).map(Some).ok_or(()),
                };
                Some(DescriptorDim {
                    lower: value(gimli::DW_AT_lower_bound)
                        .ok()?
                        .unwrap_or(DescriptorValue::Constant(lower_default)),
                    upper: value(gimli::DW_AT_upper_bound).ok()?,
                    count: value(gimli::DW_AT_count).ok()?,
                    byte_stride: value(gimli::DW_AT_byte_stride).ok()?,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        return Some(ArrayType::Described(ArrayDescriptor {
            data_location,
            present,
            pointer,
            element_bytes,
            dims,
            column_major,
        }));
    }
    let dims = subranges
        .iter()
        .map(|d| {
            let count = subrange_count(unit, d, lower_default)?;
            let lower = match d.attr_value(gimli::DW_AT_lower_bound) {
                Some(value) => i64::try_from(bound(value, index_type_is_signed(unit, d))?).ok()?,
                None => lower_default,
            };
            Some(Extent { lower, count })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(ArrayType::Fixed(ArrayShape {
        element_bytes,
        dims,
        column_major,
    }))
}

/// A bound, count or stride: a constant, or an expression epcache can evaluate.
fn descriptor_value(
    unit: &gimli::Unit<Reader<'_>>,
    value: AttributeValue<Reader<'_>>,
    signed: bool,
) -> Option<DescriptorValue> {
    if let AttributeValue::Exprloc(_) = value {
        return expression(unit, value).map(DescriptorValue::Expression);
    }
    bound(value, signed)
        .and_then(|b| i64::try_from(b).ok())
        .map(DescriptorValue::Constant)
}

/// An attribute's DWARF expression as [`DescriptorOp`]s; `None` when it is no expression, too
/// long, or uses an operation outside them.
fn expression(
    unit: &gimli::Unit<Reader<'_>>,
    value: AttributeValue<Reader<'_>>,
) -> Option<Vec<DescriptorOp>> {
    use gimli::Operation as G;
    let AttributeValue::Exprloc(expr) = value else {
        return None;
    };
    let mut ops = expr.operations(unit.encoding());
    let mut out = Vec::new();
    while let Some(op) = ops.next().ok()? {
        if out.len() == MAX_OPS {
            return None;
        }
        out.push(match op {
            G::PushObjectAddress => DescriptorOp::PushObjectAddress,
            G::UnsignedConstant { value } => DescriptorOp::Constant(value),
            G::SignedConstant { value } => DescriptorOp::Constant(value as u64),
            G::PlusConstant { value } => DescriptorOp::PlusConstant(value),
            G::Deref {
                base_type,
                size,
                space: false,
            } if base_type.0 == 0 && (1..=8).contains(&size) => DescriptorOp::Deref(size),
            G::Plus => DescriptorOp::Plus,
            G::Minus => DescriptorOp::Minus,
            G::Mul => DescriptorOp::Mul,
            G::Div => DescriptorOp::Div,
            G::Mod => DescriptorOp::Mod,
            G::And => DescriptorOp::And,
            G::Or => DescriptorOp::Or,
            G::Xor => DescriptorOp::Xor,
            G::Neg => DescriptorOp::Neg,
            G::Not => DescriptorOp::Not,
            G::Abs => DescriptorOp::Abs,
            G::Shl => DescriptorOp::Shl,
            G::Shr => DescriptorOp::Shr,
            G::Shra => DescriptorOp::Shra,
            G::Eq => DescriptorOp::Eq,
            G::Ne => DescriptorOp::Ne,
            G::Lt => DescriptorOp::Lt,
            G::Gt => DescriptorOp::Gt,
            G::Le => DescriptorOp::Le,
            G::Ge => DescriptorOp::Ge,
            G::Drop => DescriptorOp::Drop,
            G::Pick { index } => DescriptorOp::Pick(index),
            G::Swap => DescriptorOp::Swap,
            G::Rot => DescriptorOp::Rot,
            G::Nop => continue,
            _ => return None,
        });
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A gfortran descriptor of rank 2 (`real(8), allocatable :: v(:,:)`, allocated as
    /// `v(0:9, 3:12)`) at 0x1000, as memory words: base_addr, offset, dtype (two words), span,
    /// then stride, lower and upper bound per dimension.
    fn gfortran_rank2(base: u64) -> (u64, Vec<(u64, u64)>) {
        let d = 0x1000;
        let words = [base, 0, 8, 0x0302_0000_0000, 8, 1, 0, 9, 10, 3, 12];
        (
            d,
            words
                .iter()
                .enumerate()
                .map(|(i, &w)| (d + 8 * i as u64, w))
                .collect(),
        )
    }

    fn field(offset: u64) -> DescriptorValue {
        DescriptorValue::Expression(vec![
            DescriptorOp::PushObjectAddress,
            DescriptorOp::PlusConstant(offset),
            DescriptorOp::Deref(8),
        ])
    }

    /// gfortran's DWARF for a rank-2 allocatable (see `objdump --dwarf=info`).
    fn gfortran_descriptor() -> ArrayDescriptor {
        let stride = |offset| {
            DescriptorValue::Expression(vec![
                DescriptorOp::PushObjectAddress,
                DescriptorOp::PlusConstant(offset),
                DescriptorOp::Deref(8),
                DescriptorOp::PushObjectAddress,
                DescriptorOp::PlusConstant(32),
                DescriptorOp::Deref(8),
                DescriptorOp::Mul,
            ])
        };
        ArrayDescriptor {
            data_location: vec![DescriptorOp::PushObjectAddress, DescriptorOp::Deref(8)],
            present: Some(vec![
                DescriptorOp::PushObjectAddress,
                DescriptorOp::Deref(8),
                DescriptorOp::Constant(0),
                DescriptorOp::Ne,
            ]),
            pointer: false,
            element_bytes: 8,
            dims: vec![
                DescriptorDim {
                    lower: field(48),
                    upper: Some(field(56)),
                    count: None,
                    byte_stride: Some(stride(40)),
                },
                DescriptorDim {
                    lower: field(72),
                    upper: Some(field(80)),
                    count: None,
                    byte_stride: Some(stride(64)),
                },
            ],
            column_major: true,
        }
    }

    fn memory(words: &[(u64, u64)]) -> impl Fn(u64, u8) -> Option<u64> + '_ {
        move |addr, size| {
            (size == 8)
                .then(|| words.iter().find(|(a, _)| *a == addr).map(|(_, w)| *w))
                .flatten()
        }
    }

    #[test]
    fn a_gfortran_descriptor_gives_the_data_its_bounds_and_its_bytes() {
        let (d, words) = gfortran_rank2(0x7f00_0000);
        let read = memory(&words);
        let array = gfortran_descriptor().array(d, &read).unwrap();
        assert_eq!(array.start, 0x7f00_0000);
        // 10 x 10 doubles, column-major: element size times the elements.
        assert_eq!(array.bytes, 800);
        assert_eq!(
            array.shape.dims,
            [
                Extent {
                    lower: 0,
                    count: 10
                },
                Extent {
                    lower: 3,
                    count: 10
                }
            ]
        );
        assert!(array.shape.column_major);
    }

    #[test]
    fn an_unallocated_or_unreadable_descriptor_is_no_array() {
        let (d, words) = gfortran_rank2(0);
        assert_eq!(gfortran_descriptor().array(d, &memory(&words)), None);
        // A read the caller refuses (past the descriptor) ends the evaluation.
        let (d, mut words) = gfortran_rank2(0x5000);
        words.truncate(8);
        assert_eq!(gfortran_descriptor().array(d, &memory(&words)), None);
    }

    #[test]
    fn the_evaluator_refuses_malformed_expressions_without_panicking() {
        let none = |_: u64, _: u8| None;
        use DescriptorOp as Op;
        assert_eq!(evaluate(&[Op::Plus], 0, &none), None);
        assert_eq!(
            evaluate(&[Op::Constant(1), Op::Constant(0), Op::Div], 0, &none),
            None
        );
        assert_eq!(evaluate(&[Op::Pick(3)], 0, &none), None);
        assert_eq!(evaluate(&[Op::Swap], 0, &none), None);
        assert_eq!(evaluate(&[Op::Deref(8)], 0, &none), None);
        assert_eq!(evaluate(&vec![Op::PushObjectAddress; 40], 1, &none), None);
        assert_eq!(
            evaluate(
                &[Op::Constant(7), Op::Constant(2), Op::Minus, Op::Neg],
                0,
                &none
            ),
            Some(5u64.wrapping_neg())
        );
        assert_eq!(
            evaluate(
                &[Op::Constant(1), Op::Constant(2), Op::Constant(3), Op::Rot],
                0,
                &none
            ),
            Some(2)
        );
        assert_eq!(
            evaluate(&[Op::Constant(1), Op::Constant(70), Op::Shl], 0, &none),
            Some(0)
        );
    }
}
