//! A request-response service's bytes (docs/LAYOUT.md §25): its header
//! fields, its control area (servers' and clients' lines) and its call
//! slots. The protocol over them is `reqrep`'s.

use super::{GeometryError, LINE};

/// Byte offsets of a service's own header fields (its kind says they are
/// there). The request type is the header's message type (`msg_*`,
/// `type_hash`, `type_name`); the response type sits where a blackboard
/// keeps its key type (536..616).
pub mod header {
    /// u32: call slots per client: how many requests one client may have
    /// outstanding (1..=64).
    pub const SLOTS: usize = 616;
    /// u32: server entries (1..=64).
    pub const SERVERS: usize = 620;
    /// The end of the service's header fields.
    pub const END: usize = 624;
}

/// Byte offsets in a service's control area, relative to
/// `control_offset`.
pub mod control {
    /// u32: the doorbell idle servers sleep on (the bus's futex protocol,
    /// `wait`), rung by a client after it posts a request.
    pub const WORK_BELL: usize = 0;
    /// [u64; 4]: bit `c` set: client entry `c` may have a posted request
    /// (set by the client after it posts; cleared by a server that finds
    /// none there, and set again if it then finds one).
    pub const SUMMARY: usize = 64;
    /// Server lines, one per server entry, from here.
    pub const SERVERS: usize = 128;
}

/// Byte offsets in a server's line, relative to the line.
pub mod server {
    /// u32: pid of the process serving in this entry (0: never used).
    pub const PID: usize = 0;
    /// u64: requests taken.
    pub const TAKEN: usize = 8;
    /// u64: responses delivered (the client was still waiting).
    pub const ANSWERED: usize = 16;
    /// u64: responses that came after their caller gave up, dropped.
    pub const LATE: usize = 24;
    /// u64: requests dropped unanswered (the caller is told `Refused`).
    pub const REFUSED: usize = 32;
    /// u64: nanoseconds from take to response, summed over `ANSWERED`.
    pub const LATENCY_SUM_NS: usize = 40;
    /// u64: the longest of them.
    pub const LATENCY_MAX_NS: usize = 48;
}

/// Byte offsets in a client's entry (two lines), relative to the entry.
pub mod client {
    /// u64: bit `k` set: slot `k` holds a posted request no server took
    /// yet (set by the client, cleared by the server that takes it or by
    /// the client withdrawing it).
    pub const POSTED: usize = 0;
    /// u32: the doorbell the client sleeps on, rung by a server after it
    /// answers.
    pub const BELL: usize = 8;
    /// u32: pid of the client process in this entry (0: never used).
    pub const PID: usize = 12;
    /// u64: calls sent (second line: counters, the client's alone but
    /// `LATE`).
    pub const CALLS: usize = 64;
    /// u64: calls that ended `TimedOut`.
    pub const TIMEOUTS: usize = 72;
    /// u64: responses that came after the call ended, dropped (added by
    /// the server that made one, or by the client that took the entry
    /// over from a dead one).
    pub const LATE: usize = 80;
    /// u64: calls that ended `ServerGone` or `NoServer`.
    pub const GONE: usize = 88;
    /// u64: sends refused `Full`.
    pub const FULL: usize = 96;
    /// Bytes per client entry.
    pub const BYTES: usize = 128;
}

/// Byte offsets in a call slot, relative to the slot.
pub mod slot {
    /// u64: the slot's state, see [`super::state`].
    pub const STATE: usize = 0;
    /// u32: the request's length in bytes (the client's, under `STATE`).
    pub const REQUEST_LEN: usize = 8;
    /// u32: the response's length in bytes (the server's, under `STATE`).
    pub const RESPONSE_LEN: usize = 12;
    /// The request's bytes, from here; the response's follow, each padded
    /// to 64.
    pub const REQUEST: usize = 64;
}

/// A slot's state word: phase (bits 0..8), the server entry that took it
/// (bits 8..16, meaningful in `TAKEN`, `CANCELLED`, `DONE`, `REFUSED`), and
/// the slot's generation (bits 32..64), which every return to `FREE`
/// advances, so that a stale party's compare-and-swap fails.
pub mod state {
    /// The client's: no call in it.
    pub const FREE: u64 = 0;
    /// A request waits for a server.
    pub const POSTED: u64 = 1;
    /// A server took it and owns the response area.
    pub const TAKEN: u64 = 2;
    /// The response is in the slot, for the client.
    pub const DONE: u64 = 3;
    /// The caller gave up on a taken request; the server that took it
    /// still owns the slot and gives it back (`FREE`) when it is done.
    pub const CANCELLED: u64 = 4;
    /// The server dropped the request unanswered.
    pub const REFUSED: u64 = 5;

    /// The word for `phase`, `server`, `generation`.
    #[inline]
    pub fn word(phase: u64, server: u32, generation: u32) -> u64 {
        phase | (u64::from(server & 0xff) << 8) | (u64::from(generation) << 32)
    }
    /// The phase of `word`.
    #[inline]
    pub fn phase(word: u64) -> u64 {
        word & 0xff
    }
    /// The server entry of `word`.
    #[inline]
    pub fn server(word: u64) -> u32 {
        ((word >> 8) & 0xff) as u32
    }
    /// The generation of `word`.
    #[inline]
    pub fn generation(word: u64) -> u32 {
        (word >> 32) as u32
    }
}

/// The most client entries a service has.
pub const MAX_CLIENTS: u32 = 256;
/// The most requests one client may have outstanding.
pub const MAX_SLOTS: u32 = 64;
/// The most server entries a service has.
pub const MAX_SERVERS: u32 = 64;
/// The largest request or response, in bytes.
pub const MAX_PAYLOAD: u32 = 64 << 20;

/// The numbers a service's offsets come from: what its creator asks for,
/// or what a validated header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceGeometry {
    /// Client entries (the header's `capacity`).
    pub clients: u32,
    /// Call slots per client.
    pub slots: u32,
    /// Server entries.
    pub servers: u32,
    /// The largest request, in bytes (the header's `msg_size`).
    pub request: u32,
    /// The largest response, in bytes.
    pub response: u32,
}

impl ServiceGeometry {
    /// A service's shape.
    ///
    /// # Errors
    /// [`GeometryError::Service`] naming the number out of its bounds.
    pub fn new(
        clients: u32,
        slots: u32,
        servers: u32,
        request: u32,
        response: u32,
    ) -> Result<Self, GeometryError> {
        let check = |what: &'static str, found: u32, max: u32| {
            if (1..=max).contains(&found) {
                Ok(())
            } else {
                Err(GeometryError::Service { what, found, max })
            }
        };
        check("clients", clients, MAX_CLIENTS)?;
        check("slots per client", slots, MAX_SLOTS)?;
        check("servers", servers, MAX_SERVERS)?;
        check("request bytes", request, MAX_PAYLOAD)?;
        check("response bytes", response, MAX_PAYLOAD)?;
        Ok(ServiceGeometry {
            clients,
            slots,
            servers,
            request,
            response,
        })
    }

    /// Bytes per call slot: a line of state, then the request's and the
    /// response's bytes, each padded to 64.
    pub fn slot_size(&self) -> u64 {
        let pad = |n: u32| u64::from(n).div_ceil(LINE as u64) * LINE as u64;
        slot::REQUEST as u64 + pad(self.request) + pad(self.response)
    }

    /// The offset of a slot's response bytes, relative to the slot.
    pub fn response_offset(&self) -> usize {
        slot::REQUEST + (self.request as usize).div_ceil(LINE) * LINE
    }

    /// Bytes of the control area before it is padded to pages.
    pub fn control_bytes(&self) -> u64 {
        self.clients_at() as u64 + u64::from(self.clients) * client::BYTES as u64
    }

    /// Where the client entries start in the control area.
    pub fn clients_at(&self) -> usize {
        control::SERVERS + self.servers as usize * LINE
    }

    /// Call slots in all.
    pub fn slot_count(&self) -> u64 {
        u64::from(self.clients) * u64::from(self.slots)
    }
}
