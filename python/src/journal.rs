//! The journal: `journal::Publisher` appends every message to a file before
//! it goes on the ring; `journal::Subscriber.join` reads the journal and then
//! the ring, every sequence exactly once; `State` folds keyed messages
//! (key: the first 8 bytes, little-endian, as the CLI's compaction) into
//! last-value-per-key.

use std::time::Duration;

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyType};
use shmbus::{
    BusOptions, OpenOptions, Received,
    journal::{self, JoinError, JoinOptions, State},
};

use crate::aio::{Receiving, async_methods};
use crate::bus::{bus_type, expected_type, open_type};
use crate::errors::{self, Exc};
use crate::handle::{Handle, handle_methods, iterator_methods};
use crate::{Entry, Until, join_journal, join_state, lagged, wait_in_slices, with_bytes};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyJournalPublisher>()?;
    m.add_class::<PyJournalSubscriber>()?;
    m.add_class::<PyState>()?;
    Ok(())
}

fn join_options(
    flush_timeout: f64,
    type_name: Option<&str>,
    msg_size: Option<u32>,
    type_align: u32,
) -> PyResult<JoinOptions> {
    let flush = Duration::try_from_secs_f64(flush_timeout).map_err(|_| {
        pyo3::exceptions::PyValueError::new_err("flush_timeout must be >= 0 seconds")
    })?;
    let opts = JoinOptions::default().flush_timeout(flush);
    Ok(match expected_type(type_name, msg_size, type_align)? {
        Some((name, size, align)) => opts.message_type(&name, size, align),
        None => opts,
    })
}

/// The publisher of a journaled bus of raw byte messages.
#[pyclass(module = "shmbus", name = "JournalPublisher", frozen)]
pub struct PyJournalPublisher {
    /// Behind the handle's mutex, which also makes it `Sync` (the
    /// publisher's compaction channel is not).
    inner: Handle<journal::Publisher<[u8]>>,
}

impl PyJournalPublisher {
    fn new(publisher: journal::Publisher<[u8]>) -> Self {
        PyJournalPublisher {
            inner: Handle::new(publisher, "the journal publisher is closed"),
        }
    }
}

#[pymethods]
impl PyJournalPublisher {
    /// Creates the bus `name` journaled to the file `journal_path` (its
    /// directory must exist; an existing journal there is continued).
    #[classmethod]
    #[pyo3(signature = (name, journal_path, *, msg_size, capacity = 1024, type_name = None, type_align = 1, mode = 0o600))]
    #[allow(clippy::too_many_arguments)]
    fn create(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        name: &str,
        journal_path: std::path::PathBuf,
        msg_size: u32,
        capacity: u64,
        type_name: Option<&str>,
        type_align: u32,
        mode: u32,
    ) -> PyResult<Self> {
        let opts = BusOptions::new(capacity).msg_size(msg_size).mode(mode);
        let opts = bus_type(opts, type_name, type_align)?;
        let inner =
            journal::Publisher::<[u8]>::create(name, &opts, &journal::Options::new(journal_path))
                .map_err(|e| errors::journal_create(py, e))?;
        Ok(PyJournalPublisher::new(inner))
    }

    /// Attaches to the journaled bus `name` whose publisher is gone.
    #[classmethod]
    #[pyo3(signature = (name, *, type_name = None, msg_size = None, type_align = 1))]
    fn attach(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        name: &str,
        type_name: Option<&str>,
        msg_size: Option<u32>,
        type_align: u32,
    ) -> PyResult<Self> {
        let opts = open_type(OpenOptions::default(), type_name, msg_size, type_align)?;
        let inner = journal::Publisher::<[u8]>::attach(name, &opts)
            .map_err(|e| errors::journal_attach(py, e))?;
        Ok(PyJournalPublisher::new(inner))
    }

    /// Appends `data` (bytes-like, at most `msg_size` bytes) to the journal,
    /// then publishes it; returns its sequence number.
    fn publish(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<u64> {
        self.inner.with(py, |publisher, _| {
            with_bytes(data, |b| publisher.publish(b))?.map_err(|e| errors::append(py, e))
        })
    }

    /// Makes everything published so far durable (fdatasync).
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        self.inner.with(py, |publisher, _| {
            publisher
                .flush()
                .map_err(|e| errors::raise(py, Exc::JournalError, format!("flush: {e}"), &[]))
        })
    }

    #[getter]
    fn next_sequence(&self, py: Python<'_>) -> PyResult<u64> {
        self.inner.with(py, |h, _| Ok(h.next_sequence()))
    }

    #[getter]
    fn msg_size(&self, py: Python<'_>) -> PyResult<usize> {
        self.inner.with(py, |h, _| Ok(h.msg_size()))
    }

    #[getter]
    fn journal_path(&self, py: Python<'_>) -> PyResult<std::path::PathBuf> {
        self.inner
            .with(py, |h, _| Ok(h.journal_path().to_path_buf()))
    }

    /// Closes the publisher: flushes the journal and waits for a compaction
    /// under way. `JournalError` if that compaction failed.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        match self.inner.close(py) {
            Some(p) => py
                .detach(move || p.close())
                .map_err(|e| errors::close(py, e)),
            None => Ok(()),
        }
    }
}

handle_methods!(PyJournalPublisher.inner);

enum Got {
    Entry(u64),
    Lagged(u64),
}

/// A late joiner of a journaled bus: the journal first, then live
/// messages, every sequence exactly once.
#[pyclass(module = "shmbus", name = "JournalSubscriber", frozen)]
pub struct PyJournalSubscriber {
    /// The subscriber and the buffer a receive fills with the GIL released.
    inner: Handle<(journal::Subscriber<[u8]>, Vec<u8>)>,
}

impl PyJournalSubscriber {
    fn recv_with(&self, py: Python<'_>, until: Until) -> PyResult<Option<Py<PyAny>>> {
        self.inner.with(py, |(sub, buf), cancel| {
            let got = wait_in_slices(py, until, cancel, |w| match sub.recv(w) {
                Some(Received::Message(e)) => {
                    buf.clear();
                    buf.extend_from_slice(e.msg);
                    Some(Got::Entry(e.seq))
                }
                Some(Received::Lagged { skipped }) => Some(Got::Lagged(skipped)),
                None => None,
            })?;
            Ok(match got {
                None => None,
                Some(Got::Lagged(skipped)) => Some(lagged(py, skipped)?),
                Some(Got::Entry(sequence)) => {
                    let entry = Entry {
                        sequence,
                        data: PyBytes::new(py, buf).unbind(),
                    };
                    Some(entry.into_py_any(py)?)
                }
            })
        })
    }
}

#[pymethods]
impl PyJournalSubscriber {
    /// Joins the journaled bus `name`: asks its publisher to flush, reads
    /// the journal, then hands over to the ring. `flush_timeout`: how long
    /// to wait for a live publisher's flush.
    #[classmethod]
    #[pyo3(signature = (name, *, flush_timeout = 5.0, type_name = None, msg_size = None, type_align = 1))]
    fn join(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        name: &str,
        flush_timeout: f64,
        type_name: Option<&str>,
        msg_size: Option<u32>,
        type_align: u32,
    ) -> PyResult<Self> {
        let opts = join_options(flush_timeout, type_name, msg_size, type_align)?;
        let inner = join_journal(py, name, &opts, None)?.map_err(|e| errors::join(py, e))?;
        Ok(PyJournalSubscriber {
            inner: Handle::new((inner, Vec::new()), "the journal subscriber is closed"),
        })
    }

    /// The next `Entry(sequence, data)`, or `Lagged(skipped)` (a loss the
    /// journal could not repair), or None at the timeout (None: wait as
    /// long as it takes; GIL released, Ctrl-C interrupts).
    #[pyo3(signature = (timeout = None))]
    fn recv(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<Py<PyAny>>> {
        self.recv_with(py, Until::from_timeout(timeout)?)
    }

    /// `recv(timeout=0)`.
    fn try_recv(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.recv_with(py, Until::Now)
    }

    /// The sequence number of the next entry.
    #[getter]
    fn position(&self, py: Python<'_>) -> PyResult<u64> {
        self.inner.with(py, |h, _| Ok(h.0.position()))
    }

    /// Whether the journal is read and entries now come from the ring.
    #[getter]
    fn is_live(&self, py: Python<'_>) -> PyResult<bool> {
        self.inner.with(py, |h, _| Ok(h.0.is_live()))
    }

    /// The bus's next sequence when it was last looked at.
    #[getter]
    fn head(&self, py: Python<'_>) -> PyResult<u64> {
        self.inner.with(py, |h, _| Ok(h.0.head()))
    }

    #[getter]
    fn msg_size(&self, py: Python<'_>) -> PyResult<usize> {
        self.inner.with(py, |h, _| Ok(h.0.msg_size()))
    }
}

impl Receiving for PyJournalSubscriber {
    type State = (journal::Subscriber<[u8]>, Vec<u8>);
    fn handle(&self) -> &Handle<Self::State> {
        &self.inner
    }
    fn try_next(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.recv_with(py, Until::Now)
    }
    fn member(state: &Self::State) -> &dyn shmbus::select::Selectable {
        &state.0
    }
}

async_methods!(
    PyJournalSubscriber,
    /// `await sub.recv_async()`: the next `Entry` or `Lagged(skipped)`,
    /// waiting as `Subscriber.recv_async` does. Cancel-safe.
    fn recv_async
);

iterator_methods!(PyJournalSubscriber.inner, fn __next__);

handle_methods!(PyJournalSubscriber.inner, fn close);

/// The keyed state of a journaled bus: key -> the last message with that
/// key, where a message's key is its first 8 bytes as a little-endian u64.
/// A mapping (`state[key]`, `len`, `in`, `keys()`, `items()`, ...) of the
/// entries folded so far: call `poll()` or `wait_for(seq)` to fold more.
/// The fold is the core's `State<[u8]>`.
#[pyclass(module = "shmbus", name = "State", frozen, mapping)]
pub struct PyState {
    fold: Handle<State<[u8]>>,
}

/// The keys folded so far, in ascending order.
fn sorted_keys(state: &State<[u8]>) -> Vec<u64> {
    let mut keys: Vec<u64> = state.state().iter().map(|(k, _)| k).collect();
    keys.sort_unstable();
    keys
}

/// Whether `state` has folded sequence `seq` in.
fn reached(state: &State<[u8]>, seq: u64) -> bool {
    state
        .state()
        .last_seq()
        .is_some_and(|l| (l.wrapping_sub(seq) as i64) >= 0)
}

/// A `go_on` for a join made with the GIL held: runs signal handlers, and
/// keeps the first exception one raised for the caller.
fn signals_go_on<'a>(py: Python<'a>, raised: &'a mut Option<PyErr>) -> impl FnMut() -> bool + 'a {
    move || match py.check_signals() {
        Ok(()) => true,
        Err(e) => {
            *raised = Some(e);
            false
        }
    }
}

/// The join's error, or the exception that cancelled it.
fn join_failed(py: Python<'_>, e: JoinError, raised: Option<PyErr>) -> PyErr {
    match (e, raised) {
        (JoinError::Cancelled, Some(raised)) => raised,
        (e, _) => errors::join(py, e),
    }
}

#[pymethods]
impl PyState {
    /// Joins the journaled bus `name` (as `journal::Subscriber.join`) and
    /// folds nothing yet.
    #[classmethod]
    #[pyo3(signature = (name, *, flush_timeout = 5.0, type_name = None, msg_size = None, type_align = 1))]
    fn join(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        name: &str,
        flush_timeout: f64,
        type_name: Option<&str>,
        msg_size: Option<u32>,
        type_align: u32,
    ) -> PyResult<Self> {
        let opts = join_options(flush_timeout, type_name, msg_size, type_align)?;
        let state = join_state(py, name, &opts)?.map_err(|e| errors::join(py, e))?;
        Ok(PyState {
            fold: Handle::new(state, "the state is closed"),
        })
    }

    /// Folds in every entry already there; returns how many.
    fn poll(&self, py: Python<'_>) -> PyResult<usize> {
        self.fold.with(py, |fold, _| {
            let mut raised = None;
            let polled = fold.poll_cancellable(signals_go_on(py, &mut raised));
            polled.map_err(|e| join_failed(py, e, raised))
        })
    }

    /// Folds in entries until sequence `seq` is in (True) or `timeout`
    /// seconds passed (False; None: as long as it takes; GIL released,
    /// Ctrl-C interrupts).
    #[pyo3(signature = (seq, timeout = None))]
    fn wait_for(&self, py: Python<'_>, seq: u64, timeout: Option<f64>) -> PyResult<bool> {
        let until = Until::from_timeout(timeout)?;
        self.fold.with(py, |fold, cancel| {
            if reached(fold, seq) {
                return Ok(true);
            }
            let mut raised: Option<PyErr> = None;
            // A rejoin inside a slice runs without the GIL: it takes it to
            // run signal handlers while it waits for the flush.
            let mut go_on = || {
                Python::attach(|py| {
                    match py.check_signals().err().or_else(|| cancel.check(py).err()) {
                        None => true,
                        Some(e) => {
                            raised = Some(e);
                            false
                        }
                    }
                })
            };
            let done = wait_in_slices(py, until, cancel, |w| {
                match fold.wait_for_cancellable(seq, w, &mut go_on) {
                    Err(e) => Some(Err(e)),
                    Ok(true) => Some(Ok(())),
                    Ok(false) => None,
                }
            })?;
            match done {
                Some(Ok(())) => Ok(true),
                Some(Err(e)) => Err(join_failed(py, e, raised)),
                None => Ok(false),
            }
        })
    }

    #[getter]
    fn last_seq(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        self.fold.with(py, |h, _| Ok(h.state().last_seq()))
    }

    /// How many times it joined again after a loss the journal could not
    /// repair.
    #[getter]
    fn rejoins(&self, py: Python<'_>) -> PyResult<u64> {
        self.fold.with(py, |h, _| Ok(h.rejoins()))
    }

    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.fold.with(py, |h, _| Ok(h.state().len()))
    }

    fn __getitem__<'py>(&self, py: Python<'py>, key: u64) -> PyResult<Bound<'py, PyBytes>> {
        self.fold.with(py, |fold, _| match fold.state().get(key) {
            Some(v) => Ok(PyBytes::new(py, v)),
            None => Err(pyo3::exceptions::PyKeyError::new_err(key)),
        })
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(key) = key.extract::<u64>() else {
            return Ok(false);
        };
        self.fold.with(py, |h, _| Ok(h.state().get(key).is_some()))
    }

    /// The value of `key`, or `default`.
    #[pyo3(signature = (key, default = None))]
    #[pyo3(name = "get")]
    fn get_value(
        &self,
        py: Python<'_>,
        key: u64,
        default: Option<Py<PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        self.fold.with(py, |fold, _| {
            Ok(match fold.state().get(key) {
                Some(v) => PyBytes::new(py, v).into_any().unbind(),
                None => default.unwrap_or_else(|| py.None()),
            })
        })
    }

    /// The keys, in ascending order.
    fn keys(&self, py: Python<'_>) -> PyResult<Vec<u64>> {
        self.fold.with(py, |fold, _| Ok(sorted_keys(fold)))
    }

    /// The values, in key order.
    fn values<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        self.fold.with(py, |fold, _| {
            let values = fold.state();
            Ok(sorted_keys(fold)
                .into_iter()
                .filter_map(|k| values.get(k))
                .map(|v| PyBytes::new(py, v))
                .collect())
        })
    }

    /// (key, value) pairs, in key order.
    fn items<'py>(&self, py: Python<'py>) -> PyResult<Vec<(u64, Bound<'py, PyBytes>)>> {
        self.fold.with(py, |fold, _| {
            let values = fold.state();
            Ok(sorted_keys(fold)
                .into_iter()
                .filter_map(|k| Some((k, PyBytes::new(py, values.get(k)?))))
                .collect())
        })
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let keys = self.fold.with(py, |fold, _| Ok(sorted_keys(fold)))?;
        Ok(keys.into_pyobject(py)?.try_iter()?.into_any())
    }
}

handle_methods!(PyState.fold, fn close);
