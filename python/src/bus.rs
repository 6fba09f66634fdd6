//! The broadcast bus: `Publisher`, `ManyPublisher`, `Subscriber`, all of raw
//! byte messages of the bus's message size.

use std::time::Duration;

use pyo3::IntoPyObjectExt;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyType};
use shmbus::{
    BusOptions, OpenOptions, Publisher, Received, Start, Subscriber, Wait,
    bus::{
        DEFAULT_MAX_LOSSLESS, MAX_EVICT, MAX_UNBLOCK, MIN_TIMEOUT, ManyPublisher, TryPublishError,
    },
};

use crate::aio::{Receiving, async_methods};
use crate::handle::{Cancel, Handle, handle_methods, iterator_methods};
use crate::{Until, errors, lagged, support, wait_in_slices, with_bytes};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPublisher>()?;
    m.add_class::<PyManyPublisher>()?;
    m.add_class::<PySubscriber>()?;
    Ok(())
}

pub(crate) fn parse_start(start: &str) -> PyResult<Start> {
    match start {
        "oldest" => Ok(Start::Oldest),
        "next" => Ok(Start::Next),
        "latest" => Ok(Start::Latest),
        other => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "start must be \"oldest\", \"next\" or \"latest\", got {other:?}"
        ))),
    }
}

/// The message type a creator records (`type_name`, `type_align`); by
/// default a raw-byte bus records `bytes` with alignment 1.
pub(crate) fn bus_type<P: shmbus::bus::PublisherCount>(
    opts: BusOptions<P>,
    type_name: Option<&str>,
    type_align: u32,
) -> PyResult<BusOptions<P>> {
    match type_name {
        Some(name) => Ok(opts.message_type(name, type_align)),
        None if type_align == 1 => Ok(opts),
        None => Err(pyo3::exceptions::PyValueError::new_err(
            "type_align applies only with type_name",
        )),
    }
}

/// The message type an opener insists on: `type_name` of `size` bytes
/// aligned to `type_align` (a mismatch is `TypeMismatchError`).
pub(crate) fn expected_type(
    type_name: Option<&str>,
    size: Option<u32>,
    type_align: u32,
) -> PyResult<Option<(String, u32, u32)>> {
    match (type_name, size) {
        (Some(name), Some(size)) => Ok(Some((name.to_owned(), size, type_align))),
        (Some(_), None) => Err(pyo3::exceptions::PyValueError::new_err(
            "type_name needs the message size too: give msg_size (or dtype)",
        )),
        (None, _) if type_align == 1 => Ok(None),
        (None, _) => Err(pyo3::exceptions::PyValueError::new_err(
            "type_align applies only with type_name",
        )),
    }
}

/// `opts` insisting on the type `expected_type` describes.
pub(crate) fn open_type(
    opts: OpenOptions,
    type_name: Option<&str>,
    size: Option<u32>,
    type_align: u32,
) -> PyResult<OpenOptions> {
    Ok(match expected_type(type_name, size, type_align)? {
        Some((name, size, align)) => opts.message_type(&name, size, align),
        None => opts,
    })
}

/// The single publisher of a broadcast bus of raw byte messages.
///
/// `Publisher.create(name, msg_size=..., capacity=1024)` makes the bus,
/// `Publisher.attach(name)` takes over one whose publisher is gone.
/// `publish(data)` laps a slow lossy subscriber, never waiting for it; a
/// lossless one (`Subscriber.open(..., lossless=True)`) it waits for,
/// until it reads on, dies or is evicted. `try_publish(data)` never
/// waits.
#[pyclass(module = "shmbus", name = "Publisher", frozen)]
pub struct PyPublisher {
    inner: Handle<Publisher<[u8]>>,
}

impl PyPublisher {
    fn new(publisher: Publisher<[u8]>) -> Self {
        PyPublisher {
            inner: Handle::new(publisher, "the publisher is closed"),
        }
    }
}

#[pymethods]
impl PyPublisher {
    /// Creates the bus `name` (a bare name lives in /dev/shm) of `capacity`
    /// slots (a power of two) of `msg_size`-byte messages.
    #[classmethod]
    /// `lossless_subscribers`: how many lossless subscribers may hold the
    /// publisher back at once (0: refused, so `publish` never waits);
    /// `evict_after`: seconds one may hold it back before it is evicted
    /// (demoted to lossy), 0.001 to 60 (0 is a `ValueError`).
    #[pyo3(signature = (name, *, msg_size, capacity = 1024, type_name = None, type_align = 1, mode = 0o600, lossless_subscribers = DEFAULT_MAX_LOSSLESS, evict_after = 1.0))]
    #[allow(clippy::too_many_arguments)]
    fn create(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        name: &str,
        msg_size: u32,
        capacity: u64,
        type_name: Option<&str>,
        type_align: u32,
        mode: u32,
        lossless_subscribers: u32,
        evict_after: f64,
    ) -> PyResult<Self> {
        let opts = BusOptions::new(capacity)
            .msg_size(msg_size)
            .mode(mode)
            .lossless_subscribers(lossless_subscribers)
            .evict_after(evict_timeout(evict_after)?);
        let opts = bus_type(opts, type_name, type_align)?;
        let inner = Publisher::<[u8]>::create(name, &opts).map_err(|e| errors::create(py, e))?;
        Ok(PyPublisher::new(inner))
    }

    /// Attaches to the existing single-publisher bus `name` whose publisher
    /// is gone, carrying on its sequence.
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
        let inner = Publisher::<[u8]>::attach(name, &opts).map_err(|e| errors::attach(py, e))?;
        Ok(PyPublisher::new(inner))
    }

    /// Publishes `data` (bytes-like, at most `msg_size` bytes, zero-padded)
    /// and returns its sequence number. If a lossless subscriber has not
    /// read the message it would overwrite, it waits (GIL released, Ctrl-C
    /// and `close()` answered within 50 ms) until that subscriber reads
    /// on, dies, or has held it back for the bus's eviction timeout.
    fn publish(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<u64> {
        self.inner.with(py, |publisher, cancel| {
            publish_waiting(py, cancel, data, |b, w| publisher.publish_within(b, w))
        })
    }

    /// Publishes the messages laid end to end in `data` (bytes-like: a
    /// NumPy array's memory, say), each `size` bytes (default: the bus's
    /// `msg_size`; at most it, each zero-padded), in order, in one call,
    /// and returns the last one's sequence number. Waits as `publish` does
    /// where a lossless subscriber is in the way (the messages before were
    /// published). A length that is no multiple of `size`, or no message
    /// at all, is a `ValueError` and publishes nothing.
    #[pyo3(signature = (data, size = None))]
    fn publish_many(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        size: Option<usize>,
    ) -> PyResult<u64> {
        self.inner.with(py, |publisher, cancel| {
            let max = publisher.msg_size();
            let size = size.unwrap_or(max);
            if size == 0 || size > max {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "size must be 1 to the bus's msg_size ({max}) bytes, got {size}"
                )));
            }
            // Under the GIL without waiting, while there is room.
            let (done, total, mut last) = with_bytes(data, |b| {
                if b.is_empty() || b.len() % size != 0 {
                    return Err(pyo3::exceptions::PyValueError::new_err(format!(
                        "data holds {} bytes: not a whole number of {size}-byte messages",
                        b.len()
                    )));
                }
                let mut last = 0;
                for (i, m) in b.chunks_exact(size).enumerate() {
                    match publisher.publish_within(m, Wait::Never) {
                        Ok(seq) => last = seq,
                        Err(TryPublishError::Full { .. }) => return Ok((i, b.len() / size, last)),
                        Err(e) => return Err(errors::try_publish(py, e)),
                    }
                }
                Ok((b.len() / size, b.len() / size, last))
            })??;
            if done == total {
                return Ok(last);
            }
            // The rest waits without the GIL, so on a copy.
            let rest = with_bytes(data, |b| b[done * size..].to_vec())?;
            for m in rest.chunks_exact(size) {
                let published = wait_in_slices(py, Until::Forever, cancel, |w| {
                    within(publisher.publish_within(m, w))
                })?;
                last = published
                    .ok_or_else(|| errors::closed(py, "the publisher is closed"))?
                    .map_err(|e| errors::try_publish(py, e))?;
            }
            Ok(last)
        })
    }

    /// Publishes `data` as `publish` does, but never waits: raises
    /// `FullError` (its `entry` and `pid` name the lossless subscriber in
    /// the way; nothing was published) where `publish` would wait. A
    /// subscriber found in the way for the eviction timeout, over calls,
    /// is evicted by the call that finds it so, which then publishes.
    fn try_publish(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<u64> {
        self.inner.with(py, |publisher, _| {
            with_bytes(data, |b| publisher.try_publish(b))?.map_err(|e| errors::try_publish(py, e))
        })
    }

    /// The bus's message size in bytes.
    #[getter]
    fn msg_size(&self, py: Python<'_>) -> PyResult<usize> {
        self.inner.with(py, |h, _| Ok(h.msg_size()))
    }

    /// The bus's number of slots.
    #[getter]
    fn capacity(&self, py: Python<'_>) -> PyResult<u64> {
        self.inner.with(py, |h, _| Ok(h.slots()))
    }

    /// The sequence number the next message gets.
    #[getter]
    fn next_sequence(&self, py: Python<'_>) -> PyResult<u64> {
        self.inner.with(py, |h, _| Ok(h.next_sequence()))
    }
}

handle_methods!(
    PyPublisher.inner,
    /// Closes the handle (the bus stays; `shmbus.remove` unlinks it).
    fn close
);

/// `evict_after` seconds as the eviction timeout: a `ValueError` naming
/// the bounds for 0, a negative, NaN or too large one.
pub(crate) fn evict_timeout(evict_after: f64) -> PyResult<Duration> {
    timeout_seconds("evict_after", evict_after, MAX_EVICT)
}

/// `seconds` of the argument `arg` as a timeout of `MIN_TIMEOUT..=max`
/// (1 ms to 60 s), else a `ValueError` naming the bounds: 0 is refused,
/// as by the library's create and the CLI, not read as "at once".
fn timeout_seconds(arg: &str, seconds: f64, max: Duration) -> PyResult<Duration> {
    match Duration::try_from_secs_f64(seconds) {
        Ok(d) if (MIN_TIMEOUT..=max).contains(&d) => Ok(d),
        _ => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{arg} must be a number of seconds from {} to {}, got {seconds}",
            MIN_TIMEOUT.as_secs_f64(),
            max.as_secs_f64()
        ))),
    }
}

/// A `publish` of either publisher kind (`publish` is its
/// `publish_within`): one try with the GIL, then, while a lossless
/// subscriber is in the way, slices without it (Ctrl-C and `close()`
/// answered between them).
fn publish_waiting(
    py: Python<'_>,
    cancel: &Cancel<'_>,
    data: &Bound<'_, PyAny>,
    mut publish: impl FnMut(&[u8], Wait) -> Result<u64, TryPublishError> + Send,
) -> PyResult<u64> {
    match with_bytes(data, |b| publish(b, Wait::Never))? {
        Ok(seq) => return Ok(seq),
        Err(TryPublishError::Full { .. }) => {}
        Err(e) => return Err(errors::try_publish(py, e)),
    }
    // Waits without the GIL, so on a copy: another thread may resize a
    // bytearray meanwhile.
    let bytes = with_bytes(data, <[u8]>::to_vec)?;
    let published = wait_in_slices(py, Until::Forever, cancel, |w| within(publish(&bytes, w)))?;
    // `Until::Forever` ends only with the message published (the eviction
    // timeout bounds the wait), or with an exception.
    published
        .ok_or_else(|| errors::closed(py, "the publisher is closed"))?
        .map_err(|e| errors::try_publish(py, e))
}

/// One slice of a `publish` that waits for room (`publish_within`, which
/// sleeps on the bus's doorbell): None if a lossless subscriber was still
/// in the way at its end. The publisher remembers how long one has been in
/// the way over slices, and evicts it once that reaches the bus's eviction
/// timeout, so a wait of any length ends by then.
fn within(r: Result<u64, TryPublishError>) -> Option<Result<u64, TryPublishError>> {
    match r {
        Err(TryPublishError::Full { .. }) => None,
        done => Some(done),
    }
}

/// One of any number of publishers of a many-publisher bus (one total
/// order of messages).
#[pyclass(module = "shmbus", name = "ManyPublisher", frozen)]
pub struct PyManyPublisher {
    inner: Handle<ManyPublisher<[u8]>>,
}

impl PyManyPublisher {
    fn new(publisher: ManyPublisher<[u8]>) -> Self {
        PyManyPublisher {
            inner: Handle::new(publisher, "the publisher is closed"),
        }
    }
}

#[pymethods]
impl PyManyPublisher {
    /// Creates the many-publisher bus `name`. `unblock_timeout`: seconds a
    /// claimed slot may stay uncommitted (its publisher died) before
    /// subscribers skip it, 0.001 to 60 (0 is a `ValueError`).
    /// `lossless_subscribers` and `evict_after` as for `Publisher.create`:
    /// a claim never passes a lossless subscriber.
    #[classmethod]
    #[pyo3(signature = (name, *, msg_size, capacity = 1024, unblock_timeout = 1.0, type_name = None, type_align = 1, mode = 0o600, lossless_subscribers = DEFAULT_MAX_LOSSLESS, evict_after = 1.0))]
    #[allow(clippy::too_many_arguments)]
    fn create(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        name: &str,
        msg_size: u32,
        capacity: u64,
        unblock_timeout: f64,
        type_name: Option<&str>,
        type_align: u32,
        mode: u32,
        lossless_subscribers: u32,
        evict_after: f64,
    ) -> PyResult<Self> {
        let unblock = timeout_seconds("unblock_timeout", unblock_timeout, MAX_UNBLOCK)?;
        let opts = BusOptions::new(capacity)
            .msg_size(msg_size)
            .mode(mode)
            .lossless_subscribers(lossless_subscribers)
            .evict_after(evict_timeout(evict_after)?)
            .many()
            .unblock_timeout(unblock);
        let opts = bus_type(opts, type_name, type_align)?;
        let inner =
            ManyPublisher::<[u8]>::create(name, &opts).map_err(|e| errors::create(py, e))?;
        Ok(PyManyPublisher::new(inner))
    }

    /// Joins the publishers of the existing many-publisher bus `name`.
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
        let inner =
            ManyPublisher::<[u8]>::attach(name, &opts).map_err(|e| errors::attach(py, e))?;
        Ok(PyManyPublisher::new(inner))
    }

    /// Publishes `data` (bytes-like, at most `msg_size` bytes, zero-padded)
    /// and returns its sequence number. Raises `AbandonedError` if this
    /// publisher stalled past the unblock timeout between claim and commit.
    /// Waits for a lossless subscriber as `Publisher.publish` does (GIL
    /// released, up to the bus's eviction timeout).
    fn publish(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<u64> {
        self.inner.with(py, |publisher, cancel| {
            publish_waiting(py, cancel, data, |b, w| publisher.publish_within(b, w))
        })
    }

    #[getter]
    fn msg_size(&self, py: Python<'_>) -> PyResult<usize> {
        self.inner.with(py, |h, _| Ok(h.msg_size()))
    }

    #[getter]
    fn capacity(&self, py: Python<'_>) -> PyResult<u64> {
        self.inner.with(py, |h, _| Ok(h.slots()))
    }
}

handle_methods!(PyManyPublisher.inner, fn close);

/// What one receive found, without borrowing the subscriber.
pub(crate) enum Got {
    Message,
    Lagged(u64),
}

/// A subscriber of a broadcast bus (plain or many-publisher), at its own
/// cursor. Messages are `bytes` of the bus's message size; a lap is a
/// `Lagged` value, not an error.
#[pyclass(module = "shmbus", name = "Subscriber", frozen)]
pub struct PySubscriber {
    inner: Handle<SubState>,
    /// The dtype given to `open`, the default of `recv_batch`.
    dtype: Option<Py<PyAny>>,
}

/// A subscriber and what its calls keep between them.
pub(crate) struct SubState {
    sub: Subscriber<[u8]>,
    /// A lag already taken from the ring and not yet reported (met after a
    /// batch's first message, or by a batch that a signal interrupted):
    /// the next receive reports it.
    pending_lag: u64,
    /// Where `recv_batch` gathers messages with the GIL released.
    batch: Vec<u8>,
}

impl SubState {
    /// Waits for the next message or lag (a pending lag first).
    fn next_got(
        &mut self,
        py: Python<'_>,
        until: Until,
        cancel: &Cancel<'_>,
    ) -> PyResult<Option<Got>> {
        if self.pending_lag > 0 {
            return Ok(Some(Got::Lagged(std::mem::take(&mut self.pending_lag))));
        }
        let sub = &mut self.sub;
        wait_in_slices(py, until, cancel, |w| match sub.recv(w) {
            Some(Received::Message(_)) => Some(Got::Message),
            Some(Received::Lagged { skipped }) => Some(Got::Lagged(skipped)),
            None => None,
        })
    }
}

impl PySubscriber {
    fn recv_with(&self, py: Python<'_>, until: Until) -> PyResult<Option<Py<PyAny>>> {
        self.inner.with(py, |st, cancel| {
            Ok(match st.next_got(py, until, cancel)? {
                None => None,
                Some(Got::Lagged(n)) => Some(lagged(py, n)?),
                Some(Got::Message) => Some(PyBytes::new(py, st.sub.message()).into_any().unbind()),
            })
        })
    }
}

#[pymethods]
impl PySubscriber {
    /// Opens the bus `name` (plain or many-publisher) and starts at
    /// `start`: "next" (only what is published from now), "oldest" (the
    /// oldest message still in the ring) or "latest" (the newest already
    /// published, then everything after it). With `dtype`, its itemsize
    /// must equal the bus's message size (else `TypeMismatchError`), and it
    /// becomes `recv_batch`'s default. `lossless=True` makes a lossless
    /// subscriber: the publisher never overwrites a message it has not
    /// read, unless it holds the publisher back for the bus's eviction
    /// timeout, when it is demoted to lossy and its next receive is a
    /// `Lagged` (`LosslessRefusedError` where the bus refuses it).
    #[classmethod]
    #[pyo3(signature = (name, start = "next", *, dtype = None, type_name = None, msg_size = None, type_align = 1, register = true, lossless = false))]
    #[allow(clippy::too_many_arguments)]
    fn open(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        name: &str,
        start: &str,
        dtype: Option<&Bound<'_, PyAny>>,
        type_name: Option<&str>,
        msg_size: Option<u32>,
        type_align: u32,
        register: bool,
        lossless: bool,
    ) -> PyResult<Self> {
        let opts = OpenOptions::default()
            .start(parse_start(start)?)
            .register(register)
            .lossless(lossless);
        let msg_size = match (msg_size, dtype) {
            (None, Some(d)) if type_name.is_some() => Some(
                support(py, "numpy")?
                    .call0()?
                    .call_method1("dtype", (d,))?
                    .getattr("itemsize")?
                    .extract()?,
            ),
            (m, _) => m,
        };
        let opts = open_type(opts, type_name, msg_size, type_align)?;
        let inner = Subscriber::<[u8]>::open(name, &opts).map_err(|e| errors::open(py, e))?;
        let dtype = match dtype {
            Some(d) => Some(
                support(py, "check_dtype")?
                    .call1((d, inner.msg_size()))?
                    .unbind(),
            ),
            None => None,
        };
        let state = SubState {
            sub: inner,
            pending_lag: 0,
            batch: Vec::new(),
        };
        Ok(PySubscriber {
            inner: Handle::new(state, "the subscriber is closed"),
            dtype,
        })
    }

    /// The next message (`bytes`), or `Lagged(skipped)` if this subscriber
    /// was lapped, or None if nothing came within `timeout` seconds (None:
    /// wait as long as it takes). The GIL is released while it waits, and
    /// Ctrl-C interrupts it (within 50 ms).
    #[pyo3(signature = (timeout = None))]
    fn recv(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<Py<PyAny>>> {
        self.recv_with(py, Until::from_timeout(timeout)?)
    }

    /// `recv(timeout=0)`: the next message or lag if one is there, else None.
    fn try_recv(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.recv_with(py, Until::Now)
    }

    /// The newest message on the bus (`bytes`), without moving this
    /// subscriber; None if nothing was published.
    fn latest<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        self.inner
            .with(py, |st, _| Ok(st.sub.latest().map(|m| PyBytes::new(py, m))))
    }

    /// Receives the next message into the writable buffer `buffer` (a
    /// bytearray, memoryview, NumPy array, ... of at least `msg_size`
    /// bytes) and returns its length (`msg_size`), or `Lagged(skipped)`,
    /// or None at the timeout.
    #[pyo3(signature = (buffer, timeout = None))]
    fn recv_into(
        &self,
        py: Python<'_>,
        buffer: &Bound<'_, PyAny>,
        timeout: Option<f64>,
    ) -> PyResult<Option<Py<PyAny>>> {
        let until = Until::from_timeout(timeout)?;
        self.inner.with(py, |st, cancel| {
            let msg_size = st.sub.msg_size();
            let (addr, len, keeper): (usize, usize, Bound<'_, PyAny>) =
                support(py, "address_of")?.call1((buffer,))?.extract()?;
            if len < msg_size {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "buffer is {len} bytes, a message is {msg_size}"
                )));
            }
            Ok(match st.next_got(py, until, cancel)? {
                None => None,
                Some(Got::Lagged(n)) => Some(lagged(py, n)?),
                Some(Got::Message) => {
                    let msg = st.sub.message();
                    // SAFETY: `addr` is the first byte of `keeper`, a ctypes
                    // array of `len` >= msg.len() bytes made by
                    // `ctypes.c_ubyte * len).from_buffer(...)` over a writable,
                    // C-contiguous buffer; `keeper` holds that buffer's export
                    // (so it can be neither freed nor resized) and lives until
                    // the end of this function. `msg` is this subscriber's own
                    // buffer, which cannot overlap a Python object's.
                    unsafe {
                        std::ptr::copy_nonoverlapping(msg.as_ptr(), addr as *mut u8, msg.len());
                    }
                    drop(keeper);
                    Some(msg_size.into_py_any(py)?)
                }
            })
        })
    }

    /// Up to `max` messages at once, as `Batch(messages, skipped)`:
    /// `messages` a NumPy array of shape (n, msg_size) uint8, or with
    /// `dtype` (itemsize == msg_size) a 1-D array of n records; `skipped`
    /// the messages lost just before `messages[0]` (0 if none). It waits
    /// (GIL released) up to `timeout` for the first message, then takes
    /// what is already there without waiting. A lap after the first
    /// message ends the batch and is reported by the next receive, so a
    /// batch is always "skipped, then n consecutive messages". At the
    /// timeout n is 0.
    #[pyo3(signature = (max, timeout = None, dtype = None))]
    fn recv_batch<'py>(
        &self,
        py: Python<'py>,
        max: usize,
        timeout: Option<f64>,
        dtype: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if max == 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "max must be at least 1",
            ));
        }
        let until = Until::from_timeout(timeout)?;
        self.inner.with(py, |st, cancel| {
            let msg_size = st.sub.msg_size();
            let dtype = match dtype {
                Some(d) => Some(support(py, "check_dtype")?.call1((d, msg_size))?),
                None => self.dtype.as_ref().map(|d| d.bind(py).clone()),
            };
            let mut skipped = std::mem::take(&mut st.pending_lag);
            let mut pending = 0u64;
            let mut n = 0usize;
            let batch = &mut st.batch;
            batch.clear();
            // `max` is the caller's: reserve at most 64 MiB up front (a huge
            // `max` must not abort the process); the batch grows past that only
            // as messages actually arrive.
            batch.reserve(max.saturating_mul(msg_size).min(64 << 20));
            let sub = &mut st.sub;
            let waited = wait_in_slices(py, until, cancel, |first: Wait| {
                let mut wait = first;
                loop {
                    match sub.recv(wait) {
                        Some(Received::Message(m)) => {
                            batch.extend_from_slice(m);
                            n += 1;
                            if n == max {
                                return Some(());
                            }
                            wait = Wait::Never;
                        }
                        Some(Received::Lagged { skipped: s }) if n == 0 => skipped += s,
                        Some(Received::Lagged { skipped: s }) => {
                            pending = s;
                            return Some(());
                        }
                        None => return (n > 0).then_some(()),
                    }
                }
            });
            if let Err(e) = waited {
                // Ctrl-C (or close()) before the first message: the lag
                // already taken from the ring is the next receive's to report.
                st.pending_lag = skipped;
                return Err(e);
            }
            st.pending_lag = pending;
            let buf = PyByteArray::new(py, &st.batch[..n * msg_size]);
            let messages = support(py, "batch")?.call1((buf, n, msg_size, dtype))?;
            support(py, "Batch")?.call1((messages, skipped))
        })
    }

    /// The bus's message size in bytes.
    #[getter]
    fn msg_size(&self, py: Python<'_>) -> PyResult<usize> {
        self.inner.with(py, |h, _| Ok(h.sub.msg_size()))
    }

    /// The bus's number of slots.
    #[getter]
    fn capacity(&self, py: Python<'_>) -> PyResult<u64> {
        self.inner.with(py, |h, _| Ok(h.sub.slots()))
    }

    /// The sequence number of the next message this subscriber reads.
    #[getter]
    fn position(&self, py: Python<'_>) -> PyResult<u64> {
        self.inner.with(py, |h, _| Ok(h.sub.position()))
    }

    /// Whether this subscriber is lossless now: True if opened with
    /// `lossless=True` and not evicted since.
    #[getter]
    fn lossless(&self, py: Python<'_>) -> PyResult<bool> {
        self.inner.with(py, |h, _| Ok(h.sub.is_lossless()))
    }

    /// Messages published and not yet read by this subscriber (at most a
    /// ring's worth can still be read).
    #[getter]
    fn pending(&self, py: Python<'_>) -> PyResult<u64> {
        self.inner.with(py, |h, _| Ok(h.sub.pending()))
    }
}

impl Receiving for PySubscriber {
    type State = SubState;
    fn handle(&self) -> &Handle<SubState> {
        &self.inner
    }
    fn try_next(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.recv_with(py, Until::Now)
    }
    fn member(state: &SubState) -> &dyn shmbus::select::Selectable {
        &state.sub
    }
}

async_methods!(
    PySubscriber,
    /// `await sub.recv_async()`: the next message (`bytes`) or
    /// `Lagged(skipped)`, waiting without blocking the event loop (no
    /// thread, no polling: see docs/PYTHON.md). Cancel-safe: a cancelled
    /// receive has taken nothing. `async for msg in sub` receives so until
    /// the subscriber is closed.
    fn recv_async
);

iterator_methods!(
    PySubscriber.inner,
    /// Iteration yields messages and `Lagged` values, waiting as long as it
    /// takes; it stops when the subscriber is closed.
    fn __next__
);

handle_methods!(
    PySubscriber.inner,
    /// Closes the handle (frees its registry entry).
    fn close
);
