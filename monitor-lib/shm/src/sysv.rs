//! System V shared memory behind a safe, bounds-checked view. This file holds unsafe code because
//! `shmget`/`shmat`/`shmdt`/`shmctl` are C calls on raw pointers, and because turning bytes of the
//! mapping into `&AtomicU32`/`&AtomicU64` needs a pointer cast; callers only ever get atomics at
//! checked, aligned offsets, never a pointer.

use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};

/// Permission bits every epcache segment is created with: its owner may read and write it, nobody else.
pub const SEGMENT_MODE: u32 = 0o600;

/// The kernel's "marked for removal" bit in `shm_perm.mode` (`SHM_DEST`, not exported by libc).
const SHM_DEST: u32 = 0o1000;

/// How a segment is mapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Loads and stores.
    ReadWrite,
    /// Loads only; the view refuses to hand out atomics that could be stored to.
    ReadOnly,
}

/// What the kernel says about a segment (`IPC_STAT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentStat {
    /// Size in bytes, as created.
    pub size: usize,
    /// The owner's uid (`shm_perm.uid`).
    pub owner_uid: u32,
    /// Permission bits (the low nine bits of `shm_perm.mode`).
    pub mode: u32,
    /// The pid that created it.
    pub creator_pid: i32,
    /// How many mappings exist, over all processes.
    pub attach_count: u64,
    /// Whether it will disappear when the last mapping goes (`IPC_RMID` was done).
    pub marked_for_removal: bool,
}

/// A System V call that failed, with the segment id and what to try.
#[derive(Debug, thiserror::Error)]
pub enum SegmentError {
    /// `shmget` refused to create a segment.
    #[error(
        "could not create a {size}-byte System V shared memory segment: {source}; check `sysctl kernel.shmmax kernel.shmall kernel.shmmni` or ask for smaller capacities"
    )]
    Create {
        /// Requested size.
        size: usize,
        /// The kernel's answer.
        source: io::Error,
    },
    /// `shmat` refused to map an existing segment.
    #[error(
        "could not attach System V segment {id}: {source}; the target may have exited (check `ipcs -m` or /proc/sysvipc/shm)"
    )]
    Attach {
        /// The segment id.
        id: i32,
        /// The kernel's answer.
        source: io::Error,
    },
    /// `IPC_STAT` failed, which means the id names no segment we can see.
    #[error(
        "System V segment {id} cannot be inspected: {source}; {}",
        if source.kind() == io::ErrorKind::PermissionDenied {
            "it belongs to another user, whose segments epcache does not read"
        } else {
            "it no longer exists (its target exited) or belongs to another IPC namespace"
        }
    )]
    Stat {
        /// The segment id.
        id: i32,
        /// The kernel's answer.
        source: io::Error,
    },
    /// The segment belongs to someone else.
    #[error(
        "System V segment {id} belongs to uid {owner}, not to this user (uid {me}); epcache only attaches to its own user's segments: run the tool as uid {owner}"
    )]
    NotOwner {
        /// The segment id.
        id: i32,
        /// Its owner.
        owner: u32,
        /// The current uid.
        me: u32,
    },
    /// The segment is readable or writable by other users.
    #[error(
        "System V segment {id} has mode {mode:o}, which lets other users read or write it; epcache segments are 0600 and others are refused"
    )]
    TooOpen {
        /// The segment id.
        id: i32,
        /// Its permission bits.
        mode: u32,
    },
    /// An `IPC_RMID` or `IPC_SET` failed.
    #[error("System V segment {id}: {what} failed: {source}")]
    Control {
        /// The segment id.
        id: i32,
        /// Which operation.
        what: &'static str,
        /// The kernel's answer.
        source: io::Error,
    },
}

/// An access outside the mapping, misaligned, or a store-capable access to a read-only mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "shared memory access of {width} bytes at offset {offset} is invalid for a {len}-byte mapping ({problem})"
)]
pub struct ViewError {
    /// Byte offset asked for.
    pub offset: usize,
    /// Bytes asked for.
    pub width: usize,
    /// Size of the mapping.
    pub len: usize,
    /// What is wrong.
    pub problem: ViewProblem,
}

/// Why a [`ViewError`] happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewProblem {
    /// Past the end of the mapping.
    OutOfBounds,
    /// Not aligned to the width.
    Misaligned,
    /// The mapping is read-only.
    ReadOnly,
}

impl std::fmt::Display for ViewProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ViewProblem::OutOfBounds => "out of bounds",
            ViewProblem::Misaligned => "misaligned",
            ViewProblem::ReadOnly => "mapping is read-only",
        })
    }
}

/// Bytes shared with another process, reachable only as atomics at checked offsets.
///
/// Another process may write any byte at any time, so nothing here hands out `&[u8]` or a plain
/// reference: every read is an atomic load and the caller validates what it reads.
#[derive(Debug)]
pub struct View {
    base: NonNull<u8>,
    len: usize,
    writable: bool,
}

// SAFETY: the view only produces atomics and atomic byte copies, which are sound to use from any
// thread; the mapping outlives the view because the owner (Segment or HeapImage) holds both.
unsafe impl Send for View {}
// SAFETY: as for Send: all access goes through atomics.
unsafe impl Sync for View {}

impl View {
    /// Size of the mapping in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether stores are allowed.
    pub fn is_writable(&self) -> bool {
        self.writable
    }

    fn check(&self, offset: usize, width: usize, store: bool) -> Result<(), ViewError> {
        let problem = if offset.checked_add(width).is_none_or(|end| end > self.len) {
            Some(ViewProblem::OutOfBounds)
        } else if !offset.is_multiple_of(width) {
            Some(ViewProblem::Misaligned)
        } else if store && !self.writable {
            Some(ViewProblem::ReadOnly)
        } else {
            None
        };
        match problem {
            Some(problem) => Err(ViewError {
                offset,
                width,
                len: self.len,
                problem,
            }),
            None => Ok(()),
        }
    }

    /// The 32-bit word at `offset`, for loads, stores, read-modify-writes and futexes.
    pub fn u32_at(&self, offset: usize) -> Result<&AtomicU32, ViewError> {
        self.check(offset, 4, true)?;
        // SAFETY: `check` proved offset..offset+4 lies inside the live mapping and is 4-aligned
        // (the base is page- or 8-aligned); AtomicU32 has u32's layout, and the mapping is
        // writable, so any atomic operation on it is valid for the lifetime of &self.
        Ok(unsafe { AtomicU32::from_ptr(self.base.as_ptr().add(offset).cast()) })
    }

    /// The 64-bit word at `offset`, for loads, stores and read-modify-writes.
    pub fn u64_at(&self, offset: usize) -> Result<&AtomicU64, ViewError> {
        self.check(offset, 8, true)?;
        // SAFETY: as in `u32_at`, for 8 bytes at an 8-aligned offset inside a writable mapping.
        Ok(unsafe { AtomicU64::from_ptr(self.base.as_ptr().add(offset).cast()) })
    }

    /// `count` 64-bit words from `offset`, so a hot loop pays one bounds check, not one per word.
    pub fn u64_slice(&self, offset: usize, count: usize) -> Result<&[AtomicU64], ViewError> {
        let width = count.checked_mul(8).ok_or(ViewError {
            offset,
            width: usize::MAX,
            len: self.len,
            problem: ViewProblem::OutOfBounds,
        })?;
        if count == 0 {
            return Ok(&[]);
        }
        self.check(offset, 8, true)?;
        if offset.checked_add(width).is_none_or(|end| end > self.len) {
            return Err(ViewError {
                offset,
                width,
                len: self.len,
                problem: ViewProblem::OutOfBounds,
            });
        }
        // SAFETY: offset..offset+8*count is inside the writable mapping and 8-aligned; a slice of
        // AtomicU64 has the layout of [u64; count]; it lives no longer than &self.
        Ok(unsafe {
            std::slice::from_raw_parts(self.base.as_ptr().add(offset).cast::<AtomicU64>(), count)
        })
    }

    /// Loads the 32-bit word at `offset`; works on read-only mappings too.
    pub fn load_u32(&self, offset: usize, order: Ordering) -> Result<u32, ViewError> {
        self.check(offset, 4, false)?;
        // SAFETY: in bounds and aligned (checked); only a load is performed, which a read-only
        // mapping allows.
        Ok(unsafe { AtomicU32::from_ptr(self.base.as_ptr().add(offset).cast()) }.load(order))
    }

    /// Loads the 64-bit word at `offset`; works on read-only mappings too.
    pub fn load_u64(&self, offset: usize, order: Ordering) -> Result<u64, ViewError> {
        self.check(offset, 8, false)?;
        // SAFETY: as in `load_u32`, for 8 aligned bytes.
        Ok(unsafe { AtomicU64::from_ptr(self.base.as_ptr().add(offset).cast()) }.load(order))
    }

    fn byte(&self, offset: usize) -> &AtomicU8 {
        // SAFETY: callers pass offsets they checked against len; bytes need no alignment, and
        // AtomicU8 is only loaded from on read-only mappings (copy_in checks writability).
        unsafe { AtomicU8::from_ptr(self.base.as_ptr().add(offset)) }
    }

    /// Copies `out.len()` bytes starting at `offset` out of the mapping, byte by byte atomically,
    /// so a concurrent writer can tear the copy but never cause undefined behaviour.
    pub fn copy_out(&self, offset: usize, out: &mut [u8]) -> Result<(), ViewError> {
        if offset
            .checked_add(out.len())
            .is_none_or(|end| end > self.len)
        {
            return Err(ViewError {
                offset,
                width: out.len(),
                len: self.len,
                problem: ViewProblem::OutOfBounds,
            });
        }
        for (i, b) in out.iter_mut().enumerate() {
            *b = self.byte(offset + i).load(Ordering::Relaxed);
        }
        Ok(())
    }

    /// Copies `data` into the mapping at `offset`, byte by byte atomically.
    pub fn copy_in(&self, offset: usize, data: &[u8]) -> Result<(), ViewError> {
        if data.is_empty() {
            return Ok(());
        }
        if offset
            .checked_add(data.len())
            .is_none_or(|end| end > self.len)
            || !self.writable
        {
            return Err(ViewError {
                offset,
                width: data.len(),
                len: self.len,
                problem: if self.writable {
                    ViewProblem::OutOfBounds
                } else {
                    ViewProblem::ReadOnly
                },
            });
        }
        for (i, &b) in data.iter().enumerate() {
            self.byte(offset + i).store(b, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// A process-local buffer seen through the same [`View`] as a segment: lets the validator run over
/// arbitrary bytes (tests, fuzzing, a saved segment image) without System V.
#[derive(Debug)]
pub struct HeapImage {
    view: View,
    // Owns the memory `view` points into; boxed so it never moves.
    _words: Box<[AtomicU64]>,
}

impl HeapImage {
    /// `len` zero bytes (rounded up to a multiple of 8 for alignment; `view().len()` is `len`).
    pub fn zeroed(len: usize) -> Self {
        let words: Box<[AtomicU64]> = (0..len.div_ceil(8).max(1))
            .map(|_| AtomicU64::new(0))
            .collect();
        let base = NonNull::new(words.as_ptr().cast_mut().cast::<u8>())
            .expect("a boxed slice's pointer is never null");
        HeapImage {
            view: View {
                base,
                len,
                writable: true,
            },
            _words: words,
        }
    }

    /// A copy of `bytes`.
    pub fn from_bytes(bytes: &[u8]) -> Self {
        let image = Self::zeroed(bytes.len());
        image
            .view
            .copy_in(0, bytes)
            .expect("the image is exactly as long as the bytes");
        image
    }

    /// The bytes, as a segment would show them.
    pub fn view(&self) -> &View {
        &self.view
    }
}

/// The uid this process runs as.
pub fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// A mapped System V segment; detached when dropped.
#[derive(Debug)]
pub struct Segment {
    id: i32,
    view: View,
}

impl Segment {
    /// Creates a private segment of `size` bytes, mode 0600, maps it read-write and at once marks
    /// it for removal, so the kernel frees it when the last process detaches or dies: no path
    /// leaks it. Other processes can still attach by id while someone is attached (Linux allows
    /// attaching a segment marked for removal).
    pub fn create(size: usize) -> Result<Segment, SegmentError> {
        // SAFETY: shmget takes plain integers; IPC_PRIVATE always makes a new segment.
        let id = unsafe {
            libc::shmget(
                libc::IPC_PRIVATE,
                size,
                libc::IPC_CREAT | libc::IPC_EXCL | SEGMENT_MODE as i32,
            )
        };
        if id < 0 {
            return Err(SegmentError::Create {
                size,
                source: io::Error::last_os_error(),
            });
        }
        let mapped = Self::map(id, size, Access::ReadWrite);
        // Whether or not mapping worked, the id must not outlive its users.
        let removed = remove_id(id);
        let segment = mapped?;
        removed?;
        Ok(segment)
    }

    /// Maps the existing segment `id`, after checking that this user owns it and that nobody else
    /// may read or write it.
    pub fn attach(id: i32, access: Access) -> Result<Segment, SegmentError> {
        let stat = Self::stat_id(id)?;
        let me = current_uid();
        if stat.owner_uid != me {
            return Err(SegmentError::NotOwner {
                id,
                owner: stat.owner_uid,
                me,
            });
        }
        if stat.mode & 0o077 != 0 {
            return Err(SegmentError::TooOpen {
                id,
                mode: stat.mode,
            });
        }
        Self::map(id, stat.size, access)
    }

    fn map(id: i32, size: usize, access: Access) -> Result<Segment, SegmentError> {
        let flags = match access {
            Access::ReadWrite => 0,
            Access::ReadOnly => libc::SHM_RDONLY,
        };
        // SAFETY: a null address lets the kernel choose where to map; the result is checked below.
        let addr = unsafe { libc::shmat(id, std::ptr::null(), flags) };
        if addr as isize == -1 {
            return Err(SegmentError::Attach {
                id,
                source: io::Error::last_os_error(),
            });
        }
        let base = NonNull::new(addr.cast::<u8>()).ok_or_else(|| SegmentError::Attach {
            id,
            source: io::Error::other("shmat returned a null mapping"),
        })?;
        Ok(Segment {
            id,
            view: View {
                base,
                len: size,
                writable: access == Access::ReadWrite,
            },
        })
    }

    /// What the kernel says about segment `id`.
    pub fn stat_id(id: i32) -> Result<SegmentStat, SegmentError> {
        // SAFETY: shmid_ds is plain old data, so all-zero is a valid value.
        let mut ds: libc::shmid_ds = unsafe { std::mem::zeroed() };
        // SAFETY: IPC_STAT writes one shmid_ds into the valid, exclusive pointer we pass.
        let rc = unsafe { libc::shmctl(id, libc::IPC_STAT, &mut ds) };
        if rc < 0 {
            return Err(SegmentError::Stat {
                id,
                source: io::Error::last_os_error(),
            });
        }
        let mode = u32::from(ds.shm_perm.mode);
        Ok(SegmentStat {
            size: ds.shm_segsz,
            owner_uid: ds.shm_perm.uid,
            mode: mode & 0o777,
            creator_pid: ds.shm_cpid,
            attach_count: ds.shm_nattch,
            marked_for_removal: mode & SHM_DEST != 0,
        })
    }

    /// The segment's id, which other processes attach by.
    pub fn id(&self) -> i32 {
        self.id
    }

    /// What the kernel says about this segment now.
    pub fn stat(&self) -> Result<SegmentStat, SegmentError> {
        Self::stat_id(self.id)
    }

    /// Marks the segment for removal: it disappears when the last process detaches.
    pub fn mark_for_removal(&self) -> Result<(), SegmentError> {
        remove_id(self.id)
    }

    /// Gives the segment to `uid` (keeping mode 0600). Needs privilege; used by tests that check
    /// a foreign segment is refused, and by administrators handing a segment over.
    pub fn set_owner_uid(&self, uid: u32) -> Result<(), SegmentError> {
        // SAFETY: zeroed shmid_ds is valid; IPC_STAT fills it through the exclusive pointer.
        let mut ds: libc::shmid_ds = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::shmctl(self.id, libc::IPC_STAT, &mut ds) } < 0 {
            return Err(SegmentError::Stat {
                id: self.id,
                source: io::Error::last_os_error(),
            });
        }
        ds.shm_perm.uid = uid;
        // SAFETY: IPC_SET reads uid, gid and mode from the valid shmid_ds we pass.
        if unsafe { libc::shmctl(self.id, libc::IPC_SET, &mut ds) } < 0 {
            return Err(SegmentError::Control {
                id: self.id,
                what: "IPC_SET (change owner)",
                source: io::Error::last_os_error(),
            });
        }
        Ok(())
    }

    /// The mapped bytes.
    pub fn view(&self) -> &View {
        &self.view
    }
}

fn remove_id(id: i32) -> Result<(), SegmentError> {
    // SAFETY: IPC_RMID ignores the buffer argument, so null is allowed.
    if unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) } < 0 {
        return Err(SegmentError::Control {
            id,
            what: "IPC_RMID (mark for removal)",
            source: io::Error::last_os_error(),
        });
    }
    Ok(())
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: base is the address shmat returned and it is detached exactly once, here; no
        // reference into the mapping outlives &self, so nothing can touch it afterwards.
        unsafe {
            libc::shmdt(self.view.base.as_ptr().cast());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_refused_by_permission_is_said_to_be_another_users() {
        let refused = SegmentError::Stat {
            id: 7,
            source: io::Error::from(io::ErrorKind::PermissionDenied),
        };
        assert!(
            refused.to_string().contains("belongs to another user"),
            "{refused}"
        );
        let gone = SegmentError::Stat {
            id: 7,
            source: io::Error::from(io::ErrorKind::InvalidInput),
        };
        assert!(gone.to_string().contains("no longer exists"), "{gone}");
    }

    #[test]
    fn views_check_bounds_alignment_and_writability() {
        let image = HeapImage::zeroed(64);
        let v = image.view();
        assert!(v.u32_at(60).is_ok());
        assert_eq!(v.u32_at(58).unwrap_err().problem, ViewProblem::Misaligned);
        assert_eq!(v.u64_at(64).unwrap_err().problem, ViewProblem::OutOfBounds);
        assert_eq!(
            v.u64_at(usize::MAX - 3).unwrap_err().problem,
            ViewProblem::OutOfBounds
        );
        assert!(v.u64_slice(0, 8).is_ok() && v.u64_slice(8, 8).is_err());
        v.copy_in(61, b"abc").unwrap();
        let mut out = [0; 3];
        v.copy_out(61, &mut out).unwrap();
        assert_eq!(&out, b"abc");
        assert!(v.copy_out(62, &mut out).is_err());
    }

    #[test]
    fn a_created_segment_is_private_and_already_marked_for_removal() {
        let seg = Segment::create(4096).unwrap();
        let stat = seg.stat().unwrap();
        assert_eq!(stat.mode, SEGMENT_MODE);
        assert_eq!(stat.owner_uid, current_uid());
        assert!(stat.marked_for_removal);
        assert_eq!(stat.size, 4096);
        seg.view().u32_at(0).unwrap().store(7, Ordering::Relaxed);
        let other = Segment::attach(seg.id(), Access::ReadOnly).unwrap();
        assert_eq!(other.view().load_u32(0, Ordering::Relaxed).unwrap(), 7);
        assert_eq!(
            other.view().u32_at(0).unwrap_err().problem,
            ViewProblem::ReadOnly
        );
        assert_eq!(seg.stat().unwrap().attach_count, 2);
    }
}
