//! The stream between real processes: every record crosses once, in order
//! and whole; backpressure holds a producer back and the doorbells wake a
//! sleeper in another process; a killed peer is reported as `PeerGone`, a
//! peer that leaves cleanly is waited for; one producer and one consumer at
//! a time, and a new one carries on exactly where the last one stopped;
//! records at every wrap edge; kinds and `stat`. The heap tests at the end
//! (a model of the ring, the edge records and a random stream between
//! threads) run under Miri too, at a smaller scale.
//!
//! Each child is this test binary run again (see `common`); its entry is an
//! `as_child_*` test that does nothing unless `SHMBUS_CHILD_ROLE` names it.
//! Every wait in the parent is bounded: children by the watchdog, the
//! parent's own pushes and pops by `Wait::For`.

mod common;

use std::ops::Range;
use std::time::{Duration, Instant};

use common::{
    BusName, CHILD_DEADLINE, FileWord32, Finished, Watched, param, print_result, role,
    spawn_child_with_deadline, wait_for,
};
use shmbus::error::Role;
use shmbus::stat::{self, BusStat, StreamStat};
use shmbus::wire::{max_record, stream_control as sc};
use shmbus::{
    AttachError, BusOptions, CreateError, Kind, OpenError, OpenOptions, Publisher, Subscriber,
    WaitStrategy, mem::Region,
};
use shmbus::{
    Wait,
    stream::{Consumer, PopError, Producer, PushError},
};

/// How long a waiting side may take to notice a killed peer. It checks
/// every `stream::PEER_CHECK` (20 ms); the rest is margin for a loaded
/// machine.
const PEER_GONE_BOUND: Duration = Duration::from_secs(2);

/// How long the parent's own pushes and pops wait for a child: far more
/// than any of them needs, and still a bound.
const PATIENCE: Wait = Wait::For(Duration::from_secs(30));

/// The bytes a record of `len` takes in the ring: header, payload, padding.
fn padded(len: usize) -> u64 {
    8 + (len as u64).div_ceil(8) * 8
}

// ---------------------------------------------------------------------------
// The records: record `i` is a function of (seed, i) alone, so a consumer,
// or a second consumer that resumes at `k`, regenerates each one to check
// it, and the parent computes where the producer's cursor must end up.

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

#[derive(Clone, Copy, Debug)]
struct Records {
    seed: u64,
    /// Longest record (at most the stream's `max_record`).
    max: usize,
    /// Before about one record in this many, the producer reserves room for
    /// another record and drops it uncommitted (0: never).
    drop_every: u64,
}

impl Records {
    fn new(seed: u64, max: usize) -> Records {
        Records {
            seed,
            max,
            drop_every: 0,
        }
    }

    fn with_dropped_reservations(self, every: u64) -> Records {
        Records {
            drop_every: every,
            ..self
        }
    }

    fn from_params() -> Records {
        Records {
            seed: param("SHMBUS_SEED"),
            max: param("SHMBUS_MAX"),
            drop_every: param("SHMBUS_DROP_EVERY"),
        }
    }

    fn params(&self) -> [(&'static str, String); 3] {
        [
            ("SHMBUS_SEED", self.seed.to_string()),
            ("SHMBUS_MAX", self.max.to_string()),
            ("SHMBUS_DROP_EVERY", self.drop_every.to_string()),
        ]
    }

    fn key(&self, i: u64) -> u64 {
        common::splitmix(self.seed ^ i.wrapping_mul(GOLDEN))
    }

    /// Record `i`'s length: mostly short, now and then anything up to
    /// `max`, and exactly 0 and exactly `max` once in 256 each.
    fn len(&self, i: u64) -> usize {
        let r = self.key(i);
        let pick = r >> 8;
        let upto = |n: usize| (pick % (n as u64 + 1)) as usize;
        match r & 0xff {
            0 => self.max,
            1 => 0,
            2..=4 => upto(self.max),
            _ => upto(self.max.min(255)),
        }
    }

    /// The length of the reservation dropped before record `i`, if any.
    fn dropped_before(&self, i: u64) -> Option<usize> {
        if self.drop_every == 0 {
            return None;
        }
        let r = common::splitmix(self.key(i) ^ 0xD00D);
        (r % self.drop_every == 0).then(|| ((r >> 16) % (self.max as u64 + 1)) as usize)
    }

    /// Fills `out` (of record `i`'s length) with record `i`: its index in
    /// the first 8 bytes (as much as fits), then bytes of a stream keyed by
    /// (seed, i), and in the last 8 bytes of a record of 16 or more a
    /// checksum of index, length and body.
    fn fill(&self, i: u64, out: &mut [u8]) {
        let mut x = self.key(i);
        for chunk in out.chunks_mut(8) {
            x = x.wrapping_add(GOLDEN);
            let z = (x ^ (x >> 29)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
        }
        let n = out.len().min(8);
        out[..n].copy_from_slice(&i.to_le_bytes()[..n]);
        let len = out.len();
        if len >= 16 {
            let sum = checksum(i, &out[8..len - 8]);
            out[len - 8..].copy_from_slice(&sum.to_le_bytes());
        }
    }

    fn make(&self, i: u64) -> Vec<u8> {
        let mut v = vec![0; self.len(i)];
        self.fill(i, &mut v);
        v
    }

    /// Whether `got` is record `i`, and if not, what is wrong with it.
    fn check(&self, i: u64, got: &[u8], scratch: &mut Vec<u8>) -> Result<(), String> {
        if got.len() >= 8 {
            let index = u64::from_le_bytes(got[..8].try_into().expect("8 bytes"));
            if index != i {
                return Err(format!("record-{i}:carries-index-{index}"));
            }
        }
        let want = self.len(i);
        if got.len() != want {
            return Err(format!("record-{i}:length-{}-not-{want}", got.len()));
        }
        if want >= 16 {
            let sum = u64::from_le_bytes(got[want - 8..].try_into().expect("8 bytes"));
            if sum != checksum(i, &got[8..want - 8]) {
                return Err(format!("record-{i}:bad-checksum"));
            }
        }
        scratch.resize(want, 0);
        self.fill(i, scratch);
        match got.iter().zip(scratch.iter()).position(|(a, b)| a != b) {
            Some(at) => Err(format!("record-{i}:byte-{at}-differs")),
            None => Ok(()),
        }
    }

    /// Where the producer's cursor (`TAIL`) is after records `range`, from
    /// `tail`: each record goes at the cursor, or after a wrap marker at 0
    /// when it does not fit before the end of the ring. A dropped
    /// reservation that needed the wrap leaves the cursor past the marker
    /// (the record after it goes at 0); one that did not, leaves no trace.
    fn tail_after(&self, range: Range<u64>, capacity: u64, mut tail: u64) -> u64 {
        let place = |tail: &mut u64, len: usize, commit: bool| {
            let size = padded(len);
            let to_end = capacity - *tail % capacity;
            if size > to_end {
                *tail += to_end;
            }
            if commit {
                *tail += size;
            }
        };
        for i in range {
            if let Some(d) = self.dropped_before(i) {
                place(&mut tail, d, false);
            }
            place(&mut tail, self.len(i), true);
        }
        tail
    }
}

/// FNV-1a over 8-byte words, seeded with the index and ended with the length.
fn checksum(i: u64, body: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325 ^ i;
    for chunk in body.chunks(8) {
        let mut w = [0u8; 8];
        w[..chunk.len()].copy_from_slice(chunk);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h ^ body.len() as u64).wrapping_mul(0x0000_0100_0000_01b3)
}

/// Pushes record `i`, by `push` for even `i` and written in place by
/// `reserve`/`commit` for odd; first reserves and drops the reservation the
/// records say, if any. Repeating a call that failed changes nothing: a
/// failed claim writes nothing, and a dropped reservation only ever moves
/// the cursor to 0 past a wrap marker, after which the same reservation
/// fits before the end.
fn push_record<R: Region>(
    p: &mut Producer<[u8], R>,
    recs: &Records,
    i: u64,
    wait: Wait,
    buf: &mut Vec<u8>,
) -> Result<(), PushError> {
    if let Some(d) = recs.dropped_before(i) {
        let mut chunk = p.reserve(d, wait)?;
        chunk.fill(0xA5); // never published
    }
    let len = recs.len(i);
    if i % 2 == 0 {
        buf.resize(len, 0);
        recs.fill(i, buf);
        p.push(buf, wait)
    } else {
        let mut chunk = p.reserve(len, wait)?;
        recs.fill(i, &mut chunk);
        chunk.commit();
        Ok(())
    }
}

/// What a consumer found.
#[derive(Default)]
struct Checked {
    got: u64,
    faults: u64,
    first_fault: Option<String>,
    scratch: Vec<u8>,
    buf: Vec<u8>,
}

impl Checked {
    fn fault(&mut self, what: String) {
        self.faults += 1;
        self.first_fault.get_or_insert(what);
    }

    fn first_fault(&self) -> String {
        self.first_fault.clone().unwrap_or_else(|| "none".into())
    }
}

/// Reads record `i` through one of the four ways to read (by `i % 8`) and
/// checks it. One in eight is peeked, left unreleased, and read again.
fn pop_record<R: Region>(
    c: &mut Consumer<[u8], R>,
    recs: &Records,
    i: u64,
    wait: Wait,
    k: &mut Checked,
) -> Result<(), PopError> {
    let Checked { scratch, buf, .. } = k;
    let verdict = match i % 8 {
        0 | 4 | 6 => {
            c.pop(buf, wait)?;
            recs.check(i, buf, scratch)
        }
        1 | 5 => c.read_with(wait, |r| recs.check(i, r, scratch))?,
        2 => {
            let first = {
                let chunk = c.peek(wait)?;
                recs.check(i, &chunk, scratch)
            };
            // A record peeked and not released is there at once.
            let again = match c.peek(Wait::Never) {
                Ok(chunk) => {
                    let v = recs.check(i, &chunk, scratch);
                    chunk.release();
                    v
                }
                Err(e) => Err(format!(
                    "record-{i}:unreleased-peek-then-{}",
                    no_whitespace(e)
                )),
            };
            first.and(again)
        }
        _ => {
            let chunk = c.peek(wait)?;
            let v = recs.check(i, &chunk, scratch);
            chunk.release();
            v
        }
    };
    k.got += 1;
    if let Err(what) = verdict {
        k.fault(what);
    }
    Ok(())
}

fn strategy(name: &str) -> WaitStrategy {
    match name {
        "default" => WaitStrategy::default(),
        // A tiny spin: the waiting side goes to sleep on the shared futex
        // whenever the other side pauses.
        "futex" => WaitStrategy::SpinFutex {
            spin: Duration::from_micros(1),
        },
        "yield" => WaitStrategy::SpinYield {
            spin: Duration::from_micros(20),
        },
        "busy" => WaitStrategy::BusySpin,
        other => panic!("unknown wait strategy {other}"),
    }
}

fn opts(wait: &str) -> OpenOptions {
    OpenOptions::default().wait_strategy(strategy(wait))
}

/// Sleeps `us` microseconds after every `every` records (never if 0).
fn pace(n: u64, every: u64, us: u64) {
    if every != 0 && n % every == every - 1 {
        std::thread::sleep(Duration::from_micros(us));
    }
}

fn no_whitespace(s: impl std::fmt::Debug) -> String {
    format!("{s:?}").replace(char::is_whitespace, "")
}

// ---------------------------------------------------------------------------
// Children.

/// What `Side::spawn` tells a producer or consumer child, read back.
struct Told {
    name: String,
    recs: Records,
    from: u64,
    count: u64,
    /// SHMBUS_PACE_EVERY and SHMBUS_PACE_US (see `pace`).
    pace: (u64, u64),
    then: String,
    opts: OpenOptions,
}

impl Told {
    fn read() -> Told {
        Told {
            name: param("SHMBUS_BUS"),
            recs: Records::from_params(),
            from: param("SHMBUS_FROM"),
            count: param("SHMBUS_COUNT"),
            pace: (param("SHMBUS_PACE_EVERY"), param("SHMBUS_PACE_US")),
            then: param("SHMBUS_THEN"),
            opts: opts(&param::<String>("SHMBUS_WAIT")),
        }
    }

    /// The records to push or pop.
    fn records(&self) -> Range<u64> {
        self.from..self.from + self.count
    }

    /// Paces after record `i` (see `pace`).
    fn pace(&self, i: u64) {
        pace(i - self.from, self.pace.0, self.pace.1);
    }
}

/// Attaches as the producer, pushes records FROM..FROM+COUNT (trying
/// `Wait::Never` first, to count how often the ring was full, then
/// `Wait::Forever`), then per SHMBUS_THEN: `exit` (drops the producer),
/// `idle` (says it is ready and waits to be killed) or `reserve-idle`
/// (reserves a maximum record, scribbles over it, and waits to be killed
/// without committing it).
#[test]
fn as_child_produce_records() {
    role("produce", || {
        let t = Told::read();
        let mut p = Producer::<[u8]>::attach(&t.name, &t.opts).expect("attach as producer");
        let start = Instant::now();
        let (mut pushed, mut full) = (0u64, 0u64);
        let mut error = String::from("none");
        let mut buf = Vec::new();
        for i in t.records() {
            let done = match push_record(&mut p, &t.recs, i, Wait::Never, &mut buf) {
                Err(PushError::Full) => {
                    full += 1;
                    push_record(&mut p, &t.recs, i, Wait::Forever, &mut buf)
                }
                other => other,
            };
            if let Err(e) = done {
                error = no_whitespace(e);
                break;
            }
            pushed += 1;
            t.pace(i);
        }
        print_result(&[
            ("pushed", pushed.to_string()),
            ("full", full.to_string()),
            ("error", error),
            ("ms", start.elapsed().as_millis().to_string()),
        ]);
        match t.then.as_str() {
            "exit" => drop(p),
            "idle" => {
                common::print_ready();
                common::idle_until_killed();
            }
            "reserve-idle" => {
                let mut chunk = p.reserve(t.recs.max, Wait::Forever).expect("reserve");
                chunk.fill(0xEE);
                common::print_ready();
                common::idle_until_killed();
            }
            other => panic!("unknown SHMBUS_THEN {other}"),
        }
    });
}

/// Opens the consumer, reads and checks records FROM..FROM+COUNT with
/// `Wait::Forever`, optionally checks that nothing follows
/// (SHMBUS_CHECK_END), then per SHMBUS_THEN: `exit`, `idle` (ready, then
/// wait to be killed), or `peek-exit` (peek the next record, check it, and
/// leave without releasing it). With SHMBUS_READY_AT=open it says it is
/// ready as soon as it holds the consumer role.
#[test]
fn as_child_consume_records() {
    role("consume", || {
        let t = Told::read();
        let check_end = param::<u8>("SHMBUS_CHECK_END") == 1;
        let mut c = Consumer::<[u8]>::attach(&t.name, &t.opts).expect("open as consumer");
        if param::<String>("SHMBUS_READY_AT") == "open" {
            common::print_ready();
        }
        let start = Instant::now();
        let mut k = Checked::default();
        let mut error = String::from("none");
        for i in t.records() {
            if let Err(e) = pop_record(&mut c, &t.recs, i, Wait::Forever, &mut k) {
                error = no_whitespace(e);
                break;
            }
            t.pace(i);
        }
        let ms = start.elapsed().as_millis();
        let extra = check_end && c.pop(&mut k.buf, Wait::Never).is_ok();
        if t.then == "peek-exit" {
            let i = t.records().end;
            let chunk = c.peek(Wait::Forever).expect("peek the next record");
            if let Err(what) = t.recs.check(i, &chunk, &mut k.scratch) {
                k.fault(what);
            }
        }
        print_result(&[
            ("got", k.got.to_string()),
            ("faults", k.faults.to_string()),
            ("first_fault", k.first_fault()),
            ("error", error),
            ("extra", extra.to_string()),
            ("ms", ms.to_string()),
        ]);
        match t.then.as_str() {
            "exit" | "peek-exit" => drop(c),
            "idle" => {
                common::print_ready();
                common::idle_until_killed();
            }
            other => panic!("unknown SHMBUS_THEN {other}"),
        }
    });
}

/// A producer or consumer child, to spawn.
#[derive(Clone)]
struct Side {
    role: &'static str,
    bus: String,
    recs: Records,
    from: u64,
    count: u64,
    wait: &'static str,
    pace: (u64, u64),
    then: &'static str,
    ready_at_open: bool,
    check_end: bool,
    deadline: Duration,
}

impl Side {
    fn producer(bus: &BusName, recs: Records) -> Side {
        Side {
            role: "produce",
            bus: bus.name().to_owned(),
            recs,
            from: 0,
            count: 0,
            wait: "default",
            pace: (0, 0),
            then: "exit",
            ready_at_open: false,
            check_end: false,
            deadline: CHILD_DEADLINE,
        }
    }

    fn consumer(bus: &BusName, recs: Records) -> Side {
        Side {
            role: "consume",
            ..Side::producer(bus, recs)
        }
    }

    fn records(mut self, range: Range<u64>) -> Side {
        self.from = range.start;
        self.count = range.end - range.start;
        self
    }

    fn wait(mut self, wait: &'static str) -> Side {
        self.wait = wait;
        self
    }

    fn pace(mut self, every: u64, us: u64) -> Side {
        self.pace = (every, us);
        self
    }

    fn then(mut self, then: &'static str) -> Side {
        self.then = then;
        self
    }

    fn ready_at_open(mut self) -> Side {
        self.ready_at_open = true;
        self
    }

    fn check_end(mut self) -> Side {
        self.check_end = true;
        self
    }

    fn deadline(mut self, deadline: Duration) -> Side {
        self.deadline = deadline;
        self
    }

    fn spawn(&self) -> Watched {
        let entry = match self.role {
            "produce" => "as_child_produce_records",
            _ => "as_child_consume_records",
        };
        let mut params = vec![
            ("SHMBUS_BUS", self.bus.clone()),
            ("SHMBUS_FROM", self.from.to_string()),
            ("SHMBUS_COUNT", self.count.to_string()),
            ("SHMBUS_WAIT", self.wait.to_owned()),
            ("SHMBUS_PACE_EVERY", self.pace.0.to_string()),
            ("SHMBUS_PACE_US", self.pace.1.to_string()),
            ("SHMBUS_THEN", self.then.to_owned()),
            (
                "SHMBUS_READY_AT",
                if self.ready_at_open { "open" } else { "end" }.to_owned(),
            ),
            ("SHMBUS_CHECK_END", u8::from(self.check_end).to_string()),
        ];
        params.extend(self.recs.params());
        spawn_child_with_deadline(entry, self.role, &params, self.deadline)
    }
}

/// Checks a producer child's report: it pushed all its records.
fn pushed_all(f: &Finished, count: u64) -> common::Report {
    let r = f.result();
    assert_eq!(
        r.raw("error"),
        Some("none"),
        "producer failed\n{}",
        f.output()
    );
    assert_eq!(r.get::<u64>("pushed"), count, "{}", f.output());
    r
}

/// Checks a consumer child's report: every record it read was the one
/// expected, whole, and (if it checked) nothing followed the last.
fn got_all(f: &Finished, count: u64) -> common::Report {
    let r = f.result();
    assert_eq!(
        r.raw("error"),
        Some("none"),
        "consumer failed\n{}",
        f.output()
    );
    assert_eq!(
        r.get::<u64>("faults"),
        0,
        "records lost, repeated or damaged; the first: {}\n{}",
        r.raw("first_fault").unwrap_or("?"),
        f.output()
    );
    assert_eq!(r.get::<u64>("got"), count, "{}", f.output());
    assert_eq!(r.raw("extra"), Some("false"), "a record after the last");
    r
}

// ---------------------------------------------------------------------------
// Parent-side helpers.

/// Creates a stream of `capacity` bytes and drops its producer, so that a
/// child can attach. With no spawn in flight, so that no half-spawned
/// child keeps a copy of the producer's lock (see `no_spawn_in_flight`).
fn create_and_leave(bus: &BusName, capacity: u64) {
    let guard = common::no_spawn_in_flight();
    drop(
        Producer::<[u8]>::create(bus.name(), &shmbus::stream::Options::new(capacity))
            .expect("create stream"),
    );
    drop(guard);
}

fn stat_of(name: &str) -> (BusStat, StreamStat) {
    let st = stat::stat(name).unwrap_or_else(|e| panic!("stat {name}: {e}"));
    let stream = st.stream.clone().expect("a stream has stream state");
    (st, stream)
}

/// A 32-bit word of the stream's control page, read through the file.
fn control_word(bus: &BusName, field: usize) -> FileWord32 {
    let (st, _) = stat_of(bus.name());
    FileWord32::new(bus.path(), st.raw_header().control_offset + field as u64)
}

/// Reads records `range` in this process, each within `PATIENCE`.
fn pop_all<R: Region>(c: &mut Consumer<[u8], R>, recs: &Records, range: Range<u64>) {
    let mut k = Checked::default();
    for i in range.clone() {
        if let Err(e) = pop_record(c, recs, i, PATIENCE, &mut k) {
            panic!("record {i} of {range:?}: {e}");
        }
        assert_eq!(k.faults, 0, "{}", k.first_fault());
    }
}

/// Pushes records `range` in this process, each within `PATIENCE`.
fn push_all<R: Region>(p: &mut Producer<[u8], R>, recs: &Records, range: Range<u64>) {
    let mut buf = Vec::new();
    for i in range.clone() {
        if let Err(e) = push_record(p, recs, i, PATIENCE, &mut buf) {
            panic!("record {i} of {range:?}: {e}");
        }
    }
}

// ---------------------------------------------------------------------------
// 1. Every record once, in order, whole.

/// Records for the big run: 10 million in a release build, 300 thousand
/// in a debug build (so `cargo test --workspace` stays quick), times
/// SHMBUS_TEST_SCALE, at least 10 000 (over a hundred laps of the ring);
/// SHMBUS_STREAM_COUNT sets it exactly.
fn big_count() -> u64 {
    std::env::var("SHMBUS_STREAM_COUNT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            common::scale_min(
                if cfg!(debug_assertions) {
                    300_000
                } else {
                    10_000_000
                },
                10_000,
            )
        })
}

#[test]
#[cfg_attr(miri, ignore)]
fn ten_million_records_of_random_lengths_cross_between_processes_once_in_order_and_whole() {
    const CAP: u64 = 64 << 10;
    let count = big_count();
    let bus = BusName::new("stream-records");
    create_and_leave(&bus, CAP);
    let recs =
        Records::new(0x5EED_0000_0000_0001, max_record(CAP) as usize).with_dropped_reservations(61);
    let payload: u64 = (0..count).map(|i| recs.len(i) as u64).sum();
    let end = recs.tail_after(0..count, CAP, 0);
    println!(
        "{count} records (SHMBUS_STREAM_COUNT), {payload} payload bytes, {end} ring bytes \
         through a {CAP}-byte ring"
    );
    // Generous: about 20 µs a record, on top of the usual minute.
    let deadline = CHILD_DEADLINE + Duration::from_micros(20 * count);
    let mut consumer = Side::consumer(&bus, recs)
        .records(0..count)
        .ready_at_open()
        .check_end()
        .deadline(deadline)
        .spawn();
    consumer.wait_ready();
    let producer = Side::producer(&bus, recs)
        .records(0..count)
        .deadline(deadline)
        .spawn();
    let p = producer.wait_success();
    let c = consumer.wait_success();
    let pr = pushed_all(&p, count);
    let cr = got_all(&c, count);
    let (_, s) = stat_of(bus.name());
    assert_eq!(s.tail, end, "the producer wrote exactly the bytes expected");
    assert_eq!(s.head, end, "the consumer released all of them");
    assert_eq!(s.fill, 0);
    let ms = cr.get::<u64>("ms").max(1);
    println!(
        "{count} records in {ms} ms ({:.0} k records/s, {:.0} MB/s); the producer found the \
         ring full {} times",
        count as f64 / ms as f64,
        payload as f64 / ms as f64 / 1e3,
        pr.get::<u64>("full"),
    );
    bus.finish();
}

// ---------------------------------------------------------------------------
// 2. Backpressure and sleepers.

#[test]
#[cfg_attr(miri, ignore)]
fn a_slow_consumer_holds_the_producer_back_and_nothing_is_lost() {
    const CAP: u64 = 4096;
    let count: u64 = if cfg!(debug_assertions) {
        20_000
    } else {
        100_000
    };
    let bus = BusName::new("stream-slow-consumer");
    create_and_leave(&bus, CAP);
    let recs = Records::new(0x510E, max_record(CAP) as usize).with_dropped_reservations(31);
    // The consumer stops for 3 ms every 1000 records; the producer sleeps
    // on the futex (tiny spin) whenever the ring is full.
    let mut consumer = Side::consumer(&bus, recs)
        .records(0..count)
        .pace(1000, 3000)
        .ready_at_open()
        .check_end()
        .spawn();
    consumer.wait_ready();
    let producer = Side::producer(&bus, recs)
        .records(0..count)
        .wait("futex")
        .spawn();
    let p = producer.wait_success();
    let c = consumer.wait_success();
    let full: u64 = pushed_all(&p, count).get("full");
    got_all(&c, count);
    assert!(full > 0, "the producer never found the ring full");
    // Bits 1..31 of a doorbell count the wakes its waker made: the consumer
    // woke the producer asleep on the full ring.
    let space_wakes = control_word(&bus, sc::SPACE_BELL).get() >> 1;
    assert!(space_wakes > 0, "the producer never slept on the futex");
    let (_, s) = stat_of(bus.name());
    assert_eq!(s.tail, recs.tail_after(0..count, CAP, 0));
    assert_eq!(s.fill, 0);
    println!("ring full {full} times; the producer was woken {space_wakes} times");
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_consumer_sleeping_on_the_futex_is_woken_by_each_record() {
    const ROUNDS: u64 = 100;
    let bus = BusName::new("stream-sleeper");
    let mut producer = Producer::<[u8]>::create(bus.name(), &shmbus::stream::Options::new(4096))
        .expect("create stream");
    let recs = Records::new(0xB311, 200);
    let mut consumer = Side::consumer(&bus, recs)
        .records(0..ROUNDS)
        .wait("futex")
        .ready_at_open()
        .check_end()
        .spawn();
    consumer.wait_ready();
    let pid = consumer.pid();
    let bell = control_word(&bus, sc::DATA_BELL);
    let mut latencies = Vec::new();
    for i in 0..ROUNDS {
        // Push only once the consumer sleeps in the kernel on the stream's
        // futex with its flag up, so that every record crosses the wake path.
        wait_for(
            &format!("the consumer to sleep before record {i}"),
            &mut [&mut consumer],
            || {
                bell.get() & 1 == 1
                    && common::asleep_on_futex_in(pid, bus.path())
                        .expect("read /proc of a child process")
            },
        );
        let wakes = bell.get() >> 1;
        let at = Instant::now();
        producer
            .push(&recs.make(i), Wait::Never)
            .expect("room: the consumer has read everything");
        assert_eq!(
            bell.get() >> 1,
            wakes + 1,
            "record {i} found the consumer's flag and woke it, once"
        );
        // Informational only: how soon the consumer took it.
        while !producer.is_empty() && at.elapsed() < Duration::from_secs(10) {
            std::hint::spin_loop();
        }
        latencies.push(at.elapsed());
    }
    got_all(&consumer.wait_success(), ROUNDS);
    latencies.sort_unstable();
    println!(
        "wake-to-release: median {:?}, max {:?}",
        latencies[latencies.len() / 2],
        latencies[latencies.len() - 1]
    );
    drop(producer);
    bus.finish();
}

// ---------------------------------------------------------------------------
// 3. A killed peer is gone; a peer that leaves is waited for.

/// Waits until a thread of this process is asleep on `bell` (its flag is
/// up) for the futex strategy; for the spinning ones, gives the thread
/// time to be well into its wait loop (any moment in it will do).
fn until_waiting(bell: &FileWord32, wait: &str) {
    if wait == "default" {
        // No child to watch: the waiting side is a thread of this process.
        wait_for("the waiting thread to sleep", &mut [], || {
            bell.get() & 1 == 1
        });
    } else {
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The strategies the kill tests wait with.
const KILL_WAITS: [&str; 3] = ["default", "busy", "yield"];

#[test]
#[cfg_attr(miri, ignore)]
fn a_producer_waiting_on_a_full_stream_gets_peer_gone_when_the_consumer_is_killed() {
    for wait in KILL_WAITS {
        producer_gets_peer_gone(wait);
    }
}

fn producer_gets_peer_gone(wait: &'static str) {
    let bus = BusName::new(&format!("stream-full-{wait}"));
    create_and_leave(&bus, 4096);
    let recs = Records::new(0xF011, 300);
    let mut producer = Producer::<[u8]>::attach(bus.name(), &opts(wait)).expect("attach");
    // The consumer reads ten records, then holds its role and reads no more.
    let mut consumer = Side::consumer(&bus, recs)
        .records(0..10)
        .then("idle")
        .spawn();
    push_all(&mut producer, &recs, 0..10);
    consumer.wait_ready();
    let consumer_pid = consumer.pid();
    let mut next = 10;
    let mut buf = Vec::new();
    loop {
        match push_record(&mut producer, &recs, next, Wait::Never, &mut buf) {
            Ok(()) => next += 1,
            Err(PushError::Full) => break,
            Err(e) => panic!("filling the ring: {e}"),
        }
    }
    let waiter = std::thread::spawn(move || {
        let r = push_record(&mut producer, &recs, next, PATIENCE, &mut buf);
        (r, Instant::now(), producer)
    });
    until_waiting(&control_word(&bus, sc::SPACE_BELL), wait);
    let killed_at = Instant::now();
    let f = consumer.kill();
    assert_eq!(f.signal(), Some(libc::SIGKILL));
    got_all(&f, 10);
    let (r, at, mut producer) = waiter.join().expect("waiting thread");
    assert_eq!(r, Err(PushError::PeerGone { pid: consumer_pid }), "{wait}");
    let took = at.saturating_duration_since(killed_at);
    assert!(took < PEER_GONE_BOUND, "{wait}: PeerGone after {took:?}");
    let (_, s) = stat_of(bus.name());
    assert_eq!((s.consumer_pid, s.consumer_alive), (consumer_pid, false));
    // Nothing is lost: a new consumer gets every record from the eleventh,
    // and the producer carries on.
    let mut consumer =
        Consumer::<[u8]>::attach(bus.name(), &opts(wait)).expect("open after the kill");
    pop_all(&mut consumer, &recs, 10..next);
    push_all(&mut producer, &recs, next..next + 5);
    pop_all(&mut consumer, &recs, next..next + 5);
    assert_eq!(
        consumer.pop(&mut Vec::new(), Wait::Never),
        Err(PopError::Empty),
        "nothing more"
    );
    println!("{wait}: the producer got PeerGone {took:?} after the kill");
    drop((producer, consumer));
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_consumer_waiting_on_an_empty_stream_gets_peer_gone_when_the_producer_is_killed() {
    for wait in KILL_WAITS {
        consumer_gets_peer_gone(wait);
    }
}

fn consumer_gets_peer_gone(wait: &'static str) {
    let bus = BusName::new(&format!("stream-empty-{wait}"));
    create_and_leave(&bus, 4096);
    let recs = Records::new(0xE111, 300);
    let mut consumer = Consumer::<[u8]>::attach(bus.name(), &opts(wait)).expect("open");
    let mut producer = Side::producer(&bus, recs)
        .records(0..5)
        .then("idle")
        .spawn();
    producer.wait_ready();
    let producer_pid = producer.pid();
    pop_all(&mut consumer, &recs, 0..5);
    let waiter = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let r = consumer.pop(&mut buf, PATIENCE);
        (r, Instant::now(), consumer)
    });
    until_waiting(&control_word(&bus, sc::DATA_BELL), wait);
    let killed_at = Instant::now();
    let f = producer.kill();
    assert_eq!(f.signal(), Some(libc::SIGKILL));
    pushed_all(&f, 5);
    let (r, at, mut consumer) = waiter.join().expect("waiting thread");
    assert_eq!(r, Err(PopError::PeerGone { pid: producer_pid }), "{wait}");
    let took = at.saturating_duration_since(killed_at);
    assert!(took < PEER_GONE_BOUND, "{wait}: PeerGone after {took:?}");

    // Records a producer committed before it was killed are all delivered
    // first; then PeerGone.
    let mut second = Side::producer(&bus, recs)
        .records(5..8)
        .then("idle")
        .spawn();
    second.wait_ready();
    let second_pid = second.pid();
    pushed_all(&second.kill(), 3);
    pop_all(&mut consumer, &recs, 5..8);
    let mut buf = Vec::new();
    let at = Instant::now();
    assert_eq!(
        consumer.pop(&mut buf, PATIENCE),
        Err(PopError::PeerGone { pid: second_pid })
    );
    assert!(at.elapsed() < PEER_GONE_BOUND, "{:?}", at.elapsed());

    // PeerGone does not stick: the next producer's records arrive.
    let third = Side::producer(&bus, recs).records(8..11).spawn();
    pushed_all(&third.wait_success(), 3);
    pop_all(&mut consumer, &recs, 8..11);
    println!("{wait}: the consumer got PeerGone {took:?} after the kill");
    drop(consumer);
    bus.finish();
}

/// Threads that keep every core busy until dropped.
struct Hogs {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Hogs {
    /// Two spinning threads per core.
    fn start() -> Hogs {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = (0..2 * cores)
            .map(|_| {
                let stop = std::sync::Arc::clone(&stop);
                std::thread::spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            })
            .collect();
        Hogs { stop, threads }
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// With `SpinYield`, a wait ends at its deadline and notices a dead peer
/// within a bound even when every core is busy. A bound of 500 ms is 10
/// times the timeout and 25 times `PEER_CHECK`; a wait that reads the clock
/// after every `sched_yield` overruns by a scheduler slice at most.
#[test]
#[cfg_attr(miri, ignore)]
fn a_yielding_wait_ends_on_time_and_notices_a_killed_peer_on_a_busy_cpu() {
    const BOUND: Duration = Duration::from_millis(500);
    let d = Duration::from_millis(50);
    let bus = BusName::new("stream-busy-cpu");
    create_and_leave(&bus, 4096);
    let recs = Records::new(0xB05E, 300);
    let mut producer = Side::producer(&bus, recs)
        .records(0..1)
        .then("idle")
        .spawn();
    producer.wait_ready();
    let producer_pid = producer.pid();
    let mut consumer = Consumer::<[u8]>::attach(bus.name(), &opts("yield")).expect("open");
    pop_all(&mut consumer, &recs, 0..1);
    let (mut hp, mut hc) =
        shmbus::internals::stream_on_heap::<[u8]>(64, strategy("yield")).expect("geometry");
    hp.push(&[1; 24], Wait::Never).expect("room");
    hp.push(&[2; 24], Wait::Never).expect("room");

    let hogs = Hogs::start();
    let mut buf = Vec::new();
    let mut late = Vec::new();
    for _ in 0..3 {
        let at = Instant::now();
        assert_eq!(
            consumer.pop(&mut buf, Wait::For(d)),
            Err(PopError::TimedOut(d))
        );
        late.push(("pop", at.elapsed()));
        let at = Instant::now();
        assert_eq!(hp.push(&[3; 24], Wait::For(d)), Err(PushError::TimedOut(d)));
        late.push(("push", at.elapsed()));
    }
    let waiter = std::thread::spawn(move || {
        let r = consumer.pop(&mut Vec::new(), PATIENCE);
        (r, Instant::now())
    });
    std::thread::sleep(Duration::from_millis(50));
    let killed_at = Instant::now();
    producer.kill();
    let (r, at) = waiter.join().expect("waiting thread");
    drop(hogs);
    assert_eq!(r, Err(PopError::PeerGone { pid: producer_pid }));
    late.push(("PeerGone", at.saturating_duration_since(killed_at)));
    println!("{late:?}");
    for (what, took) in late {
        assert!(took < BOUND, "{what} took {took:?} on a busy CPU");
    }
    drop((hp, hc.pop(&mut buf, Wait::Never)));
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_producer_that_exits_cleanly_leaves_the_consumer_waiting_for_the_next_one() {
    let bus = BusName::new("stream-producer-leaves");
    create_and_leave(&bus, 4096);
    let recs = Records::new(0xC1EA, 300);
    let mut consumer = Consumer::<[u8]>::attach(bus.name(), &opts("default")).expect("open");
    let first = Side::producer(&bus, recs).records(0..10).spawn();
    let first_pid = first.pid();
    // A consumer waiting while the producer exits is not told it died.
    let waiter = std::thread::spawn(move || {
        pop_all(&mut consumer, &recs, 0..10);
        let mut buf = Vec::new();
        let r = consumer.pop(&mut buf, Wait::For(Duration::from_millis(500)));
        (r, consumer)
    });
    pushed_all(&first.wait_success(), 10);
    let (st, _) = stat_of(bus.name());
    assert_eq!(
        (st.publisher_pid, st.publisher_alive),
        (0, false),
        "a producer that leaves clears its pid (it was {first_pid})"
    );
    let (r, mut consumer) = waiter.join().expect("waiting thread");
    assert_eq!(r, Err(PopError::TimedOut(Duration::from_millis(500))));
    // Long past PEER_CHECK, and still only TimedOut.
    let mut buf = Vec::new();
    assert_eq!(
        consumer.pop(&mut buf, Wait::For(Duration::from_millis(300))),
        Err(PopError::TimedOut(Duration::from_millis(300)))
    );
    // The next producer carries on after the last record.
    let second = Side::producer(&bus, recs).records(10..20).spawn();
    pop_all(&mut consumer, &recs, 10..20);
    pushed_all(&second.wait_success(), 10);
    assert_eq!(consumer.pop(&mut buf, Wait::Never), Err(PopError::Empty));
    drop(consumer);
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_consumer_that_exits_cleanly_leaves_the_producer_waiting_for_the_next_one() {
    let bus = BusName::new("stream-consumer-leaves");
    let recs = Records::new(0xC1EB, 300);
    let mut producer = Producer::<[u8]>::create(bus.name(), &shmbus::stream::Options::new(4096))
        .expect("create stream");
    let first = Side::consumer(&bus, recs).records(0..10).spawn();
    push_all(&mut producer, &recs, 0..10);
    got_all(&first.wait_success(), 10);
    let (_, s) = stat_of(bus.name());
    assert_eq!((s.consumer_pid, s.consumer_alive), (0, false));
    let mut next = 10;
    let mut buf = Vec::new();
    while push_record(&mut producer, &recs, next, Wait::Never, &mut buf).is_ok() {
        next += 1;
    }
    assert_eq!(
        push_record(
            &mut producer,
            &recs,
            next,
            Wait::For(Duration::from_millis(300)),
            &mut buf
        ),
        Err(PushError::TimedOut(Duration::from_millis(300))),
        "full, with no consumer: waits, long past PEER_CHECK, and times out"
    );
    let second = Side::consumer(&bus, recs)
        .records(10..next + 1)
        .check_end()
        .spawn();
    push_record(&mut producer, &recs, next, PATIENCE, &mut buf).expect("room again");
    got_all(&second.wait_success(), next + 1 - 10);
    drop(producer);
    bus.finish();
}

// ---------------------------------------------------------------------------
// 4. Records at every edge of the ring.

/// A 256-byte ring carries records of at most 120 bytes.
const EDGE_CAP: u64 = 256;
const EDGE_MAX: usize = 120;

/// Record lengths that, pushed in order, hit every edge. Ring positions
/// (start of the record's header, mod 256) and what each shows:
const EDGE_SCRIPT: [usize; 18] = [
    0,   // 0: an empty record (8 bytes: a header alone)
    120, // 8: the maximum record
    1,   // 136
    96,  // 152: exactly fills the 104 bytes before the end: no marker
    120, // 0: the maximum record at the start of the ring
    0,   // 128
    113, // 136: 128 bytes do not fit in 120: a marker at 136, the record at 0
    112, // 128
    0,   // 248: an empty record in the last 8 bytes
    104, // 0
    120, // 112
    1,   // 240: 16 bytes exactly to the end
    112, // 0
    120, // 120
    1,   // 248: 16 bytes do not fit in 8: an 8-byte marker, the record at 0
    120, // 16
    120, // 144: a maximum record wraps: a 112-byte marker, the record at 0
    120, // 128: a maximum record exactly to the end
];

/// Where each edge record's header goes, and the bytes of wrap marker
/// before it (0 if none), by the placement rule.
fn edge_layout() -> Vec<(u64, u64)> {
    let mut tail = 0u64;
    EDGE_SCRIPT
        .iter()
        .map(|&len| {
            let size = padded(len);
            let to_end = EDGE_CAP - tail % EDGE_CAP;
            let marker = if size > to_end { to_end } else { 0 };
            tail += marker;
            let at = tail % EDGE_CAP;
            tail += size;
            (at, marker)
        })
        .collect()
}

/// Ring bytes the whole script takes, markers included.
const EDGE_END: u64 = 1792;

fn edge_record(k: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0..EDGE_SCRIPT[k])
        .map(|j| (k * 31 + j * 7 + 1) as u8)
        .collect();
    let n = v.len().min(8);
    v[..n].copy_from_slice(&(k as u64).to_le_bytes()[..n]);
    v
}

/// Pushes the script: by `push`, by `reserve`/`commit`, and by a
/// reservation dropped and made again, in turn. First, a record one byte
/// too long is refused.
fn produce_edges<R: Region>(p: &mut Producer<[u8], R>, wait: Wait) -> Result<(), PushError> {
    assert_eq!(p.max_record(), EDGE_MAX);
    assert_eq!(
        p.push(&[0; EDGE_MAX + 1], Wait::Never),
        Err(PushError::TooLong {
            len: EDGE_MAX + 1,
            max: EDGE_MAX
        })
    );
    for k in 0..EDGE_SCRIPT.len() {
        let rec = edge_record(k);
        match k % 3 {
            0 => p.push(&rec, wait)?,
            1 => {
                let mut chunk = p.reserve(rec.len(), wait)?;
                chunk.copy_from_slice(&rec);
                chunk.commit();
            }
            _ => {
                {
                    // Reserved and dropped: publishes nothing.
                    let _dropped = p.reserve(rec.len(), wait)?;
                }
                let mut chunk = p.reserve(rec.len(), wait)?;
                chunk.copy_from_slice(&rec);
                chunk.commit();
            }
        }
    }
    Ok(())
}

/// Reads the script back: `pop`, `read_with`, a peek left unreleased then
/// read again, and `peek`/`release`, in turn. Returns the first wrong
/// record, if any.
fn consume_edges<R: Region>(
    c: &mut Consumer<[u8], R>,
    wait: Wait,
) -> Result<Option<String>, PopError> {
    let mut buf = Vec::new();
    for k in 0..EDGE_SCRIPT.len() {
        let want = edge_record(k);
        let ok = match k % 4 {
            0 => {
                c.pop(&mut buf, wait)?;
                buf == want
            }
            1 => c.read_with(wait, |r| r == want)?,
            2 => {
                let first = *c.peek(wait)? == *want;
                let chunk = c.peek(Wait::Never)?;
                let again = *chunk == *want;
                chunk.release();
                first && again
            }
            _ => {
                let chunk = c.peek(wait)?;
                let ok = *chunk == *want;
                chunk.release();
                ok
            }
        };
        if !ok {
            return Ok(Some(format!("edge-record-{k}")));
        }
    }
    Ok(None)
}

#[test]
fn the_edge_script_hits_every_edge_of_the_ring() {
    assert_eq!(max_record(EDGE_CAP) as usize, EDGE_MAX);
    let layout = edge_layout();
    let end: u64 = layout
        .iter()
        .zip(EDGE_SCRIPT)
        .fold(0, |t, (&(_, m), len)| t + m + padded(len));
    assert_eq!(end, EDGE_END);
    let wrapped: Vec<usize> = (0..layout.len()).filter(|&k| layout[k].1 > 0).collect();
    assert_eq!(wrapped, [6, 14, 16], "records after a wrap marker");
    assert_eq!(layout[14].1, 8, "a marker of one header alone");
    assert_eq!(
        (layout[16].1, EDGE_SCRIPT[16]),
        (112, EDGE_MAX),
        "a maximum record wraps"
    );
    let to_the_end = |k: usize| layout[k].0 + padded(EDGE_SCRIPT[k]) == EDGE_CAP;
    assert!(to_the_end(3) && to_the_end(8) && to_the_end(11) && to_the_end(17));
    assert_eq!(
        EDGE_SCRIPT[17], EDGE_MAX,
        "a maximum record exactly to the end"
    );
    assert_eq!(layout[0], (0, 0));
    assert_eq!(EDGE_SCRIPT[0], 0);
}

#[test]
fn as_child_produce_the_edge_records() {
    role("edge_produce", || {
        let name: String = param("SHMBUS_BUS");
        let mut p = Producer::<[u8]>::attach(&name, &OpenOptions::default()).expect("attach");
        let r = produce_edges(&mut p, Wait::Forever);
        print_result(&[("error", no_whitespace(r.err()))]);
    });
}

#[test]
fn as_child_consume_the_edge_records() {
    role("edge_consume", || {
        let name: String = param("SHMBUS_BUS");
        let mut c = Consumer::<[u8]>::attach(&name, &OpenOptions::default()).expect("open");
        common::print_ready();
        let (wrong, error) = match consume_edges(&mut c, Wait::Forever) {
            Ok(wrong) => (wrong.unwrap_or_else(|| "none".into()), "none".into()),
            Err(e) => ("none".into(), no_whitespace(e)),
        };
        let extra = c.pop(&mut Vec::new(), Wait::Never).is_ok();
        print_result(&[
            ("wrong", wrong),
            ("error", error),
            ("extra", extra.to_string()),
        ]);
    });
}

fn assert_whole_script_went_through(bus: &BusName) {
    let (_, s) = stat_of(bus.name());
    assert_eq!(
        (s.tail, s.head, s.fill),
        (EDGE_END, EDGE_END, 0),
        "the records and their wrap markers took exactly the bytes expected"
    );
}

#[test]
#[cfg_attr(miri, ignore)]
fn empty_and_maximum_records_and_records_at_the_wrap_point_cross_from_a_producer_process() {
    let bus = BusName::new("stream-edges-in");
    create_and_leave(&bus, EDGE_CAP);
    let mut c = Consumer::<[u8]>::attach(bus.name(), &OpenOptions::default()).expect("open");
    let producer = common::spawn_child(
        "as_child_produce_the_edge_records",
        "edge_produce",
        &[("SHMBUS_BUS", bus.name().to_owned())],
    );
    let wrong = consume_edges(&mut c, PATIENCE).expect("every record within the patience");
    assert_eq!(wrong, None);
    let f = producer.wait_success();
    assert_eq!(f.result().raw("error"), Some("None"), "{}", f.output());
    assert_eq!(c.pop(&mut Vec::new(), Wait::Never), Err(PopError::Empty));
    assert_whole_script_went_through(&bus);
    drop(c);
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn empty_and_maximum_records_and_records_at_the_wrap_point_cross_to_a_consumer_process() {
    let bus = BusName::new("stream-edges-out");
    let mut p = Producer::<[u8]>::create(bus.name(), &shmbus::stream::Options::new(EDGE_CAP))
        .expect("create");
    let mut consumer = common::spawn_child(
        "as_child_consume_the_edge_records",
        "edge_consume",
        &[("SHMBUS_BUS", bus.name().to_owned())],
    );
    consumer.wait_ready();
    produce_edges(&mut p, PATIENCE).expect("room within the patience");
    let f = consumer.wait_success();
    let r = f.result();
    assert_eq!(r.raw("error"), Some("none"), "{}", f.output());
    assert_eq!(r.raw("wrong"), Some("none"), "{}", f.output());
    assert_eq!(r.raw("extra"), Some("false"));
    assert_whole_script_went_through(&bus);
    drop(p);
    bus.finish();
}

// ---------------------------------------------------------------------------
// 5. One producer and one consumer at a time; a new one resumes exactly.

/// Tries once to take ROLE (`producer` or `consumer`); reports the outcome
/// and the pid an error names; with SHMBUS_THEN=idle keeps the role until
/// killed.
#[test]
fn as_child_try_to_take_a_role() {
    role("take_role", || {
        let name: String = param("SHMBUS_BUS");
        let role: String = param("SHMBUS_ROLE");
        let then: String = param("SHMBUS_THEN");
        let o = OpenOptions::default();
        let held: Result<Box<dyn std::any::Any>, AttachError> = match role.as_str() {
            "producer" => {
                Producer::<[u8]>::attach(&name, &o).map(|p| Box::new(p) as Box<dyn std::any::Any>)
            }
            _ => Consumer::<[u8]>::attach(&name, &o).map(|c| Box::new(c) as Box<dyn std::any::Any>),
        };
        let (outcome, pid) = match &held {
            Ok(_) => ("taken", std::process::id()),
            Err(AttachError::RoleTaken {
                role: Role::Producer,
                pid,
            }) => ("producer_active", *pid),
            Err(AttachError::RoleTaken {
                role: Role::Consumer,
                pid,
            }) => ("consumer_active", *pid),
            Err(e) => panic!("taking the {role} role: {e}"),
        };
        print_result(&[("outcome", outcome.into()), ("pid", pid.to_string())]);
        if held.is_ok() && then == "idle" {
            common::print_ready();
            common::idle_until_killed();
        }
    });
}

fn role_child(bus: &BusName, role: &str, then: &str) -> Watched {
    common::spawn_child(
        "as_child_try_to_take_a_role",
        "take_role",
        &[
            ("SHMBUS_BUS", bus.name().to_owned()),
            ("SHMBUS_ROLE", role.to_owned()),
            ("SHMBUS_THEN", then.to_owned()),
        ],
    )
}

/// What a child that tried the role and exited reports.
fn refused_in_child(bus: &BusName, role: &str) -> (String, u32) {
    let f = role_child(bus, role, "exit").wait_success();
    let r = f.result();
    (r.raw("outcome").unwrap_or("?").to_owned(), r.get("pid"))
}

fn expect_producer_active(bus: &BusName, pid: u32) {
    match Producer::<[u8]>::attach(bus.name(), &OpenOptions::default()) {
        Err(
            e @ AttachError::RoleTaken {
                role: Role::Producer,
                ..
            },
        ) => {
            assert!(
                matches!(e, AttachError::RoleTaken { role: Role::Producer, pid: p } if p == pid),
                "{e}"
            );
            assert!(e.to_string().contains(&format!("pid {pid}")), "{e}");
        }
        Err(e) => panic!("expected RoleTaken Producer {{ pid: {pid} }}, got {e}"),
        Ok(_) => panic!("a second producer attached while pid {pid} produces"),
    }
    assert_eq!(
        refused_in_child(bus, "producer"),
        ("producer_active".into(), pid),
        "refused in another process too"
    );
}

fn expect_consumer_active(bus: &BusName, pid: u32) {
    match Consumer::<[u8]>::attach(bus.name(), &OpenOptions::default()) {
        Err(
            e @ AttachError::RoleTaken {
                role: Role::Consumer,
                ..
            },
        ) => {
            assert!(
                matches!(e, AttachError::RoleTaken { role: Role::Consumer, pid: p } if p == pid),
                "{e}"
            );
            assert!(e.to_string().contains(&format!("pid {pid}")), "{e}");
        }
        Err(e) => panic!("expected RoleTaken Consumer {{ pid: {pid} }}, got {e}"),
        Ok(_) => panic!("a second consumer opened while pid {pid} consumes"),
    }
    assert_eq!(
        refused_in_child(bus, "consumer"),
        ("consumer_active".into(), pid),
        "refused in another process too"
    );
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_second_producer_is_refused_with_the_pid_of_the_live_one_until_it_is_gone() {
    let bus = BusName::new("stream-one-producer");
    let me = std::process::id();
    let producer =
        Producer::<[u8]>::create(bus.name(), &shmbus::stream::Options::new(4096)).expect("create");
    expect_producer_active(&bus, me);

    // Dropped: another process takes the role, and is the one named.
    let guard = common::no_spawn_in_flight();
    drop(producer);
    drop(guard);
    let mut holder = role_child(&bus, "producer", "idle");
    holder.wait_ready();
    let holder_pid = holder.pid();
    let (st, _) = stat_of(bus.name());
    assert_eq!((st.publisher_pid, st.publisher_alive), (holder_pid, true));
    expect_producer_active(&bus, holder_pid);

    // Killed: this process takes it back.
    holder.kill();
    let producer = Producer::<[u8]>::attach(bus.name(), &OpenOptions::default()).expect("attach");
    let (st, _) = stat_of(bus.name());
    assert_eq!((st.publisher_pid, st.publisher_alive), (me, true));
    expect_producer_active(&bus, me);
    drop(producer);
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_second_consumer_is_refused_with_the_pid_of_the_live_one_until_it_is_gone() {
    let bus = BusName::new("stream-one-consumer");
    let me = std::process::id();
    let producer =
        Producer::<[u8]>::create(bus.name(), &shmbus::stream::Options::new(4096)).expect("create");
    let consumer = Consumer::<[u8]>::attach(bus.name(), &OpenOptions::default()).expect("open");
    expect_consumer_active(&bus, me);
    // The producer and the consumer are separate roles, even in one process.
    expect_producer_active(&bus, me);

    let guard = common::no_spawn_in_flight();
    drop(consumer);
    drop(guard);
    let (_, s) = stat_of(bus.name());
    assert_eq!((s.consumer_pid, s.consumer_alive), (0, false));
    let mut holder = role_child(&bus, "consumer", "idle");
    holder.wait_ready();
    let holder_pid = holder.pid();
    let (_, s) = stat_of(bus.name());
    assert_eq!((s.consumer_pid, s.consumer_alive), (holder_pid, true));
    expect_consumer_active(&bus, holder_pid);

    holder.kill();
    let (_, s) = stat_of(bus.name());
    assert_eq!((s.consumer_pid, s.consumer_alive), (holder_pid, false));
    let consumer = Consumer::<[u8]>::attach(bus.name(), &OpenOptions::default()).expect("open");
    let (_, s) = stat_of(bus.name());
    assert_eq!((s.consumer_pid, s.consumer_alive), (me, true));
    expect_consumer_active(&bus, me);
    drop((consumer, producer));
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_new_consumer_resumes_exactly_where_the_last_one_stopped() {
    const CAP: u64 = 64 << 10;
    const N: u64 = 1000;
    let bus = BusName::new("stream-consumer-restart");
    let recs = Records::new(0x2E57, 64);
    let mut producer =
        Producer::<[u8]>::create(bus.name(), &shmbus::stream::Options::new(CAP)).expect("create");
    // Everything fits at once: no consumer change ever finds the producer
    // waiting (a killed consumer would make that a PeerGone).
    assert!(recs.tail_after(0..N, CAP, 0) <= CAP);
    let mut buf = Vec::new();
    for i in 0..N {
        push_record(&mut producer, &recs, i, Wait::Never, &mut buf).expect("fits");
    }
    let head = || stat_of(bus.name()).1.head;
    let at = |i| recs.tail_after(0..i, CAP, 0);

    // A reads 300 and leaves.
    got_all(
        &Side::consumer(&bus, recs)
            .records(0..300)
            .spawn()
            .wait_success(),
        300,
    );
    assert_eq!(head(), at(300));
    // B reads 400, peeks at the next without releasing it, and leaves.
    got_all(
        &Side::consumer(&bus, recs)
            .records(300..700)
            .then("peek-exit")
            .spawn()
            .wait_success(),
        400,
    );
    assert_eq!(head(), at(700), "a record peeked and not released stays");
    // C reads 100 and is killed.
    let mut c = Side::consumer(&bus, recs)
        .records(700..800)
        .then("idle")
        .spawn();
    c.wait_ready();
    let c_pid = c.pid();
    got_all(&c.kill(), 100);
    let (_, s) = stat_of(bus.name());
    assert_eq!(
        (s.head, s.consumer_pid, s.consumer_alive),
        (at(800), c_pid, false)
    );
    // D reads the rest, and finds nothing after it.
    got_all(
        &Side::consumer(&bus, recs)
            .records(800..N)
            .check_end()
            .spawn()
            .wait_success(),
        N - 800,
    );
    let (_, s) = stat_of(bus.name());
    assert_eq!((s.head, s.tail, s.fill), (at(N), at(N), 0));
    drop(producer);
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_new_producer_resumes_after_the_last_record_the_old_one_committed() {
    const CAP: u64 = 4096;
    let bus = BusName::new("stream-producer-restart");
    create_and_leave(&bus, CAP);
    let recs = Records::new(0x9E57, max_record(CAP) as usize).with_dropped_reservations(13);
    let mut consumer = Consumer::<[u8]>::attach(bus.name(), &opts("default")).expect("open");

    // A pushes 300 and leaves.
    let a = Side::producer(&bus, recs).records(0..300).spawn();
    pop_all(&mut consumer, &recs, 0..300);
    pushed_all(&a.wait_success(), 300);
    // B pushes 300, reserves a maximum record, scribbles over it, and is
    // killed before it commits: none of that may reach the consumer.
    let mut b = Side::producer(&bus, recs)
        .records(300..600)
        .then("reserve-idle")
        .spawn();
    pop_all(&mut consumer, &recs, 300..600);
    b.wait_ready();
    let b_pid = b.pid();
    pushed_all(&b.kill(), 300);
    let mut buf = Vec::new();
    assert_eq!(
        consumer.pop(&mut buf, PATIENCE),
        Err(PopError::PeerGone { pid: b_pid })
    );
    // C carries on after B's last committed record.
    let c = Side::producer(&bus, recs).records(600..900).spawn();
    pop_all(&mut consumer, &recs, 600..900);
    pushed_all(&c.wait_success(), 300);
    assert_eq!(
        consumer.pop(&mut buf, Wait::For(Duration::from_millis(100))),
        Err(PopError::TimedOut(Duration::from_millis(100)))
    );
    let (_, s) = stat_of(bus.name());
    let end = recs.tail_after(0..900, CAP, 0);
    assert_eq!((s.tail, s.head), (end, end));
    drop(consumer);
    bus.finish();
}

// ---------------------------------------------------------------------------
// 6. Kinds and `stat`.

#[test]
#[cfg_attr(miri, ignore)]
fn a_broadcast_subscriber_cannot_open_a_stream_nor_a_stream_consumer_a_broadcast_bus() {
    let stream = BusName::new("kind-stream");
    let bus = BusName::new("kind-bus");
    let producer = Producer::<[u8]>::create(stream.name(), &shmbus::stream::Options::new(4096))
        .expect("create");
    let publisher = Publisher::<u64>::create(bus.name(), &BusOptions::new(16)).expect("bus");
    let o = OpenOptions::default();
    let is_stream = |e: &OpenError| {
        matches!(
            e,
            OpenError::WrongKind {
                found: Kind::Stream,
                expected: Kind::Broadcast
            }
        )
    };
    let is_bus = |e: &AttachError| {
        matches!(
            e,
            AttachError::Open(OpenError::WrongKind {
                found: Kind::Broadcast,
                expected: Kind::Stream
            })
        )
    };
    match Subscriber::<u64>::open(stream.name(), &o) {
        Err(e) => assert!(is_stream(&e), "{e}"),
        Ok(_) => panic!("a subscriber opened a stream"),
    }
    match Subscriber::<[u8]>::open(stream.name(), &o) {
        Err(e) => assert!(is_stream(&e), "{e}"),
        Ok(_) => panic!("a raw subscriber opened a stream"),
    }
    match Publisher::<u64>::attach(stream.name(), &o) {
        Err(AttachError::Open(e)) => assert!(is_stream(&e), "{e}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a publisher attached to a stream"),
    }
    match Consumer::<[u8]>::attach(bus.name(), &o) {
        Err(e) => assert!(is_bus(&e), "{e}"),
        Ok(_) => panic!("a consumer opened a broadcast bus"),
    }
    match Producer::<[u8]>::attach(bus.name(), &o) {
        Err(e) => assert!(is_bus(&e), "{e}"),
        Ok(_) => panic!("a producer attached to a broadcast bus"),
    }
    assert!(matches!(
        Producer::<[u8]>::create(stream.name(), &shmbus::stream::Options::new(4096)),
        Err(CreateError::AlreadyExists { .. })
    ));
    for bad in [0, 32, 100, 4095] {
        assert!(
            matches!(
                Producer::<[u8]>::create(
                    &format!("{}-{bad}", stream.name()),
                    &shmbus::stream::Options::new(bad)
                ),
                Err(CreateError::InvalidGeometry(_))
            ),
            "capacity {bad}"
        );
    }
    assert!(stat::stat(bus.name()).expect("stat").stream.is_none());
    drop((producer, publisher));
    stream.finish();
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn stat_shows_a_streams_cursors_fill_and_consumer() {
    let bus = BusName::new("stream-stat");
    let me = std::process::id();
    let mut producer =
        Producer::<[u8]>::create(bus.name(), &shmbus::stream::Options::new(4096)).expect("create");
    let (st, s) = stat_of(bus.name());
    assert_eq!(st.kind, shmbus::SegmentKind::Stream);
    assert_eq!(st.size, Some(shmbus::stat::Size::Bytes(4096)));
    assert_eq!((st.publisher_pid, st.publisher_alive), (me, true));
    assert_eq!((s.tail, s.head, s.fill), (0, 0, 0));
    assert_eq!((s.consumer_pid, s.consumer_alive), (0, false));

    // Records of 0, 5 and 100 bytes take 8, 16 and 112.
    let recs = Records::new(0x57A7, 300);
    for len in [0usize, 5, 100] {
        producer.push(&vec![7; len], Wait::Never).expect("room");
    }
    let (st, s) = stat_of(bus.name());
    assert_eq!((s.tail, s.head, s.fill), (136, 0, 136));
    assert_eq!(st.published, 136, "for a stream: bytes written");
    assert_eq!(producer.len(), 136);

    // A consumer in another process holds the role.
    let mut child = Side::consumer(&bus, recs).then("idle").spawn();
    child.wait_ready();
    let child_pid = child.pid();
    assert!(matches!(
        Consumer::<[u8]>::attach(bus.name(), &OpenOptions::default()),
        Err(AttachError::RoleTaken { role: Role::Consumer, pid }) if pid == child_pid
    ));
    let (_, s) = stat_of(bus.name());
    assert_eq!((s.consumer_pid, s.consumer_alive), (child_pid, true));
    child.kill();
    let (_, s) = stat_of(bus.name());
    assert_eq!((s.consumer_pid, s.consumer_alive), (child_pid, false));

    // Here: each record released lowers the fill by its size.
    let mut c =
        Consumer::<[u8]>::attach(bus.name(), &OpenOptions::default()).expect("open after the kill");
    let mut buf = Vec::new();
    for (len, fill) in [(0, 128), (5, 112), (100, 0)] {
        c.pop(&mut buf, Wait::Never).expect("a record");
        assert_eq!(buf.len(), len);
        let (_, s) = stat_of(bus.name());
        assert_eq!((s.head, s.fill), (136 - fill, fill));
        assert_eq!(c.len(), fill);
        assert_eq!(c.is_empty(), fill == 0);
    }
    let (_, s) = stat_of(bus.name());
    assert_eq!((s.consumer_pid, s.consumer_alive), (me, true));
    let guard = common::no_spawn_in_flight();
    drop(c);
    let (_, s) = stat_of(bus.name());
    assert_eq!((s.consumer_pid, s.consumer_alive), (0, false));
    drop(guard);
    drop(producer);
    bus.finish();
}

// ---------------------------------------------------------------------------
// On the heap (Miri too): a model of the ring, the edge records and a
// random stream between threads.

mod heap {
    use super::*;
    use proptest::prelude::*;
    use shmbus::internals::stream_on_heap as on_heap;
    use std::collections::VecDeque;

    #[derive(Clone, Debug)]
    enum Op {
        Push(usize),
        /// Reserve room for a record, and commit it or drop it.
        Reserve(usize, bool),
        Pop,
        ReadWith,
        /// Peek, and release or leave the record.
        Peek(bool),
    }

    fn op(max: usize) -> impl Strategy<Value = Op> {
        // Lengths near 0 and near the maximum are where the edges are.
        let len = prop_oneof![
            0..=max,
            Just(0usize),
            Just(max),
            (max - 8)..=max,
            0..=16usize
        ];
        prop_oneof![
            3 => len.clone().prop_map(Op::Push),
            2 => (len, any::<bool>()).prop_map(|(n, c)| Op::Reserve(n, c)),
            2 => Just(Op::Pop),
            1 => Just(Op::ReadWith),
            1 => any::<bool>().prop_map(Op::Peek),
        ]
    }

    /// The ring as the documentation describes it: a queue of records, each
    /// taking `padded(len)` bytes after the cursor, or after a wrap marker
    /// at the end of the ring when it does not fit before it.
    struct Model {
        cap: u64,
        /// The producer's cursor, including a wrap it made for a
        /// reservation it then dropped.
        tail: u64,
        /// The consumer's released cursor.
        head: u64,
        /// The consumer's own cursor: past a wrap marker it peeked across.
        read: u64,
        /// Committed records: (start with its marker, record start, bytes).
        queue: VecDeque<(u64, u64, Vec<u8>)>,
    }

    impl Model {
        /// Where a record of `len` would go, if it fits: (cursor after any
        /// wrap, bytes taken including the marker).
        fn claim(&self, len: usize) -> Option<(u64, u64)> {
            let size = padded(len);
            let to_end = self.cap - self.tail % self.cap;
            let marker = if size > to_end { to_end } else { 0 };
            (self.cap - (self.tail - self.head) >= marker + size)
                .then_some((self.tail + marker, marker + size))
        }
    }

    fn run(cap: u64, ops: &[Op]) {
        let (mut p, mut c) = on_heap::<[u8]>(cap, WaitStrategy::BusySpin).expect("geometry");
        let max = p.max_record();
        let mut m = Model {
            cap,
            tail: 0,
            head: 0,
            read: 0,
            queue: VecDeque::new(),
        };
        let mut buf = Vec::new();
        for (n, op) in ops.iter().enumerate() {
            let record =
                |len: usize| -> Vec<u8> { (0..len).map(|j| (n * 13 + j) as u8 | 1).collect() };
            match op {
                Op::Push(len) | Op::Reserve(len, _) => {
                    let len = (*len).min(max);
                    let rec = record(len);
                    let fits = m.claim(len);
                    let commit = !matches!(op, Op::Reserve(_, false));
                    let r = if let Op::Push(_) = op {
                        p.push(&rec, Wait::Never)
                    } else {
                        p.reserve(len, Wait::Never).map(|mut chunk| {
                            chunk.copy_from_slice(&rec);
                            if commit {
                                chunk.commit();
                            }
                        })
                    };
                    match (fits, r) {
                        (Some((at, _)), Ok(())) => {
                            let start = m.tail;
                            m.tail = at;
                            if commit {
                                m.tail += padded(len);
                                m.queue.push_back((start, at, rec));
                            }
                        }
                        (None, Err(PushError::Full)) => {}
                        (fits, r) => panic!("op {n} {op:?}: model says {fits:?}, ring {r:?}"),
                    }
                }
                Op::Pop | Op::ReadWith | Op::Peek(_) => {
                    let got = match op {
                        Op::Pop => c.pop(&mut buf, Wait::Never).map(|()| (buf.clone(), true)),
                        Op::ReadWith => c.read_with(Wait::Never, |r| (r.to_vec(), true)),
                        Op::Peek(release) => c.peek(Wait::Never).map(|chunk| {
                            let v = chunk.to_vec();
                            if *release {
                                chunk.release();
                            }
                            (v, *release)
                        }),
                        _ => unreachable!(),
                    };
                    match (m.queue.front(), got) {
                        (Some((_, at, want)), Ok((v, released))) => {
                            assert_eq!(&v, want, "op {n} {op:?}");
                            m.read = *at;
                            if released {
                                m.head = at + padded(v.len());
                                m.read = m.head;
                                m.queue.pop_front();
                            }
                        }
                        (None, Err(PopError::Empty)) => {}
                        (want, got) => panic!("op {n} {op:?}: model has {want:?}, ring {got:?}"),
                    }
                }
            }
            // The fill each side sees.
            assert_eq!(
                p.len(),
                m.tail - m.head,
                "producer's len after op {n} {op:?}"
            );
            let published = m
                .queue
                .back()
                .map_or(m.head, |(_, at, r)| at + padded(r.len()));
            let published = published.max(m.head);
            assert_eq!(
                c.len(),
                published - m.read,
                "consumer's len after op {n} {op:?}"
            );
            assert_eq!(c.is_empty(), m.queue.is_empty());
        }
        // Whatever is left comes out in order.
        while let Some((_, _, want)) = m.queue.pop_front() {
            c.pop(&mut buf, Wait::Never).expect("a record left");
            assert_eq!(buf, want);
        }
        assert_eq!(c.pop(&mut buf, Wait::Never), Err(PopError::Empty));
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            // Under SHMBUS_TEST_SCALE; at least 32 cases (Miri: 4, at least 2).
            cases: u32::try_from(if cfg!(miri) {
                common::scale_min(4, 2)
            } else {
                common::scale_min(512, 32)
            })
            .unwrap_or(u32::MAX),
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn any_sequence_of_pushes_reserves_pops_and_peeks_matches_a_model_of_the_ring(
            cap in prop_oneof![Just(64u64), Just(128), Just(256)],
            ops in proptest::collection::vec(op(120), 1..if cfg!(miri) { 40 } else { 300 }),
        ) {
            run(cap, &ops);
        }
    }

    #[test]
    fn the_edge_records_cross_between_threads_on_the_heap() {
        let (mut p, mut c) = on_heap::<[u8]>(EDGE_CAP, WaitStrategy::default()).expect("geometry");
        let reader = std::thread::spawn(move || {
            let wrong = consume_edges(&mut c, PATIENCE).expect("every record");
            assert_eq!(c.pop(&mut Vec::new(), Wait::Never), Err(PopError::Empty));
            (wrong, c.len())
        });
        produce_edges(&mut p, PATIENCE).expect("room");
        let (wrong, left) = reader.join().expect("reader");
        assert_eq!(wrong, None);
        assert_eq!((left, p.len()), (0, 0));
    }

    #[test]
    fn random_records_cross_between_threads_once_in_order_and_whole() {
        const CAP: u64 = 1024;
        // Under SHMBUS_TEST_SCALE; at least 2 000 records (tens of laps of
        // the 1 KiB ring), or under Miri 100, at least 50: records average
        // some 140 bytes in the ring, so 50 still lap it seven times, a
        // reservation dropped before one record in seven, for each wait
        // strategy (under Miri each 100 records cost some 15 CPU seconds).
        let count = if cfg!(miri) {
            common::scale_min(100, 50)
        } else {
            common::scale_min(100_000, 2_000)
        };
        let recs = Records::new(0x7EAD, max_record(CAP) as usize).with_dropped_reservations(7);
        for wait in ["default", "futex", "yield", "busy"] {
            let (mut p, mut c) = on_heap::<[u8]>(CAP, strategy(wait)).expect("geometry");
            let reader = std::thread::spawn(move || {
                let mut k = Checked::default();
                for i in 0..count {
                    pop_record(&mut c, &recs, i, PATIENCE, &mut k).expect("a record");
                }
                assert_eq!(k.faults, 0, "{wait}: {}", k.first_fault());
                c.len()
            });
            push_all(&mut p, &recs, 0..count);
            assert_eq!(reader.join().expect("reader"), 0);
            assert_eq!(p.len(), 0);
        }
    }
}
