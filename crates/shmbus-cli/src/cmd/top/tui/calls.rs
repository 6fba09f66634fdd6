//! A service's figures in the view and in `--once`: its shape and rates as
//! facts, a short figure for the bus list, and its server and client
//! entries as tables, each call in flight under its client (the model is
//! `top/service.rs`).

use super::super::service::{ClientRow, ServerRow, ServiceRow};
use super::rate::one_decimal;
use super::rate::rate;
use crate::cmd::inspect::ns_text;

/// The service's facts for the bus's figures; `answered_per_sec` is the
/// bus's message rate (a service's messages are its responses).
pub(super) fn facts(s: &ServiceRow, answered_per_sec: Option<f64>) -> Vec<(&'static str, String)> {
    vec![
        (
            "shape",
            format!(
                "{} clients × {} slots, {} servers, requests ≤ {} B, responses ≤ {} B",
                s.clients, s.slots, s.servers, s.request_size, s.response_size
            ),
        ),
        (
            "rate",
            format!(
                "{} calls/s, {} answered/s",
                rate(s.calls_per_sec),
                rate(answered_per_sec)
            ),
        ),
        ("in flight", format!("{} calls", s.in_flight())),
        (
            "servers",
            format!("{} live of {} entries", s.live_servers(), s.servers),
        ),
        (
            "clients",
            format!("{} live of {} entries", s.live_clients(), s.clients),
        ),
    ]
}

/// The bus list's short figure: "servers 1/4, clients 2/16, 3 in flight".
pub(super) fn bus_extra(s: &ServiceRow) -> String {
    format!(
        "servers {}/{}, clients {}/{}, {} in flight",
        s.live_servers(),
        s.servers,
        s.live_clients(),
        s.clients,
        s.in_flight()
    )
}

/// The server entries' table, then the client entries' (each call in
/// flight on a line under its client): each line, and whether it is a
/// heading.
pub(super) fn lines(s: &ServiceRow) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    if s.per_server.is_empty() {
        out.push((false, "no server has served yet".into()));
    } else {
        out.push((
            true,
            format!(
                "{:>8}  {:>5}  {:>10}  {:>10}  {:>8}  {:>6}  {:>7}  {:>9}  {:>9}  {:>6}  STATE",
                "SERVER",
                "ENTRY",
                "TAKEN",
                "ANSWERED",
                "ANS/S",
                "LATE",
                "REFUSED",
                "MEAN",
                "MAX",
                "CPU%"
            ),
        ));
        out.extend(s.per_server.iter().map(|r| (false, server_line(r))));
    }
    if s.per_client.is_empty() {
        out.push((false, "no client has called yet".into()));
    } else {
        out.push((
            true,
            format!(
                "{:>8}  {:>5}  {:>10}  {:>8}  {:>8}  {:>6}  {:>6}  {:>6}  {:>9}  {:>6}  STATE",
                "CLIENT",
                "ENTRY",
                "CALLS",
                "CALLS/S",
                "TIMEOUTS",
                "LATE",
                "GONE",
                "FULL",
                "IN FLIGHT",
                "CPU%"
            ),
        ));
        for c in &s.per_client {
            out.push((false, client_line(c)));
            for k in &c.line.outstanding {
                let by = k
                    .server
                    .map_or(String::new(), |s| format!(" by server {s}"));
                out.push((
                    false,
                    format!(
                        "{:>17}slot {}: {}{by} (generation {})",
                        "",
                        k.slot,
                        k.phase.name(),
                        k.generation
                    ),
                ));
            }
        }
    }
    out
}

fn state(alive: bool) -> &'static str {
    if alive { "" } else { "gone" }
}

fn server_line(r: &ServerRow) -> String {
    let l = &r.line;
    let line = format!(
        "{:>8}  {:>5}  {:>10}  {:>10}  {:>8}  {:>6}  {:>7}  {:>9}  {:>9}  {:>6}  {}",
        l.pid,
        l.entry,
        l.taken,
        l.answered,
        rate(r.answered_per_sec),
        l.late,
        l.refused,
        l.mean_latency_ns().map_or("-".into(), ns_text),
        if l.answered == 0 {
            "-".into()
        } else {
            ns_text(l.latency_max_ns)
        },
        one_decimal(r.proc.and_then(|p| p.cpu_percent)),
        state(l.alive)
    );
    line.trim_end().to_owned()
}

fn client_line(r: &ClientRow) -> String {
    let l = &r.line;
    let line = format!(
        "{:>8}  {:>5}  {:>10}  {:>8}  {:>8}  {:>6}  {:>6}  {:>6}  {:>9}  {:>6}  {}",
        l.pid,
        l.entry,
        l.calls,
        rate(r.calls_per_sec),
        l.timeouts,
        l.late,
        l.gone,
        l.full,
        l.outstanding.len(),
        one_decimal(r.proc.and_then(|p| p.cpu_percent)),
        state(l.alive)
    );
    line.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use shmbus::stat::{CallPhase, CallStat, ClientStat, ServerStat};

    use super::*;

    #[test]
    fn each_entry_is_a_row_and_each_call_in_flight_a_line_under_its_client() {
        let server = ServerRow {
            line: ServerStat {
                entry: 0,
                pid: 10,
                alive: true,
                taken: 5,
                answered: 4,
                late: 1,
                refused: 0,
                latency_sum_ns: 8_000,
                latency_max_ns: 3_500,
            },
            answered_per_sec: Some(2.0),
            proc: None,
        };
        let client = ClientRow {
            line: ClientStat {
                entry: 3,
                pid: 20,
                alive: false,
                outstanding: vec![CallStat {
                    slot: 1,
                    phase: CallPhase::Taken,
                    generation: 9,
                    server: Some(0),
                }],
                calls: 6,
                timeouts: 1,
                late: 1,
                gone: 0,
                full: 0,
            },
            calls_per_sec: None,
            proc: None,
        };
        let row = ServiceRow {
            clients: 4,
            slots: 2,
            servers: 1,
            request_size: 64,
            response_size: 64,
            calls_per_sec: Some(2.0),
            per_server: vec![server],
            per_client: vec![client],
        };
        let all = lines(&row);
        assert_eq!(all.iter().filter(|l| l.0).count(), 2, "two headings");
        let text: String = all.iter().map(|l| format!("{}\n", l.1)).collect();
        let server_row = text.lines().nth(1).expect("a server row");
        assert!(
            server_row.contains("2.0 µs") && server_row.contains("3.5 µs"),
            "{text}"
        );
        let client_row = text
            .lines()
            .find(|l| l.trim_start().starts_with("20 "))
            .expect("a client row");
        assert!(client_row.ends_with("gone"), "{text}");
        assert!(
            text.contains("slot 1: taken by server 0 (generation 9)"),
            "{text}"
        );
        assert_eq!(bus_extra(&row), "servers 1/1, clients 0/4, 1 in flight");
    }
}
