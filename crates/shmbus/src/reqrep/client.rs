//! [`Client`]: sends requests to a service and waits for their
//! outcomes; [`Pending`], one request sent and not yet answered.

use std::marker::PhantomData;
use std::time::Instant;

use super::table::{Service, Withdrawn};
use super::{CallError, PEER_CHECK, SendError};
use crate::bus::Payload;
use crate::mem::{DefaultRegion, Region};
use crate::sync::Ordering;
use crate::sys::fork::Origin;
use crate::wait::{self, Wait, WaitStrategy};
use crate::wire::Message;
use crate::wire::service::{client, state};

/// Sends requests to a service's servers and waits for their outcomes:
/// for every request sent, exactly one of its response, `TimedOut`,
/// `ServerGone`, `NoServer` or `Refused` ([`CallError`]). Up to the
/// service's slots per client may be outstanding at once ([`send`]
/// then [`wait`]); responses are matched to their request whatever
/// order they come in.
///
/// [`send`]: Client::send
/// [`wait`]: Client::wait
///
/// # Examples
/// ```
/// use shmbus::{OpenOptions, Wait, reqrep::{self, Client, Server}};
/// # let name = format!("/dev/shm/shmbus-doc-rr-client-type-{}", std::process::id());
/// let server = Server::<u64, u64>::create(&name, &reqrep::Options::new(4))?;
/// let mut client = Client::<u64, u64>::attach(&name, &OpenOptions::default())?;
/// let first = client.send(&1, Wait::Never)?;
/// let second = client.send(&2, Wait::Never)?;
/// for _ in 0..2 {
///     let request = server.recv(Wait::Never).expect("a request");
///     let n = request.get();
///     request.respond(&(n * 10))?;
/// }
/// assert_eq!(client.wait(second, Wait::Never)?, 20);
/// assert_eq!(client.wait(first, Wait::Never)?, 10);
/// # drop((server, client));
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Client<Req: ?Sized + Payload, Resp: ?Sized + Payload, R: Region = DefaultRegion> {
    pub(crate) service: Service<R>,
    /// Our client entry.
    pub(crate) entry: u32,
    /// Slots holding a call of ours (posted, taken, answered and not yet
    /// read) or given up on and not yet given back (`cancelled`).
    busy: u64,
    /// Slots we gave up on whose server has not given them back.
    cancelled: u64,
    /// Each slot's generation: of its call while busy, of its next call
    /// while free.
    generations: Vec<u32>,
    /// Tells this handle's `Pending`s from another's.
    handle: u64,
    strategy: WaitStrategy,
    /// When a full client last probed the servers holding its given-up
    /// slots (a system call each).
    probed: Option<Instant>,
    origin: Origin,
    _types: PhantomData<fn(&Req, &Resp)>,
}

/// One request sent and not yet answered: give it to [`Client::wait`]
/// (or [`Client::cancel`]) of the client that sent it. Forgotten, its
/// slot stays taken until the client is dropped.
///
/// # Examples
/// ```
/// use shmbus::{OpenOptions, Wait, reqrep::{self, Client, Server}};
/// # let name = format!("/dev/shm/shmbus-doc-rr-pending-{}", std::process::id());
/// let _server = Server::<u64, u64>::create(&name, &reqrep::Options::new(4))?;
/// let mut client = Client::<u64, u64>::attach(&name, &OpenOptions::default())?;
/// let call = client.send(&1, Wait::Never)?;
/// assert!(!client.is_answered(&call));
/// client.cancel(call);
/// # drop((_server, client));
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a call's slot stays taken until it is waited for or cancelled"]
pub struct Pending {
    handle: u64,
    pub(super) slot: u32,
    pub(super) generation: u32,
}

impl Pending {
    /// The call slot it occupies (0 to the service's slots per client,
    /// less one).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, reqrep::{self, Client, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-pendslot-{}", std::process::id());
    /// let _server = Server::<u64, u64>::create(&name, &reqrep::Options::new(4))?;
    /// let mut client = Client::<u64, u64>::attach(&name, &OpenOptions::default())?;
    /// let call = client.send(&1, Wait::Never)?;
    /// assert_eq!(call.slot(), 0);
    /// # client.cancel(call);
    /// # drop((_server, client));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn slot(&self) -> u32 {
        self.slot
    }
}

/// What one look at a waiting call found.
pub(super) enum Look<T> {
    /// Its outcome.
    Ended(Result<T, CallError>),
    /// Still waiting, in this state word.
    Waiting(u64),
}

static HANDLES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

impl<Req: ?Sized + Payload, Resp: ?Sized + Payload, R: Region> std::fmt::Debug
    for Client<Req, Resp, R>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("entry", &self.entry)
            .field("outstanding", &self.outstanding())
            .finish_non_exhaustive()
    }
}

impl<Req: ?Sized + Payload, Resp: ?Sized + Payload, R: Region> Client<Req, Resp, R> {
    /// A client in entry `entry`, which it holds: takes over what a dead
    /// predecessor left in its slots.
    pub(crate) fn from_service(service: Service<R>, entry: u32, strategy: WaitStrategy) -> Self {
        let slots = service.geo.slots;
        let mut client = Client {
            service,
            entry,
            busy: 0,
            cancelled: 0,
            generations: vec![0; slots as usize],
            handle: HANDLES.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            strategy,
            probed: None,
            origin: Origin::here(),
            _types: PhantomData,
        };
        client.take_over();
        client
    }

    /// Makes every slot of our entry ours: a request a dead predecessor
    /// left untaken is withdrawn, an answer it left is dropped and
    /// counted, a call a live server still holds is given up on (that
    /// server gives the slot back), one a dead server holds is taken back.
    fn take_over(&mut self) {
        let c = self.entry;
        for k in 0..self.service.geo.slots {
            let bit = 1u64 << k;
            // Acquire: a slot given back (or answered) by a server is
            // done with before we write into it.
            let cur = self.service.state(c, k).load(Ordering::Acquire);
            let generation = state::generation(cur);
            match state::phase(cur) {
                state::FREE => self.generations[k as usize] = generation,
                state::POSTED | state::TAKEN | state::CANCELLED => {
                    match self.service.withdraw(c, k, generation) {
                        Withdrawn::Cancelled(_) => {
                            self.busy |= bit;
                            self.cancelled |= bit;
                            self.generations[k as usize] = generation;
                        }
                        Withdrawn::Answered(w) => self.drop_answer(k, w),
                        Withdrawn::Untaken => {
                            let now = self.service.state(c, k).load(Ordering::Acquire);
                            if state::phase(now) == state::CANCELLED {
                                self.busy |= bit;
                                self.cancelled |= bit;
                            }
                            self.generations[k as usize] = state::generation(now);
                        }
                    }
                }
                state::DONE | state::REFUSED => self.drop_answer(k, cur),
                _ => {
                    // A phase no party writes: the slot is garbage; reset it.
                    self.service.state(c, k).store(
                        state::word(state::FREE, 0, generation.wrapping_add(1)),
                        Ordering::Relaxed,
                    );
                    self.generations[k as usize] = generation.wrapping_add(1);
                }
            }
        }
        self.service.posted(c).store(0, Ordering::Relaxed);
    }

    /// An answer nobody waits for any more (a dead predecessor's): freed,
    /// counted late.
    fn drop_answer(&mut self, k: u32, word: u64) {
        let generation = state::generation(word);
        self.service.release(self.entry, k, generation);
        self.generations[k as usize] = generation.wrapping_add(1);
        if state::phase(word) == state::DONE {
            self.count(client::LATE, 1);
        }
    }

    /// Test only: this client dies without a word, as a SIGKILLed
    /// process's would: its calls stay in the service as they are, and
    /// only what it owns in this process is freed (no leak for Miri).
    #[cfg(test)]
    pub(crate) fn die(mut self) {
        self.busy = 0;
        self.cancelled = 0;
    }

    /// Slot `k`'s call is over for us.
    fn end(&mut self, k: u32) {
        self.busy &= !(1u64 << k);
    }

    fn count(&self, field: usize, n: u64) {
        // `LATE` is also added to by servers: an RMW there; the other
        // counters are ours alone.
        let w = self.service.client_count(self.entry, field);
        if field == client::LATE {
            w.fetch_add(n, Ordering::Relaxed);
        } else {
            w.store(w.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
        }
    }

    /// This client's entry in the service (what `stat` lists it by).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, reqrep::{self, Client, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-entry-{}", std::process::id());
    /// let _server = Server::<u64, u64>::create(&name, &reqrep::Options::new(4))?;
    /// let client = Client::<u64, u64>::attach(&name, &OpenOptions::default())?;
    /// assert_eq!(client.entry(), 0);
    /// # drop((_server, client));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn entry(&self) -> u32 {
        self.entry
    }

    /// The largest request this service carries, in bytes.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, reqrep::{self, Client, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-cmax-{}", std::process::id());
    /// let opts = reqrep::Options::new(4).request_size(100).response_size(10);
    /// let _server = Server::<[u8], [u8]>::create(&name, &opts)?;
    /// let client = Client::<[u8], [u8]>::attach(&name, &OpenOptions::default())?;
    /// assert_eq!((client.max_request(), client.max_response()), (100, 10));
    /// # drop((_server, client));
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
    /// use shmbus::{OpenOptions, reqrep::{self, Client, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-cmaxr-{}", std::process::id());
    /// let _server = Server::<u32, u64>::create(&name, &reqrep::Options::new(4))?;
    /// let client = Client::<u32, u64>::attach(&name, &OpenOptions::default())?;
    /// assert_eq!(client.max_response(), 8);
    /// # drop((_server, client));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_response(&self) -> usize {
        self.service.geo.response as usize
    }

    /// Calls outstanding: sent and not yet waited for, or given up on and
    /// not yet given back by their server.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, reqrep::{self, Client, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-outstanding-{}", std::process::id());
    /// let _server = Server::<u64, u64>::create(&name, &reqrep::Options::new(4))?;
    /// let mut client = Client::<u64, u64>::attach(&name, &OpenOptions::default())?;
    /// let call = client.send(&1, Wait::Never)?;
    /// assert_eq!(client.outstanding(), 1);
    /// # client.cancel(call);
    /// # drop((_server, client));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn outstanding(&self) -> u32 {
        self.busy.count_ones()
    }

    /// How this client waits from now on (for an answer, or for a free
    /// slot).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, WaitStrategy, reqrep::{self, Client, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-cstrategy-{}", std::process::id());
    /// let _server = Server::<u64, u64>::create(&name, &reqrep::Options::new(4))?;
    /// let mut client = Client::<u64, u64>::attach(&name, &OpenOptions::default())?;
    /// client.set_wait_strategy(WaitStrategy::BusySpin);
    /// # drop((_server, client));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_wait_strategy(&mut self, strategy: WaitStrategy) {
        self.strategy = strategy;
    }

    /// A free slot, waiting by `deadline` for one (answered calls read,
    /// given-up ones given back by their server or taken back from a dead
    /// one).
    fn free_slot(&mut self, deadline: Option<Instant>) -> Result<u32, SendError> {
        let slots = self.service.geo.slots;
        let mask = if slots == 64 {
            u64::MAX
        } else {
            (1u64 << slots) - 1
        };
        let mut backoff = wait::Backoff::new(self.strategy, deadline);
        loop {
            let free = !self.busy & mask;
            if free != 0 {
                return Ok(free.trailing_zeros());
            }
            if let Some(k) = self.recover_cancelled() {
                return Ok(k);
            }
            let step = backoff.next();
            match step {
                wait::Step::Spin => crate::sync::spin_loop(),
                wait::Step::Yield => crate::sync::yield_now(),
                wait::Step::Sleep(left) => {
                    let nap = left.map_or(PEER_CHECK, |l| l.min(PEER_CHECK));
                    let service = &self.service;
                    let (c, cancelled) = (self.entry, self.cancelled);
                    wait::sleep(service.client_bell(c), Some(nap), || {
                        !any_given_back(service, c, cancelled)
                    });
                }
                wait::Step::TimedOut => {
                    self.count(client::FULL, 1);
                    return Err(SendError::Full {
                        outstanding: self.outstanding(),
                    });
                }
            }
        }
    }

    /// A slot we gave up on that its server gave back, or that a dead
    /// server held (probed at most every `PEER_CHECK`): ours again.
    fn recover_cancelled(&mut self) -> Option<u32> {
        let c = self.entry;
        let mut rest = self.cancelled;
        let probe = self
            .probed
            .is_none_or(|t| due(Instant::now(), t + PEER_CHECK));
        if probe {
            self.probed = Some(Instant::now());
        }
        while rest != 0 {
            let k = rest.trailing_zeros();
            rest &= rest - 1;
            // Acquire, paired with the server's Release store of `FREE`
            // in `Service::answer`: it is done with the slot's bytes.
            let cur = self.service.state(c, k).load(Ordering::Acquire);
            let mine = self.generations[k as usize];
            let back = match state::phase(cur) {
                state::FREE => true,
                state::CANCELLED | state::TAKEN
                    if probe && !self.service.server_alive(state::server(cur)) =>
                {
                    self.service.reclaim_from_dead(c, k, cur)
                }
                _ => false,
            };
            if back {
                let bit = 1u64 << k;
                self.cancelled &= !bit;
                self.end(k);
                let now = self.service.state(c, k).load(Ordering::Relaxed);
                self.generations[k as usize] = if state::phase(now) == state::FREE {
                    state::generation(now)
                } else {
                    mine.wrapping_add(1)
                };
                return Some(k);
            }
        }
        None
    }

    /// Sends `bytes` as a request: into a free slot (waiting by `deadline`
    /// for one), then posted.
    pub(super) fn send_bytes(
        &mut self,
        bytes: &[u8],
        deadline: Option<Instant>,
    ) -> Result<Pending, SendError> {
        let max = self.service.geo.request as usize;
        if bytes.len() > max {
            return Err(SendError::TooLong {
                len: bytes.len(),
                max,
            });
        }
        let k = self.free_slot(deadline)?;
        let c = self.entry;
        let at = self.service.request_at(c, k);
        // SAFETY: slot `k` is `FREE` and ours: no server reads it before
        // `post`'s Release store hands it over.
        unsafe { self.service.region.copy_in(at, bytes) };
        Ok(self.post(k, bytes.len()))
    }

    fn post(&mut self, k: u32, len: usize) -> Pending {
        let c = self.entry;
        self.service
            .request_len(c, k)
            .store(len as u32, Ordering::Relaxed);
        let generation = self.generations[k as usize];
        self.service.post(c, k, generation);
        self.busy |= 1 << k;
        self.count(client::CALLS, 1);
        Pending {
            handle: self.handle,
            slot: k,
            generation,
        }
    }

    /// Whether `call` has its answer already (a response or a refusal):
    /// then [`wait`](Client::wait) returns at once.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, reqrep::{self, Client, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-answered-{}", std::process::id());
    /// let server = Server::<u64, u64>::create(&name, &reqrep::Options::new(4))?;
    /// let mut client = Client::<u64, u64>::attach(&name, &OpenOptions::default())?;
    /// let call = client.send(&1, Wait::Never)?;
    /// assert!(!client.is_answered(&call));
    /// server.recv(Wait::Never).expect("a request").respond(&2)?;
    /// assert!(client.is_answered(&call));
    /// # let _ = client.wait(call, Wait::Never);
    /// # drop((server, client));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn is_answered(&self, call: &Pending) -> bool {
        if !self.owns(call) {
            return false;
        }
        // Acquire: a `true` here is followed by the response's read.
        let cur = self
            .service
            .state(self.entry, call.slot)
            .load(Ordering::Acquire);
        matches!(state::phase(cur), state::DONE | state::REFUSED)
    }

    pub(super) fn owns(&self, call: &Pending) -> bool {
        call.handle == self.handle
            && call.slot < self.service.geo.slots
            && self.busy & !self.cancelled & (1 << call.slot) != 0
            && self.generations[call.slot as usize] == call.generation
    }

    /// Gives up on `call` without waiting: its response, if one comes, is
    /// dropped and counted late; its slot comes back once no server holds
    /// it.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, reqrep::{self, Client, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-cancel-{}", std::process::id());
    /// let server = Server::<u64, u64>::create(&name, &reqrep::Options::new(4))?;
    /// let mut client = Client::<u64, u64>::attach(&name, &OpenOptions::default())?;
    /// let call = client.send(&1, Wait::Never)?;
    /// client.cancel(call);
    /// assert!(server.recv(Wait::Never).is_none(), "withdrawn before any server took it");
    /// # drop((server, client));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancel(&mut self, call: Pending) {
        if self.owns(&call) {
            self.give_up(call.slot, call.generation);
        }
    }

    /// Withdraws slot `k`'s call, keeping the slot busy while a server
    /// still holds it.
    pub(super) fn give_up(&mut self, k: u32, generation: u32) {
        let bit = 1u64 << k;
        match self.service.withdraw(self.entry, k, generation) {
            Withdrawn::Untaken => {
                self.end(k);
                self.generations[k as usize] = generation.wrapping_add(1);
            }
            Withdrawn::Cancelled(_) => self.cancelled |= bit,
            Withdrawn::Answered(w) => {
                self.end(k);
                self.drop_answer(k, w);
            }
        }
    }

    /// Waits for `call`'s outcome; `read` sees the response's bytes in
    /// place (checked by `fits`) before the slot is freed.
    fn wait_bytes<T>(
        &mut self,
        call: Pending,
        wait: Wait,
        fits: impl Fn(u32) -> Option<u32>,
        read: impl FnOnce(&Service<R>, usize, usize) -> T,
    ) -> Result<T, CallError> {
        if !self.owns(&call) {
            return Err(CallError::UnknownCall);
        }
        let (c, k, generation) = (self.entry, call.slot, call.generation);
        let deadline = wait.deadline();
        let mut backoff = wait::Backoff::new(self.strategy, deadline);
        let mut probe = Instant::now() + PEER_CHECK;
        let mut read = Some(read);
        // The clock is read on the first look and every 64th after (as
        // the backoff does): a call answered within a spin reads it once.
        let mut looks = 0u32;
        loop {
            let clock = looks % 64 == 0;
            looks = looks.wrapping_add(1);
            let probing = if clock { Some(&mut probe) } else { None };
            let cur = match self.look(k, generation, &fits, &mut read, probing) {
                Look::Ended(outcome) => return outcome,
                Look::Waiting(cur) => cur,
            };
            if clock && deadline.is_some_and(|d| Instant::now() >= d) {
                if let Some(timed_out) = self.time_out(k, generation) {
                    return Err(timed_out);
                }
                continue;
            }
            match backoff.next() {
                wait::Step::Spin => crate::sync::spin_loop(),
                wait::Step::Yield => crate::sync::yield_now(),
                wait::Step::Sleep(left) => {
                    // Never past the next probe: a server that dies rings
                    // no bell.
                    let nap = left.map_or(PEER_CHECK, |l| l.min(PEER_CHECK));
                    let service = &self.service;
                    wait::sleep(service.client_bell(c), Some(nap), || {
                        service.state(c, k).load(Ordering::Relaxed) == cur
                    });
                }
                wait::Step::TimedOut => {} // the deadline check above ends it
            }
        }
    }

    /// One look at slot `k`'s call of `generation`: its outcome if it has
    /// one (the answer read through `read`, then the slot freed), else the
    /// state word it waits in. Given `probe`, probes the servers'
    /// liveness once it has passed (then moves it on by `PEER_CHECK`).
    pub(super) fn look<T, F>(
        &mut self,
        k: u32,
        generation: u32,
        fits: &impl Fn(u32) -> Option<u32>,
        read: &mut Option<F>,
        probe: Option<&mut Instant>,
    ) -> Look<T>
    where
        F: FnOnce(&Service<R>, usize, usize) -> T,
    {
        let c = self.entry;
        // Acquire, paired with the server's Release CAS in
        // `Service::answer`: a `DONE` here publishes the response.
        let cur = self.service.state(c, k).load(Ordering::Acquire);
        if state::generation(cur) != generation {
            // Only a hostile write moves a busy slot's generation.
            self.end(k);
            return Look::Ended(Err(CallError::UnknownCall));
        }
        match state::phase(cur) {
            state::DONE => {
                let len = self.service.response_len(c, k).load(Ordering::Relaxed);
                self.end(k);
                self.generations[k as usize] = generation.wrapping_add(1);
                let out = match (fits(len), read.take()) {
                    (None, Some(read)) => Ok(read(
                        &self.service,
                        self.service.response_at(c, k),
                        len as usize,
                    )),
                    (Some(expected), _) => Err(CallError::BadResponse { len, expected }),
                    (None, None) => Err(CallError::UnknownCall),
                };
                self.service.release(c, k, generation);
                Look::Ended(out)
            }
            state::REFUSED => {
                let pid = self.pid_of(state::server(cur));
                self.end(k);
                self.generations[k as usize] = generation.wrapping_add(1);
                self.service.release(c, k, generation);
                Look::Ended(Err(CallError::Refused { pid }))
            }
            state::POSTED | state::TAKEN => {
                if let Some(probe) = probe {
                    let now = Instant::now();
                    if due(now, *probe) {
                        *probe = now + PEER_CHECK;
                        if let Some(gone) = self.check_servers(k, cur) {
                            return Look::Ended(Err(gone));
                        }
                    }
                }
                Look::Waiting(cur)
            }
            _ => {
                self.end(k);
                Look::Ended(Err(CallError::UnknownCall))
            }
        }
    }

    /// The caller's deadline passed on slot `k`'s call: withdrawn or
    /// given up on, `TimedOut`; `None` if its answer came first (look
    /// again).
    pub(super) fn time_out(&mut self, k: u32, generation: u32) -> Option<CallError> {
        let bit = 1u64 << k;
        match self.service.withdraw(self.entry, k, generation) {
            Withdrawn::Answered(_) => return None,
            Withdrawn::Untaken => {
                self.end(k);
                self.generations[k as usize] = generation.wrapping_add(1);
            }
            Withdrawn::Cancelled(_) => self.cancelled |= bit,
        }
        self.count(client::TIMEOUTS, 1);
        Some(CallError::TimedOut)
    }

    /// The liveness probe of a waiting call in slot `k` (state `cur`): the
    /// server that took it died, or no server lives to take it.
    fn check_servers(&mut self, k: u32, cur: u64) -> Option<CallError> {
        let c = self.entry;
        let bit = 1u64 << k;
        let generation = state::generation(cur);
        match state::phase(cur) {
            state::TAKEN => {
                let s = state::server(cur);
                if s < self.service.geo.servers && self.service.server_alive(s) {
                    return None;
                }
                let pid = self.pid_of(s);
                if self.service.reclaim_from_dead(c, k, cur) {
                    self.end(k);
                    self.generations[k as usize] = generation.wrapping_add(1);
                    self.count(client::GONE, 1);
                    return Some(CallError::ServerGone { pid });
                }
                None
            }
            state::POSTED if !self.service.any_server_alive() => {
                match self.service.withdraw(c, k, generation) {
                    Withdrawn::Untaken => {
                        self.end(k);
                        self.generations[k as usize] = generation.wrapping_add(1);
                        self.count(client::GONE, 1);
                        Some(CallError::NoServer)
                    }
                    // A server that attached after the probe took it as
                    // we gave up: no server lived when we looked, which
                    // is the outcome; that server's answer is dropped and
                    // counted late, and it gives the slot back.
                    Withdrawn::Cancelled(_) => {
                        self.cancelled |= bit;
                        self.count(client::GONE, 1);
                        Some(CallError::NoServer)
                    }
                    Withdrawn::Answered(_) => None,
                }
            }
            _ => None,
        }
    }
}

impl<Req: ?Sized + Payload, Resp: ?Sized + Payload, R: Region> Client<Req, Resp, R> {
    /// The pid in server entry `s`'s line (0 for an entry the service
    /// does not have: a hostile state word's).
    fn pid_of(&self, s: u32) -> u32 {
        if s < self.service.geo.servers {
            self.service.server_pid(s).load(Ordering::Relaxed)
        } else {
            0
        }
    }
}

/// Whether a server gave back any of `cancelled` slots of client `c`.
fn any_given_back<R: Region>(service: &Service<R>, c: u32, cancelled: u64) -> bool {
    let mut rest = cancelled;
    while rest != 0 {
        let k = rest.trailing_zeros();
        rest &= rest - 1;
        if state::phase(service.state(c, k).load(Ordering::Relaxed)) == state::FREE {
            return true;
        }
    }
    false
}

impl<Req: Message, Resp: ?Sized + Payload, R: Region> Client<Req, Resp, R> {
    /// Sends `request`, waiting as `wait` says for a free call slot if
    /// all are outstanding; returns the call to [`wait`](Client::wait) on.
    ///
    /// # Errors
    /// [`SendError::Full`] if no slot came free within `wait`.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, reqrep::{self, Client, SendError, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-send-{}", std::process::id());
    /// let _server = Server::<u64, u64>::create(&name, &reqrep::Options::new(4).slots(1))?;
    /// let mut client = Client::<u64, u64>::attach(&name, &OpenOptions::default())?;
    /// let call = client.send(&1, Wait::Never)?;
    /// assert_eq!(client.send(&2, Wait::Never), Err(SendError::Full { outstanding: 1 }));
    /// # client.cancel(call);
    /// # drop((_server, client));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn send(&mut self, request: &Req, wait: Wait) -> Result<Pending, SendError> {
        self.send_bytes(bytemuck::bytes_of(request), wait.deadline())
    }
}

impl<Resp: ?Sized + Payload, R: Region> Client<[u8], Resp, R> {
    /// Sends `request`'s bytes, waiting as `wait` says for a free call
    /// slot if all are outstanding.
    ///
    /// # Errors
    /// [`SendError::TooLong`] over the service's largest request;
    /// [`SendError::Full`] if no slot came free within `wait`.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, reqrep::{self, Client, SendError, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-sendb-{}", std::process::id());
    /// let opts = reqrep::Options::new(4).request_size(4).response_size(4);
    /// let _server = Server::<[u8], [u8]>::create(&name, &opts)?;
    /// let mut client = Client::<[u8], [u8]>::attach(&name, &OpenOptions::default())?;
    /// assert_eq!(client.send(b"hello", Wait::Never), Err(SendError::TooLong { len: 5, max: 4 }));
    /// # drop((_server, client));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn send(&mut self, request: &[u8], wait: Wait) -> Result<Pending, SendError> {
        self.send_bytes(request, wait.deadline())
    }

    /// Sends a request of `len` bytes that `write` writes in place, into
    /// the slot the server reads: no copy of a large request.
    ///
    /// # Errors
    /// As [`send`](Client::send).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, reqrep::{self, Client, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-sendw-{}", std::process::id());
    /// let opts = reqrep::Options::new(4).request_size(1 << 20).response_size(8);
    /// let server = Server::<[u8], [u8]>::create(&name, &opts)?;
    /// let mut client = Client::<[u8], [u8]>::attach(&name, &OpenOptions::default())?;
    /// let _call = client.send_with(1 << 20, Wait::Never, |buf| buf.fill(1))?;
    /// assert_eq!(server.recv(Wait::Never).expect("a request").bytes().len(), 1 << 20);
    /// # drop((server, client));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(not(loom))]
    pub fn send_with(
        &mut self,
        len: usize,
        wait: Wait,
        write: impl FnOnce(&mut [u8]),
    ) -> Result<Pending, SendError> {
        let max = self.service.geo.request as usize;
        if len > max {
            return Err(SendError::TooLong { len, max });
        }
        let k = self.free_slot(wait.deadline())?;
        let at = self.service.request_at(self.entry, k);
        let p = self
            .service
            .region
            .raw(at, len)
            .expect("plain memory outside loom");
        // SAFETY: slot `k` is `FREE` and ours until `post` hands it over.
        write(unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), len) });
        Ok(self.post(k, len))
    }
}

impl<Req: ?Sized + Payload, Resp: Message, R: Region> Client<Req, Resp, R> {
    /// Waits for `call`'s outcome, as `wait` says: its response, or why
    /// there is none.
    ///
    /// # Errors
    /// [`CallError::TimedOut`] once `wait` runs out (a later response is
    /// dropped and counted); [`CallError::ServerGone`] within
    /// [`PEER_CHECK`](super::PEER_CHECK) of the death of the server that
    /// took it; [`CallError::NoServer`] within it if no server lives;
    /// [`CallError::Refused`] if the server dropped it;
    /// [`CallError::UnknownCall`] for a call not outstanding here;
    /// [`CallError::BadResponse`] for a response not of `Resp`'s size.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use shmbus::{OpenOptions, Wait, reqrep::{self, CallError, Client, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-wait-{}", std::process::id());
    /// let _server = Server::<u64, u64>::create(&name, &reqrep::Options::new(4))?;
    /// let mut client = Client::<u64, u64>::attach(&name, &OpenOptions::default())?;
    /// let call = client.send(&1, Wait::Never)?;
    /// // The server never looks: the deadline passes.
    /// assert_eq!(client.wait(call, Wait::For(Duration::from_millis(5))), Err(CallError::TimedOut));
    /// # drop((_server, client));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait(&mut self, call: Pending, wait: Wait) -> Result<Resp, CallError> {
        self.wait_bytes(call, wait, typed_fits::<Resp>, read_value::<Resp, R>)
    }
}

impl<Req: Message, Resp: Message, R: Region> Client<Req, Resp, R> {
    /// Sends `request` and waits for its response: [`send`] then
    /// [`wait`], both within `wait`.
    ///
    /// [`send`]: Client::send
    /// [`wait`]: Client::wait
    ///
    /// # Errors
    /// As [`wait`](Client::wait), and [`CallError::Send`] if no call slot
    /// came free in time.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use shmbus::{OpenOptions, Wait, reqrep::{self, Client, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-call-{}", std::process::id());
    /// let server = Server::<u64, u64>::create(&name, &reqrep::Options::new(4))?;
    /// let serving = std::thread::spawn(move || {
    ///     let request = server.recv(Wait::Forever).expect("a request");
    ///     let n = request.get();
    ///     request.respond(&(n * n)).unwrap();
    /// });
    /// let mut client = Client::<u64, u64>::attach(&name, &OpenOptions::default())?;
    /// assert_eq!(client.call(&12, Wait::For(Duration::from_secs(5)))?, 144);
    /// serving.join().unwrap();
    /// # drop(client);
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn call(&mut self, request: &Req, wait: Wait) -> Result<Resp, CallError> {
        let deadline = wait.deadline();
        let call = self.send_bytes(bytemuck::bytes_of(request), deadline)?;
        self.wait(call, until(deadline))
    }
}

/// Whether a liveness probe planned for `at` is due. Never under loom:
/// its executions must not branch on real time, and its heap has no
/// locks to probe.
fn due(now: Instant, at: Instant) -> bool {
    !cfg!(loom) && now >= at
}

/// A typed response's check: exactly its type's size.
pub(super) fn typed_fits<Resp: Message>(len: u32) -> Option<u32> {
    let size = std::mem::size_of::<Resp>() as u32;
    (len != size).then_some(size)
}

/// Reads a typed response of `len` bytes (its size, checked) at `at`.
pub(super) fn read_value<Resp: Message, R: Region>(
    service: &Service<R>,
    at: usize,
    len: usize,
) -> Resp {
    let mut value = Resp::zeroed();
    // SAFETY: the Acquire load of `DONE` handed us the response's bytes
    // until we free the slot, which the caller does after this.
    unsafe {
        service
            .region
            .copy_out(at, &mut bytemuck::bytes_of_mut(&mut value)[..len])
    };
    value
}

/// The rest of a wait that ends at `deadline`.
fn until(deadline: Option<Instant>) -> Wait {
    match deadline {
        None => Wait::Forever,
        Some(d) => Wait::For(d.saturating_duration_since(Instant::now())),
    }
}

impl<Req: ?Sized + Payload, R: Region> Client<Req, [u8], R> {
    /// Waits for `call`'s outcome, as `wait` says, and copies its
    /// response into `out` (cleared first).
    ///
    /// # Errors
    /// As [`Client::wait`]; [`CallError::BadResponse`] for a response
    /// longer than the service's largest.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, reqrep::{self, Client, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-waitinto-{}", std::process::id());
    /// let opts = reqrep::Options::new(4).request_size(8).response_size(8);
    /// let server = Server::<[u8], [u8]>::create(&name, &opts)?;
    /// let mut client = Client::<[u8], [u8]>::attach(&name, &OpenOptions::default())?;
    /// let call = client.send(b"a", Wait::Never)?;
    /// server.recv(Wait::Never).expect("a request").respond(b"b")?;
    /// let mut out = Vec::new();
    /// client.wait_into(call, &mut out, Wait::Never)?;
    /// assert_eq!(out, b"b");
    /// # drop((server, client));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wait_into(
        &mut self,
        call: Pending,
        out: &mut Vec<u8>,
        wait: Wait,
    ) -> Result<(), CallError> {
        let max = self.service.geo.response;
        self.wait_bytes(
            call,
            wait,
            |len| (len > max).then_some(max),
            |service, at, len| {
                out.clear();
                out.resize(len, 0);
                // SAFETY: the Acquire load of `DONE` handed us the
                // response's bytes until we free the slot.
                unsafe { service.region.copy_out(at, out) };
            },
        )
    }

    /// Waits for `call`'s outcome, as `wait` says, and gives `read` its
    /// response in place (no copy), before its slot is freed.
    ///
    /// # Errors
    /// As [`Client::wait_into`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, reqrep::{self, Client, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-waitwith-{}", std::process::id());
    /// let opts = reqrep::Options::new(4).request_size(8).response_size(8);
    /// let server = Server::<[u8], [u8]>::create(&name, &opts)?;
    /// let mut client = Client::<[u8], [u8]>::attach(&name, &OpenOptions::default())?;
    /// let call = client.send(b"a", Wait::Never)?;
    /// server.recv(Wait::Never).expect("a request").respond(b"bcd")?;
    /// assert_eq!(client.wait_with(call, Wait::Never, |r| r.len())?, 3);
    /// # drop((server, client));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(not(loom))]
    pub fn wait_with<T>(
        &mut self,
        call: Pending,
        wait: Wait,
        read: impl FnOnce(&[u8]) -> T,
    ) -> Result<T, CallError> {
        let max = self.service.geo.response;
        self.wait_bytes(
            call,
            wait,
            |len| (len > max).then_some(max),
            |service, at, len| {
                let p = service
                    .region
                    .raw(at, len)
                    .expect("plain memory outside loom");
                // SAFETY: the Acquire load of `DONE` handed us the
                // response's `len` bytes (checked against the largest)
                // until we free the slot, after `read` returns.
                read(unsafe { std::slice::from_raw_parts(p.as_ptr(), len) })
            },
        )
    }

    /// Sends `request` and copies its response into `out`: [`send`] then
    /// [`wait_into`], both within `wait`.
    ///
    /// [`send`]: Client::send
    /// [`wait_into`]: Client::wait_into
    ///
    /// # Errors
    /// As [`wait_into`](Client::wait_into), and [`CallError::Send`].
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use shmbus::{OpenOptions, Wait, reqrep::{self, CallError, Client, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-rr-callinto-{}", std::process::id());
    /// let opts = reqrep::Options::new(4).request_size(8).response_size(8);
    /// let server = Server::<[u8], [u8]>::create(&name, &opts)?;
    /// let mut client = Client::<[u8], [u8]>::attach(&name, &OpenOptions::default())?;
    /// let mut out = Vec::new();
    /// assert_eq!(client.call_into(b"x", &mut out, Wait::For(Duration::from_millis(5))), Err(CallError::TimedOut));
    /// # drop((server, client));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn call_into(
        &mut self,
        request: &Req,
        out: &mut Vec<u8>,
        wait: Wait,
    ) -> Result<(), CallError>
    where
        Req: RequestBytes,
    {
        let deadline = wait.deadline();
        let call = self.send_bytes(request.as_request_bytes(), deadline)?;
        self.wait_into(call, out, until(deadline))
    }
}

/// A request's bytes, for the calls that take either payload: `[u8]`
/// as it is, a [`Message`] as its bytes.
///
/// # Examples
/// ```
/// use shmbus::reqrep::RequestBytes;
/// let raw: &[u8] = b"ping";
/// fn takes<R: RequestBytes + ?Sized>(_: &R) {}
/// takes(raw);
/// takes(&7u64);
/// ```
pub trait RequestBytes: Payload {
    #[doc(hidden)]
    fn as_request_bytes(&self) -> &[u8];
}

impl RequestBytes for [u8] {
    fn as_request_bytes(&self) -> &[u8] {
        self
    }
}

impl<T: Message> RequestBytes for T {
    fn as_request_bytes(&self) -> &[u8] {
        bytemuck::bytes_of(self)
    }
}

impl<Req: ?Sized + Payload, Resp: ?Sized + Payload, R: Region> Drop for Client<Req, Resp, R> {
    fn drop(&mut self) {
        // A forked child's copy owns nothing shared: the parent's calls
        // stay the parent's.
        if !self.origin.is_current() {
            return;
        }
        let mut rest = self.busy & !self.cancelled;
        while rest != 0 {
            let k = rest.trailing_zeros();
            rest &= rest - 1;
            self.give_up(k, self.generations[k as usize]);
        }
    }
}
