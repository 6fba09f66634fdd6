//! System calls and context switches, from the kernel's own counters.
//!
//! Context switches: `getrusage(RUSAGE_THREAD)`, voluntary and involuntary.
//! System calls: a perf counter on the `raw_syscalls:sys_enter` tracepoint
//! for the calling thread. It needs tracefs (for the tracepoint's id) and
//! permission to open perf events; where either is missing the figure is
//! reported as unknown, never as zero.

use std::io;

/// A snapshot of one thread's counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct Snapshot {
    /// System calls entered, if countable.
    pub syscalls: Option<u64>,
    /// Voluntary context switches (the thread blocked).
    pub voluntary: u64,
    /// Involuntary context switches (the thread was preempted).
    pub involuntary: u64,
}

/// Counter differences over an interval.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Delta {
    /// System calls, if countable.
    pub syscalls: Option<u64>,
    /// Voluntary context switches.
    pub voluntary: u64,
    /// Involuntary context switches.
    pub involuntary: u64,
}

impl Snapshot {
    /// The counters of `later` minus these.
    pub fn since(&self, later: &Snapshot) -> Delta {
        Delta {
            // Two calls of our own fall in between: the getrusage that
            // finished `self`, and the read that took `later` (counted on
            // entry, before it returned the count).
            syscalls: match (self.syscalls, later.syscalls) {
                (Some(a), Some(b)) => Some(b.saturating_sub(a).saturating_sub(2)),
                _ => None,
            },
            voluntary: later.voluntary - self.voluntary,
            involuntary: later.involuntary - self.involuntary,
        }
    }
}

/// The calling thread's counters.
pub struct Counters {
    perf: Option<std::fs::File>,
}

/// The prefix of `struct perf_event_attr` the kernel accepts as version 0
/// (64 bytes); libc does not define it.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
}

const PERF_TYPE_TRACEPOINT: u32 = 2;

fn tracepoint_id() -> Option<u64> {
    let paths = [
        "/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
        "/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id",
    ];
    for p in paths {
        if let Ok(s) = std::fs::read_to_string(p) {
            return s.trim().parse().ok();
        }
    }
    None
}

/// Mounts tracefs where it is expected if it is not there and we may (the
/// bench is often run as root on a fresh VM). Failing is fine: the syscall
/// figure is then unknown.
pub fn ensure_tracefs() {
    if tracepoint_id().is_none() {
        let _ = rustix::mount::mount(
            "nodev",
            "/sys/kernel/tracing",
            "tracefs",
            rustix::mount::MountFlags::empty(),
            None,
        );
    }
}

impl Counters {
    /// Counters for the calling thread.
    pub fn for_this_thread() -> Counters {
        Counters {
            perf: open_perf().ok(),
        }
    }

    /// Whether system calls can be counted here.
    pub fn counts_syscalls(&self) -> bool {
        self.perf.is_some()
    }

    /// Reads every counter.
    pub fn snapshot(&mut self) -> Snapshot {
        let syscalls = self.perf.as_mut().and_then(|f| {
            use std::io::Read;
            let mut buf = [0u8; 8];
            f.read_exact(&mut buf).ok().map(|_| u64::from_ne_bytes(buf))
        });
        // SAFETY: all-zero is a valid rusage; getrusage fills it.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `ru` is a valid, writable rusage for the call.
        unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
        Snapshot {
            syscalls,
            voluntary: ru.ru_nvcsw as u64,
            involuntary: ru.ru_nivcsw as u64,
        }
    }
}

fn open_perf() -> io::Result<std::fs::File> {
    use std::os::fd::FromRawFd;
    let id = tracepoint_id()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "tracefs not mounted"))?;
    let attr = PerfEventAttr {
        kind: PERF_TYPE_TRACEPOINT,
        size: 64,
        config: id,
        ..Default::default()
    };
    // SAFETY: `attr` is a valid version-0 perf_event_attr that outlives the
    // call; pid 0 and cpu -1 mean "this thread, on any CPU".
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            &attr as *const PerfEventAttr,
            0,
            -1,
            -1,
            0u64,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor to us.
    Ok(unsafe { std::fs::File::from_raw_fd(fd as i32) })
}
