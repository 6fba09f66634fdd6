//! Chaos: real processes killed with SIGKILL at random points while others
//! keep working, and the figures that must hold afterwards: torn messages
//! delivered = 0, delivered + skipped == published exactly, no reader past
//! its bound, every restarted publisher one epoch up.
//!
//! Every random choice comes from one seed: `SHMBUS_CHAOS_SEED` or a fixed
//! default, printed by each test, so a failure is replayed by running the
//! test again with that variable set. `SHMBUS_CHAOS_ROUNDS` scales the
//! number of kills (for a longer local run).
//!
//! Adding a case (a journal writer killed mid-append, an MPMC publisher
//! killed between claim and commit): an `as_child_*` entry that sets up,
//! calls `common::print_ready`, then works until killed; and a test that
//! hands `kill_loop` a closure spawning that child and one checking what
//! the survivors see after each kill. The loop does the seeding, the random
//! timing, the kill and the watchdog.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use bytemuck::{Pod, Zeroable};
use common::{
    BusName, Finished, ShmDir, Watched, param, print_result, process_state, role, spawn_child,
    splitmix,
};
use shmbus::bus::ManyPublisher;
use shmbus::stat;
use shmbus::wire;
use shmbus::{
    AttachError, BusOptions, OpenError, OpenOptions, Publisher, Received, Start, Subscriber,
    WaitStrategy,
};

// ---------------------------------------------------------------------------
// The harness.

/// The default seed; any other is given with SHMBUS_CHAOS_SEED.
const DEFAULT_SEED: u64 = 0x5eed_c4a0_5b05;

/// A seeded source of the random choices of one test.
struct Chaos {
    state: u64,
}

impl Chaos {
    /// The test's generator: the run's seed mixed with the test's name, so
    /// tests differ but each replays alone. Prints how to replay.
    fn new(test: &str) -> Chaos {
        let seed = std::env::var("SHMBUS_CHAOS_SEED")
            .ok()
            .map(|s| {
                let s = s.trim();
                s.strip_prefix("0x")
                    .map_or_else(|| s.parse(), |hex| u64::from_str_radix(hex, 16))
                    .unwrap_or_else(|e| panic!("SHMBUS_CHAOS_SEED={s:?}: {e}"))
            })
            .unwrap_or(DEFAULT_SEED);
        println!("chaos {test}: seed {seed:#x} (replay with SHMBUS_CHAOS_SEED={seed:#x})");
        Chaos {
            state: seed ^ wire::fnv1a(test.as_bytes()),
        }
    }

    fn next(&mut self) -> u64 {
        self.state = splitmix(self.state);
        self.state
    }

    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Uniform in `[0, max)`, to the microsecond.
    fn delay(&mut self, max: Duration) -> Duration {
        Duration::from_micros(self.below(max.as_micros().max(1) as u64))
    }
}

/// Sets its flag when dropped, so a helper thread in a `thread::scope`
/// stops when the test's own thread panics (and the scope can end).
struct StopOnDrop<'a>(&'a std::sync::atomic::AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Kills per loop: `default` times SHMBUS_TEST_SCALE, never below `floor`
/// (the fewest kills that still land in every window the test names), or
/// exactly SHMBUS_CHAOS_ROUNDS.
fn rounds(default: u64, floor: u64) -> u64 {
    std::env::var("SHMBUS_CHAOS_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| common::scale_min(default, floor))
}

/// The loop every kill case shares: `rounds` times, start a child with
/// `spawn(round)`, wait for its READY line, let it run for a random time
/// below `max_run`, SIGKILL it, and give `after` the round and what the
/// child left (its output; it died of SIGKILL, or the test fails: a child
/// that found a fault exits with an error before the kill).
fn kill_loop(
    chaos: &mut Chaos,
    rounds: u64,
    max_run: Duration,
    mut spawn: impl FnMut(u64) -> Watched,
    mut after: impl FnMut(u64, Finished),
) {
    for round in 0..rounds {
        let mut child = spawn(round);
        child.wait_ready();
        std::thread::sleep(chaos.delay(max_run));
        child.check_alive("the kill");
        let f = child.kill();
        assert_eq!(
            f.signal(),
            Some(libc::SIGKILL),
            "round {round}: the child did not die of the kill\n{}",
            f.output()
        );
        after(round, f);
    }
}

// ---------------------------------------------------------------------------
// Messages that carry their sequence, their publisher's epoch and a check
// over both, so a torn mix of two is always caught.

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Stamp {
    seq: u64,
    epoch: u64,
    check: [u64; 30],
}

impl shmbus::Message for Stamp {
    const NAME: &'static str = "test.Stamp";
}

/// The epoch of the message that tells subscribers to stop.
const END: u64 = u64::MAX;

impl Stamp {
    fn new(seq: u64, epoch: u64) -> Stamp {
        let mut check = [0; 30];
        for (i, w) in check.iter_mut().enumerate() {
            *w = splitmix(seq ^ epoch.rotate_left(32) ^ (i as u64) << 56);
        }
        Stamp { seq, epoch, check }
    }

    fn whole(&self) -> bool {
        Stamp::new(self.seq, self.epoch).check == self.check
    }
}

/// How long a subscriber waits in one `recv_timeout`: short, so that it
/// times out while no publisher is alive, and its bound is measured.
const RECV_BOUND: Duration = Duration::from_millis(2);

/// How far past its timeout a `recv_timeout` may return on a loaded
/// two-core machine before the test calls it blocked: a generous bound on
/// scheduling delay, not a performance figure.
const LATE_LIMIT: Duration = Duration::from_secs(1);

fn strategy(name: &str) -> WaitStrategy {
    match name {
        "busy" => WaitStrategy::BusySpin,
        "yield" => WaitStrategy::SpinYield {
            spin: Duration::from_micros(20),
        },
        "futex" => WaitStrategy::SpinFutex {
            spin: Duration::from_micros(5),
        },
        other => panic!("unknown wait strategy {other}"),
    }
}

/// A subscriber's figures.
#[derive(Default)]
struct Tally {
    delivered: u64,
    skipped: u64,
    lags: u64,
    torn: u64,
    wrong_seq: u64,
    epoch_backwards: u64,
    last_epoch: u64,
    timeouts: u64,
    worst_late: Duration,
}

impl Tally {
    fn take(&mut self, pos: u64, m: &Stamp) {
        self.delivered += 1;
        if !m.whole() {
            self.torn += 1;
        } else if m.seq != pos {
            self.wrong_seq += 1;
        } else if m.epoch != END {
            self.epoch_backwards += u64::from(m.epoch < self.last_epoch);
            self.last_epoch = self.last_epoch.max(m.epoch);
        }
    }

    /// As `take`, on a many-publisher bus: a Stamp's epoch names its
    /// publisher and its seq counts that publisher's messages, so the order
    /// is checked per publisher (`per`), not against the position.
    fn take_many(&mut self, per: &mut PerPublisher, m: &Stamp) {
        self.delivered += 1;
        if !m.whole() {
            self.torn += 1;
        } else if m.epoch != END {
            self.wrong_seq += u64::from(!per.take(m));
        }
    }

    fn fields(&self, start: u64, end: u64) -> Vec<(&'static str, String)> {
        vec![
            ("start", start.to_string()),
            ("end", end.to_string()),
            ("delivered", self.delivered.to_string()),
            ("skipped", self.skipped.to_string()),
            ("lags", self.lags.to_string()),
            ("torn", self.torn.to_string()),
            ("wrong_seq", self.wrong_seq.to_string()),
            ("epoch_backwards", self.epoch_backwards.to_string()),
            ("last_epoch", self.last_epoch.to_string()),
            ("timeouts", self.timeouts.to_string()),
            ("worst_late_us", self.worst_late.as_micros().to_string()),
        ]
    }
}

/// A subscriber's view of each publisher of a many-publisher bus (the
/// epoch of a `Stamp` names it): the next sequence it expects from each,
/// how many it got from each, and the sequences it never got.
#[derive(Default)]
struct PerPublisher {
    next: std::collections::BTreeMap<u64, u64>,
    got: std::collections::BTreeMap<u64, u64>,
    gaps: u64,
}

impl PerPublisher {
    /// Takes `m`; false if it repeats or goes back on its publisher's
    /// order.
    fn take(&mut self, m: &Stamp) -> bool {
        let next = self.next.entry(m.epoch).or_insert(0);
        if m.seq < *next {
            return false;
        }
        self.gaps += m.seq - *next;
        *next = m.seq + 1;
        *self.got.entry(m.epoch).or_insert(0) += 1;
        true
    }

    /// `epoch=got` for each publisher, as one field.
    fn field(&self) -> String {
        let each: Vec<String> = self.got.iter().map(|(e, n)| format!("{e}={n}")).collect();
        each.join(",")
    }
}

/// The inverse of [`PerPublisher::field`].
fn per_publisher(field: &str) -> std::collections::BTreeMap<u64, u64> {
    field
        .split(',')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let (e, n) = w.split_once('=').expect("epoch=count");
            (e.parse().expect("epoch"), n.parse().expect("count"))
        })
        .collect()
}

/// Receives until the END message, checking each message, and prints the
/// tally. A torn message fails the child at once (so a victim that sees one
/// exits with an error before the parent's kill).
#[test]
fn as_child_subscribe_until_the_end_message() {
    role("chaos_sub", || {
        let name: String = param("SHMBUS_BUS");
        let opts = OpenOptions::default()
            .start(Start::Oldest)
            .wait_strategy(strategy(&param::<String>("SHMBUS_WAIT")));
        let mut sub = Subscriber::<Stamp>::open(&name, &opts).expect("open subscriber");
        let start = sub.position();
        common::print_ready();
        let mut t = Tally::default();
        loop {
            let pos = sub.position();
            let asked = Instant::now();
            match sub.recv(shmbus::Wait::For(RECV_BOUND)) {
                Some(Received::Message(m)) => {
                    t.take(pos, &m);
                    assert_eq!(t.torn + t.wrong_seq, 0, "bad message at {pos}");
                    if m.epoch == END {
                        break;
                    }
                }
                Some(Received::Lagged { skipped }) => {
                    t.lags += 1;
                    t.skipped += skipped;
                }
                None => {
                    t.timeouts += 1;
                    t.worst_late = t.worst_late.max(asked.elapsed().saturating_sub(RECV_BOUND));
                }
            }
        }
        print_result(&t.fields(start, sub.position()));
    });
}

fn spawn_subscriber(bus: &BusName, wait: &str) -> Watched {
    spawn_subscriber_for(bus, wait, common::CHILD_DEADLINE)
}

fn spawn_subscriber_for(bus: &BusName, wait: &str, deadline: Duration) -> Watched {
    common::spawn_child_with_deadline(
        "as_child_subscribe_until_the_end_message",
        "chaos_sub",
        &[
            ("SHMBUS_BUS", bus.name().to_owned()),
            ("SHMBUS_WAIT", wait.to_owned()),
        ],
        deadline,
    )
}

/// Checks a surviving subscriber's figures against the bus's final head
/// (the END message is `head - 1`) and prints them.
fn check_survivor(f: Finished, head: u64, last_epoch: u64) {
    let r = f.result();
    let who = format!("subscriber pid {}", f.pid);
    let (start, end): (u64, u64) = (r.get("start"), r.get("end"));
    let (delivered, skipped): (u64, u64) = (r.get("delivered"), r.get("skipped"));
    println!(
        "{who}: delivered {delivered} + skipped {skipped} (in {} lags) of {} published; torn {}, \
         wrong sequence {}, epoch backwards {}, timeouts {}, worst late {} us",
        r.get::<u64>("lags"),
        end - start,
        r.get::<u64>("torn"),
        r.get::<u64>("wrong_seq"),
        r.get::<u64>("epoch_backwards"),
        r.get::<u64>("timeouts"),
        r.get::<u64>("worst_late_us"),
    );
    assert_eq!(r.get::<u64>("torn"), 0, "{who}: torn messages delivered");
    assert_eq!(r.get::<u64>("wrong_seq"), 0, "{who}: wrong sequence");
    assert_eq!(r.get::<u64>("epoch_backwards"), 0, "{who}: epoch went back");
    assert_eq!(end, head, "{who}: ended after the END message");
    assert_eq!(delivered + skipped, end - start, "{who}: lost count");
    assert_eq!(r.get::<u64>("last_epoch"), last_epoch, "{who}: last epoch");
    let late = Duration::from_micros(r.get("worst_late_us"));
    assert!(late < LATE_LIMIT, "{who}: a receive returned {late:?} late");
}

// ---------------------------------------------------------------------------
// 1. A publisher killed mid-stream, again and again.

/// Attaches as publisher, reports its epoch and first sequence, then
/// publishes in bursts of random length with pauses between (so futex
/// subscribers fall asleep and are woken) until killed.
#[test]
fn as_child_attach_and_publish_until_killed() {
    role("chaos_pub", || {
        let name: String = param("SHMBUS_BUS");
        let mut rng = Chaos {
            state: param("SHMBUS_SEED"),
        };
        let mut p = Publisher::<Stamp>::attach(&name, &OpenOptions::default()).expect("attach");
        let epoch = p.epoch();
        print_result(&[
            ("epoch", epoch.to_string()),
            ("next", p.next_sequence().to_string()),
        ]);
        common::print_ready();
        let parent = std::os::unix::process::parent_id();
        loop {
            for _ in 0..rng.below(512) {
                p.publish(&Stamp::new(p.next_sequence(), epoch));
            }
            if rng.below(4) == 0 {
                std::thread::sleep(Duration::from_micros(rng.below(300)));
            }
            if std::os::unix::process::parent_id() != parent {
                std::process::exit(3);
            }
        }
    });
}

/// Where sequence `seq`'s stamp is in the file.
fn stamp_offset(st: &stat::BusStat, seq: u64) -> u64 {
    st.raw_header().data_offset
        + (seq & (st.raw_header().capacity - 1)) * u64::from(st.raw_header().slot_size)
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_publisher_killed_200_times_mid_stream_never_tears_a_message_nor_miscounts_a_loss() {
    let mut chaos = Chaos::new("publisher_killed");
    let bus = BusName::new("chaos-pub");
    drop(Publisher::<Stamp>::create(bus.name(), &BusOptions::new(64)).expect("create"));
    let mut subscribers: Vec<Watched> = ["futex", "yield", "futex"]
        .iter()
        .map(|w| spawn_subscriber(&bus, w))
        .collect();
    for s in &mut subscribers {
        s.wait_ready();
    }

    // At least 20 kills, each followed by a successor that must resume.
    let n = rounds(200, 20);
    let (mut after_complete, mut after_torn_write, mut published) = (0u64, 0u64, 0u64);
    // What the next publisher must resume at, from the file after a kill.
    let mut expect_next = 0u64;
    kill_loop(
        &mut chaos,
        n,
        Duration::from_millis(3),
        |round| {
            spawn_child(
                "as_child_attach_and_publish_until_killed",
                "chaos_pub",
                &[
                    ("SHMBUS_BUS", bus.name().to_owned()),
                    ("SHMBUS_SEED", splitmix(round ^ 0xabc).to_string()),
                ],
            )
        },
        |round, f| {
            let r = f.result();
            assert_eq!(
                r.get::<u64>("epoch"),
                round + 2,
                "epoch after {round} kills"
            );
            assert_eq!(
                r.get::<u64>("next"),
                expect_next,
                "round {round}: resumed at"
            );
            let st = stat::stat(bus.name()).expect("stat");
            assert!(
                !st.publisher_alive,
                "the kernel dropped the dead one's lock"
            );
            published = st.head;
            // The next publisher resumes after a message whose stamp is
            // complete (the kill came between stamp and cursor), or at it
            // if the kill came mid-write.
            let stamp = common::read_u64_at(bus.path(), stamp_offset(&st, st.head));
            expect_next = if stamp == 2 * st.head + 2 {
                after_complete += 1;
                st.head + 1
            } else {
                after_torn_write += u64::from(stamp == 2 * st.head + 1);
                st.head
            };
        },
    );

    // One more publisher, here: it resumes where the file says, one epoch
    // up, and sends the END message.
    let mut last = Publisher::<Stamp>::attach(bus.name(), &OpenOptions::default()).expect("attach");
    assert_eq!(last.epoch(), n + 2);
    assert_eq!(last.next_sequence(), expect_next);
    last.publish(&Stamp::new(last.next_sequence(), END));
    let head = last.next_sequence();
    println!(
        "{n} publishers killed; {published} messages published before the last kill; \
         {after_complete} kills between a stamp and the cursor, {after_torn_write} mid-write"
    );
    for s in subscribers {
        check_survivor(s.wait_success(), head, n + 1);
    }
    drop(last);
    bus.finish();
}

// ---------------------------------------------------------------------------
// 2. Subscribers killed at random while a publisher and other subscribers
// carry on.

#[test]
#[cfg_attr(miri, ignore)]
fn subscribers_killed_at_random_harm_neither_the_publisher_nor_the_other_subscribers() {
    let mut chaos = Chaos::new("subscribers_killed");
    let bus = BusName::new("chaos-sub");
    let mut publisher =
        Publisher::<Stamp>::create(bus.name(), &BusOptions::new(32)).expect("create");
    let mut survivors: Vec<Watched> = ["futex", "yield"]
        .iter()
        .map(|w| spawn_subscriber(&bus, w))
        .collect();
    for s in &mut survivors {
        s.wait_ready();
    }
    let survivor_pids: Vec<u32> = survivors.iter().map(Watched::pid).collect();

    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut victims = 0u64;
    std::thread::scope(|scope| {
        let stop = &stop;
        let stopper = StopOnDrop(stop);
        let publisher = &mut publisher;
        let pacer = scope.spawn(move || {
            let mut rng = Chaos { state: 7 };
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for _ in 0..rng.below(256) {
                    publisher.publish(&Stamp::new(publisher.next_sequence(), 1));
                }
                std::thread::sleep(Duration::from_micros(rng.below(200)));
            }
        });
        let waits = ["busy", "yield", "futex"];
        kill_loop(
            &mut chaos,
            // At least 6: each of the three waits killed twice.
            rounds(60, 6),
            Duration::from_millis(20),
            |round| spawn_subscriber(&bus, waits[round as usize % waits.len()]),
            |round, f| {
                victims += 1;
                // The dead subscriber's registry entry is free again.
                let mut live: Vec<u32> = stat::stat(bus.name())
                    .expect("stat")
                    .subscribers
                    .iter()
                    .map(|l| l.pid)
                    .collect();
                live.sort_unstable();
                assert!(
                    !live.contains(&f.pid),
                    "round {round}: dead subscriber {} still registered: {live:?}",
                    f.pid
                );
            },
        );
        drop(stopper);
        pacer.join().expect("publisher thread");
    });
    let mut live: Vec<u32> = stat::stat(bus.name())
        .expect("stat")
        .subscribers
        .iter()
        .map(|l| l.pid)
        .collect();
    live.sort_unstable();
    let mut expected = survivor_pids.clone();
    expected.sort_unstable();
    assert_eq!(live, expected, "only the survivors are registered");

    publisher.publish(&Stamp::new(publisher.next_sequence(), END));
    let head = publisher.next_sequence();
    println!("{victims} subscribers killed while {head} messages were published");
    for s in survivors {
        check_survivor(s.wait_success(), head, 1);
    }
    drop(publisher);
    bus.finish();
}

// ---------------------------------------------------------------------------
// 3. A creator stopped, then killed, before the segment is initialized.

/// Says it is ready, creates a large bus (to be stopped and killed in the
/// middle), and idles.
#[test]
fn as_child_create_a_large_bus() {
    role("chaos_create", || {
        let name: String = param("SHMBUS_BUS");
        let capacity: u64 = param("SHMBUS_CAPACITY");
        common::print_ready();
        let p = Publisher::<u64>::create(&name, &BusOptions::new(capacity)).expect("create");
        drop(p);
        common::idle_until_killed();
    });
}

/// Slots of the creator's bus: 64 MiB, whose reservation and stamps take
/// long enough to be stopped in.
const BIG: u64 = 1 << 20;

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on a pid this test spawned and has not reaped.
    let rc = unsafe { libc::kill(pid as i32, sig) };
    assert_eq!(rc, 0, "kill {pid} {sig}");
}

/// The first 8 bytes of the file (0 if it is shorter); `None` if there is
/// no file.
fn magic_of(path: &Path) -> Option<u64> {
    use std::os::unix::fs::FileExt;
    let file = std::fs::File::open(path).ok()?;
    let mut b = [0u8; 8];
    Some(
        file.read_exact_at(&mut b, 0)
            .map_or(0, |()| u64::from_le_bytes(b)),
    )
}

/// Every opener of a half-built bus says NotInitialized within its timeout
/// (plus `LATE_LIMIT`); returns the longest any of them took.
fn every_opener_is_told_not_initialized(name: &str) -> Duration {
    let timeout = Duration::from_millis(20);
    let opts = OpenOptions::default().init_timeout(timeout);
    let mut worst = Duration::ZERO;
    for who in ["subscriber", "raw subscriber", "publisher", "stat"] {
        let t = Instant::now();
        let (r, bound) = match who {
            "subscriber" => (Subscriber::<u64>::open(name, &opts).map(drop), timeout),
            "raw subscriber" => (Subscriber::<[u8]>::open(name, &opts).map(drop), timeout),
            "publisher" => (
                match Publisher::<u64>::attach(name, &opts) {
                    Ok(_) => Ok(()),
                    Err(AttachError::Open(e)) => Err(e),
                    Err(e) => panic!("attach to a half-built bus: {e}"),
                },
                timeout,
            ),
            _ => (stat::stat(name).map(drop), Duration::from_millis(100)),
        };
        let took = t.elapsed();
        match r {
            Err(OpenError::NotInitialized { .. }) => {}
            other => panic!("{who} of a half-built bus: {other:?}"),
        }
        assert!(took < bound + LATE_LIMIT, "{who} took {took:?} to give up");
        worst = worst.max(took.saturating_sub(bound));
    }
    worst
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_creator_killed_before_the_segment_is_initialized_leaves_openers_an_error_and_clean_a_file_to_remove()
 {
    let mut chaos = Chaos::new("creator_killed");
    let dir = ShmDir::new("chaos-create");
    let bus = BusName::in_dir(dir.path(), "bus");
    let spawn = || {
        spawn_child(
            "as_child_create_a_large_bus",
            "chaos_create",
            &[
                ("SHMBUS_BUS", bus.name().to_owned()),
                ("SHMBUS_CAPACITY", BIG.to_string()),
            ],
        )
    };
    // How long a whole create takes here: the window to stop it in.
    let mut whole = spawn();
    whole.wait_ready();
    let t = Instant::now();
    common::wait_for("a whole create", &mut [&mut whole], || {
        magic_of(bus.path()) == Some(wire::MAGIC)
    });
    let create = t.elapsed();
    whole.kill();
    std::fs::remove_file(bus.path()).expect("remove the whole bus");

    // At least 20 hits (as before the scale), even with SHMBUS_CHAOS_ROUNDS.
    let want_hits = rounds(24, 20).max(20);
    let (mut hits, mut early, mut late, mut tries, mut unrecognised) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut worst_late = Duration::ZERO;
    while hits < want_hits {
        tries += 1;
        assert!(tries <= 20 * want_hits, "only {hits} hits in {tries} tries");
        let mut child = spawn();
        child.wait_ready();
        // Stop it somewhere in (a bit more than) the create.
        std::thread::sleep(chaos.delay(create + create / 4));
        signal(child.pid(), libc::SIGSTOP);
        while process_state(child.pid()) != Some('T') {
            std::thread::yield_now();
        }
        match magic_of(bus.path()) {
            None => early += 1,
            Some(wire::MAGIC) => late += 1,
            Some(magic) => {
                hits += 1;
                // Alive, if stopped: refused, and spared by clean.
                worst_late = worst_late.max(every_opener_is_told_not_initialized(bus.name()));
                assert!(
                    stat::clean(dir.path(), false).expect("clean").is_empty(),
                    "clean removed a bus its live creator is building (magic {magic:#x})"
                );
                assert!(bus.path().exists());
            }
        }
        let dead = child.kill();
        assert_eq!(dead.signal(), Some(libc::SIGKILL));
        match magic_of(bus.path()) {
            None => {}
            Some(wire::MAGIC) => std::fs::remove_file(bus.path()).expect("remove"),
            Some(magic) => {
                // Dead: still refused, and now clean's to remove.
                worst_late = worst_late.max(every_opener_is_told_not_initialized(bus.name()));
                let removed: Vec<_> = stat::clean(dir.path(), false)
                    .expect("clean")
                    .into_iter()
                    .map(|c| c.result.map(|()| c.path).expect("removed"))
                    .collect();
                if magic == wire::MAGIC_BUILDING {
                    assert_eq!(removed, vec![bus.path().to_owned()]);
                } else {
                    // Killed before it could mark the file as shmbus's.
                    assert!(removed.is_empty());
                    unrecognised += 1;
                    std::fs::remove_file(bus.path()).expect("remove");
                }
            }
        }
        assert!(!bus.path().exists());
    }
    println!(
        "creator stopped and killed mid-create {hits} times in {tries} tries ({early} before \
         the file existed, {late} after it was complete; a whole create takes {create:?}); \
         {unrecognised} leftovers without shmbus's mark; openers at most {worst_late:?} past \
         their timeout"
    );
    bus.finish();
    dir.finish();
}

// ---------------------------------------------------------------------------
// 4. Stream: the producer killed while the consumer waits, and the consumer
// killed while the producer waits.

/// Ring size of the chaos streams: small, so the producer fills it and
/// waits, and records wrap often.
const STREAM_CAP: u64 = 4096;

/// How long a waiting side may take to be told its peer was killed: it
/// checks every `stream::PEER_CHECK` (20 ms); the rest is `LATE_LIMIT`.
fn peer_gone_bound() -> Duration {
    shmbus::internals::PEER_CHECK + LATE_LIMIT
}

/// Record `idx` of producer `generation`: idx, generation, then a body whose
/// every byte depends on both. Its length is a function of both too.
fn record(generation: u64, idx: u64) -> Vec<u8> {
    let len = 16 + (splitmix(idx ^ generation << 40) % 200) as usize;
    let mut r = Vec::with_capacity(len);
    r.extend_from_slice(&idx.to_le_bytes());
    r.extend_from_slice(&generation.to_le_bytes());
    r.extend((16..len).map(|j| (idx.wrapping_mul(31) as u8) ^ (j as u8) ^ (generation as u8)));
    r
}

/// (idx, generation) of a record that is whole; `None` if it is not.
fn check_record(r: &[u8]) -> Option<(u64, u64)> {
    let word = |i: usize| -> Option<u64> {
        Some(u64::from_le_bytes(
            r.get(8 * i..8 * i + 8)?.try_into().ok()?,
        ))
    };
    let (idx, generation) = (word(0)?, word(1)?);
    (record(generation, idx) == r).then_some((idx, generation))
}

fn stream_opts() -> OpenOptions {
    OpenOptions::default().wait_strategy(WaitStrategy::SpinFutex {
        spin: Duration::from_micros(5),
    })
}

/// Attaches as producer `SHMBUS_GEN` and pushes its records 0, 1, 2, ...
/// at a random pace until killed.
#[test]
fn as_child_produce_until_killed() {
    role("chaos_producer", || {
        let name: String = param("SHMBUS_BUS");
        let generation: u64 = param("SHMBUS_GEN");
        let mut rng = Chaos { state: generation };
        let mut p =
            shmbus::stream::Producer::<[u8]>::attach(&name, &stream_opts()).expect("attach");
        common::print_ready();
        let mut idx = 0;
        loop {
            for _ in 0..rng.below(64) {
                p.push(
                    &record(generation, idx),
                    shmbus::Wait::For(common::CHILD_DEADLINE),
                )
                .expect("push");
                idx += 1;
            }
            std::thread::sleep(Duration::from_micros(rng.below(300)));
        }
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_stream_producer_killed_at_random_is_reported_to_the_waiting_consumer_and_nothing_it_committed_is_lost()
 {
    use shmbus::{
        Wait,
        stream::{Consumer, PopError, Producer},
    };
    let mut chaos = Chaos::new("stream_producer_killed");
    let bus = BusName::new("chaos-producer");
    drop(
        Producer::<[u8]>::create(bus.name(), &shmbus::stream::Options::new(STREAM_CAP))
            .expect("create"),
    );
    let mut consumer = Consumer::<[u8]>::attach(bus.name(), &stream_opts()).expect("open");
    // At least 5 kills, each followed by a successor that must resume.
    let n = rounds(30, 5);
    // The consumer, here on a thread, reports each PeerGone on `gone`.
    let (gone_tx, gone) = std::sync::mpsc::channel::<(u32, Instant)>();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (mut records, mut torn, mut out_of_order) = (0u64, 0u64, 0u64);
    let mut worst = Duration::ZERO;
    std::thread::scope(|scope| {
        let stop = &stop;
        let stopper = StopOnDrop(stop);
        let reader = scope.spawn(|| {
            let mut out = Vec::new();
            let mut last: Option<(u64, u64)> = None;
            let mut told = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                match consumer.pop(&mut out, Wait::For(Duration::from_millis(100))) {
                    Ok(()) => {
                        records += 1;
                        let Some((idx, generation)) = check_record(&out) else {
                            torn += 1;
                            continue;
                        };
                        // Each producer's records: from its first, without
                        // a gap or a repeat; generations only go forward.
                        let next = match last {
                            Some((i, g)) if g == generation => i + 1,
                            Some((_, g)) if g > generation => u64::MAX,
                            _ => 0,
                        };
                        out_of_order += u64::from(idx != next);
                        last = Some((idx, generation));
                    }
                    Err(PopError::PeerGone { pid }) => {
                        // Once per dead producer (later pops say it again
                        // until the next one attaches).
                        if pid != told {
                            told = pid;
                            // The ring is empty: everything committed arrived.
                            assert_eq!(consumer.len(), 0);
                            gone_tx.send((pid, Instant::now())).expect("report");
                        }
                    }
                    Err(PopError::TimedOut(_)) => {}
                    Err(e) => panic!("pop: {e}"),
                }
            }
        });
        kill_loop(
            &mut chaos,
            n,
            Duration::from_millis(20),
            |generation| {
                spawn_child(
                    "as_child_produce_until_killed",
                    "chaos_producer",
                    &[
                        ("SHMBUS_BUS", bus.name().to_owned()),
                        ("SHMBUS_GEN", generation.to_string()),
                    ],
                )
            },
            |round, f| {
                let killed = Instant::now();
                let (pid, when) = gone
                    .recv_timeout(peer_gone_bound() + Duration::from_secs(10))
                    .unwrap_or_else(|_| panic!("round {round}: no PeerGone"));
                assert_eq!(
                    pid, f.pid,
                    "round {round}: PeerGone names the dead producer"
                );
                let took = when.saturating_duration_since(killed);
                assert!(
                    took < peer_gone_bound(),
                    "round {round}: told after {took:?}"
                );
                worst = worst.max(took);
            },
        );
        drop(stopper);
        reader.join().expect("consumer thread");
    });
    println!(
        "{n} producers killed; {records} records popped, {torn} torn, {out_of_order} out of \
         order; PeerGone at most {worst:?} after the kill"
    );
    assert_eq!((torn, out_of_order), (0, 0));
    bus.finish();
}

/// How many records of generation 0 lie wholly before stream position
/// `head`, as the producer lays them out (a record that does not fit before
/// the ring's end goes to the start, after a wrap marker); `None` if `head`
/// is not the end of a record.
fn records_before(head: u64) -> Option<u64> {
    let (mut tail, mut count) = (0u64, 0u64);
    while tail < head {
        let size = 8 + (record(0, count).len() as u64).div_ceil(8) * 8;
        let to_end = STREAM_CAP - tail % STREAM_CAP;
        if size > to_end {
            tail += to_end;
        }
        tail += size;
        count += 1;
    }
    (tail == head).then_some(count)
}

/// Opens the consumer, pops one record and reports its index, says it is
/// ready, then pops and checks every record after it until killed.
#[test]
fn as_child_consume_until_killed() {
    role("chaos_consumer", || {
        use shmbus::{Wait, stream::Consumer};
        let name: String = param("SHMBUS_BUS");
        let mut c = Consumer::<[u8]>::attach(&name, &stream_opts()).expect("open");
        let mut out = Vec::new();
        let wait = Wait::For(common::CHILD_DEADLINE);
        c.pop(&mut out, wait).expect("first record");
        let (first, _) = check_record(&out).expect("a whole first record");
        print_result(&[("first", first.to_string())]);
        common::print_ready();
        for idx in first + 1.. {
            c.pop(&mut out, wait).expect("pop");
            assert_eq!(check_record(&out), Some((idx, 0)), "record {idx}");
        }
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_stream_consumer_killed_at_random_is_reported_to_the_waiting_producer_and_the_next_one_resumes_exactly()
 {
    use shmbus::{
        Wait,
        stream::{Consumer, Producer, PushError},
    };
    let mut chaos = Chaos::new("stream_consumer_killed");
    let bus = BusName::new("chaos-consumer");
    let mut producer =
        Producer::<[u8]>::create(bus.name(), &shmbus::stream::Options::new(STREAM_CAP))
            .expect("create");
    // At least 5 kills, each followed by a successor that must resume.
    let n = rounds(30, 5);
    let (gone_tx, gone) = std::sync::mpsc::channel::<(u32, Instant)>();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let pushed = std::sync::atomic::AtomicU64::new(0);
    let mut worst = Duration::ZERO;
    let mut told = 0u64;
    std::thread::scope(|scope| {
        let (stop, pushed) = (&stop, &pushed);
        let stopper = StopOnDrop(stop);
        let writer = scope.spawn(move || {
            let mut idx = 0;
            let mut last_gone = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                match producer.push(&record(0, idx), Wait::For(Duration::from_millis(100))) {
                    Ok(()) => {
                        idx += 1;
                        pushed.store(idx, std::sync::atomic::Ordering::Relaxed);
                    }
                    Err(PushError::PeerGone { pid }) => {
                        if pid != last_gone {
                            last_gone = pid;
                            gone_tx.send((pid, Instant::now())).expect("report");
                        }
                    }
                    Err(PushError::TimedOut(_)) => {}
                    Err(e) => panic!("push: {e}"),
                }
            }
            producer
        });
        // The first record the next consumer gets: the one after the last
        // the killed one released (HEAD), found from the records' layout.
        let mut expect_first = 0u64;
        kill_loop(
            &mut chaos,
            n,
            Duration::from_millis(20),
            |_| {
                spawn_child(
                    "as_child_consume_until_killed",
                    "chaos_consumer",
                    &[("SHMBUS_BUS", bus.name().to_owned())],
                )
            },
            |round, f| {
                let killed = Instant::now();
                assert_eq!(
                    f.result().get::<u64>("first"),
                    expect_first,
                    "round {round}: the consumer resumed at"
                );
                let head = stat::stat(bus.name())
                    .expect("stat")
                    .stream
                    .expect("a stream")
                    .head;
                let released = records_before(head)
                    .unwrap_or_else(|| panic!("round {round}: HEAD {head} between records"));
                expect_first = released;
                // The producer is told once the ring is full: it always is
                // soon, as it pushes without pause.
                let (pid, when) = gone
                    .recv_timeout(peer_gone_bound() + Duration::from_secs(10))
                    .unwrap_or_else(|_| panic!("round {round}: no PeerGone"));
                assert_eq!(
                    pid, f.pid,
                    "round {round}: PeerGone names the dead consumer"
                );
                // Full within a few records of the kill, so told within
                // the bound after it.
                let took = when.saturating_duration_since(killed);
                assert!(
                    took < peer_gone_bound(),
                    "round {round}: told after {took:?}"
                );
                worst = worst.max(took);
                told += 1;
            },
        );
        drop(stopper);
        let producer = writer.join().expect("producer thread");
        // The last consumer, here: every record from HEAD to the last pushed.
        let mut c = Consumer::<[u8]>::attach(bus.name(), &stream_opts()).expect("open");
        let end = pushed.load(std::sync::atomic::Ordering::Relaxed);
        let mut out = Vec::new();
        for idx in expect_first..end {
            c.pop(&mut out, Wait::For(Duration::from_secs(10)))
                .expect("pop");
            assert_eq!(check_record(&out), Some((idx, 0)), "record {idx}");
        }
        assert!(c.is_empty());
        println!(
            "{n} consumers killed; {end} records pushed, each delivered whole and in order \
             from where the last consumer stopped; the producer told {told} times, at most \
             {worst:?} after the kill"
        );
        drop((c, producer));
    });
    bus.finish();
}

// ---------------------------------------------------------------------------
// 5. Soak: one publisher (this process) and four subscriber processes, 100
// million messages, with the checks above. Ignored in the ordinary run; a
// release build runs it in CI (ci/soak.sh, bounded by its own timeout).

#[test]
#[ignore = "a soak of 100 M messages: run by ci/soak.sh in a release build"]
fn soak_one_publisher_and_four_subscriber_processes_for_100_million_messages() {
    // 100 M times SHMBUS_TEST_SCALE, or exactly SHMBUS_SOAK_MESSAGES.
    let count: u64 = std::env::var("SHMBUS_SOAK_MESSAGES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| common::scale(100_000_000));
    let bus = BusName::new("soak");
    let mut publisher =
        Publisher::<Stamp>::create(bus.name(), &BusOptions::new(1024)).expect("create");
    let deadline = Duration::from_secs(900);
    let mut subscribers: Vec<Watched> = ["busy", "yield", "futex", "futex"]
        .iter()
        .map(|w| spawn_subscriber_for(&bus, w, deadline))
        .collect();
    for s in &mut subscribers {
        s.wait_ready();
    }
    let t = Instant::now();
    for seq in 0..count {
        publisher.publish(&Stamp::new(seq, 1));
        // A pause now and then, so the futex subscribers catch up and sleep.
        if seq % (1 << 22) == (1 << 22) - 1 {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    publisher.publish(&Stamp::new(count, END));
    let took = t.elapsed();
    let head = publisher.next_sequence();
    println!(
        "soak: {head} messages published in {took:.1?} ({:.1} M msg/s) to 4 subscriber processes",
        head as f64 / took.as_secs_f64() / 1e6
    );
    for s in subscribers {
        check_survivor(s.wait_success(), head, 1);
    }
    drop(publisher);
    bus.finish();
}

// ---------------------------------------------------------------------------
// 7. Lossless subscribers SIGKILLed and SIGSTOPped at random
//    while the publisher runs flat out.
//
// The publisher's side is `FlatOut`, so that a many-publisher variant (a
// `FlatOut` over a `ManyPublisher`, or one per publisher thread) runs the
// same victims and the same checks.

/// How long a lossless subscriber may hold the publisher back: small, so
/// that stops longer than it are cheap to make.
const CHAOS_EVICT: Duration = Duration::from_millis(20);

/// Receives until the END message, lossless or not as `SHMBUS_LOSSLESS`
/// says, checking each message's sequence and every byte, and prints the
/// tally and whether it was evicted (lossless asked, lossy at the end).
#[test]
fn as_child_subscribe_lossless_until_the_end_message() {
    role("chaos_lossless_sub", || {
        let name: String = param("SHMBUS_BUS");
        let lossless = param::<u8>("SHMBUS_LOSSLESS") == 1;
        let many = param::<u8>("SHMBUS_MANY") == 1;
        let opts = OpenOptions::default()
            .start(Start::Next)
            .lossless(lossless)
            .wait_strategy(strategy(&param::<String>("SHMBUS_WAIT")));
        let mut sub = Subscriber::<Stamp>::open(&name, &opts).expect("open subscriber");
        assert_eq!(sub.is_lossless(), lossless, "the contract asked for");
        let start = sub.position();
        common::print_ready();
        let mut t = Tally::default();
        // Lags heard while still gating: none may be, for a subscriber
        // that joined before the first message (the join rule), but an
        // abandoned claim of a many-publisher bus (one slot each).
        let mut lags_gating = 0u64;
        let mut per = PerPublisher::default();
        loop {
            let pos = sub.position();
            match sub.recv(shmbus::Wait::For(RECV_BOUND)) {
                Some(Received::Message(m)) => {
                    if many {
                        t.take_many(&mut per, &m);
                    } else {
                        t.take(pos, &m);
                    }
                    assert_eq!(t.torn + t.wrong_seq, 0, "bad message at {pos}");
                    if m.epoch == END {
                        break;
                    }
                }
                Some(Received::Lagged { skipped }) => {
                    t.lags += 1;
                    t.skipped += skipped;
                    lags_gating += u64::from(lossless && sub.is_lossless());
                }
                None => t.timeouts += 1,
            }
        }
        let mut fields = t.fields(start, sub.position());
        fields.push(("lags_gating", lags_gating.to_string()));
        fields.push(("gaps", per.gaps.to_string()));
        fields.push(("per_publisher", per.field()));
        fields.push((
            "evicted",
            u8::from(lossless && !sub.is_lossless()).to_string(),
        ));
        print_result(&fields);
    });
}

fn spawn_lossless_subscriber(bus: &BusName, lossless: bool, many: bool, wait: &str) -> Watched {
    spawn_child(
        "as_child_subscribe_lossless_until_the_end_message",
        "chaos_lossless_sub",
        &[
            ("SHMBUS_BUS", bus.name().to_owned()),
            ("SHMBUS_LOSSLESS", u8::from(lossless).to_string()),
            ("SHMBUS_MANY", u8::from(many).to_string()),
            ("SHMBUS_WAIT", wait.to_owned()),
        ],
    )
}

/// What publishes flat out in a lossless chaos test: one publisher, or
/// one of several on a many-publisher bus (each in its own thread).
trait FlatOut: Send {
    /// Publishes the next message (`Stamp::new(seq, epoch)`), waiting for
    /// room as the bus's gate says.
    fn publish_next(&mut self);
    /// Publishes the END message; returns the sequence after it.
    fn finish(&mut self) -> u64;
    /// The epoch that names this publisher in its messages.
    fn epoch(&self) -> u64 {
        1
    }
    /// Messages it published (committed), END aside.
    fn published(&self) -> u64;
    /// Its claims that were skipped as abandoned before it committed them
    /// (each published again), so each subscriber skipped one slot.
    fn abandoned(&self) -> u64 {
        0
    }
}

impl FlatOut for Publisher<Stamp> {
    fn publish_next(&mut self) {
        self.publish(&Stamp::new(self.next_sequence(), 1));
    }

    fn finish(&mut self) -> u64 {
        self.publish(&Stamp::new(self.next_sequence(), END));
        self.next_sequence()
    }

    fn published(&self) -> u64 {
        self.next_sequence()
    }
}

/// One publisher of a many-publisher bus: its messages carry its own
/// count in `seq` and its `epoch` as its name.
struct ManyFlatOut {
    publisher: ManyPublisher<Stamp>,
    epoch: u64,
    next: u64,
    abandoned: u64,
}

impl FlatOut for ManyFlatOut {
    fn publish_next(&mut self) {
        match self.publisher.publish(&Stamp::new(self.next, self.epoch)) {
            Ok(_) => self.next += 1,
            // Not published (this thread stalled past the unblock
            // timeout): the same message again.
            Err(_) => self.abandoned += 1,
        }
    }

    fn finish(&mut self) -> u64 {
        loop {
            match self.publisher.publish(&Stamp::new(0, END)) {
                Ok(seq) => return seq + 1,
                Err(_) => self.abandoned += 1,
            }
        }
    }

    fn epoch(&self) -> u64 {
        self.epoch
    }

    fn published(&self) -> u64 {
        self.next
    }

    fn abandoned(&self) -> u64 {
        self.abandoned
    }
}

/// The longest single publish, and how many took longer than the
/// eviction timeout, over all publishes.
#[derive(Default, Debug)]
struct PublishTimes {
    count: u64,
    longest: Duration,
    over_evict: u64,
}

/// Publishes flat out until `stop`, timing every publish against the
/// eviction timeout `evict`.
fn publish_flat_out(
    publisher: &mut dyn FlatOut,
    stop: &std::sync::atomic::AtomicBool,
    evict: Duration,
) -> PublishTimes {
    let mut times = PublishTimes::default();
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        for _ in 0..64 {
            let t = Instant::now();
            publisher.publish_next();
            let took = t.elapsed();
            times.count += 1;
            times.longest = times.longest.max(took);
            times.over_evict += u64::from(took > evict);
        }
    }
    times
}

/// What the chaos did to one lossless subscriber.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Spared,
    Stopped,
}

/// The publishers of a lossless chaos test.
struct ChaosPublishers<'a> {
    /// Each publishes flat out in a thread of its own; the first publishes
    /// END at the end.
    flat_out: Vec<&'a mut dyn FlatOut>,
    /// A many-publisher bus: subscribers check the order per publisher.
    many: bool,
    /// The bus's eviction timeout.
    evict: Duration,
    /// The longest a victim is stopped (a random time below it).
    max_stop: Duration,
    /// A publisher process (epoch [`DOOMED_EPOCH`]) too, publishing flat
    /// out from when the subscribers are in, SIGKILLed in a random round,
    /// mid-claim or not.
    doomed: bool,
}

/// The epoch of the doomed publisher process's messages.
const DOOMED_EPOCH: u64 = 99;

/// The lossless chaos: `victims` lossless subscriber processes,
/// `bystanders` more (lossless, never signalled) and a lossy one join
/// before the publishers start; then, `rounds` times, a random live victim
/// is SIGKILLed (one round in three, while two live ones are left) or
/// SIGSTOPped for a random time below four eviction timeouts and resumed;
/// in one random round the doomed publisher, if any, is SIGKILLed.
/// At the end: no torn or misplaced message anywhere (in order per
/// publisher on a many-publisher bus); every live lossless subscriber
/// that was never evicted got every message (no lag at all, but one slot
/// per abandoned claim: the same for all of them, at most one per killed
/// publisher and per claim a live one saw abandoned; every message of
/// every live publisher, and the same prefix of the doomed one's); every
/// evicted one's and the lossy one's delivered + skipped = published; no
/// publish waited past the eviction (or unblock) timeout plus a
/// scheduling margin; and one live lossless subscriber at least was never
/// evicted (checked lossless).
fn lossless_chaos(
    test: &str,
    bus: &BusName,
    mut publishers: ChaosPublishers<'_>,
    (victims, bystanders): (usize, usize),
    rounds: u64,
    longest_wait: Duration,
) {
    let mut chaos = Chaos::new(test);
    let (many, evict) = (publishers.many, publishers.evict);
    let waits = ["futex", "yield"];
    let mut subs: Vec<(Watched, Fate)> = (0..victims + bystanders)
        .map(|i| {
            (
                spawn_lossless_subscriber(bus, true, many, waits[i % 2]),
                Fate::Spared,
            )
        })
        .collect();
    let mut lossy = spawn_lossless_subscriber(bus, false, many, "futex");
    for (s, _) in &mut subs {
        s.wait_ready();
    }
    lossy.wait_ready();

    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut killed = Vec::new();
    let doom_round = chaos.below(rounds);
    let mut doomed = publishers.doomed.then(|| {
        let mut d = spawn_child(
            "as_child_publish_many_flat_out_until_killed",
            "chaos_many_pub",
            &[("SHMBUS_BUS", bus.name().to_owned())],
        );
        d.wait_ready();
        d
    });
    let mut doomed_killed = 0u64;
    let times = std::thread::scope(|scope| {
        let stop = &stop;
        let stopper = StopOnDrop(stop);
        let pacers: Vec<_> = publishers
            .flat_out
            .iter_mut()
            .map(|p| {
                let p = &mut **p;
                scope.spawn(move || publish_flat_out(p, stop, evict))
            })
            .collect();
        for round in 0..rounds {
            std::thread::sleep(chaos.delay(Duration::from_millis(20)));
            if round == doom_round {
                if let Some(d) = doomed.take() {
                    let f = d.kill();
                    assert_eq!(
                        f.signal(),
                        Some(libc::SIGKILL),
                        "the doomed publisher: {}",
                        f.output()
                    );
                    println!("round {round}: publisher process {} killed", f.pid);
                    doomed_killed += 1;
                }
            }
            // The live victims are the first entries (a killed one is
            // removed, the order kept), the bystanders after them.
            let live = victims - killed.len();
            let i = chaos.below(live as u64) as usize;
            let pid = subs[i].0.pid();
            subs[i].0.check_alive("the chaos");
            if live > 2 && chaos.below(3) == 0 {
                let (child, _) = subs.remove(i);
                let f = child.kill();
                assert_eq!(
                    f.signal(),
                    Some(libc::SIGKILL),
                    "round {round}: {}",
                    f.output()
                );
                killed.push(f.pid);
            } else {
                let held = chaos.delay(publishers.max_stop);
                signal(pid, libc::SIGSTOP);
                std::thread::sleep(held);
                signal(pid, libc::SIGCONT);
                subs[i].1 = Fate::Stopped;
            }
        }
        drop(stopper);
        pacers
            .into_iter()
            .map(|p| p.join().expect("publisher thread"))
            .collect::<Vec<_>>()
    });
    let head = publishers.flat_out[0].finish();
    let publishes: u64 = times.iter().map(|t| t.count).sum();
    let longest = times.iter().map(|t| t.longest).max().unwrap_or_default();
    let over: u64 = times.iter().map(|t| t.over_evict).sum();
    // The publishers that lived: each one's messages, exactly.
    let live: std::collections::BTreeMap<u64, u64> = publishers
        .flat_out
        .iter()
        .map(|p| (p.epoch(), p.published()))
        .collect();
    let abandoned: u64 = publishers.flat_out.iter().map(|p| p.abandoned()).sum();
    println!(
        "{publishes} publishes by {} publishers ({head} with END); longest {longest:?}, {over} over the \
         eviction timeout {evict:?}; {abandoned} claims of live publishers abandoned; \
         {} lossless subscribers killed: {killed:?}",
        live.len(),
        killed.len()
    );
    let mut evicted = 0;
    let live_lossless = subs.len();
    // What every never-evicted lossless subscriber must agree on: the
    // slots skipped (abandoned claims) and the doomed publisher's count.
    let mut agreed: Option<(u64, Option<u64>)> = None;
    for (s, fate) in subs {
        let f = s.wait_success();
        let r = f.result();
        let who = format!("lossless subscriber pid {} ({fate:?})", f.pid);
        let (start, end): (u64, u64) = (r.get("start"), r.get("end"));
        let (delivered, skipped): (u64, u64) = (r.get("delivered"), r.get("skipped"));
        let was_evicted = r.get::<u8>("evicted") == 1;
        println!(
            "{who}: delivered {delivered} + skipped {skipped} of {}; evicted {was_evicted}",
            end - start
        );
        assert_eq!(r.get::<u64>("torn"), 0, "{who}: torn messages delivered");
        assert_eq!(r.get::<u64>("wrong_seq"), 0, "{who}: wrong sequence");
        assert_eq!(end, head, "{who}: ended after the END message");
        assert_eq!(delivered + skipped, end - start, "{who}: lost count");
        if was_evicted {
            evicted += 1;
            continue;
        }
        if !many {
            assert_eq!(r.get::<u64>("lags_gating"), 0, "{who}: lapped while gating");
            assert_eq!(skipped, 0, "{who}: never evicted, yet it missed messages");
            continue;
        }
        // Many publishers: every lag an abandoned claim, heard while gating.
        assert_eq!(
            r.get::<u64>("lags_gating"),
            r.get::<u64>("lags"),
            "{who}: lapped while gating"
        );
        assert!(
            skipped <= doomed_killed + abandoned,
            "{who}: {skipped} slots skipped, only {doomed_killed} publisher killed and {abandoned} claims abandoned"
        );
        assert_eq!(
            r.get::<u64>("gaps"),
            0,
            "{who}: a publisher's message missing"
        );
        let mut got = per_publisher(&r.get::<String>("per_publisher"));
        let theirs = got.remove(&DOOMED_EPOCH);
        for (epoch, &n) in &live {
            assert_eq!(
                got.get(epoch).copied().unwrap_or(0),
                n,
                "{who}: publisher {epoch}'s messages"
            );
        }
        assert_eq!(
            got.len(),
            live.len(),
            "{who}: messages of unknown publishers: {got:?}"
        );
        let mine = (skipped, theirs);
        assert_eq!(
            *agreed.get_or_insert(mine),
            mine,
            "{who}: differs from the other lossless subscribers"
        );
    }
    println!(
        "{evicted} live lossless subscribers were evicted (stopped, or descheduled past the timeout)"
    );
    // The lossless checks above skip an evicted subscriber: with every one
    // evicted they checked nothing, and a gate that evicted at the first
    // block would pass. The bystanders are never stopped, and a stop may
    // be shorter than the timeout: one at least keeps its contract.
    assert!(
        evicted < live_lossless,
        "all {live_lossless} live lossless subscribers were evicted: none was checked lossless"
    );
    if let Some((skipped, doomed)) = agreed {
        println!(
            "the others each skipped {skipped} abandoned slots and got {doomed:?} messages of the killed publisher"
        );
    }
    if many {
        let f = lossy.wait_success();
        let r = f.result();
        let who = format!("lossy subscriber pid {}", f.pid);
        assert_eq!(r.get::<u64>("torn"), 0, "{who}: torn messages delivered");
        assert_eq!(
            r.get::<u64>("wrong_seq"),
            0,
            "{who}: a publisher's order broken"
        );
        assert_eq!(
            r.get::<u64>("end"),
            head,
            "{who}: ended after the END message"
        );
        assert_eq!(
            r.get::<u64>("delivered") + r.get::<u64>("skipped"),
            head - r.get::<u64>("start"),
            "{who}: lost count"
        );
    } else {
        check_survivor(lossy.wait_success(), head, 1);
    }
    // One block is at most the eviction (or unblock) timeout; the margin
    // is the scheduling delay of a loaded two-core machine (not a figure:
    // the benchmark measures that).
    assert!(
        longest < longest_wait + LATE_LIMIT,
        "a publish waited {longest:?}, past the eviction timeout {evict:?} (longest allowed wait {longest_wait:?})"
    );
}

#[test]
#[cfg_attr(miri, ignore)]
fn lossless_subscribers_killed_and_stopped_at_random_never_lose_a_message_unless_evicted_nor_hold_the_publisher_past_the_timeout()
 {
    let bus = BusName::new("chaos-lossless");
    let opts = BusOptions::new(64).evict_after(CHAOS_EVICT);
    let mut publisher = Publisher::<Stamp>::create(bus.name(), &opts).expect("create");
    // Kills and stops: scaled, at least 6 so that both kinds land.
    lossless_chaos(
        "lossless_killed_and_stopped",
        &bus,
        ChaosPublishers {
            flat_out: vec![&mut publisher],
            many: false,
            evict: CHAOS_EVICT,
            max_stop: 4 * CHAOS_EVICT,
            doomed: false,
        },
        (4, 2),
        rounds(24, 6),
        CHAOS_EVICT,
    );
    drop(publisher);
    bus.finish();
}

/// How long a claim of the many-publisher chaos bus may stay uncommitted
/// before it is skipped: far above a loaded machine's scheduling stall (a
/// live publisher's skipped claim is still checked exactly, but one
/// stalled inside its copy could tear), short enough for a test, and
/// well below the eviction timeout: a dead claim holds every reader, so
/// the gating ones hold the publishers, for the unblock timeout, and with
/// a shorter eviction timeout every lossless subscriber would be evicted
/// behind it.
const CHAOS_UNBLOCK: Duration = Duration::from_millis(150);

/// The many-publisher chaos bus's eviction timeout (see `CHAOS_UNBLOCK`).
const CHAOS_MANY_EVICT: Duration = Duration::from_millis(400);

/// Attaches to a many-publisher bus and publishes `Stamp::new(i, 99)` flat
/// out, i counting its committed messages, until killed.
#[test]
fn as_child_publish_many_flat_out_until_killed() {
    role("chaos_many_pub", || {
        let name: String = param("SHMBUS_BUS");
        let mut p = ManyPublisher::<Stamp>::attach(&name, &OpenOptions::default())
            .expect("attach a publisher");
        common::print_ready();
        let mut i = 0;
        loop {
            if p.publish(&Stamp::new(i, DOOMED_EPOCH)).is_ok() {
                i += 1;
            }
        }
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn lossless_subscribers_of_three_publishers_flat_out_one_killed_get_each_ones_messages_once_in_order_unless_evicted()
 {
    let bus = BusName::new("chaos-lossless-many");
    let opts = BusOptions::new(64)
        .many()
        .unblock_timeout(CHAOS_UNBLOCK)
        .evict_after(CHAOS_MANY_EVICT);
    let first = ManyPublisher::<Stamp>::create(bus.name(), &opts).expect("create");
    let attach =
        || ManyPublisher::<Stamp>::attach(bus.name(), &OpenOptions::default()).expect("attach");
    let mut flat: Vec<ManyFlatOut> = [first, attach()]
        .into_iter()
        .enumerate()
        .map(|(i, publisher)| ManyFlatOut {
            publisher,
            epoch: i as u64 + 1,
            next: 0,
            abandoned: 0,
        })
        .collect();
    lossless_chaos(
        "lossless_many_publishers",
        &bus,
        ChaosPublishers {
            flat_out: flat.iter_mut().map(|p| p as &mut dyn FlatOut).collect(),
            many: true,
            evict: CHAOS_MANY_EVICT,
            // Half the stops outlast the timeout (evicted), half do not.
            max_stop: 2 * CHAOS_MANY_EVICT,
            doomed: true,
        },
        (4, 2),
        // Stops are longer here (up to 0.8 s): fewer of them.
        rounds(8, 6),
        CHAOS_MANY_EVICT,
    );
    drop(flat);
    bus.finish();
}
