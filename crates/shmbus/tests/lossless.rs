//! Lossless subscribers between real processes: one that keeps
//! up gets everything while a lossy one beside it is lapped exactly; one
//! that is SIGKILLed stops holding the publisher back at once; one that
//! is SIGSTOPped is evicted after the bus's eviction timeout and, resumed,
//! is told exactly what it missed.
//!
//! Each child is this test binary run again (see `common`); its entry is an
//! `as_child_*` test that does nothing unless `SHMBUS_CHILD_ROLE` names it.

mod common;

use std::time::{Duration, Instant};

use common::{BusName, Watched, param, print_result, process_state, role, spawn_child, wait_for};
use shmbus::{BusOptions, OpenOptions, Publisher, Received, Start, Subscriber, Wait};

/// Reads until its position is `SHMBUS_COUNT`, lossless or not as
/// `SHMBUS_LOSSLESS` says, and reports what it got.
#[test]
fn as_child_read_everything() {
    role("reader", || {
        let name: String = param("SHMBUS_BUS");
        let count: u64 = param("SHMBUS_COUNT");
        let lossless = param::<u8>("SHMBUS_LOSSLESS") == 1;
        let opts = OpenOptions::default().start(Start::Next).lossless(lossless);
        let mut sub = Subscriber::<u64>::open(&name, &opts).expect("open");
        assert_eq!(sub.is_lossless(), lossless);
        common::print_ready();
        let (mut delivered, mut skipped, mut wrong) = (0u64, 0u64, 0u64);
        while sub.position() < count {
            let pos = sub.position();
            match sub.recv(Wait::For(Duration::from_secs(60))) {
                Some(Received::Message(m)) => {
                    delivered += 1;
                    if m != pos {
                        wrong += 1;
                    }
                }
                Some(Received::Lagged { skipped: n }) => skipped += n,
                None => panic!("nothing for 60 s at {pos}"),
            }
        }
        print_result(&[
            ("delivered", delivered.to_string()),
            ("skipped", skipped.to_string()),
            ("wrong", wrong.to_string()),
            ("lossless", u8::from(sub.is_lossless()).to_string()),
        ]);
    });
}

/// Opens a lossless subscriber and reads nothing until killed.
#[test]
fn as_child_hold_the_publisher_back() {
    role("holder", || {
        let name: String = param("SHMBUS_BUS");
        let opts = OpenOptions::default().lossless(true);
        let _sub = Subscriber::<u64>::open(&name, &opts).expect("open");
        common::print_ready();
        common::idle_until_killed();
    });
}

fn reader(bus: &BusName, count: u64, lossless: bool) -> Watched {
    let mut c = spawn_child(
        "as_child_read_everything",
        "reader",
        &[
            ("SHMBUS_BUS", bus.name().to_owned()),
            ("SHMBUS_COUNT", count.to_string()),
            ("SHMBUS_LOSSLESS", u8::from(lossless).to_string()),
        ],
    );
    c.wait_ready();
    c
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on a pid this test spawned and has not reaped.
    let rc = unsafe { libc::kill(pid as i32, sig) };
    assert_eq!(rc, 0, "kill {pid} {sig}");
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_lossless_subscriber_process_that_keeps_up_gets_every_message_while_a_lossy_one_counts_them_exactly()
 {
    let n = common::scale_min(200_000, 20_000);
    let bus = BusName::new("lossless-all");
    // A long eviction timeout: on a loaded machine a reader may lose the
    // CPU for a while, and this test is about keeping up, not eviction.
    let opts = BusOptions::new(64).evict_after(Duration::from_secs(60));
    let mut publisher = Publisher::<u64>::create(bus.name(), &opts).expect("create");
    let lossless = reader(&bus, n, true);
    let lossy = reader(&bus, n, false);
    for i in 0..n {
        publisher.publish(&i);
    }
    let got = lossless.wait_success().result();
    assert_eq!(got.get::<u64>("delivered"), n, "every message");
    assert_eq!(got.get::<u64>("skipped"), 0);
    assert_eq!(got.get::<u64>("wrong"), 0, "in order");
    assert_eq!(got.get::<u8>("lossless"), 1, "never evicted");
    let got = lossy.wait_success().result();
    assert_eq!(
        got.get::<u64>("delivered") + got.get::<u64>("skipped"),
        n,
        "delivered + skipped = published"
    );
    assert_eq!(got.get::<u64>("wrong"), 0);
    drop(publisher);
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_lossless_subscriber_killed_stops_holding_the_publisher_back_at_once() {
    const CAP: u64 = 16;
    let bus = BusName::new("lossless-kill");
    let evict = Duration::from_secs(60);
    let opts = BusOptions::new(CAP).evict_after(evict);
    let mut publisher = Publisher::<u64>::create(bus.name(), &opts).expect("create");
    let mut child = spawn_child(
        "as_child_hold_the_publisher_back",
        "holder",
        &[("SHMBUS_BUS", bus.name().to_owned())],
    );
    child.wait_ready();
    let name = bus.name().to_owned();
    let writer = std::thread::spawn(move || {
        for i in 0..4 * CAP {
            publisher.publish(&i);
        }
        publisher
    });
    // Blocked on the child: the ring is full and stays so.
    wait_for("the publisher to fill the ring", &mut [&mut child], || {
        shmbus::stat::stat(&name).expect("stat").head == CAP
    });
    let killed = Instant::now();
    child.kill();
    let publisher = writer.join().expect("publisher");
    let took = killed.elapsed();
    assert_eq!(publisher.next_sequence(), 4 * CAP);
    assert!(
        took < Duration::from_secs(5),
        "went on {took:?} after the kill, the eviction timeout is {evict:?}"
    );
    drop(publisher);
    bus.finish();
}

/// A lossless subscriber in another process, in a registry entry of its
/// own, that reads nothing until killed.
fn holder(bus: &BusName) -> Watched {
    let mut child = spawn_child(
        "as_child_hold_the_publisher_back",
        "holder",
        &[("SHMBUS_BUS", bus.name().to_owned())],
    );
    child.wait_ready();
    child
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_lossless_subscriber_killed_while_the_publisher_is_idle_does_not_count_against_the_limit() {
    let bus = BusName::new("lossless-limit");
    let opts = BusOptions::new(16).lossless_subscribers(1);
    let publisher = Publisher::<u64>::create(bus.name(), &opts).expect("create");
    // Entry 0 here, entry 1 the child's.
    let lossy = Subscriber::<u64>::open(bus.name(), &OpenOptions::default()).expect("open");
    let child = holder(&bus);
    let lossless = OpenOptions::default().lossless(true);
    assert!(
        Subscriber::<u64>::open(bus.name(), &lossless).is_err(),
        "one may gate, and one does"
    );
    child.kill();
    drop(lossy);
    // Entry 0 again; the dead one's bit (entry 1) is still set: the
    // publisher has not met it since.
    let sub = Subscriber::<u64>::open(bus.name(), &lossless).expect("the dead one's place");
    assert!(sub.is_lossless());
    drop((sub, publisher));
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_lossy_subscriber_taking_a_dead_lossless_ones_entry_does_not_hold_the_publisher_back() {
    const CAP: u64 = 4;
    let bus = BusName::new("lossless-reuse");
    let mut publisher =
        Publisher::<u64>::create(bus.name(), &BusOptions::new(CAP)).expect("create");
    holder(&bus).kill();
    // Takes the dead one's entry, whose gating bit is still set.
    let lossy = Subscriber::<u64>::open(bus.name(), &OpenOptions::default()).expect("open");
    assert!(!lossy.is_lossless());
    for i in 0..4 * CAP {
        publisher
            .try_publish(&i)
            .expect("a lossy subscriber never holds the publisher back");
    }
    let st = shmbus::stat::stat(bus.name()).expect("stat");
    assert_eq!(st.subscribers[0].contract, shmbus::stat::Contract::Lossy);
    drop((lossy, publisher));
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_lossless_subscriber_stopped_is_evicted_after_the_timeout_and_resumed_is_told_what_it_missed() {
    const CAP: u64 = 16;
    const N: u64 = 10 * CAP;
    let bus = BusName::new("lossless-stop");
    let evict = Duration::from_millis(200);
    let opts = BusOptions::new(CAP).evict_after(evict);
    let mut publisher = Publisher::<u64>::create(bus.name(), &opts).expect("create");
    let child = reader(&bus, N, true);
    signal(child.pid(), libc::SIGSTOP);
    while process_state(child.pid()) != Some('T') {
        std::thread::yield_now();
    }
    let start = Instant::now();
    for i in 0..N {
        publisher.publish(&i);
    }
    let took = start.elapsed();
    assert!(took >= evict, "held back until the eviction: {took:?}");
    // Loose: the timeout plus a margin for a loaded machine.
    assert!(
        took < evict + Duration::from_secs(3),
        "held back {took:?}, the eviction timeout is {evict:?}"
    );
    let st = shmbus::stat::stat(bus.name()).expect("stat");
    assert_eq!(st.subscribers.len(), 1);
    signal(child.pid(), libc::SIGCONT);
    let got = child.wait_success().result();
    assert_eq!(got.get::<u8>("lossless"), 0, "evicted: lossy now");
    assert!(got.get::<u64>("skipped") > 0, "told it missed some");
    assert_eq!(
        got.get::<u64>("delivered") + got.get::<u64>("skipped"),
        N,
        "delivered + skipped = published"
    );
    assert_eq!(got.get::<u64>("wrong"), 0);
    drop(publisher);
    bus.finish();
}

// Two that read the bus back through `stat` (from the library's unit tests,
// where they made `bus` import `stat`, which imports `bus`).

#[test]
fn a_subscriber_taking_the_entry_of_an_evicted_lossless_one_shows_its_own_contract_and_no_evictions()
 {
    use shmbus::stat::Contract;
    let bus = BusName::new("lossless-reuse");
    let opts = BusOptions::new(2).evict_after(Duration::from_millis(1));
    let mut p = Publisher::<u64>::create(bus.name(), &opts).unwrap();
    let lossless =
        Subscriber::<u64>::open(bus.name(), &OpenOptions::default().lossless(true)).unwrap();
    for i in 0..3 {
        p.publish(&i); // the third evicts it
    }
    let line = &shmbus::stat::stat(bus.name()).unwrap().subscribers[0];
    assert_eq!((line.contract, line.evictions), (Contract::Evicted, 1));
    drop(lossless);
    let lossy = Subscriber::<u64>::open(bus.name(), &OpenOptions::default()).unwrap();
    let line = &shmbus::stat::stat(bus.name()).unwrap().subscribers[0];
    assert_eq!(line.entry, 0, "the same entry, reused");
    assert_eq!((line.contract, line.evictions), (Contract::Lossy, 0));
    assert_eq!(line.blocked_ns, 0);
    drop((lossy, p));
    bus.finish();
}

#[test]
fn a_lossless_subscriber_that_stalls_is_evicted_after_the_timeout_and_told_what_it_missed() {
    let bus = BusName::new("lossless-evict");
    let evict = Duration::from_millis(50);
    let mut p =
        Publisher::<u64>::create(bus.name(), &BusOptions::new(4).evict_after(evict)).unwrap();
    let mut s =
        Subscriber::<u64>::open(bus.name(), &OpenOptions::default().lossless(true)).unwrap();
    let start = Instant::now();
    for i in 0..20 {
        p.publish(&i);
    }
    let took = start.elapsed();
    assert!(took >= evict, "blocked until the eviction: {took:?}");
    assert!(took < evict * 20, "not much longer: {took:?}");
    assert!(!s.is_lossless());
    let (mut delivered, mut skipped) = (0, 0);
    while let Some(r) = s.try_recv() {
        match r {
            Received::Message(_) => delivered += 1,
            Received::Lagged { skipped: n } => skipped += n,
        }
    }
    assert!(skipped > 0);
    assert_eq!(delivered + skipped, 20);
    let line = shmbus::stat::stat(bus.name()).unwrap();
    assert_eq!(line.subscribers.len(), 1);
    drop((s, p));
    bus.finish();
}

/// A journaled bus gates its ring writes for a lossless subscriber as a
/// plain one does: one SIGSTOPped past the eviction timeout holds the
/// journal publisher back that long, is evicted, and the publisher goes
/// on; the journal has every message all along.
#[test]
fn a_journaled_bus_with_a_stopped_lossless_subscriber_goes_on_after_the_eviction_and_journals_everything()
 {
    use shmbus::journal::{self, JoinOptions};
    const CAP: u64 = 16;
    const N: u64 = 10 * CAP;
    let dir = common::ShmDir::new("lossless-journal");
    let bus = BusName::new("lossless-journal");
    let evict = Duration::from_millis(200);
    let mut publisher = journal::Publisher::<u64>::create(
        bus.name(),
        &BusOptions::new(CAP).evict_after(evict),
        &journal::Options::new(dir.path().join("j")),
    )
    .expect("create");
    let child = reader(&bus, N, true);
    signal(child.pid(), libc::SIGSTOP);
    while process_state(child.pid()) != Some('T') {
        std::thread::yield_now();
    }
    let start = Instant::now();
    for i in 0..N {
        assert_eq!(publisher.publish(&i).expect("publish"), i);
    }
    let took = start.elapsed();
    assert!(took >= evict, "held back until the eviction: {took:?}");
    assert!(
        took < evict + Duration::from_secs(3),
        "held back {took:?}, the eviction timeout is {evict:?}"
    );
    let mut journal =
        journal::Subscriber::<u64>::join(bus.name(), &JoinOptions::default()).expect("join");
    for i in 0..N {
        match journal.recv(Wait::For(Duration::from_secs(10))) {
            Some(Received::Message(e)) => assert_eq!((e.seq, e.msg), (i, i)),
            other => panic!("the journal at {i}: {other:?}"),
        }
    }
    signal(child.pid(), libc::SIGCONT);
    let got = child.wait_success().result();
    assert_eq!(got.get::<u8>("lossless"), 0, "evicted: lossy now");
    assert_eq!(
        got.get::<u64>("delivered") + got.get::<u64>("skipped"),
        N,
        "delivered + skipped = published"
    );
    drop(journal);
    drop(publisher);
    bus.finish();
    drop(dir);
}

/// The `TooMany` race: subscribers that open lossless at the same
/// moment for a bus's last places all get in, as many as there are
/// places, and the rest are refused: never all of them (each counting
/// the others' bits and backing off), never one too many.
#[test]
#[cfg_attr(miri, ignore)]
fn subscribers_racing_for_the_last_lossless_places_get_exactly_as_many_as_there_are() {
    use std::sync::{Arc, Barrier};
    const RACERS: usize = 8;
    const PLACES: u32 = 2;
    let bus = BusName::new("lossless-race");
    let opts = BusOptions::new(16).lossless_subscribers(PLACES);
    let publisher = Publisher::<u64>::create(bus.name(), &opts).expect("create");
    let rounds = common::scale_min(300, 50);
    for round in 0..rounds {
        let barrier = Arc::new(Barrier::new(RACERS));
        let racers: Vec<_> = (0..RACERS)
            .map(|_| {
                let barrier = Arc::clone(&barrier);
                let name = bus.name().to_owned();
                std::thread::spawn(move || {
                    barrier.wait();
                    Subscriber::<u64>::open(&name, &OpenOptions::default().lossless(true))
                })
            })
            .collect();
        let results: Vec<_> = racers.into_iter().map(|t| t.join().unwrap()).collect();
        let admitted = results.iter().filter(|r| r.is_ok()).count();
        for r in &results {
            if let Err(e) = r {
                assert!(
                    matches!(
                        e,
                        shmbus::OpenError::Lossless(shmbus::bus::LosslessRefused::TooMany {
                            max: 2
                        })
                    ),
                    "round {round}: {e:?}"
                );
            }
        }
        assert_eq!(
            admitted, PLACES as usize,
            "round {round}: {admitted} of {RACERS} got in for {PLACES} places"
        );
        assert!(results.iter().flatten().all(Subscriber::is_lossless));
    }
    drop(publisher);
    bus.finish();
}

#[test]
// /dev/shm files: Miri maps no files.
#[cfg_attr(miri, ignore)]
fn a_timeout_of_0_or_outside_1_ms_to_60_s_is_refused_at_create_naming_it_and_leaves_no_file() {
    use shmbus::error::GeometryError;
    use shmbus::pool;
    let (min, max) = (shmbus::bus::MIN_TIMEOUT, shmbus::bus::MAX_EVICT);
    let refused = |option: &'static str, found: Duration| {
        move |err: Option<shmbus::CreateError>| match err {
            Some(shmbus::CreateError::InvalidGeometry(e @ GeometryError::Timeout { .. })) => {
                assert_eq!(
                    e,
                    GeometryError::Timeout {
                        option,
                        found,
                        min,
                        max
                    }
                );
                let text = e.to_string();
                assert!(
                    text.contains(option) && text.contains("expected 1ms to 60s"),
                    "{text}"
                );
            }
            other => panic!("{option} {found:?}: expected a timeout error, got {other:?}"),
        }
    };
    let bus = BusName::new("timeouts");
    let gone = || !bus.path().exists();
    let outside = [
        Duration::ZERO,
        Duration::from_micros(999),
        max + Duration::from_nanos(1),
    ];
    for found in outside {
        let opts = BusOptions::new(8).evict_after(found);
        refused("eviction timeout", found)(Publisher::<u64>::create(bus.name(), &opts).err());
        let many = BusOptions::new(8).many().evict_after(found);
        refused("eviction timeout", found)(
            shmbus::bus::ManyPublisher::<u64>::create(bus.name(), &many).err(),
        );
        let many = BusOptions::new(8).many().unblock_timeout(found);
        refused("unblock timeout", found)(
            shmbus::bus::ManyPublisher::<u64>::create(bus.name(), &many).err(),
        );
        let pool = pool::Options::new(4, 64, 5).evict_after(found);
        refused("eviction timeout", found)(
            pool::Publisher::<[u8]>::create(bus.name(), &pool).err(),
        );
        let pool = pool::Options::new(4, 64, 5).many().unblock_timeout(found);
        refused("unblock timeout", found)(
            pool::Publisher::<[u8]>::create_many(bus.name(), &pool).err(),
        );
        let journal = std::env::temp_dir().join(format!(
            "shmbus-test-gate-timeouts-{}.journal",
            std::process::id()
        ));
        let err = shmbus::journal::Publisher::<u64>::create(
            bus.name(),
            &opts,
            &shmbus::journal::Options::new(&journal),
        )
        .err();
        match err {
            Some(shmbus::journal::CreateError::Create(e)) => {
                refused("eviction timeout", found)(Some(e))
            }
            other => panic!("a journaled bus: expected a timeout error, got {other:?}"),
        }
        assert!(!journal.exists(), "a refused create left its journal");
        assert!(gone(), "a refused create left {}", bus.name());
    }
    // The bounds themselves are taken.
    for ok in [min, max] {
        let opts = BusOptions::new(8)
            .many()
            .evict_after(ok)
            .unblock_timeout(ok);
        let p = shmbus::bus::ManyPublisher::<u64>::create(bus.name(), &opts).expect("in bounds");
        drop(p);
        shmbus::remove(bus.name()).expect("remove");
    }
    bus.finish();
}
