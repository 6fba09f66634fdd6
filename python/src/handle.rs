//! What every handle class shares, in one place: [`Handle`], the Rust
//! object behind a class (one thread at a time, `ClosedError` once closed,
//! a `close()` from another thread ends a wait), and the Python methods
//! written once for every class: [`handle_methods!`] (`close`, `closed`,
//! `__enter__`, `__exit__`; `with` releases a loan or sample),
//! [`iterator_methods!`] (a subscriber's `__iter__`/`__next__`) and, in
//! `aio.rs`, `async_methods!` (`recv_async`, `__aiter__`/`__anext__`). A class
//! states only what differs: its field, `close()`'s docstring, or a
//! `close()` of its own. (Each macro adds a `#[pymethods]` block of its
//! own: pyo3's `multiple-pymethods`.)

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, TryLockError};

use pyo3::prelude::*;

use crate::errors::{self, Exc};
use crate::wake::Waiting;

/// A mark of the calling thread (the address of a thread-local), never 0.
fn thread_mark() -> usize {
    thread_local!(static MARK: u8 = const { 0 });
    MARK.with(|m| std::ptr::from_ref(m) as usize)
}

/// What a wait checks between slices: whether `close()` was called.
pub(crate) struct Cancel<'a> {
    flag: &'a AtomicBool,
    /// The `ClosedError` message.
    closed: &'static str,
}

impl Cancel<'_> {
    /// `ClosedError` once `close()` was called.
    pub(crate) fn check(&self, py: Python<'_>) -> PyResult<()> {
        // Acquire, paired with the Release store in `Handle::close`.
        if self.flag.load(Ordering::Acquire) {
            return Err(errors::closed(py, self.closed));
        }
        Ok(())
    }
}

/// The Rust object behind a handle class, used by one thread at a time
/// (`with`: `BusyError` for a second thread), gone once `close()` drops
/// it so that every later use raises `ClosedError`.
pub(crate) struct Handle<T> {
    inner: Mutex<Option<T>>,
    /// `close()` was called: every later call raises `ClosedError`, and a
    /// wait in progress ends at its next slice.
    closing: AtomicBool,
    /// The `thread_mark` of the thread inside `with`, 0 if none.
    holder: AtomicUsize,
    /// The `ClosedError` message, naming the handle.
    closed: &'static str,
    /// The asyncio receives waiting on it, which `close()` wakes.
    waiting: Waiting,
}

impl<T: Send> Handle<T> {
    pub(crate) fn new(inner: T, closed: &'static str) -> Self {
        Handle {
            inner: Mutex::new(Some(inner)),
            closing: AtomicBool::new(false),
            holder: AtomicUsize::new(0),
            closed,
            waiting: Waiting::default(),
        }
    }

    /// Runs `f` on the object; `ClosedError` once closed, `BusyError` while
    /// another thread is in a call of this handle (a wait included). `f`
    /// gets what its waits check between slices. A `close()` meanwhile
    /// (another thread's, or a signal handler's) closes the handle as `f`
    /// returns.
    pub(crate) fn with<R>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut T, &Cancel<'_>) -> PyResult<R>,
    ) -> PyResult<R> {
        let cancel = Cancel {
            flag: &self.closing,
            closed: self.closed,
        };
        cancel.check(py)?;
        let mut guard = match self.inner.try_lock() {
            Ok(g) => g,
            // A panic in another call: the object is still whole (every
            // call leaves it consistent between its own steps).
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return Err(errors::busy(py, self.closed)),
        };
        let Some(inner) = guard.as_mut() else {
            return Err(errors::closed(py, self.closed));
        };
        self.holder.store(thread_mark(), Ordering::Relaxed);
        let out = f(inner, &cancel);
        self.holder.store(0, Ordering::Relaxed);
        if self.closing.load(Ordering::Acquire) {
            *guard = None;
        }
        out
    }

    /// Closes the handle, giving back what it held (None if already closed,
    /// or if this very thread is inside `with`, a signal handler run by its
    /// wait: that call closes it as it returns). A call of another thread
    /// is waited for, GIL released: its wait ends within a slice.
    pub(crate) fn close(&self, py: Python<'_>) -> Option<T> {
        // Release, paired with the Acquire loads in `Cancel::check` and `with`.
        self.closing.store(true, Ordering::Release);
        // An asyncio receive waiting on this handle turns again, and finds
        // it closed.
        self.waiting.wake_all();
        match self.inner.try_lock() {
            Ok(mut g) => g.take(),
            Err(TryLockError::Poisoned(p)) => p.into_inner().take(),
            Err(TryLockError::WouldBlock) => {
                if self.holder.load(Ordering::Relaxed) == thread_mark() {
                    return None;
                }
                py.detach(|| self.inner.lock().unwrap_or_else(|p| p.into_inner()).take())
            }
        }
    }

    /// The asyncio receives waiting on this handle.
    pub(crate) fn waiting(&self) -> &Waiting {
        &self.waiting
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// `ClosedError` once `close()` was called, without taking the
    /// object: for what reads through a share of it of its own (a
    /// blackboard entry's reader), so that it fails as the handle does.
    pub(crate) fn check_open(&self, py: Python<'_>) -> PyResult<()> {
        if self.is_closed() {
            return Err(errors::closed(py, self.closed));
        }
        Ok(())
    }
}

/// What a class's `close()` (or `release()`) returns, as `__exit__`
/// passes it on: nothing, or the error closing met (a journal publisher's
/// failed compaction).
pub(crate) trait Closing {
    fn into_result(self) -> PyResult<()>;
}

impl Closing for () {
    fn into_result(self) -> PyResult<()> {
        Ok(())
    }
}

impl Closing for PyResult<()> {
    fn into_result(self) -> PyResult<()> {
        self
    }
}

/// The Python methods of a handle class whose `Handle` is `$field`:
/// - `handle_methods!(PyX.field, /// docstring \n fn close)`: `close()`
///   closes the handle, and the methods below;
/// - `handle_methods!(PyX.field)`: the class writes `close()` itself
///   (returning nothing or a `PyResult<()>`); `closed`, `__enter__` (the
///   handle) and `__exit__` (closes it; an error closing raises, the
///   block's own exception is never swallowed);
/// - `handle_methods!(PyX: release)`: a loan or sample, whose `with`
///   block ends in `release()`.
macro_rules! handle_methods {
    ($class:ident . $field:ident, $(#[$doc:meta])* fn close) => {
        #[::pyo3::pymethods]
        impl $class {
            $(#[$doc])*
            fn close(&self, py: ::pyo3::Python<'_>) {
                self.$field.close(py);
            }
        }
        $crate::handle::handle_methods!($class.$field);
    };
    ($class:ident . $field:ident) => {
        #[::pyo3::pymethods]
        impl $class {
            #[getter]
            fn closed(&self) -> bool {
                self.$field.is_closed()
            }

            fn __enter__(slf: ::pyo3::Py<Self>) -> ::pyo3::Py<Self> {
                slf
            }

            fn __exit__(
                &self,
                py: ::pyo3::Python<'_>,
                _t: &::pyo3::Bound<'_, ::pyo3::PyAny>,
                _v: &::pyo3::Bound<'_, ::pyo3::PyAny>,
                _tb: &::pyo3::Bound<'_, ::pyo3::PyAny>,
            ) -> ::pyo3::PyResult<bool> {
                $crate::handle::Closing::into_result(self.close(py))?;
                Ok(false)
            }
        }
    };
    ($class:ident : release) => {
        #[::pyo3::pymethods]
        impl $class {
            fn __enter__(slf: ::pyo3::Py<Self>) -> ::pyo3::Py<Self> {
                slf
            }

            fn __exit__(
                &mut self,
                py: ::pyo3::Python<'_>,
                _t: &::pyo3::Bound<'_, ::pyo3::PyAny>,
                _v: &::pyo3::Bound<'_, ::pyo3::PyAny>,
                _tb: &::pyo3::Bound<'_, ::pyo3::PyAny>,
            ) -> ::pyo3::PyResult<bool> {
                $crate::handle::Closing::into_result(self.release(py))?;
                Ok(false)
            }
        }
    };
}
pub(crate) use handle_methods;

/// `__iter__` and `__next__` of a subscriber class whose `Handle` is
/// `$field` and which has `recv_with(py, Until)`: iteration receives,
/// waiting as long as it takes, and stops once the handle is closed (also
/// when another thread's `close()` ends the wait). The docs given become
/// `__next__`'s.
macro_rules! iterator_methods {
    ($class:ident . $field:ident, $(#[$doc:meta])* fn __next__) => {
        #[::pyo3::pymethods]
        impl $class {
            fn __iter__(slf: ::pyo3::Py<Self>) -> ::pyo3::Py<Self> {
                slf
            }

            $(#[$doc])*
            fn __next__(
                &self,
                py: ::pyo3::Python<'_>,
            ) -> ::pyo3::PyResult<Option<::pyo3::Py<::pyo3::PyAny>>> {
                if self.$field.is_closed() {
                    return Ok(None);
                }
                let got = self.recv_with(py, $crate::Until::Forever);
                $crate::handle::end_of_iteration(py, self.$field.is_closed(), got)
            }
        }
    };
}
pub(crate) use iterator_methods;

/// What a subscriber's `__next__` returns: the iteration ends (None) once
/// the handle is `closed`, also when another thread's `close()` ended the
/// wait (its `ClosedError`).
pub(crate) fn end_of_iteration(
    py: Python<'_>,
    closed: bool,
    got: PyResult<Option<Py<PyAny>>>,
) -> PyResult<Option<Py<PyAny>>> {
    match got {
        Err(e) if closed && errors::is(py, &e, Exc::ClosedError)? => Ok(None),
        got => got,
    }
}
