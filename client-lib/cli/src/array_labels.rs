//! A histogram bucket named in its array's own terms: the element indices it covers, in the
//! notation of the array's language (C's `[0..199]`, Fortran's `(1:200)`), and for an array of
//! two or more dimensions the rows (C) or columns (Fortran) it spans. Without a known shape, a
//! bucket is its byte offsets from the start, `+0..+1600`.

use std::ops::Range;

use epcache_client::Shape;

/// The words an axis under the buckets is named with: `element of A` or `byte offset in A`.
pub(crate) fn axis_title(shape: Option<&Shape>, data: &str) -> String {
    match usable(shape) {
        Some(s) if s.dimensions.len() > 1 && s.column_major => format!("columns of {data}"),
        Some(s) if s.dimensions.len() > 1 => format!("rows of {data}"),
        Some(_) => format!("elements of {data}"),
        None => format!("byte offset in {data}"),
    }
}

/// A shape the labels can use: a known element size and at least one dimension.
fn usable(shape: Option<&Shape>) -> Option<&Shape> {
    shape.filter(|s| s.element_bytes > 0 && !s.dimensions.is_empty() && s.elements() > 0)
}

/// The label of the bytes `bytes` of an array that starts at `base`.
pub(crate) fn label(bytes: &Range<u64>, base: u64, shape: Option<&Shape>) -> String {
    let offsets = || {
        format!(
            "+{}..+{}",
            bytes.start.saturating_sub(base),
            bytes.end.saturating_sub(base)
        )
    };
    let Some(shape) = usable(shape) else {
        return offsets();
    };
    let (start, end) = (
        bytes.start.saturating_sub(base),
        bytes.end.saturating_sub(base),
    );
    let elements = shape.elements();
    let first = start / shape.element_bytes;
    let last = end.div_ceil(shape.element_bytes).saturating_sub(1);
    if first >= elements || end <= start {
        return offsets();
    }
    let last = last.min(elements - 1);
    if shape.dimensions.len() == 1 {
        let lower = shape.dimensions[0].lower_bound;
        return span(
            shape.column_major,
            lower + first as i64,
            lower + last as i64,
        );
    }
    outer_span(shape, first, last)
}

/// One dimension's index range, inclusive, in the language's notation.
fn span(fortran: bool, from: i64, to: i64) -> String {
    match (fortran, from == to) {
        (true, true) => format!("({from})"),
        (true, false) => format!("({from}:{to})"),
        (false, true) => format!("[{from}]"),
        (false, false) => format!("[{from}..{to}]"),
    }
}

/// The indices, in declaration order, of element `flat` (in memory order).
fn indices(shape: &Shape, flat: u64) -> Vec<i64> {
    let dims = &shape.dimensions;
    let mut out = vec![0i64; dims.len()];
    let mut rest = flat;
    // Memory order: C's last dimension varies fastest, Fortran's first.
    let order: Vec<usize> = if shape.column_major {
        (0..dims.len()).collect()
    } else {
        (0..dims.len()).rev().collect()
    };
    for d in order {
        let extent = dims[d].extent.max(1);
        out[d] = dims[d].lower_bound + (rest % extent) as i64;
        rest /= extent;
    }
    out
}

/// Elements `first..=last` of a multi-dimensional array: whole rows (C) or columns (Fortran) as
/// `[4..7][*]` / `(:,5:8)`, otherwise the first and last element.
fn outer_span(shape: &Shape, first: u64, last: u64) -> String {
    let dims = &shape.dimensions;
    let outer = if shape.column_major {
        dims.len() - 1
    } else {
        0
    };
    let per_outer = dims
        .iter()
        .enumerate()
        .filter(|&(d, _)| d != outer)
        .fold(1u64, |n, (_, d)| n.saturating_mul(d.extent));
    let (a, b) = (indices(shape, first), indices(shape, last));
    let whole = first.is_multiple_of(per_outer) && (last + 1).is_multiple_of(per_outer);
    if whole {
        let outer_span = span(shape.column_major, a[outer], b[outer]);
        return if shape.column_major {
            // (:,:,5:8)
            let inner = ":,".repeat(dims.len() - 1);
            format!("({inner}{})", &outer_span[1..outer_span.len() - 1])
        } else {
            // [4..7][*][*]
            format!("{outer_span}{}", "[*]".repeat(dims.len() - 1))
        };
    }
    let element = |ix: &[i64]| {
        if shape.column_major {
            format!(
                "({})",
                ix.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
            )
        } else {
            ix.iter().map(|i| format!("[{i}]")).collect()
        }
    };
    format!("{}..{}", element(&a), element(&b))
}

#[cfg(test)]
mod tests {
    use epcache_client::Dimension;

    use super::*;

    fn shape(element_bytes: u64, dims: &[(i64, u64)], column_major: bool) -> Shape {
        Shape {
            element_bytes,
            dimensions: dims
                .iter()
                .map(|&(lower_bound, extent)| Dimension {
                    lower_bound,
                    extent,
                })
                .collect(),
            column_major,
        }
    }

    #[test]
    fn one_dimension_is_an_index_range_in_the_languages_notation() {
        let c = shape(8, &[(0, 1000)], false);
        assert_eq!(label(&(1000..2600), 1000, Some(&c)), "[0..199]");
        assert_eq!(label(&(1008..1016), 1000, Some(&c)), "[1]");
        let f = shape(4, &[(1, 100)], true);
        assert_eq!(label(&(0..64), 0, Some(&f)), "(1:16)");
        assert_eq!(axis_title(Some(&f), "a"), "elements of a");
    }

    #[test]
    fn rows_of_c_and_columns_of_fortran() {
        // double a[100][50]: a row is 400 bytes.
        let c = shape(8, &[(0, 100), (0, 50)], false);
        assert_eq!(label(&(1600..3200), 0, Some(&c)), "[4..7][*]");
        assert_eq!(label(&(1608..3200), 0, Some(&c)), "[4][1]..[7][49]");
        assert_eq!(axis_title(Some(&c), "a"), "rows of a");
        // real a(100,100): a column is 400 bytes.
        let f = shape(4, &[(1, 100), (1, 100)], true);
        assert_eq!(label(&(1600..3200), 0, Some(&f)), "(:,5:8)");
        assert_eq!(label(&(1600..1604), 0, Some(&f)), "(1,5)..(1,5)");
        assert_eq!(axis_title(Some(&f), "a"), "columns of a");
    }

    #[test]
    fn without_a_shape_buckets_are_byte_offsets() {
        assert_eq!(label(&(1064..1128), 1000, None), "+64..+128");
        let empty = shape(0, &[(0, 10)], false);
        assert_eq!(label(&(0..8), 0, Some(&empty)), "+0..+8");
        assert_eq!(axis_title(None, "x"), "byte offset in x");
        // A bucket past the array's elements (a range longer than its type).
        let c = shape(8, &[(0, 2)], false);
        assert_eq!(label(&(64..128), 0, Some(&c)), "+64..+128");
    }
}
