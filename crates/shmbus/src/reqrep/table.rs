//! The service's protocol over a region: posting, taking, answering,
//! withdrawing and giving back a call slot. The invariants are the
//! `reqrep` module's; every state change here is one of its arrows.

use crate::mem::Region;
use crate::sync::{AtomicU32, AtomicU64, Ordering};
use crate::wait;
use crate::wire::service::{ServiceGeometry, client, control, server, slot, state};
use crate::wire::{Header, LINE};

pub(crate) use crate::wire::lock_byte::{CLIENT as CLIENT_LOCK, SERVER as SERVER_LOCK};

/// What withdrawing a call found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Withdrawn {
    /// No server had taken it: the slot is the client's again.
    Untaken,
    /// Server `s` had: the slot is `CANCELLED`, that server's until it
    /// gives it back.
    Cancelled(u32),
    /// The answer came first (`DONE` or `REFUSED`): the caller takes it.
    Answered(u64),
}

/// The protocol over any region; `Server` and `Client` each hold one.
pub(crate) struct Service<R> {
    pub(crate) region: R,
    pub(crate) geo: ServiceGeometry,
    control: usize,
    data: usize,
    slot_size: usize,
    /// This process registered for the asymmetric barrier (see `wait`).
    pub(crate) light: bool,
}

impl<R: Region> Service<R> {
    /// Over a validated service header (`Header::expect` checked that the
    /// geometry fits the file).
    pub(crate) fn new(region: R, h: &Header) -> Service<R> {
        let geo = h
            .service_geometry()
            .expect("a validated service header has a valid geometry");
        Service {
            region,
            geo,
            control: h.control_offset as usize,
            data: h.data_offset as usize,
            slot_size: h.slot_size as usize,
            light: wait::light_publisher_barrier(),
        }
    }

    /// Another view of the same service (heap regions: another thread's
    /// handle).
    #[cfg(any(test, loom))]
    pub(crate) fn share(&self) -> Service<R>
    where
        R: Clone,
    {
        Service {
            region: self.region.clone(),
            geo: self.geo,
            control: self.control,
            data: self.data,
            slot_size: self.slot_size,
            light: self.light,
        }
    }

    fn slot_at(&self, c: u32, k: u32) -> usize {
        debug_assert!(c < self.geo.clients && k < self.geo.slots);
        self.data + (c as usize * self.geo.slots as usize + k as usize) * self.slot_size
    }

    /// Slot `(c, k)`'s state word.
    #[inline]
    pub(crate) fn state(&self, c: u32, k: u32) -> &AtomicU64 {
        self.region.word(self.slot_at(c, k) + slot::STATE)
    }

    pub(crate) fn request_len(&self, c: u32, k: u32) -> &AtomicU32 {
        self.region.word32(self.slot_at(c, k) + slot::REQUEST_LEN)
    }

    pub(crate) fn response_len(&self, c: u32, k: u32) -> &AtomicU32 {
        self.region.word32(self.slot_at(c, k) + slot::RESPONSE_LEN)
    }

    /// Byte offset of slot `(c, k)`'s request area.
    pub(crate) fn request_at(&self, c: u32, k: u32) -> usize {
        self.slot_at(c, k) + slot::REQUEST
    }

    /// Byte offset of slot `(c, k)`'s response area.
    pub(crate) fn response_at(&self, c: u32, k: u32) -> usize {
        self.slot_at(c, k) + self.geo.response_offset()
    }

    fn client_line(&self, c: u32) -> usize {
        self.control + self.geo.clients_at() + c as usize * client::BYTES
    }

    /// Client `c`'s posted bits.
    pub(crate) fn posted(&self, c: u32) -> &AtomicU64 {
        self.region.word(self.client_line(c) + client::POSTED)
    }

    /// Client `c`'s doorbell.
    pub(crate) fn client_bell(&self, c: u32) -> &AtomicU32 {
        self.region.word32(self.client_line(c) + client::BELL)
    }

    /// One of client `c`'s counters (`wire::service::client`).
    pub(crate) fn client_count(&self, c: u32, field: usize) -> &AtomicU64 {
        self.region.word(self.client_line(c) + field)
    }

    fn server_line(&self, s: u32) -> usize {
        self.control + control::SERVERS + s as usize * LINE
    }

    pub(crate) fn server_pid(&self, s: u32) -> &AtomicU32 {
        self.region.word32(self.server_line(s) + server::PID)
    }

    /// One of server `s`'s counters (`wire::service::server`).
    pub(crate) fn server_count(&self, s: u32, field: usize) -> &AtomicU64 {
        self.region.word(self.server_line(s) + field)
    }

    /// Summary word `w` (bit `c % 64` of word `c / 64`: client `c`).
    fn summary(&self, w: usize) -> &AtomicU64 {
        self.region.word(self.control + control::SUMMARY + 8 * w)
    }

    /// The doorbell idle servers sleep on.
    pub(crate) fn work_bell(&self) -> &AtomicU32 {
        self.region.word32(self.control + control::WORK_BELL)
    }

    /// Whether a client has a posted request (for a sleeping server's
    /// re-check and a select): a posted bit under a summary bit. Its
    /// callers make the server's half of the barrier pair with `post`
    /// first (a sleeper's flag and barrier, a clean pass's clear and
    /// barrier), so it sees the post, or the client sees the flag or the
    /// cleared bit.
    pub(crate) fn has_work(&self) -> bool {
        self.summary_clients().any(|c| self.has_posted(c))
    }

    /// Whether client `c` has a request no server took: a posted bit
    /// whose slot is `POSTED` (between a take's CAS and its clear, a bit
    /// is set over a slot already taken).
    fn has_posted(&self, c: u32) -> bool {
        // Acquire, paired with `post`'s Release store of the bit: a bit
        // seen is a `POSTED` state seen (or a later one).
        let mut bits = self.posted(c).load(Ordering::Acquire) & self.slot_mask();
        while bits != 0 {
            let k = bits.trailing_zeros();
            bits &= bits - 1;
            if state::phase(self.state(c, k).load(Ordering::Acquire)) == state::POSTED {
                return true;
            }
        }
        false
    }

    /// The clients whose summary bit is set (Acquire loads, paired with
    /// the clients' `fetch_or`), bits past the last client dropped
    /// (hostile or stale).
    fn summary_clients(&self) -> impl Iterator<Item = u32> + '_ {
        let clients = self.geo.clients as usize;
        (0..clients.div_ceil(64)).flat_map(move |w| {
            let mut bits = self.summary(w).load(Ordering::Acquire);
            let valid = clients - 64 * w;
            if valid < 64 {
                bits &= (1u64 << valid) - 1;
            }
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let b = bits.trailing_zeros();
                    bits &= bits - 1;
                    64 * w as u32 + b
                })
            })
        })
    }

    fn slot_mask(&self) -> u64 {
        if self.geo.slots == 64 {
            u64::MAX
        } else {
            (1u64 << self.geo.slots) - 1
        }
    }

    /// Clears the summary bits of clients with nothing posted, so that the
    /// scan stays short: a server does it before it sleeps, not per
    /// call (a bit cleared per call is a line won back by the client's
    /// next post). Then the heavy half of the barrier pair with `post`
    /// (Dekker: our clear, barrier, look at the posted bits; the client's
    /// bit, barrier, look at the summary): a post racing the clear is
    /// seen by our look, and the bit set again, or the client sees the
    /// clear and sets it. Where the barrier cannot be made, the bits are
    /// put back.
    pub(crate) fn clean_summary(&self) {
        let mut cleared = [0u64; 4];
        for c in self.summary_clients() {
            if self.has_posted(c) {
                continue;
            }
            let (w, bit) = (c as usize / 64, 1u64 << (c % 64));
            // AcqRel: ordered with the clients' `fetch_or` on the word.
            self.summary(w).fetch_and(!bit, Ordering::AcqRel);
            cleared[w] |= bit;
        }
        if cleared == [0; 4] {
            return;
        }
        let sure = wait::heavy_barrier();
        for (w, bits) in cleared.iter().enumerate() {
            let mut rest = *bits;
            while rest != 0 {
                let b = rest.trailing_zeros();
                rest &= rest - 1;
                let c = 64 * w as u32 + b;
                if !sure || self.has_posted(c) {
                    self.summary(w).fetch_or(1 << b, Ordering::AcqRel);
                }
            }
        }
    }

    /// Whether the process in server entry `s` lives (its lock is held);
    /// the heap cannot tell, and says yes.
    pub(crate) fn server_alive(&self, s: u32) -> bool {
        self.region
            .lock_held(SERVER_LOCK + u64::from(s))
            .unwrap_or(true)
    }

    /// Whether any server lives: a lock probe (a system call) per entry
    /// ever used. The heap cannot tell, and says yes.
    pub(crate) fn any_server_alive(&self) -> bool {
        (0..self.geo.servers)
            .any(|s| self.server_pid(s).load(Ordering::Relaxed) != 0 && self.server_alive(s))
            || self.region.lock_held(SERVER_LOCK).is_none()
    }

    /// Client `c` posts the request it wrote into slot `k` (generation
    /// `generation`, `FREE` until now): the state, its posted bit, its
    /// summary bit, then the servers' bell.
    pub(crate) fn post(&self, c: u32, k: u32, generation: u32) {
        // Release, paired with the Acquire CAS in `take`: a server that
        // takes the request sees its bytes and length.
        self.state(c, k)
            .store(state::word(state::POSTED, 0, generation), Ordering::Release);
        // Release, paired with the servers' Acquire loads of the word: a
        // server that sees the bit sees `POSTED`. An RMW: the server that
        // takes the request clears the bit.
        self.posted(c).fetch_or(1 << k, Ordering::Release);
        // The light half of the barrier pair with `clean_summary` (whose
        // heavy half makes a full barrier here): our bit is seen by its
        // look, or our load below sees its clear.
        wait::light_barrier(self.light);
        // The bit is usually set already (cleared only by a server about
        // to sleep): a load, which leaves the line shared, not an RMW.
        let bit = 1u64 << (c % 64);
        let word = self.summary(c as usize / 64);
        if word.load(Ordering::Relaxed) & bit == 0 {
            // AcqRel, ordered with a server's `fetch_and` on the word.
            word.fetch_or(bit, Ordering::AcqRel);
        }
        wait::ring(self.work_bell(), self.light);
    }

    /// A server's look for work, from client `from` on (round robin):
    /// takes one posted request by CAS `POSTED → TAKEN` and returns its
    /// client, slot and generation.
    pub(crate) fn take(&self, s: u32, from: u32) -> Option<(u32, u32, u32)> {
        let mask = self.slot_mask();
        // The clients with a summary bit from `from` on, then the rest.
        let later = self.summary_clients().filter(|&c| c >= from);
        let earlier = self.summary_clients().filter(|&c| c < from);
        later
            .chain(earlier)
            .find_map(|c| self.take_from(s, c, mask))
    }

    /// Takes one of client `c`'s posted requests, if any.
    fn take_from(&self, s: u32, c: u32, slot_mask: u64) -> Option<(u32, u32, u32)> {
        // Acquire, paired with `post`'s Release (SeqCst) `fetch_or`.
        let mut rest = self.posted(c).load(Ordering::Acquire) & slot_mask;
        while rest != 0 {
            let k = rest.trailing_zeros();
            rest &= rest - 1;
            let st = self.state(c, k);
            let cur = st.load(Ordering::Relaxed);
            if state::phase(cur) != state::POSTED {
                continue;
            }
            let generation = state::generation(cur);
            // Acquire on success, paired with `post`'s Release store: the
            // request's bytes are ours to read.
            if st
                .compare_exchange(
                    cur,
                    state::word(state::TAKEN, s, generation),
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                // After the CAS: until we answer, the client cannot post
                // in this slot again, so this clears no newer post's bit.
                // Cleared here, not by the client when it sees the call
                // end: a bit left set would have every idle look of every
                // server load this slot's state line while its client
                // works on it (measured: 1.4 times the two-bus ping-pong
                // at 64 B, against 1.0).
                self.posted(c).fetch_and(!(1 << k), Ordering::Relaxed);
                return Some((c, k, generation));
            }
        }
        None
    }

    /// Server `s` answers slot `(c, k)` of `generation`, which it took,
    /// with `phase` (`DONE` or `REFUSED`), after writing the response.
    /// `Ok` if the client still waited; `Err` if it had given up (the slot
    /// is then given back to it) or the slot moved on without us.
    pub(crate) fn answer(
        &self,
        s: u32,
        c: u32,
        k: u32,
        generation: u32,
        phase: u64,
    ) -> Result<(), ()> {
        let st = self.state(c, k);
        let taken = state::word(state::TAKEN, s, generation);
        // Release, paired with the client's Acquire load of `DONE` in
        // `Client::finish`: it sees the response's bytes and length.
        match st.compare_exchange(
            taken,
            state::word(phase, s, generation),
            Ordering::Release,
            Ordering::Relaxed,
        ) {
            Ok(_) => {
                wait::ring(self.client_bell(c), self.light);
                Ok(())
            }
            Err(now) => {
                if now == state::word(state::CANCELLED, s, generation) {
                    // Release, paired with the client's Acquire load in
                    // `reclaim`: we are done with the slot's bytes.
                    st.store(
                        state::word(state::FREE, 0, generation.wrapping_add(1)),
                        Ordering::Release,
                    );
                    self.client_count(c, client::LATE)
                        .fetch_add(1, Ordering::Relaxed);
                    wait::ring(self.client_bell(c), self.light);
                }
                Err(())
            }
        }
    }

    /// Client `c` gives up on its call in slot `k` (`generation`): takes
    /// it back if no server took it, else marks it `CANCELLED` for the
    /// server that did; or finds the answer there first.
    pub(crate) fn withdraw(&self, c: u32, k: u32, generation: u32) -> Withdrawn {
        let st = self.state(c, k);
        let mut cur = st.load(Ordering::Acquire);
        loop {
            if state::generation(cur) != generation {
                // Not ours any more (a hostile write): nothing to withdraw.
                return Withdrawn::Untaken;
            }
            let next = match state::phase(cur) {
                state::POSTED => state::word(state::FREE, 0, generation.wrapping_add(1)),
                state::TAKEN => state::word(state::CANCELLED, state::server(cur), generation),
                state::DONE | state::REFUSED => return Withdrawn::Answered(cur),
                _ => return Withdrawn::Untaken,
            };
            // Acquire on failure: a `DONE` found there publishes the
            // response (paired with `answer`'s Release CAS).
            match st.compare_exchange(cur, next, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => {
                    if state::phase(cur) == state::POSTED {
                        // A server that took it would have cleared it.
                        self.posted(c).fetch_and(!(1 << k), Ordering::Relaxed);
                        return Withdrawn::Untaken;
                    }
                    return Withdrawn::Cancelled(state::server(cur));
                }
                Err(now) => cur = now,
            }
        }
    }

    /// Client `c` takes slot `k` back from a server that died holding it
    /// (`TAKEN` or `CANCELLED` by `s`): `FREE`, next generation. False if
    /// the state moved meanwhile.
    pub(crate) fn reclaim_from_dead(&self, c: u32, k: u32, seen: u64) -> bool {
        self.state(c, k)
            .compare_exchange(
                seen,
                state::word(state::FREE, 0, state::generation(seen).wrapping_add(1)),
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok()
    }

    /// Client `c` is done with slot `k`'s answer (`DONE`/`REFUSED` of
    /// `generation`): the slot is free again, next generation.
    pub(crate) fn release(&self, c: u32, k: u32, generation: u32) {
        // Relaxed: no server touches a `FREE` slot; our next `post` is
        // the Release that hands it over again.
        self.state(c, k).store(
            state::word(state::FREE, 0, generation.wrapping_add(1)),
            Ordering::Relaxed,
        );
    }
}
