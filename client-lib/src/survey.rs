//! A tool's survey of a target that grows as the program runs: the regions and data structures
//! it knows, and the requests it placed over them, extended each time the tool looks again.
//!
//! What a program's tables hold changes after it starts: a heap block of 4096 bytes or more
//! becomes a data structure named by its allocation line (`stencil.c:12`) when it is allocated,
//! a marker region exists once met, a function of a library opened later once loaded. A tool
//! that read the tables only while the program waited at start would see globals and functions
//! alone. So a tool calls [`Survey::extend`] once at start and again at each halt: whatever
//! appeared since joins the survey, and the tool's requests for it are placed at once, before the
//! program goes on.
//!
//! How the survey names a data structure in its requests ([`SurveyedData::data`]) is what lets
//! the requests last the whole run:
//! - a global or a registered array by index (its bytes never move);
//! - a heap block by its allocation site ([`DataRef::Site`], the latest block), once the survey
//!   has seen one of the site's blocks live (a temporary freed before the tool looked is not
//!   surveyed): the target binds the request at each entry of the region to the block the site
//!   allocated last, so a site that allocates its array again is followed, and a site with no
//!   live block waits;
//! - a Fortran allocatable by index: the target binds it to wherever its descriptor points at
//!   each entry, and the request waits while it is unallocated.
//!
//! Because the target binds at the region's entry, a request placed while the program is halted
//! at an entry covers that instance; a block allocated inside an instance counts from the
//! region's next entry (as `epcache run --array FILE:LINE` does).

use std::collections::HashSet;
use std::ops::Range;

use crate::{
    Client, ClientError, DataRef, DataStructure, DataStructureKind, Region, Request, RequestInfo,
    Shape,
};

/// A data structure as a survey requests it for the rest of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SurveyedData {
    /// Its name: the program's for a global or an allocatable (`gauss_mod::a`), the allocation
    /// site for a heap block (`stencil.c:12`).
    pub name: String,
    /// Where it came from.
    pub kind: DataStructureKind,
    /// How the survey's requests name it (see the module docs).
    pub data: DataRef,
    /// Its bytes when the survey last saw it live; empty while it never was (an allocatable not
    /// allocated yet).
    pub range: Range<u64>,
    /// What its type says, when the target's debug information says it.
    pub shape: Option<Shape>,
}

impl SurveyedData {
    /// How a data structure of the target's table is surveyed; `None` for one not to survey
    /// now: a registered array already freed, a heap block already freed (a temporary; or a
    /// Fortran allocatable's block, which the allocatable's entry took over: surveyed by site,
    /// it would be counted twice).
    fn from_structure(d: &DataStructure) -> Option<SurveyedData> {
        let data = match d.kind {
            DataStructureKind::AllocationSite if !d.live => return None,
            DataStructureKind::AllocationSite => match site(&d.name) {
                Some((file, line)) => DataRef::Site { file, line },
                None => DataRef::Index(d.index),
            },
            DataStructureKind::Allocatable => DataRef::Index(d.index),
            DataStructureKind::Global | DataStructureKind::Heap | DataStructureKind::Unknown => {
                if !d.live || d.range.is_empty() {
                    return None;
                }
                DataRef::Index(d.index)
            }
        };
        Some(SurveyedData {
            name: d.name.clone(),
            kind: d.kind,
            data,
            range: if d.live { d.range.clone() } else { 0..0 },
            shape: d.shape.clone(),
        })
    }

    /// Whether another entry of the target's table is this one again: a site's next block, an
    /// allocatable's entry for another size.
    fn same_as(&self, d: &DataStructure) -> bool {
        self.kind == d.kind
            && self.name == d.name
            && matches!(
                d.kind,
                DataStructureKind::AllocationSite | DataStructureKind::Allocatable
            )
    }
}

/// `FILE:LINE` of a heap block's name.
fn site(name: &str) -> Option<(String, u32)> {
    let (file, line) = name.rsplit_once(':')?;
    let line = line.parse().ok().filter(|l| *l > 0)?;
    (!file.is_empty()).then(|| (file.to_owned(), line))
}

/// What a survey asks its template for: requests for a region alone (`data` is `None`, once
/// when the region joins) or for the region and one data structure.
#[derive(Debug, Clone, Copy)]
pub struct Pair<'a> {
    /// The region.
    pub region: &'a Region,
    /// The data structure, or `None` for the region's own requests.
    pub data: Option<&'a SurveyedData>,
    /// Whether this is the first data structure the region's requests cover: where a tool puts
    /// what it asks once per region about all of its data (an analysis request, which covers
    /// every live data structure whatever it names).
    pub first_data_of_region: bool,
}

/// The requests placed for one [`Pair`], all or none.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    /// The region's index.
    pub region: u32,
    /// The data structure's position in [`Survey::data`]; `None` for the region's own.
    pub data: Option<usize>,
    /// The requests as the daemon placed them, in the template's order.
    pub requests: Vec<RequestInfo>,
}

impl Placement {
    /// The requests' ids, in the template's order.
    pub fn ids(&self) -> Vec<u64> {
        self.requests.iter().map(|r| r.id).collect()
    }
}

/// A pair whose requests did not fit in the target's free request slots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeftOut {
    /// The region's index.
    pub region: u32,
    /// The region's name.
    pub region_name: String,
    /// The data structure's name; `None` for the region's own requests.
    pub data: Option<String>,
}

/// What one look added to a survey.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extension {
    /// Regions that joined the survey.
    pub regions: Vec<Region>,
    /// Data structures that appeared (by allocation site, a heap block's first).
    pub data: Vec<SurveyedData>,
    /// Pairs left out: the target's request slots were full.
    pub left_out: Vec<LeftOut>,
}

impl Extension {
    /// Whether the look found nothing new.
    pub fn is_empty(&self) -> bool {
        self.regions.is_empty() && self.data.is_empty() && self.left_out.is_empty()
    }
}

/// The regions and data structures a tool surveys in one target, and its requests over them.
///
/// ```no_run
/// use epcache_client::{Request, RegionKind, RegionRef, StepOutcome, StepTo, Survey};
///
/// # async fn demo(client: &mut epcache_client::Client, pid: u32) -> Result<(), epcache_client::ClientError> {
/// let mut survey = Survey::new();
/// let kernels = |r: &epcache_client::Region| r.kind == RegionKind::Function && r.name != "main";
/// let misses = |p: epcache_client::Pair<'_>| match p.data {
///     Some(d) => vec![Request::count(RegionRef::Index(p.region.index), d.data.clone(), "PAPI_L1_DCM")],
///     None => Vec::new(),
/// };
/// survey.extend(client, pid, kernels, misses).await?;
/// while let StepOutcome::Halted(_) = client.step(pid, StepTo::NextBoundary).await? {
///     // Heap blocks allocated since the last halt join here, before the program goes on.
///     survey.extend(client, pid, kernels, misses).await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Default)]
pub struct Survey {
    /// Every region the target has shown, by index.
    regions: Vec<Region>,
    /// Every data structure surveyed, in the order they appeared.
    data: Vec<SurveyedData>,
    /// Entries of the target's data-structure table already looked at.
    seen_structures: HashSet<u32>,
    /// Regions in the survey, in the order they joined.
    joined: Vec<u32>,
    /// Regions taken out, never to join again.
    withdrawn: HashSet<u32>,
    placements: Vec<Placement>,
    /// Request slots left free for the tool's other requests.
    reserve: usize,
}

impl Survey {
    /// An empty survey; the first [`Survey::extend`] fills it.
    pub fn new() -> Survey {
        Survey::default()
    }

    /// Leaves `slots` request slots free for the tool's requests outside the survey.
    pub fn reserve(mut self, slots: usize) -> Survey {
        self.reserve = slots;
        self
    }

    /// Every region the target has shown so far.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// The region with index `index`, once shown.
    pub fn region(&self, index: u32) -> Option<&Region> {
        self.regions.iter().find(|r| r.index == index)
    }

    /// The regions in the survey, in the order they joined.
    pub fn joined(&self) -> impl Iterator<Item = &Region> {
        self.joined.iter().filter_map(|i| self.region(*i))
    }

    /// Every data structure surveyed so far, in the order they appeared.
    pub fn data(&self) -> &[SurveyedData] {
        &self.data
    }

    /// The requests placed, pair by pair.
    pub fn placements(&self) -> &[Placement] {
        &self.placements
    }

    /// The ids of every request the survey placed.
    pub fn ids(&self) -> Vec<u64> {
        self.placements.iter().flat_map(Placement::ids).collect()
    }

    /// Looks at the target again: regions that appeared and that `select` takes join the
    /// survey, data structures that appeared are added to it, and `template`'s requests are
    /// placed for each new pair of a surveyed region and a data structure (and for each joining
    /// region alone). Pairs that do not fit in the target's free request slots are left out and
    /// said so; a region with a pair left out keeps the requests it has (see
    /// [`Survey::withdraw`]).
    pub async fn extend(
        &mut self,
        client: &mut Client,
        pid: u32,
        mut select: impl FnMut(&Region) -> bool,
        mut template: impl FnMut(Pair<'_>) -> Vec<Request>,
    ) -> Result<Extension, ClientError> {
        let description = client.describe(pid).await?;
        let mut free = (description.request_slots as usize)
            .saturating_sub(description.requests.len())
            .saturating_sub(self.reserve);
        let mut extension = Extension::default();

        let first_new_data = self.data.len();
        for d in &description.data_structures {
            if self.seen_structures.contains(&d.index) {
                continue;
            }
            // Entries are taken over only by the same structure (a site's next block, an
            // allocatable allocated again at another size): an index seen once is settled. A
            // freed block's entry is not: its site may allocate again, and then it is surveyed.
            if self.data.iter().any(|k| k.same_as(d)) {
                self.seen_structures.insert(d.index);
                continue;
            }
            let Some(surveyed) = SurveyedData::from_structure(d) else {
                if d.kind != DataStructureKind::AllocationSite {
                    self.seen_structures.insert(d.index);
                }
                continue;
            };
            self.seen_structures.insert(d.index);
            extension.data.push(surveyed.clone());
            self.data.push(surveyed);
        }
        // A site's live block moves when the site allocates again; an allocatable's too.
        for d in description.data_structures.iter().filter(|d| d.live) {
            if let Some(known) = self.data.iter_mut().find(|k| k.same_as(d)) {
                known.range = d.range.clone();
            }
        }

        // Regions already in the survey get the new data structures.
        let already: Vec<u32> = self.joined.clone();
        for region in already {
            for data in first_new_data..self.data.len() {
                self.place(
                    client,
                    pid,
                    region,
                    Some(data),
                    &mut free,
                    &mut template,
                    &mut extension,
                )
                .await?;
            }
        }
        // Regions that appeared join with every data structure known.
        let known: HashSet<u32> = self.regions.iter().map(|r| r.index).collect();
        for region in &description.regions {
            if known.contains(&region.index) {
                continue;
            }
            self.regions.push(region.clone());
            if self.withdrawn.contains(&region.index) || !select(region) {
                continue;
            }
            self.joined.push(region.index);
            extension.regions.push(region.clone());
            self.place(
                client,
                pid,
                region.index,
                None,
                &mut free,
                &mut template,
                &mut extension,
            )
            .await?;
            for data in 0..self.data.len() {
                self.place(
                    client,
                    pid,
                    region.index,
                    Some(data),
                    &mut free,
                    &mut template,
                    &mut extension,
                )
                .await?;
            }
        }
        Ok(extension)
    }

    /// Places one pair's requests, or leaves it out when the slots are full.
    #[allow(clippy::too_many_arguments)]
    async fn place(
        &mut self,
        client: &mut Client,
        pid: u32,
        region: u32,
        data: Option<usize>,
        free: &mut usize,
        template: &mut impl FnMut(Pair<'_>) -> Vec<Request>,
        extension: &mut Extension,
    ) -> Result<(), ClientError> {
        let Some(r) = self.region(region) else {
            return Ok(());
        };
        let first_data_of_region = data.is_some()
            && !self
                .placements
                .iter()
                .any(|p| p.region == region && p.data.is_some());
        let requests = template(Pair {
            region: r,
            data: data.map(|i| &self.data[i]),
            first_data_of_region,
        });
        if requests.is_empty() {
            return Ok(());
        }
        let left_out = LeftOut {
            region,
            region_name: r.name.clone(),
            data: data.map(|i| self.data[i].name.clone()),
        };
        // A region that already lost a pair in this look loses the rest too: its requests are
        // incomplete either way, and a later pair must not take the slots an earlier one needed.
        if requests.len() > *free || extension.left_out.iter().any(|l| l.region == region) {
            extension.left_out.push(left_out);
            return Ok(());
        }
        match client.requests(pid, &requests).await {
            Ok(placed) => {
                *free -= placed.len();
                self.placements.push(Placement {
                    region,
                    data,
                    requests: placed,
                });
            }
            // Another tool took the slots meanwhile.
            Err(e) if e.code() == Some(tonic::Code::ResourceExhausted) => {
                *free = 0;
                extension.left_out.push(left_out);
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }

    /// Takes region `index` out of the survey for good: its requests are cancelled and it
    /// never joins again (a tool that measures it in another run of the program, when it could
    /// not be measured whole in this one).
    pub async fn withdraw(
        &mut self,
        client: &mut Client,
        pid: u32,
        index: u32,
    ) -> Result<(), ClientError> {
        let ids: Vec<u64> = self
            .placements
            .iter()
            .filter(|p| p.region == index)
            .flat_map(Placement::ids)
            .collect();
        if !ids.is_empty() {
            client.cancel(pid, &ids).await?;
        }
        self.placements.retain(|p| p.region != index);
        self.joined.retain(|r| *r != index);
        self.withdrawn.insert(index);
        Ok(())
    }

    /// Cancels every request of the survey; it stops growing (nothing joins any more).
    pub async fn cancel(&mut self, client: &mut Client, pid: u32) -> Result<(), ClientError> {
        let ids = self.ids();
        if !ids.is_empty() {
            client.cancel(pid, &ids).await?;
        }
        self.placements.clear();
        self.withdrawn.extend(self.regions.iter().map(|r| r.index));
        self.joined.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn structure(index: u32, name: &str, kind: DataStructureKind, live: bool) -> DataStructure {
        DataStructure {
            index,
            name: name.into(),
            range: if live { 0x1000..0x3000 } else { 0..0 },
            kind,
            live,
            shape: None,
            context: Vec::new(),
        }
    }

    /// Each kind is named in requests so that they last the run: heap blocks by their site,
    /// allocatables by index even while unallocated, freed registered arrays not at all.
    #[test]
    fn requests_name_heap_blocks_by_site_and_allocatables_by_index() {
        let block = structure(3, "stencil.c:12", DataStructureKind::AllocationSite, true);
        let surveyed = SurveyedData::from_structure(&block).unwrap();
        assert_eq!(
            surveyed.data,
            DataRef::Site {
                file: "stencil.c".into(),
                line: 12
            }
        );
        assert_eq!(surveyed.range, 0x1000..0x3000);
        let unallocated = structure(1, "fields::u", DataStructureKind::Allocatable, false);
        let surveyed = SurveyedData::from_structure(&unallocated).unwrap();
        assert_eq!(surveyed.data, DataRef::Index(1));
        assert!(surveyed.range.is_empty());
        let global = structure(0, "U", DataStructureKind::Global, true);
        assert_eq!(
            SurveyedData::from_structure(&global).unwrap().data,
            DataRef::Index(0)
        );
        let freed = structure(2, "grid", DataStructureKind::Heap, false);
        assert_eq!(SurveyedData::from_structure(&freed), None);
        // A freed block (a temporary, or the block an allocatable took over) waits until its
        // site allocates again.
        let temporary = structure(4, "stencil.c:20", DataStructureKind::AllocationSite, false);
        assert_eq!(SurveyedData::from_structure(&temporary), None);
        // A site's next block is the same surveyed structure; a global of the same name is not.
        let next = structure(9, "stencil.c:12", DataStructureKind::AllocationSite, true);
        let first = SurveyedData::from_structure(&block).unwrap();
        assert!(first.same_as(&next));
        assert!(!first.same_as(&structure(
            9,
            "stencil.c:12",
            DataStructureKind::Global,
            true
        )));
    }

    #[test]
    fn site_names_split_at_the_last_colon() {
        assert_eq!(site("prog.c:50"), Some(("prog.c".into(), 50)));
        assert_eq!(site("dir:x/prog.c:7"), Some(("dir:x/prog.c".into(), 7)));
        assert_eq!(site("prog.c:0"), None);
        assert_eq!(site("mod::x"), None);
        assert_eq!(site(":5"), None);
    }
}
