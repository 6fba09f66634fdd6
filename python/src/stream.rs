//! The stream: `Producer` pushes byte records, `Consumer` pops them, in
//! order and without loss (the producer waits for room instead).

use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyType};
use shmbus::{
    OpenOptions, Wait,
    stream::{self, Consumer, PopError, Producer, PushError},
};

use crate::aio::{Receiving, async_methods};
use crate::bus::open_type;
use crate::handle::{Handle, handle_methods};
use crate::{Until, errors, owned_bytes, retry_in_slices};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyProducer>()?;
    m.add_class::<PyConsumer>()?;
    Ok(())
}

/// The failure of a push or pop that found no room or no record in time:
/// a try (`timeout=0`) says the stream is full or empty, a wait says how
/// long it waited.
fn gave_up<T, E>(
    until: Until,
    timeout: Option<f64>,
    now: E,
    timed_out: fn(Duration) -> E,
) -> impl FnOnce() -> Result<T, E> {
    move || {
        Err(match until {
            Until::Now => now,
            _ => timed_out(
                timeout
                    .and_then(|t| Duration::try_from_secs_f64(t).ok())
                    .unwrap_or_default(),
            ),
        })
    }
}

/// The producing end of a stream of byte records.
#[pyclass(module = "shmbus", name = "Producer", frozen)]
pub struct PyProducer {
    inner: Handle<Producer<[u8]>>,
}

impl PyProducer {
    fn new(producer: Producer<[u8]>) -> Self {
        PyProducer {
            inner: Handle::new(producer, "the producer is closed"),
        }
    }
}

#[pymethods]
impl PyProducer {
    /// Creates the stream `name` with a ring of `capacity` bytes (a power
    /// of two, 64 B to 4 GiB); a record is at most half of it less 8 bytes.
    /// `type_name` (with `type_align`, at most 8) records the record type,
    /// which openers that name a type must then name.
    #[classmethod]
    #[pyo3(signature = (name, capacity, *, mode = 0o600, type_name = None, type_align = 1))]
    fn create(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        name: &str,
        capacity: u64,
        mode: u32,
        type_name: Option<&str>,
        type_align: u32,
    ) -> PyResult<Self> {
        let mut opts = stream::Options::new(capacity).mode(mode);
        match type_name {
            Some(ty) => opts = opts.message_type(ty, type_align),
            None if type_align != 1 => {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "type_align applies only with type_name",
                ));
            }
            None => {}
        }
        let inner = Producer::<[u8]>::create(name, &opts).map_err(|e| errors::create(py, e))?;
        Ok(PyProducer::new(inner))
    }

    /// Attaches to the stream `name` whose producer is gone. `type_name`
    /// (with `msg_size` and `type_align`): refused unless the stream
    /// records that type.
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
        let inner = Producer::<[u8]>::attach(name, &opts).map_err(|e| errors::attach(py, e))?;
        Ok(PyProducer::new(inner))
    }

    /// Pushes one record (bytes-like), waiting up to `timeout` seconds for
    /// room (None: as long as it takes; GIL released, Ctrl-C interrupts),
    /// then `shmbus.TimeoutError`. `PeerGoneError` if the consumer died
    /// with the stream full.
    #[pyo3(signature = (data, timeout = None))]
    fn push(&self, py: Python<'_>, data: &Bound<'_, PyAny>, timeout: Option<f64>) -> PyResult<()> {
        let until = Until::from_timeout(timeout)?;
        let record = owned_bytes(data)?;
        self.inner.with(py, |producer, cancel| {
            retry_in_slices(
                py,
                until,
                cancel,
                |e| matches!(e, PushError::Full | PushError::TimedOut(_)),
                |w| producer.push(&record, w),
                gave_up(until, timeout, PushError::Full, PushError::TimedOut),
            )?
            .map_err(|e| errors::push(py, e))
        })
    }

    /// The longest record this stream carries.
    #[getter]
    fn max_record(&self, py: Python<'_>) -> PyResult<usize> {
        self.inner.with(py, |h, _| Ok(h.max_record()))
    }

    /// The ring's size in bytes.
    #[getter]
    fn capacity(&self, py: Python<'_>) -> PyResult<u64> {
        self.inner.with(py, |h, _| Ok(h.ring_bytes()))
    }
}

handle_methods!(PyProducer.inner, fn close);

/// The consuming end of a stream of byte records.
#[pyclass(module = "shmbus", name = "Consumer", frozen)]
pub struct PyConsumer {
    /// The consumer and the buffer a pop fills with the GIL released.
    inner: Handle<(Consumer<[u8]>, Vec<u8>)>,
}

impl PyConsumer {
    fn pop_with<'py>(
        &self,
        py: Python<'py>,
        until: Until,
        timeout: Option<f64>,
    ) -> PyResult<Result<Bound<'py, PyBytes>, PopError>> {
        self.inner.with(py, |(consumer, buf), cancel| {
            let popped = retry_in_slices(
                py,
                until,
                cancel,
                |e| matches!(e, PopError::Empty | PopError::TimedOut(_)),
                |w| consumer.pop(buf, w),
                gave_up(until, timeout, PopError::Empty, PopError::TimedOut),
            )?;
            Ok(popped.map(|()| PyBytes::new(py, buf)))
        })
    }
}

#[pymethods]
impl PyConsumer {
    /// Opens the stream `name` as its one consumer; it continues where the
    /// last consumer stopped. `type_name` (with `msg_size` and
    /// `type_align`): refused unless the stream records that type.
    #[classmethod]
    #[pyo3(signature = (name, *, type_name = None, msg_size = None, type_align = 1))]
    fn open(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        name: &str,
        type_name: Option<&str>,
        msg_size: Option<u32>,
        type_align: u32,
    ) -> PyResult<Self> {
        let opts = open_type(OpenOptions::default(), type_name, msg_size, type_align)?;
        let inner = Consumer::<[u8]>::attach(name, &opts).map_err(|e| errors::attach(py, e))?;
        Ok(PyConsumer {
            inner: Handle::new((inner, Vec::new()), "the consumer is closed"),
        })
    }

    /// The next record (`bytes`), waiting up to `timeout` seconds (None: as
    /// long as it takes; GIL released, Ctrl-C interrupts), then
    /// `shmbus.TimeoutError`. `PeerGoneError` if the producer died with the
    /// stream empty.
    #[pyo3(signature = (timeout = None))]
    fn pop<'py>(&self, py: Python<'py>, timeout: Option<f64>) -> PyResult<Bound<'py, PyBytes>> {
        self.pop_with(py, Until::from_timeout(timeout)?, timeout)?
            .map_err(|e| errors::pop(py, e))
    }

    /// The next record if one is there, else None.
    fn try_pop<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        match self.pop_with(py, Until::Now, None)? {
            Ok(record) => Ok(Some(record)),
            Err(PopError::Empty) => Ok(None),
            Err(e) => Err(errors::pop(py, e)),
        }
    }

    /// The longest record this stream carries.
    #[getter]
    fn max_record(&self, py: Python<'_>) -> PyResult<usize> {
        self.inner.with(py, |h, _| Ok(h.0.max_record()))
    }
}

impl Receiving for PyConsumer {
    type State = (Consumer<[u8]>, Vec<u8>);
    fn handle(&self) -> &Handle<Self::State> {
        &self.inner
    }
    /// `try_pop`, and the end a waiting pop reports: `PeerGoneError` once
    /// the producer died (after this consumer opened) with the ring empty.
    fn try_next(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let popped = self.inner.with(py, |(consumer, buf), _| {
            let mut popped = consumer.pop(buf, Wait::Never);
            if let (Err(PopError::Empty), Some(pid)) = (&popped, consumer.producer_gone()) {
                // One last look: the producer may have pushed, then died.
                popped = match consumer.pop(buf, Wait::Never) {
                    Err(PopError::Empty) => Err(PopError::PeerGone { pid }),
                    other => other,
                };
            }
            Ok(popped.map(|()| PyBytes::new(py, buf).into_any().unbind()))
        })?;
        match popped {
            Ok(record) => Ok(Some(record)),
            Err(PopError::Empty) => Ok(None),
            Err(e) => Err(errors::pop(py, e)),
        }
    }
    fn member(state: &Self::State) -> &dyn shmbus::select::Selectable {
        &state.0
    }
}

async_methods!(
    PyConsumer,
    /// `await consumer.pop_async()`: the next record (`bytes`), waiting
    /// without blocking the event loop; `PeerGoneError` once the producer
    /// died with the stream empty (within about `PEER_CHECK`, 20 ms). Cancel-safe: a
    /// cancelled pop has popped nothing. `async for rec in consumer` pops
    /// so until the consumer is closed or the producer is gone (that
    /// `PeerGoneError` is raised).
    fn pop_async
);

handle_methods!(PyConsumer.inner, fn close);
