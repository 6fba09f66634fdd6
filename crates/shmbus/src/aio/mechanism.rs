//! Which wake an async wait uses, and why: said at run time, so that a
//! program (or its log) knows whether its runtime is woken directly.

use std::fmt;

/// How a future waiting for a segment is woken.
///
/// # Examples
/// ```
/// use shmbus::aio::{WakeMechanism, wake_mechanism};
///
/// // Outside any runtime, a wait would use the waiter thread.
/// assert!(matches!(wake_mechanism(), WakeMechanism::WaiterThread(_)));
/// println!("async waits here use {}", wake_mechanism());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WakeMechanism {
    /// An io_uring `FUTEX_WAIT` whose completion wakes the tokio runtime's
    /// reactor: one wake-up, no thread in between (feature `io-uring`).
    IoUring,
    /// The process's waiter thread sleeps on the futex and wakes the
    /// task's waker: two wake-ups (the thread, then the runtime).
    WaiterThread(WhyThread),
}

/// Why a wait uses the waiter thread.
///
/// # Examples
/// ```
/// use shmbus::aio::WhyThread;
/// println!("{}", WhyThread::NoRuntime);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WhyThread {
    /// The crate was built without the feature `io-uring`.
    NotBuilt,
    /// `SHMBUS_AIO_WAKE=thread` in the environment.
    Forced,
    /// io_uring could not be set up (`kernel.io_uring_disabled`, a
    /// seccomp filter, no memory): the errno.
    NoRing(i32),
    /// The kernel's io_uring has no `FUTEX_WAIT` (Linux 6.7 added it).
    NoFutexWait,
    /// The wait is not polled inside a tokio runtime (another executor,
    /// or a binding's own loop).
    NoRuntime,
    /// The tokio runtime has no I/O driver (built without `enable_io`).
    NoIoDriver,
}

impl fmt::Display for WhyThread {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WhyThread::NotBuilt => f.write_str("shmbus was built without the feature io-uring"),
            WhyThread::Forced => f.write_str("SHMBUS_AIO_WAKE=thread asks for it"),
            WhyThread::NoRing(errno) => write!(
                f,
                "io_uring could not be set up ({})",
                std::io::Error::from_raw_os_error(*errno)
            ),
            WhyThread::NoFutexWait => {
                f.write_str("this kernel's io_uring has no FUTEX_WAIT (Linux 6.7 or later has)")
            }
            WhyThread::NoRuntime => f.write_str("the wait is not polled inside a tokio runtime"),
            WhyThread::NoIoDriver => f.write_str("the tokio runtime has no I/O driver (enable_io)"),
        }
    }
}

impl fmt::Display for WakeMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WakeMechanism::IoUring => f.write_str("io_uring FUTEX_WAIT on the runtime's reactor"),
            WakeMechanism::WaiterThread(why) => write!(f, "the waiter thread ({why})"),
        }
    }
}
