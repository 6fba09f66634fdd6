//! A service in `top`: its shape, each server entry's and client entry's
//! counters with their rates since the previous sample, and the calls in
//! flight (`tui/calls.rs` writes them).
//!
//! A rate needs the same process in the same entry at both samples, and a
//! counter that did not go back: an entry taken over by another process
//! (a new pid) starts a new series, and a counter that went back (a
//! hostile write) has no rate, never a negative one.

use shmbus::stat::{ClientStat, ServerStat, ServiceStat};

use super::proc_row::ProcRow;

/// A service's figures, sampled.
#[derive(Clone, Debug)]
pub struct ServiceRow {
    /// Client entries, call slots per client, server entries.
    pub clients: u32,
    pub slots: u32,
    pub servers: u32,
    /// The largest request and response, in bytes.
    pub request_size: u32,
    pub response_size: u32,
    /// Calls sent per second over every client entry (`None` for the
    /// first sample).
    pub calls_per_sec: Option<f64>,
    /// Each server entry ever used, in entry order.
    pub per_server: Vec<ServerRow>,
    /// Each client entry ever used, in entry order.
    pub per_client: Vec<ClientRow>,
}

impl ServiceRow {
    /// Server entries whose process lives.
    pub fn live_servers(&self) -> usize {
        self.per_server.iter().filter(|s| s.line.alive).count()
    }

    /// Client entries whose process lives.
    pub fn live_clients(&self) -> usize {
        self.per_client.iter().filter(|c| c.line.alive).count()
    }

    /// Calls in flight: client slots not free.
    pub fn in_flight(&self) -> usize {
        self.per_client
            .iter()
            .map(|c| c.line.outstanding.len())
            .sum()
    }
}

/// One server entry, sampled.
#[derive(Clone, Debug)]
pub struct ServerRow {
    pub line: ServerStat,
    /// Responses delivered per second since the previous sample.
    pub answered_per_sec: Option<f64>,
    /// Its process's CPU and context switches (a live one's).
    pub proc: Option<ProcRow>,
}

/// One client entry, sampled.
#[derive(Clone, Debug)]
pub struct ClientRow {
    pub line: ClientStat,
    /// Calls sent per second since the previous sample.
    pub calls_per_sec: Option<f64>,
    /// Its process's CPU and context switches (a live one's).
    pub proc: Option<ProcRow>,
}

/// `now - before` per second, if `before` is the same process's and the
/// counter did not go back.
fn per_sec(now: u64, before: Option<u64>, dt: Option<f64>) -> Option<f64> {
    let (before, dt) = before.zip(dt)?;
    now.checked_sub(before).map(|d| d as f64 / dt)
}

/// A service's row from its stat and the previous sample's row (`dt`
/// seconds ago); `proc(pid)` gives a live process's figures.
pub fn row(
    svc: &ServiceStat,
    prev: Option<&ServiceRow>,
    dt: Option<f64>,
    mut proc: impl FnMut(u32) -> Option<ProcRow>,
) -> ServiceRow {
    let per_server: Vec<ServerRow> = svc
        .per_server
        .iter()
        .map(|l| {
            let before = prev.and_then(|p| {
                p.per_server
                    .iter()
                    .find(|r| r.line.entry == l.entry && r.line.pid == l.pid)
            });
            ServerRow {
                answered_per_sec: per_sec(l.answered, before.map(|b| b.line.answered), dt),
                proc: l.alive.then(|| proc(l.pid)).flatten(),
                line: *l,
            }
        })
        .collect();
    let per_client: Vec<ClientRow> = svc
        .per_client
        .iter()
        .map(|l| {
            let before = prev.and_then(|p| {
                p.per_client
                    .iter()
                    .find(|r| r.line.entry == l.entry && r.line.pid == l.pid)
            });
            ClientRow {
                calls_per_sec: per_sec(l.calls, before.map(|b| b.line.calls), dt),
                proc: l.alive.then(|| proc(l.pid)).flatten(),
                line: l.clone(),
            }
        })
        .collect();
    // Over the entries seen at both samples: one that came or went between
    // them has no rate to add.
    let rates: Vec<f64> = per_client.iter().filter_map(|c| c.calls_per_sec).collect();
    let calls_per_sec = (dt.is_some() && prev.is_some()).then(|| rates.iter().sum());
    ServiceRow {
        clients: svc.clients,
        slots: svc.slots,
        servers: svc.servers,
        request_size: svc.request.size,
        response_size: svc.response.size,
        calls_per_sec,
        per_server,
        per_client,
    }
}

#[cfg(test)]
mod tests {
    use shmbus::TypeFingerprint;

    use super::*;

    fn server(entry: u32, pid: u32, answered: u64) -> ServerStat {
        ServerStat {
            entry,
            pid,
            alive: true,
            taken: answered,
            answered,
            late: 0,
            refused: 0,
            latency_sum_ns: answered * 1000,
            latency_max_ns: 2000,
        }
    }

    fn client(entry: u32, pid: u32, calls: u64) -> ClientStat {
        ClientStat {
            entry,
            pid,
            alive: true,
            outstanding: Vec::new(),
            calls,
            timeouts: 0,
            late: 0,
            gone: 0,
            full: 0,
        }
    }

    fn stat(servers: Vec<ServerStat>, clients: Vec<ClientStat>) -> ServiceStat {
        ServiceStat {
            clients: 4,
            slots: 8,
            servers: 2,
            request: TypeFingerprint::bytes(64),
            response: TypeFingerprint::bytes(128),
            per_server: servers,
            per_client: clients,
        }
    }

    #[test]
    fn rates_come_from_the_same_process_in_the_same_entry_and_never_go_negative() {
        let first = row(
            &stat(
                vec![server(0, 10, 100)],
                vec![client(0, 20, 50), client(1, 21, 7)],
            ),
            None,
            None,
            |_| None,
        );
        assert_eq!(first.calls_per_sec, None);
        assert!(first.per_server[0].answered_per_sec.is_none());
        let second = row(
            &stat(
                vec![server(0, 10, 150)],
                // Entry 1 taken over by another process; entry 0 went back.
                vec![client(0, 20, 40), client(1, 22, 9)],
            ),
            Some(&first),
            Some(0.5),
            |_| None,
        );
        assert_eq!(second.per_server[0].answered_per_sec, Some(100.0));
        assert_eq!(second.per_client[0].calls_per_sec, None);
        assert_eq!(second.per_client[1].calls_per_sec, None);
        assert_eq!(second.calls_per_sec, Some(0.0));
        assert_eq!((second.request_size, second.response_size), (64, 128));
    }

    #[test]
    fn live_counts_and_calls_in_flight_add_up_over_entries() {
        let mut dead = client(1, 21, 0);
        dead.alive = false;
        let mut busy = client(0, 20, 3);
        busy.outstanding = vec![shmbus::stat::CallStat {
            slot: 0,
            phase: shmbus::stat::CallPhase::Posted,
            generation: 1,
            server: None,
        }];
        let r = row(
            &stat(vec![server(0, 10, 1)], vec![busy, dead]),
            None,
            None,
            |_| None,
        );
        assert_eq!(
            (r.live_servers(), r.live_clients(), r.in_flight()),
            (1, 1, 1)
        );
    }
}
