//! The bus between real processes: torn reads, lag accounting, the shared
//! futex, one publisher per bus, publisher death and restart, `stat::list`
//! and `stat::clean`.
//!
//! Each child is this test binary run again (see `common`); its entry is an
//! `as_child_*` test that does nothing unless `SHMBUS_CHILD_ROLE` names it.

mod common;

use std::time::Duration;

use bytemuck::{Pod, Zeroable};
use common::{
    BusName, FileWord32, ShmDir, Watched, param, print_result, role, spawn_child, wait_for,
};
use shmbus::error::Role;
use shmbus::stat::{self, BusStat};
use shmbus::wire::control;
use shmbus::{
    AttachError, BusOptions, OpenOptions, Publisher, Received, Start, Subscriber, WaitStrategy,
};

// ---------------------------------------------------------------------------
// Message types whose every torn mix of two messages fails a check.

/// What a subscriber concluded about one delivered message.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// Consistent, and the sequence the subscriber expected.
    Good,
    /// Words from two different messages.
    Torn,
    /// Consistent, but not the sequence the subscriber's position said.
    WrongSeq,
}

trait Stamped: shmbus::Message {
    fn make(seq: u64) -> Self;
    fn verify(&self, expected: u64) -> Verdict;
}

/// 8 bytes: the low 32 bits of the sequence and a hash of them.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Msg8 {
    seq: u32,
    hash: u32,
}

impl shmbus::Message for Msg8 {
    const NAME: &'static str = "test.Msg8";
}

fn hash32(seq: u32) -> u32 {
    (common::splitmix(u64::from(seq)) >> 32) as u32
}

impl Stamped for Msg8 {
    fn make(seq: u64) -> Self {
        let seq = seq as u32;
        Msg8 {
            seq,
            hash: hash32(seq),
        }
    }
    fn verify(&self, expected: u64) -> Verdict {
        if self.hash != hash32(self.seq) {
            Verdict::Torn
        } else if self.seq != expected as u32 {
            Verdict::WrongSeq
        } else {
            Verdict::Good
        }
    }
}

/// Word `i` of message `seq` (word 0 is the sequence itself).
fn mix(seq: u64, i: usize) -> u64 {
    common::splitmix(seq ^ (i as u64).wrapping_mul(0xD6E8_FEB8_6659_FD93))
}

macro_rules! words_message {
    ($name:ident, $words:expr) => {
        #[repr(C)]
        #[derive(Clone, Copy, Pod, Zeroable)]
        struct $name {
            words: [u64; $words],
        }

        impl shmbus::Message for $name {
            const NAME: &'static str = concat!("test.", stringify!($name));
        }

        impl Stamped for $name {
            fn make(seq: u64) -> Self {
                let mut words = [0u64; $words];
                words[0] = seq;
                for (i, w) in words.iter_mut().enumerate().skip(1) {
                    *w = mix(seq, i);
                }
                $name { words }
            }
            fn verify(&self, expected: u64) -> Verdict {
                let seq = self.words[0];
                if self
                    .words
                    .iter()
                    .enumerate()
                    .skip(1)
                    .any(|(i, &w)| w != mix(seq, i))
                {
                    Verdict::Torn
                } else if seq != expected {
                    Verdict::WrongSeq
                } else {
                    Verdict::Good
                }
            }
        }
    };
}

words_message!(Msg64, 8);
words_message!(Msg1024, 128);

const _: () = assert!(size_of::<Msg8>() == 8);
const _: () = assert!(size_of::<Msg64>() == 64);
const _: () = assert!(size_of::<Msg1024>() == 1024);

/// The check the stress relies on: any mix of words from two messages, and
/// any message delivered at the wrong position, is caught.
#[test]
fn the_payload_check_catches_any_mix_of_two_messages() {
    fn mixes<M: Stamped>(a: u64, b: u64) {
        let (ma, mb) = (M::make(a), M::make(b));
        assert_eq!(ma.verify(a), Verdict::Good);
        assert_eq!(ma.verify(b), Verdict::WrongSeq);
        let (wa, wb) = (bytemuck::bytes_of(&ma), bytemuck::bytes_of(&mb));
        let words = wa.len() / 8;
        // Every choice of a first or last run of words from the other one.
        for cut in 1..words {
            for (x, y) in [(wa, wb), (wb, wa)] {
                let mut torn = x.to_vec();
                torn[8 * cut..].copy_from_slice(&y[8 * cut..]);
                let m = bytemuck::pod_read_unaligned::<M>(&torn);
                assert_eq!(m.verify(a), Verdict::Torn, "cut at word {cut}");
            }
        }
        // Any single 4-byte half from the other message.
        for half in 0..2 * words {
            let mut torn = wa.to_vec();
            torn[4 * half..4 * half + 4].copy_from_slice(&wb[4 * half..4 * half + 4]);
            let m = bytemuck::pod_read_unaligned::<M>(&torn);
            if torn != wa && torn != wb {
                assert_ne!(m.verify(a), Verdict::Good, "half {half}");
            }
        }
    }
    for (a, b) in [(0, 1), (5, 5 + 16), (u64::MAX, 0), (1 << 40, (1 << 40) + 8)] {
        mixes::<Msg8>(a, b);
        mixes::<Msg64>(a, b);
        if !cfg!(miri) {
            mixes::<Msg1024>(a, b);
        }
    }
}

fn wait_strategy(name: &str) -> WaitStrategy {
    match name {
        "busy" => WaitStrategy::BusySpin,
        "yield" => WaitStrategy::SpinYield {
            spin: Duration::from_micros(20),
        },
        // A tiny spin, so the subscriber goes to sleep on the shared futex
        // whenever the publisher pauses.
        "futex" => WaitStrategy::SpinFutex {
            spin: Duration::from_micros(1),
        },
        other => panic!("unknown wait strategy {other}"),
    }
}

fn stat_of(name: &str) -> BusStat {
    stat::stat(name).unwrap_or_else(|e| panic!("stat {name}: {e}"))
}

// ---------------------------------------------------------------------------
// 1. Torn reads across processes.

/// What a subscriber child counts.
#[derive(Default)]
struct Tally {
    delivered: u64,
    skipped: u64,
    lags: u64,
    torn: u64,
    wrong_seq: u64,
}

impl Tally {
    fn message<M: Stamped>(&mut self, expected: u64, msg: &M) {
        self.delivered += 1;
        match msg.verify(expected) {
            Verdict::Good => {}
            Verdict::Torn => self.torn += 1,
            Verdict::WrongSeq => self.wrong_seq += 1,
        }
    }
    fn lag(&mut self, skipped: u64) {
        self.lags += 1;
        self.skipped += skipped;
    }
}

fn subscribe_and_check<M: Stamped>() {
    let name: String = param("SHMBUS_BUS");
    let first: u64 = param("SHMBUS_FIRST");
    let count: u64 = param("SHMBUS_COUNT");
    let wait = wait_strategy(&param::<String>("SHMBUS_WAIT"));
    let raw = param::<u8>("SHMBUS_RAW") == 1;
    let end = first.wrapping_add(count);
    let opts = OpenOptions::default()
        .start(Start::Oldest)
        .wait_strategy(wait);
    let mut t = Tally::default();
    let mut overshoot = 0;
    let start;
    let finish;
    // Stops at the end, or if the position ever runs past it (which would
    // otherwise loop forever and only trip the watchdog).
    let past_end = |pos: u64| pos.wrapping_sub(first) > count;
    if raw {
        let mut sub = Subscriber::<[u8]>::open(&name, &opts).expect("open raw subscriber");
        common::print_ready();
        assert_eq!(sub.msg_size(), size_of::<M>());
        start = sub.position();
        while sub.position() != end {
            let pos = sub.position();
            if past_end(pos) {
                overshoot = 1;
                break;
            }
            match sub.recv(shmbus::Wait::Forever).expect("no deadline") {
                Received::Message(bytes) => {
                    t.message(pos, &bytemuck::pod_read_unaligned::<M>(bytes))
                }
                Received::Lagged { skipped } => t.lag(skipped),
            }
        }
        finish = sub.position();
    } else {
        let mut sub = Subscriber::<M>::open(&name, &opts).expect("open subscriber");
        common::print_ready();
        start = sub.position();
        while sub.position() != end {
            let pos = sub.position();
            if past_end(pos) {
                overshoot = 1;
                break;
            }
            match sub.recv(shmbus::Wait::Forever).expect("waits forever") {
                Received::Message(msg) => t.message(pos, &msg),
                Received::Lagged { skipped } => t.lag(skipped),
            }
        }
        finish = sub.position();
    }
    print_result(&[
        ("start", start.to_string()),
        ("end", finish.to_string()),
        ("delivered", t.delivered.to_string()),
        ("skipped", t.skipped.to_string()),
        ("lags", t.lags.to_string()),
        ("torn", t.torn.to_string()),
        ("wrong_seq", t.wrong_seq.to_string()),
        ("overshoot", overshoot.to_string()),
    ]);
}

#[test]
fn as_child_subscribe_and_check_every_payload() {
    role("torn_sub", || match param::<usize>("SHMBUS_SIZE") {
        8 => subscribe_and_check::<Msg8>(),
        64 => subscribe_and_check::<Msg64>(),
        1024 => subscribe_and_check::<Msg1024>(),
        n => panic!("no message type of {n} bytes"),
    });
}

/// Messages per payload size: enough for many laps of a small ring, small
/// enough for a debug build on two cores: 200 000 times SHMBUS_TEST_SCALE,
/// at least 10 000 (hundreds of laps; Miri: 100, at least 20);
/// `SHMBUS_STRESS_COUNT` sets it exactly.
fn stress_count() -> u64 {
    if cfg!(miri) {
        return common::scale_min(100, 20);
    }
    std::env::var("SHMBUS_STRESS_COUNT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| common::scale_min(200_000, 10_000))
}

/// Spin-loop iterations after each publish, per block of 1024 messages.
const PACE: [u32; 6] = [0, 30, 0, 300, 0, 1000];

fn torn_read_stress<M: Stamped>(label: &str, capacity: u64, first: u64) {
    let count = stress_count();
    let size = size_of::<M>();
    let bus = BusName::new(label);
    let mut publisher =
        Publisher::<M>::create(bus.name(), &BusOptions::new(capacity).first_sequence(first))
            .expect("create bus");
    // One subscriber per wait strategy; the third reads raw bytes.
    let roles = [("busy", 0u8), ("futex", 0), ("yield", 1)];
    let mut children: Vec<Watched> = roles
        .iter()
        .map(|(wait, raw)| {
            spawn_child(
                "as_child_subscribe_and_check_every_payload",
                "torn_sub",
                &[
                    ("SHMBUS_BUS", bus.name().to_owned()),
                    ("SHMBUS_SIZE", size.to_string()),
                    ("SHMBUS_FIRST", first.to_string()),
                    ("SHMBUS_COUNT", count.to_string()),
                    ("SHMBUS_WAIT", (*wait).to_owned()),
                    ("SHMBUS_RAW", raw.to_string()),
                ],
            )
        })
        .collect();
    // Every subscriber is open, at the first sequence, before the first
    // publish.
    for child in &mut children {
        child.wait_ready();
    }

    for i in 0..count {
        publisher.publish(&M::make(first.wrapping_add(i)));
        // The publisher's pace changes every 1024 messages, so subscribers
        // keep crossing from keeping up to being lapped: a read that starts
        // a lap behind races the write of the same slot.
        for _ in 0..PACE[(i / 1024) as usize % PACE.len()] {
            std::hint::spin_loop();
        }
        // Pause now and then, so the futex subscriber catches up and sleeps
        // (a lost wake-up would then hang it until the watchdog fires).
        if i % 16384 == 16383 {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
    let end = first.wrapping_add(count);
    assert_eq!(publisher.next_sequence(), end);
    let st = stat_of(bus.name());
    assert_eq!(st.published, count);
    assert_eq!(st.head, end);

    for (child, (wait, raw)) in children.into_iter().zip(roles) {
        let f = child.wait_success();
        let r = f.result();
        let who = format!("{size}-byte subscriber pid {} ({wait}, raw={raw})", f.pid);
        let delivered: u64 = r.get("delivered");
        let skipped: u64 = r.get("skipped");
        assert_eq!(r.get::<u64>("torn"), 0, "{who}: torn messages delivered");
        assert_eq!(
            r.get::<u64>("wrong_seq"),
            0,
            "{who}: wrong sequence delivered"
        );
        assert_eq!(
            r.get::<u64>("overshoot"),
            0,
            "{who}: position ran past the end"
        );
        assert_eq!(
            r.get::<u64>("start"),
            first,
            "{who}: Start::Oldest before publishing"
        );
        assert_eq!(
            r.get::<u64>("end"),
            end,
            "{who}: ended at the last sequence + 1"
        );
        assert_eq!(
            delivered + skipped,
            count,
            "{who}: delivered {delivered} + skipped {skipped} != published {count} (lags: {})",
            r.get::<u64>("lags")
        );
        println!(
            "{who}: delivered {delivered}, skipped {skipped} in {} lags",
            r.get::<u64>("lags")
        );
    }
    drop(publisher);
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn subscribers_in_other_processes_never_see_a_torn_8_byte_message() {
    torn_read_stress::<Msg8>("torn8", 16, 0);
}

#[test]
#[cfg_attr(miri, ignore)]
fn subscribers_in_other_processes_never_see_a_torn_64_byte_message() {
    // Starts near the top of the sequence space, so the stress crosses the
    // 64-bit wrap too.
    torn_read_stress::<Msg64>("torn64", 32, u64::MAX - 50_000);
}

#[test]
#[cfg_attr(miri, ignore)]
fn subscribers_in_other_processes_never_see_a_torn_1024_byte_message() {
    torn_read_stress::<Msg1024>("torn1024", 8, 1 << 40);
}

// ---------------------------------------------------------------------------
// Children for the publisher tests. Messages are u64s carrying their own
// sequence number.

/// Creates the bus, publishes SHMBUS_COUNT messages, then stays alive until
/// killed.
#[test]
fn as_child_create_publish_and_idle() {
    role("create_publish_idle", || {
        let name: String = param("SHMBUS_BUS");
        let count: u64 = param("SHMBUS_COUNT");
        let mut p = Publisher::<u64>::create(&name, &BusOptions::new(64)).expect("create bus");
        for _ in 0..count {
            let s = p.next_sequence();
            p.publish(&s);
        }
        common::idle_until_killed();
    });
}

/// Tries once to attach as publisher; if it can, publishes SHMBUS_PUBLISH
/// messages and exits.
#[test]
fn as_child_try_to_attach_as_publisher() {
    role("attach_once", || {
        let name: String = param("SHMBUS_BUS");
        let n: u64 = param("SHMBUS_PUBLISH");
        match Publisher::<u64>::attach(&name, &OpenOptions::default()) {
            Ok(mut p) => {
                let epoch = p.epoch();
                let next = p.next_sequence();
                for _ in 0..n {
                    let s = p.next_sequence();
                    p.publish(&s);
                }
                print_result(&[
                    ("outcome", "attached".into()),
                    ("epoch", epoch.to_string()),
                    ("next", next.to_string()),
                    ("end", p.next_sequence().to_string()),
                ]);
            }
            Err(AttachError::RoleTaken {
                role: Role::Publisher,
                pid,
            }) => {
                print_result(&[("outcome", "active".into()), ("pid", pid.to_string())]);
            }
            Err(e) => {
                print_result(&[("outcome", "error".into())]);
                panic!("attach failed: {e}");
            }
        }
    });
}

/// Creates the bus and publishes as fast as it can until killed.
#[test]
fn as_child_publish_until_killed() {
    role("publish_forever", || {
        let name: String = param("SHMBUS_BUS");
        let mut p = Publisher::<u64>::create(&name, &BusOptions::new(64)).expect("create bus");
        let parent = std::os::unix::process::parent_id();
        loop {
            for _ in 0..256 {
                let s = p.next_sequence();
                p.publish(&s);
            }
            std::thread::sleep(Duration::from_micros(50));
            if std::os::unix::process::parent_id() != parent {
                std::process::exit(3);
            }
        }
    });
}

/// Opens a subscriber and stays alive until killed.
#[test]
fn as_child_subscribe_and_idle() {
    role("sub_idle", || {
        let name: String = param("SHMBUS_BUS");
        let opts = OpenOptions::default();
        if param::<u8>("SHMBUS_RAW") == 1 {
            let _sub = Subscriber::<[u8]>::open(&name, &opts).expect("open");
            common::print_ready();
            common::idle_until_killed();
        } else {
            let _sub = Subscriber::<u64>::open(&name, &opts).expect("open");
            common::print_ready();
            common::idle_until_killed();
        }
    });
}

// ---------------------------------------------------------------------------
// The subscriber registry `stat` reads.

fn registered(name: &str) -> Vec<u32> {
    let mut pids: Vec<u32> = stat_of(name).subscribers.iter().map(|l| l.pid).collect();
    pids.sort_unstable();
    pids
}

#[test]
#[cfg_attr(miri, ignore)]
fn stat_names_each_live_subscriber_process_and_forgets_a_dead_one() {
    let bus = BusName::new("registry");
    let publisher = Publisher::<u64>::create(bus.name(), &BusOptions::new(16)).expect("create");
    let spawn = |raw: &str| {
        let mut c = spawn_child(
            "as_child_subscribe_and_idle",
            "sub_idle",
            &[
                ("SHMBUS_BUS", bus.name().to_owned()),
                ("SHMBUS_RAW", raw.to_owned()),
            ],
        );
        c.wait_ready();
        c
    };
    let typed = spawn("0");
    let raw = spawn("1");
    let mut both = vec![typed.pid(), raw.pid()];
    both.sort_unstable();
    assert_eq!(registered(bus.name()), both, "a typed and a raw subscriber");
    // One in this process too.
    let here = Subscriber::<u64>::open(bus.name(), &OpenOptions::default()).expect("open");
    let mut three = [both.clone(), vec![std::process::id()]].concat();
    three.sort_unstable();
    assert_eq!(registered(bus.name()), three);
    // No half-spawned child may hold a copy of its registry lock.
    let no_fork = common::no_spawn_in_flight();
    drop(here);
    assert_eq!(
        registered(bus.name()),
        both,
        "a dropped subscriber is forgotten"
    );
    drop(no_fork);
    let raw_pid = raw.pid();
    typed.kill();
    assert_eq!(
        registered(bus.name()),
        vec![raw_pid],
        "a killed subscriber is forgotten"
    );
    raw.kill();
    assert!(registered(bus.name()).is_empty());
    drop(publisher);
    bus.finish();
}

// ---------------------------------------------------------------------------
// 6. Exactly one publisher.

fn attach_in_child(bus: &BusName, publish: u64) -> common::Report {
    spawn_child(
        "as_child_try_to_attach_as_publisher",
        "attach_once",
        &[
            ("SHMBUS_BUS", bus.name().to_owned()),
            ("SHMBUS_PUBLISH", publish.to_string()),
        ],
    )
    .wait_success()
    .result()
}

fn expect_publisher_active(name: &str, pid: u32) {
    let e = match Publisher::<u64>::attach(name, &OpenOptions::default()) {
        Ok(_) => panic!("a second publisher attached while pid {pid} publishes"),
        Err(e) => e,
    };
    match &e {
        AttachError::RoleTaken {
            role: Role::Publisher,
            pid: found,
        } => {
            assert_eq!(*found, pid, "the error names the live publisher")
        }
        other => panic!("expected RoleTaken Publisher {{ pid: {pid} }}, got {other}"),
    }
    let text = e.to_string();
    assert!(text.contains(&format!("pid {pid}")), "{text}");
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_second_publisher_is_refused_with_the_pid_of_the_live_one() {
    let bus = BusName::new("one-publisher");
    let mut first = spawn_child(
        "as_child_create_publish_and_idle",
        "create_publish_idle",
        &[
            ("SHMBUS_BUS", bus.name().to_owned()),
            ("SHMBUS_COUNT", "5".into()),
        ],
    );
    let first_pid = first.pid();
    wait_for(
        "the first publisher to publish 5",
        &mut [&mut first],
        || stat::stat(bus.name()).is_ok_and(|s| s.published == 5),
    );
    let st = stat_of(bus.name());
    assert!(st.publisher_alive);
    assert_eq!(st.publisher_pid, first_pid);

    // Refused in this process and in another one, naming the child.
    expect_publisher_active(bus.name(), first_pid);
    let r = attach_in_child(&bus, 0);
    assert_eq!(r.raw("outcome"), Some("active"));
    assert_eq!(r.get::<u32>("pid"), first_pid);

    // Once it is dead, this process may publish; now this process is the
    // one a second publisher, here or elsewhere, is told about.
    let killed = first.kill();
    assert_eq!(killed.signal(), Some(libc::SIGKILL));
    let me = std::process::id();
    let publisher = Publisher::<u64>::attach(bus.name(), &OpenOptions::default())
        .expect("attach after the first publisher died");
    assert_eq!(publisher.epoch(), 2);
    assert_eq!(stat_of(bus.name()).publisher_pid, me);
    expect_publisher_active(bus.name(), me);
    let r = attach_in_child(&bus, 0);
    assert_eq!(r.raw("outcome"), Some("active"));
    assert_eq!(r.get::<u32>("pid"), me);

    // Dropping the publisher releases the bus.
    let no_fork = common::no_spawn_in_flight();
    drop(publisher);
    assert!(!stat_of(bus.name()).publisher_alive);
    let again =
        Publisher::<u64>::attach(bus.name(), &OpenOptions::default()).expect("attach after drop");
    assert_eq!(again.epoch(), 3);
    assert_eq!(again.next_sequence(), 5);
    drop((again, no_fork));
    bus.finish();
}

fn expect_messages(sub: &mut Subscriber<u64>, seqs: std::ops::Range<u64>) {
    for s in seqs {
        assert_eq!(sub.position(), s);
        match sub.recv(shmbus::Wait::For(Duration::from_secs(10))) {
            Some(Received::Message(v)) => assert_eq!(v, s, "message {s} carries {v}"),
            other => panic!("expected message {s}, got {other:?}"),
        }
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_publisher_restarted_after_sigkill_resumes_the_sequence_under_a_new_epoch() {
    let bus = BusName::new("restart");
    let mut first = spawn_child(
        "as_child_create_publish_and_idle",
        "create_publish_idle",
        &[
            ("SHMBUS_BUS", bus.name().to_owned()),
            ("SHMBUS_COUNT", "5".into()),
        ],
    );
    wait_for(
        "the first publisher to publish 5",
        &mut [&mut first],
        || stat::stat(bus.name()).is_ok_and(|s| s.published == 5),
    );
    let mut sub = Subscriber::<u64>::open(bus.name(), &OpenOptions::default().start(Start::Oldest))
        .expect("open");
    expect_messages(&mut sub, 0..5);
    assert_eq!(sub.try_recv(), None);
    assert_eq!(sub.epoch(), 1);

    first.kill();
    let st = stat_of(bus.name());
    assert!(
        !st.publisher_alive,
        "the kernel dropped the dead publisher's lock"
    );
    assert_eq!(st.epoch, Some(1));

    // A new publisher process attaches, continues at 5 and publishes 5..10.
    let r = attach_in_child(&bus, 5);
    assert_eq!(r.raw("outcome"), Some("attached"));
    assert_eq!(r.get::<u64>("epoch"), 2, "the epoch went up by one");
    assert_eq!(r.get::<u64>("next"), 5, "the sequence continues");
    assert_eq!(r.get::<u64>("end"), 10);
    assert_eq!(sub.epoch(), 2);
    expect_messages(&mut sub, 5..10);
    assert_eq!(sub.try_recv(), None, "no sequence was reused");

    // And once more, in this process.
    let mut p = Publisher::<u64>::attach(bus.name(), &OpenOptions::default()).expect("attach");
    assert_eq!(p.epoch(), 3);
    assert_eq!(p.next_sequence(), 10);
    p.publish(&10);
    expect_messages(&mut sub, 10..11);
    assert_eq!(sub.try_recv(), None);
    drop((p, sub));
    bus.finish();
}

/// Where sequence `seq`'s stamp is in the file.
fn stamp_offset(st: &BusStat, seq: u64) -> u64 {
    st.raw_header().data_offset
        + (seq & (st.raw_header().capacity - 1)) * u64::from(st.raw_header().slot_size)
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_publisher_attaching_after_one_that_died_between_stamp_and_cursor_skips_that_sequence() {
    let bus = BusName::new("died-before-cursor");
    let mut p = Publisher::<u64>::create(bus.name(), &BusOptions::new(16)).expect("create");
    let mut sub = Subscriber::<u64>::open(bus.name(), &OpenOptions::default().start(Start::Oldest))
        .expect("open");
    for s in 0..5u64 {
        p.publish(&s);
    }
    expect_messages(&mut sub, 0..5);
    // See `no_spawn_in_flight`: no forked child may share the lock.
    let no_fork = common::no_spawn_in_flight();
    drop(p);
    // Rewind the cursor over the completed message 4, as if the publisher
    // died after the stamp store and before the cursor store: a reader may
    // already have message 4 (this one has), so 4 must not be reused.
    let st = stat_of(bus.name());
    let cursor = st.raw_header().control_offset + control::CURSOR as u64;
    common::patch_u64(bus.path(), cursor, 4);
    assert_eq!(
        common::read_u64_at(bus.path(), stamp_offset(&st, 4)),
        2 * 4 + 2
    );

    let mut p = Publisher::<u64>::attach(bus.name(), &OpenOptions::default()).expect("attach");
    drop(no_fork);
    assert_eq!(p.next_sequence(), 5, "sequence 4 is not written twice");
    assert_eq!(stat_of(bus.name()).head, 5);
    p.publish(&5);
    expect_messages(&mut sub, 5..6);
    assert_eq!(sub.try_recv(), None);
    drop((p, sub));
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_publisher_attaching_after_one_that_died_mid_write_rewrites_that_sequence() {
    let bus = BusName::new("died-mid-write");
    let mut p = Publisher::<u64>::create(bus.name(), &BusOptions::new(16)).expect("create");
    let mut sub = Subscriber::<u64>::open(bus.name(), &OpenOptions::default().start(Start::Oldest))
        .expect("open");
    for s in 0..5u64 {
        p.publish(&s);
    }
    expect_messages(&mut sub, 0..5);
    // See `no_spawn_in_flight`: no forked child may share the lock.
    let no_fork = common::no_spawn_in_flight();
    drop(p);
    // Slot 5 says "being written" (odd stamp) and the cursor is still 5: the
    // publisher died inside the write. No reader can have message 5.
    let st = stat_of(bus.name());
    common::patch_u64(bus.path(), stamp_offset(&st, 5), 2 * 5 + 1);
    common::patch_u64(bus.path(), stamp_offset(&st, 5) + 8, 0xdead_beef);
    assert_eq!(
        sub.try_recv(),
        None,
        "a half-written message is not delivered"
    );

    let mut p = Publisher::<u64>::attach(bus.name(), &OpenOptions::default()).expect("attach");
    drop(no_fork);
    assert_eq!(
        p.next_sequence(),
        5,
        "the unfinished sequence is written again"
    );
    p.publish(&5);
    p.publish(&6);
    expect_messages(&mut sub, 5..7);
    assert_eq!(sub.try_recv(), None);
    drop((p, sub));
    bus.finish();
}

// ---------------------------------------------------------------------------
// 7. A publisher killed mid-stream.

/// In a child: opens a subscriber of `name` that waits with SpinFutex
/// after `spin`, and says it is ready.
fn ready_futex_subscriber(name: &str, spin: Duration) -> Subscriber<u64> {
    let opts = OpenOptions::default().wait_strategy(WaitStrategy::SpinFutex { spin });
    let sub = Subscriber::<u64>::open(name, &opts).expect("open");
    common::print_ready();
    sub
}

/// Receives until a receive times out while the publisher is dead, checking
/// every message carries the sequence the position says.
#[test]
fn as_child_receive_until_the_publisher_is_gone() {
    role("sub_until_silent", || {
        let name: String = param("SHMBUS_BUS");
        let mut sub = ready_futex_subscriber(&name, Duration::from_micros(10));
        let start = sub.position();
        let (mut delivered, mut skipped, mut wrong, mut timeouts) = (0u64, 0u64, 0u64, 0u64);
        loop {
            let pos = sub.position();
            match sub.recv(shmbus::Wait::For(Duration::from_millis(300))) {
                Some(Received::Message(v)) => {
                    delivered += 1;
                    wrong += u64::from(v != pos);
                }
                Some(Received::Lagged { skipped: n }) => skipped += n,
                None => {
                    timeouts += 1;
                    if !stat::stat(&name).expect("stat").publisher_alive {
                        break;
                    }
                }
            }
        }
        // Silent from now on.
        let after = sub.recv(shmbus::Wait::For(Duration::from_millis(50)));
        print_result(&[
            ("start", start.to_string()),
            ("end", sub.position().to_string()),
            ("delivered", delivered.to_string()),
            ("skipped", skipped.to_string()),
            ("wrong", wrong.to_string()),
            ("timeouts", timeouts.to_string()),
            ("after", after.is_none().to_string()),
        ]);
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn subscribers_of_a_killed_publisher_time_out_instead_of_hanging() {
    let bus = BusName::new("killed-publisher");
    let mut publisher = spawn_child(
        "as_child_publish_until_killed",
        "publish_forever",
        &[("SHMBUS_BUS", bus.name().to_owned())],
    );
    let publisher_pid = publisher.pid();
    wait_for("the publisher to get going", &mut [&mut publisher], || {
        stat::stat(bus.name()).is_ok_and(|s| s.published >= 1000)
    });
    let mut sub = Subscriber::<u64>::open(
        bus.name(),
        &OpenOptions::default().wait_strategy(WaitStrategy::SpinFutex {
            spin: Duration::from_micros(10),
        }),
    )
    .expect("open");
    let start = sub.position();
    let mut subscriber = spawn_child(
        "as_child_receive_until_the_publisher_is_gone",
        "sub_until_silent",
        &[("SHMBUS_BUS", bus.name().to_owned())],
    );
    subscriber.wait_ready();
    // Live: this subscriber gets messages from the running publisher.
    let (mut delivered, mut skipped) = (0u64, 0u64);
    while delivered < 100 {
        let pos = sub.position();
        match sub.recv(shmbus::Wait::For(Duration::from_secs(10))) {
            Some(Received::Message(v)) => {
                assert_eq!(v, pos);
                delivered += 1;
            }
            Some(Received::Lagged { skipped: n }) => skipped += n,
            None => panic!("no message from a live publisher in 10 s"),
        }
    }

    let killed = publisher.kill();
    assert_eq!(killed.signal(), Some(libc::SIGKILL));
    let st = stat_of(bus.name());
    assert!(!st.publisher_alive, "stat sees the publisher is dead");
    assert_eq!(st.publisher_pid, publisher_pid);
    assert_eq!(st.epoch, Some(1));
    let head = st.head;
    // If the publisher died between a stamp and the cursor, message `head`
    // is complete and a reader may have taken it.
    let stamp = common::read_u64_at(bus.path(), stamp_offset(&st, head));
    let ends = if stamp == 2 * head + 2 {
        head..=head + 1
    } else {
        head..=head
    };

    // Drain what is left, then time out: no hang.
    loop {
        let pos = sub.position();
        match sub.recv(shmbus::Wait::For(Duration::from_millis(300))) {
            Some(Received::Message(v)) => {
                assert_eq!(v, pos);
                delivered += 1;
            }
            Some(Received::Lagged { skipped: n }) => skipped += n,
            None => break,
        }
    }
    assert!(
        ends.contains(&sub.position()),
        "ended at {} not in {ends:?}",
        sub.position()
    );
    assert_eq!(delivered + skipped, sub.position() - start);
    assert_eq!(sub.recv(shmbus::Wait::For(Duration::from_millis(50))), None);

    let f = subscriber.wait_success();
    let r = f.result();
    let end: u64 = r.get("end");
    assert!(ends.contains(&end), "child ended at {end}, not in {ends:?}");
    assert_eq!(r.get::<u64>("wrong"), 0);
    assert!(r.get::<u64>("timeouts") >= 1);
    assert_eq!(r.raw("after"), Some("true"));
    assert_eq!(
        r.get::<u64>("delivered") + r.get::<u64>("skipped"),
        end - r.get::<u64>("start")
    );
    drop(sub);
    bus.finish();
}

// ---------------------------------------------------------------------------
// 8. The shared futex: sleepers woken from another process.

const PING_ROUNDS: u64 = if cfg!(miri) { 5 } else { 200 };

fn tiny_futex_spin() -> OpenOptions {
    OpenOptions::default()
        .start(Start::Oldest)
        .wait_strategy(WaitStrategy::SpinFutex {
            spin: Duration::from_micros(1),
        })
}

/// Whether a subscriber of a bus may be asleep in the futex: bit 0 of the
/// futex word on the control page (see `wire::control::FUTEX`), which a
/// sleeper sets before it sleeps and the publisher clears when it wakes it.
/// Read through the file, not a mapping.
struct SleeperFlag(FileWord32);

impl SleeperFlag {
    fn of(name: &str, path: &std::path::Path) -> SleeperFlag {
        let st = stat_of(name);
        SleeperFlag(FileWord32::new(
            path,
            st.raw_header().control_offset + control::FUTEX as u64,
        ))
    }
    fn raised(&self) -> bool {
        self.0.get() & 1 != 0
    }
}

/// Whether a thread of `pid` sleeps in a futex wait on its mapping of
/// `path` (see `common::asleep_on_futex_in`).
fn asleep_in(pid: u32, path: &std::path::Path) -> bool {
    common::asleep_on_futex_in(pid, path).expect("read /proc of a child process")
}

/// Until a sleeper has raised `flag`, or the deadline passes.
fn wait_for_sleeper(flag: &SleeperFlag, deadline: std::time::Instant) -> bool {
    while !flag.raised() {
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::hint::spin_loop();
    }
    true
}

/// Answers each ping with the same number on the pong bus, each time only
/// once the parent is asleep in the futex.
#[test]
fn as_child_answer_every_ping() {
    role("pong", || {
        let ping: String = param("SHMBUS_PING");
        let pong: String = param("SHMBUS_PONG");
        let pong_path: String = param("SHMBUS_PONG_PATH");
        let rounds: u64 = param("SHMBUS_ROUNDS");
        let mut sub = Subscriber::<u64>::open(&ping, &tiny_futex_spin()).expect("open ping");
        let mut publisher =
            Publisher::<u64>::attach(&pong, &OpenOptions::default()).expect("attach pong");
        let parent_asleep = SleeperFlag::of(&pong, std::path::Path::new(&pong_path));
        let (mut bad, mut not_asleep) = (0u64, 0u64);
        for i in 0..rounds {
            match sub.recv(shmbus::Wait::Forever).expect("waits forever") {
                Received::Message(v) if v == i => {}
                _ => bad += 1,
            }
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            not_asleep += u64::from(!wait_for_sleeper(&parent_asleep, deadline));
            publisher.publish(&i);
        }
        print_result(&[
            ("rounds", rounds.to_string()),
            ("bad", bad.to_string()),
            ("not_asleep", not_asleep.to_string()),
        ]);
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_sleeping_subscriber_is_woken_by_a_publish_from_another_process() {
    let ping = BusName::new("ping");
    let pong = BusName::new("pong");
    let mut publisher = Publisher::<u64>::create(ping.name(), &BusOptions::new(4)).expect("ping");
    // The child becomes the pong bus's publisher. (Dropped with no spawn in
    // flight, so no half-spawned child keeps a copy of the publisher lock.)
    let no_fork = common::no_spawn_in_flight();
    drop(Publisher::<u64>::create(pong.name(), &BusOptions::new(4)).expect("pong"));
    drop(no_fork);
    let mut sub = Subscriber::<u64>::open(pong.name(), &tiny_futex_spin()).expect("open pong");
    let mut child = spawn_child(
        "as_child_answer_every_ping",
        "pong",
        &[
            ("SHMBUS_PING", ping.name().to_owned()),
            ("SHMBUS_PONG", pong.name().to_owned()),
            ("SHMBUS_PONG_PATH", pong.path().to_str().unwrap().to_owned()),
            ("SHMBUS_ROUNDS", PING_ROUNDS.to_string()),
        ],
    );
    let child_pid = child.pid();
    for i in 0..PING_ROUNDS {
        // Publish only once the child sleeps in the futex on the ping bus,
        // so every round crosses the wake path.
        wait_for(
            &format!("the child to sleep before ping {i}"),
            &mut [&mut child],
            || asleep_in(child_pid, ping.path()),
        );
        publisher.publish(&i);
        match sub.recv(shmbus::Wait::For(Duration::from_secs(30))) {
            Some(Received::Message(v)) => assert_eq!(v, i, "pong {i}"),
            Some(other) => panic!("round {i}: {other:?}"),
            None => panic!("round {i}: no pong in 30 s: a lost wake-up on one side"),
        }
    }
    let f = child.wait_success();
    let r = f.result();
    assert_eq!(r.get::<u64>("rounds"), PING_ROUNDS);
    assert_eq!(r.get::<u64>("bad"), 0);
    assert_eq!(
        r.get::<u64>("not_asleep"),
        0,
        "the parent slept before every pong"
    );
    assert_eq!(stat_of(ping.name()).published, PING_ROUNDS);
    let pong_stat = stat_of(pong.name());
    assert_eq!(pong_stat.published, PING_ROUNDS);
    assert_eq!(pong_stat.epoch, Some(2));
    drop((publisher, sub));
    ping.finish();
    pong.finish();
}

/// Opens a subscriber (SpinFutex, tiny spin), says it is ready, and waits
/// for one message with `recv`.
#[test]
fn as_child_sleep_until_one_message() {
    role("sleep_for_one", || {
        let name: String = param("SHMBUS_BUS");
        let mut sub = ready_futex_subscriber(&name, Duration::from_micros(1));
        let got = match sub.recv(shmbus::Wait::Forever).expect("waits forever") {
            Received::Message(v) => v.to_string(),
            Received::Lagged { skipped } => format!("lagged-{skipped}"),
        };
        print_result(&[("got", got)]);
    });
}

fn spawn_sleeper(bus: &BusName) -> Watched {
    let mut c = spawn_child(
        "as_child_sleep_until_one_message",
        "sleep_for_one",
        &[("SHMBUS_BUS", bus.name().to_owned())],
    );
    c.wait_ready();
    c
}

#[test]
#[cfg_attr(miri, ignore)]
fn one_publish_wakes_every_subscriber_process_asleep_on_the_bus() {
    let bus = BusName::new("wake-all");
    let mut publisher = Publisher::<u64>::create(bus.name(), &BusOptions::new(8)).expect("create");
    let mut a = spawn_sleeper(&bus);
    let mut b = spawn_sleeper(&bus);
    let (pa, pb) = (a.pid(), b.pid());
    wait_for("both subscribers to sleep", &mut [&mut a, &mut b], || {
        asleep_in(pa, bus.path()) && asleep_in(pb, bus.path())
    });
    publisher.publish(&7);
    for child in [a, b] {
        let f = child.wait_success();
        assert_eq!(f.result().raw("got"), Some("7"), "{}", f.output());
    }
    drop(publisher);
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_subscriber_killed_in_its_sleep_costs_the_publisher_at_most_one_wake() {
    let bus = BusName::new("stale-sleeper");
    let mut publisher = Publisher::<u64>::create(bus.name(), &BusOptions::new(8)).expect("create");
    let flag = SleeperFlag::of(bus.name(), bus.path());
    assert!(!flag.raised(), "nobody sleeps on a new bus");
    let mut sleeper = spawn_sleeper(&bus);
    let pid = sleeper.pid();
    wait_for("the subscriber to sleep", &mut [&mut sleeper], || {
        asleep_in(pid, bus.path())
    });
    assert!(flag.raised(), "a sleeper raises the flag");
    sleeper.kill();
    assert!(flag.raised(), "the dead sleeper's flag is still up");
    // The first publish pays for a wake and clears it; nothing raises it
    // again, so no later publish makes a system call.
    publisher.publish(&1);
    assert!(!flag.raised(), "the publisher cleared the stale flag");
    for i in 2..100 {
        publisher.publish(&i);
    }
    assert!(!flag.raised());
    drop(publisher);
    bus.finish();
}

// ---------------------------------------------------------------------------
// 9. `stat::list` and `stat::clean`.

/// The paths `clean` removed (or would), failing the test on any file it
/// could not remove.
fn cleaned(dir: &std::path::Path, dry_run: bool) -> Vec<std::path::PathBuf> {
    stat::clean(dir, dry_run)
        .expect("clean")
        .into_iter()
        .map(|c| {
            c.result.unwrap_or_else(|e| panic!("clean: {e}"));
            c.path
        })
        .collect()
}

fn listing<'a>(all: &'a [stat::Listing], path: &std::path::Path) -> &'a stat::Listing {
    all.iter()
        .find(|l| l.path == path)
        .unwrap_or_else(|| panic!("{} not listed: {all:?}", path.display()))
}

#[test]
#[cfg_attr(miri, ignore)]
fn clean_spares_a_bus_while_its_publisher_or_a_subscriber_lives_and_removes_it_after() {
    let dir = ShmDir::new("clean-dir");
    let bus = BusName::in_dir(dir.path(), "bus");
    // Neither a foreign file nor a live bus is touched; a half-built segment
    // whose creator is gone is.
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, b"not a bus, leave me alone").unwrap();
    let half_built = dir.path().join("half-built");
    let mut bytes = shmbus::wire::MAGIC_BUILDING.to_le_bytes().to_vec();
    bytes.resize(4096, 0);
    std::fs::write(&half_built, &bytes).unwrap();

    let mut publisher = spawn_child(
        "as_child_create_publish_and_idle",
        "create_publish_idle",
        &[
            ("SHMBUS_BUS", bus.name().to_owned()),
            ("SHMBUS_COUNT", "3".into()),
        ],
    );
    wait_for("the publisher", &mut [&mut publisher], || {
        stat::stat(bus.name()).is_ok_and(|s| s.published == 3)
    });

    // See `no_spawn_in_flight`: no child of another test, mid-spawn, may
    // hold a copy of a mapping this process made while stat-ing.
    let no_fork = common::no_spawn_in_flight();
    let all = stat::list(dir.path()).expect("list");
    assert_eq!(all.len(), 2, "the bus and the half-built file: {all:?}");
    let l = listing(&all, bus.path());
    let st = l.state.as_ref().expect("a live bus has a state");
    assert!(st.publisher_alive && l.locked && !l.is_abandoned());
    assert_eq!(st.publisher_pid, publisher.pid());
    assert_eq!(l.mapped_by, vec![publisher.pid()]);
    let h = listing(&all, &half_built);
    assert!(
        matches!(h.state, Err(shmbus::OpenError::NotInitialized { .. })),
        "{:?}",
        h.state
    );
    assert!(h.is_abandoned());

    // Publisher alive: only the dead half-built file goes.
    assert_eq!(cleaned(dir.path(), false), vec![half_built.clone()]);
    assert!(bus.path().exists() && !half_built.exists() && notes.exists());

    drop(no_fork);
    let mut subscriber = spawn_child(
        "as_child_subscribe_and_idle",
        "sub_idle",
        &[
            ("SHMBUS_BUS", bus.name().to_owned()),
            ("SHMBUS_RAW", "0".into()),
        ],
    );
    let sub_pid = subscriber.pid();
    subscriber.wait_ready();

    // Subscriber alive, publisher dead: still spared.
    publisher.kill();
    let no_fork = common::no_spawn_in_flight();
    let all = stat::list(dir.path()).expect("list");
    let l = listing(&all, bus.path());
    let st = l.state.as_ref().expect("state");
    assert!(!st.publisher_alive && st.attached && l.locked);
    assert_eq!(l.mapped_by, vec![sub_pid]);
    assert!(cleaned(dir.path(), false).is_empty());
    assert!(bus.path().exists());

    // Both dead: a dry run names it and leaves it, a real run removes it.
    subscriber.kill();
    let all = stat::list(dir.path()).expect("list");
    let l = listing(&all, bus.path());
    assert!(l.is_abandoned(), "{l:?}");
    assert!(
        l.state
            .as_ref()
            .is_ok_and(|s| !s.attached && !s.publisher_alive)
    );
    let bus_path = bus.path().to_owned();
    assert_eq!(cleaned(dir.path(), true), vec![bus_path.clone()]);
    assert!(bus.path().exists(), "a dry run removes nothing");
    assert_eq!(cleaned(dir.path(), false), vec![bus_path]);
    assert!(!bus.path().exists());
    assert!(notes.exists(), "clean only removes shmbus segments");
    assert!(stat::list(dir.path()).unwrap().is_empty());
    drop(no_fork);
    bus.finish();
    dir.finish();
}
