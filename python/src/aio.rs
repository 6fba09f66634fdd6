//! asyncio: `await sub.recv_async()` and `async for msg in sub` on the
//! receiving handles (bus and pool subscribers, the journal subscriber;
//! `await consumer.pop_async()` and `async for` on a stream consumer), on
//! the core's mechanism: the process's one waiter thread asleep in
//! `futex_waitv` (`shmbus::aio`). No thread per handle, no polling in
//! Python: idle, the event loop sleeps in its selector and the waiter in
//! the kernel.
//!
//! One turn of a receive (the coroutine is `shmbus._support.recv_async`):
//! the coroutine makes an asyncio future on the running loop, files it
//! under a fresh token with its loop's [`Bell`], and calls the handle's
//! `_recv_or_arm(bell, token)`, which, with the GIL, receives
//! without waiting; nothing there, it arms a wake-up
//! (`shmbus::aio::arm`, an owned registration) whose `Waker` rings the
//! bell with the token, and returns the [`Armed`] registration. The
//! coroutine awaits the future, disarms (whatever ended the await: a
//! wake, a cancellation, Ctrl-C), and turns again. It consumes only
//! inside `_recv_or_arm`, never across an await: a cancelled receive has
//! taken nothing.
//!
//! The bell: one per event loop, an eventfd the loop watches
//! (`loop.add_reader`) and a list of rung tokens. A wake, on the waiter
//! thread, adds its token and writes the eventfd: no GIL, no Python. The
//! loop wakes in its selector and its reader sets the futures of the
//! tokens rung. So a Python thread busy with the GIL never holds up the
//! waiter thread (which wakes every async receive of the process, Rust's
//! too), and an async wake costs what a Rust one does: the publisher's
//! futex wake of the waiter thread, then the waiter's wake of the loop's
//! thread. The loop owns its bell (its reader holds it); when the loop
//! lets go of the reader (closed, or collected), the wake-ups still armed
//! for it are disarmed (`shmbus._support._LoopBell`).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::task::Waker;

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use shmbus::select::Selectable;

use crate::handle::Handle;
use crate::wake::{BellInner, LoopWaker};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Armed>()?;
    m.add_class::<Bell>()?;
    m.add_function(wrap_pyfunction!(aio_registrations, m)?)?;
    Ok(())
}

/// `shmbus.aio_registrations()`: how many wake-ups this process has armed
/// with its waiter thread now (asyncio receives waiting, and Rust futures
/// if any): zero once every waiting receive has ended, been cancelled or
/// interrupted.
#[pyfunction]
fn aio_registrations() -> usize {
    shmbus::aio::registrations()
}

/// An event loop's doorbell: an eventfd the loop watches, and the tokens
/// rung since its reader last looked. Not public API
/// (`shmbus._support` makes one per loop).
#[pyclass(module = "shmbus._shmbus", name = "_Bell", frozen)]
pub struct Bell {
    inner: Arc<BellInner>,
}

#[pymethods]
impl Bell {
    #[new]
    fn new() -> PyResult<Self> {
        // SAFETY: eventfd takes no pointers; a negative answer is an error.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        Ok(Bell {
            inner: Arc::new(BellInner {
                // SAFETY: `fd` was just opened and is owned by nobody else.
                fd: unsafe { OwnedFd::from_raw_fd(fd) },
                rung: Mutex::new(Vec::new()),
            }),
        })
    }

    /// The eventfd, for `loop.add_reader`.
    fn fileno(&self) -> i32 {
        self.inner.fd.as_raw_fd()
    }

    /// The tokens rung since the last call (the eventfd read empty first:
    /// a ring after that read writes it again, so none is missed).
    fn take(&self) -> Vec<u64> {
        let mut count: u64 = 0;
        // SAFETY: `fd` is our open eventfd and `count` a live 8-byte
        // buffer. EAGAIN (nothing to read: a spurious call) is fine.
        let _ = unsafe {
            libc::read(
                self.inner.fd.as_raw_fd(),
                std::ptr::from_mut(&mut count).cast(),
                8,
            )
        };
        std::mem::take(&mut *self.inner.rung.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// An armed wake-up (`shmbus::aio::Armed`) and its waker: `disarm()`
/// removes the registration. Not public API: the coroutine of
/// `recv_async` holds it across its await.
#[pyclass(module = "shmbus._shmbus", name = "_Armed", frozen)]
pub struct Armed {
    armed: Mutex<Option<(shmbus::aio::Armed, Arc<LoopWaker>)>>,
}

#[pymethods]
impl Armed {
    /// Removes the registration (if the waiter has not woken it already).
    fn disarm(&self) {
        drop(self.armed.lock().unwrap_or_else(|p| p.into_inner()).take());
    }
}

/// A receiving handle class: a receive that never waits, and the member
/// to arm a wake-up on.
pub(crate) trait Receiving {
    type State: Send;

    fn handle(&self) -> &Handle<Self::State>;

    /// What a receive that never waits finds: the message (or lag, or
    /// record), None if nothing is there; the handle's errors raised.
    fn try_next(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>>;

    /// The member whose doorbell a wake-up waits on.
    fn member(state: &Self::State) -> &dyn Selectable;
}

/// One turn of `recv_async`: `(True, what was received)`, or `(False,
/// an _Armed)` after arming a wake-up that rings `token` on `bell`. As a
/// Rust `Readable`: `arm` looks, and where it finds the member ready but
/// the receive then finds nothing (a claim not committed yet), the turn
/// arms with `arm_after_miss`, a nap of at most 1 ms, so a claim is
/// waited for, not looked at in a loop. A turn starts afresh: a wake
/// that finds nothing (a stream's peer-check nap, another task took the
/// message) arms as before it, without a nap.
pub(crate) fn recv_or_arm<H: Receiving>(
    h: &H,
    py: Python<'_>,
    bell: &Bell,
    token: u64,
) -> PyResult<(bool, Py<PyAny>)> {
    let waker = Arc::new(LoopWaker {
        bell: bell.inner.clone(),
        token,
        rung: AtomicBool::new(false),
    });
    let std_waker = Waker::from(waker.clone());
    let mut missed = false;
    loop {
        if let Some(got) = h.try_next(py)? {
            return Ok((true, got));
        }
        let armed = h.handle().with(py, |st, _| {
            let member = H::member(st);
            Ok(if missed {
                shmbus::aio::arm_after_miss(member, &std_waker)
            } else {
                shmbus::aio::arm(member, &std_waker)
            })
        })?;
        match armed {
            Some(armed) => {
                h.handle().waiting().add(&waker);
                let armed = Armed {
                    armed: Mutex::new(Some((armed, waker))),
                };
                return Ok((false, armed.into_py_any(py)?));
            }
            // Readable now: receive again.
            None if !missed => missed = true,
            // No waiter thread could be started: be woken at once (a
            // turn through the loop) rather than never.
            None => {
                waker.wake_now();
                let armed = Armed {
                    armed: Mutex::new(None),
                };
                return Ok((false, armed.into_py_any(py)?));
            }
        }
    }
}

/// The methods every receiving class shares: `_recv_or_arm` (one turn,
/// above) and the coroutine methods, written in Python
/// (`shmbus._support`): `$recv_async()` and `__aiter__`/`__anext__`.
macro_rules! async_methods {
    ($class:ident, $(#[$doc:meta])* fn $recv_async:ident) => {
        #[::pyo3::pymethods]
        impl $class {
            fn _recv_or_arm(
                &self,
                py: ::pyo3::Python<'_>,
                bell: ::pyo3::PyRef<'_, $crate::aio::Bell>,
                token: u64,
            ) -> ::pyo3::PyResult<(bool, ::pyo3::Py<::pyo3::PyAny>)> {
                $crate::aio::recv_or_arm(self, py, &bell, token)
            }

            $(#[$doc])*
            fn $recv_async<'py>(
                slf: &::pyo3::Bound<'py, Self>,
            ) -> ::pyo3::PyResult<::pyo3::Bound<'py, ::pyo3::PyAny>> {
                $crate::support(slf.py(), "recv_async")?.call1((slf,))
            }

            fn __aiter__(slf: ::pyo3::Py<Self>) -> ::pyo3::Py<Self> {
                slf
            }

            fn __anext__<'py>(
                slf: &::pyo3::Bound<'py, Self>,
            ) -> ::pyo3::PyResult<::pyo3::Bound<'py, ::pyo3::PyAny>> {
                $crate::support(slf.py(), "anext")?.call1((slf,))
            }
        }
    };
}
pub(crate) use async_methods;
