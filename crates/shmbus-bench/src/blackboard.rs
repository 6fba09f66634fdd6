//! The blackboard rows: the latest value of a key, written by
//! one thread and read by another, in shmbus's `blackboard` (through entry
//! handles, `shmbus-entry`, and by key, `shmbus`) beside ringfire's
//! `Blackboard` and iceoryx2's blackboard service.
//!
//! Each table holds [`KEYS`] keys (u64) of 64-byte values ([`Value`]).
//! - **write**: one thread puts one key N times, flat out, nobody
//!   reading; ns per write. **read**: one thread gets one key N times,
//!   nobody writing; ns per read. The same over **1000 keys** in turn
//!   (key `i % KEYS`): the table no longer in L1, and, for shmbus by key,
//!   whose keys are hashed, no order the prefetcher can follow (ringfire's
//!   array is walked in order). [`REPEATS`] rounds: in each, every
//!   implementation runs one block of each operation in turn, so that a
//!   round's figures share whatever the machine did then (a VM may change
//!   speed between rounds); each figure is the median of its rounds, and
//!   each target's ratio the median of the rounds' ratios.
//! - **visibility**: two threads pinned to the first two CPUs of `--cpus`
//!   play ping-pong through two tables (A puts key 0 = n in one, B spins
//!   on a get of key 0 until it reads n, then puts n in the other, A
//!   spins on that): a round trip over two, the one-way time for an
//!   update to be seen on the other core. Beside it the **cache-line
//!   floor**: the same ping-pong through two bare `AtomicU64`s on lines of
//!   their own. The floor, shmbus by key, ringfire and shmbus through
//!   handles run in turn, round by round ([`VISIBLE_ROUNDS`] rounds of
//!   `trips / VISIBLE_ROUNDS` round trips each); each figure is the median
//!   of its rounds, and a target's ratio the median of the rounds' ratios.
//!
//! What differs between them (the page says so): ringfire's key is an
//! index into its array (no hash, no key compare, no table-wide version,
//! no doorbell); shmbus by key hashes the key and compares it (any key
//! type); shmbus's and iceoryx2's handles are made once per key (not
//! timed): shmbus's get through one checks the key in its entry inside
//! the seqlock, and its put checks it, writes the value, moves the
//! table's version and looks at the doorbell for sleeping readers.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use serde_json::{Value as Json, json};
use shmbus::OpenOptions;
use shmbus::blackboard::{self, EntryReader, EntryWriter, GetError, Reader, Writer};

use crate::error::BenchError;

/// Keys in each table.
pub const KEYS: u64 = 1000;

/// A 64-byte value.
pub type Value = [u64; 8];

/// Rounds of the write and read blocks (every implementation in turn in
/// each); the median is reported.
const REPEATS: usize = 5;

/// The four operations of a row, in the order a round runs them.
#[derive(Clone, Copy)]
enum Op {
    Write,
    Read,
    SpreadWrite,
    SpreadRead,
}

const OPS: [Op; 4] = [Op::Write, Op::Read, Op::SpreadWrite, Op::SpreadRead];

/// One implementation's blocks: `block(op, n)` runs `n` of `op` and
/// returns ns per operation. One dynamic call per block, so the loop
/// inside is monomorphic.
type Blocks = Box<dyn FnMut(Op, u64) -> f64>;

/// Rounds of the visibility ping-pongs (floor, shmbus, ringfire in turn).
pub const VISIBLE_ROUNDS: usize = 7;

/// One implementation's figures, ns.
pub struct Row {
    /// Its name in the table.
    pub name: &'static str,
    /// ns per write, one key over and over (median block).
    pub write_ns: f64,
    /// ns per read, one key over and over (median block).
    pub read_ns: f64,
    /// ns per write, the [`KEYS`] keys in turn (median block).
    pub spread_write_ns: f64,
    /// ns per read, the [`KEYS`] keys in turn (median block).
    pub spread_read_ns: f64,
    /// One-way update visibility between two cores, ns (`None`: fewer
    /// than two CPUs, or not measured for this implementation).
    pub visible_ns: Option<f64>,
}

/// Every row, and the floor.
pub struct Report {
    /// One per implementation.
    pub rows: Vec<Row>,
    /// One-way cache-line floor between the same two cores, ns.
    pub floor_ns: Option<f64>,
    /// Operations per block.
    pub ops: u64,
    /// Round trips per visibility block.
    pub trips: u64,
    /// The CPUs of the ping-pong.
    pub cpus: Vec<usize>,
    /// Each round's one-way times, ns: floor, shmbus by key, ringfire,
    /// shmbus through handles.
    pub visible_rounds: Vec<[f64; 4]>,
    /// Each round's ns per operation, per row (in `rows`' order): write,
    /// read, write 1000 keys, read 1000 keys.
    pub op_rounds: Vec<Vec<[f64; 4]>>,
}

fn err(what: &'static str) -> impl Fn(String) -> BenchError {
    move |why| BenchError::Blackboard { what, why }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// ns per call of `op(i)` over `n` calls.
#[inline(always)]
fn timed(n: u64, mut op: impl FnMut(u64)) -> f64 {
    let t = Instant::now();
    for i in 0..n {
        op(i);
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

fn value(n: u64) -> Value {
    [n; 8]
}

/// Removes a table's file when dropped.
struct Gone(String);

impl Drop for Gone {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn name(what: &str) -> String {
    format!("/dev/shm/shmbus-bench-bb-{what}-{}", std::process::id())
}

/// A ping-pong's one-way time: `trips` round trips of `a` (pinned to
/// `cpus[0]`, sends first) against `b` (pinned to `cpus[1]`), each
/// `send(n)` then `wait(n)`; ns per one way (round trip / 2).
fn pingpong<A, B>(cpus: &[usize], trips: u64, a: A, b: B) -> Result<f64, BenchError>
where
    A: FnMut(u64, bool) + Send + 'static,
    B: FnMut(u64, bool) + Send + 'static,
{
    // `f(n, true)` sends n, `f(n, false)` waits until n arrives.
    let (ca, cb) = (cpus[0], cpus[1]);
    let mut b = b;
    let other = std::thread::spawn(move || -> Result<(), BenchError> {
        crate::cpu::pin(cb)?;
        for n in 1..=trips + trips / 10 {
            b(n, false);
            b(n, true);
        }
        Ok(())
    });
    crate::cpu::pin(ca)?;
    let mut a = a;
    let warm = trips / 10;
    for n in 1..=warm {
        a(n, true);
        a(n, false);
    }
    let t = Instant::now();
    for n in warm + 1..=warm + trips {
        a(n, true);
        a(n, false);
    }
    let ns = t.elapsed().as_nanos() as f64 / trips as f64 / 2.0;
    other
        .join()
        .map_err(|_| err("ping-pong")("the other thread panicked".into()))??;
    Ok(ns)
}

/// The cache-line floor: two `AtomicU64`s on lines of their own.
fn floor(cpus: &[usize], trips: u64) -> Result<f64, BenchError> {
    #[repr(align(128))]
    struct Line(AtomicU64);
    let lines = Arc::new([Line(AtomicU64::new(0)), Line(AtomicU64::new(0))]);
    let (la, lb) = (lines.clone(), lines);
    let a = move |n: u64, send: bool| {
        if send {
            la[0].0.store(n, Ordering::Release);
        } else {
            while la[1].0.load(Ordering::Acquire) != n {
                std::hint::spin_loop();
            }
        }
    };
    let b = move |n: u64, send: bool| {
        if send {
            lb[1].0.store(n, Ordering::Release);
        } else {
            while lb[0].0.load(Ordering::Acquire) != n {
                std::hint::spin_loop();
            }
        }
    };
    pingpong(cpus, trips, a, b)
}

/// shmbus's side of a ping-pong by key: put into `out`, spin on `get`
/// of `inp`.
fn shmbus_end(
    mut out: Writer<u64, Value>,
    mut inp: Reader<u64, Value>,
) -> impl FnMut(u64, bool) + Send {
    move |n, send| {
        if send {
            out.put(&0, &value(n)).expect("put");
        } else {
            loop {
                match inp.get(&0) {
                    Ok(Some(v)) if v.value[0] == n => break,
                    Ok(_) | Err(GetError::Busy { .. }) => std::hint::spin_loop(),
                    Err(e) => panic!("get: {e}"),
                }
            }
        }
    }
}

/// shmbus's side of a ping-pong through entry handles.
fn shmbus_entry_end(
    mut out: Writer<u64, Value>,
    mut put: EntryWriter<u64, Value>,
    mut get: EntryReader<u64, Value>,
) -> impl FnMut(u64, bool) + Send {
    move |n, send| {
        if send {
            out.put_entry(&mut put, &value(n)).expect("put");
        } else {
            loop {
                match get.get() {
                    Ok(Some(v)) if v.value[0] == n => break,
                    Ok(_) | Err(GetError::Busy { .. }) => std::hint::spin_loop(),
                    Err(e) => panic!("get: {e}"),
                }
            }
        }
    }
}

/// shmbus's blocks, by key or (`handles`) through entry handles.
fn shmbus_blocks(handles: bool) -> Result<Blocks, BenchError> {
    let e = err("shmbus");
    let path = name(if handles { "shmbus-entry" } else { "shmbus" });
    let gone = Gone(path.clone());
    let mut writer = Writer::<u64, Value>::create(&path, &blackboard::Options::new(KEYS))
        .map_err(|x| e(x.to_string()))?;
    let mut reader =
        Reader::<u64, Value>::open(&path, &OpenOptions::default()).map_err(|x| e(x.to_string()))?;
    if !handles {
        return Ok(Box::new(move |op, n| {
            let _keep = &gone;
            match op {
                Op::Write => timed(n, |i| {
                    writer.put(&7, &value(i)).expect("put");
                }),
                Op::Read => timed(n, |_| {
                    black_box(reader.get(black_box(&7)).expect("get"));
                }),
                Op::SpreadWrite => timed(n, |i| {
                    writer.put(&(i % KEYS), &value(i)).expect("put");
                }),
                Op::SpreadRead => timed(n, |i| {
                    black_box(reader.get(&(i % KEYS)).expect("get"));
                }),
            }
        }));
    }
    let mut puts = Vec::new();
    let mut gets = Vec::new();
    for k in 0..KEYS {
        let mut w = writer.entry(&k).map_err(|x| e(x.to_string()))?;
        writer.put_entry(&mut w, &value(0)).expect("put");
        puts.push(w);
        gets.push(reader.entry(&k).map_err(|x| e(x.to_string()))?);
    }
    Ok(Box::new(move |op, n| {
        let _keep = &gone;
        match op {
            Op::Write => timed(n, |i| {
                writer.put_entry(&mut puts[7], &value(i)).expect("put");
            }),
            Op::Read => timed(n, |_| {
                black_box(gets[black_box(7)].get().expect("get"));
            }),
            Op::SpreadWrite => timed(n, |i| {
                let w = &mut puts[(i % KEYS) as usize];
                writer.put_entry(w, &value(i)).expect("put");
            }),
            Op::SpreadRead => timed(n, |i| {
                black_box(gets[(i % KEYS) as usize].get().expect("get"));
            }),
        }
    }))
}

/// shmbus's one-way visibility: a ping-pong through two one-key tables.
fn shmbus_visible(cpus: &[usize], trips: u64) -> Result<f64, BenchError> {
    let e = err("shmbus");
    let (ab, ba) = (name("shmbus-ab"), name("shmbus-ba"));
    let _g = (Gone(ab.clone()), Gone(ba.clone()));
    let opts = blackboard::Options::new(1);
    let w_ab = Writer::<u64, Value>::create(&ab, &opts).map_err(|x| e(x.to_string()))?;
    let w_ba = Writer::<u64, Value>::create(&ba, &opts).map_err(|x| e(x.to_string()))?;
    let open = OpenOptions::default();
    let r_ab = Reader::<u64, Value>::open(&ab, &open).map_err(|x| e(x.to_string()))?;
    let r_ba = Reader::<u64, Value>::open(&ba, &open).map_err(|x| e(x.to_string()))?;
    pingpong(cpus, trips, shmbus_end(w_ab, r_ba), shmbus_end(w_ba, r_ab))
}

/// The same through entry handles.
fn shmbus_entry_visible(cpus: &[usize], trips: u64) -> Result<f64, BenchError> {
    let e = err("shmbus");
    let (ab, ba) = (name("shmbus-entry-ab"), name("shmbus-entry-ba"));
    let _g = (Gone(ab.clone()), Gone(ba.clone()));
    let opts = blackboard::Options::new(1);
    let w_ab = Writer::<u64, Value>::create(&ab, &opts).map_err(|x| e(x.to_string()))?;
    let w_ba = Writer::<u64, Value>::create(&ba, &opts).map_err(|x| e(x.to_string()))?;
    let open = OpenOptions::default();
    let r_ab = Reader::<u64, Value>::open(&ab, &open).map_err(|x| e(x.to_string()))?;
    let r_ba = Reader::<u64, Value>::open(&ba, &open).map_err(|x| e(x.to_string()))?;
    let (p_ab, p_ba) = (
        w_ab.entry(&0).map_err(|x| e(x.to_string()))?,
        w_ba.entry(&0).map_err(|x| e(x.to_string()))?,
    );
    let (g_ab, g_ba) = (
        r_ab.entry(&0).map_err(|x| e(x.to_string()))?,
        r_ba.entry(&0).map_err(|x| e(x.to_string()))?,
    );
    pingpong(
        cpus,
        trips,
        shmbus_entry_end(w_ab, p_ab, g_ba),
        shmbus_entry_end(w_ba, p_ba, g_ab),
    )
}

fn ringfire_blocks() -> Result<Blocks, BenchError> {
    use ringfire::{BlackboardConsumer, BlackboardProducer};
    let e = err("ringfire");
    let path = name("ringfire");
    let gone = Gone(path.clone());
    let mut producer =
        BlackboardProducer::<Value>::create(&path, KEYS as usize).map_err(|x| e(x.to_string()))?;
    let consumer = BlackboardConsumer::<Value>::attach(&path).map_err(|x| e(x.to_string()))?;
    Ok(Box::new(move |op, n| {
        let _keep = &gone;
        match op {
            Op::Write => timed(n, |i| {
                producer.write(7, &value(i)).expect("write");
            }),
            Op::Read => timed(n, |_| {
                black_box(consumer.read(black_box(7)).expect("read"));
            }),
            Op::SpreadWrite => timed(n, |i| {
                producer
                    .write((i % KEYS) as usize, &value(i))
                    .expect("write");
            }),
            Op::SpreadRead => timed(n, |i| {
                black_box(consumer.read((i % KEYS) as usize).expect("read"));
            }),
        }
    }))
}

/// ringfire's one-way visibility: a ping-pong through two one-key boards.
fn ringfire_visible(cpus: &[usize], trips: u64) -> Result<f64, BenchError> {
    use ringfire::{BlackboardConsumer, BlackboardProducer};
    let e = err("ringfire");
    let (ab, ba) = (name("ringfire-ab"), name("ringfire-ba"));
    let _g = (Gone(ab.clone()), Gone(ba.clone()));
    let mk = |p: &str| BlackboardProducer::<Value>::create(p, 1).map_err(|x| e(x.to_string()));
    let (mut p_ab, mut p_ba) = (mk(&ab)?, mk(&ba)?);
    let at = |p: &str| BlackboardConsumer::<Value>::attach(p).map_err(|x| e(x.to_string()));
    let (c_ab, c_ba) = (at(&ab)?, at(&ba)?);
    let wait = |c: &BlackboardConsumer<Value>, n: u64| {
        while !matches!(c.read(0), Ok(Some(v)) if v[0] == n) {
            std::hint::spin_loop();
        }
    };
    pingpong(
        cpus,
        trips,
        move |n, send| {
            if send {
                p_ab.write(0, &value(n)).expect("write");
            } else {
                wait(&c_ba, n);
            }
        },
        move |n, send| {
            if send {
                p_ba.write(0, &value(n)).expect("write");
            } else {
                wait(&c_ab, n);
            }
        },
    )
}

/// A private iceoryx2 domain (file prefix in /dev/shm, root directory):
/// nodes remove their own files, but a domain keeps a global management
/// segment and its directories, removed here when dropped (as the
/// pub-sub rows do, `mech/iceoryx2_pubsub.rs`).
struct Iox2Domain {
    prefix: String,
    root: String,
}

impl Drop for Iox2Domain {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
        if let Ok(dir) = std::fs::read_dir("/dev/shm") {
            for e in dir.flatten() {
                if e.file_name().to_string_lossy().starts_with(&self.prefix) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }
}

fn iceoryx2_blocks() -> Result<Blocks, BenchError> {
    use iceoryx2::prelude::{
        Config, FileName, NodeBuilder, Path, SemanticString, ServiceName, SignalHandlingMode, ipc,
    };
    let e = err("iceoryx2");
    let token = format!("shmbus-bench-bb-{}", std::process::id());
    // Declared first, so dropped last: after the node and its services.
    let domain = Iox2Domain {
        prefix: format!("{token}-iox2_"),
        root: format!("/tmp/{token}-iceoryx2"),
    };
    let mut config = Config::default();
    config.global.prefix =
        FileName::new(domain.prefix.as_bytes()).map_err(|x| e(format!("{x:?}")))?;
    config
        .global
        .set_root_path(&Path::new(domain.root.as_bytes()).map_err(|x| e(format!("{x:?}")))?);
    let node = NodeBuilder::new()
        .config(&config)
        .signal_handling_mode(SignalHandlingMode::Disabled)
        .create::<ipc::Service>()
        .map_err(|x| e(format!("{x:?}")))?;
    let service_name =
        ServiceName::new(&format!("{token}/blackboard")).map_err(|x| e(format!("{x:?}")))?;
    let mut creator = node
        .service_builder(&service_name)
        .blackboard_creator::<u64>();
    for k in 0..KEYS {
        creator = creator.add::<Value>(k, [0; 8]);
    }
    let service = creator.create().map_err(|x| e(format!("{x:?}")))?;
    let writer = service
        .writer_builder()
        .create()
        .map_err(|x| e(format!("{x:?}")))?;
    let reader = service
        .reader_builder()
        .create()
        .map_err(|x| e(format!("{x:?}")))?;
    let mut wh = Vec::new();
    let mut rh = Vec::new();
    for k in 0..KEYS {
        wh.push(writer.entry::<Value>(&k).map_err(|x| e(format!("{x:?}")))?);
        rh.push(reader.entry::<Value>(&k).map_err(|x| e(format!("{x:?}")))?);
    }
    // Everything the handles need lives as long as the closure, and is
    // dropped in this order (a tuple drops its fields first to last): the
    // handles, the ports, the service, the node, then the domain's files.
    let mut keep = (wh, rh, reader, writer, service, node, domain);
    Ok(Box::new(move |op, n| {
        // Through the whole tuple, so that the closure owns all of it (a
        // closure that named only `keep.0` and `keep.1` would own only
        // those, and the rest would be dropped when this function returns).
        let keep = &mut keep;
        let (wh, rh) = (&mut keep.0, &keep.1);
        match op {
            Op::Write => timed(n, |i| {
                wh[7].update_with_copy(value(i));
            }),
            Op::Read => timed(n, |_| {
                black_box(*rh[black_box(7)].get());
            }),
            Op::SpreadWrite => timed(n, |i| {
                wh[(i % KEYS) as usize].update_with_copy(value(i));
            }),
            Op::SpreadRead => timed(n, |i| {
                black_box(*rh[(i % KEYS) as usize].get());
            }),
        }
    }))
}

/// Every row (`quick`: fewer operations).
pub fn run(quick: bool, cpus: &[usize]) -> Result<Report, BenchError> {
    let ops = if quick { 100_000 } else { 2_000_000 };
    let trips = if quick { 20_000 } else { 200_000 };
    let pair: Vec<usize> = cpus.iter().copied().take(2).collect();
    let names = ["shmbus-entry", "shmbus", "ringfire", "iceoryx2"];
    let mut impls = [
        shmbus_blocks(true)?,
        shmbus_blocks(false)?,
        ringfire_blocks()?,
        iceoryx2_blocks()?,
    ];
    let mut op_rounds = Vec::new();
    for _ in 0..REPEATS {
        let round: Vec<[f64; 4]> = impls
            .iter_mut()
            .map(|blocks| OPS.map(|op| blocks(op, ops)))
            .collect();
        op_rounds.push(round);
    }
    drop(impls);
    let mut rows: Vec<Row> = names
        .iter()
        .enumerate()
        .map(|(k, &name)| {
            let column = |o: usize| median(op_rounds.iter().map(|r| r[k][o]).collect());
            Row {
                name,
                write_ns: column(0),
                read_ns: column(1),
                spread_write_ns: column(2),
                spread_read_ns: column(3),
                visible_ns: None,
            }
        })
        .collect();
    let mut visible_rounds = Vec::new();
    if pair.len() >= 2 {
        let per_round = (trips / VISIBLE_ROUNDS as u64).max(1);
        for _ in 0..VISIBLE_ROUNDS {
            visible_rounds.push([
                floor(&pair, per_round)?,
                shmbus_visible(&pair, per_round)?,
                ringfire_visible(&pair, per_round)?,
                shmbus_entry_visible(&pair, per_round)?,
            ]);
        }
        let column = |k: usize| median(visible_rounds.iter().map(|r| r[k]).collect());
        rows[0].visible_ns = Some(column(3));
        rows[1].visible_ns = Some(column(1));
        rows[2].visible_ns = Some(column(2));
    }
    let floor_ns =
        (!visible_rounds.is_empty()).then(|| median(visible_rounds.iter().map(|r| r[0]).collect()));
    // Back to every CPU: the ping-pong pinned this thread.
    let mut all = rustix::thread::CpuSet::new();
    for &c in cpus {
        all.set(c);
    }
    let _ = rustix::thread::sched_setaffinity(None, &all);
    Ok(Report {
        rows,
        floor_ns,
        ops,
        trips,
        cpus: pair,
        visible_rounds,
        op_rounds,
    })
}

/// The table on stdout.
pub fn print(r: &Report) {
    println!(
        "\nBlackboard ({KEYS} u64 keys, 64 B values; {} ops per block, median of {REPEATS} rounds)",
        r.ops
    );
    println!(
        "{:12} {:>10} {:>10} {:>12} {:>12} {:>12}",
        "", "write ns", "read ns", "write 1000", "read 1000", "visible ns"
    );
    for row in &r.rows {
        let vis = row
            .visible_ns
            .map_or("-".to_string(), |v| format!("{v:.1}"));
        println!(
            "{:12} {:>10.2} {:>10.2} {:>12.2} {:>12.2} {:>12}",
            row.name, row.write_ns, row.read_ns, row.spread_write_ns, row.spread_read_ns, vis
        );
    }
    if let Some(f) = r.floor_ns {
        println!(
            "{:12} {:>10} {:>10} {:>12} {:>12} {:>12.1}",
            "floor", "-", "-", "-", "-", f
        );
    }
}

/// The median over the op rounds of `f(round)`, a ratio within a round.
fn round_ratio(r: &Report, f: impl Fn(&[[f64; 4]]) -> f64) -> f64 {
    median(r.op_rounds.iter().map(|round| f(round)).collect())
}

/// The blackboard's targets as met or missed, each the median of ratios
/// taken within one round.
pub fn targets(r: &Report) -> Vec<Json> {
    const W: usize = 0;
    const R: usize = 1;
    let at = |n: &str| r.rows.iter().position(|row| row.name == n);
    let mut out = Vec::new();
    // `value` and `bound` for the blackboard page; `wanted` and `found`
    // for the run's list of every target, where these are listed too.
    let mut push = |target: &str, value: f64, bound: f64| {
        out.push(json!({
            "target": format!("blackboard {target}"), "value": value, "bound": bound,
            "wanted": format!("<= {bound}"), "found": (value * 1000.0).round() / 1000.0,
            "met": value <= bound,
        }));
    };
    if let (Some(h), Some(k), Some(f), Some(i)) = (
        at("shmbus-entry"),
        at("shmbus"),
        at("ringfire"),
        at("iceoryx2"),
    ) {
        push(
            "read through a handle / the faster of ringfire's and iceoryx2's",
            round_ratio(r, |x| x[h][R] / x[f][R].min(x[i][R])),
            1.0,
        );
        push(
            "write through a handle / iceoryx2's",
            round_ratio(r, |x| x[h][W] / x[i][W]),
            1.0,
        );
        push(
            "write through a handle / ringfire's",
            round_ratio(r, |x| x[h][W] / x[f][W]),
            1.5,
        );
        push(
            "read by key / through a handle",
            round_ratio(r, |x| x[k][R] / x[h][R]),
            2.0,
        );
        push(
            "write by key / through a handle",
            round_ratio(r, |x| x[k][W] / x[h][W]),
            2.0,
        );
    }
    if !r.visible_rounds.is_empty() {
        push(
            "update through handles visible on the other core / the cache-line floor",
            median(r.visible_rounds.iter().map(|v| v[3] / v[0]).collect()),
            1.25,
        );
        push(
            "update through handles visible on the other core / ringfire's",
            median(r.visible_rounds.iter().map(|v| v[3] / v[2]).collect()),
            1.0,
        );
    }
    out
}

/// The rows as JSON.
pub fn json(r: &Report, quick: bool) -> Json {
    json!({
        "keys": KEYS,
        "value_bytes": 64,
        "ops_per_block": r.ops,
        "repeats": REPEATS,
        "trips": r.trips,
        "cpus": r.cpus,
        "quick": quick,
        "floor_ns": r.floor_ns,
        "visible_rounds": r.visible_rounds.iter().map(|v| json!({
            "floor_ns": v[0], "shmbus_ns": v[1], "ringfire_ns": v[2], "shmbus_entry_ns": v[3],
        })).collect::<Vec<_>>(),
        "op_rounds": r.op_rounds.iter().map(|round| {
            r.rows.iter().zip(round).map(|(row, x)| json!({
                "name": row.name,
                "write_ns": x[0],
                "read_ns": x[1],
                "write_1000_keys_ns": x[2],
                "read_1000_keys_ns": x[3],
            })).collect::<Vec<_>>()
        }).collect::<Vec<_>>(),

        "rows": r.rows.iter().map(|row| json!({
            "name": row.name,
            "write_ns": row.write_ns,
            "read_ns": row.read_ns,
            "write_1000_keys_ns": row.spread_write_ns,
            "read_1000_keys_ns": row.spread_read_ns,
            "visible_ns": row.visible_ns,
        })).collect::<Vec<_>>(),
        "targets": targets(r),
    })
}
