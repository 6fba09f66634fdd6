//! A select waiting on buses, pools and streams that other
//! processes feed: it wakes for each of them, and its caller receives
//! every message once and in order; it sleeps while nothing comes; a
//! stream whose producer is killed wakes it, and the pop says so.
//!
//! Each child is this test binary run again (see `common`); its entry is an
//! `as_child_*` test that does nothing unless `SHMBUS_CHILD_ROLE` names it.

mod common;

use std::time::{Duration, Instant};

use common::{BusName, param, role, spawn_child};
use shmbus::pool;
use shmbus::select::{Select, Selectable};
use shmbus::stream::{self, Consumer, PopError, Producer};
use shmbus::{BusOptions, OpenOptions, Publisher, Received, Start, Subscriber, Wait};

/// Attaches to the bus, pool or stream `SHMBUS_BUS` as its writer and
/// sends `SHMBUS_COUNT` sequence numbers, a pause every 64 so that the
/// reader falls asleep now and then.
#[test]
fn as_child_feed() {
    role("feeder", || {
        let name: String = param("SHMBUS_BUS");
        let kind: String = param("SHMBUS_KIND");
        let count: u64 = param("SHMBUS_COUNT");
        let opts = OpenOptions::default();
        let pause = || std::thread::sleep(Duration::from_micros(200));
        match kind.as_str() {
            "bus" => {
                let mut p = Publisher::<u64>::attach(&name, &opts).expect("attach bus");
                common::print_ready();
                for i in 0..count {
                    p.publish(&i);
                    if i % 64 == 63 {
                        pause();
                    }
                }
            }
            "pool" => {
                let mut p = pool::Publisher::<[u8]>::attach(&name, &opts).expect("attach pool");
                common::print_ready();
                for i in 0..count {
                    let mut loan = p.loan(8, Wait::Forever).expect("loan");
                    loan.copy_from_slice(&i.to_le_bytes());
                    loan.publish().expect("publish");
                    if i % 64 == 63 {
                        pause();
                    }
                }
            }
            "stream" => {
                let mut p = Producer::<[u8]>::attach(&name, &opts).expect("attach stream");
                common::print_ready();
                for i in 0..count {
                    p.push(&i.to_le_bytes(), Wait::Forever).expect("push");
                    if i % 64 == 63 {
                        pause();
                    }
                }
            }
            "stream-idle" => {
                let _p = Producer::<[u8]>::attach(&name, &opts).expect("attach stream");
                common::print_ready();
                common::idle_until_killed();
            }
            other => panic!("unknown kind {other}"),
        }
    });
}

fn feeder(bus: &BusName, kind: &str, count: u64) -> common::Watched {
    let mut c = spawn_child(
        "as_child_feed",
        "feeder",
        &[
            ("SHMBUS_BUS", bus.name().to_owned()),
            ("SHMBUS_KIND", kind.to_owned()),
            ("SHMBUS_COUNT", count.to_string()),
        ],
    );
    c.wait_ready();
    c
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_select_over_a_bus_a_pool_and_a_stream_fed_by_other_processes_gets_every_message_once_in_order()
{
    let n = common::scale_min(20_000, 2_000);
    let (b, p, s) = (
        BusName::new("select-bus"),
        BusName::new("select-pool"),
        BusName::new("select-stream"),
    );
    // A lossless reader of the bus and the pool would need the lossless
    // gate; these are big enough that a reader that keeps up is not lapped,
    // and a lap would show as a lag, which fails the test.
    drop(Publisher::<u64>::create(b.name(), &BusOptions::new(1 << 16)).expect("bus"));
    drop(
        pool::Publisher::<[u8]>::create(p.name(), &pool::Options::new(1 << 14, 64, 1 << 15))
            .expect("pool"),
    );
    drop(Producer::<[u8]>::create(s.name(), &stream::Options::new(1 << 20)).expect("stream"));
    let open = OpenOptions::default().start(Start::Oldest);
    let mut on_bus = Subscriber::<u64>::open(b.name(), &open).expect("open bus");
    let mut on_pool = pool::Subscriber::<[u8]>::open(p.name(), &open).expect("open pool");
    let mut on_stream = Consumer::<[u8]>::attach(s.name(), &open).expect("open stream");
    let children = [
        feeder(&b, "bus", n),
        feeder(&p, "pool", n),
        feeder(&s, "stream", n),
    ];
    let mut next = [0u64; 3];
    let mut select = Select::new();
    let deadline = Instant::now() + common::scale_deadline(Duration::from_secs(60));
    let mut out = Vec::new();
    while next.iter().any(|&k| k < n) {
        assert!(Instant::now() < deadline, "stuck at {next:?} of {n}");
        let members: [&dyn Selectable; 3] = [&on_bus, &on_pool, &on_stream];
        let Some(i) = select.ready(&members, Wait::For(Duration::from_secs(1))) else {
            continue;
        };
        let got = match i {
            0 => match on_bus.recv(Wait::Never) {
                Some(Received::Message(m)) => Some(m),
                Some(Received::Lagged { skipped }) => panic!("bus lapped by {skipped}"),
                None => None,
            },
            1 => match on_pool.recv(Wait::Never).expect("pool recv") {
                Some(Received::Message(sample)) => {
                    Some(u64::from_le_bytes(sample[..8].try_into().expect("8 bytes")))
                }
                Some(Received::Lagged { skipped }) => panic!("pool lapped by {skipped}"),
                None => None,
            },
            _ => match on_stream.pop(&mut out, Wait::Never) {
                Ok(()) => Some(u64::from_le_bytes(out[..].try_into().expect("8 bytes"))),
                Err(PopError::Empty) => None,
                Err(e) => panic!("stream: {e}"),
            },
        };
        if let Some(v) = got {
            assert_eq!(v, next[i], "member {i} in order, once");
            next[i] += 1;
        }
    }
    for c in children {
        c.wait_success();
    }
    drop((on_bus, on_pool, on_stream));
    for x in [b, p, s] {
        x.finish();
    }
}

/// CPU time this thread has used.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a live timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0);
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_select_over_sixty_four_idle_buses_sleeps_instead_of_spinning() {
    let names: Vec<_> = (0..64)
        .map(|i| BusName::new(&format!("select-idle-{i}")))
        .collect();
    let publishers: Vec<_> = names
        .iter()
        .map(|b| Publisher::<u64>::create(b.name(), &BusOptions::new(8)).expect("create"))
        .collect();
    let subs: Vec<_> = names
        .iter()
        .map(|b| Subscriber::<u64>::open(b.name(), &OpenOptions::default()).expect("open"))
        .collect();
    let members: Vec<&dyn Selectable> = subs.iter().map(|s| s as &dyn Selectable).collect();
    let wall = Instant::now();
    let cpu = thread_cpu();
    assert_eq!(
        Select::new().ready(&members, Wait::For(Duration::from_millis(500))),
        None
    );
    let (wall, cpu) = (wall.elapsed(), thread_cpu() - cpu);
    assert!(wall >= Duration::from_millis(500));
    // A spinning wait would use about all of the 500 ms; a sleeping one
    // uses its 50 µs of spin and the system calls around one sleep.
    assert!(
        cpu < Duration::from_millis(50),
        "used {cpu:?} of CPU in {wall:?} idle"
    );
    drop((subs, publishers));
    for b in names {
        b.finish();
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_select_waiting_on_a_stream_whose_producer_is_killed_wakes_and_the_pop_reports_it() {
    let s = BusName::new("select-gone");
    let bus = BusName::new("select-gone-bus");
    drop(Producer::<[u8]>::create(s.name(), &stream::Options::new(4096)).expect("stream"));
    let publisher = Publisher::<u64>::create(bus.name(), &BusOptions::new(8)).expect("bus");
    let mut consumer = Consumer::<[u8]>::attach(s.name(), &OpenOptions::default()).expect("open");
    let on_bus = Subscriber::<u64>::open(bus.name(), &OpenOptions::default()).expect("open");
    let child = feeder(&s, "stream-idle", 0);
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        child.kill()
    });
    let got = Select::new().ready(&[&on_bus, &consumer], Wait::For(Duration::from_secs(30)));
    assert_eq!(got, Some(1), "woken by the dead producer");
    // A pop that may wait finds the dead producer at its first peer check
    // (`Wait::Never` looks at the ring only).
    let mut out = Vec::new();
    let asked = Instant::now();
    assert!(
        matches!(
            consumer.pop(&mut out, Wait::For(Duration::from_secs(30))),
            Err(PopError::PeerGone { .. })
        ),
        "the pop says the producer is gone"
    );
    assert!(asked.elapsed() < Duration::from_secs(5));
    drop(killer.join().expect("killer"));
    drop((consumer, on_bus, publisher));
    s.finish();
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_journal_subscriber_is_ready_while_it_reads_the_file_and_then_wakes_for_live_messages() {
    use shmbus::journal::{self, JoinOptions};
    let dir = common::ShmDir::new("select-journal");
    let bus = BusName::new("select-journal");
    let mut publisher = journal::Publisher::<u64>::create(
        bus.name(),
        &BusOptions::new(64),
        &journal::Options::new(dir.path().join("j")),
    )
    .expect("create");
    for i in 0..3u64 {
        publisher.publish(&i).expect("publish");
    }
    let mut sub =
        journal::Subscriber::<u64>::join(bus.name(), &JoinOptions::default()).expect("join");
    let mut select = Select::new();
    let mut seen = Vec::new();
    // Ready while it reads the file (the receive that finds its end moves
    // it to the ring and may deliver nothing).
    while seen.len() < 3 || !sub.is_live() {
        assert_eq!(
            select.ready(&[&sub], Wait::For(Duration::from_secs(10))),
            Some(0)
        );
        if let Some(Received::Message(e)) = sub.recv(Wait::Never) {
            seen.push(e.msg);
        }
    }
    assert_eq!(seen, [0, 1, 2]);
    assert_eq!(
        select.ready(&[&sub], Wait::For(Duration::from_millis(20))),
        None
    );
    // Published once the select below sleeps: its wake-up is what is
    // checked, not its first look.
    let selecting = rustix::thread::gettid();
    let writer = std::thread::spawn(move || {
        common::wait_for("the select to sleep", &mut [], || {
            common::in_futex_wait(selecting)
        });
        publisher.publish(&3).expect("publish");
        publisher
    });
    let asked = std::time::Instant::now();
    assert_eq!(
        select.ready(&[&sub], Wait::For(Duration::from_secs(10))),
        Some(0)
    );
    // Woken by the publish, not by the end of the wait.
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "woke after {:?}",
        asked.elapsed()
    );
    assert!(matches!(sub.recv(Wait::Never), Some(Received::Message(e)) if e.msg == 3));
    let publisher = writer.join().expect("writer");
    drop(sub);
    publisher.close().expect("close");
    bus.finish();
    drop(dir);
}
