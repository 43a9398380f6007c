//! The running executable's file, mapped read-only rather than read into memory, for its DWARF.
//!
//! Why: the runtime reads the executable's debug information at start-up, and most of that
//! file is the runtime's own (its and the standard library's line tables, about 9 MB of 11).
//! Reading it all cost most of the 9 ms an instrumented program takes to start (copying into
//! fresh pages, faulting them in, unmapping them after); a mapping shares the page cache's
//! pages and touches only what the parser reads.

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
        if len == 0 {
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
        // self`. Its bytes cannot change under the slice: the kernel refuses to open a file
        // for writing while a process executes it (ETXTBSY), so the file is neither written
        // nor truncated (which would fault a read past its new end) while this process runs.
        unsafe { std::slice::from_raw_parts(self.start, self.len) }
    }
}

impl Drop for RunningExecutable {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping `map` made, which nothing borrows any more.
        unsafe {
            libc::munmap(self.start.cast_mut().cast(), self.len);
        }
    }
}
