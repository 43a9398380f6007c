//! The running executable's file, mapped read-only rather than read into memory, for its DWARF.
//!
//! Why: the runtime reads the executable's debug information at start-up, and most of that
//! file is the runtime's own (its and the standard library's line tables), which the reader
//! skips. Reading the whole file means copying it into fresh pages, faulting them in and
//! unmapping them after, most of an instrumented program's start-up; a mapping shares the page
//! cache's pages and touches only what the parser reads.
//!
//! Only on a local filesystem: on a network or user-space one (NFS, SMB, 9p, FUSE, Ceph)
//! another machine may truncate the file under the mapping, which would fault the parse, so
//! there the file is read instead.

use std::fs::File;
use std::os::fd::AsRawFd;

/// A private read-only mapping of the file this process executes.
pub(super) struct RunningExecutable {
    start: *const u8,
    len: usize,
}

impl RunningExecutable {
    /// Maps `/proc/self/exe`: the very file the kernel executes, even if its path was since
    /// replaced. `None` if it cannot be opened or mapped (the caller then reads it).
    pub(super) fn map() -> Option<RunningExecutable> {
        let file = File::open("/proc/self/exe").ok()?;
        let len = usize::try_from(file.metadata().ok()?.len()).ok()?;
        if len == 0 || !on_local_filesystem(&file) {
            return None;
        }
        // SAFETY: a fresh mapping (address chosen by the kernel) of `len` bytes of an open
        // file descriptor, read-only and private; the result is checked against MAP_FAILED.
        let start = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        if start == libc::MAP_FAILED {
            return None;
        }
        Some(RunningExecutable {
            start: start.cast(),
            len,
        })
    }

    pub(super) fn bytes(&self) -> &[u8] {
        // SAFETY: `start..start + len` is mapped readable until `drop`, which needs `&mut
        // self`. Its bytes cannot change under the slice: the file is on a local filesystem
        // (`map` checks), where the kernel refuses to open a file for writing while a process
        // executes it (ETXTBSY), so it is neither written nor truncated (which would fault a
        // read past its new end) while this process runs.
        unsafe { std::slice::from_raw_parts(self.start, self.len) }
    }
}

/// Whether `file` is on a filesystem whose files no other machine can change: not a network
/// or user-space one (NFS, SMB, 9p, FUSE and virtiofs, Ceph), where a server may truncate a
/// file another host executes, which would fault a read of the mapping.
fn on_local_filesystem(file: &File) -> bool {
    const REMOTE: [i64; 7] = [
        0x6969,      // NFS
        0xFF53_4D42, // CIFS
        0xFE53_4D42, // SMB2
        0x517B,      // SMB
        0x0102_1997, // 9p
        0x6573_5546, // FUSE, virtiofs
        0x00C3_6400, // Ceph
    ];
    // SAFETY: fstatfs writes only into the zeroed struct given, for an open descriptor.
    let mut info: libc::statfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstatfs(file.as_raw_fd(), &mut info) } != 0 {
        return false;
    }
    !REMOTE.contains(&(info.f_type as i64))
}

impl Drop for RunningExecutable {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `map` made, which nothing borrows any more.
        unsafe {
            libc::munmap(self.start.cast_mut().cast(), self.len);
        }
    }
}
