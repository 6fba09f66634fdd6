//! Samples and a test terminal for the unit tests of the live view and
//! of `--once`: a bus with one subscriber of each state, a bus that
//! cannot be read, and the screen one frame of them draws.

use std::path::PathBuf;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use shmbus::stat::SubscriberStat;

use super::super::model::{BusRow, BusView, JournalRow, ProcRow, Snapshot, SubRow};
use super::draw::draw;
use super::view::View;

pub(super) fn sub(entry: usize, pid: u32, lag: u64) -> SubRow {
    SubRow {
        line: SubscriberStat {
            entry,
            pid,
            position: 100 - lag,
            lag,
            delivered: 100 - lag,
            skipped: 0,
            active_ns: 0,
            corrupt: None,
            contract: shmbus::stat::Contract::Lossy,
            evictions: 0,
            blocked_ns: 0,
        },
        gone: false,
        lag_fraction: lag as f64 / 64.0,
        msgs_per_sec: Some(12.5),
        idle_s: Some(0.25),
        corrupt: None,
        proc: Some(ProcRow {
            cpu_percent: Some(1.5),
            voluntary_per_sec: Some(40.0),
            involuntary_per_sec: Some(0.0),
        }),
        held: None,
        reclaimable: None,
        bridge: false,
        recorder: false,
    }
}

pub(super) fn bus(name: &str, subscribers: Vec<SubRow>) -> BusView {
    BusView {
        name: name.into(),
        path: PathBuf::from(format!("/dev/shm/{name}")),
        state: Ok(BusRow {
            kind: "broadcast".into(),
            capacity: 64,
            unit: "slots",
            msg_size: 16,
            head: 100,
            published: 100,
            epoch: Some(1),
            publisher_pid: 4242,
            publisher_alive: true,
            lossless: Some(shmbus::stat::Lossless {
                max: 8,
                evict_ns: 1_000_000_000,
            }),
            msgs_per_sec: Some(50.0),
            bytes_per_sec: Some(800.0),
            journal: Some(Ok(JournalRow {
                path: PathBuf::from("/tmp/j"),
                file_bytes: 4096,
                records: 7,
            })),
            subscribers,
            stream: None,
            publisher_proc: None,
            pool: None,
            blackboard: None,
            service: None,
            bridges: Vec::new(),
        }),
    }
}

/// A bus with: one keeping up (pid 101), one near a lap (102), one
/// gone (103), one corrupt (104); and a bus that cannot be read.
pub(super) fn sample() -> Snapshot {
    let mut gone = sub(2, 103, 1);
    gone.gone = true;
    gone.proc = None;
    let mut corrupt = sub(3, 104, 0);
    corrupt.corrupt = Some("skipped 9 is more than the 0 messages it moved".into());
    let bad = BusView {
        name: "bad\x1b[2Jname".into(),
        path: PathBuf::from("/dev/shm/bad\x1b[2Jname"),
        state: Err("/dev/shm/bad\x1b[2Jname: not a shmbus segment".into()),
    };
    Snapshot {
        at_ns: 1,
        interval_s: Some(0.5),
        buses: vec![
            bus(
                "alpha",
                vec![sub(0, 101, 0), sub(1, 102, 60), gone, corrupt],
            ),
            bad,
        ],
    }
}

pub(super) fn screen(view: &View, snap: &Snapshot) -> (Vec<String>, ratatui::buffer::Buffer) {
    let mut term = Terminal::new(TestBackend::new(160, 30)).expect("test terminal");
    term.draw(|f| draw(f, view, snap)).expect("draw");
    let buf = term.backend().buffer().clone();
    let lines = (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
        })
        .collect();
    (lines, buf)
}

pub(super) fn line_with<'a>(lines: &'a [String], needle: &str) -> (usize, &'a String) {
    lines
        .iter()
        .enumerate()
        .find(|(_, l)| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in\n{}", lines.join("\n")))
}
