//! `_RecordingFiles`: the native half of `shmbus.Recording`
//! (python/shmbus/recording.py): `shmbus::record::RecordingFiles`, its
//! records handed out as plain tuples that the Python half names.

use std::path::PathBuf;

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use shmbus::record::{OpenRecordingError, ReadError, Record, RecordingFiles};

use crate::errors::{self, Exc};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRecordingFiles>()?;
    m.add_function(wrap_pyfunction!(_replay, m)?)
}

/// A recording's parts read as one, filtered and seekable.
#[pyclass(name = "_RecordingFiles", module = "shmbus._shmbus")]
pub(crate) struct PyRecordingFiles {
    inner: RecordingFiles,
}

fn open_failed(py: Python<'_>, e: OpenRecordingError) -> PyErr {
    match e {
        OpenRecordingError::Io(e) => e.into(),
        e => errors::raise(py, Exc::RecordingError, e.to_string(), &[]),
    }
}

fn read_failed(py: Python<'_>, e: ReadError) -> PyErr {
    match e {
        ReadError::Io(e) => e.into(),
        e => errors::raise(py, Exc::RecordingError, e.to_string(), &[]),
    }
}

#[pymethods]
impl PyRecordingFiles {
    /// Opens the recording at `path` and its parts; only bus `bus`'s
    /// messages and gaps, and messages received from `start` to `end` ns
    /// (CLOCK_MONOTONIC), where given.
    #[new]
    #[pyo3(signature = (path, bus=None, start=None, end=None))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        bus: Option<u32>,
        start: Option<u64>,
        end: Option<u64>,
    ) -> PyResult<Self> {
        let mut inner = RecordingFiles::open(&path).map_err(|e| open_failed(py, e))?;
        if let Some(bus) = bus {
            inner = inner.only_bus(bus);
        }
        if start.is_some() || end.is_some() {
            inner = inner.between(start, end);
        }
        Ok(Self { inner })
    }

    /// Moves to the first message received at or after `mono_ns`.
    fn seek_time(&mut self, py: Python<'_>, mono_ns: u64) -> PyResult<()> {
        self.inner
            .seek_time(mono_ns)
            .map_err(|e| read_failed(py, e))
    }

    /// Moves to the first message or gap of `bus` at or past `seq`.
    fn seek_seq(&mut self, py: Python<'_>, bus: u32, seq: u64) -> PyResult<()> {
        self.inner
            .seek_seq(bus, seq)
            .map_err(|e| read_failed(py, e))
    }

    /// The parts' paths.
    fn parts(&self) -> Vec<PathBuf> {
        self.inner.parts().to_vec()
    }

    /// The next record as a tuple, or None at the end:
    /// `("bus", id, name, kind, msg_size, slots, blocks, lossless,
    /// type_name, type_size, type_align, type_hash)` (the type's fields
    /// None in a version 1 file), `("message", bus, seq, mono_ns, wall_ns,
    /// payload)`, `("gap", bus, first, count)`.
    fn next_record(&mut self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let record = match self.inner.next() {
            None => return Ok(None),
            Some(r) => r.map_err(|e| read_failed(py, e))?,
        };
        let tuple = match record {
            Record::Bus(b) => {
                let t = b.msg_type.as_ref();
                (
                    "bus",
                    b.id,
                    b.name.clone(),
                    b.kind.code(),
                    b.msg_size,
                    b.slots,
                    b.blocks,
                    b.lossless,
                    t.map(|t| t.name.clone()),
                    t.map(|t| t.size),
                    t.map(|t| t.align),
                    t.map(|t| t.name_hash),
                )
                    .into_py_any(py)?
            }
            Record::Message(m) => (
                "message",
                m.bus,
                m.seq,
                m.mono_ns,
                m.wall_ns,
                PyBytes::new(py, &m.payload),
            )
                .into_py_any(py)?,
            Record::Gap(g) => ("gap", g.bus, g.first, g.count).into_py_any(py)?,
            _ => py.None(),
        };
        Ok(Some(tuple))
    }
}

/// Why a replay failed, made `Send` to leave the detached thread.
enum ReplayFailed {
    Io(std::io::Error),
    Recording(String),
    Mapping(String),
    Other(String),
}

fn replay_failed(e: shmbus::record::ReplayError) -> ReplayFailed {
    use shmbus::record::ReplayError as E;
    match e {
        E::Open {
            source: OpenRecordingError::Io(e),
            ..
        }
        | E::Read {
            source: ReadError::Io(e),
            ..
        } => ReplayFailed::Io(e),
        e @ (E::Open { .. } | E::Read { .. }) => ReplayFailed::Recording(e.to_string()),
        e @ (E::NoTarget { .. }
        | E::SeveralBuses { .. }
        | E::NotRecorded { .. }
        | E::SharedTarget { .. }
        | E::NoJournalDir { .. }) => ReplayFailed::Mapping(e.to_string()),
        e => ReplayFailed::Other(e.to_string()),
    }
}

/// Replays the recording at `path` into buses of the recorded kinds with
/// `shmbus::record::Replayer`, the GIL released while it runs; its
/// counts and pace error as a dict.
#[pyfunction]
#[pyo3(signature = (path, targets, to=None, speed=None, window=(None, None, None, None), slots=None, journal_dir=None, passes=1, mode=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn _replay(
    py: Python<'_>,
    path: PathBuf,
    targets: Vec<(String, String)>,
    to: Option<String>,
    speed: Option<f64>,
    window: (Option<u64>, Option<u64>, Option<u64>, Option<u64>),
    slots: Option<u64>,
    journal_dir: Option<PathBuf>,
    passes: u64,
    mode: Option<u32>,
) -> PyResult<Py<PyAny>> {
    use shmbus::record::{Point, Replayer, Speed, Window};
    let speed = match speed {
        None => Speed::Max,
        Some(x) if x.is_finite() && x > 0.0 => Speed::Times(x),
        Some(x) => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "speed {x} is not above 0 (None for as fast as it goes)"
            )));
        }
    };
    // (from time, from seq, until time, until seq): one of each pair.
    let point = |t: Option<u64>, s: Option<u64>| t.map(Point::Offset).or(s.map(Point::Seq));
    let w = Window {
        from: point(window.0, window.1),
        until: point(window.2, window.3),
    };
    let result = py.detach(move || {
        let mut r = Replayer::new(speed).window(w);
        if let Some(to) = &to {
            r = r.to(to);
        }
        for (rec, bus) in &targets {
            r = r.map(rec, bus);
        }
        if let Some(s) = slots {
            r = r.slots(s);
        }
        if let Some(d) = journal_dir {
            r = r.journal_dir(d);
        }
        if let Some(m) = mode {
            r = r.mode(m);
        }
        for _ in 0..passes.max(1) {
            if r.run(&path).map_err(replay_failed)? == 0 {
                break;
            }
        }
        let s = r.stats();
        let pace = (s.pace.count() > 0).then(|| {
            (
                s.pace.quantile_ns(0.5),
                s.pace.quantile_ns(0.99),
                s.pace.max_ns(),
            )
        });
        Ok::<_, ReplayFailed>((
            s.passes,
            s.messages,
            s.bytes,
            s.gaps,
            s.skipped,
            s.gaps_dropped,
            pace,
        ))
    });
    match result {
        Ok((passes, messages, bytes, gaps, skipped, dropped, pace)) => {
            let d = pyo3::types::PyDict::new(py);
            d.set_item("passes", passes)?;
            d.set_item("messages", messages)?;
            d.set_item("bytes", bytes)?;
            d.set_item("gaps", gaps)?;
            d.set_item("skipped", skipped)?;
            d.set_item("gaps_dropped", dropped)?;
            d.set_item("pace_error_ns", pace)?;
            d.into_py_any(py)
        }
        Err(ReplayFailed::Io(e)) => Err(e.into()),
        Err(ReplayFailed::Recording(m)) => Err(errors::raise(py, Exc::RecordingError, m, &[])),
        Err(ReplayFailed::Mapping(m)) => Err(pyo3::exceptions::PyValueError::new_err(m)),
        Err(ReplayFailed::Other(m)) => Err(errors::raise(py, Exc::Error, m, &[])),
    }
}
