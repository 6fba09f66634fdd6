//! The stop flag of the commands that run until told otherwise (`top`'s
//! live view, `bridge`): a signal sets it, and the command's loop looks at
//! it and ends cleanly, so that what it set up (a terminal's modes, a
//! bridge's status file) is put back.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set by any of the signals given to [`stop_on`].
pub static STOP: AtomicBool = AtomicBool::new(false);

/// Whether a stop signal has come.
pub fn stopped() -> bool {
    STOP.load(Ordering::Relaxed)
}

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// From now on, each of `signals` sets [`STOP`] instead of ending the
/// process.
pub fn stop_on(signals: &[libc::c_int]) {
    for &sig in signals {
        let handler: extern "C" fn(libc::c_int) = on_signal;
        // SAFETY: the handler only stores to an atomic, which is
        // async-signal-safe; a command installs one set of handlers, all
        // this one.
        unsafe { libc::signal(sig, handler as libc::sighandler_t) };
    }
}
