//! A request-response service's figures ([`ServiceStat`]): its shape, each
//! server entry's and client entry's line, and the calls each client has
//! outstanding, read from the file without a lock while servers and
//! clients work.
//!
//! Every word here is another process's to write, or a hostile one's:
//! nothing read is used as an index before it is checked against the
//! validated geometry, every loop runs over the geometry (at most 64
//! servers, 256 clients of 64 slots), and a load past the mapping reads 0.

use crate::error::OpenError;
use crate::mem::Region;
use crate::sync::Ordering;
use crate::sys::lock;
use crate::wire::service::{client, control, server, slot, state};
use crate::wire::{Header, LINE, TypeFingerprint};

use crate::wire::lock_byte::{CLIENT as CLIENT_LOCK, SERVER as SERVER_LOCK};

/// A request-response service, as [`stat`](super::stat) reads it: its
/// shape, every server and client entry ever used with its counters and
/// liveness, and the calls in flight. Read without a lock while the
/// service works, so the figures are one pass that may mix moments.
///
/// # Examples
/// ```
/// use shmbus::{OpenOptions, Wait, reqrep::{self, Client, Server}};
/// # let name = format!("/dev/shm/shmbus-doc-servicestat-{}", std::process::id());
/// let opts = reqrep::Options::new(4).slots(2).servers(1).request_size(16).response_size(32);
/// let server = Server::<[u8], [u8]>::create(&name, &opts)?;
/// let mut client = Client::<[u8], [u8]>::attach(&name, &OpenOptions::default())?;
/// let call = client.send(b"ping", Wait::Never)?;
///
/// let svc = shmbus::stat::stat(&name)?.service.expect("a service");
/// assert_eq!((svc.clients, svc.slots, svc.servers), (4, 2, 1));
/// assert_eq!((svc.request.size, svc.response.size), (16, 32));
/// assert_eq!(svc.per_server[0].pid, std::process::id());
/// let me = &svc.per_client[0];
/// assert_eq!((me.entry, me.calls, me.alive), (0, 1, true));
/// assert_eq!(me.outstanding[0].phase.name(), "posted");
/// # drop((call, client, server));
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceStat {
    /// Client entries: how many clients may be attached at once.
    pub clients: u32,
    /// Call slots per client: how many calls one client may have
    /// outstanding.
    pub slots: u32,
    /// Server entries: how many servers may serve at once.
    pub servers: u32,
    /// The request type; its size is the largest request (`bytes` of that
    /// size for a raw service).
    pub request: TypeFingerprint,
    /// The response type; its size is the largest response.
    pub response: TypeFingerprint,
    /// Every server entry ever used (its pid not 0), in entry order.
    pub per_server: Vec<ServerStat>,
    /// Every client entry ever used (its pid not 0), in entry order.
    pub per_client: Vec<ClientStat>,
}

impl ServiceStat {
    /// Calls in flight over all clients: every call slot not `FREE`.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, Wait, reqrep::{self, Client, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-svc-inflight-{}", std::process::id());
    /// let server = Server::<u64, u64>::create(&name, &reqrep::Options::new(2))?;
    /// let mut client = Client::<u64, u64>::attach(&name, &OpenOptions::default())?;
    /// let (a, b) = (client.send(&1, Wait::Never)?, client.send(&2, Wait::Never)?);
    /// assert_eq!(shmbus::stat::stat(&name)?.service.expect("a service").in_flight(), 2);
    /// # drop((a, b, client, server));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn in_flight(&self) -> usize {
        self.per_client.iter().map(|c| c.outstanding.len()).sum()
    }

    /// Server entries whose process holds its lock.
    ///
    /// # Examples
    /// ```
    /// use shmbus::reqrep::{self, Server};
    /// # let name = format!("/dev/shm/shmbus-doc-svc-live-{}", std::process::id());
    /// let server = Server::<u64, u64>::create(&name, &reqrep::Options::new(2))?;
    /// assert_eq!(shmbus::stat::stat(&name)?.service.expect("a service").live_servers(), 1);
    /// drop(server);
    /// assert_eq!(shmbus::stat::stat(&name)?.service.expect("a service").live_servers(), 0);
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn live_servers(&self) -> usize {
        self.per_server.iter().filter(|s| s.alive).count()
    }

    /// Client entries whose process holds its lock.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, reqrep::{self, Client, Server}};
    /// # let name = format!("/dev/shm/shmbus-doc-svc-clients-{}", std::process::id());
    /// let server = Server::<u64, u64>::create(&name, &reqrep::Options::new(2))?;
    /// let client = Client::<u64, u64>::attach(&name, &OpenOptions::default())?;
    /// assert_eq!(shmbus::stat::stat(&name)?.service.expect("a service").live_clients(), 1);
    /// # drop((client, server));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn live_clients(&self) -> usize {
        self.per_client.iter().filter(|c| c.alive).count()
    }
}

/// One server entry's line: who serves there and what it did. The
/// counters are the entry's since the service was made, over every
/// process that served in it.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::{OpenOptions, Wait, reqrep::{self, Client, Server}};
/// # let name = format!("/dev/shm/shmbus-doc-serverstat-{}", std::process::id());
/// let server = Server::<u64, u64>::create(&name, &reqrep::Options::new(2))?;
/// let mut client = Client::<u64, u64>::attach(&name, &OpenOptions::default())?;
/// let call = client.send(&3, Wait::Never)?;
/// server.recv(Wait::Never).expect("the request").respond(&9)?;
/// assert_eq!(client.wait(call, Wait::For(Duration::from_secs(1)))?, 9);
///
/// let line = &shmbus::stat::stat(&name)?.service.expect("a service").per_server[0];
/// assert_eq!((line.entry, line.taken, line.answered, line.late, line.refused), (0, 1, 1, 0, 0));
/// assert!(line.alive && line.mean_latency_ns().is_some());
/// # drop((client, server));
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerStat {
    /// Its entry (below [`ServiceStat::servers`]).
    pub entry: u32,
    /// The pid of the process that last served in it.
    pub pid: u32,
    /// Whether that process still holds the entry's lock.
    pub alive: bool,
    /// Requests taken.
    pub taken: u64,
    /// Responses delivered to a caller still waiting.
    pub answered: u64,
    /// Responses made after their caller gave up: dropped.
    pub late: u64,
    /// Requests dropped unanswered (their callers were told `Refused`).
    pub refused: u64,
    /// Nanoseconds from take to response, summed over `answered`.
    pub latency_sum_ns: u64,
    /// The longest of them, ns.
    pub latency_max_ns: u64,
}

impl ServerStat {
    /// The mean time from take to response, ns; `None` before the first
    /// response.
    ///
    /// # Examples
    /// ```
    /// use shmbus::stat::ServerStat;
    /// let line = ServerStat { entry: 0, pid: 1, alive: true, taken: 4, answered: 4, late: 0,
    ///     refused: 0, latency_sum_ns: 400, latency_max_ns: 150 };
    /// assert_eq!(line.mean_latency_ns(), Some(100));
    /// assert_eq!(ServerStat { answered: 0, ..line }.mean_latency_ns(), None);
    /// ```
    pub fn mean_latency_ns(&self) -> Option<u64> {
        self.latency_sum_ns.checked_div(self.answered)
    }
}

/// One client entry's line and the calls in its slots.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::{OpenOptions, Wait, reqrep::{self, CallError, Client, Server}};
/// # let name = format!("/dev/shm/shmbus-doc-clientstat-{}", std::process::id());
/// let server = Server::<u64, u64>::create(&name, &reqrep::Options::new(2))?;
/// let mut client = Client::<u64, u64>::attach(&name, &OpenOptions::default())?;
/// assert_eq!(client.call(&1, Wait::For(Duration::from_millis(1))), Err(CallError::TimedOut));
///
/// let line = &shmbus::stat::stat(&name)?.service.expect("a service").per_client[0];
/// assert_eq!((line.calls, line.timeouts, line.gone, line.full), (1, 1, 0, 0));
/// assert!(line.outstanding.is_empty()); // withdrawn: no server took it
/// # drop((client, server));
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientStat {
    /// Its entry (below [`ServiceStat::clients`]).
    pub entry: u32,
    /// The pid of the process that last called from it.
    pub pid: u32,
    /// Whether that process still holds the entry's lock.
    pub alive: bool,
    /// Its call slots that are not `FREE`, in slot order.
    pub outstanding: Vec<CallStat>,
    /// Calls sent.
    pub calls: u64,
    /// Calls that ended timed out.
    pub timeouts: u64,
    /// Responses that came after their call ended: dropped.
    pub late: u64,
    /// Calls that ended with their server gone, or with no server alive.
    pub gone: u64,
    /// Sends refused because every slot held a call.
    pub full: u64,
}

/// One call slot that is not `FREE`: its state word, taken apart.
///
/// # Examples
/// ```
/// use shmbus::stat::{CallPhase, CallStat};
/// let call = CallStat { slot: 2, phase: CallPhase::Taken, generation: 7, server: Some(1) };
/// assert_eq!(call.phase.name(), "taken");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallStat {
    /// Its slot (below [`ServiceStat::slots`]).
    pub slot: u32,
    /// Where the call is.
    pub phase: CallPhase,
    /// The slot's generation: every return to `FREE` moves it.
    pub generation: u32,
    /// The server entry that took it, in the phases that name one
    /// (`taken`, `done`, `cancelled`, `refused`). As written: a hostile
    /// word may name an entry past the last.
    pub server: Option<u32>,
}

/// The phase of a call slot's state word (docs/LAYOUT.md §22).
///
/// # Examples
/// ```
/// use shmbus::stat::CallPhase;
/// assert_eq!(CallPhase::of(2), CallPhase::Taken);
/// assert_eq!(CallPhase::of(0x99).name(), "unknown");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallPhase {
    /// No call in the slot.
    Free,
    /// Posted: waits for a server.
    Posted,
    /// A server took it and is working on it.
    Taken,
    /// Answered: the response waits for its client.
    Done,
    /// Its caller gave up after a server took it: the server gives the
    /// slot back when it is done.
    Cancelled,
    /// The server dropped it unanswered: the refusal waits for its client.
    Refused,
    /// A phase no writer makes (a corrupt or hostile word), as read.
    Unknown(u8),
}

impl CallPhase {
    /// The phase in a state word's low byte.
    ///
    /// # Examples
    /// ```
    /// use shmbus::stat::CallPhase;
    /// assert_eq!(CallPhase::of(1), CallPhase::Posted);
    /// assert_eq!(CallPhase::of(9), CallPhase::Unknown(9));
    /// ```
    pub fn of(phase: u8) -> CallPhase {
        match u64::from(phase) {
            state::FREE => CallPhase::Free,
            state::POSTED => CallPhase::Posted,
            state::TAKEN => CallPhase::Taken,
            state::DONE => CallPhase::Done,
            state::CANCELLED => CallPhase::Cancelled,
            state::REFUSED => CallPhase::Refused,
            _ => CallPhase::Unknown(phase),
        }
    }

    /// Its name, as `shmbus stat` prints it: `free`, `posted`, `taken`,
    /// `done`, `cancelled`, `refused` or `unknown`.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(shmbus::stat::CallPhase::Cancelled.name(), "cancelled");
    /// ```
    pub fn name(&self) -> &'static str {
        match self {
            CallPhase::Free => "free",
            CallPhase::Posted => "posted",
            CallPhase::Taken => "taken",
            CallPhase::Done => "done",
            CallPhase::Cancelled => "cancelled",
            CallPhase::Refused => "refused",
            CallPhase::Unknown(_) => "unknown",
        }
    }

    /// Whether a state word of this phase names the server that took it.
    fn has_server(&self) -> bool {
        matches!(
            self,
            CallPhase::Taken | CallPhase::Done | CallPhase::Cancelled | CallPhase::Refused
        )
    }
}

/// Loads that read 0 past the mapping instead of panicking: the offsets
/// come from a validated header, but nothing here relies on it.
struct Words<'r, R> {
    region: &'r R,
}

impl<R: Region> Words<'_, R> {
    fn u64(&self, at: usize) -> u64 {
        match at.checked_add(8) {
            Some(end) if end <= self.region.len() && at % 8 == 0 => {
                self.region.word(at).load(Ordering::Relaxed)
            }
            _ => 0,
        }
    }

    fn u32(&self, at: usize) -> u32 {
        match at.checked_add(4) {
            Some(end) if end <= self.region.len() && at % 4 == 0 => {
                self.region.word32(at).load(Ordering::Relaxed)
            }
            _ => 0,
        }
    }
}

/// Reads service `header`'s figures from `region`; `alive(byte)` probes
/// a lock byte (the heap has none to probe).
pub(super) fn read<R: Region>(
    region: &R,
    header: &Header,
    mut alive: impl FnMut(u64) -> Result<bool, OpenError>,
) -> Result<ServiceStat, OpenError> {
    let geo = header
        .service_geometry()
        .map_err(|e| OpenError::InvalidGeometry(e.to_string()))?;
    let w = Words { region };
    let c0 = header.control_offset as usize;
    let data = header.data_offset as usize;
    let slot_size = geo.slot_size() as usize;
    let mut per_server = Vec::new();
    for s in 0..geo.servers {
        let line = c0 + control::SERVERS + s as usize * LINE;
        let pid = w.u32(line + server::PID);
        if pid == 0 {
            continue;
        }
        per_server.push(ServerStat {
            entry: s,
            pid,
            alive: alive(SERVER_LOCK + u64::from(s))?,
            taken: w.u64(line + server::TAKEN),
            answered: w.u64(line + server::ANSWERED),
            late: w.u64(line + server::LATE),
            refused: w.u64(line + server::REFUSED),
            latency_sum_ns: w.u64(line + server::LATENCY_SUM_NS),
            latency_max_ns: w.u64(line + server::LATENCY_MAX_NS),
        });
    }
    let mut per_client = Vec::new();
    for c in 0..geo.clients {
        let line = c0 + geo.clients_at() + c as usize * client::BYTES;
        let pid = w.u32(line + client::PID);
        if pid == 0 {
            continue;
        }
        let mut outstanding = Vec::new();
        for k in 0..geo.slots {
            let index = c as usize * geo.slots as usize + k as usize;
            let at = index
                .checked_mul(slot_size)
                .and_then(|o| o.checked_add(data + slot::STATE));
            let word = at.map_or(0, |at| w.u64(at));
            let phase = CallPhase::of(state::phase(word) as u8);
            if phase == CallPhase::Free {
                continue;
            }
            outstanding.push(CallStat {
                slot: k,
                phase,
                generation: state::generation(word),
                server: phase.has_server().then(|| state::server(word)),
            });
        }
        per_client.push(ClientStat {
            entry: c,
            pid,
            alive: alive(CLIENT_LOCK + u64::from(c))?,
            outstanding,
            calls: w.u64(line + client::CALLS),
            timeouts: w.u64(line + client::TIMEOUTS),
            late: w.u64(line + client::LATE),
            gone: w.u64(line + client::GONE),
            full: w.u64(line + client::FULL),
        });
    }
    Ok(ServiceStat {
        clients: geo.clients,
        slots: geo.slots,
        servers: geo.servers,
        request: header.msg.clone(),
        response: header
            .key
            .clone()
            .unwrap_or_else(|| TypeFingerprint::new("", 0, 0)),
        per_server,
        per_client,
    })
}

/// Whether the process holding lock byte `byte` of `fd` lives.
pub(super) fn probe(
    fd: std::os::fd::BorrowedFd<'_>,
) -> impl FnMut(u64) -> Result<bool, OpenError> + '_ {
    move |byte| {
        lock::is_held(fd, byte).map_err(|source| OpenError::Io {
            what: "fcntl",
            source,
        })
    }
}

#[cfg(all(test, not(loom), not(miri)))]
mod tests {
    use std::os::unix::fs::FileExt;
    use std::time::Duration;

    use super::*;
    use crate::options::OpenOptions;
    use crate::reqrep::{self, Client, Server};
    use crate::wait::Wait;

    /// A service in /dev/shm, removed when dropped.
    struct Named(String);

    impl Named {
        fn new(what: &str) -> Named {
            let name = format!("/dev/shm/shmbus-stat-svc-{what}-{}", std::process::id());
            let _ = crate::remove(&name);
            Named(name)
        }
    }

    impl Drop for Named {
        fn drop(&mut self) {
            let _ = crate::remove(&self.0);
        }
    }

    fn raw_opts() -> reqrep::Options {
        reqrep::Options::new(3)
            .slots(4)
            .servers(2)
            .request_size(24)
            .response_size(40)
    }

    fn service(name: &str) -> ServiceStat {
        crate::stat::stat(name)
            .expect("stat")
            .service
            .expect("a service")
    }

    #[test]
    fn a_new_service_shows_its_shape_and_its_creator_as_server_zero() {
        let n = Named::new("shape");
        let server = Server::<[u8], [u8]>::create(&n.0, &raw_opts()).unwrap();
        let stat = crate::stat::stat(&n.0).unwrap();
        assert_eq!(
            stat.size,
            Some(crate::stat::Size::Calls {
                clients: 3,
                slots: 4
            })
        );
        let svc = stat.service.expect("a service");
        assert_eq!((svc.clients, svc.slots, svc.servers), (3, 4, 2));
        assert_eq!((svc.request.size, svc.response.size), (24, 40));
        assert_eq!(svc.per_server.len(), 1);
        assert_eq!(svc.per_server[0].pid, std::process::id());
        assert!(svc.per_server[0].alive);
        assert!(svc.per_client.is_empty());
        // A service has no publisher and no subscribers of a bus.
        assert_eq!((stat.publisher_pid, stat.publisher_alive), (0, false));
        assert!(stat.subscribers.is_empty() && stat.epoch.is_none());
        drop(server);
        assert!(!service(&n.0).per_server[0].alive);
    }

    #[test]
    fn each_phase_of_a_call_shows_in_its_client_entry_with_its_server() {
        let n = Named::new("phases");
        let server = Server::<[u8], [u8]>::create(&n.0, &raw_opts()).unwrap();
        let mut client = Client::<[u8], [u8]>::attach(&n.0, &OpenOptions::default()).unwrap();
        let call = client.send(b"abc", Wait::Never).unwrap();
        let posted = &service(&n.0).per_client[0];
        assert_eq!(posted.outstanding.len(), 1);
        assert_eq!(posted.outstanding[0].phase, CallPhase::Posted);
        assert_eq!(posted.outstanding[0].server, None);
        let generation = posted.outstanding[0].generation;

        let request = server.recv(Wait::Never).expect("taken");
        let taken = service(&n.0).per_client[0].outstanding[0];
        assert_eq!(
            taken,
            CallStat {
                slot: call.slot(),
                phase: CallPhase::Taken,
                generation,
                server: Some(0),
            }
        );
        request.respond(b"xyz").unwrap();
        let svc = service(&n.0);
        assert_eq!(svc.per_client[0].outstanding[0].phase, CallPhase::Done);
        assert_eq!(
            (svc.per_server[0].taken, svc.per_server[0].answered),
            (1, 1)
        );
        let mut out = Vec::new();
        client
            .wait_into(call, &mut out, Wait::For(Duration::from_secs(1)))
            .unwrap();
        let svc = service(&n.0);
        assert!(svc.per_client[0].outstanding.is_empty());
        assert_eq!(svc.per_client[0].calls, 1);
        assert_eq!(svc.in_flight(), 0);
    }

    #[test]
    fn a_call_given_up_after_its_take_shows_cancelled_then_late() {
        let n = Named::new("late");
        let server = Server::<[u8], [u8]>::create(&n.0, &raw_opts()).unwrap();
        let mut client = Client::<[u8], [u8]>::attach(&n.0, &OpenOptions::default()).unwrap();
        let call = client.send(b"q", Wait::Never).unwrap();
        let request = server.recv(Wait::Never).expect("taken");
        let mut out = Vec::new();
        let err = client
            .wait_into(call, &mut out, Wait::For(Duration::from_millis(1)))
            .unwrap_err();
        assert_eq!(err, reqrep::CallError::TimedOut);
        let svc = service(&n.0);
        assert_eq!(svc.per_client[0].outstanding[0].phase, CallPhase::Cancelled);
        assert_eq!(svc.per_client[0].timeouts, 1);
        assert!(request.respond(b"too late").is_err());
        let svc = service(&n.0);
        assert!(svc.per_client[0].outstanding.is_empty());
        assert_eq!((svc.per_client[0].late, svc.per_server[0].late), (1, 1));
    }

    /// splitmix64: garbage that differs in every word.
    fn garbage(mut z: u64) -> u64 {
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    #[test]
    fn garbage_in_every_word_past_the_header_never_panics_nor_loops() {
        let n = Named::new("garbage");
        let opts = reqrep::Options::new(256)
            .slots(64)
            .servers(64)
            .request_size(8)
            .response_size(8);
        let server = Server::<[u8], [u8]>::create(&n.0, &opts).unwrap();
        let header = crate::stat::stat(&n.0).unwrap().raw_header().clone();
        let file = std::fs::OpenOptions::new().write(true).open(&n.0).unwrap();
        for seed in 0..3u64 {
            let from = header.control_offset;
            let bytes: Vec<u8> = (0..(header.total_len - from) / 8)
                .flat_map(|i| {
                    // Seed 1: every word all ones (phase 0xff, server 255,
                    // counters at their largest).
                    let w = if seed == 1 {
                        u64::MAX
                    } else {
                        garbage(seed << 40 | i)
                    };
                    w.to_le_bytes()
                })
                .collect();
            file.write_all_at(&bytes, from).unwrap();
            let started = std::time::Instant::now();
            let svc = service(&n.0);
            assert!(started.elapsed() < Duration::from_secs(5));
            assert_eq!((svc.clients, svc.slots, svc.servers), (256, 64, 64));
            assert!(svc.per_server.len() <= 64 && svc.per_client.len() <= 256);
            for c in &svc.per_client {
                assert!(c.entry < 256 && c.outstanding.len() <= 64);
                assert!(c.outstanding.iter().all(|k| k.slot < 64));
            }
            for s in &svc.per_server {
                // Means over garbage are garbage, never a division by 0.
                let _ = s.mean_latency_ns();
            }
            if seed == 1 {
                let call = svc.per_client[0].outstanding[0];
                assert_eq!(call.phase, CallPhase::Unknown(0xff));
                assert_eq!((call.server, call.generation), (None, u32::MAX));
            }
        }
        drop(server);
    }

    #[test]
    fn a_server_entry_in_a_state_word_past_the_last_is_shown_as_written() {
        let n = Named::new("past");
        let server = Server::<[u8], [u8]>::create(&n.0, &raw_opts()).unwrap();
        let client = Client::<[u8], [u8]>::attach(&n.0, &OpenOptions::default()).unwrap();
        let header = crate::stat::stat(&n.0).unwrap().raw_header().clone();
        let word = state::word(state::TAKEN, 200, 5);
        let file = std::fs::OpenOptions::new().write(true).open(&n.0).unwrap();
        // Slot 1 of client 0.
        let at = header.data_offset + u64::from(header.slot_size);
        file.write_all_at(&word.to_le_bytes(), at).unwrap();
        let call = service(&n.0).per_client[0].outstanding[0];
        assert_eq!(
            call,
            CallStat {
                slot: 1,
                phase: CallPhase::Taken,
                generation: 5,
                server: Some(200),
            }
        );
        // Put it back, or the client's drop would find a call it never made.
        file.write_all_at(&0u64.to_le_bytes(), at).unwrap();
        drop((client, server));
    }

    #[test]
    fn reads_past_the_mapping_are_zero_not_a_panic() {
        let region = crate::mem::HeapRegion::new(64);
        let w = Words { region: &region };
        assert_eq!((w.u64(64), w.u64(60), w.u64(usize::MAX - 3)), (0, 0, 0));
        assert_eq!((w.u32(64), w.u32(62), w.u32(usize::MAX - 1)), (0, 0, 0));
        region.word(56).store(7, Ordering::Relaxed);
        assert_eq!(w.u64(56), 7);
    }
}
