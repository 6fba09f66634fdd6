//! asyncio: `await sub.recv_async()` and `async for msg in sub` on the
//! receiving handles (bus and pool subscribers, the journal subscriber;
//! `await consumer.pop_async()` and `async for` on a stream consumer), on
//! the core's mechanism: the process's one waiter thread asleep in
//! `futex_waitv` (`shmbus::aio`). No thread per handle, no polling in
//! Python: idle, the event loop sleeps in its selector and the waiter in
//! the kernel.
//!
//! One turn of a receive (the coroutine is `shmbus._support.recv_async`):
//! the coroutine makes an asyncio future on the running loop and calls
//! the handle's `_recv_or_arm(loop, future, woke)`, which, with the GIL,
//! receives without waiting; nothing there, it arms a wake-up
//! (`shmbus::aio::arm`, an owned registration) whose `Waker` calls
//! `loop.call_soon_threadsafe(wake_future, future)` from the waiter
//! thread, and returns the [`Armed`] registration. The coroutine awaits
//! the future, disarms (whatever ended the await: a wake, a cancellation,
//! Ctrl-C), and turns again. It consumes only inside `_recv_or_arm`, never
//! across an await: a cancelled receive has taken nothing.
//!
//! The waker takes the GIL on the waiter thread, and only there: the
//! waiter wakes wakers after it released its registry lock, and a waker
//! dropped under that lock only drops references (pyo3 defers the
//! decrefs without the GIL), so a Python thread that holds the GIL and
//! waits for the registry lock (an arm, a disarm) never waits for a
//! thread that waits for the GIL.

use std::sync::{Arc, Mutex, Weak};
use std::task::{Wake, Waker};

use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;
use shmbus::select::Selectable;

use crate::handle::Handle;
use crate::support;

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Armed>()?;
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

/// Wakes one asyncio future, once, from any thread:
/// `loop.call_soon_threadsafe(wake_future, future)`.
pub(crate) struct LoopWaker {
    /// The loop and the future; taken by the first wake.
    call: Mutex<Option<(Py<PyAny>, Py<PyAny>)>>,
}

impl LoopWaker {
    fn new(event_loop: Py<PyAny>, future: Py<PyAny>) -> Arc<Self> {
        Arc::new(LoopWaker {
            call: Mutex::new(Some((event_loop, future))),
        })
    }

    /// Schedules the future's result on its loop (once; later calls do
    /// nothing).
    pub(crate) fn wake_now(&self) {
        let Some((event_loop, future)) = self.call.lock().unwrap_or_else(|p| p.into_inner()).take()
        else {
            return;
        };
        // try_attach: None while the interpreter finalizes (a process
        // exiting with a receive armed): nobody waits any more.
        let _ = Python::try_attach(|py| {
            let woke = support(py, "wake_future").and_then(|wake| {
                event_loop.call_method1(py, "call_soon_threadsafe", (wake, future))
            });
            // A closed loop (RuntimeError): its task waits no more.
            drop(woke);
        });
    }
}

impl Wake for LoopWaker {
    fn wake(self: Arc<Self>) {
        self.wake_now();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.wake_now();
    }
}

/// The wake-ups armed on one handle (its `Handle`'s), so that `close()`
/// ends the receives that wait on it (they then raise `ClosedError`;
/// `async for` ends).
#[derive(Default)]
pub(crate) struct Waiting {
    wakers: Mutex<Vec<Weak<LoopWaker>>>,
}

impl Waiting {
    fn add(&self, waker: &Arc<LoopWaker>) {
        let mut w = self.wakers.lock().unwrap_or_else(|p| p.into_inner());
        // Those disarmed since are gone: the list stays as long as the
        // receives waiting now.
        w.retain(|w| w.strong_count() > 0);
        w.push(Arc::downgrade(waker));
    }

    /// Wakes every receive waiting on the handle (its `close()`).
    pub(crate) fn wake_all(&self) {
        let wakers = std::mem::take(&mut *self.wakers.lock().unwrap_or_else(|p| p.into_inner()));
        for w in wakers.iter().filter_map(Weak::upgrade) {
            w.wake_now();
        }
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
/// an _Armed)` after arming a wake-up that sets `future`'s result on
/// `event_loop`. `woke`: the coroutine was woken since its last turn (a
/// receive that finds nothing then arms with `arm_after_miss`, as the
/// Rust `recv_async` does: a claim not committed yet is waited for with a
/// nap, not looked at in a loop).
pub(crate) fn recv_or_arm<H: Receiving>(
    h: &H,
    py: Python<'_>,
    event_loop: Py<PyAny>,
    future: Py<PyAny>,
    woke: bool,
) -> PyResult<(bool, Py<PyAny>)> {
    let waker = LoopWaker::new(event_loop, future);
    let std_waker = Waker::from(waker.clone());
    let mut missed = woke;
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
                event_loop: ::pyo3::Py<::pyo3::PyAny>,
                future: ::pyo3::Py<::pyo3::PyAny>,
                woke: bool,
            ) -> ::pyo3::PyResult<(bool, ::pyo3::Py<::pyo3::PyAny>)> {
                $crate::aio::recv_or_arm(self, py, event_loop, future, woke)
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
