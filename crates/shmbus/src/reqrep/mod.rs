//! Request-response: a named service whose [`Client`]s send requests and
//! get exactly one outcome each, and whose [`Server`]s take each request
//! once and answer it. Like the bus, each side is generic over its
//! payloads: a [`Message`](crate::Message) type, or `[u8]` up to the
//! service's largest request and response.
//!
//! Files: `table.rs` (the protocol over a region: post, take, answer,
//! withdraw, give back), [`Server`] and [`Request`] (`server.rs`),
//! [`Client`] and [`Pending`] (`client.rs`), [`Options`], the errors.
//!
//! # Invariants (docs/LAYOUT.md §25 has the bytes)
//! - Each client entry `c` owns `slots` call slots; slot `(c, k)` holds one
//!   call at a time: its request area (written by the client while the
//!   slot is `FREE`), its response area (written by the server that took
//!   it while `TAKEN`), and a state word: phase, the server entry that
//!   took it, and a generation that every return to `FREE` advances.
//! - Phases and who moves them (every move a CAS from the exact word
//!   seen, but `post`, `release` and a server's give-back, which are
//!   stores by the slot's sole owner):
//!   - client: `FREE → POSTED` (store, Release, after the request's
//!     bytes), `POSTED → FREE` (withdraw: no server took it), `TAKEN →
//!     CANCELLED` (gave up on a taken call), `DONE`/`REFUSED → FREE`
//!     (read the answer; store), and `TAKEN`/`CANCELLED → FREE` of a
//!     server whose lock is free (dead);
//!   - server: `POSTED → TAKEN` (take: Acquire, which makes the request's
//!     bytes its own), `TAKEN → DONE`/`REFUSED` (answer: Release, after the
//!     response's bytes), and `CANCELLED → FREE` (store, Release: gives a
//!     given-up slot back once it is done with its bytes).
//!
//!   So a request is taken by one server at most (one CAS wins), and a
//!   call ends once: its answer and its withdrawal are CASes from the
//!   same `TAKEN` word, and the loser learns it (a late server's answer
//!   fails and is counted on the client's line; a late withdrawal finds
//!   the answer and returns it). A generation that moved (a hostile
//!   write, or a slot given back) fails every stale CAS.
//! - Finding work: a client sets bit `k` of its `POSTED` word after it
//!   posts, then bit `c` of the `SUMMARY` if it is not set already, then
//!   rings the work bell. A server scans the summary from the client
//!   after the last it served (round robin: none starves) and, under each
//!   set bit, the slots whose posted bit is set, taking one still
//!   `POSTED`; it clears a posted bit only after its take CAS won (until
//!   it answers, the client cannot post in that slot again, so it never
//!   clears a newer post's bit). Summary bits are cleared only by a server about to
//!   sleep, for clients with nothing `POSTED` (and set again if a post
//!   raced the clear: the asymmetric barrier pair of `wait`, light on the
//!   client's side, a Dekker), so a busy service
//!   writes neither word from the server's side: no line is won back by
//!   the client on every call.
//! - Liveness by lock, not pid: each server and client holds an
//!   exclusive OFD lock on its entry's byte (servers `64 + s`, clients
//!   `128 + c`). A waiting client probes the lock of the server that took
//!   its call every [`PEER_CHECK`] (a system call, never on a call that
//!   is answered sooner): free, the call ends `ServerGone` and the slot is
//!   the client's again. A call no server took while no server lock is
//!   held ends `NoServer`. A client that takes over a dead one's entry
//!   withdraws its untaken requests, drops (and counts late) its answers,
//!   and gives up on calls live servers hold.
//! - Waking: idle servers sleep on the work bell, a waiting client on its
//!   entry's bell, with the futex protocol of `wait`; no system call
//!   while the other side is awake. A sleeping client wakes at least
//!   every `PEER_CHECK`, since a server that dies rings no bell.
//! - Everything read from the file is checked before use: a request
//!   length over the largest (or not a typed request's size) is answered
//!   `Refused`; a response length likewise is `BadResponse`; summary bits
//!   past the last client and posted bits past the last slot are
//!   ignored; a server index past the last reads as pid 0. Every loop is
//!   bounded by the geometry or by the caller's wait.
//!
//! The protocol is a per-client slot array with ownership moved by one
//! state word per slot, as in iceoryx2's request-response and Aeron's
//! claimed-buffer handoff; the summary bitmap is a two-level ready set
//! as in the Linux scheduler's priority bitmaps.
//!
//! ```no_run
//! use std::time::Duration;
//! use shmbus::{OpenOptions, Wait, reqrep::{self, Client, Server}};
//!
//! // One process serves:
//! let server = Server::<u64, u64>::create("squares", &reqrep::Options::new(16))?;
//! while let Some(request) = server.recv(Wait::Forever) {
//!     let n = request.get();
//!     request.respond(&(n * n))?;
//! }
//!
//! // Any other calls:
//! let mut client = Client::<u64, u64>::attach("squares", &OpenOptions::default())?;
//! assert_eq!(client.call(&12, Wait::For(Duration::from_secs(1)))?, 144);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[cfg(not(loom))]
mod aio;
mod client;
mod error;
mod options;
mod server;
pub(crate) mod table;
#[cfg(all(test, not(loom)))]
mod tests;

use std::time::Duration;

pub use client::{Client, Pending, RequestBytes};
pub use error::{AttachError, CallError, RespondError, SendError, Side};
pub use options::Options;
pub use server::{Request, Server};

use crate::bus::Payload;
use crate::mem::HeapRegion;
use crate::mem::heap::HEAP_PAGE;
use crate::wire::{GeometryError, Header, ServiceGeometry, TypeFingerprint};
use table::Service;

/// How often a waiting client checks that the server holding its call
/// still lives (and, for a call no server took, that any does): the bound
/// on how late a `ServerGone` or `NoServer` comes, scheduling aside.
///
/// # Examples
/// ```
/// assert_eq!(shmbus::reqrep::PEER_CHECK, std::time::Duration::from_millis(10));
/// ```
pub const PEER_CHECK: Duration = Duration::from_millis(10);

/// The header of a new service of `opts`'s shape carrying `Req` and
/// `Resp`.
pub(crate) fn header<Req: ?Sized + Payload, Resp: ?Sized + Payload>(
    opts: &Options,
    page: u64,
) -> Result<Header, GeometryError> {
    let raw = |e| match e {
        GeometryError::RawNeedsMsgSize => GeometryError::RawNeedsPayloadSizes,
        e => e,
    };
    let request: TypeFingerprint = Req::fingerprint(opts.request_size, None).map_err(raw)?;
    let response: TypeFingerprint = Resp::fingerprint(opts.response_size, None).map_err(raw)?;
    let geo = ServiceGeometry::new(
        opts.clients,
        opts.slots,
        opts.servers,
        request.size,
        response.size,
    )?;
    Header::service(&geo, request, response, page)
}

#[doc(hidden)] // reached through `internals`
/// A server and a client of a service on the heap (for threads, loom and
/// Miri): server entry 0, client entry 0.
pub type HeapService<Req, Resp> = (
    Server<Req, Resp, std::sync::Arc<HeapRegion>>,
    Client<Req, Resp, std::sync::Arc<HeapRegion>>,
);

#[doc(hidden)] // reached through `internals`
/// A service on the heap: its first server and first client.
pub fn on_heap<Req: ?Sized + Payload, Resp: ?Sized + Payload>(
    opts: &Options,
) -> Result<HeapService<Req, Resp>, crate::error::CreateError> {
    let header =
        header::<Req, Resp>(opts, HEAP_PAGE).map_err(crate::error::CreateError::InvalidGeometry)?;
    let region = std::sync::Arc::new(HeapRegion::new(header.total_len as usize));
    header.write(&*region);
    Header::publish_magic(&*region);
    let server = Server::from_service(Service::new(region.clone(), &header), 0, opts.wait);
    let client = Client::from_service(Service::new(region, &header), 0, opts.wait);
    Ok((server, client))
}

#[cfg(not(loom))]
mod shm {
    use super::*;
    use crate::error::{CreateError, OpenError};
    use crate::mem::ShmRegion;
    use crate::options::OpenOptions;
    use crate::segment::{Role, create_region, layout_page, open_checked, take_role};
    use crate::wire::Kind;
    use crate::wire::service::{client, control, server};
    use table::{CLIENT_LOCK, SERVER_LOCK};

    /// Opens service `name` carrying `Req` and `Resp` (a raw side takes
    /// any type of its own side).
    fn open<Req: ?Sized + Payload, Resp: ?Sized + Payload>(
        name: &str,
        opts: &OpenOptions,
    ) -> Result<(ShmRegion, Header), OpenError> {
        let request = Req::expected(opts.message.as_ref());
        let (region, header) =
            open_checked(name, Role::Publisher, Kind::Service, request.as_ref(), opts)?;
        if let Some(expected) = Resp::expected(None) {
            let found = header
                .key
                .clone()
                .unwrap_or_else(|| TypeFingerprint::new("", 0, 0));
            if found.size != expected.size
                || found.align != expected.align
                || found.name_hash != expected.name_hash
            {
                return Err(OpenError::TypeMismatch { found, expected });
            }
        }
        Ok((region, header))
    }

    /// Takes the first free entry of `side`: its lock, then its pid.
    fn take_entry(region: &ShmRegion, header: &Header, side: Side) -> Result<u32, AttachError> {
        let geo = header
            .service_geometry()
            .map_err(|e| OpenError::InvalidGeometry(e.to_string()))?;
        let control_at = header.control_offset as usize;
        let (entries, lock, pid_at): (u32, u64, Box<dyn Fn(u32) -> usize>) = match side {
            Side::Server => (
                geo.servers,
                SERVER_LOCK,
                Box::new(move |s| {
                    control_at + control::SERVERS + s as usize * crate::wire::LINE + server::PID
                }),
            ),
            Side::Client => (
                geo.clients,
                CLIENT_LOCK,
                Box::new(move |c| {
                    control_at + geo.clients_at() + c as usize * client::BYTES + client::PID
                }),
            ),
        };
        (0..entries)
            .find(|&e| take_role(region, lock + u64::from(e), pid_at(e)).is_ok())
            .ok_or(AttachError::NoEntry { side, entries })
    }

    impl<Req: ?Sized + Payload, Resp: ?Sized + Payload> Server<Req, Resp, ShmRegion> {
        /// Creates service `name` (a bare name lives in /dev/shm) and
        /// serves it as its first server.
        ///
        /// # Errors
        /// As a bus's create ([`CreateError`]: the name taken, the
        /// directory, ...), and [`CreateError::InvalidGeometry`] for a
        /// shape out of bounds or a raw side without its size.
        ///
        /// # Examples
        /// ```
        /// use shmbus::reqrep::{self, Server};
        /// # let name = format!("/dev/shm/shmbus-doc-rr-create-{}", std::process::id());
        /// let server = Server::<u64, [u8]>::create(&name, &reqrep::Options::new(4).response_size(256))?;
        /// assert_eq!(server.max_response(), 256);
        /// # drop(server);
        /// # shmbus::remove(&name)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn create(name: &str, opts: &Options) -> Result<Self, CreateError> {
            let (page, huge) = layout_page(name, &opts.file)?;
            let mut header =
                header::<Req, Resp>(opts, page).map_err(CreateError::InvalidGeometry)?;
            header.flags |= huge;
            let region = create_region(name, &header, &opts.file, |_| {})?;
            // Entry 0 is free in a file just made; `create_region` removes
            // nothing once the magic is out, so a failure here is a lock
            // error the creator cannot have: report it as I/O.
            let entry = take_entry(&region, &header, Side::Server).map_err(|e| {
                CreateError::InvalidGeometry(GeometryError::Service {
                    what: "servers",
                    found: 0,
                    max: match e {
                        AttachError::NoEntry { entries, .. } => entries,
                        _ => 0,
                    },
                })
            })?;
            Ok(Server::from_service(
                Service::new(region, &header),
                entry,
                opts.wait,
            ))
        }

        /// Serves an existing service beside its other servers, in the
        /// first free server entry. A typed side checks the service's
        /// type for it; a raw side takes any.
        ///
        /// # Errors
        /// [`AttachError::Open`] if it cannot be opened (another kind,
        /// other types); [`AttachError::NoEntry`] if every server entry
        /// is held by a live process.
        ///
        /// # Examples
        /// ```
        /// use shmbus::{OpenOptions, reqrep::{self, Server}};
        /// # let name = format!("/dev/shm/shmbus-doc-rr-sattach-{}", std::process::id());
        /// let first = Server::<u64, u64>::create(&name, &reqrep::Options::new(4))?;
        /// let second = Server::<u64, u64>::attach(&name, &OpenOptions::default())?;
        /// # drop((first, second));
        /// # shmbus::remove(&name)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn attach(name: &str, opts: &OpenOptions) -> Result<Self, AttachError> {
            let (region, header) = open::<Req, Resp>(name, opts)?;
            let entry = take_entry(&region, &header, Side::Server)?;
            Ok(Server::from_service(
                Service::new(region, &header),
                entry,
                opts.wait,
            ))
        }
    }

    impl<Req: ?Sized + Payload, Resp: ?Sized + Payload> Client<Req, Resp, ShmRegion> {
        /// Becomes a client of service `name`, in the first free client
        /// entry (taking over what a dead client left there). A typed
        /// side checks the service's type for it; a raw side takes any.
        ///
        /// # Errors
        /// [`AttachError::Open`] if it cannot be opened (another kind,
        /// other types); [`AttachError::NoEntry`] if every client entry
        /// is held by a live process.
        ///
        /// # Examples
        /// ```
        /// use shmbus::{OpenOptions, reqrep::{self, Client, Server}};
        /// # let name = format!("/dev/shm/shmbus-doc-rr-cattach-{}", std::process::id());
        /// let server = Server::<u64, u64>::create(&name, &reqrep::Options::new(4))?;
        /// let client = Client::<u64, u64>::attach(&name, &OpenOptions::default())?;
        /// # drop((server, client));
        /// # shmbus::remove(&name)?;
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn attach(name: &str, opts: &OpenOptions) -> Result<Self, AttachError> {
            let (region, header) = open::<Req, Resp>(name, opts)?;
            let entry = take_entry(&region, &header, Side::Client)?;
            Ok(Client::from_service(
                Service::new(region, &header),
                entry,
                opts.wait,
            ))
        }
    }
}
