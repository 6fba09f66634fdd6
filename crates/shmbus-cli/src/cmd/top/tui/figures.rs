//! The figures of a sample as text, the same in the live view and in
//! `--once`: a bus's facts (key, value), a subscriber's cells and state,
//! the subscribers' columns, and how rates, counts and sizes are written.
//! Text that comes from files other processes write is escaped here.

use super::super::model::{BusRow, BusView, ProcRow, SideRow, StreamRow, SubRow};
use super::super::pool;
pub(super) use super::rate::{one_decimal, rate};
use crate::cmd::inspect::escaped;

/// Where a cell's text sits in its column.
#[derive(Clone, Copy, Debug)]
pub(super) enum Align {
    Left,
    Right,
}

/// `text` padded (or cut, with an ellipsis) to `width` characters.
pub(super) fn fit(text: &str, width: usize, align: Align) -> String {
    let len = text.chars().count();
    if len > width {
        let cut: String = text.chars().take(width.saturating_sub(1)).collect();
        return format!("{cut}…");
    }
    match align {
        Align::Left => format!("{text:<width$}"),
        Align::Right => format!("{text:>width$}"),
    }
}

/// The subscribers' columns (all numbers, right-aligned), before STATE.
pub(super) const SUB_COLUMNS: [(&str, usize); 12] = [
    ("PID", 8),
    ("ENTRY", 5),
    ("POSITION", 12),
    ("LAG", 10),
    ("LAG%", 7),
    ("DELIVERED", 12),
    ("SKIPPED", 10),
    ("MSGS/S", 8),
    ("IDLE S", 7),
    ("CPU%", 6),
    ("VCS/S", 7),
    ("ICS/S", 7),
];

/// The subscribers' columns, and on a pool bus HELD after them: a row has
/// as many cells as its bus has columns, so the zips below stop there.
pub(super) fn all_sub_columns() -> impl Iterator<Item = &'static (&'static str, usize)> {
    SUB_COLUMNS.iter().chain([&pool::HELD_COLUMN])
}

/// The column headings, before STATE.
pub(super) fn sub_headings(pool: bool) -> impl Iterator<Item = &'static str> {
    let n = SUB_COLUMNS.len() + usize::from(pool);
    all_sub_columns().take(n).map(|c| c.0)
}

/// A subscriber's cells under [`SUB_COLUMNS`], then HELD on a pool bus:
/// "-" for any number a corrupt line would give (HELD comes from the
/// pool's hold lines, not the subscriber's, so it stays).
pub(super) fn sub_cells(s: &SubRow) -> Vec<String> {
    let l = &s.line;
    let mut cells = vec!["-".to_string(); SUB_COLUMNS.len()];
    cells.extend(pool::held_cell(s));
    cells[0] = l.pid.to_string();
    cells[1] = l.entry.to_string();
    if s.corrupt.is_some() {
        return cells;
    }
    let proc = s.proc.unwrap_or_default();
    cells[2] = l.position.to_string();
    cells[3] = count(l.lag, SUB_COLUMNS[3].1);
    // Past the ring it is lapped already: how far past says nothing more.
    cells[4] = if s.lapped() {
        ">100%".into()
    } else {
        format!("{:.1}%", s.lag_fraction * 100.0)
    };
    cells[5] = l.delivered.to_string();
    cells[6] = l.skipped.to_string();
    cells[7] = rate(s.msgs_per_sec);
    cells[8] = one_decimal(s.idle_s);
    cells[9] = one_decimal(proc.cpu_percent);
    cells[10] = rate(proc.voluntary_per_sec);
    cells[11] = rate(proc.involuntary_per_sec);
    cells
}

/// What the bus allows lossless subscribers, and how many gate it now.
fn lossless_text(r: &BusRow) -> String {
    use shmbus::stat::Contract;
    let Some(lossless) = r.lossless else {
        return "-".into();
    };
    if lossless.max == 0 {
        return "refused".into();
    }
    let gating = r
        .subscribers
        .iter()
        .filter(|s| !s.gone && s.line.contract == Contract::Lossless)
        .count();
    format!(
        "{gating} of at most {}, evicted after {:.3} s",
        lossless.max,
        lossless.evict_ns as f64 / 1e9
    )
}

/// A subscriber's state: what is wrong with it, if anything, then its
/// contract if not lossy, with its evictions and the time the publisher
/// spent blocked on it; empty for a live lossy one that keeps up.
pub(super) fn sub_state(s: &SubRow) -> String {
    let state = problem(s);
    if s.gone {
        // Like any other dead entry: no contract holds any more.
        return state;
    }
    let l = &s.line;
    let mut gate = match crate::cmd::inspect::contract_token(l.contract) {
        "lossy" if l.evictions == 0 && l.blocked_ns == 0 => return state,
        "lossy" => String::new(),
        token => token.to_owned(),
    };
    if l.evictions > 0 {
        gate.push_str(&format!(" {}×", l.evictions));
    }
    if l.blocked_ns > 0 {
        gate.push_str(&format!(" (held pub {:.3} s)", l.blocked_ns as f64 / 1e9));
    }
    let gate = gate.trim_start();
    if state.is_empty() {
        gate.to_owned()
    } else {
        format!("{state}, {gate}")
    }
}

/// What is wrong with a subscriber, if anything: empty for a live one
/// that keeps up.
fn problem(s: &SubRow) -> String {
    if let Some(why) = &s.corrupt {
        format!("corrupt: {}", escaped(why))
    } else if s.gone {
        "gone".into()
    } else if s.lapped() {
        "lapped".into()
    } else if s.near_lap() {
        "near lap".into()
    } else if s.bridge {
        "bridge out".into()
    } else if s.recorder {
        "recorder".into()
    } else {
        String::new()
    }
}

/// A bus's figures beyond its line, as (key, value) pairs.
pub(super) fn facts(r: &BusRow) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if let Some(st) = &r.stream {
        out.push((
            "kind",
            format!(
                "{}, {}, records up to {} B",
                r.kind,
                bytes(r.capacity as f64),
                r.msg_size
            ),
        ));
        out.push(("rate", byte_rate(r.bytes_per_sec)));
        out.push(("written", format!("{} B, released {} B", st.tail, st.head)));
        out.push(("fill", fill_text(st)));
        out.push((
            "producer",
            process_text(r.publisher_pid, r.publisher_alive, r.publisher_proc),
        ));
        out.push(("  records", side_text(&st.producer)));
        out.push((
            "consumer",
            process_text(st.consumer_pid, st.consumer_alive, st.consumer_proc),
        ));
        out.push(("  records", side_text(&st.consumer)));
        return out;
    }
    if let Some(svc) = &r.service {
        out.push(("kind", r.kind.clone()));
        out.extend(super::calls::facts(svc, r.msgs_per_sec));
        return out;
    }
    if let Some(b) = &r.blackboard {
        out.push(("kind", format!("{}, values of {} B", r.kind, r.msg_size)));
        out.extend(super::board::facts(b));
        out.push((
            "writer",
            process_text(r.publisher_pid, r.publisher_alive, r.publisher_proc),
        ));
        return out;
    }
    out.push((
        "kind",
        match &r.pool {
            Some(p) => pool::kind(r.capacity, r.msg_size, p),
            None => format!("{}, {} slots of {} B", r.kind, r.capacity, r.msg_size),
        },
    ));
    let bytes_per_sec = match r.pool {
        Some(_) => "bytes/s n/a (pool bus)".into(),
        None => byte_rate(r.bytes_per_sec),
    };
    out.push((
        "rate",
        format!("{} msgs/s, {bytes_per_sec}", rate(r.msgs_per_sec)),
    ));
    out.push((
        "head",
        match r.epoch {
            Some(epoch) => format!("{}, epoch {epoch}, published {}", r.head, r.published),
            None => format!("{}, published {}", r.head, r.published),
        },
    ));
    out.push((
        "publisher",
        process_text(r.publisher_pid, r.publisher_alive, r.publisher_proc),
    ));
    match &r.journal {
        None => {}
        Some(Ok(j)) => out.push((
            "journal",
            format!(
                "{} ({}, {} records)",
                escaped(&j.path.display().to_string()),
                bytes(j.file_bytes as f64),
                j.records
            ),
        )),
        Some(Err(e)) => out.push(("journal", escaped(e))),
    }
    if let Some(p) = &r.pool {
        out.extend(pool::facts(p));
    }
    let gone = r.subscribers.iter().filter(|s| s.gone).count();
    out.push((
        "subscribers",
        format!("{} live, {gone} gone", r.subscribers.len() - gone),
    ));
    out.push(("lossless", lossless_text(r)));
    // The key and endpoints come from a file: escaped.
    for b in &r.bridges {
        out.push((
            "bridge",
            format!("pid {}: {}", b.pid, escaped(&b.summary())),
        ));
    }
    out
}

/// A bus that cannot be read: why, without the path the line already
/// names.
pub(super) fn error_text(b: &BusView, e: &str) -> String {
    let path = b.path.display().to_string();
    let why = e
        .strip_prefix(path.as_str())
        .and_then(|rest| rest.strip_prefix(": "))
        .unwrap_or(e);
    escaped(why)
}

/// A stream side's records, rate and idle time.
fn side_text(s: &SideRow) -> String {
    format!(
        "{} since it attached, {}/s, idle {} s",
        s.records,
        rate(s.records_per_sec),
        one_decimal(s.idle_s)
    )
}

pub(super) fn fill_text(st: &StreamRow) -> String {
    if st.corrupt {
        return format!(
            "CORRUPT: written {} and released {} are impossible",
            st.tail, st.head
        );
    }
    format!(
        "{} ({:.1}%)",
        bytes(st.fill as f64),
        st.fill_fraction * 100.0
    )
}

/// A publisher, producer or consumer: "pid 12 (alive)", or "none" for pid
/// 0 (none has attached, or the last left cleanly). `sep` goes between the
/// pid and its state.
pub(super) fn role_text(pid: u32, alive: bool, sep: &str) -> String {
    match (pid, alive) {
        (0, false) => "none".into(),
        (pid, true) => format!("{pid}{sep}alive"),
        (pid, false) => format!("{pid}{sep}dead"),
    }
}

/// A process and, while it runs, its CPU and context switches.
fn process_text(pid: u32, alive: bool, proc: Option<ProcRow>) -> String {
    let who = match role_text(pid, alive, " (") {
        none if pid == 0 && !alive => none,
        some => format!("pid {some})"),
    };
    match proc {
        Some(p) if alive => format!(
            "{who}, CPU {}%, context switches/s {} voluntary, {} involuntary",
            one_decimal(p.cpu_percent),
            rate(p.voluntary_per_sec),
            rate(p.involuntary_per_sec)
        ),
        _ => who,
    }
}

/// A count in at most `width` characters: as it is if it fits, else with
/// a unit (k, M, G, T, P, E), so that a huge lag is never cut off.
fn count(n: u64, width: usize) -> String {
    let plain = n.to_string();
    if plain.len() <= width {
        return plain;
    }
    let mut v = n as f64;
    for unit in ["k", "M", "G", "T", "P", "E"] {
        v /= 1000.0;
        if v < 999.95 {
            return format!("{v:.1}{unit}");
        }
    }
    format!("{v:.0}E")
}

pub(super) fn byte_rate(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{}/s", bytes(v)))
}

/// A size in bytes, in binary units.
pub(super) fn bytes(n: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let (mut v, mut unit) = (n, 0);
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::super::super::model::{SideRow, Snapshot, StreamRow};
    use super::super::fixtures::{bus, line_with, sample, screen};
    use super::super::plain::plain;
    use super::super::view::View;
    use super::*;

    #[test]
    fn a_bridge_is_a_line_of_its_bus_s_figures_and_its_subscriber_says_so() {
        use crate::bridge_status::{Counts, Direction, Identity, Status};
        let mut snap = sample();
        let Ok(row) = &mut snap.buses[0].state else {
            unreachable!("alpha is readable")
        };
        row.subscribers[0].bridge = true;
        row.bridges.push(Status {
            pid: 101,
            started: 1,
            identity: Identity {
                direction: Direction::Out,
                bus: PathBuf::from("/dev/shm/alpha"),
                key: "md/\x1b[2Jticks".into(),
                listen: vec![],
                connect: vec!["tcp/10.0.0.2:7447".into()],
            },
            counts: Counts {
                messages: 100,
                lost: 3,
                peer: true,
                ..Counts::default()
            },
            msgs_per_sec: Some(123_456.0),
            // Written just now: no "old" remark.
            updated_unix_ns: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
        });
        let text = plain(&snap);
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text}");
        assert!(
            text.contains(
                "bridge:      pid 101: out -> key md/\\x1b[2Jticks, connect tcp/10.0.0.2:7447, \
                 peer matched, 123.5k msgs/s, forwarded 100, lost 3\n"
            ),
            "{text}"
        );
        let row = text
            .lines()
            .find(|l| l.trim_start().starts_with("101"))
            .unwrap_or_else(|| panic!("no row 101: {text}"));
        assert!(row.ends_with("bridge out"), "{row}");
        let mut view = View::new(Duration::from_millis(500));
        view.follow(&snap);
        let (lines, _) = screen(&view, &snap);
        line_with(&lines, "bridge:      pid 101: out -> key md/\\x1b[2Jticks");
    }

    #[test]
    fn a_stream_shows_its_fill_and_its_consumer_and_no_subscriber_table() {
        let mut stream = bus("pipe", vec![]);
        if let Ok(r) = &mut stream.state {
            r.kind = "stream".into();
            r.capacity = 4096;
            r.journal = None;
            r.stream = Some(StreamRow {
                fill: 1024,
                fill_fraction: 0.25,
                tail: 5120,
                head: 4096,
                consumer_pid: 77,
                consumer_alive: true,
                corrupt: false,
                consumer_proc: None,
                producer: SideRow::default(),
                consumer: SideRow::default(),
            });
        }
        let snap = Snapshot {
            at_ns: 1,
            interval_s: None,
            buses: vec![stream],
        };
        let mut view = View::new(Duration::from_millis(500));
        view.follow(&snap);
        let (lines, _) = screen(&view, &snap);
        let (_, row) = line_with(&lines, "> pipe");
        assert!(
            row.contains("fill 1.0 KiB (25.0%), consumer 77 alive"),
            "{row}"
        );
        line_with(&lines, "a stream has one consumer and no subscribers");
        line_with(&lines, "rates from the next sample");
        let text = plain(&snap);
        assert!(text.contains("fill:      1.0 KiB (25.0%)"), "{text}");
        assert!(text.contains("consumer:  pid 77 (alive)"), "{text}");
        assert!(text.contains("records: 0 since it attached"), "{text}");
        assert!(!text.contains("PID"), "{text}");
    }

    #[test]
    fn rates_and_sizes_read_well() {
        assert_eq!(count(1_234, 10), "1234");
        assert_eq!(count(12_708_812_345_678, 10), "12.7T");
        assert_eq!(count(u64::MAX, 10), "18.4E");
        assert_eq!(rate(None), "-");
        assert_eq!(rate(Some(2.25)), "2.2");
        assert_eq!(rate(Some(1234.0)), "1234");
        assert_eq!(rate(Some(123_456.0)), "123.5k");
        assert_eq!(rate(Some(2.5e6)), "2.5M");
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(bytes(1536.0), "1.5 KiB");
        assert_eq!(byte_rate(Some(3.0 * 1024.0 * 1024.0)), "3.0 MiB/s");
        assert_eq!(fit("abcdef", 4, Align::Left), "abc…");
        assert_eq!(fit("ab", 4, Align::Right), "  ab");
    }
}
