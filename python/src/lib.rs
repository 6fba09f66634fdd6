//! `shmbus._shmbus`: the native half of the Python package `shmbus`
//! (python/shmbus). Every public class of the package is defined here; the
//! pure-Python half holds the exceptions (`shmbus.errors`) and the helpers
//! that make memoryviews and NumPy arrays (`shmbus._support`), which this
//! module calls.
//!
//! Built for the stable ABI (abi3, CPython 3.11+, the first whose limited
//! API has the buffer protocol):
//! - bytes-like input is read from `bytes` and `bytearray` directly and
//!   from anything else through `bytes(obj)`;
//! - a view of shared memory (a pool sample or loan) is a memoryview of a
//!   "hold" object that exports the block through the buffer protocol
//!   (read-only for a sample, all the way down: the memoryview's `.obj`
//!   refuses a writable export) and keeps the mapping and the block alive
//!   for as long as any view, slice or NumPy array made from it lives;
//! - `recv_into` writes through the address of a ctypes array made with
//!   `from_buffer`, which holds the target's buffer export meanwhile.
//!
//! Waiting: every blocking call waits in slices of at most [`SLICE`] with
//! the GIL released, and checks for signals (Ctrl-C) and for `close()`
//! from another thread between slices.
//!
//! Threads: a handle is used by one thread at a time. Its Rust object is
//! behind a mutex that a call only tries to take: a second thread's call
//! meanwhile raises `BusyError` at once, except `close()`, which ends the
//! first thread's wait (that call raises `ClosedError` within a slice) and
//! then closes the handle.
//!
//! What the handle classes share (that object, `close`, `with`, iteration)
//! is written once, in `handle.rs`; the exception classes are named by
//! type (`errors::Exc`), each looked up once when the module loads.

use std::time::{Duration, Instant};

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes};
use shmbus::Wait;

use handle::Cancel;

mod aio;
mod blackboard;
mod bus;
mod errors;
mod handle;
mod journal;
mod pool;
mod recording;
mod reqrep;
mod stream;
mod wake;

/// The longest a blocking call waits without the GIL before it checks for
/// signals (so Ctrl-C lands within this).
pub(crate) const SLICE: Duration = Duration::from_millis(50);

/// When a blocking call gives up.
#[derive(Clone, Copy)]
pub(crate) enum Until {
    /// `timeout=0`: try once.
    Now,
    At(Instant),
    /// `timeout=None`.
    Forever,
}

impl Until {
    pub(crate) fn from_timeout(timeout: Option<f64>) -> PyResult<Until> {
        match timeout {
            None => Ok(Until::Forever),
            Some(t) if t.is_nan() || t < 0.0 => Err(pyo3::exceptions::PyValueError::new_err(
                format!("timeout must be None or a number of seconds >= 0, got {t}"),
            )),
            Some(0.0) => Ok(Until::Now),
            Some(t) => Ok(Duration::try_from_secs_f64(t)
                .ok()
                .and_then(|d| Instant::now().checked_add(d))
                .map_or(Until::Forever, Until::At)),
        }
    }

    /// The next slice to wait, or None when the time is up.
    fn slice(self) -> Option<Duration> {
        match self {
            Until::Now => None,
            Until::Forever => Some(SLICE),
            Until::At(d) => {
                let left = d.saturating_duration_since(Instant::now());
                (!left.is_zero()).then(|| left.min(SLICE))
            }
        }
    }
}

/// Calls `step(Wait::Never)` with the GIL held (the fast path: something is
/// there), then `step(Wait::For(slice))` with the GIL released until it
/// finds something or `until` passes, checking signals and `cancel` (a
/// `close()` from another thread) between slices.
pub(crate) fn wait_in_slices<T, S>(
    py: Python<'_>,
    until: Until,
    cancel: &Cancel<'_>,
    mut step: S,
) -> PyResult<Option<T>>
where
    T: Send,
    S: FnMut(Wait) -> Option<T> + Send,
{
    if let Some(found) = step(Wait::Never) {
        return Ok(Some(found));
    }
    while let Some(slice) = until.slice() {
        if let Some(found) = py.detach(|| step(Wait::For(slice))) {
            return Ok(Some(found));
        }
        py.check_signals()?;
        cancel.check(py)?;
    }
    Ok(None)
}

/// Joins the journaled bus `name` with the GIL released, answering Ctrl-C
/// (any signal handler's exception) and `cancel` within [`SLICE`]: the
/// core asks every 10 ms whether to go on while it waits for the
/// publisher's flush, and each ask takes the GIL to run signal handlers.
pub(crate) fn join_journal(
    py: Python<'_>,
    name: &str,
    opts: &shmbus::journal::JoinOptions,
    cancel: Option<&Cancel<'_>>,
) -> PyResult<Result<shmbus::journal::Subscriber<[u8]>, shmbus::journal::JoinError>> {
    join_answering(py, cancel, |go_on| {
        shmbus::journal::Subscriber::<[u8]>::join_cancellable(name, opts, go_on)
    })
}

/// As [`join_journal`], for the core's raw `State`.
pub(crate) fn join_state(
    py: Python<'_>,
    name: &str,
    opts: &shmbus::journal::JoinOptions,
) -> PyResult<Result<shmbus::journal::State<[u8]>, shmbus::journal::JoinError>> {
    join_answering(py, None, |go_on| {
        shmbus::journal::State::<[u8]>::join_cancellable(name, opts, go_on)
    })
}

/// Runs `join` with the GIL released, handing it a `go_on` that takes
/// the GIL to run signal handlers and check `cancel`; the exception that
/// stopped it is raised in place of `JoinError::Cancelled`.
fn join_answering<T: Send>(
    py: Python<'_>,
    cancel: Option<&Cancel<'_>>,
    join: impl FnOnce(&mut dyn FnMut() -> bool) -> Result<T, shmbus::journal::JoinError> + Send,
) -> PyResult<Result<T, shmbus::journal::JoinError>> {
    let mut raised: Option<PyErr> = None;
    let joined = py.detach(|| {
        join(&mut || {
            Python::attach(|py| {
                let stop = py
                    .check_signals()
                    .err()
                    .or_else(|| cancel.and_then(|c| c.check(py).err()));
                match stop {
                    None => true,
                    Some(e) => {
                        raised = Some(e);
                        false
                    }
                }
            })
        })
    });
    match (joined, raised) {
        (Err(shmbus::journal::JoinError::Cancelled), Some(e)) => Err(e),
        (joined, _) => Ok(joined),
    }
}

/// `wait_in_slices` over an attempt that can fail, where the errors that
/// `again` accepts mean "not yet" (full, empty, no block free): the first
/// success or other error, else, once `until` passes, what `gave_up` says
/// (the error to raise, or one last attempt).
pub(crate) fn retry_in_slices<T, E, S>(
    py: Python<'_>,
    until: Until,
    cancel: &Cancel<'_>,
    again: fn(&E) -> bool,
    mut attempt: S,
    gave_up: impl FnOnce() -> Result<T, E>,
) -> PyResult<Result<T, E>>
where
    T: Send,
    E: Send,
    S: FnMut(Wait) -> Result<T, E> + Send,
{
    let done = wait_in_slices(py, until, cancel, |w| match attempt(w) {
        Err(e) if again(&e) => None,
        done => Some(done),
    })?;
    Ok(done.unwrap_or_else(gave_up))
}

/// A lap as the Python value a receive returns in place of a message.
pub(crate) fn lagged(py: Python<'_>, skipped: u64) -> PyResult<Py<PyAny>> {
    Lagged { skipped }.into_py_any(py)
}

/// Runs `f` over the bytes of a bytes-like `obj`: `bytes` and `bytearray`
/// in place (the GIL is held throughout, so nothing can resize a
/// bytearray meanwhile), anything else through `bytes(obj)`.
pub(crate) fn with_bytes<R>(obj: &Bound<'_, PyAny>, f: impl FnOnce(&[u8]) -> R) -> PyResult<R> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(f(b.as_bytes()));
    }
    if let Ok(ba) = obj.cast::<PyByteArray>() {
        // SAFETY: the GIL is held for the whole call and `f` is Rust code
        // that runs no Python, so nothing can resize or free the
        // bytearray's buffer while the slice lives.
        return Ok(f(unsafe { ba.as_bytes() }));
    }
    if obj.is_instance_of::<pyo3::types::PyString>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "a message is bytes-like (bytes, bytearray, memoryview, ...), not str: encode it",
        ));
    }
    let copy = obj.py().get_type::<PyBytes>().call1((obj,))?;
    let copy = copy.cast::<PyBytes>()?;
    Ok(f(copy.as_bytes()))
}

/// An owned copy of a bytes-like `obj`, for calls that release the GIL.
pub(crate) fn owned_bytes(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    with_bytes(obj, <[u8]>::to_vec)
}

/// A function of `shmbus._support`.
pub(crate) fn support<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("shmbus._support")?.getattr(name)
}

/// A lapped reader's report: `skipped` messages were lost (overwritten
/// before this subscriber read them). Received in place of a message;
/// over a subscriber's life, messages delivered plus all `skipped` equal
/// the messages published since it started.
#[pyclass(module = "shmbus", frozen, eq, hash, str)]
#[derive(PartialEq, Eq, Hash, Clone, Copy)]
pub struct Lagged {
    /// How many messages were lost.
    #[pyo3(get)]
    pub skipped: u64,
}

impl std::fmt::Display for Lagged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "lagged: skipped {}", self.skipped)
    }
}

#[pymethods]
impl Lagged {
    #[new]
    fn new(skipped: u64) -> Self {
        Lagged { skipped }
    }
    fn __repr__(&self) -> String {
        format!("Lagged(skipped={})", self.skipped)
    }
}

/// A message of a journaled bus with its sequence number.
#[pyclass(module = "shmbus", frozen)]
pub struct Entry {
    /// The message's sequence number on the bus.
    #[pyo3(get)]
    pub sequence: u64,
    /// The message (the bus's message size, zero-padded as published).
    #[pyo3(get)]
    pub data: Py<PyBytes>,
}

#[pymethods]
impl Entry {
    fn __repr__(&self, py: Python<'_>) -> String {
        let data = self.data.bind(py).as_bytes();
        format!(
            "Entry(sequence={}, data=<{} bytes>)",
            self.sequence,
            data.len()
        )
    }
    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Entry>().is_ok_and(|o| {
            let o = o.get();
            o.sequence == self.sequence
                && o.data.bind(py).as_bytes() == self.data.bind(py).as_bytes()
        })
    }
}

/// `shmbus.remove(name)`: unlinks a bus or stream (a bare name lives in
/// /dev/shm). Handles open on it keep working; new opens fail.
#[pyfunction]
fn remove(py: Python<'_>, name: &str) -> PyResult<()> {
    shmbus::remove(name)
        .map(|_| ())
        .map_err(|e| errors::open(py, e))
}

#[pymodule]
fn _shmbus(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Every exception class the binding raises, found now: a class
    // missing from shmbus.errors fails the import, not a later error.
    errors::load(m.py())?;
    m.add_class::<Lagged>()?;
    m.add_class::<Entry>()?;
    m.add_function(wrap_pyfunction!(remove, m)?)?;
    m.add_function(wrap_pyfunction!(errors::_kind_classes, m)?)?;
    bus::register(m)?;
    pool::register(m)?;
    stream::register(m)?;
    journal::register(m)?;
    blackboard::register(m)?;
    recording::register(m)?;
    reqrep::register(m)?;
    aio::register(m)?;
    m.add("SLICE_SECONDS", SLICE.as_secs_f64())?;
    Ok(())
}
