//! Cross-process waiting on a 32-bit word in shared memory: a Linux futex without the PRIVATE
//! flag, so the kernel keys it on the shared page and a wake in one process reaches a waiter in
//! another. This file holds unsafe code because the futex is a raw syscall taking the word's address.

use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// How a [`wait`] ended. Every outcome means "look at the word again": futexes wake spuriously.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    /// A [`wake`] (or a signal) ended the wait.
    Woken,
    /// The timeout passed.
    TimedOut,
    /// The word no longer held `expected` when the wait began.
    ValueChanged,
}

/// Sleeps while `word` holds `expected`, for at most `timeout`.
pub fn wait(word: &AtomicU32, expected: u32, timeout: Duration) -> WaitOutcome {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
    };
    // SAFETY: `word` is a live, 4-aligned u32 for the whole call (the borrow guarantees it), the
    // timespec is a valid pointer to a relative timeout, and FUTEX_WAIT ignores the last two
    // arguments. The kernel only reads the word.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    if rc == 0 {
        return WaitOutcome::Woken;
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::ETIMEDOUT) => WaitOutcome::TimedOut,
        Some(libc::EAGAIN) => WaitOutcome::ValueChanged,
        // EINTR and anything unexpected: let the caller re-read the word and decide.
        _ => WaitOutcome::Woken,
    }
}

/// Wakes up to `waiters` processes or threads sleeping on `word`; returns how many woke.
pub fn wake(word: &AtomicU32, waiters: u32) -> u32 {
    let waiters = waiters.min(i32::MAX as u32);
    // SAFETY: `word` is a live, aligned u32; FUTEX_WAKE only uses its address as a key and
    // ignores the timeout and second-word arguments.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            waiters,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    rc.max(0) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
    use std::time::Instant;

    #[test]
    fn waits_time_out_and_see_changed_values() {
        let word = AtomicU32::new(1);
        assert_eq!(
            wait(&word, 2, Duration::from_secs(5)),
            WaitOutcome::ValueChanged
        );
        let t = Instant::now();
        assert_eq!(
            wait(&word, 1, Duration::from_millis(20)),
            WaitOutcome::TimedOut
        );
        assert!(t.elapsed() >= Duration::from_millis(15));
    }

    #[test]
    fn a_wake_ends_a_wait_in_another_thread() {
        let word = AtomicU32::new(0);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                while word.load(Ordering::Acquire) == 0 {
                    wait(&word, 0, Duration::from_secs(10));
                }
            });
            std::thread::sleep(Duration::from_millis(10));
            word.store(1, Ordering::Release);
            wake(&word, 1);
            waiter.join().unwrap();
        });
    }
}
