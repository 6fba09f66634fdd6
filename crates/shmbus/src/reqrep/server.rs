//! [`Server`]: takes requests from a service's clients and answers them;
//! [`Request`], one taken request, answered in place or dropped.

use std::marker::PhantomData;
use std::time::Instant;

use super::RespondError;
use super::table::Service;
use crate::bus::Payload;
use crate::mem::{DefaultRegion, Region};
use crate::sync::Ordering;
use crate::wait::{self, Wait, WaitStrategy};
use crate::wire::Message;
use crate::wire::service::{server, state};

/// Answers a service's requests: each request is taken by exactly one
/// live server, and each taken request gets exactly one answer (its
/// response, or `Refused` if its [`Request`] is dropped unanswered).
///
/// `Req`/`Resp` are a [`Message`] type (one value each way) or `[u8]`
/// (bytes up to the service's largest request or response).
///
/// # Examples
/// ```
/// use shmbus::{OpenOptions, Wait, reqrep::{self, Client, Server}};
/// # let name = format!("/dev/shm/shmbus-doc-rr-server-{}", std::process::id());
/// let server = Server::<u64, u64>::create(&name, &reqrep::Options::new(4))?;
/// let mut client = Client::<u64, u64>::attach(&name, &OpenOptions::default())?;
/// let call = client.send(&20, Wait::Never)?;
/// let request = server.recv(Wait::Never).expect("a request");
/// let n = request.get();
/// request.respond(&(n + 1))?;
/// assert_eq!(client.wait(call, Wait::Never)?, 21);
/// # drop((server, client));
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Server<Req: ?Sized + Payload, Resp: ?Sized + Payload, R: Region = DefaultRegion> {
    pub(crate) service: Service<R>,
    /// Our server entry.
    pub(crate) entry: u32,
    /// The client entry the next look starts from (round robin). An
    /// atomic (Relaxed: a hint, not a protocol word) so that a server may
    /// be shared by threads, each taking requests.
    next: std::sync::atomic::AtomicU32,
    strategy: WaitStrategy,
    _types: PhantomData<fn(&Req, &Resp)>,
}

impl<Req: ?Sized + Payload, Resp: ?Sized + Payload, R: Region> std::fmt::Debug
    for Server<Req, Resp, R>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("entry", &self.entry)
            .field("geometry", &self.service.geo)
            .finish_non_exhaustive()
    }
}

impl<Req: ?Sized + Payload, Resp: ?Sized + Payload, R: Region> Server<Req, Resp, R> {
    pub(crate) fn from_service(service: Service<R>, entry: u32, strategy: WaitStrategy) -> Self {
        Server {
            service,
            entry,
            next: std::sync::atomic::AtomicU32::new(0),
            strategy,
            _types: PhantomData,
        }
    }

    /// The next request, waiting as `wait` says; `None` if none came.
    /// Clients are served round robin, so none starves. A server may
    /// hold several requests at once and answer them in any order.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Wait, reqrep::{self, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-recv-{}", std::process::id());
    /// let server = Server::<u64, u64>::create(&name, &reqrep::Options::new(4))?;
    /// assert!(server.recv(Wait::Never).is_none());
    /// # drop(server);
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn recv(&self, wait: Wait) -> Option<Request<'_, Req, Resp, R>> {
        let deadline = wait.deadline();
        let mut backoff = wait::Backoff::new(self.strategy, deadline);
        let taken = loop {
            if let Some(t) = self.take() {
                break t;
            }
            if wait == Wait::Never {
                return None;
            }
            match backoff.next() {
                wait::Step::Spin => crate::sync::spin_loop(),
                wait::Step::Yield => crate::sync::yield_now(),
                wait::Step::Sleep(left) => {
                    let service = &self.service;
                    service.clean_summary();
                    wait::sleep(service.work_bell(), left, || !service.has_work());
                }
                wait::Step::TimedOut => return None,
            }
        };
        Some(self.request(taken))
    }

    /// The request just taken: client, slot, generation, length.
    pub(super) fn request(&self, taken: (u32, u32, u32, u32)) -> Request<'_, Req, Resp, R> {
        let (client, slot, generation, len) = taken;
        Request {
            server: self,
            client,
            slot,
            generation,
            len,
            taken: Instant::now(),
            answered: false,
            _types: PhantomData,
        }
    }

    /// One look: a request taken whose length this server can read (one
    /// that is not is answered `Refused` at once: a hostile or broken
    /// client's).
    pub(super) fn take(&self) -> Option<(u32, u32, u32, u32)> {
        let clients = self.service.geo.clients;
        // Bounded: each refused request is one less posted; at most every
        // slot of the service once per look.
        for _ in 0..=self.service.geo.slot_count() {
            let from = self.next.load(std::sync::atomic::Ordering::Relaxed);
            let (c, k, generation) = self.service.take(self.entry, from)?;
            self.next
                .store((c + 1) % clients, std::sync::atomic::Ordering::Relaxed);
            let len = self.service.request_len(c, k).load(Ordering::Relaxed);
            self.count(server::TAKEN, 1);
            if request_fits::<Req>(len, self.service.geo.request) {
                return Some((c, k, generation, len));
            }
            let _ = self
                .service
                .answer(self.entry, c, k, generation, state::REFUSED);
            self.count(server::REFUSED, 1);
        }
        None
    }

    /// Adds `n` to one of our line's counters (ours alone: a load and a
    /// store).
    fn count(&self, field: usize, n: u64) {
        let w = self.service.server_count(self.entry, field);
        w.store(w.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
    }

    /// The largest request this service carries, in bytes.
    ///
    /// # Examples
    /// ```
    /// use shmbus::reqrep::{self, Server};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-max-{}", std::process::id());
    /// let server = Server::<[u8], [u8]>::create(&name, &reqrep::Options::new(1).request_size(100).response_size(10))?;
    /// assert_eq!((server.max_request(), server.max_response()), (100, 10));
    /// # drop(server);
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_request(&self) -> usize {
        self.service.geo.request as usize
    }

    /// The largest response this service carries, in bytes.
    ///
    /// # Examples
    /// ```
    /// use shmbus::reqrep::{self, Server};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-maxr-{}", std::process::id());
    /// let server = Server::<u32, u64>::create(&name, &reqrep::Options::new(1))?;
    /// assert_eq!((server.max_request(), server.max_response()), (4, 8));
    /// # drop(server);
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_response(&self) -> usize {
        self.service.geo.response as usize
    }

    /// How this server waits for requests from now on.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{WaitStrategy, reqrep::{self, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-strategy-{}", std::process::id());
    /// let mut server = Server::<u64, u64>::create(&name, &reqrep::Options::new(1))?;
    /// server.set_wait_strategy(WaitStrategy::BusySpin);
    /// # drop(server);
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_wait_strategy(&mut self, strategy: WaitStrategy) {
        self.strategy = strategy;
    }
}

/// Whether a request of `len` bytes is one `Req` reads: a typed request
/// exactly its type's size, raw bytes up to the service's largest.
fn request_fits<Req: ?Sized + Payload>(len: u32, max: u32) -> bool {
    if Req::is_raw() {
        len <= max
    } else {
        len == max
    }
}

/// A request this server took: read it in place, then answer it with
/// [`respond`](Request::respond) (or in place with
/// [`respond_with`](Request::respond_with)). Dropped unanswered, it is
/// answered `Refused`, so its caller never waits for it in vain.
///
/// # Examples
/// ```
/// use shmbus::{OpenOptions, Wait, reqrep::{self, CallError, Client, Server}};
/// # let name = format!("/dev/shm/shmbus-doc-rr-request-{}", std::process::id());
/// let server = Server::<u64, u64>::create(&name, &reqrep::Options::new(4))?;
/// let mut client = Client::<u64, u64>::attach(&name, &OpenOptions::default())?;
/// let call = client.send(&1, Wait::Never)?;
/// drop(server.recv(Wait::Never).expect("a request")); // unanswered
/// assert!(matches!(client.wait(call, Wait::Never), Err(CallError::Refused { .. })));
/// # drop((server, client));
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a request dropped unanswered is answered Refused"]
pub struct Request<'s, Req: ?Sized + Payload, Resp: ?Sized + Payload, R: Region = DefaultRegion> {
    server: &'s Server<Req, Resp, R>,
    client: u32,
    slot: u32,
    generation: u32,
    len: u32,
    taken: Instant,
    answered: bool,
    _types: PhantomData<fn(&Req, &Resp)>,
}

impl<Req: ?Sized + Payload, Resp: ?Sized + Payload, R: Region> std::fmt::Debug
    for Request<'_, Req, Resp, R>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Request")
            .field("client", &self.client)
            .field("slot", &self.slot)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl<Req: ?Sized + Payload, Resp: ?Sized + Payload, R: Region> Request<'_, Req, Resp, R> {
    /// The client entry that sent it.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, reqrep::{self, Client, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-client-{}", std::process::id());
    /// let server = Server::<u64, u64>::create(&name, &reqrep::Options::new(4))?;
    /// let mut client = Client::<u64, u64>::attach(&name, &OpenOptions::default())?;
    /// let _call = client.send(&1, Wait::Never)?;
    /// assert_eq!(server.recv(Wait::Never).expect("a request").client(), client.entry());
    /// # drop((server, client));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn client(&self) -> u32 {
        self.client
    }

    /// The request's bytes, in place in the service (valid until it is
    /// answered). A typed request's are its value's.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, reqrep::{self, Client, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-bytes-{}", std::process::id());
    /// let opts = reqrep::Options::new(4).request_size(64).response_size(64);
    /// let server = Server::<[u8], [u8]>::create(&name, &opts)?;
    /// let mut client = Client::<[u8], [u8]>::attach(&name, &OpenOptions::default())?;
    /// let _call = client.send(b"ping", Wait::Never)?;
    /// assert_eq!(server.recv(Wait::Never).expect("a request").bytes(), b"ping");
    /// # drop((server, client));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(not(loom))]
    pub fn bytes(&self) -> &[u8] {
        let service = &self.server.service;
        let at = service.request_at(self.client, self.slot);
        match service.region.raw(at, self.len as usize) {
            // SAFETY: `take`'s Acquire CAS handed us the slot's request
            // bytes (`len` of them, checked against the slot's size): the
            // client writes them only while the slot is `FREE`, which it
            // is not again before we answer, and we answer only by
            // consuming this borrow's owner (`respond*`, drop).
            Some(p) => unsafe { std::slice::from_raw_parts(p.as_ptr(), self.len as usize) },
            None => &[],
        }
    }

    /// Copies the request's bytes out (any region, loom's included).
    fn copy_request(&self, dst: &mut [u8]) {
        let at = self.server.service.request_at(self.client, self.slot);
        // SAFETY: as `bytes`: the request is ours to read until we answer.
        unsafe { self.server.service.region.copy_out(at, dst) };
    }

    /// Answers with `len` bytes written in place by `write` (the whole
    /// response area's first `len` bytes, zeroed or not: `write` sets
    /// them all).
    ///
    /// # Errors
    /// [`RespondError::TooLong`] if `len` is over the service's largest
    /// response (nothing sent; the request is answered `Refused` when
    /// this is dropped); [`RespondError::Late`] if the caller gave up
    /// meanwhile (dropped and counted).
    #[cfg(not(loom))]
    fn respond_in_place(
        mut self,
        len: usize,
        write: impl FnOnce(&mut [u8]),
    ) -> Result<(), RespondError> {
        let service = &self.server.service;
        let max = service.geo.response as usize;
        if len > max {
            return Err(RespondError::TooLong { len, max });
        }
        let at = service.response_at(self.client, self.slot);
        let p = service
            .region
            .raw(at, len)
            .expect("plain memory outside loom");
        // SAFETY: the response area is ours from `take` until our answer
        // (`Service::answer`'s Release CAS hands it to the client).
        write(unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), len) });
        self.finish(len)
    }

    /// Answers with `bytes` (copied into the slot).
    fn respond_copy(mut self, bytes: &[u8]) -> Result<(), RespondError> {
        let service = &self.server.service;
        let max = service.geo.response as usize;
        if bytes.len() > max {
            return Err(RespondError::TooLong {
                len: bytes.len(),
                max,
            });
        }
        let at = service.response_at(self.client, self.slot);
        // SAFETY: the response area is ours until our answer, as above.
        unsafe { service.region.copy_in(at, bytes) };
        self.finish(bytes.len())
    }

    /// The answer itself: the length, then the `DONE` CAS.
    fn finish(&mut self, len: usize) -> Result<(), RespondError> {
        self.answered = true;
        let server = self.server;
        server
            .service
            .response_len(self.client, self.slot)
            .store(len as u32, Ordering::Relaxed);
        let result = server.service.answer(
            server.entry,
            self.client,
            self.slot,
            self.generation,
            state::DONE,
        );
        match result {
            Ok(()) => {
                let ns = u64::try_from(self.taken.elapsed().as_nanos()).unwrap_or(u64::MAX);
                server.count(server::ANSWERED, 1);
                server.count(server::LATENCY_SUM_NS, ns);
                let max = server
                    .service
                    .server_count(server.entry, server::LATENCY_MAX_NS);
                if ns > max.load(Ordering::Relaxed) {
                    max.store(ns, Ordering::Relaxed);
                }
                Ok(())
            }
            Err(()) => {
                server.count(server::LATE, 1);
                Err(RespondError::Late)
            }
        }
    }
}

impl<Req: Message, Resp: ?Sized + Payload, R: Region> Request<'_, Req, Resp, R> {
    /// The request's value.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, reqrep::{self, Client, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-get-{}", std::process::id());
    /// let server = Server::<u64, u64>::create(&name, &reqrep::Options::new(4))?;
    /// let mut client = Client::<u64, u64>::attach(&name, &OpenOptions::default())?;
    /// let _call = client.send(&7, Wait::Never)?;
    /// assert_eq!(server.recv(Wait::Never).expect("a request").get(), 7);
    /// # drop((server, client));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn get(&self) -> Req {
        let mut value = Req::zeroed();
        self.copy_request(bytemuck::bytes_of_mut(&mut value));
        value
    }
}

impl<Req: ?Sized + Payload, Resp: Message, R: Region> Request<'_, Req, Resp, R> {
    /// Answers with `response`.
    ///
    /// # Errors
    /// [`RespondError::Late`] if the caller gave up meanwhile: the
    /// response is dropped and counted.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, reqrep::{self, Client, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-respond-{}", std::process::id());
    /// let server = Server::<u64, u64>::create(&name, &reqrep::Options::new(4))?;
    /// let mut client = Client::<u64, u64>::attach(&name, &OpenOptions::default())?;
    /// let call = client.send(&7, Wait::Never)?;
    /// server.recv(Wait::Never).expect("a request").respond(&8)?;
    /// assert_eq!(client.wait(call, Wait::Never)?, 8);
    /// # drop((server, client));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn respond(self, response: &Resp) -> Result<(), RespondError> {
        self.respond_copy(bytemuck::bytes_of(response))
    }
}

impl<Req: ?Sized + Payload, R: Region> Request<'_, Req, [u8], R> {
    /// Answers with `response`'s bytes.
    ///
    /// # Errors
    /// [`RespondError::TooLong`] over the service's largest response
    /// (nothing sent: dropped, the request is answered `Refused`);
    /// [`RespondError::Late`] if the caller gave up meanwhile.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, reqrep::{self, Client, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-respondb-{}", std::process::id());
    /// let opts = reqrep::Options::new(4).request_size(64).response_size(64);
    /// let server = Server::<[u8], [u8]>::create(&name, &opts)?;
    /// let mut client = Client::<[u8], [u8]>::attach(&name, &OpenOptions::default())?;
    /// let call = client.send(b"ping", Wait::Never)?;
    /// server.recv(Wait::Never).expect("a request").respond(b"pong")?;
    /// let mut out = Vec::new();
    /// client.wait_into(call, &mut out, Wait::Never)?;
    /// assert_eq!(out, b"pong");
    /// # drop((server, client));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn respond(self, response: &[u8]) -> Result<(), RespondError> {
        self.respond_copy(response)
    }

    /// Answers with `len` bytes that `write` writes in place, straight
    /// into the slot the client reads: no copy of a large response.
    ///
    /// # Errors
    /// As [`respond`](Request::respond).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, reqrep::{self, Client, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-respondw-{}", std::process::id());
    /// let opts = reqrep::Options::new(4).request_size(8).response_size(1 << 20);
    /// let server = Server::<[u8], [u8]>::create(&name, &opts)?;
    /// let mut client = Client::<[u8], [u8]>::attach(&name, &OpenOptions::default())?;
    /// let call = client.send(b"big", Wait::Never)?;
    /// server.recv(Wait::Never).expect("a request").respond_with(1 << 20, |out| out.fill(7))?;
    /// let sum = client.wait_with(call, Wait::Never, |bytes| bytes.iter().map(|&b| b as u64).sum::<u64>())?;
    /// assert_eq!(sum, 7 << 20);
    /// # drop((server, client));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(not(loom))]
    pub fn respond_with(
        self,
        len: usize,
        write: impl FnOnce(&mut [u8]),
    ) -> Result<(), RespondError> {
        self.respond_in_place(len, write)
    }
}

impl<Req: ?Sized + Payload, Resp: ?Sized + Payload, R: Region> Drop for Request<'_, Req, Resp, R> {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        let server = self.server;
        if server
            .service
            .answer(
                server.entry,
                self.client,
                self.slot,
                self.generation,
                state::REFUSED,
            )
            .is_ok()
        {
            server.count(server::REFUSED, 1);
        }
    }
}
