//! Pool buses: `pool::Publisher` loans a block (`Loan`: the core's
//! `OwnedLoan`, which owns the publisher until the loan ends), the caller
//! writes it in place and publishes it; `pool::Subscriber` receives a `Sample`, a
//! read-only view of the block in place, held until it is released.
//!
//! Views (memoryviews, NumPy arrays) are exported by a `Hold`, an object
//! of the buffer protocol over the block (read-only for a sample: nothing
//! under a sample's memoryview, its `.obj` included, can be written):
//! - a sample's hold owns an `Arc` of the Rust `Sample`, so the block stays
//!   held (no publisher reuses it) and the mapping stays mapped for as long
//!   as any view of it lives, whatever the Python `Sample` does;
//! - a loan's hold counts as a view of its publisher, whose mapping is then
//!   not unmapped by `close()` until the last view is gone.

use std::ffi::c_int;
use std::sync::{Arc, Mutex, MutexGuard};

use pyo3::IntoPyObjectExt;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyType};
use shmbus::{
    AttachError, OpenOptions, Received, Wait,
    bus::Abandoned,
    pool::{self, LoanError, OwnedLoan, Sample},
};

use crate::aio::{Receiving, async_methods};
use crate::bus::{expected_type, open_type, parse_start};
use crate::errors::{self, Exc};
use crate::handle::{Cancel, Handle, handle_methods, iterator_methods};
use crate::{Until, lagged, support, wait_in_slices};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPoolPublisher>()?;
    m.add_class::<PyLoan>()?;
    m.add_class::<PyPoolSubscriber>()?;
    m.add_class::<PySample>()?;
    m.add_class::<Hold>()?;
    Ok(())
}

type Publisher = pool::Publisher<[u8], shmbus::mem::ShmRegion>;

/// A pool publisher shared between its Python handle, its outstanding loan
/// and the views of that loan.
struct Shared {
    st: Mutex<PubState>,
}

struct PubState {
    /// The publisher, when no loan has it (an `OwnedLoan` owns it while
    /// the loan is out).
    publisher: Option<Publisher>,
    /// `close()` was called: drop the publisher as soon as no view needs
    /// its mapping.
    closing: bool,
    /// Live views of loans (`Hold`s).
    views: usize,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, PubState> {
        // A poisoned lock only means a panic elsewhere; the state is plain data.
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A loan gives the publisher back.
    fn put_back(&self, publisher: Publisher) {
        let mut st = self.lock();
        if !(st.closing && st.views == 0) {
            st.publisher = Some(publisher);
        }
    }
}

/// A loan, which owns its publisher until it ends, and the state it gives
/// that publisher back to: on `publish`, or when dropped (the block freed
/// unpublished).
struct LoanCell {
    /// `None` only once `publish` took it.
    loan: Option<OwnedLoan<[u8], shmbus::mem::ShmRegion>>,
    shared: Arc<Shared>,
}

impl LoanCell {
    /// Publishes the loan and gives its publisher back (`None`: the loan
    /// was gone).
    fn publish(mut self) -> Option<Result<u64, Abandoned>> {
        let loan = self.loan.take()?;
        let (publisher, published) = loan.publish();
        self.shared.put_back(publisher);
        Some(published)
    }
}

impl Drop for LoanCell {
    fn drop(&mut self) {
        if let Some(loan) = self.loan.take() {
            self.shared.put_back(loan.cancel());
        }
    }
}

/// The exporter of every memoryview and NumPy array of a sample or loan
/// (their `.obj`): the block's bytes through the buffer protocol, read-only
/// for a sample, and what that memory needs alive: a sample's block (held)
/// or a loaned publisher's mapping.
#[pyclass(module = "shmbus._shmbus", frozen)]
pub struct Hold {
    addr: usize,
    len: usize,
    readonly: bool,
    #[allow(dead_code)]
    sample: Option<Arc<Sample<[u8], shmbus::mem::ShmRegion>>>,
    publisher: Option<Arc<Shared>>,
}

#[pymethods]
impl Hold {
    /// # Safety
    /// Called by Python with a `Py_buffer` to fill (the protocol's contract).
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut ffi::Py_buffer,
        flags: c_int,
    ) -> PyResult<()> {
        let hold = slf.get();
        let len = ffi::Py_ssize_t::try_from(hold.len)
            .map_err(|_| pyo3::exceptions::PyBufferError::new_err("block too large"))?;
        // SAFETY: `view` is Python's to fill; the `len` bytes at `addr`
        // are the block, which stays mapped (and, for a sample, held) for
        // as long as this object lives, and every export holds a reference
        // to it (FillInfo sets `view->obj`). A sample's bytes are exported
        // read-only: FillInfo refuses PyBUF_WRITABLE with BufferError.
        let rc = unsafe {
            ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                hold.addr as *mut std::ffi::c_void,
                len,
                c_int::from(hold.readonly),
                flags,
            )
        };
        if rc != 0 {
            return Err(PyErr::fetch(slf.py()));
        }
        Ok(())
    }

    /// Nothing to give back: the memory is the block's.
    unsafe fn __releasebuffer__(&self, _view: *mut ffi::Py_buffer) {}
}

impl Drop for Hold {
    fn drop(&mut self) {
        if let Some(shared) = self.publisher.take() {
            let mut st = shared.lock();
            st.views -= 1;
            if st.closing && st.views == 0 {
                st.publisher = None;
            }
        }
    }
}

/// Publishes messages of any length up to a block on a pool bus: loan a
/// block, write it in place, publish it.
#[pyclass(module = "shmbus", name = "PoolPublisher", frozen)]
pub struct PyPoolPublisher {
    shared: Handle<Arc<Shared>>,
    block_size: usize,
}

impl PyPoolPublisher {
    fn new(publisher: Publisher) -> Self {
        let block_size = publisher.block_size();
        PyPoolPublisher {
            shared: Handle::new(
                Arc::new(Shared {
                    st: Mutex::new(PubState {
                        publisher: Some(publisher),
                        closing: false,
                        views: 0,
                    }),
                }),
                "the pool publisher is closed",
            ),
            block_size,
        }
    }

    fn loan_cell(&self, py: Python<'_>, size: usize, until: Until) -> PyResult<LoanCell> {
        self.shared.with(py, |shared, cancel| {
            Self::loan_with(py, shared, cancel, size, until)
        })
    }

    fn loan_with(
        py: Python<'_>,
        shared: &Arc<Shared>,
        cancel: &Cancel<'_>,
        size: usize,
        until: Until,
    ) -> PyResult<LoanCell> {
        let shared = Arc::clone(shared);
        let publisher = shared.lock().publisher.take().ok_or_else(|| {
            errors::raise(
                py,
                Exc::LoanOutstandingError,
                "this publisher already has a loan outstanding: publish or release it first"
                    .to_string(),
                &[],
            )
        })?;
        // The publisher between tries: each try moves it into `into_loan`,
        // which gives it back when no block was loaned.
        let mut idle = Some(publisher);
        let found = wait_in_slices(py, until, cancel, |w| {
            match Self::try_loan(&mut idle, size, w) {
                Some(Err(LoanError::Exhausted { .. })) => None,
                done => done,
            }
        });
        // The time is up: one last try, which reports the census.
        let found = found.map(|f| f.or_else(|| Self::try_loan(&mut idle, size, Wait::Never)));
        if let Some(publisher) = idle.take() {
            shared.put_back(publisher);
        }
        match found? {
            Some(Ok(loan)) => Ok(LoanCell {
                loan: Some(loan),
                shared,
            }),
            Some(Err(e)) => Err(errors::loan(py, e)),
            // Never: a failed try puts the publisher back for the next.
            None => Err(errors::closed(py, "the pool publisher is gone")),
        }
    }

    /// One try to loan a block from the publisher in `idle`: the loan (the
    /// publisher in it), or the error with the publisher back in `idle`.
    fn try_loan(
        idle: &mut Option<Publisher>,
        size: usize,
        wait: Wait,
    ) -> Option<Result<OwnedLoan<[u8], shmbus::mem::ShmRegion>, LoanError>> {
        match idle.take()?.into_loan(size, wait) {
            Ok(loan) => Some(Ok(loan)),
            Err(failed) => {
                let (publisher, e) = failed.into_parts();
                *idle = Some(publisher);
                Some(Err(e))
            }
        }
    }
}

#[pymethods]
impl PyPoolPublisher {
    /// Creates the pool bus `name`: `capacity` slots (a power of two) and
    /// `blocks` blocks (more than the capacity) of `block_size` bytes (a
    /// multiple of 64). `many=True`: a bus any number of pool publishers
    /// may publish on at once. `type_name` (with `msg_size` and
    /// `type_align`) records the blocks' message type, which typed openers
    /// must then name; without it messages are bytes of any length up to a
    /// block. `lossless_subscribers` and `evict_after` as for
    /// `Publisher.create`: a lossless subscriber's unread blocks are never
    /// reclaimed, and a loan's publish waits for it.
    #[classmethod]
    #[pyo3(signature = (name, *, block_size, blocks, capacity = 64, many = false, mode = 0o600, type_name = None, msg_size = None, type_align = 1, lossless_subscribers = shmbus::bus::DEFAULT_MAX_LOSSLESS, evict_after = 1.0))]
    #[allow(clippy::too_many_arguments)]
    fn create(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        name: &str,
        block_size: u64,
        blocks: u64,
        capacity: u64,
        many: bool,
        mode: u32,
        type_name: Option<&str>,
        msg_size: Option<u32>,
        type_align: u32,
        lossless_subscribers: u32,
        evict_after: f64,
    ) -> PyResult<Self> {
        let mut opts = shmbus::pool::Options::new(capacity, block_size, blocks)
            .mode(mode)
            .lossless_subscribers(lossless_subscribers)
            .evict_after(crate::bus::evict_timeout(evict_after)?);
        if let Some((name, size, align)) = expected_type(type_name, msg_size, type_align)? {
            opts = opts.message_type(&name, size, align);
        } else if msg_size.is_some() {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "msg_size on a pool bus is the size of the blocks' message type: \
                 it applies only with type_name",
            ));
        }
        let made = if many {
            pool::Publisher::<[u8]>::create_many(name, &opts.many())
        } else {
            pool::Publisher::<[u8]>::create(name, &opts)
        };
        Ok(Self::new(made.map_err(|e| errors::create(py, e))?))
    }

    /// Attaches to the pool bus `name`: as its single publisher (whose
    /// previous publisher is gone) or, on a bus made with `many=True`, as
    /// one of its publishers. `many=None` takes whichever the bus is.
    /// `type_name` (with `msg_size` and `type_align`): refused unless the
    /// blocks carry that type.
    #[classmethod]
    #[pyo3(signature = (name, *, many = None, type_name = None, msg_size = None, type_align = 1))]
    fn attach(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        name: &str,
        many: Option<bool>,
        type_name: Option<&str>,
        msg_size: Option<u32>,
        type_align: u32,
    ) -> PyResult<Self> {
        let opts = open_type(OpenOptions::default(), type_name, msg_size, type_align)?;
        let made = match many {
            Some(false) => pool::Publisher::<[u8]>::attach(name, &opts),
            Some(true) => pool::Publisher::<[u8]>::attach_many(name, &opts),
            None => match pool::Publisher::<[u8]>::attach(name, &opts) {
                Err(AttachError::WrongMode { .. }) => {
                    pool::Publisher::<[u8]>::attach_many(name, &opts)
                }
                other => other,
            },
        };
        Ok(Self::new(made.map_err(|e| errors::attach(py, e))?))
    }

    /// Loans a block for a message of exactly `size` bytes (at most
    /// `block_size`), waiting up to `timeout` seconds (None: as long as it
    /// takes; GIL released, Ctrl-C interrupts) for one to come free, else
    /// `PoolExhaustedError`. One loan at a time per publisher.
    #[pyo3(signature = (size, timeout = None))]
    fn loan(&self, py: Python<'_>, size: usize, timeout: Option<f64>) -> PyResult<PyLoan> {
        let mut cell = self.loan_cell(py, size, Until::from_timeout(timeout)?)?;
        let (addr, len) = match cell.loan.as_deref_mut() {
            Some(loan) => (loan.as_mut_ptr() as usize, loan.len()),
            None => (0, 0),
        };
        Ok(PyLoan {
            cell: Some(cell),
            lent: Lent::new(addr, len, false),
        })
    }

    /// Loans a block of `len(data)` bytes, copies `data` into it and
    /// publishes it; returns its sequence number.
    #[pyo3(signature = (data, timeout = None))]
    fn publish(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        timeout: Option<f64>,
    ) -> PyResult<u64> {
        let data = crate::owned_bytes(data)?;
        let mut cell = self.loan_cell(py, data.len(), Until::from_timeout(timeout)?)?;
        let Some(loan) = cell.loan.as_deref_mut() else {
            return Err(errors::closed(py, "the loan is gone"));
        };
        loan.copy_from_slice(&data);
        // Without the GIL, as `Loan.publish`.
        let Some(published) = py.detach(move || cell.publish()) else {
            return Err(errors::closed(py, "the loan is gone"));
        };
        published.map_err(|e| errors::abandoned(py, e))
    }

    /// The pool's block size: the longest message.
    #[getter]
    fn block_size(&self) -> usize {
        self.block_size
    }

    /// Closes the handle. The mapping goes when the last view of a loan of
    /// this publisher is gone, and an outstanding loan keeps working.
    fn close(&self, py: Python<'_>) {
        if let Some(shared) = self.shared.close(py) {
            let mut st = shared.lock();
            st.closing = true;
            if st.views == 0 {
                st.publisher = None;
            }
        }
    }
}

handle_methods!(PyPoolPublisher.shared);

impl Drop for PyPoolPublisher {
    fn drop(&mut self) {
        Python::attach(|py| self.close(py));
    }
}

/// The block a sample or loan shows to Python, and the memoryviews of it
/// handed out so far.
struct Lent {
    addr: usize,
    len: usize,
    readonly: bool,
    views: Vec<Py<PyAny>>,
}

impl Lent {
    fn new(addr: usize, len: usize, readonly: bool) -> Self {
        Lent {
            addr,
            len,
            readonly,
            views: Vec::new(),
        }
    }

    fn view<'py>(&self, py: Python<'py>, hold: Hold) -> PyResult<Bound<'py, PyAny>> {
        support(py, "view")?.call1((hold, self.len, self.readonly))
    }

    /// A view kept, so that `release_views` can end it.
    fn memoryview<'py>(&mut self, py: Python<'py>, hold: Hold) -> PyResult<Bound<'py, PyAny>> {
        let v = self.view(py, hold)?;
        self.views.push(v.clone().unbind());
        Ok(v)
    }

    fn numpy<'py>(
        &self,
        py: Python<'py>,
        hold: Hold,
        dtype: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        support(py, "array")?.call1((self.view(py, hold)?, dtype))
    }

    /// Releases the memoryviews handed out (best effort: one that has
    /// exports of its own, a NumPy array say, stays valid, and its hold
    /// keeps the memory alive).
    fn release_views(&mut self, py: Python<'_>) {
        for v in self.views.drain(..) {
            if v.bind(py).call_method0("release").is_err() {
                // BufferError: something still views it. Safe: its hold
                // keeps the block and mapping alive.
            }
        }
    }
}

/// A block loaned for one message: write it in place through `memoryview`
/// or `numpy(dtype)`, then `publish()`. Leaving a `with` block (or
/// `release()`) without publishing frees the block unpublished. After
/// either, the loan's memoryviews are released, and a write through a
/// NumPy array still viewing it would change a published message: let
/// such arrays go before publishing.
#[pyclass(module = "shmbus", name = "Loan")]
pub struct PyLoan {
    cell: Option<LoanCell>,
    lent: Lent,
}

impl PyLoan {
    /// What a view of the loan holds: its publisher's mapping.
    fn hold(&self, py: Python<'_>) -> PyResult<Hold> {
        let Some(cell) = self.cell.as_ref() else {
            return Err(errors::closed(py, "the loan was published or released"));
        };
        let shared = Arc::clone(&cell.shared);
        shared.lock().views += 1;
        Ok(Hold {
            addr: self.lent.addr,
            len: self.lent.len,
            readonly: false,
            sample: None,
            publisher: Some(shared),
        })
    }
}

#[pymethods]
impl PyLoan {
    /// A writable memoryview of the block (`len(loan)` bytes), in place.
    #[getter]
    fn memoryview<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let hold = self.hold(py)?;
        self.lent.memoryview(py, hold)
    }

    /// A writable NumPy array over the block, of `dtype` (uint8 if None).
    #[pyo3(signature = (dtype = None))]
    fn numpy<'py>(
        &mut self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.lent.numpy(py, self.hold(py)?, dtype)
    }

    /// Publishes the message; returns its sequence number.
    fn publish(&mut self, py: Python<'_>) -> PyResult<u64> {
        let Some(cell) = self.cell.take() else {
            return Err(errors::closed(
                py,
                "the loan was already published or released",
            ));
        };
        self.lent.release_views(py);
        // Without the GIL: the publish may wait for a lossless subscriber
        // (up to the bus's eviction timeout), which may be this process's.
        let Some(published) = py.detach(move || cell.publish()) else {
            return Err(errors::closed(py, "the loan is gone"));
        };
        published.map_err(|e| errors::abandoned(py, e))
    }

    /// Frees the block unpublished (nothing if already published).
    fn release(&mut self, py: Python<'_>) {
        self.lent.release_views(py);
        self.cell = None;
    }

    /// Whether the loan is still open (neither published nor released).
    #[getter]
    fn active(&self) -> bool {
        self.cell.is_some()
    }

    fn __len__(&self) -> usize {
        self.lent.len
    }
}

handle_methods!(PyLoan: release);

/// A subscriber of a pool bus: each message is a `Sample` viewing its block
/// in place.
#[pyclass(module = "shmbus", name = "PoolSubscriber", frozen)]
pub struct PyPoolSubscriber {
    inner: Handle<pool::Subscriber<[u8], shmbus::mem::ShmRegion>>,
}

enum PoolGot {
    Sample(Sample<[u8], shmbus::mem::ShmRegion>),
    Lagged(u64),
    Error(shmbus::pool::RecvError),
}

impl PyPoolSubscriber {
    fn recv_with(&self, py: Python<'_>, until: Until) -> PyResult<Option<Py<PyAny>>> {
        self.inner
            .with(py, |sub, cancel| Self::recv_on(py, sub, cancel, until))
    }

    fn recv_on(
        py: Python<'_>,
        sub: &mut pool::Subscriber<[u8], shmbus::mem::ShmRegion>,
        cancel: &Cancel<'_>,
        until: Until,
    ) -> PyResult<Option<Py<PyAny>>> {
        let got = wait_in_slices(py, until, cancel, |w| match sub.recv(w) {
            Ok(Some(Received::Message(s))) => Some(PoolGot::Sample(s)),
            Ok(Some(Received::Lagged { skipped })) => Some(PoolGot::Lagged(skipped)),
            Ok(None) => None,
            Err(e) => Some(PoolGot::Error(e)),
        })?;
        Ok(match got {
            None => None,
            Some(PoolGot::Lagged(skipped)) => Some(lagged(py, skipped)?),
            Some(PoolGot::Error(e)) => return Err(errors::pool_recv(py, e)),
            Some(PoolGot::Sample(s)) => {
                let sample = PySample {
                    sequence: s.sequence(),
                    lent: Lent::new(s.as_ptr() as usize, s.len(), true),
                    sample: Some(Arc::new(s)),
                };
                Some(sample.into_py_any(py)?)
            }
        })
    }
}

#[pymethods]
impl PyPoolSubscriber {
    /// The most samples one subscriber may hold at once.
    #[classattr]
    const MAX_HELD: usize = pool::Subscriber::<[u8], shmbus::mem::ShmRegion>::MAX_HELD;

    /// Opens the pool bus `name`, starting at `start` ("next", "oldest" or
    /// "latest", as `Subscriber.open`). `type_name` (with `msg_size` and
    /// `type_align`): refused unless the blocks carry that type.
    /// `lossless=True` as for `Subscriber.open`: its unread blocks are
    /// never reclaimed.
    #[classmethod]
    #[pyo3(signature = (name, start = "next", *, type_name = None, msg_size = None, type_align = 1, lossless = false))]
    #[allow(clippy::too_many_arguments)]
    fn open(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        name: &str,
        start: &str,
        type_name: Option<&str>,
        msg_size: Option<u32>,
        type_align: u32,
        lossless: bool,
    ) -> PyResult<Self> {
        let opts = OpenOptions::default()
            .start(parse_start(start)?)
            .lossless(lossless);
        let opts = open_type(opts, type_name, msg_size, type_align)?;
        let inner = pool::Subscriber::<[u8]>::open(name, &opts).map_err(|e| errors::open(py, e))?;
        Ok(PyPoolSubscriber {
            inner: Handle::new(inner, "the pool subscriber is closed"),
        })
    }

    /// The next message as a `Sample` (held until released), or
    /// `Lagged(skipped)`, or None if nothing came within `timeout` seconds
    /// (None: as long as it takes; GIL released, Ctrl-C interrupts).
    /// `TooManySamplesError` if this subscriber holds `MAX_HELD` samples.
    #[pyo3(signature = (timeout = None))]
    fn recv(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<Py<PyAny>>> {
        self.recv_with(py, Until::from_timeout(timeout)?)
    }

    /// `recv(timeout=0)`.
    fn try_recv(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.recv_with(py, Until::Now)
    }

    /// The sequence number of the next message this subscriber reads.
    #[getter]
    fn position(&self, py: Python<'_>) -> PyResult<u64> {
        self.inner.with(py, |h, _| Ok(h.position()))
    }

    /// How many samples this subscriber holds.
    #[getter]
    fn held(&self, py: Python<'_>) -> PyResult<usize> {
        self.inner.with(py, |h, _| Ok(h.held()))
    }

    /// Whether this subscriber is lossless now: True if opened with
    /// `lossless=True` and not evicted since.
    #[getter]
    fn lossless(&self, py: Python<'_>) -> PyResult<bool> {
        self.inner.with(py, |h, _| Ok(h.is_lossless()))
    }
}

impl Receiving for PyPoolSubscriber {
    type State = pool::Subscriber<[u8], shmbus::mem::ShmRegion>;
    fn handle(&self) -> &Handle<Self::State> {
        &self.inner
    }
    fn try_next(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.recv_with(py, Until::Now)
    }
    fn member(state: &Self::State) -> &dyn shmbus::select::Selectable {
        state
    }
}

async_methods!(
    PyPoolSubscriber,
    /// `await sub.recv_async()`: the next `Sample` or `Lagged(skipped)`,
    /// waiting as `Subscriber.recv_async` does. Cancel-safe.
    fn recv_async
);

iterator_methods!(PyPoolSubscriber.inner, fn __next__);

handle_methods!(
    PyPoolSubscriber.inner,
    /// Closes the handle; samples still held stay valid until released.
    fn close
);

/// One message of a pool bus, read in place: its block is held (no
/// publisher reuses it) until `release()` or the end of a `with` block.
/// Afterwards every access raises `ClosedError` and the memoryviews it
/// handed out are released; a NumPy array made from it keeps the block
/// held until the array itself is gone, so nothing ever reads a reused
/// block.
#[pyclass(module = "shmbus", name = "Sample")]
pub struct PySample {
    sample: Option<Arc<Sample<[u8], shmbus::mem::ShmRegion>>>,
    lent: Lent,
    /// The message's sequence number.
    #[pyo3(get)]
    sequence: u64,
}

impl PySample {
    /// What a view of the sample holds: the sample itself.
    fn hold(&self, py: Python<'_>) -> PyResult<Hold> {
        let Some(sample) = self.sample.as_ref() else {
            return Err(errors::closed(py, "the sample was released"));
        };
        Ok(Hold {
            addr: self.lent.addr,
            len: self.lent.len,
            readonly: true,
            sample: Some(Arc::clone(sample)),
            publisher: None,
        })
    }
}

#[pymethods]
impl PySample {
    /// A read-only memoryview of the message, in place.
    #[getter]
    fn memoryview<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let hold = self.hold(py)?;
        self.lent.memoryview(py, hold)
    }

    /// A read-only NumPy array over the message, of `dtype` (uint8 if None).
    #[pyo3(signature = (dtype = None))]
    fn numpy<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.lent.numpy(py, self.hold(py)?, dtype)
    }

    /// A copy of the message.
    fn __bytes__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let Some(sample) = self.sample.as_ref() else {
            return Err(errors::closed(py, "the sample was released"));
        };
        Ok(PyBytes::new(py, sample))
    }

    fn __len__(&self) -> usize {
        self.lent.len
    }

    /// Releases the block (once every view made from it is gone too).
    fn release(&mut self, py: Python<'_>) {
        self.lent.release_views(py);
        self.sample = None;
    }

    #[getter]
    fn released(&self) -> bool {
        self.sample.is_none()
    }

    fn __repr__(&self) -> String {
        format!(
            "Sample(sequence={}, len={}{})",
            self.sequence,
            self.lent.len,
            if self.sample.is_none() {
                ", released"
            } else {
                ""
            }
        )
    }
}

handle_methods!(PySample: release);
