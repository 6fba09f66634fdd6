//! Request-response: `Server` takes requests and answers them through
//! `Request`; `Client` sends requests and waits for exactly one outcome
//! each (the response, or a `CallError` subclass).
//!
//! A taken request borrows its server in the core. The server's handle
//! holds it in an `Arc`, and each `Request` a clone beside the request
//! (dropped first), so a request stays answerable after `close()`.
//!
//! Waiting: `recv` and `send` wait in slices, as every blocking call does.
//! A client's `wait` cannot: the core ends a call whose wait runs out, so
//! it waits in one piece with the GIL released (a dead server or none
//! still ends it within `PEER_CHECK`; Ctrl-C is seen once it returns).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyType};
use shmbus::{
    OpenOptions, Wait,
    reqrep::{self, CallError, Client, Pending, Request, RespondError, SendError, Server},
};

use crate::handle::{Handle, handle_methods};
use crate::{Until, errors, owned_bytes, retry_in_slices, wait_in_slices};

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyServer>()?;
    m.add_class::<PyRequest>()?;
    m.add_class::<PyClient>()?;
    Ok(())
}

/// A server shared by its handle and the requests it took.
struct SharedServer(Server<[u8], [u8]>);

/// A taken request and the server it borrows.
struct Taken {
    // Declared first, so dropped first: it borrows the server below.
    request: Request<'static, [u8], [u8]>,
    server: Arc<SharedServer>,
}

/// The client side's state: the client, its calls by id, and the buffer a
/// wait fills with the GIL released.
struct Calls {
    client: Client<[u8], [u8]>,
    calls: Vec<(u64, Pending)>,
    next_id: u64,
    buf: Vec<u8>,
}

/// A server of a request-response service: takes requests (`recv`) and
/// answers each through its `Request`.
#[pyclass(module = "shmbus", name = "Server", frozen)]
pub struct PyServer {
    inner: Handle<Arc<SharedServer>>,
}

impl PyServer {
    fn new(server: Server<[u8], [u8]>) -> Self {
        PyServer {
            inner: Handle::new(Arc::new(SharedServer(server)), "the server is closed"),
        }
    }
}

#[pymethods]
impl PyServer {
    /// Creates the service `name` and serves it as its first server:
    /// requests up to `request_size` bytes, responses up to
    /// `response_size`, up to `clients` clients attached at once (1 to
    /// 256), each with up to `slots` calls outstanding (1 to 64), and up
    /// to `servers` servers (1 to 64).
    #[classmethod]
    #[pyo3(signature = (name, request_size, response_size, *, clients = 16, slots = 8, servers = 4, mode = 0o600))]
    #[allow(clippy::too_many_arguments)] // Python's keywords, one each
    fn create(
        _cls: &Bound<'_, PyType>,
        py: Python<'_>,
        name: &str,
        request_size: u32,
        response_size: u32,
        clients: u32,
        slots: u32,
        servers: u32,
        mode: u32,
    ) -> PyResult<Self> {
        let opts = reqrep::Options::new(clients)
            .slots(slots)
            .servers(servers)
            .request_size(request_size)
            .response_size(response_size)
            .mode(mode);
        let server =
            Server::<[u8], [u8]>::create(name, &opts).map_err(|e| errors::create(py, e))?;
        Ok(PyServer::new(server))
    }

    /// Serves the existing service `name` beside its other servers, in
    /// the first free server entry (`RoleTakenError` if every one is held
    /// by a live process).
    #[classmethod]
    fn attach(_cls: &Bound<'_, PyType>, py: Python<'_>, name: &str) -> PyResult<Self> {
        let server = Server::<[u8], [u8]>::attach(name, &OpenOptions::default())
            .map_err(|e| errors::service_attach(py, e))?;
        Ok(PyServer::new(server))
    }

    /// The next request (a `Request`), waiting up to `timeout` seconds
    /// (None: as long as it takes; GIL released, Ctrl-C interrupts); None
    /// if none came. Clients are served round robin.
    #[pyo3(signature = (timeout = None))]
    fn recv(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<PyRequest>> {
        let until = Until::from_timeout(timeout)?;
        let taken = self.inner.with(py, |shared, cancel| {
            let server = &*shared;
            wait_in_slices(py, until, cancel, |w| {
                let request = server.0.recv(w)?;
                // SAFETY: only the lifetime changes. The request borrows
                // the server inside this `Arc`'s allocation, which `Taken`
                // keeps alive and in place until the request is dropped
                // (declared first, so dropped first).
                let request: Request<'static, [u8], [u8]> = unsafe { std::mem::transmute(request) };
                Some(Taken {
                    request,
                    server: server.clone(),
                })
            })
        })?;
        Ok(taken.map(|t| PyRequest {
            client: t.request.client(),
            taken: Mutex::new(Some(t)),
        }))
    }

    /// The largest request this service carries, in bytes.
    #[getter]
    fn max_request(&self, py: Python<'_>) -> PyResult<usize> {
        self.inner.with(py, |s, _| Ok(s.0.max_request()))
    }

    /// The largest response this service carries, in bytes.
    #[getter]
    fn max_response(&self, py: Python<'_>) -> PyResult<usize> {
        self.inner.with(py, |s, _| Ok(s.0.max_response()))
    }
}

handle_methods!(
    PyServer.inner,
    /// Closes this server handle. Requests it took and has not answered
    /// stay answerable (and keep its server entry) until each is answered
    /// or dropped; the service stays for its other servers and clients.
    fn close
);

/// One request a server took: read `data`, then `respond` (or `refuse`).
/// Dropped unanswered (or at the end of a `with` block), it is refused:
/// its caller gets `RefusedError`, never a wait in vain.
#[pyclass(module = "shmbus", name = "Request", frozen)]
pub struct PyRequest {
    taken: Mutex<Option<Taken>>,
    client: u32,
}

impl PyRequest {
    fn gone(py: Python<'_>) -> PyErr {
        errors::closed(py, "the request was answered")
    }
}

#[pymethods]
impl PyRequest {
    /// The request's bytes (a copy).
    #[getter]
    fn data<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let taken = self.taken.lock().unwrap_or_else(|p| p.into_inner());
        let t = taken.as_ref().ok_or_else(|| Self::gone(py))?;
        Ok(PyBytes::new(py, t.request.bytes()))
    }

    /// The client entry that sent it.
    #[getter]
    fn client(&self) -> u32 {
        self.client
    }

    /// Whether it was answered (responded to or refused).
    #[getter]
    fn answered(&self) -> bool {
        self.taken
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
    }

    /// Answers with `data` (bytes-like, up to the service's largest
    /// response). True once delivered; False if the caller had given up
    /// (its deadline passed): the response is dropped. A response too
    /// long raises `MessageTooLongError` and leaves the request to answer.
    fn respond(&self, py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<bool> {
        let mut taken = self.taken.lock().unwrap_or_else(|p| p.into_inner());
        let t = taken.as_ref().ok_or_else(|| Self::gone(py))?;
        let max = t.server.0.max_response();
        crate::with_bytes(data, |bytes| {
            if bytes.len() > max {
                // Checked here: the core's respond would consume the
                // request and answer it Refused.
                let e = RespondError::TooLong {
                    len: bytes.len(),
                    max,
                };
                return Err(errors::too_long(py, e.to_string(), bytes.len(), max));
            }
            let Taken { request, server } = taken.take().expect("checked above");
            let answered = request.respond(bytes);
            drop(server);
            match answered {
                Ok(()) => Ok(true),
                Err(RespondError::Late) => Ok(false),
                Err(e) => Err(errors::respond(py, e)),
            }
        })?
    }

    /// Refuses the request: its caller gets `RefusedError`. Nothing if it
    /// was answered already.
    fn refuse(&self) {
        drop(self.taken.lock().unwrap_or_else(|p| p.into_inner()).take());
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __exit__(
        &self,
        _t: &Bound<'_, PyAny>,
        _v: &Bound<'_, PyAny>,
        _tb: &Bound<'_, PyAny>,
    ) -> bool {
        self.refuse();
        false
    }
}

/// A client of a request-response service: `call` (or `send` then
/// `wait`) gets exactly one outcome per request: its response (`bytes`),
/// or a `CallError` subclass saying why there is none.
#[pyclass(module = "shmbus", name = "Client", frozen)]
pub struct PyClient {
    inner: Handle<Calls>,
}

fn unknown(py: Python<'_>, call: u64) -> PyErr {
    errors::call(py, CallError::UnknownCall, Some(call))
}

impl Calls {
    /// Sends `data`, waiting by `until` for a free call slot: its id.
    fn send(
        &mut self,
        py: Python<'_>,
        data: &[u8],
        until: Until,
        cancel: &crate::handle::Cancel<'_>,
    ) -> PyResult<u64> {
        let client = &mut self.client;
        // What the last try found, for the error once the wait is over: a
        // full client's slots are all outstanding already.
        let outstanding = client.outstanding();
        let sent = retry_in_slices(
            py,
            until,
            cancel,
            |e| matches!(e, SendError::Full { .. }),
            |w| client.send(data, w),
            || Err(SendError::Full { outstanding }),
        )?
        .map_err(|e| errors::send(py, e))?;
        let id = self.next_id;
        self.next_id += 1;
        self.calls.push((id, sent));
        Ok(id)
    }

    /// Waits for call `id` by `until`, in one piece (see the module's
    /// docs), the GIL released.
    fn wait<'py>(
        &mut self,
        py: Python<'py>,
        id: u64,
        until: Until,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let i = self
            .calls
            .iter()
            .position(|(c, _)| *c == id)
            .ok_or_else(|| unknown(py, id))?;
        let (_, pending) = self.calls.swap_remove(i);
        let wait = match until {
            Until::Now => Wait::Never,
            Until::Forever => Wait::Forever,
            Until::At(d) => Wait::For(d.saturating_duration_since(Instant::now())),
        };
        let (client, buf) = (&mut self.client, &mut self.buf);
        py.detach(|| client.wait_into(pending, buf, wait))
            .map_err(|e| errors::call(py, e, Some(id)))?;
        Ok(PyBytes::new(py, buf))
    }
}

#[pymethods]
impl PyClient {
    /// Becomes a client of the service `name`, in its first free client
    /// entry (`RoleTakenError` if every one is held by a live process).
    #[classmethod]
    fn attach(_cls: &Bound<'_, PyType>, py: Python<'_>, name: &str) -> PyResult<Self> {
        let client = Client::<[u8], [u8]>::attach(name, &OpenOptions::default())
            .map_err(|e| errors::service_attach(py, e))?;
        Ok(PyClient {
            inner: Handle::new(
                Calls {
                    client,
                    calls: Vec::new(),
                    next_id: 1,
                    buf: Vec::new(),
                },
                "the client is closed",
            ),
        })
    }

    /// Sends `data` (bytes-like) as a request, waiting up to `timeout`
    /// seconds for a free call slot if all are outstanding (None: as long
    /// as it takes; 0: `FullError` at once): the call's id, for `wait` or
    /// `cancel`.
    #[pyo3(signature = (data, timeout = None))]
    fn send(&self, py: Python<'_>, data: &Bound<'_, PyAny>, timeout: Option<f64>) -> PyResult<u64> {
        let until = Until::from_timeout(timeout)?;
        let data = owned_bytes(data)?;
        self.inner
            .with(py, |c, cancel| c.send(py, &data, until, cancel))
    }

    /// The response (`bytes`) of call `call`, waiting up to `timeout`
    /// seconds (None: as long as it takes). Every way it ends ends the
    /// call: `CallTimeoutError` (a later response is dropped),
    /// `ServerGoneError`, `NoServerError`, `RefusedError`,
    /// `BadResponseError`; `UnknownCallError` for a call not outstanding.
    /// The wait runs with the GIL released in one piece: Ctrl-C is seen
    /// once it ends (a dead server ends it within 10 ms; pass a timeout
    /// when a live server may never answer).
    #[pyo3(signature = (call, timeout = None))]
    fn wait<'py>(
        &self,
        py: Python<'py>,
        call: u64,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let until = Until::from_timeout(timeout)?;
        self.inner.with(py, |c, _| c.wait(py, call, until))
    }

    /// Sends `data` and waits for its response, both within `timeout`
    /// seconds: `send` then `wait` (their errors).
    #[pyo3(signature = (data, timeout = None))]
    fn call<'py>(
        &self,
        py: Python<'py>,
        data: &Bound<'_, PyAny>,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let until = Until::from_timeout(timeout)?;
        let data = owned_bytes(data)?;
        self.inner.with(py, |c, cancel| {
            let id = c.send(py, &data, until, cancel)?;
            c.wait(py, id, until)
        })
    }

    /// Gives up on call `call` without waiting: a response that comes is
    /// dropped. `UnknownCallError` for a call not outstanding.
    fn cancel(&self, py: Python<'_>, call: u64) -> PyResult<()> {
        self.inner.with(py, |c, _| {
            let i = c
                .calls
                .iter()
                .position(|(id, _)| *id == call)
                .ok_or_else(|| unknown(py, call))?;
            let (_, pending) = c.calls.swap_remove(i);
            c.client.cancel(pending);
            Ok(())
        })
    }

    /// Whether call `call` has its answer (a response or a refusal), so
    /// that `wait` returns at once.
    fn is_answered(&self, py: Python<'_>, call: u64) -> PyResult<bool> {
        self.inner.with(py, |c, _| {
            let (_, pending) = c
                .calls
                .iter()
                .find(|(id, _)| *id == call)
                .ok_or_else(|| unknown(py, call))?;
            Ok(c.client.is_answered(pending))
        })
    }

    /// Calls outstanding: sent and not yet waited for, or given up on and
    /// not yet given back by their server.
    #[getter]
    fn outstanding(&self, py: Python<'_>) -> PyResult<u32> {
        self.inner.with(py, |c, _| Ok(c.client.outstanding()))
    }

    /// `await client.call_async(data, timeout=None)`: `call` on a thread
    /// of the event loop's default executor (see docs/PYTHON.md: the
    /// client has no wake-up the event loop can wait on).
    #[pyo3(signature = (data, timeout = None))]
    fn call_async<'py>(
        slf: &Bound<'py, Self>,
        data: &Bound<'py, PyAny>,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::support(slf.py(), "call_async")?.call1((slf, data, timeout))
    }
}

handle_methods!(
    PyClient.inner,
    /// Closes the client: its outstanding calls are given up (responses
    /// that come are dropped).
    fn close
);
