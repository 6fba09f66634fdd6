//! Journal queries (`KEY/@journal?from=N;to=M`) against a real `shmbus
//! bridge out` process, asked over Zenoh on loopback the way a bridge-in
//! asks: a repair costs what it asks for, many are answered at once, and
//! one peer flooding whole-journal queries neither starves another's
//! repair nor gets more than its bound in flight.

mod common;

use std::time::{Duration, Instant};

use common::{BusName, ShmDir, Watched, signal, spawn};
use rustix::process::Signal;
use shmbus::{BusOptions, journal};
use shmbus_testkit::RuntimeDir;
use shmbus_zenoh::frame::Frame;
use zenoh::Wait as _;
use zenoh::query::ConsolidationMode;

/// Records in the test's journal: large enough that reading it from its
/// start takes the (debug) bridge-out about a second per query.
const RECORDS: u64 = 2_000_000;
/// How soon a small repair must be answered: half a bridge-in's default
/// query timeout (10 s).
const IN_TIME: Duration = Duration::from_secs(5);

/// A journaled bus of `u64`s holding `0..RECORDS` (message `i` at sequence
/// `i`), its publisher kept alive (it serves the joiners' flushes).
struct Upstream {
    dir: ShmDir,
    bus: BusName,
    publisher: journal::Publisher<u64>,
}

impl Upstream {
    fn new(label: &str) -> Upstream {
        Upstream::holding(label, RECORDS)
    }

    fn holding(label: &str, records: u64) -> Upstream {
        let dir = ShmDir::new(label);
        let bus = BusName::new(label);
        let mut publisher = journal::Publisher::<u64>::create(
            bus.name(),
            &BusOptions::new(1024),
            &journal::Options::new(dir.file("up.journal")),
        )
        .expect("create the journaled bus");
        for i in 0..records {
            publisher.publish(&i).expect("publish");
        }
        Upstream {
            dir,
            bus,
            publisher,
        }
    }

    fn finish(self) {
        self.publisher.close().expect("close");
        self.bus.finish();
        self.dir.finish();
    }
}

/// `shmbus bridge out BUS --key KEY --listen EP`, and a Zenoh session of
/// the test's own dialing it, once the bridge-out answers a query.
fn bridge_out(rt: &RuntimeDir, bus: &str, key: &str, head: u64) -> (Watched, zenoh::Session) {
    let endpoint = format!("tcp/127.0.0.1:{}", free_port());
    let mut cmd = common::shmbus(&["bridge", "out", bus, "--key", key, "--listen", &endpoint]);
    rt.apply(&mut cmd);
    let mut out = spawn(cmd);
    let session = shmbus_zenoh::session(&shmbus_zenoh::Endpoints {
        connect: vec![endpoint],
        ..shmbus_zenoh::Endpoints::default()
    })
    .expect("a session");
    // Ready when an empty query at the head gets its end frame. Until the
    // bridge-out's queryable is known no one answers and a query ends at
    // once; the long timeout is for a bridge-out that reads slowly.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let a = ask(&session, key, head, None, "probe", Duration::from_secs(60));
        if a.end == Some(head) {
            break;
        }
        out.check_alive("the bridge-out's queryable");
        assert!(
            Instant::now() < deadline,
            "the bridge-out does not answer: {a:?}"
        );
        std::thread::sleep(Duration::from_millis(20)); // the link being set up
    }
    (out, session)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a loopback port")
        .port()
}

/// What one query got.
#[derive(Debug, Default)]
struct Answer {
    /// (sequence, message) of every entry, in the order they came.
    entries: Vec<(u64, u64)>,
    end: Option<u64>,
    errors: Vec<String>,
    /// From the ask to its end frame (or error).
    took: Duration,
}

fn selector(key: &str, from: u64, to: Option<u64>, peer: &str) -> String {
    match to {
        Some(to) => format!("{key}/@journal?from={from};to={to};peer={peer}"),
        None => format!("{key}/@journal?from={from};peer={peer}"),
    }
}

/// Asks `[from, to)` as peer `peer` and waits for the whole answer (Zenoh
/// ends the query at `timeout` at the latest).
fn ask(
    session: &zenoh::Session,
    key: &str,
    from: u64,
    to: Option<u64>,
    peer: &str,
    timeout: Duration,
) -> Answer {
    let start = Instant::now();
    let replies = session
        .get(selector(key, from, to, peer))
        .consolidation(ConsolidationMode::None)
        .timeout(timeout)
        .wait()
        .expect("get");
    let mut a = Answer::default();
    while let Ok(reply) = replies.recv() {
        match reply.into_result() {
            Ok(sample) => {
                let bytes = sample.payload().to_bytes();
                match Frame::parse(&bytes).expect("a frame") {
                    Frame::End { next, .. } => {
                        a.end = Some(next);
                        a.took = start.elapsed();
                    }
                    frame => {
                        for m in frame.messages() {
                            if let Frame::Message { seq, bytes, .. } = m {
                                let msg = u64::from_le_bytes(bytes[..8].try_into().expect("8"));
                                a.entries.push((seq, msg));
                            }
                        }
                    }
                }
            }
            Err(e) => {
                a.errors
                    .push(e.payload().try_to_string().expect("text").into_owned());
                a.took = start.elapsed();
            }
        }
    }
    a
}

#[test]
fn forty_concurrent_ten_record_repairs_at_the_end_of_a_large_journal_are_each_answered_in_time() {
    let up = Upstream::new("replay-many");
    let rt = RuntimeDir::new("replay-many");
    let (out, session) = bridge_out(&rt, up.bus.name(), "replay/many", RECORDS);
    let answers: Vec<(u64, Answer)> = std::thread::scope(|s| {
        let asks: Vec<_> = (0..40u64)
            .map(|i| {
                let from = RECORDS - 1000 + i * 20;
                let session = &session;
                let peer = format!("bridge-in-{i}");
                s.spawn(move || {
                    let timeout = Duration::from_secs(10);
                    (
                        from,
                        ask(
                            session,
                            "replay/many",
                            from,
                            Some(from + 10),
                            &peer,
                            timeout,
                        ),
                    )
                })
            })
            .collect();
        asks.into_iter().map(|h| h.join().expect("asker")).collect()
    });
    let slow: Vec<_> = answers
        .iter()
        .filter(|(_, a)| a.end.is_none() || a.took > IN_TIME)
        .map(|(from, a)| (from, a.took, a.end, &a.errors))
        .collect();
    assert!(
        slow.is_empty(),
        "{} of 40 not answered within {IN_TIME:?}: {slow:?}",
        slow.len()
    );
    for (from, a) in &answers {
        let want: Vec<(u64, u64)> = (*from..from + 10).map(|s| (s, s)).collect();
        assert_eq!(a.entries, want, "the answer to from={from}");
        assert_eq!(a.end, Some(from + 10));
        assert!(a.errors.is_empty(), "{:?}", a.errors);
    }
    drop(session);
    signal(&out, Signal::TERM);
    out.wait().assert_success();
    up.finish();
}

#[test]
fn a_peer_flooding_whole_journal_queries_is_bounded_and_does_not_starve_another_peers_repair() {
    let up = Upstream::new("replay-flood");
    let rt = RuntimeDir::new("replay-flood");
    let (out, session) = bridge_out(&rt, up.bus.name(), "replay/flood", RECORDS);
    // Six whole-journal queries from one peer, not waited for: their
    // replies are only counted, as fast as they come.
    let floods: Vec<_> = (0..6)
        .map(|_| {
            let (tx, rx) = std::sync::mpsc::channel::<Result<usize, String>>();
            session
                .get(selector("replay/flood", 0, None, "flooder"))
                .consolidation(ConsolidationMode::None)
                .timeout(Duration::from_secs(60))
                .callback(move |reply| {
                    let _ = tx.send(match reply.into_result() {
                        Ok(sample) => Ok(sample.payload().len()),
                        Err(e) => Err(e.payload().try_to_string().expect("text").into_owned()),
                    });
                })
                .wait()
                .expect("get");
            rx
        })
        .collect();
    // Each flood query gets either replies or one refusal: wait until
    // every one has said which.
    let firsts: Vec<Result<usize, String>> = floods
        .iter()
        .map(|rx| {
            rx.recv_timeout(Duration::from_secs(30))
                .expect("a first reply")
        })
        .collect();
    let refused: Vec<&String> = firsts.iter().filter_map(|r| r.as_ref().err()).collect();
    assert_eq!(
        refused.len(),
        2,
        "a peer has at most 4 queries in flight: {refused:?}"
    );
    for why in refused {
        assert!(
            why.contains("\"flooder\" has 4 queries in flight, at most 4"),
            "{why}"
        );
    }
    // The four admitted are being answered, in slices; a repair from
    // another peer goes between them.
    let from = RECORDS - 500;
    let a = ask(
        &session,
        "replay/flood",
        from,
        Some(from + 10),
        "repairer",
        Duration::from_secs(10),
    );
    assert!(a.errors.is_empty(), "{:?}", a.errors);
    assert_eq!(a.end, Some(from + 10), "the repair was not answered: {a:?}");
    assert!(
        a.took < IN_TIME,
        "the repair took {:?} behind the flood",
        a.took
    );
    let want: Vec<(u64, u64)> = (from..from + 10).map(|s| (s, s)).collect();
    assert_eq!(a.entries, want);
    let still: usize = floods.iter().filter(|rx| rx.try_recv().is_ok()).count();
    println!(
        "repair answered in {:?}; {still} flood queries still replying",
        a.took
    );
    drop(session);
    signal(&out, Signal::TERM);
    out.wait().assert_success();
    up.finish();
}

/// The figure in docs/bridge/journal-queries.md: one 10-record repair at
/// the end of a 3 M-record journal, asked 10 times in a row, each time
/// printed. Not a check (timings on a shared VM); run by hand with
/// `--ignored --nocapture`.
#[test]
#[ignore]
fn measure_a_ten_record_repair_on_a_three_million_record_journal() {
    let records = 3_000_000;
    let up = Upstream::holding("replay-measure", records);
    let rt = RuntimeDir::new("replay-measure");
    let (out, session) = bridge_out(&rt, up.bus.name(), "replay/measure", records);
    let mut took = Vec::new();
    for i in 0..10 {
        let from = records - 100 - i * 10;
        let a = ask(
            &session,
            "replay/measure",
            from,
            Some(from + 10),
            "measure",
            Duration::from_secs(60),
        );
        assert_eq!(a.end, Some(from + 10), "{a:?}");
        assert_eq!(a.entries.len(), 10);
        took.push(a.took);
    }
    took.sort();
    println!(
        "10-record repair, 3 M-record journal: min {:?} median {:?} max {:?}",
        took[0], took[5], took[9]
    );
    drop(session);
    signal(&out, Signal::TERM);
    out.wait().assert_success();
    up.finish();
}
