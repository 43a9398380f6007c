//! A heap array's shape for its histogram's labels: the target knows a heap block's bytes but
//! not its type, which the program's debug information gives through the variable holding it
//! (as `--by-field` finds a block's element, `by_field::Holders`). A 1-D shape of the block's
//! bytes over its element's size then labels buckets by elements (`[0..12499]` in C,
//! `(1:12500)` in Fortran) instead of byte offsets. Read once per run, only for histograms
//! over heap blocks, and left out wherever the holders disagree or say nothing.

use std::path::Path;

use epcache_client::{DataStructureKind, Dimension, RequestResult, Shape};

use crate::by_field::Holders;

/// Gives each histogram result over a heap block of `exe` that has no shape the one-dimensional
/// shape its holding variables' element type says.
pub(crate) fn fill(results: &mut [RequestResult], exe: &Path) {
    let wants_shape = |r: &RequestResult| {
        r.request.buckets > 0
            && r.request
                .data_structure
                .as_ref()
                .is_some_and(|d| d.shape.is_none() && d.kind == DataStructureKind::AllocationSite)
            && !r.buckets.iter().any(|b| b.field.is_some())
    };
    if !results.iter().any(wants_shape) {
        return;
    }
    let Ok(info) = epcache_symbols::DebugInfo::load_program(exe) else {
        return;
    };
    for result in results.iter_mut().filter(|r| wants_shape(r)) {
        let Some(data) = result.request.data_structure.as_mut() else {
            continue;
        };
        let holders = Holders::of(&info, &data.name);
        let Ok(found) = epcache_symbols::DebugInfo::variable_element_bytes(exe, |v, f, l| {
            holders.may_hold(v, f, l)
        }) else {
            continue;
        };
        let Some(&(_, element_bytes)) = found.first() else {
            continue;
        };
        if found.iter().any(|&(_, b)| b != element_bytes) {
            continue;
        }
        let bytes = data.range.end.saturating_sub(data.range.start);
        if bytes == 0 || bytes % element_bytes != 0 {
            continue;
        }
        let fortran = data
            .name
            .rsplit_once(':')
            .is_some_and(|(file, _)| epcache_symbols::is_fortran_source(file));
        data.shape = Some(Shape {
            element_bytes,
            dimensions: vec![Dimension {
                lower_bound: i64::from(fortran),
                extent: bytes / element_bytes,
            }],
            column_major: fortran,
        });
    }
}
