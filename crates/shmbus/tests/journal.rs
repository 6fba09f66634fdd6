//! The journaled bus: late join without a gap or a duplicate, recovery,
//! compaction, a full disk. Real processes where the issue asks for them.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{
    BusName, ShmDir, idle_until_killed, param, print_ready, print_result, role, spawn_child,
    wait_for,
};
use shmbus::journal::format::{HEADER_LEN, record_size};
use shmbus::journal::{side_files, stat as journal_stat};
use shmbus::{
    AttachError, BusOptions, OpenOptions, Publisher, Received, Start, Subscriber,
    journal::{
        self, AppendError, JoinError, JoinOptions, Keyed, KeyedState, SeekError, SnapshotError,
        State,
    },
};

#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Kv {
    key: u64,
    val: u64,
}

impl shmbus::Message for Kv {
    const NAME: &'static str = "test.Kv";
}

impl Keyed for Kv {
    fn key(&self) -> u64 {
        self.key
    }
}

fn kv(i: u64, keys: u64) -> Kv {
    Kv {
        key: common::splitmix(i) % keys,
        val: i,
    }
}

/// A journaled bus named for `label` with its journal at `dir/j`, and the
/// two guards that remove them.
fn journaled(label: &str, publishes: u64, keys: u64) -> (ShmDir, BusName, journal::Publisher<Kv>) {
    let dir = ShmDir::new(label);
    let bus = BusName::new(label);
    let mut p = journal::Publisher::<Kv>::create(
        bus.name(),
        &BusOptions::new(64),
        &journal::Options::new(dir.path().join("j")),
    )
    .expect("create");
    for i in 0..publishes {
        p.publish(&kv(i, keys)).expect("publish");
    }
    (dir, bus, p)
}

/// Receives until sequence `upto` (exclusive) has come, checking the
/// contiguous part has every sequence once, in order.
fn drain_to(sub: &mut journal::Subscriber<Kv>, upto: u64, keys: u64) -> Vec<u64> {
    let mut seqs = Vec::new();
    while sub.position() < upto {
        match sub.recv(shmbus::Wait::For(Duration::from_secs(10))) {
            Some(Received::Message(e)) => {
                assert_eq!(e.msg, kv(e.seq, keys), "seq {}", e.seq);
                seqs.push(e.seq);
            }
            Some(Received::Lagged { skipped }) => panic!("lagged {skipped} at {}", sub.position()),
            None => panic!("nothing after {:?}", seqs.last()),
        }
    }
    seqs
}

#[test]
fn a_subscriber_that_joins_late_gets_every_sequence_once_from_the_journal_then_the_ring() {
    let keys = 50;
    let (dir, bus, mut p) = journaled("jlate", 1000, keys);
    let mut s = journal::Subscriber::<Kv>::join(bus.name(), &JoinOptions::default()).expect("join");
    for i in 1000..1500 {
        p.publish(&kv(i, keys)).expect("publish");
    }
    let seqs = drain_to(&mut s, 1500, keys);
    assert_eq!(seqs, (0..1500).collect::<Vec<_>>());
    assert_eq!(s.try_recv(), None);
    assert!(s.is_live());
    drop(s);
    drop(p);
    bus.finish();
    dir.finish();
}

/// The state after updates `0..n`, as every subscriber must end up with.
fn expected_state(n: u64, keys: u64) -> KeyedState<Kv> {
    let mut st = KeyedState::new();
    for i in 0..n {
        st.apply(i, kv(i, keys));
    }
    st
}

/// What a joiner saw, checked entry by entry.
struct Joined {
    state: KeyedState<Kv>,
    snapshot: u64,
    contiguous_from: u64,
    /// Lag reports, and the sequences they said were lost.
    lags: u64,
    lost: u64,
    /// Entries delivered from a compacted snapshot during a repair.
    folded: u64,
}

/// Joins `bus` and reads until sequence `end` (exclusive), allowing no loss.
fn join_and_check(bus: &str, end: u64, keys: u64) -> Joined {
    let joined = join_and_account(bus, end, keys);
    assert_eq!(
        (joined.lags, joined.folded),
        (0, 0),
        "a loss where the journal had everything"
    );
    joined
}

/// Joins `bus` and reads until sequence `end` (exclusive), checking every
/// entry: the initial snapshot increasing and true to its sequence; from
/// the first contiguous entry on, every sequence once and in order, except
/// where a repair met a compaction: then the sequences between two
/// contiguous entries are exactly the folded entries delivered plus the
/// `skipped` of the lag report, so nothing goes missing unannounced.
fn join_and_account(bus: &str, end: u64, keys: u64) -> Joined {
    let mut sub = journal::Subscriber::<Kv>::join(bus, &JoinOptions::default()).expect("join");
    let mut state = KeyedState::new();
    let mut snapshot = 0;
    let (mut first, mut last, mut contiguous): (Option<u64>, Option<u64>, Option<u64>) =
        (None, None, None);
    let (mut lags, mut lost, mut folded) = (0, 0, 0);
    // Folded entries and skipped sequences since the last contiguous entry.
    let (mut folded_since, mut skipped_since) = (0u64, 0u64);
    while sub.position() < end || first.is_none() {
        let e = match sub.recv(shmbus::Wait::For(Duration::from_secs(20))) {
            Some(Received::Message(e)) => e,
            Some(Received::Lagged { skipped }) => {
                assert!(skipped > 0, "an empty lag report at {}", sub.position());
                lags += 1;
                lost += skipped;
                skipped_since += skipped;
                continue;
            }
            None => panic!("nothing for 20 s at {} (last {last:?})", sub.position()),
        };
        assert_eq!(e.msg, kv(e.seq, keys), "payload of seq {}", e.seq);
        if let Some(l) = last {
            assert!(
                e.seq > l,
                "seq {} after {l}: duplicate or out of order",
                e.seq
            );
        }
        if sub.position() == e.seq + 1 {
            if let Some(c) = contiguous {
                assert_eq!(
                    e.seq - (c + 1),
                    folded_since + skipped_since,
                    "gap before {}: {folded_since} folded and {skipped_since} reported lost since {c}",
                    e.seq
                );
            }
            first.get_or_insert(e.seq);
            contiguous = Some(e.seq);
            (folded_since, skipped_since) = (0, 0);
        } else if first.is_none() {
            snapshot += 1;
        } else {
            folded += 1;
            folded_since += 1;
        }
        last = Some(e.seq);
        state.apply(e.seq, e.msg);
        if sub.position() >= end && first.is_some() {
            break;
        }
    }
    Joined {
        state,
        snapshot,
        contiguous_from: first.expect("at least one contiguous entry"),
        lags,
        lost,
        folded,
    }
}

#[derive(Clone)]
struct PubChild {
    bus: String,
    journal: String,
    mode: &'static str,
    count: u64,
    keys: u64,
    pace_every: u64,
    pace_us: u64,
    compact_every: u64,
    stage_at: u64,
    dir: String,
    fsize_limit: u64,
    then: &'static str,
}

impl PubChild {
    fn new(bus: &BusName, dir: &ShmDir, mode: &'static str) -> PubChild {
        PubChild {
            bus: bus.name().to_owned(),
            journal: dir
                .path()
                .join("journal")
                .to_str()
                .expect("utf-8")
                .to_owned(),
            mode,
            count: 1000,
            keys: 1000,
            pace_every: 0,
            pace_us: 0,
            compact_every: 0,
            stage_at: u64::MAX,
            dir: dir.path().to_str().expect("utf-8").to_owned(),
            fsize_limit: 0,
            then: "idle",
        }
    }
    fn spawn(&self) -> common::Watched {
        spawn_child(
            "as_child_publish_keyed_updates",
            "jpub",
            &[
                ("SHMBUS_BUS", self.bus.clone()),
                ("SHMBUS_JOURNAL", self.journal.clone()),
                ("SHMBUS_MODE", self.mode.to_owned()),
                ("SHMBUS_COUNT", self.count.to_string()),
                ("SHMBUS_KEYS", self.keys.to_string()),
                ("SHMBUS_PACE_EVERY", self.pace_every.to_string()),
                ("SHMBUS_PACE_US", self.pace_us.to_string()),
                ("SHMBUS_COMPACT_EVERY", self.compact_every.to_string()),
                ("SHMBUS_STAGE_AT", self.stage_at.to_string()),
                ("SHMBUS_DIR", self.dir.clone()),
                ("SHMBUS_FSIZE", self.fsize_limit.to_string()),
                ("SHMBUS_THEN", self.then.to_owned()),
            ],
        )
    }
}

#[test]
fn as_child_publish_keyed_updates() {
    role("jpub", || {
        let bus: String = param("SHMBUS_BUS");
        let journal_path: String = param("SHMBUS_JOURNAL");
        let (count, keys): (u64, u64) = (param("SHMBUS_COUNT"), param("SHMBUS_KEYS"));
        let (every, us): (u64, u64) = (param("SHMBUS_PACE_EVERY"), param("SHMBUS_PACE_US"));
        let compact_every: u64 = param("SHMBUS_COMPACT_EVERY");
        let stage_at: u64 = param("SHMBUS_STAGE_AT");
        let dir: String = param("SHMBUS_DIR");
        let fsize: u64 = param("SHMBUS_FSIZE");
        if fsize > 0 {
            // SAFETY: plain libc calls on this process's own limits and signals.
            unsafe {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let lim = libc::rlimit {
                    rlim_cur: fsize,
                    rlim_max: fsize,
                };
                assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0);
            }
        }
        let mut p = match param::<String>("SHMBUS_MODE").as_str() {
            "create" => journal::Publisher::<Kv>::create(
                &bus,
                &BusOptions::new(256),
                &journal::Options::new(&journal_path).chunk_bytes(64 << 10),
            )
            .expect("create"),
            _ => journal::Publisher::<Kv>::attach(&bus, &OpenOptions::default()).expect("attach"),
        };
        let first = p.next_sequence();
        print_ready();
        let (mut published, mut compactions) = (0u64, 0u64);
        let mut error = String::from("none");
        for n in 0..count {
            let seq = p.next_sequence();
            let m = kv(seq, keys);
            if seq == stage_at {
                assert_eq!(p.stage(&m).expect("stage"), seq);
                std::fs::write(Path::new(&dir).join("staged"), b"").expect("mark staged");
                let go = Path::new(&dir).join("go");
                wait_for("the parent's go", &mut [], || go.exists());
                p.release_staged();
            } else if let Err(e) = p.publish(&m) {
                error = match e {
                    AppendError::Full { .. } => "full".to_owned(),
                    other => format!("{other:?}").replace(char::is_whitespace, "_"),
                };
                break;
            }
            published += 1;
            if compact_every > 0 && (seq + 1) % compact_every == 0 && p.compact() {
                compactions += 1;
            }
            if every > 0 && (n + 1) % every == 0 {
                std::thread::sleep(Duration::from_micros(us));
            }
        }
        print_result(&[
            ("first", first.to_string()),
            ("published", published.to_string()),
            ("next", p.next_sequence().to_string()),
            ("epoch", p.epoch().to_string()),
            ("compactions", compactions.to_string()),
            ("error", error),
        ]);
        if param::<String>("SHMBUS_THEN") == "idle" {
            idle_until_killed();
        }
    });
}

#[test]
fn joiners_at_random_moments_end_with_the_publishers_exact_state_and_no_gap_or_duplicate() {
    // Updates under SHMBUS_TEST_SCALE (1 000 000 at 1.0), at least 100 000:
    // thousands of laps of the 256-slot ring and, compacted, 6 compactions.
    // Keys, joiners and the streaming time stay as they are; the bursts and
    // the compactions keep their share of the updates.
    let (n, keys) = (common::scale_min(1_000_000, 100_000), 1000u64);
    for compact_every in [0u64, n * 3 / 20] {
        let dir = ShmDir::new("jrandom");
        let bus = BusName::new("jrandom");
        let mut spec = PubChild::new(&bus, &dir, "create");
        spec.count = n;
        spec.keys = keys;
        // About 2 s of streaming, in 500 bursts.
        spec.pace_every = n / 500;
        spec.pace_us = 4000;
        spec.compact_every = compact_every;
        let mut publisher = spec.spawn();
        publisher.wait_ready();
        let seed = std::env::var("SHMBUS_JOIN_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0x5eed_u64);
        println!("join seed {seed} (SHMBUS_JOIN_SEED replays), compact every {compact_every}");
        let expected = expected_state(n, keys).digest();
        let joiners: Vec<_> = (0..24u64)
            .map(|j| {
                let delay = Duration::from_micros(common::splitmix(seed ^ j) % 2_200_000);
                let name = bus.name().to_owned();
                std::thread::spawn(move || {
                    std::thread::sleep(delay);
                    let joined = join_and_account(&name, n, keys);
                    (delay, joined)
                })
            })
            .collect();
        for h in joiners {
            let (delay, joined) = h.join().expect("joiner");
            println!(
                "joined after {delay:?}: {} snapshot entries, contiguous from {}; \
                 {} lags reporting {} lost, {} folded",
                joined.snapshot, joined.contiguous_from, joined.lags, joined.lost, joined.folded
            );
            // Without compaction the journal has every record, so any lap of
            // the ring is repaired in full. With it, only a lag across two
            // compactions (150 000 updates at 1.0) may fold records, and then the
            // accounting above and the state below are still exact.
            if compact_every == 0 {
                assert_eq!((joined.lags, joined.folded), (0, 0), "after {delay:?}");
            }
            assert_eq!(
                joined.state.digest(),
                expected,
                "state of joiner after {delay:?}"
            );
            assert_eq!(joined.state.len() as u64, keys);
        }
        let f = publisher.kill();
        drop(f);
        bus.finish();
        dir.finish();
    }
}

#[test]
fn a_join_between_the_journal_append_and_the_ring_publish_gets_that_message_once() {
    let dir = ShmDir::new("jedge");
    let bus = BusName::new("jedge");
    let mut spec = PubChild::new(&bus, &dir, "create");
    spec.count = 200;
    spec.stage_at = 100;
    let mut publisher = spec.spawn();
    publisher.wait_ready();
    let staged = dir.path().join("staged");
    wait_for("the publisher to stage 100", &mut [&mut publisher], || {
        staged.exists()
    });
    // The ring's head is 100; the journal already holds 100.
    assert_eq!(shmbus::stat::stat(bus.name()).expect("stat").head, 100);
    let mut sub =
        journal::Subscriber::<Kv>::join(bus.name(), &JoinOptions::default()).expect("join");
    std::fs::write(dir.path().join("go"), b"").expect("go");
    let mut seqs = Vec::new();
    while sub.position() < 200 {
        match sub.recv(shmbus::Wait::For(Duration::from_secs(20))) {
            Some(Received::Message(e)) => {
                assert_eq!(e.msg, kv(e.seq, 1000));
                seqs.push(e.seq);
            }
            other => panic!("{other:?} at {}", sub.position()),
        }
    }
    assert_eq!(seqs, (0..200).collect::<Vec<_>>());
    drop(publisher.kill());
    bus.finish();
    dir.finish();
}

#[test]
fn a_publisher_killed_mid_append_leaves_a_valid_prefix_and_its_successor_resumes_from_it() {
    let dir = ShmDir::new("jkill");
    let bus = BusName::new("jkill");
    let journal_path = dir.path().join("journal");
    // Under SHMBUS_TEST_SCALE (20 at 1.0); at least 5, so successors
    // resume from more than one kind of cut.
    let kills = common::scale_min(20, 5);
    let seed = std::env::var("SHMBUS_CHAOS_SEED")
        .ok()
        .and_then(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok())
        .unwrap_or(0x10_0a1);
    println!("journal kills: seed {seed:#x} (replay with SHMBUS_CHAOS_SEED={seed:#x})");
    let (mut torn, mut next) = (0u64, 0u64);
    for k in 0..kills {
        let mut spec = PubChild::new(&bus, &dir, if k == 0 { "create" } else { "attach" });
        spec.count = u64::MAX;
        let mut publisher = spec.spawn();
        publisher.wait_ready();
        std::thread::sleep(Duration::from_millis(3 + common::splitmix(seed ^ k) % 30));
        drop(publisher.kill());
        let st = journal_stat(&journal_path).expect("journal stat");
        assert!(
            st.next >= next,
            "journal went back from {next} to {}",
            st.next
        );
        let bus_head = shmbus::stat::stat(bus.name()).expect("stat").head;
        // The ring is at the journal's end, or one behind (killed between
        // the append and the publish).
        assert!(
            st.next == bus_head || st.next == bus_head + 1,
            "journal next {} vs ring {bus_head}",
            st.next
        );
        torn += u64::from(st.next == bus_head + 1);
        next = st.next;
    }
    // The last successor publishes a few more and stays for the joiner.
    let mut spec = PubChild::new(&bus, &dir, "attach");
    spec.count = 10;
    let mut publisher = spec.spawn();
    publisher.wait_ready();
    let end = next + 10;
    wait_for("the last publisher's 10", &mut [&mut publisher], || {
        shmbus::stat::stat(bus.name()).is_ok_and(|s| s.head == end)
    });
    let joined = join_and_check(bus.name(), end, 1000);
    assert_eq!(joined.contiguous_from, 0);
    assert_eq!(joined.state.digest(), expected_state(end, 1000).digest());
    let epoch = shmbus::stat::stat(bus.name()).expect("stat").epoch;
    assert_eq!(epoch, Some(kills + 1));
    println!("{kills} kills, {next} records survived, {torn} killed between append and publish");
    drop(publisher.kill());
    bus.finish();
    dir.finish();
}

#[test]
fn as_child_join_and_read_slowly() {
    role("jjoin", || {
        let bus: String = param("SHMBUS_BUS");
        let mut sub = journal::Subscriber::<Kv>::join(&bus, &JoinOptions::default()).expect("join");
        print_ready();
        loop {
            let _ = sub.recv(shmbus::Wait::For(Duration::from_millis(10)));
            std::thread::sleep(Duration::from_micros(50));
        }
    });
}

#[test]
fn killing_a_joining_subscriber_disturbs_neither_the_publisher_nor_other_joiners() {
    let dir = ShmDir::new("jkilljoin");
    let bus = BusName::new("jkilljoin");
    let mut spec = PubChild::new(&bus, &dir, "create");
    spec.count = 100_000;
    spec.pace_every = 1000;
    spec.pace_us = 2000;
    let mut publisher = spec.spawn();
    publisher.wait_ready();
    for _ in 0..3 {
        let mut joiner = spawn_child(
            "as_child_join_and_read_slowly",
            "jjoin",
            &[("SHMBUS_BUS", bus.name().to_owned())],
        );
        joiner.wait_ready();
        std::thread::sleep(Duration::from_millis(20));
        drop(joiner.kill());
    }
    let joined = join_and_check(bus.name(), 100_000, 1000);
    assert_eq!(
        joined.state.digest(),
        expected_state(100_000, 1000).digest()
    );
    publisher.check_alive("the publisher to outlive the killed joiners");
    drop(publisher.kill());
    bus.finish();
    dir.finish();
}

#[test]
fn a_full_disk_is_a_typed_error_and_every_record_before_it_stays_readable() {
    let dir = ShmDir::new("jfull");
    let bus = BusName::new("jfull");
    let mut spec = PubChild::new(&bus, &dir, "create");
    spec.count = 1_000_000;
    spec.fsize_limit = 1 << 20;
    spec.then = "exit";
    let f = spec.spawn().wait_success();
    let r = f.result();
    assert_eq!(r.get::<String>("error"), "full");
    let published: u64 = r.get("published");
    assert!(published > 1000, "only {published} before the limit");
    println!("full after {published} records");
    let st = journal_stat(&dir.path().join("journal")).expect("stat");
    assert_eq!(
        st.next, published,
        "every record before the error is in the journal"
    );
    // A successor without the limit: the joiner gets every record, whole.
    let mut spec = PubChild::new(&bus, &dir, "attach");
    spec.count = 5;
    let mut publisher = spec.spawn();
    publisher.wait_ready();
    let end = published + 5;
    wait_for("the successor's 5", &mut [&mut publisher], || {
        shmbus::stat::stat(bus.name()).is_ok_and(|s| s.head == end)
    });
    let joined = join_and_check(bus.name(), end, 1000);
    assert_eq!(joined.contiguous_from, 0);
    assert_eq!(joined.state.digest(), expected_state(end, 1000).digest());
    drop(publisher.kill());
    bus.finish();
    dir.finish();
}

#[test]
fn a_torn_record_at_the_end_is_cut_off_when_the_publisher_reattaches() {
    let dir = ShmDir::new("jtorn");
    let bus = BusName::new("jtorn");
    let path = dir.path().join("j");
    let mut p = journal::Publisher::<Kv>::create(
        bus.name(),
        &BusOptions::new(64),
        &journal::Options::new(&path),
    )
    .expect("create");
    for i in 0..10 {
        p.publish(&kv(i, 7)).expect("publish");
    }
    let no_fork = common::no_spawn_in_flight();
    drop(p);
    // Half of record 10, as a writer killed mid-record leaves it.
    let rs = record_size(16) as u64;
    let at = HEADER_LEN as u64 + 10 * rs;
    common::write_at(&path, at, &10u64.to_le_bytes());
    common::write_at(&path, at + 8, &kv(10, 7).key.to_le_bytes());
    assert_eq!(journal_stat(&path).expect("stat").records, 10);
    let mut p =
        journal::Publisher::<Kv>::attach(bus.name(), &OpenOptions::default()).expect("attach");
    drop(no_fork);
    assert_eq!(p.next_sequence(), 10);
    for i in 10..20 {
        p.publish(&kv(i, 7)).expect("publish");
    }
    let joined = join_and_check(bus.name(), 20, 7);
    assert_eq!(joined.contiguous_from, 0);
    assert_eq!(joined.state.digest(), expected_state(20, 7).digest());
    drop(p);
    bus.finish();
    dir.finish();
}

#[test]
fn a_message_in_the_journal_but_not_on_the_ring_is_published_again_under_its_number() {
    let dir = ShmDir::new("jrepub");
    let bus = BusName::new("jrepub");
    let mut p = journal::Publisher::<Kv>::create(
        bus.name(),
        &BusOptions::new(64),
        &journal::Options::new(dir.path().join("j")),
    )
    .expect("create");
    let mut live = Subscriber::<Kv>::open(bus.name(), &OpenOptions::default().start(Start::Oldest))
        .expect("open");
    for i in 0..5 {
        p.publish(&kv(i, 3)).expect("publish");
    }
    p.stage(&kv(5, 3)).expect("stage");
    // No child forked on another thread may hold a copy of the lock.
    let no_fork = common::no_spawn_in_flight();
    drop(p); // dies between the append and the publish
    let mut p =
        journal::Publisher::<Kv>::attach(bus.name(), &OpenOptions::default()).expect("attach");
    drop(no_fork);
    assert_eq!(p.next_sequence(), 6);
    p.publish(&kv(6, 3)).expect("publish");
    let got: Vec<Kv> = (0..7)
        .map(
            |_| match live.recv(shmbus::Wait::For(Duration::from_secs(5))) {
                Some(Received::Message(m)) => m,
                other => panic!("{other:?}"),
            },
        )
        .collect();
    assert_eq!(got, (0..7).map(|i| kv(i, 3)).collect::<Vec<_>>());
    drop(p);
    bus.finish();
    dir.finish();
}

#[test]
fn compaction_keeps_one_record_per_key_and_a_joiner_still_gets_the_exact_state() {
    let dir = ShmDir::new("jcompact");
    let bus = BusName::new("jcompact");
    let path = dir.path().join("j");
    let (keys, n) = (100u64, 20_000u64);
    let mut p = journal::Publisher::<Kv>::create(
        bus.name(),
        &BusOptions::new(64),
        &journal::Options::new(&path),
    )
    .expect("create");
    for i in 0..n / 2 {
        p.publish(&kv(i, keys)).expect("publish");
    }
    let before = journal_stat(&path).expect("stat").records;
    assert!(p.compact());
    // Publishing goes on while it compacts; the switch happens in a publish.
    let mut i = n / 2;
    let deadline = Instant::now() + Duration::from_secs(60);
    while p.is_compacting() || i < n {
        p.publish(&kv(i, keys)).expect("publish");
        i += 1;
        assert!(
            Instant::now() < deadline,
            "compaction not finished after 60 s and {i} messages: {:?}",
            p.compaction_error()
        );
    }
    assert_eq!(p.compaction_error(), None);
    let st = journal_stat(&path).expect("stat");
    assert_eq!(st.snapshot, keys);
    assert_eq!(st.next, i);
    assert_eq!(st.base, n / 2, "the cut is where compact() was called");
    assert_eq!(
        st.records,
        keys + (i - n / 2),
        "one record per key, then the tail"
    );
    assert!(before > keys);
    let joined = join_and_check(bus.name(), i, keys);
    // The snapshot's last record (seq base - 1) is where the position first
    // moves, so the check counts it as contiguous.
    assert!(joined.snapshot == keys || joined.snapshot == keys - 1);
    assert_eq!(joined.state.digest(), expected_state(i, keys).digest());
    assert!(!dir.path().join("j.compacting").exists());
    drop(p);
    bus.finish();
    dir.finish();
}

/// Every entry `sub` delivers until its position reaches `upto`: the
/// stream a joiner sees, snapshot included. A lag report fails the test.
fn entries_until(sub: &mut journal::Subscriber<Kv>, upto: u64) -> Vec<(u64, Kv)> {
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while sub.position() < upto {
        assert!(Instant::now() < deadline, "stuck at {}", sub.position());
        match sub.recv(shmbus::Wait::For(Duration::from_secs(10))) {
            Some(Received::Message(e)) => got.push((e.seq, e.msg)),
            Some(Received::Lagged { skipped }) => panic!("lagged {skipped} at {}", sub.position()),
            None => panic!("nothing after {:?}", got.last()),
        }
    }
    got
}

/// A bus whose journal was compacted once (100 keys, 2 000 updates, the
/// cut at 1 000), the publisher still attached, and where it stands.
fn compacted(label: &str) -> (ShmDir, BusName, journal::Publisher<Kv>, u64) {
    let (dir, bus, mut p) = journaled(label, 1000, 100);
    assert!(p.compact());
    let mut i = 1000;
    let deadline = Instant::now() + Duration::from_secs(60);
    while p.is_compacting() || i < 2000 {
        p.publish(&kv(i, 100)).expect("publish");
        i += 1;
        assert!(
            Instant::now() < deadline,
            "compaction not done: {:?}",
            p.compaction_error()
        );
    }
    assert_eq!(p.compaction_error(), None);
    let st = journal_stat(&dir.path().join("j")).expect("stat");
    assert_eq!((st.snapshot, st.base, st.next), (100, 1000, i));
    (dir, bus, p, i)
}

#[test]
fn seeking_to_a_sequence_gives_exactly_what_a_joiner_gets_from_it_in_a_compacted_journal_too() {
    let (dir, bus, mut p, end) = compacted("jseek");
    let mut whole =
        journal::Subscriber::<Kv>::join(bus.name(), &JoinOptions::default()).expect("join");
    let all = entries_until(&mut whole, end);
    let snapshot: Vec<u64> = all.iter().map(|e| e.0).filter(|&s| s < 1000).collect();
    assert_eq!(snapshot.len(), 100);
    // Sequences inside the snapshot (each a record, and between two),
    // either side of the cut, in the contiguous part, at the head.
    let between = (snapshot[40]..snapshot[41]).nth(1).unwrap_or(snapshot[41]);
    let marks = [
        0,
        snapshot[0],
        snapshot[0] + 1,
        snapshot[40],
        between,
        snapshot[99],
        999,
        1000,
        1001,
        1500,
        end - 1,
        end,
    ];
    let mut sub =
        journal::Subscriber::<Kv>::join(bus.name(), &JoinOptions::default()).expect("join");
    for mark in marks {
        sub.seek(mark).expect("seek");
        let want: Vec<(u64, Kv)> = all.iter().copied().filter(|e| e.0 >= mark).collect();
        assert_eq!(entries_until(&mut sub, end), want, "seek to {mark}");
    }
    // Then live: the ring after the file, as for a joiner.
    sub.seek(end - 3).expect("seek");
    p.publish(&kv(end, 100)).expect("publish");
    let got = entries_until(&mut sub, end + 1);
    assert_eq!(
        got.iter().map(|e| e.0).collect::<Vec<_>>(),
        [end - 3, end - 2, end - 1, end]
    );
    assert_eq!(got[3].1, kv(end, 100));
    match sub.seek(end + 2) {
        Err(e @ SeekError::Ahead { seq, head }) => {
            assert_eq!((seq, head), (end + 2, end + 1));
            assert!(e.to_string().contains("ahead of the bus's head"), "{e}");
        }
        other => panic!("seek past the head: {other:?}"),
    }
    // Refused: it stays where it was.
    assert_eq!(sub.position(), end + 1);
    drop((whole, sub, p));
    bus.finish();
    dir.finish();
}

#[test]
fn seeking_in_a_damaged_journal_is_a_typed_error_never_a_hang_or_a_panic() {
    let (dir, bus, p, end) = compacted("jseekbad");
    drop(p);
    let path = dir.path().join("j");
    let rs = record_size(16) as u64;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .expect("open");
    use std::os::unix::fs::FileExt;
    // Snapshot record 50 (the bisection's first probe) torn.
    let at = HEADER_LEN as u64 + 50 * rs + 8;
    let mut b = [0u8; 1];
    file.read_exact_at(&mut b, at).expect("read");
    file.write_all_at(&[b[0] ^ 0xff], at).expect("write");
    let mut sub =
        journal::Subscriber::<Kv>::join(bus.name(), &JoinOptions::default()).expect("join");
    match sub.seek(3) {
        Err(
            e @ SeekError::Corrupt {
                index: 50,
                base: 1000,
                ..
            },
        ) => {
            assert!(
                e.to_string()
                    .contains("snapshot record 50 is torn or zeroed"),
                "{e}"
            );
        }
        other => panic!("seek into a torn snapshot: {other:?}"),
    }
    // The contiguous part does not need the snapshot: a direct offset.
    sub.seek(1500).expect("seek past the snapshot");
    assert_eq!(entries_until(&mut sub, end).len() as u64, end - 1500);
    // A header (with a good check) that counts more snapshot records
    // than any file holds: refused, where an offset would have overflowed.
    use shmbus::journal::format::JournalHeader;
    let mut head = [0u8; HEADER_LEN];
    file.read_exact_at(&mut head, 0).expect("read");
    let h = JournalHeader::decode(&head).expect("a header");
    let huge = JournalHeader {
        snapshot: u64::MAX - 1,
        ..h
    };
    file.write_all_at(&huge.encode(), 0).expect("write");
    for seq in [3, 1500] {
        match sub.seek(seq) {
            Err(e @ SeekError::Oversized { snapshot, .. }) => {
                assert_eq!(snapshot, u64::MAX - 1);
                assert!(
                    e.to_string()
                        .contains("snapshot records, the file has room for"),
                    "{e}"
                );
            }
            other => panic!("seek {seq} in a journal with a huge snapshot count: {other:?}"),
        }
    }
    drop(sub);
    bus.finish();
    dir.finish();
}

#[test]
fn every_misuse_is_a_typed_error() {
    let dir = ShmDir::new("jmisuse");
    let plain = BusName::new("jplain");
    let p = Publisher::<Kv>::create(plain.name(), &BusOptions::new(8)).expect("create");
    assert!(matches!(
        journal::Subscriber::<Kv>::join(plain.name(), &JoinOptions::default()),
        Err(JoinError::NotJournaled { .. })
    ));
    drop(p);
    let bus = BusName::new("jmisuse");
    let path = dir.path().join("j");
    let p = journal::Publisher::<Kv>::create(
        bus.name(),
        &BusOptions::new(8),
        &journal::Options::new(&path),
    )
    .expect("create");
    assert!(matches!(
        Publisher::<Kv>::attach(bus.name(), &OpenOptions::default()),
        Err(AttachError::Journaled { .. })
            | Err(AttachError::RoleTaken {
                role: shmbus::error::Role::Publisher,
                ..
            })
    ));
    let no_fork = common::no_spawn_in_flight();
    drop(p);
    assert!(matches!(
        Publisher::<Kv>::attach(bus.name(), &OpenOptions::default()),
        Err(AttachError::Journaled { .. })
    ));
    // No publisher: nothing to flush, the journal is read as it is.
    let mut late =
        journal::Subscriber::<Kv>::join(bus.name(), &JoinOptions::default()).expect("join");
    assert_eq!(late.try_recv(), None);
    assert!(late.is_live());
    drop(late);
    drop(no_fork);
    // A journal of another message type at the path.
    let other = BusName::new("jother");
    let e = journal::Publisher::<[u64; 3]>::create(
        other.name(),
        &BusOptions::new(8),
        &journal::Options::new(&path),
    );
    assert!(
        matches!(
            e,
            Err(journal::CreateError::Journal(
                journal::OpenError::TypeMismatch { .. }
            ))
        ),
        "{:?}",
        e.err()
    );
    assert!(!other.path().exists());
    // A directory that does not exist.
    let e = journal::Publisher::<Kv>::create(
        other.name(),
        &BusOptions::new(8),
        &journal::Options::new(dir.path().join("no/such/dir/j")),
    );
    assert!(e.is_err());
    assert!(!other.path().exists());
    plain.finish();
    bus.finish();
    other.finish();
    dir.finish();
}

#[test]
fn drain_ready_delivers_the_same_stream_as_recv_one_at_a_time() {
    let keys = 64;
    let (dir, bus, mut p) = journaled("jdrain", 100_000, keys);
    let mut sub =
        journal::Subscriber::<Kv>::join(bus.name(), &JoinOptions::default()).expect("join");
    let mut seqs = Vec::new();
    let mut state = KeyedState::new();
    let mut published = 100_000;
    while sub.position() < 150_000 {
        if published < 150_000 {
            p.publish(&kv(published, keys)).expect("publish");
            published += 1;
        }
        sub.drain_ready(|r| match r {
            Received::Message(e) => {
                assert_eq!(e.msg, kv(e.seq, keys));
                seqs.push(e.seq);
                state.apply(e.seq, e.msg);
            }
            Received::Lagged { skipped } => panic!("lagged {skipped}"),
        });
    }
    assert_eq!(seqs, (0..150_000).collect::<Vec<_>>());
    assert_eq!(state.digest(), expected_state(150_000, keys).digest());
    drop(sub);
    drop(p);
    bus.finish();
    dir.finish();
}

#[test]
fn a_joiner_lapped_by_the_ring_reads_what_it_missed_back_from_the_journal() {
    let keys = 10;
    let (dir, bus, mut p) = journaled("jlapped", 100, keys);
    let mut sub =
        journal::Subscriber::<Kv>::join(bus.name(), &JoinOptions::default()).expect("join");
    // Read into the live part, then fall 10 laps of the 64-slot ring behind.
    assert_eq!(drain_to(&mut sub, 100, keys), (0..100).collect::<Vec<_>>());
    assert_eq!(sub.try_recv(), None);
    assert!(sub.is_live(), "on the ring now");
    for i in 100..740 {
        p.publish(&kv(i, keys)).expect("publish");
    }
    assert_eq!(
        drain_to(&mut sub, 740, keys),
        (100..740).collect::<Vec<_>>()
    );
    drop(sub);
    drop(p);
    bus.finish();
    dir.finish();
}

/// Compacts `p`'s journal, publishing from `*next` until the new file is
/// switched in (the switch happens inside a publish).
fn compact_while_publishing(p: &mut journal::Publisher<Kv>, next: &mut u64, keys: u64) {
    assert!(p.compact(), "no compaction running");
    let deadline = Instant::now() + Duration::from_secs(60);
    while p.is_compacting() {
        p.publish(&kv(*next, keys)).expect("publish");
        *next += 1;
        assert!(Instant::now() < deadline, "compaction never switched in");
        std::thread::sleep(Duration::from_micros(100));
    }
    assert_eq!(p.compaction_error(), None);
}

/// A journaled bus with 100 updates and a joiner that has read them all
/// and now takes the ring.
fn live_joiner_at_100(
    label: &str,
    keys: u64,
) -> (
    ShmDir,
    BusName,
    journal::Publisher<Kv>,
    journal::Subscriber<Kv>,
) {
    let (dir, bus, p) = journaled(label, 100, keys);
    let mut sub =
        journal::Subscriber::<Kv>::join(bus.name(), &JoinOptions::default()).expect("join");
    assert_eq!(drain_to(&mut sub, 100, keys), (0..100).collect::<Vec<_>>());
    assert_eq!(sub.try_recv(), None);
    assert!(sub.is_live());
    (dir, bus, p, sub)
}

#[test]
fn a_joiner_lapped_across_a_compaction_repairs_from_the_replaced_file_and_misses_nothing() {
    let keys = 10;
    let (dir, bus, mut p, mut sub) = live_joiner_at_100("jlapcompact", keys);
    // The subscriber sleeps through many laps and a compaction whose cut
    // (500) is above its position (100): the current file has 100..500
    // only as a snapshot, the replaced one has them all.
    let mut next = 100;
    while next < 500 {
        p.publish(&kv(next, keys)).expect("publish");
        next += 1;
    }
    compact_while_publishing(&mut p, &mut next, keys);
    for _ in 0..300 {
        p.publish(&kv(next, keys)).expect("publish");
        next += 1;
    }
    assert_eq!(journal_stat(&dir.path().join("j")).expect("stat").base, 500);
    assert!(dir.path().join("j.prev").exists());
    assert_eq!(
        drain_to(&mut sub, next, keys),
        (100..next).collect::<Vec<_>>()
    );
    drop(sub);
    drop(p);
    bus.finish();
    dir.finish();
}

#[test]
fn a_joiner_lapped_across_two_compactions_is_told_exactly_what_was_folded_away() {
    let keys = 10;
    let (dir, bus, mut p, mut sub) = live_joiner_at_100("jlaptwice", keys);
    let mut next = 100;
    let mut cut = 0;
    for at in [500, 900] {
        while next < at {
            p.publish(&kv(next, keys)).expect("publish");
            next += 1;
        }
        cut = next;
        compact_while_publishing(&mut p, &mut next, keys);
    }
    for _ in 0..100 {
        p.publish(&kv(next, keys)).expect("publish");
        next += 1;
    }
    let end = next;
    // The replaced file starts at 500: 100..cut survives only as the last
    // value of each key, which must come as entries, the rest as a lag.
    let (mut folded, mut lost, mut seqs) = (Vec::new(), 0, Vec::new());
    let mut state = expected_state(100, keys);
    while sub.position() < end {
        match sub.recv(shmbus::Wait::For(Duration::from_secs(10))) {
            Some(Received::Message(e)) => {
                assert_eq!(e.msg, kv(e.seq, keys));
                state.apply(e.seq, e.msg);
                if sub.position() == e.seq + 1 {
                    seqs.push(e.seq);
                } else {
                    assert!(lost == 0, "a folded entry after the lag report");
                    folded.push(e.seq);
                }
            }
            Some(Received::Lagged { skipped }) => lost += skipped,
            None => panic!("nothing after {}", sub.position()),
        }
    }
    let last_of_each_key: Vec<u64> = {
        let mut last = std::collections::BTreeMap::new();
        for i in 100..cut {
            last.insert(kv(i, keys).key, i);
        }
        let mut v: Vec<u64> = last.into_values().collect();
        v.sort_unstable();
        v
    };
    assert_eq!(folded, last_of_each_key);
    assert_eq!(lost, cut - 100 - folded.len() as u64);
    assert_eq!(seqs, (cut..end).collect::<Vec<_>>());
    assert_eq!(state.digest(), expected_state(end, keys).digest());
    drop(sub);
    drop(p);
    bus.finish();
    dir.finish();
}

/// Publishes update `next` (as [`kv`], its bytes) on a raw journaled bus.
fn publish_raw(p: &mut journal::Publisher<[u8]>, next: &mut u64, keys: u64) {
    p.publish(bytemuck::bytes_of(&kv(*next, keys)))
        .expect("publish");
    *next += 1;
}

/// [`compact_while_publishing`] on a raw journaled bus (it compacts by
/// the first 8 bytes: `Kv::key`).
fn compact_raw_while_publishing(p: &mut journal::Publisher<[u8]>, next: &mut u64, keys: u64) {
    assert!(p.compact(), "no compaction running");
    let deadline = Instant::now() + Duration::from_secs(60);
    while p.is_compacting() {
        publish_raw(p, next, keys);
        assert!(Instant::now() < deadline, "compaction never switched in");
        std::thread::sleep(Duration::from_micros(100));
    }
    assert_eq!(p.compaction_error(), None);
}

/// The raw state holds, for each key, the bytes of its last update below
/// `end`, and nothing else.
fn assert_raw_state_is(state: &KeyedState<[u8]>, end: u64, keys: u64) {
    let expected = expected_state(end, keys);
    assert_eq!(state.len(), expected.len());
    for (key, last) in expected.iter() {
        assert_eq!(state.get(key), Some(bytemuck::bytes_of(last)), "key {key}");
    }
    assert_eq!(state.digest(), expected.digest());
    assert_eq!(state.last_seq(), Some(end - 1));
}

#[test]
fn a_raw_state_folds_a_compacted_raw_journal_and_rejoins_after_a_lap_across_two_compactions() {
    let keys = 10;
    let dir = ShmDir::new("jrawstate");
    let bus = BusName::new("jrawstate");
    let mut p = journal::Publisher::<[u8]>::create(
        bus.name(),
        &BusOptions::new(64).msg_size(16),
        &journal::Options::new(dir.path().join("j")),
    )
    .expect("create");
    // A journal compacted once: the joiner folds a snapshot, then a tail.
    let mut next = 0;
    while next < 300 {
        publish_raw(&mut p, &mut next, keys);
    }
    compact_raw_while_publishing(&mut p, &mut next, keys);
    assert!(journal_stat(&dir.path().join("j")).expect("stat").base >= 300);
    let mut state = State::<[u8]>::join(bus.name(), &JoinOptions::default()).expect("join");
    let wait = shmbus::Wait::For(Duration::from_secs(10));
    assert!(state.wait_for(next - 1, wait).expect("fold"));
    assert_eq!(state.poll().expect("poll"), 0);
    assert!(state.subscriber().is_live());
    assert_raw_state_is(state.state(), next, keys);
    // Lapped on its 64-slot ring across two compactions: the journal no
    // longer has what it missed, so it joins again and still ends exact.
    for _ in 0..2 {
        for _ in 0..400 {
            publish_raw(&mut p, &mut next, keys);
        }
        compact_raw_while_publishing(&mut p, &mut next, keys);
    }
    for _ in 0..100 {
        publish_raw(&mut p, &mut next, keys);
    }
    assert!(state.wait_for(next - 1, wait).expect("fold after the lap"));
    assert_eq!(state.rejoins(), 1);
    assert_raw_state_is(state.state(), next, keys);
    drop(state);
    drop(p);
    bus.finish();
    dir.finish();
}

#[test]
fn a_state_whose_rejoin_failed_rejoins_at_its_next_poll_instead_of_folding_past_the_gap() {
    let keys = 10;
    let dir = ShmDir::new("jstalestate");
    let bus = BusName::new("jstalestate");
    let journal = dir.path().join("j");
    let mut p = journal::Publisher::<[u8]>::create(
        bus.name(),
        &BusOptions::new(64).msg_size(16),
        &journal::Options::new(&journal),
    )
    .expect("create");
    let mut next = 0;
    while next < 100 {
        publish_raw(&mut p, &mut next, keys);
    }
    let mut state = State::<[u8]>::join(bus.name(), &JoinOptions::default()).expect("join");
    let wait = shmbus::Wait::For(Duration::from_secs(10));
    assert!(state.wait_for(next - 1, wait).expect("fold"));
    // Lapped across two compactions, so only a rejoin repairs it; and the
    // rejoin fails, the journal being away.
    for _ in 0..2 {
        for _ in 0..400 {
            publish_raw(&mut p, &mut next, keys);
        }
        compact_raw_while_publishing(&mut p, &mut next, keys);
    }
    let away = dir.path().join("j.away");
    std::fs::rename(&journal, &away).expect("move the journal away");
    assert!(state.poll().is_err(), "a rejoin without its journal failed");
    std::fs::rename(&away, &journal).expect("move it back");
    // One more update, of one key: a state that folded it past the gap
    // would miss the other keys' updates in the gap.
    publish_raw(&mut p, &mut next, keys);
    assert!(
        state
            .wait_for(next - 1, wait)
            .expect("fold after the rejoin")
    );
    assert_eq!(state.rejoins(), 1);
    assert_raw_state_is(state.state(), next, keys);
    drop(state);
    drop(p);
    bus.finish();
    dir.finish();
}

#[test]
fn a_compaction_file_left_by_a_dead_publisher_is_removed_by_the_next_one() {
    let (dir, bus, p) = journaled("jleftover", 10, 3);
    let leftover = dir.path().join("j.compacting");
    std::fs::write(&leftover, b"half a compaction").expect("write");
    let no_fork = common::no_spawn_in_flight();
    drop(p);
    let p = journal::Publisher::<Kv>::attach(bus.name(), &OpenOptions::default()).expect("attach");
    drop(no_fork);
    assert!(!leftover.exists());
    assert_eq!(p.next_sequence(), 10);
    drop(p);
    bus.finish();
    dir.finish();
}

// ---------------------------------------------------------------------------
// Journal hardening.

/// Update `i` of two keys: sequence `i` sets key `i % 2` to `i`.
fn two_keys(i: u64) -> Kv {
    Kv { key: i % 2, val: i }
}

/// (records, snapshot records, base, next) of the journal at `path`.
fn journal_figures(path: &Path) -> (u64, u64, u64, u64) {
    let st = journal_stat(path).expect("stat");
    (st.records, st.snapshot, st.base, st.next)
}

/// Joins `bus` and folds everything the journal and the ring have.
fn joined_state(bus: &str) -> KeyedState<Kv> {
    let mut sub = journal::Subscriber::<Kv>::join(bus, &JoinOptions::default()).expect("join");
    let mut state = KeyedState::new();
    while let Some(r) = sub.try_recv() {
        match r {
            Received::Message(e) => state.apply(e.seq, e.msg),
            Received::Lagged { skipped } => panic!("lagged {skipped}"),
        }
    }
    state
}

#[test]
fn a_publisher_dropped_with_a_compaction_pending_leaves_the_journal_compacted_and_short_sessions_stay_bounded()
 {
    let (dir, bus, mut p) = journaled("jdropcompact", 0, 2);
    let path = dir.path().join("j");
    p.compact_after(Some(5));
    for i in 0..5 {
        p.publish(&two_keys(i)).expect("publish");
    }
    // The fifth publish started a compaction; no publish follows to switch
    // it in, so the drop must.
    let no_fork = common::no_spawn_in_flight();
    drop(p);
    drop(no_fork);
    assert_eq!(journal_figures(&path), (2, 2, 5, 5), "one record per key");
    // Sessions of one message each: the count since the last compaction is
    // the file's (records from its base on), so every fifth one compacts,
    // and at rest the file holds at most keys + 4 records.
    for i in 5..45 {
        let no_fork = common::no_spawn_in_flight();
        let mut p =
            journal::Publisher::<Kv>::attach(bus.name(), &OpenOptions::default()).expect("attach");
        drop(no_fork);
        p.compact_after(Some(5));
        assert_eq!(p.publish(&two_keys(i)).expect("publish"), i);
        let no_fork = common::no_spawn_in_flight();
        drop(p);
        drop(no_fork);
        let (records, snapshot, _, next) = journal_figures(&path);
        assert_eq!(next, i + 1);
        assert_eq!(snapshot, 2, "after session {i}");
        assert!(records <= 2 + 4, "{records} records after session {i}");
    }
    let state = joined_state(bus.name());
    assert_eq!(
        (state.get(0).map(|m| m.val), state.get(1).map(|m| m.val)),
        (Some(44), Some(43))
    );
    assert!(!dir.path().join("j.compacting").exists());
    bus.finish();
    dir.finish();
}

#[test]
fn closing_a_publisher_switches_in_its_pending_compaction_before_it_returns() {
    let (dir, bus, mut p) = journaled("jclose", 0, 2);
    let path = dir.path().join("j");
    for i in 0..100 {
        p.publish(&two_keys(i)).expect("publish");
    }
    assert!(p.compact());
    let no_fork = common::no_spawn_in_flight();
    p.close().expect("close");
    drop(no_fork);
    assert_eq!(journal_figures(&path), (2, 2, 100, 100));
    assert!(!dir.path().join("j.compacting").exists());
    // Below the threshold, close leaves the records as they are.
    let no_fork = common::no_spawn_in_flight();
    let mut p =
        journal::Publisher::<Kv>::attach(bus.name(), &OpenOptions::default()).expect("attach");
    drop(no_fork);
    p.compact_after(Some(5));
    for i in 100..104 {
        p.publish(&two_keys(i)).expect("publish");
    }
    let no_fork = common::no_spawn_in_flight();
    p.close().expect("close");
    drop(no_fork);
    assert_eq!(journal_figures(&path), (6, 2, 100, 104));
    let state = joined_state(bus.name());
    assert_eq!(state.get(0).map(|m| m.val), Some(102));
    assert_eq!(state.get(1).map(|m| m.val), Some(103));
    bus.finish();
    dir.finish();
}

/// Plants `kind` ("fifo", "device", "symlink") at `path`; false if this
/// user may not (a device needs root).
fn plant(kind: &str, path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("no NUL");
    match kind {
        "fifo" => {
            // SAFETY: `c` is a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o666) }, 0, "mkfifo");
            true
        }
        "device" => {
            // The device /dev/null is (1, 3).
            // SAFETY: `c` is a valid NUL-terminated path.
            let r = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
            r == 0
        }
        "symlink" => {
            // To a whole, valid journal: followed, it would be read.
            let target = path.with_extension("elsewhere");
            std::os::unix::fs::symlink(&target, path).expect("symlink");
            true
        }
        other => panic!("unknown kind {other}"),
    }
}

/// What each opener of a journal said, one word each (spaces as `~`).
#[test]
fn as_child_open_a_planted_journal() {
    role("jplanted", || {
        let bus: String = param("SHMBUS_BUS");
        let path: String = param("SHMBUS_JOURNAL");
        let word = |e: &dyn std::fmt::Display| e.to_string().replace(' ', "~");
        let stat = match journal_stat(Path::new(&path)) {
            Err(journal::OpenError::NotRegular { .. }) => "typed".to_owned(),
            Err(e) => word(&e),
            Ok(_) => "read".to_owned(),
        };
        let stat_text = journal_stat(Path::new(&path)).map_or_else(|e| word(&e), |_| "read".into());
        let join = match journal::Subscriber::<Kv>::join(&bus, &JoinOptions::default()) {
            Err(e) => word(&e),
            Ok(_) => "joined".to_owned(),
        };
        let attach = match journal::Publisher::<Kv>::attach(&bus, &OpenOptions::default()) {
            Err(e) => word(&e),
            Ok(_) => "attached".to_owned(),
        };
        print_result(&[
            ("typed", stat),
            ("stat", stat_text),
            ("join", join),
            ("attach", attach),
        ]);
    });
}

#[test]
fn a_fifo_a_device_or_a_symlink_at_the_journal_path_is_refused_at_once_naming_what_was_found() {
    let (dir, bus, p) = journaled("jplanted", 10, 3);
    let no_fork = common::no_spawn_in_flight();
    drop(p);
    drop(no_fork);
    let path = dir.path().join("j");
    std::fs::copy(&path, path.with_extension("elsewhere")).expect("copy the journal");
    for (kind, found) in [
        ("fifo", "a FIFO"),
        ("device", "a character device"),
        ("symlink", "a symlink"),
    ] {
        std::fs::remove_file(&path).expect("remove the journal");
        if !plant(kind, &path) {
            common::skip(
                common::Need::Root,
                format!("{kind}: only root may make a device here"),
            );
            continue;
        }
        // Under a watchdog: a reader that blocks in open(2) fails the test.
        let f = common::spawn_child_with_deadline(
            "as_child_open_a_planted_journal",
            "jplanted",
            &[
                ("SHMBUS_BUS", bus.name().to_owned()),
                ("SHMBUS_JOURNAL", path.to_str().expect("utf-8").to_owned()),
            ],
            Duration::from_secs(15),
        )
        .wait_success();
        let r = f.result();
        assert_eq!(r.get::<String>("typed"), "typed", "{kind}: {}", f.output());
        let want = format!("{}:~is~{}", path.display(), found.replace(' ', "~"));
        for op in ["stat", "join", "attach"] {
            let said: String = r.get(op);
            assert!(
                said.contains(&want),
                "{kind}: {op} said {said:?}, not {want:?}"
            );
        }
        std::fs::remove_file(&path).expect("remove what was planted");
        std::fs::copy(path.with_extension("elsewhere"), &path).expect("restore the journal");
    }
    bus.finish();
    dir.finish();
}

/// Creates a journaled bus under umask 027, compacts its journal after a
/// close and after an attach, and reports every file's mode.
#[test]
fn as_child_make_a_journal_under_umask_027() {
    role("jumask", || {
        use std::os::unix::fs::PermissionsExt;
        // SAFETY: umask only changes this (single-test) process's mask.
        unsafe { libc::umask(0o027) };
        let bus: String = param("SHMBUS_BUS");
        let path = std::path::PathBuf::from(param::<String>("SHMBUS_JOURNAL"));
        let mode: u32 = param("SHMBUS_FILE_MODE");
        let opts = BusOptions::new(64);
        let opts = if mode == 0 { opts } else { opts.mode(mode) };
        let mode_of = |p: &Path| {
            std::fs::metadata(p).map_or("missing".to_owned(), |m| {
                format!("{:o}", m.permissions().mode() & 0o777)
            })
        };
        let mut p = journal::Publisher::<Kv>::create(&bus, &opts, &journal::Options::new(&path))
            .expect("create");
        let created = mode_of(&path);
        for i in 0..10 {
            p.publish(&two_keys(i)).expect("publish");
        }
        assert!(p.compact());
        p.close().expect("close");
        let compacted = mode_of(&path);
        let prev = mode_of(&side_files(&path)[1]);
        let mut p =
            journal::Publisher::<Kv>::attach(&bus, &OpenOptions::default()).expect("attach");
        for i in 10..20 {
            p.publish(&two_keys(i)).expect("publish");
        }
        assert!(p.compact());
        p.close().expect("close");
        let (records, ..) = journal_figures(&path);
        let reattached = mode_of(&path);
        let bus_path = Path::new("/dev/shm").join(&bus);
        let bus_mode = mode_of(&bus_path);
        // A new bus over the same journal: its creator's mode is the journal's.
        // A journal others could write (0666) is not continued by a bus
        // that lets fewer write (0640): its records may not be the owner's.
        // Made private again by its owner, it is.
        std::fs::remove_file(&bus_path).expect("remove the bus");
        let again = BusOptions::new(64).mode(0o640);
        let refused =
            match journal::Publisher::<Kv>::create(&bus, &again, &journal::Options::new(&path)) {
                Err(journal::CreateError::Journal(journal::OpenError::NotOwned { .. })) => {
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                        .expect("chmod");
                    true
                }
                Err(e) => panic!("create again: {e}"),
                Ok(p) => {
                    p.close().expect("close");
                    std::fs::remove_file(&bus_path).expect("remove the bus");
                    false
                }
            };
        let p = journal::Publisher::<Kv>::create(&bus, &again, &journal::Options::new(&path))
            .expect("create again");
        assert_eq!(p.next_sequence(), 20);
        p.close().expect("close");
        print_result(&[
            ("records", records.to_string()),
            ("created", created),
            ("compacted", compacted),
            ("prev", prev),
            ("reattached", reattached),
            ("bus", bus_mode),
            ("recreated", mode_of(&path)),
            ("refused_narrower", refused.to_string()),
        ]);
    });
}

#[test]
fn a_journal_and_every_file_its_compaction_makes_get_exactly_the_bus_mode_whatever_the_umask() {
    for (mode, want) in [(0o666u32, "666"), (0, "600")] {
        let dir = ShmDir::new("jumask");
        let bus = BusName::new("jumask");
        let f = common::spawn_child_with_deadline(
            "as_child_make_a_journal_under_umask_027",
            "jumask",
            &[
                ("SHMBUS_BUS", bus.name().to_owned()),
                (
                    "SHMBUS_JOURNAL",
                    dir.path().join("j").to_str().expect("utf-8").to_owned(),
                ),
                ("SHMBUS_FILE_MODE", mode.to_string()),
            ],
            Duration::from_secs(30),
        )
        .wait_success();
        let r = f.result();
        for file in ["bus", "created", "compacted", "prev", "reattached"] {
            assert_eq!(
                r.get::<String>(file),
                want,
                "{file} with mode {mode:o}: {}",
                f.output()
            );
        }
        assert_eq!(
            r.get::<u64>("records"),
            2,
            "compacted to one record per key"
        );
        assert_eq!(r.get::<String>("recreated"), "640", "{}", f.output());
        assert_eq!(
            r.get::<bool>("refused_narrower"),
            mode == 0o666,
            "{}",
            f.output()
        );
        bus.finish();
        dir.finish();
    }
}

#[test]
fn a_journal_started_from_another_ones_replay_gives_a_late_joiner_the_same_state() {
    // The upstream: keyed updates, compacted, more after the cut.
    let (keys, n) = (50u64, 4_000u64);
    let (dir, bus, mut p) = journaled("jseed-up", n / 2, keys);
    assert!(p.compact());
    let mut i = n / 2;
    let deadline = Instant::now() + Duration::from_secs(60);
    while p.is_compacting() || i < n {
        p.publish(&kv(i, keys)).expect("publish");
        i += 1;
        assert!(Instant::now() < deadline, "compaction not finished");
    }
    // Its replay, as a bridge receives it: the snapshot (sequences that
    // skip) and then every sequence from the cut.
    let mut replay = Vec::new();
    let mut up =
        journal::Subscriber::<[u8]>::join(bus.name(), &JoinOptions::default()).expect("join");
    while !up.is_live() {
        if let Some(Received::Message(e)) = up.recv(shmbus::Wait::Never) {
            replay.push((e.seq, e.msg.to_vec()));
        }
    }
    assert_eq!(replay.last().map(|r| r.0), Some(i - 1));
    // Split after the last hole: before it the snapshot, from it the run.
    let cut = (1..replay.len())
        .rev()
        .find(|&k| replay[k].0 != replay[k - 1].0 + 1)
        .unwrap_or(0);
    let run = replay.split_off(cut);
    let mirror = BusName::new("jseed-down");
    let journal = journal::Options::new(dir.path().join("mirror")).snapshot(replay.clone());
    let mut m = journal::Publisher::<[u8]>::create(
        mirror.name(),
        &BusOptions::new(64)
            .msg_size(16)
            .message_type("test.Kv", 8)
            .first_sequence(run[0].0),
        &journal,
    )
    .expect("create the mirror");
    for (seq, msg) in &run {
        assert_eq!(m.publish(msg).expect("publish"), *seq);
    }
    let joined = join_and_check(mirror.name(), i, keys);
    assert_eq!(joined.state.digest(), expected_state(i, keys).digest());

    // Misuse: out of order, too long, over an existing journal.
    let bad = |records: Vec<(u64, Vec<u8>)>, path: &str| {
        let name = BusName::new("jseed-bad");
        let r = journal::Publisher::<[u8]>::create(
            name.name(),
            &BusOptions::new(8)
                .msg_size(16)
                .message_type("test.Kv", 8)
                .first_sequence(10),
            &journal::Options::new(dir.path().join(path)).snapshot(records),
        );
        let e = match r {
            Err(journal::CreateError::Snapshot(e)) => e,
            other => panic!("expected a snapshot error, got {:?}", other.map(|_| ())),
        };
        assert!(!std::path::Path::new(name.name()).exists(), "no bus left");
        e
    };
    assert!(matches!(
        bad(vec![(4, vec![1]), (4, vec![2])], "b1"),
        SnapshotError::Order { index: 1, .. }
    ));
    assert!(matches!(
        bad(vec![(10, vec![1])], "b2"),
        SnapshotError::Order {
            index: 0,
            seq: 10,
            ..
        }
    ));
    assert!(matches!(
        bad(vec![(1, vec![0; 17])], "b3"),
        SnapshotError::TooLong { len: 17, .. }
    ));
    assert!(matches!(
        bad(vec![(1, vec![1])], "mirror"),
        SnapshotError::Exists { .. }
    ));
    drop(m);
    drop(p);
    mirror.finish();
    bus.finish();
    dir.finish();
}

/// A group that is not this process's: files made by it get this process's
/// egid unless given another.
const OTHER_GID: u32 = 65534;

#[test]
fn a_journaled_bus_its_journal_and_each_compaction_s_file_get_the_group_asked_for() {
    use std::os::unix::fs::MetadataExt;
    if !rustix::process::geteuid().is_root() || rustix::process::getegid().as_raw() == OTHER_GID {
        // Only root may give a file a group it is not in.
        common::skip(
            common::Need::Root,
            format!("needs root with an egid other than {OTHER_GID}"),
        );
        return;
    }
    let dir = ShmDir::new("F-group");
    let bus = BusName::new("F-group");
    let journal = dir.path().join("j");
    let mut p = journal::Publisher::<Kv>::create(
        bus.name(),
        &BusOptions::new(64).group(OTHER_GID).mode(0o640),
        &journal::Options::new(&journal),
    )
    .expect("create");
    let of = |path: &Path| {
        let m = std::fs::metadata(path).expect("stat");
        (m.gid(), m.mode() & 0o7777, m.ino())
    };
    let (bus_gid, bus_mode, _) = of(bus.path());
    let (j_gid, j_mode, before) = of(&journal);
    assert_eq!((bus_gid, bus_mode), (OTHER_GID, 0o640), "the bus file");
    assert_eq!((j_gid, j_mode), (OTHER_GID, 0o640), "the journal");
    for val in 0..4 {
        p.publish(&Kv { key: 1, val }).expect("publish");
    }
    assert!(p.compact(), "a compaction starts");
    p.close().expect("close switches the compaction in");
    let (c_gid, c_mode, after) = of(&journal);
    assert_ne!(before, after, "the journal is the compaction's new file");
    assert_eq!((c_gid, c_mode), (OTHER_GID, 0o640), "the compacted journal");
    bus.finish();
    dir.finish();
}
