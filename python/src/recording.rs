//! `_RecordingFiles`: the native half of `shmbus.Recording`
//! (python/shmbus/recording.py): `shmbus::record::RecordingFiles`, its
//! records handed out as plain tuples that the Python half names.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::IntoPyObjectExt;
use shmbus::record::{OpenRecordingError, ReadError, Record, RecordingFiles};

use crate::errors::{self, Exc};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRecordingFiles>()
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
