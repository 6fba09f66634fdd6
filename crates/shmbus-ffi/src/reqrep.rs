//! Request-response (the core's `reqrep`): a named service whose clients
//! send requests of bytes and get exactly one outcome each, and whose
//! servers take each request once and answer it. `shmbus_server_*`,
//! `shmbus_request_*` (one taken request) and `shmbus_client_*`.
//!
//! Outcomes of a call, each its own status (all of them set the message
//! and the code): the response (`SHMBUS_MESSAGE`); `SHMBUS_TIMED_OUT`
//! (`SHMBUS_E_TIMED_OUT`: a response that comes later is dropped, never
//! delivered to another call); `SHMBUS_PEER_GONE` (the server that took
//! the request died before it answered); `SHMBUS_NO_SERVER` (no server is
//! alive to take it: it was withdrawn unseen); `SHMBUS_REFUSED` (the
//! server dropped it unanswered) — these three with
//! `SHMBUS_E_PEER_GONE`; `SHMBUS_FULL` (`SHMBUS_E_FULL`: every call slot
//! of the client is outstanding); `SHMBUS_ERROR` with `SHMBUS_E_TOO_LONG`
//! (a request longer than the service's largest), `SHMBUS_E_CORRUPT` (a
//! response longer than the service's largest: a broken server) or
//! `SHMBUS_E_INVALID_ARGUMENT` (no such call outstanding).
//!
//! # How a taken request is kept
//! The core's `Request` borrows its `Server`. The server handle is an
//! `Arc` of the server and each request handle holds a clone of it beside
//! the request (dropped first), so a request stays valid, and its server
//! entry held, after `shmbus_server_close`.

use std::ffi::{c_char, c_void};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shmbus_core::{
    Wait,
    reqrep::{self, CallError, Client, Pending, Request, SendError, Server},
    wire::service::{MAX_CLIENTS, MAX_SERVERS, MAX_SLOTS},
};

use crate::args::{
    buffer, bytes, capacity_in, copy_into, handle, out_handle, out_ptr, put, required, take_back,
    wait_of,
};
use crate::bodies::{new_handle, open_handle, query};
use crate::entry::{Failure, Outcome, entry, entry_void, error};
use crate::options::{OpenOpts, SHMBUS_WAIT_SPIN_FUTEX, creation, strategy, with_creation};
use crate::status::Status;

/// How to create a request-response service (`shmbus_server_create`).
/// Start from `shmbus_service_options_default()` (or zero it) and set
/// `request_size` and `response_size`; every other field's 0 is its
/// default.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ServiceOpts {
    /// The largest request in bytes (1 to 64 MiB).
    pub request_size: u32,
    /// The largest response in bytes (1 to 64 MiB).
    pub response_size: u32,
    /// How many client handles may be attached at once (1 to 256; 0 = 16).
    pub clients: u32,
    /// How many calls one client may have outstanding (1 to 64; 0 = 8).
    pub slots: u32,
    /// How many servers may serve at once (1 to 64; 0 = 4).
    pub servers: u32,
    /// File mode bits within 0777 (0 = 0600); any other bit is refused.
    pub mode: u32,
    /// `SHMBUS_PREFAULT`, `SHMBUS_MLOCK`, `SHMBUS_HUGE_PAGES_*`.
    pub flags: u32,
    /// `SHMBUS_WAIT_*`: how the creating server waits for requests.
    pub wait: u32,
    /// How long the creating server spins before it yields or sleeps
    /// (0 = 50 µs).
    pub spin_ns: u64,
}

/// The clients of a service whose options leave `clients` 0.
const DEFAULT_CLIENTS: u32 = 16;

/// Service options with every default: `request_size` and
/// `response_size` still to set.
#[unsafe(no_mangle)]
pub extern "C" fn shmbus_service_options_default() -> ServiceOpts {
    ServiceOpts {
        request_size: 0,
        response_size: 0,
        clients: 0,
        slots: 0,
        servers: 0,
        mode: 0o600,
        flags: 0,
        wait: SHMBUS_WAIT_SPIN_FUTEX,
        spin_ns: 0,
    }
}

/// A field of `ServiceOpts`: 0 (its default) or within `1..=max`.
fn count_field(field: &str, found: u32, max: u32, default: u32) -> Result<u32, Failure> {
    match found {
        0 => Ok(default),
        n if n <= max => Ok(n),
        n => Err(Failure::argument(format!(
            "service options: {field} is {n}, expected 1 to {max} (0 = {default})"
        ))),
    }
}

/// `shmbus_service_options_t` as `reqrep::Options`, every field checked
/// here, each refusal naming its field.
///
/// # Safety
/// `opts` is NULL or points to a live `ServiceOpts`.
pub(crate) unsafe fn service_options(opts: *const ServiceOpts) -> Result<reqrep::Options, Failure> {
    const WHAT: &str = "service options";
    // SAFETY: NULL or live, by the contract.
    let o = unsafe { required(opts, "service options (shmbus_service_options_t*)") }?;
    for (field, size) in [
        ("request_size", o.request_size),
        ("response_size", o.response_size),
    ] {
        if size == 0 {
            return Err(Failure::argument(format!(
                "{WHAT}: {field} is 0, expected the largest {} in bytes (1 to 64 MiB)",
                field.trim_end_matches("_size")
            )));
        }
    }
    let clients = count_field("clients", o.clients, MAX_CLIENTS, DEFAULT_CLIENTS)?;
    let slots = count_field("slots", o.slots, MAX_SLOTS, 8)?;
    let servers = count_field("servers", o.servers, MAX_SERVERS, 4)?;
    let c = creation(o.mode, o.flags, WHAT)?;
    let wait = strategy(o.wait, o.spin_ns, WHAT)?;
    Ok(with_creation!(
        reqrep::Options::new(clients)
            .slots(slots)
            .servers(servers)
            .request_size(o.request_size)
            .response_size(o.response_size),
        c
    )
    .wait_strategy(wait))
}

/// A server shared by its handle and the requests it took.
struct SharedServer(Server<[u8], [u8]>);

/// A server of a service (opaque).
pub struct ShmbusServer(Arc<SharedServer>);

/// A request a server took (opaque), from `shmbus_server_recv` until it is
/// answered (`shmbus_request_respond`) or refused (`shmbus_request_refuse`).
pub struct ShmbusRequest {
    // Declared first, so dropped first: it borrows the server below.
    request: Request<'static, [u8], [u8]>,
    server: Arc<SharedServer>,
}

/// A client of a service (opaque).
pub struct ShmbusClient {
    client: Client<[u8], [u8]>,
    /// Calls sent and not yet waited for, by id.
    calls: Vec<(u64, Pending)>,
    /// Responses a buffer was too short for, by call id, until a wait
    /// with a buffer long enough takes them.
    held: Vec<(u64, Vec<u8>)>,
    /// The next call's id (ids start at 1).
    next_id: u64,
}

impl ShmbusClient {
    fn unknown(id: u64) -> Failure {
        Failure::argument(format!(
            "no call {id} is outstanding on this client (waited for, cancelled, or never sent)"
        ))
    }

    fn track(&mut self, call: Pending) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.calls.push((id, call));
        id
    }
}

/// A call's outcome as its status, with its kind's code and its message.
fn call_failed(e: CallError) -> Failure {
    let status = match e {
        CallError::TimedOut => Status::SHMBUS_TIMED_OUT,
        CallError::ServerGone { .. } => Status::SHMBUS_PEER_GONE,
        CallError::NoServer => Status::SHMBUS_NO_SERVER,
        CallError::Refused { .. } => Status::SHMBUS_REFUSED,
        CallError::Send(SendError::Full { .. }) => Status::SHMBUS_FULL,
        _ => Status::SHMBUS_ERROR,
    };
    Failure::of(status, &e)
}

fn send_failed(e: SendError) -> Failure {
    call_failed(CallError::Send(e))
}

/// Creates the service `name` and serves it as its first server.
///
/// Statuses: `SHMBUS_OK` (`*out`, closed with `shmbus_server_close`);
/// `SHMBUS_ERROR` (`SHMBUS_E_EXISTS`, `SHMBUS_E_INVALID_ARGUMENT` for
/// options out of range, naming the field, ...; `*out` is NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opts` NULL or a valid
/// options struct; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_server_create(
    name: *const c_char,
    opts: *const ServiceOpts,
    out: *mut *mut ShmbusServer,
) -> Status {
    let make = |name: &str| {
        // SAFETY: `opts` as the contract says.
        let opts = unsafe { service_options(opts) }?;
        Server::<[u8], [u8]>::create(name, &opts)
            .map(|s| ShmbusServer(Arc::new(SharedServer(s))))
            .map_err(error)
    };
    // SAFETY: `name` and `out` as the contract says.
    unsafe { new_handle(name, out, make) }
}

/// Serves the existing service `name` beside its other servers, in the
/// first free server entry.
///
/// Statuses: `SHMBUS_OK` (`*out`); `SHMBUS_ERROR` (`SHMBUS_E_NOT_FOUND`,
/// `SHMBUS_E_WRONG_KIND`, `SHMBUS_E_ROLE_TAKEN` when every server entry
/// is held by a live process, ...; `*out` is NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opts` NULL or a valid
/// options struct; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_server_attach(
    name: *const c_char,
    opts: *const OpenOpts,
    out: *mut *mut ShmbusServer,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe {
        open_handle(name, opts, out, |name, opts| {
            Server::<[u8], [u8]>::attach(name, &opts.open)
                .map(|s| ShmbusServer(Arc::new(SharedServer(s))))
        })
    }
}

/// Takes the next request, waiting up to `timeout_ns`. Clients are served
/// round robin. A server may hold several requests at once and answer
/// them in any order.
///
/// Statuses: `SHMBUS_MESSAGE` (`*request`, answered with
/// `shmbus_request_respond` or `shmbus_request_refuse`); `SHMBUS_EMPTY`
/// (none, `timeout_ns` 0) or `SHMBUS_TIMED_OUT` (none came), both with
/// `*request` NULL and no message set; `SHMBUS_ERROR` (a NULL argument).
///
/// # Safety
/// `server` is NULL or a live server; `request` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_server_recv(
    server: *mut ShmbusServer,
    request: *mut *mut ShmbusRequest,
    timeout_ns: i64,
) -> Status {
    entry(|| {
        // SAFETY: NULL or writable, as the contract says.
        let mut out = unsafe { out_handle(request) }?;
        // SAFETY: NULL or live, as the contract says.
        let s = unsafe { handle(server, "server") }?;
        let shared = s.0.clone();
        let Some(taken) = shared.0.recv(wait_of(timeout_ns)) else {
            return Ok(crate::args::nothing(timeout_ns));
        };
        // SAFETY: only the lifetime changes. The request borrows the
        // server inside `shared`'s allocation, which the handle's `server`
        // field keeps alive and in place until the request is dropped
        // (declared first, so dropped first).
        let taken: Request<'static, [u8], [u8]> = unsafe { std::mem::transmute(taken) };
        out.set(Box::into_raw(Box::new(ShmbusRequest {
            request: taken,
            server: shared,
        })));
        Ok(Status::SHMBUS_MESSAGE)
    })
}

/// The largest request (`*len`) this service carries.
///
/// # Safety
/// `server` is NULL or a live server; `len` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_server_max_request(
    server: *mut ShmbusServer,
    len: *mut usize,
) -> Status {
    // SAFETY: as the contract says.
    unsafe { query(server, "server", len, "len", |s| s.0.0.max_request()) }
}

/// The largest response (`*len`) this service carries.
///
/// # Safety
/// `server` is NULL or a live server; `len` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_server_max_response(
    server: *mut ShmbusServer,
    len: *mut usize,
) -> Status {
    // SAFETY: as the contract says.
    unsafe { query(server, "server", len, "len", |s| s.0.0.max_response()) }
}

/// Frees the server handle (NULL: nothing). Requests it took and did not
/// answer yet stay valid, and keep its server entry, until each is
/// answered or refused; the service stays for its other servers and
/// clients (`shmbus_remove` removes it).
///
/// # Safety
/// `server` is NULL or a live server, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_server_close(server: *mut ShmbusServer) {
    // SAFETY: NULL or a live handle, by the contract.
    entry_void(|| unsafe { take_back(server) });
}

/// Writes the request's bytes (in place in shared memory: read them, do
/// not write them) to `*data`, its length to `*len` and the client entry
/// that sent it to `*client` (each may be NULL). The bytes stay valid
/// until the request is answered or refused.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (a NULL request).
///
/// # Safety
/// `request` is NULL or a live request; `data`, `len`, `client` NULL or
/// writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_request_data(
    request: *mut ShmbusRequest,
    data: *mut *const c_void,
    len: *mut usize,
    client: *mut u32,
) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let r = unsafe { handle(request, "request") }?;
        let bytes = r.request.bytes();
        // SAFETY: as above.
        unsafe { put(data, bytes.as_ptr().cast()) };
        // SAFETY: as above.
        unsafe { put(len, bytes.len()) };
        // SAFETY: as above.
        unsafe { put(client, r.request.client()) };
        Ok(Status::SHMBUS_OK)
    })
}

/// Answers the request with the `len` bytes at `data` (up to the
/// service's largest response) and frees it.
///
/// Statuses: `SHMBUS_OK` (delivered; the request is freed);
/// `SHMBUS_TIMED_OUT` (`SHMBUS_E_TIMED_OUT`: the caller gave up first, so
/// the response is dropped and counted; the request is freed);
/// `SHMBUS_ERROR` (`SHMBUS_E_TOO_LONG`, a NULL argument: nothing was
/// sent, and the request is still yours to answer or refuse).
///
/// # Safety
/// `request` is NULL or a live request; `data` valid for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_request_respond(
    request: *mut ShmbusRequest,
    data: *const c_void,
    len: usize,
) -> Status {
    entry(|| {
        // SAFETY: NULL or live, as the contract says.
        let r = unsafe { handle(request, "request") }?;
        // SAFETY: valid for `len` bytes, as the contract says.
        let data = unsafe { bytes(data, len, "data") }?;
        let max = r.server.0.max_response();
        if data.len() > max {
            // Checked here: the core's respond would consume the request
            // and answer it Refused.
            let e = reqrep::RespondError::TooLong {
                len: data.len(),
                max,
            };
            return Err(error(e));
        }
        // SAFETY: live and made by `shmbus_server_recv`'s Box; it is not
        // used again (freed here whatever the outcome).
        let owned = unsafe { Box::from_raw(request) };
        let ShmbusRequest { request, server } = *owned;
        let answered = request.respond(data);
        drop(server);
        match answered {
            Ok(()) => Ok(Status::SHMBUS_OK),
            Err(e) => Err(Failure::of(Status::SHMBUS_TIMED_OUT, &e)),
        }
    })
}

/// Refuses the request (its caller gets `SHMBUS_REFUSED`) and frees it
/// (NULL: nothing).
///
/// # Safety
/// `request` is NULL or a live request, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_request_refuse(request: *mut ShmbusRequest) {
    // SAFETY: NULL or a live handle, by the contract.
    entry_void(|| unsafe { take_back(request) });
}

/// Becomes a client of the service `name`, in its first free client
/// entry (taking over what a dead client left there).
///
/// Statuses: `SHMBUS_OK` (`*out`, closed with `shmbus_client_close`);
/// `SHMBUS_ERROR` (`SHMBUS_E_NOT_FOUND`, `SHMBUS_E_WRONG_KIND`,
/// `SHMBUS_E_ROLE_TAKEN` when every client entry is held by a live
/// process, ...; `*out` is NULL).
///
/// # Safety
/// `name` is NULL or a NUL-terminated string; `opts` NULL or a valid
/// options struct; `out` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_client_attach(
    name: *const c_char,
    opts: *const OpenOpts,
    out: *mut *mut ShmbusClient,
) -> Status {
    // SAFETY: each pointer as the contract says.
    unsafe {
        open_handle(name, opts, out, |name, opts| {
            Client::<[u8], [u8]>::attach(name, &opts.open).map(|client| ShmbusClient {
                client,
                calls: Vec::new(),
                held: Vec::new(),
                next_id: 1,
            })
        })
    }
}

/// Sends the `len` bytes at `data` as a request, waiting up to
/// `timeout_ns` for a free call slot if all are outstanding; `*call` is
/// the call's id, for `shmbus_client_wait` (or `shmbus_client_cancel`).
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_FULL` (`SHMBUS_E_FULL`: no slot came
/// free in time); `SHMBUS_ERROR` (`SHMBUS_E_TOO_LONG`, a NULL argument).
///
/// # Safety
/// `client` is NULL or a live client; `data` valid for `len` bytes;
/// `call` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_client_send(
    client: *mut ShmbusClient,
    data: *const c_void,
    len: usize,
    call: *mut u64,
    timeout_ns: i64,
) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let c = unsafe { handle(client, "client") }?;
        // SAFETY: as above.
        let data = unsafe { bytes(data, len, "data") }?;
        // SAFETY: as above.
        let mut id = unsafe { out_ptr(call, "call") }?;
        let pending = c
            .client
            .send(data, wait_of(timeout_ns))
            .map_err(send_failed)?;
        id.set(c.track(pending));
        Ok(Status::SHMBUS_OK)
    })
}

/// Waits for `call`'s response as `wait` says, into `buf` (`cap` bytes);
/// a response too long for it is kept under `id`.
fn wait_call(
    c: &mut ShmbusClient,
    id: u64,
    buf: &mut [std::mem::MaybeUninit<u8>],
    len: *mut usize,
    wait: Wait,
) -> Outcome {
    let cap = buf.len();
    if let Some(i) = c.held.iter().position(|(h, _)| *h == id) {
        let need = c.held[i].1.len();
        if need > cap {
            return too_small(len, cap, need);
        }
        let (_, bytes) = c.held.swap_remove(i);
        copy_into(buf, &bytes);
        // SAFETY: `len` was read by `capacity_in`: not NULL, writable.
        unsafe { put(len, need) };
        return Ok(Status::SHMBUS_MESSAGE);
    }
    let i = c
        .calls
        .iter()
        .position(|(p, _)| *p == id)
        .ok_or_else(|| ShmbusClient::unknown(id))?;
    let (_, pending) = c.calls.swap_remove(i);
    let got = c.client.wait_with(pending, wait, |bytes| {
        if bytes.len() <= cap {
            copy_into(buf, bytes);
            Ok(bytes.len())
        } else {
            Err(bytes.to_vec())
        }
    });
    match got.map_err(call_failed)? {
        Ok(n) => {
            // SAFETY: as above.
            unsafe { put(len, n) };
            Ok(Status::SHMBUS_MESSAGE)
        }
        Err(bytes) => {
            let need = bytes.len();
            c.held.push((id, bytes));
            too_small(len, cap, need)
        }
    }
}

/// `SHMBUS_TOO_SMALL`: the response (kept) needs `need` bytes.
fn too_small(len: *mut usize, cap: usize, need: usize) -> Outcome {
    // SAFETY: `len` was read by `capacity_in`: not NULL, writable.
    unsafe { put(len, need) };
    Err(Failure::new(
        Status::SHMBUS_TOO_SMALL,
        shmbus_core::ErrorKind::TooLong,
        format!(
            "the buffer holds {cap} bytes, the response is {need}: it is kept for \
             the next wait on this call"
        ),
    ))
}

/// Waits up to `timeout_ns` for the outcome of `call` (an id from
/// `shmbus_client_send`) and copies its response into `buf`, which holds
/// `*len` bytes; `*len` is then the response's length. A wait that ends
/// without a response ends the call (a response that comes later is
/// dropped); to look without ending it, `shmbus_client_is_answered`.
///
/// Statuses: `SHMBUS_MESSAGE`; `SHMBUS_TOO_SMALL` (`*len` is the length
/// needed; the response is kept: wait on the call again with a buffer
/// that long); `SHMBUS_TIMED_OUT`, `SHMBUS_PEER_GONE`, `SHMBUS_NO_SERVER`,
/// `SHMBUS_REFUSED` (the outcomes, see above); `SHMBUS_ERROR`
/// (`SHMBUS_E_CORRUPT`: a response longer than the service's largest;
/// `SHMBUS_E_INVALID_ARGUMENT`: no such call outstanding, a NULL
/// argument). Every status but `SHMBUS_MESSAGE` sets the message and
/// code; every one but `SHMBUS_TOO_SMALL` ends the call.
///
/// # Safety
/// `client` is NULL or a live client; `len` NULL or an initialised,
/// writable `size_t`; `buf` valid for writes of `*len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_client_wait(
    client: *mut ShmbusClient,
    call: u64,
    buf: *mut c_void,
    len: *mut usize,
    timeout_ns: i64,
) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let c = unsafe { handle(client, "client") }?;
        // SAFETY: as above.
        let cap = unsafe { capacity_in(len) }?;
        // SAFETY: as above.
        let out = unsafe { buffer(buf, cap, "buf") }?;
        wait_call(c, call, out, len, wait_of(timeout_ns))
    })
}

/// Sends the `len` bytes at `data` and waits for the response into `buf`
/// (`*resp_len` bytes in, the response's length out), all within
/// `timeout_ns`: `shmbus_client_send` then `shmbus_client_wait`.
///
/// Statuses: as `shmbus_client_send`'s and `shmbus_client_wait`'s. On
/// `SHMBUS_TOO_SMALL` the response is kept under the call's id, written
/// to `*call` (NULL: the response is dropped).
///
/// # Safety
/// `client` is NULL or a live client; `data` valid for `len` bytes;
/// `resp_len` NULL or an initialised, writable `size_t`; `buf` valid for
/// writes of `*resp_len` bytes; `call` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_client_call(
    client: *mut ShmbusClient,
    data: *const c_void,
    len: usize,
    buf: *mut c_void,
    resp_len: *mut usize,
    call: *mut u64,
    timeout_ns: i64,
) -> Status {
    entry(|| {
        // Every argument is checked before anything is sent.
        // SAFETY: each pointer as the contract says.
        let c = unsafe { handle(client, "client") }?;
        // SAFETY: as above.
        let data = unsafe { bytes(data, len, "data") }?;
        // SAFETY: as above.
        let cap = unsafe { capacity_in(resp_len) }?;
        // SAFETY: as above.
        let out = unsafe { buffer(buf, cap, "buf") }?;
        let wait = wait_of(timeout_ns);
        let deadline = match wait {
            Wait::For(d) => Instant::now().checked_add(d),
            _ => None,
        };
        let pending = c.client.send(data, wait).map_err(send_failed)?;
        let id = c.track(pending);
        let rest = match (wait, deadline) {
            (Wait::For(_), Some(d)) => Wait::For(
                d.saturating_duration_since(Instant::now())
                    .max(Duration::from_nanos(1)),
            ),
            (wait, _) => wait,
        };
        let got = wait_call(c, id, out, resp_len, rest);
        if got
            .as_ref()
            .is_err_and(|f| f.status == Status::SHMBUS_TOO_SMALL)
        {
            if call.is_null() {
                c.held.retain(|(h, _)| *h != id);
            } else {
                // SAFETY: not NULL, writable by the contract.
                unsafe { put(call, id) };
            }
        }
        got
    })
}

/// Gives up on `call` without waiting: its response, if one comes, is
/// dropped; its slot comes back once no server holds it.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (`SHMBUS_E_INVALID_ARGUMENT`: no
/// such call outstanding, a NULL client).
///
/// # Safety
/// `client` is NULL or a live client.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_client_cancel(client: *mut ShmbusClient, call: u64) -> Status {
    entry(|| {
        // SAFETY: NULL or live, as the contract says.
        let c = unsafe { handle(client, "client") }?;
        if let Some(i) = c.held.iter().position(|(h, _)| *h == call) {
            c.held.swap_remove(i);
            return Ok(Status::SHMBUS_OK);
        }
        let i = c
            .calls
            .iter()
            .position(|(p, _)| *p == call)
            .ok_or_else(|| ShmbusClient::unknown(call))?;
        let (_, pending) = c.calls.swap_remove(i);
        c.client.cancel(pending);
        Ok(Status::SHMBUS_OK)
    })
}

/// Whether `call` has its answer already (`*answered`: a response or a
/// refusal), so that `shmbus_client_wait` returns at once.
///
/// Statuses: `SHMBUS_OK`; `SHMBUS_ERROR` (`SHMBUS_E_INVALID_ARGUMENT`: no
/// such call outstanding, a NULL argument).
///
/// # Safety
/// `client` is NULL or a live client; `answered` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_client_is_answered(
    client: *mut ShmbusClient,
    call: u64,
    answered: *mut bool,
) -> Status {
    entry(|| {
        // SAFETY: each pointer as the contract says.
        let c = unsafe { handle(client, "client") }?;
        // SAFETY: as above.
        let mut out = unsafe { out_ptr(answered, "answered") }?;
        let yes = if c.held.iter().any(|(h, _)| *h == call) {
            true
        } else {
            let (_, pending) = c
                .calls
                .iter()
                .find(|(p, _)| *p == call)
                .ok_or_else(|| ShmbusClient::unknown(call))?;
            c.client.is_answered(pending)
        };
        out.set(yes);
        Ok(Status::SHMBUS_OK)
    })
}

/// How many calls of this client are outstanding (`*count`): sent and not
/// yet waited for, or given up on and not yet given back by their server.
///
/// # Safety
/// `client` is NULL or a live client; `count` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_client_outstanding(
    client: *mut ShmbusClient,
    count: *mut u32,
) -> Status {
    // SAFETY: as the contract says.
    unsafe { query(client, "client", count, "count", |c| c.client.outstanding()) }
}

/// Frees the client (NULL: nothing): its outstanding calls are given up
/// (their responses, if any come, are dropped).
///
/// # Safety
/// `client` is NULL or a live client, not used again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn shmbus_client_close(client: *mut ShmbusClient) {
    // SAFETY: NULL or a live handle, by the contract.
    entry_void(|| unsafe { take_back(client) });
}
