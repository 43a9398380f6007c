//! What a DWARF type says of its size: bytes through typedefs and qualifiers, an array
//! dimension's element count from its bounds and index type. The variables' reader
//! (`debug_info.rs`), the array shapes (`array_type.rs`) and the structure members
//! (`element_members.rs`) all size types this way.

use gimli::{AttributeValue, EndianSlice, RunTimeEndian};

/// The DWARF sections as this crate reads them: borrowed bytes of the file, either endianness.
pub(super) type Reader<'a> = EndianSlice<'a, RunTimeEndian>;

/// The byte size of a DIE's type, following typedefs and qualifiers and multiplying out arrays
/// (dimensions without a lower bound start at `lower_default`). None when a bound is not a
/// constant or the size does not fit in 64 bits.
pub(super) fn type_size(
    unit: &gimli::Unit<Reader<'_>>,
    entry: &gimli::DebuggingInformationEntry<Reader<'_>>,
    lower_default: i64,
    budget: u32,
) -> Option<u64> {
    let budget = budget.checked_sub(1)?;
    let AttributeValue::UnitRef(offset) = entry.attr_value(gimli::DW_AT_type)? else {
        return None;
    };
    let ty = unit.entry(offset).ok()?;
    if ty.tag() != gimli::DW_TAG_array_type {
        if let Some(AttributeValue::Udata(size)) = ty.attr_value(gimli::DW_AT_byte_size) {
            return Some(size);
        }
        return type_size(unit, &ty, lower_default, budget);
    }
    let element = type_size(unit, &ty, lower_default, budget)?;
    let mut count = 1u64;
    let mut tree = unit.entries_tree(Some(offset)).ok()?;
    let root = tree.root().ok()?;
    let mut children = root.children();
    while let Ok(Some(child)) = children.next() {
        let d = child.entry();
        if d.tag() != gimli::DW_TAG_subrange_type {
            continue;
        }
        count = count.checked_mul(subrange_count(unit, d, lower_default)?)?;
    }
    element.checked_mul(count)
}

/// The number of elements along one array dimension: `DW_AT_count`, or the bounds' extent.
/// None when the dimension's size is only known at run time (a bound that is an expression or
/// a variable) or is missing.
pub(super) fn subrange_count<'a>(
    unit: &gimli::Unit<Reader<'a>>,
    subrange: &gimli::DebuggingInformationEntry<Reader<'a>>,
    lower_default: i64,
) -> Option<u64> {
    let signed = index_type_is_signed(unit, subrange);
    if let Some(count) = subrange.attr_value(gimli::DW_AT_count) {
        return u64::try_from(bound(count, signed)?.max(0)).ok();
    }
    let upper = bound(subrange.attr_value(gimli::DW_AT_upper_bound)?, signed)?;
    let lower = match subrange.attr_value(gimli::DW_AT_lower_bound) {
        Some(value) => bound(value, signed)?,
        None => i128::from(lower_default),
    };
    extent(lower, upper)
}

/// The number of elements from `lower` to `upper` inclusive: 0 for an empty range such as
/// Fortran's `a(5:0)` (which gfortran writes as 5..4, but other producers may write as given),
/// None when it does not fit in 64 bits. Both bounds come from 64-bit DWARF constants, so the
/// arithmetic in `i128` cannot overflow.
pub(super) fn extent(lower: i128, upper: i128) -> Option<u64> {
    u64::try_from((upper - lower + 1).max(0)).ok()
}

/// A constant array bound. `DW_FORM_data*` carry no sign; the dimension's index type says
/// whether `0xff` is 255 or -1.
pub(super) fn bound(value: AttributeValue<Reader<'_>>, signed: bool) -> Option<i128> {
    match value {
        AttributeValue::Sdata(v) => Some(i128::from(v)),
        AttributeValue::Udata(v) => Some(i128::from(v)),
        AttributeValue::Data1(_)
        | AttributeValue::Data2(_)
        | AttributeValue::Data4(_)
        | AttributeValue::Data8(_) => {
            if signed {
                value.sdata_value().map(i128::from)
            } else {
                value.udata_value().map(i128::from)
            }
        }
        _ => None,
    }
}

/// Whether a subrange's index type (`DW_AT_type`, through typedefs and qualifiers) is a signed
/// integer. Without one (DWARF leaves the signedness open) bounds read as unsigned, as C's
/// `sizetype` is.
pub(super) fn index_type_is_signed<'a>(
    unit: &gimli::Unit<Reader<'a>>,
    subrange: &gimli::DebuggingInformationEntry<Reader<'a>>,
) -> bool {
    let mut entry = subrange.clone();
    for _ in 0..8 {
        let Some(AttributeValue::UnitRef(offset)) = entry.attr_value(gimli::DW_AT_type) else {
            return false;
        };
        let Ok(ty) = unit.entry(offset) else {
            return false;
        };
        if let Some(AttributeValue::Encoding(encoding)) = ty.attr_value(gimli::DW_AT_encoding) {
            return matches!(
                encoding,
                gimli::DW_ATE_signed | gimli::DW_ATE_signed_char | gimli::DW_ATE_signed_fixed
            );
        }
        entry = ty;
    }
    false
}

#[cfg(test)]
mod tests {
    use gimli::{AttributeValue, EndianSlice, RunTimeEndian};

    use super::{bound, extent};

    #[test]
    fn array_extents_never_overflow() {
        assert_eq!(extent(1, 1000), Some(1000));
        assert_eq!(extent(-2, 2), Some(5));
        // gfortran writes `a(5:0)` as 5..4; another producer may write the bounds as declared,
        // and `upper + 1 - lower` on u64 then underflowed.
        assert_eq!(extent(5, 4), Some(0));
        assert_eq!(extent(5, 0), Some(0));
        assert_eq!(extent(0, -1), Some(0));
        // An unsigned upper bound of all ones (old gcc's `int a[0]`): `upper + 1` overflowed.
        assert_eq!(extent(0, i128::from(u64::MAX)), None);
        assert_eq!(extent(1, i128::from(u64::MAX)), Some(u64::MAX));
        assert_eq!(extent(i128::from(i64::MIN), i128::from(i64::MAX)), None);
    }

    #[test]
    fn unsigned_forms_take_the_index_types_sign() {
        type Value = AttributeValue<EndianSlice<'static, RunTimeEndian>>;
        let data1: Value = AttributeValue::Data1(0xff);
        assert_eq!(bound(data1, true), Some(-1));
        assert_eq!(bound(data1, false), Some(255));
        let data8: Value = AttributeValue::Data8(u64::MAX);
        assert_eq!(bound(data8, false), Some(i128::from(u64::MAX)));
        assert_eq!(bound(AttributeValue::Sdata(-3) as Value, false), Some(-3));
        assert_eq!(bound(AttributeValue::Udata(7) as Value, true), Some(7));
        // A bound known only at run time is no constant.
        assert_eq!(bound(AttributeValue::Flag(true) as Value, true), None);
    }
}
