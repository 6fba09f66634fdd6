//! The stream: `Producer` pushes byte records, `Consumer` pops them, in
//! order and without loss (the producer waits for room instead).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyType};
use shmbus::{Consumer, OpenOptions, PopError, Producer, PushError, StreamOptions};

use crate::{errors, owned_bytes, wait_in_slices, Until};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyProducer>()?;
    m.add_class::<PyConsumer>()?;
    Ok(())
}

/// How long a timed-out call waited, for its message.
fn waited(timeout: Option<f64>) -> std::time::Duration {
    timeout
        .and_then(|t| std::time::Duration::try_from_secs_f64(t).ok())
        .unwrap_or_default()
}

/// The producing end of a stream of byte records.
#[pyclass(module = "shmbus", name = "Producer")]
pub struct PyProducer {
    inner: Option<Producer>,
}

impl PyProducer {
    fn get(&mut self, py: Python<'_>) -> PyResult<&mut Producer> {
        self.inner
            .as_mut()
            .ok_or_else(|| errors::closed(py, "the producer is closed"))
    }
}

#[pymethods]
impl PyProducer {
    /// Creates the stream `name` with a ring of `capacity` bytes (a power
    /// of two, 64 B to 4 GiB); a record is at most half of it less 8 bytes.
    #[classmethod]
    #[pyo3(signature = (name, capacity, *, mode = 0o600))]
    fn create(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        name: &str,
        capacity: u64,
        mode: u32,
    ) -> PyResult<Self> {
        let opts = StreamOptions::new(capacity).mode(mode);
        let inner = Producer::create(name, &opts).map_err(|e| errors::create(py, e))?;
        Ok(PyProducer { inner: Some(inner) })
    }

    /// Attaches to the stream `name` whose producer is gone.
    #[classmethod]
    fn attach(_cls: &Bound<'_, PyType>, py: Python<'_>, name: &str) -> PyResult<Self> {
        let inner =
            Producer::attach(name, &OpenOptions::default()).map_err(|e| errors::attach(py, e))?;
        Ok(PyProducer { inner: Some(inner) })
    }

    /// Pushes one record (bytes-like), waiting up to `timeout` seconds for
    /// room (None: as long as it takes; GIL released, Ctrl-C interrupts),
    /// then `shmbus.TimeoutError`. `PeerGoneError` if the consumer died
    /// with the stream full.
    #[pyo3(signature = (data, timeout = None))]
    fn push(
        &mut self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        timeout: Option<f64>,
    ) -> PyResult<()> {
        let until = Until::from_timeout(timeout)?;
        let record = owned_bytes(data)?;
        let producer = self.get(py)?;
        let done = wait_in_slices(py, until, |w| match producer.push(&record, w) {
            Ok(()) => Some(Ok(())),
            Err(PushError::Full | PushError::TimedOut(_)) => None,
            Err(e) => Some(Err(e)),
        })?;
        match done {
            Some(Ok(())) => Ok(()),
            Some(Err(e)) => Err(errors::push(py, e)),
            None if matches!(until, Until::Now) => Err(errors::push(py, PushError::Full)),
            None => Err(errors::push(py, PushError::TimedOut(waited(timeout)))),
        }
    }

    /// The longest record this stream carries.
    #[getter]
    fn max_record(&mut self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.get(py)?.max_record())
    }

    /// The ring's size in bytes.
    #[getter]
    fn capacity(&mut self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.get(py)?.capacity())
    }

    fn close(&mut self) {
        self.inner = None;
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_none()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &mut self,
        _t: &Bound<'_, PyAny>,
        _v: &Bound<'_, PyAny>,
        _tb: &Bound<'_, PyAny>,
    ) -> bool {
        self.close();
        false
    }
}

/// The consuming end of a stream of byte records.
#[pyclass(module = "shmbus", name = "Consumer")]
pub struct PyConsumer {
    inner: Option<Consumer>,
    buf: Vec<u8>,
}

impl PyConsumer {
    fn pop_with<'py>(
        &mut self,
        py: Python<'py>,
        until: Until,
    ) -> PyResult<Option<Result<Bound<'py, PyBytes>, PopError>>> {
        let Some(consumer) = self.inner.as_mut() else {
            return Err(errors::closed(py, "the consumer is closed"));
        };
        let buf = &mut self.buf;
        let got = wait_in_slices(py, until, |w| match consumer.pop(buf, w) {
            Ok(()) => Some(Ok(())),
            Err(PopError::Empty | PopError::TimedOut(_)) => None,
            Err(e) => Some(Err(e)),
        })?;
        Ok(got.map(|r| r.map(|()| PyBytes::new(py, &self.buf))))
    }
}

#[pymethods]
impl PyConsumer {
    /// Opens the stream `name` as its one consumer; it continues where the
    /// last consumer stopped.
    #[classmethod]
    fn open(_cls: &Bound<'_, PyType>, py: Python<'_>, name: &str) -> PyResult<Self> {
        let inner =
            Consumer::open(name, &OpenOptions::default()).map_err(|e| errors::attach(py, e))?;
        Ok(PyConsumer {
            inner: Some(inner),
            buf: Vec::new(),
        })
    }

    /// The next record (`bytes`), waiting up to `timeout` seconds (None: as
    /// long as it takes; GIL released, Ctrl-C interrupts), then
    /// `shmbus.TimeoutError`. `PeerGoneError` if the producer died with the
    /// stream empty.
    #[pyo3(signature = (timeout = None))]
    fn pop<'py>(&mut self, py: Python<'py>, timeout: Option<f64>) -> PyResult<Bound<'py, PyBytes>> {
        let until = Until::from_timeout(timeout)?;
        match self.pop_with(py, until)? {
            Some(Ok(record)) => Ok(record),
            Some(Err(e)) => Err(errors::pop(py, e)),
            None if matches!(until, Until::Now) => Err(errors::pop(py, PopError::Empty)),
            None => Err(errors::pop(py, PopError::TimedOut(waited(timeout)))),
        }
    }

    /// The next record if one is there, else None.
    fn try_pop<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        match self.pop_with(py, Until::Now)? {
            Some(Ok(record)) => Ok(Some(record)),
            Some(Err(e)) => Err(errors::pop(py, e)),
            None => Ok(None),
        }
    }

    /// The longest record this stream carries.
    #[getter]
    fn max_record(&self, py: Python<'_>) -> PyResult<usize> {
        self.inner
            .as_ref()
            .map(|c| c.max_record())
            .ok_or_else(|| errors::closed(py, "the consumer is closed"))
    }

    fn close(&mut self) {
        self.inner = None;
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_none()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &mut self,
        _t: &Bound<'_, PyAny>,
        _v: &Bound<'_, PyAny>,
        _tb: &Bound<'_, PyAny>,
    ) -> bool {
        self.close();
        false
    }
}
