//! Async receiving: tasks on the current-thread and the
//! multi-thread tokio runtime receive from buses, pools and streams that
//! other processes feed, through `recv_async`/`pop_async` and the
//! process's one waiter thread: every message once and in order, nothing
//! lost to a cancelled future, no registration left after a runtime shuts
//! down, a killed producer reported, no CPU while idle.
//!
//! The tests run one at a time (`SERIAL`): they count the process's
//! registrations and its CPU time, which other tests would disturb.
//! Each child is this test binary run again (see `common`).

mod common;

use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{BusName, param, print_result, role, spawn_child};
use shmbus::blackboard::{self, Reader, Writer};
use shmbus::pool;
use shmbus::stream::{self, Consumer, PopError, Producer};
use shmbus::{BusOptions, OpenOptions, Publisher, Received, Start, Subscriber, Wait};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Attaches to `SHMBUS_BUS` (a bus, pool or stream, `SHMBUS_KIND`) as its
/// writer and sends `SHMBUS_COUNT` sequence numbers, pausing `SHMBUS_PAUSE_US`
/// every 16 so that readers fall asleep now and then.
#[test]
fn as_child_feed() {
    role("feeder", || {
        let name: String = param("SHMBUS_BUS");
        let kind: String = param("SHMBUS_KIND");
        let count: u64 = param("SHMBUS_COUNT");
        let pause_us: u64 = param("SHMBUS_PAUSE_US");
        let opts = OpenOptions::default();
        let pause = |i: u64| {
            if i % 16 == 15 {
                std::thread::sleep(Duration::from_micros(pause_us));
            }
        };
        match kind.as_str() {
            "bus" => {
                let mut p = Publisher::<u64>::attach(&name, &opts).expect("attach bus");
                common::print_ready();
                for i in 0..count {
                    p.publish(&i);
                    pause(i);
                }
            }
            "pool" => {
                let mut p = pool::Publisher::<[u8]>::attach(&name, &opts).expect("attach pool");
                common::print_ready();
                for i in 0..count {
                    let mut loan = p.loan(8, Wait::Forever).expect("loan");
                    loan.copy_from_slice(&i.to_le_bytes());
                    loan.publish().expect("publish");
                    pause(i);
                }
            }
            "stream" => {
                let mut p = Producer::<[u8]>::attach(&name, &opts).expect("attach stream");
                common::print_ready();
                for i in 0..count {
                    p.push(&i.to_le_bytes(), Wait::Forever).expect("push");
                    pause(i);
                }
            }
            "stream-u64" => {
                let mut p = Producer::<u64>::attach(&name, &opts).expect("attach stream");
                common::print_ready();
                for i in 0..count {
                    p.push(&i, Wait::Forever).expect("push");
                    pause(i);
                }
                // Exits without the clean drop (which clears its pid: a
                // producer that left, not one that died): as a crash.
                std::mem::forget(p);
            }
            "blackboard" => {
                // Key `i % 4` gets value `i`: versions are `i + 1`.
                let mut w = Writer::<u64, u64>::attach(&name, &opts).expect("attach blackboard");
                common::print_ready();
                for i in 0..count {
                    w.put(&(i % 4), &i).expect("put");
                    pause(i);
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

fn feeder(bus: &BusName, kind: &str, count: u64, pause_us: u64) -> common::Watched {
    let mut c = spawn_child(
        "as_child_feed",
        "feeder",
        &[
            ("SHMBUS_BUS", bus.name().to_owned()),
            ("SHMBUS_KIND", kind.to_owned()),
            ("SHMBUS_COUNT", count.to_string()),
            ("SHMBUS_PAUSE_US", pause_us.to_string()),
        ],
    );
    c.wait_ready();
    c
}

/// A runtime with its I/O driver: its waits use the io_uring wake where
/// the kernel has it, unless `SHMBUS_AIO_WAKE=thread` (CI runs this file
/// both ways).
fn runtime(multi: bool) -> tokio::runtime::Runtime {
    builder(multi).enable_all().build().expect("runtime")
}

/// A runtime without an I/O driver: its waits always use the waiter
/// thread (the tests of the thread itself).
fn thread_runtime(multi: bool) -> tokio::runtime::Runtime {
    builder(multi).enable_time().build().expect("runtime")
}

fn builder(multi: bool) -> tokio::runtime::Builder {
    if multi {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(2);
        b
    } else {
        tokio::runtime::Builder::new_current_thread()
    }
}

/// Waits (bounded) until the waiter holds no registration.
fn assert_no_registration_left() {
    let deadline = Instant::now() + Duration::from_secs(5);
    while shmbus::aio::registrations() != 0 {
        assert!(
            Instant::now() < deadline,
            "{} registrations left",
            shmbus::aio::registrations()
        );
        std::thread::yield_now();
    }
}

/// Waits (bounded) until `n` futures are registered with the waiter.
async fn all_registered(n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while shmbus::aio::registrations() < n {
        assert!(Instant::now() < deadline, "the tasks never registered");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

async fn take_bus(mut sub: Subscriber<u64>, n: u64) {
    for want in 0..n {
        match sub.recv_async().await {
            Received::Message(got) => assert_eq!(got, want, "bus: in order, once"),
            Received::Lagged { skipped } => panic!("bus lapped by {skipped}"),
        }
    }
}

async fn take_pool(mut sub: pool::Subscriber<[u8]>, n: u64) {
    for want in 0..n {
        match sub.recv_async().await.expect("pool recv") {
            Received::Message(s) => {
                let got = u64::from_le_bytes(s[..8].try_into().expect("8 bytes"));
                assert_eq!(got, want, "pool: in order, once");
            }
            Received::Lagged { skipped } => panic!("pool lapped by {skipped}"),
        }
    }
}

async fn take_stream(mut c: Consumer<[u8]>, n: u64) {
    let mut out = Vec::new();
    for want in 0..n {
        c.pop_async(&mut out).await.expect("pop");
        let got = u64::from_le_bytes(out[..].try_into().expect("8 bytes"));
        assert_eq!(got, want, "stream: in order, once");
    }
}

fn many_tasks_on_many_buses(multi: bool) {
    let _serial = serial();
    let n = common::scale_min(5_000, 500);
    let label = if multi { "mt" } else { "ct" };
    let buses: Vec<_> = (0..6)
        .map(|i| BusName::new(&format!("aio-{label}-bus-{i}")))
        .collect();
    let pool = BusName::new(&format!("aio-{label}-pool"));
    let stream = BusName::new(&format!("aio-{label}-stream"));
    // Big enough that a reader that keeps up is never lapped (a lap fails).
    for b in &buses {
        drop(Publisher::<u64>::create(b.name(), &BusOptions::new(1 << 14)).expect("bus"));
    }
    drop(
        pool::Publisher::<[u8]>::create(pool.name(), &pool::Options::new(1 << 13, 64, 1 << 14))
            .expect("pool"),
    );
    drop(Producer::<[u8]>::create(stream.name(), &stream::Options::new(1 << 16)).expect("stream"));
    let open = OpenOptions::default().start(Start::Oldest);
    let rt = runtime(multi);
    let mut tasks = Vec::new();
    // Two tasks per bus, each with its own subscriber: both get everything.
    for b in &buses {
        for _ in 0..2 {
            let sub = Subscriber::<u64>::open(b.name(), &open).expect("open bus");
            tasks.push(rt.spawn(take_bus(sub, n)));
        }
    }
    let on_pool = pool::Subscriber::<[u8]>::open(pool.name(), &open).expect("open pool");
    tasks.push(rt.spawn(take_pool(on_pool, n)));
    let on_stream = Consumer::<[u8]>::attach(stream.name(), &open).expect("open stream");
    tasks.push(rt.spawn(take_stream(on_stream, n)));
    let mut children: Vec<_> = buses.iter().map(|b| feeder(b, "bus", n, 100)).collect();
    children.push(feeder(&pool, "pool", n, 100));
    children.push(feeder(&stream, "stream", n, 100));
    let deadline = common::scale_deadline(Duration::from_secs(60));
    rt.block_on(async {
        tokio::time::timeout(deadline, async {
            for t in tasks {
                t.await.expect("task");
            }
        })
        .await
        .expect("every task got every message before the deadline");
    });
    for c in children {
        c.wait_success();
    }
    drop(rt);
    assert_no_registration_left();
    for b in buses.into_iter().chain([pool, stream]) {
        b.finish();
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn many_tasks_on_a_current_thread_runtime_get_every_message_of_many_buses_fed_by_other_processes_once_in_order()
 {
    many_tasks_on_many_buses(false);
}

#[test]
#[cfg_attr(miri, ignore)]
fn many_tasks_on_a_multi_thread_runtime_get_every_message_of_many_buses_fed_by_other_processes_once_in_order()
 {
    many_tasks_on_many_buses(true);
}

fn cancellation_at_random_points(multi: bool) {
    let _serial = serial();
    let n = common::scale_min(3_000, 500);
    let label = if multi { "mt" } else { "ct" };
    let bus = BusName::new(&format!("aio-cancel-{label}"));
    let stream = BusName::new(&format!("aio-cancel-{label}-stream"));
    drop(Publisher::<u64>::create(bus.name(), &BusOptions::new(1 << 14)).expect("bus"));
    drop(Producer::<[u8]>::create(stream.name(), &stream::Options::new(1 << 16)).expect("stream"));
    let open = OpenOptions::default().start(Start::Oldest);
    let mut sub = Subscriber::<u64>::open(bus.name(), &open).expect("open bus");
    let mut consumer = Consumer::<[u8]>::attach(stream.name(), &open).expect("open stream");
    // Pauses of 2 ms every 16 messages: the reader drains the bus and
    // the stream, and its timers (under 400 µs) fire while it waits.
    let children = [
        feeder(&bus, "bus", n, 2_000),
        feeder(&stream, "stream", n, 2_000),
    ];
    let rt = runtime(multi);
    let deadline = Instant::now() + common::scale_deadline(Duration::from_secs(60));
    let cancelled = rt.block_on(async {
        let mut rng = 0x5eed_u64;
        let mut next = [0u64; 2];
        let mut cancelled = 0u64;
        let mut out = Vec::new();
        while next.iter().any(|&k| k < n) {
            assert!(Instant::now() < deadline, "stuck at {next:?} of {n}");
            rng = common::splitmix(rng);
            // A timer anywhere from at once to 400 µs: many futures are
            // dropped while registered, some just as a message comes.
            let limit = Duration::from_micros(rng % 400);
            tokio::select! {
                got = sub.recv_async(), if next[0] < n => match got {
                    Received::Message(v) => {
                        assert_eq!(v, next[0], "bus: in order, once");
                        next[0] += 1;
                    }
                    Received::Lagged { skipped } => panic!("bus lapped by {skipped}"),
                },
                got = consumer.pop_async(&mut out), if next[1] < n => {
                    got.expect("pop");
                    let v = u64::from_le_bytes(out[..].try_into().expect("8 bytes"));
                    assert_eq!(v, next[1], "stream: in order, once");
                    next[1] += 1;
                }
                () = tokio::time::sleep(limit) => cancelled += 1,
            }
        }
        cancelled
    });
    assert!(
        cancelled > 0,
        "no future was cancelled: the test tested nothing"
    );
    for c in children {
        c.wait_success();
    }
    drop(rt);
    assert_no_registration_left();
    drop((sub, consumer));
    bus.finish();
    stream.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn futures_dropped_at_random_points_on_a_current_thread_runtime_lose_no_message() {
    cancellation_at_random_points(false);
}

#[test]
#[cfg_attr(miri, ignore)]
fn futures_dropped_at_random_points_on_a_multi_thread_runtime_lose_no_message() {
    cancellation_at_random_points(true);
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_runtime_shut_down_while_its_tasks_wait_returns_and_leaves_no_registration() {
    let _serial = serial();
    let names: Vec<_> = (0..8)
        .map(|i| BusName::new(&format!("aio-shutdown-{i}")))
        .collect();
    let publishers: Vec<_> = names
        .iter()
        .map(|b| Publisher::<u64>::create(b.name(), &BusOptions::new(8)).expect("create"))
        .collect();
    for multi in [false, true] {
        let rt = runtime(multi);
        for b in &names {
            let mut sub = Subscriber::<u64>::open(b.name(), &OpenOptions::default()).expect("open");
            rt.spawn(async move {
                let _ = sub.recv_async().await;
                unreachable!("nothing is published");
            });
        }
        // Every task registered: they are asleep, not spinning. (A
        // current-thread runtime runs its tasks inside `block_on` only.)
        rt.block_on(all_registered(names.len()));
        let asked = Instant::now();
        rt.shutdown_timeout(Duration::from_secs(10));
        assert!(asked.elapsed() < Duration::from_secs(5), "shutdown hung");
        assert_no_registration_left();
    }
    drop(publishers);
    for b in names {
        b.finish();
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_task_waiting_on_a_stream_whose_producer_is_killed_ends_with_peer_gone() {
    let _serial = serial();
    let s = BusName::new("aio-gone");
    drop(Producer::<[u8]>::create(s.name(), &stream::Options::new(4096)).expect("stream"));
    let mut consumer = Consumer::<[u8]>::attach(s.name(), &OpenOptions::default()).expect("open");
    let child = feeder(&s, "stream-idle", 0, 0);
    let pid = child.pid();
    for multi in [false, true] {
        let rt = runtime(multi);
        let got = rt.block_on(async {
            let mut out = Vec::new();
            let waiting = consumer.pop_async(&mut out);
            // The producer lives: the pop waits.
            tokio::time::timeout(Duration::from_millis(60), waiting)
                .await
                .is_err()
        });
        assert!(got, "a pop returned while the producer lived");
        drop(rt);
    }
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        child.kill()
    });
    let rt = runtime(true);
    let asked = Instant::now();
    let got = rt.block_on(async {
        let mut out = Vec::new();
        tokio::time::timeout(Duration::from_secs(30), consumer.pop_async(&mut out)).await
    });
    assert_eq!(
        got.expect("no hang"),
        Err(PopError::PeerGone { pid }),
        "the pop says the producer is gone"
    );
    assert!(asked.elapsed() < Duration::from_secs(5));
    drop(killer.join().expect("killer"));
    drop(rt);
    assert_no_registration_left();
    drop(consumer);
    s.finish();
}

/// Waits for each change of key `k` as the feeder's `blackboard` writes
/// it: versions and values only move forward, each value belongs to `k`
/// and matches its version, and the last is the feeder's last for `k`.
async fn follow_key(mut reader: Reader<u64, u64>, k: u64, count: u64) -> u64 {
    let last = (0..count).rev().find(|i| i % 4 == k).expect("a write of k");
    let (mut since, mut seen) = (0, 0);
    loop {
        let got = reader.wait_key_async(&k, since).await.expect("key read");
        let v = got.value.expect("never removed");
        assert!(got.version > since, "version {} after {since}", got.version);
        assert_eq!(
            (v % 4, got.version),
            (k, v + 1),
            "value and version of key {k}"
        );
        since = got.version;
        seen += 1;
        if v == last {
            return seen;
        }
    }
}

/// Waits for the table's version to reach `count`, one change at a time.
async fn follow_table(mut reader: Reader<u64, u64>, count: u64) -> u64 {
    let (mut since, mut wakes) = (0, 0);
    while since < count {
        let v = reader.wait_changed_async(since).await;
        assert!(
            v > since && v <= count,
            "version {v} after {since} (of {count})"
        );
        since = v;
        wakes += 1;
    }
    wakes
}

#[test]
#[cfg_attr(miri, ignore)]
fn tasks_waiting_on_a_blackboard_another_process_writes_see_each_key_reach_its_last_value() {
    let _serial = serial();
    let count = common::scale_min(4_000, 64);
    for multi in [false, true] {
        let b = BusName::new("aio-board");
        drop(Writer::<u64, u64>::create(b.name(), &blackboard::Options::new(8)).expect("board"));
        let open = || Reader::<u64, u64>::open(b.name(), &OpenOptions::default()).expect("reader");
        let rt = runtime(multi);
        let readers: Vec<_> = (0..5).map(|_| open()).collect();
        let (wakes, per_key) = rt.block_on(async {
            let mut readers = readers.into_iter();
            let table = tokio::spawn(follow_table(readers.next().expect("r"), count));
            let keys: Vec<_> = (0..4)
                .map(|k| tokio::spawn(follow_key(readers.next().expect("r"), k, count)))
                .collect();
            // Every task waits before the feeder starts: each wake is the
            // waiter's, not a first look.
            all_registered(5).await;
            let child = feeder(&b, "blackboard", count, 200);
            let wakes = tokio::time::timeout(Duration::from_secs(60), table)
                .await
                .expect("the table task ended")
                .expect("table task");
            let mut per_key = Vec::new();
            for k in keys {
                let seen = tokio::time::timeout(Duration::from_secs(60), k)
                    .await
                    .expect("a key task ended")
                    .expect("key task");
                per_key.push(seen);
            }
            child.wait_success();
            (wakes, per_key)
        });
        eprintln!(
            "blackboard async multi={multi}: {count} puts, the table task woke {wakes} times, the key tasks saw {per_key:?} changes"
        );
        drop(rt);
        assert_no_registration_left();
        b.finish();
    }
}

/// CPU time this whole process has used.
fn process_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a live timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0);
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_hundred_idle_async_subscribers_use_no_cpu() {
    let _serial = serial();
    let names: Vec<_> = (0..100)
        .map(|i| BusName::new(&format!("aio-idle-{i}")))
        .collect();
    let publishers: Vec<_> = names
        .iter()
        .map(|b| Publisher::<u64>::create(b.name(), &BusOptions::new(8)).expect("create"))
        .collect();
    for multi in [false, true] {
        let rt = runtime(multi);
        for b in &names {
            let mut sub = Subscriber::<u64>::open(b.name(), &OpenOptions::default()).expect("open");
            rt.spawn(async move {
                let _ = sub.recv_async().await;
            });
        }
        // (A current-thread runtime runs its tasks inside `block_on` only.)
        rt.block_on(all_registered(names.len()));
        // The waiter thread, the runtime's threads and this one, over 500 ms.
        let (wall, cpu) = rt.block_on(async {
            let cpu = process_cpu();
            let wall = Instant::now();
            tokio::time::sleep(Duration::from_millis(500)).await;
            (wall.elapsed(), process_cpu() - cpu)
        });
        // A spinning or polling wait uses about all of the 500 ms.
        assert!(
            cpu < Duration::from_millis(25),
            "used {cpu:?} of CPU in {wall:?} idle (multi-thread: {multi})"
        );
        rt.shutdown_timeout(Duration::from_secs(10));
        assert_no_registration_left();
    }
    drop(publishers);
    for b in names {
        b.finish();
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn more_tasks_than_futex_waitv_takes_are_all_woken() {
    let _serial = serial();
    // 130 waiting futures: 131 words with the control word, more than one
    // futex_waitv takes (128), so the waiter naps and looks.
    let mut publishers: Vec<_> = (0..130)
        .map(|_| Publisher::<u64, _>::on_heap(8).expect("heap bus"))
        .collect();
    for multi in [false, true] {
        let rt = runtime(multi);
        let tasks: Vec<_> = publishers
            .iter()
            .map(|p| {
                let mut sub = p.subscribe(Start::Next, shmbus::WaitStrategy::default());
                rt.spawn(async move { sub.recv_async().await })
            })
            .collect();
        rt.block_on(all_registered(publishers.len()));
        for (i, p) in publishers.iter_mut().enumerate() {
            p.publish(&(i as u64));
        }
        rt.block_on(async {
            tokio::time::timeout(Duration::from_secs(10), async {
                for (i, t) in tasks.into_iter().enumerate() {
                    assert_eq!(t.await.expect("task"), Received::Message(i as u64));
                }
            })
            .await
            .expect("every task woken");
        });
        drop(rt);
        assert_no_registration_left();
    }
}

/// Waits (bounded) until this process's waiter thread is asleep (state
/// `S`): it never sleeps holding its registry lock, so a fork now copies
/// that lock unlocked. Returns the system call it sleeps in, as
/// /proc/self/task/TID/syscall says it (its number, then its arguments).
fn waiter_asleep() -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let asleep = std::fs::read_dir("/proc/self/task")
            .expect("/proc/self/task")
            .filter_map(Result::ok)
            .find_map(|t| {
                let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
                let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
                // The state follows the command name's closing parenthesis.
                let state = stat
                    .rsplit(')')
                    .next()
                    .and_then(|r| r.trim().chars().next());
                let call = std::fs::read_to_string(t.path().join("syscall")).unwrap_or_default();
                (comm.trim() == "shmbus-aio" && state == Some('S')).then_some(call)
            });
        if let Some(call) = asleep {
            return call;
        }
        assert!(Instant::now() < deadline, "the waiter thread never slept");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Whether this kernel has `futex_waitv` (5.16): `ENOSYS` if not, `EINVAL`
/// for no words if so.
fn kernel_has_futex_waitv() -> bool {
    // SAFETY: no words (a null array of length 0) and no timeout: the
    // kernel reads nothing.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_futex_waitv,
            std::ptr::null::<u8>(),
            0u32,
            0u32,
            std::ptr::null::<u8>(),
            0i32,
        )
    };
    !(rc == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS))
}

#[test]
#[cfg_attr(miri, ignore)]
fn two_hundred_tasks_waiting_on_one_bus_leave_the_waiter_asleep_in_one_futex_waitv() {
    let _serial = serial();
    let mut publisher = Publisher::<u64, _>::on_heap(8).expect("heap bus");
    let n = 200;
    let rt = thread_runtime(false);
    let tasks: Vec<_> = (0..n)
        .map(|_| {
            let mut sub = publisher.subscribe(Start::Next, shmbus::WaitStrategy::default());
            rt.spawn(async move { sub.recv_async().await })
        })
        .collect();
    // A current-thread runtime: every registration (and its bump of the
    // control word) was made on this thread before this returns, so the
    // waiter's next sleep is on all of them.
    rt.block_on(all_registered(n));
    let call = waiter_asleep();
    let fields: Vec<&str> = call.split_whitespace().collect();
    if !kernel_has_futex_waitv() {
        eprintln!("no futex_waitv on this kernel: the waiter naps ({call})");
    } else {
        // futex_waitv (449) on two words, the control word and the bus's
        // bell, with no timeout: not the 1 ms naps of the fallback on the
        // control word (202, FUTEX_WAIT with a timeout) that one entry a
        // task, 201 in all, past the call's 128, made it take.
        assert_eq!(
            (fields.first(), fields.get(2), fields.get(4)),
            (Some(&"449"), Some(&"0x2"), Some(&"0x0")),
            "the waiter sleeps in {call:?}, expected futex_waitv (449) on 2 words, no timeout"
        );
    }
    publisher.publish(&7);
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(10), async {
            for t in tasks {
                assert_eq!(t.await.expect("task"), Received::Message(7));
            }
        })
        .await
        .expect("every task woken");
    });
    drop(rt);
    assert_no_registration_left();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_forked_child_starts_its_own_waiter_and_its_tasks_are_woken() {
    let _serial = serial();
    // The parent's waiter runs (threads do not survive fork).
    thread_runtime(false).block_on(async {
        let mut p = Publisher::<u64, _>::on_heap(8).expect("heap bus");
        let mut sub = p.subscribe(Start::Next, shmbus::WaitStrategy::default());
        let waiting = tokio::time::timeout(Duration::from_millis(5), sub.recv_async()).await;
        assert!(waiting.is_err());
        p.publish(&1);
        assert_eq!(sub.recv_async().await, Received::Message(1));
    });
    assert_no_registration_left();
    waiter_asleep();
    // (Nothing else of this binary uses aio meanwhile: SERIAL.)
    in_forked_child(|| wait_once(&thread_runtime(false), 2))
        .expect("the forked child's task was woken");
}

/// One task of `rt` waits on a heap bus that a thread publishes `value`
/// on once the task sleeps (is registered); it gets the value within 5 s
/// and leaves no registration.
fn wait_once(rt: &tokio::runtime::Runtime, value: u64) {
    rt.block_on(async {
        let mut p = Publisher::<u64, _>::on_heap(8).expect("heap bus");
        let mut sub = p.subscribe(Start::Next, shmbus::WaitStrategy::default());
        let publisher = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(5);
            while shmbus::aio::registrations() == 0 && Instant::now() < deadline {
                std::thread::yield_now();
            }
            p.publish(&value);
            p
        });
        let got = tokio::time::timeout(Duration::from_secs(5), sub.recv_async()).await;
        drop(publisher.join());
        assert_eq!(got.expect("woken"), Received::Message(value));
    });
    assert_eq!(shmbus::aio::registrations(), 0);
}

/// Runs `f` in a forked child under a 10 s watchdog: `Err` with the wait
/// status if it panicked, or with where its threads wait if it hung (it
/// is killed). The child runs only `f` and then `_exit`, never returning
/// into the test harness.
fn in_forked_child(f: impl FnOnce()) -> Result<(), String> {
    // The spawn lock in the test's own process only: a forked child's copy
    // is held (its parent held it at the fork).
    static TEST_PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    let test_process = std::process::id() == *TEST_PID.get_or_init(std::process::id);
    let _no_spawn = test_process.then(common::no_spawn_in_flight);
    // SAFETY: the child runs only `f` and then _exit (see above); the
    // caller holds SERIAL, so no other test's aio lock is held at the fork.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_ok();
        // SAFETY: ends the child without running the parent's atexit work.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid out-pointer; `pid` is our child.
        let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if rc == pid {
            break;
        }
        assert_eq!(rc, 0, "waitpid: {}", std::io::Error::last_os_error());
        if Instant::now() > deadline {
            let threads = threads_of(pid);
            // SAFETY: our own child, not yet reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return Err(format!("the forked child hung for 10 s: {threads}"));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else {
        Err(format!("the forked child failed (wait status {status:#x})"))
    }
}

/// Whether this process has a thread named `shmbus-aio` (the waiter).
fn has_waiter_thread() -> bool {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .filter_map(Result::ok)
        .any(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == "shmbus-aio")
        })
}

/// The wake this process should use on a runtime with an I/O driver: the
/// ring, unless the environment forces the thread or the kernel lacks
/// io_uring's FUTEX_WAIT (then the mechanism names which).
fn ring_expected() -> bool {
    use shmbus::aio::{WakeMechanism, WhyThread};
    let rt = runtime(false);
    let mechanism = rt.block_on(async { shmbus::aio::wake_mechanism() });
    let forced = std::env::var("SHMBUS_AIO_WAKE").is_ok_and(|v| v == "thread");
    match mechanism {
        WakeMechanism::IoUring => {
            assert!(!forced, "SHMBUS_AIO_WAKE=thread, yet the ring is used");
            true
        }
        WakeMechanism::WaiterThread(why) => {
            let expected = if forced {
                WhyThread::Forced
            } else {
                WhyThread::NoFutexWait
            };
            assert_eq!(why, expected, "the waiter thread is used because {why}");
            eprintln!("async waits use the waiter thread: {why}");
            false
        }
        other => panic!("unknown mechanism {other}"),
    }
}

/// On a runtime with its I/O driver, a waiting task is woken through the
/// runtime's own reactor (an io_uring FUTEX_WAIT), with no waiter thread:
/// checked in forked children, where no thread of the parent's survives,
/// one forked after its parent waited on a ring of its own (the child must
/// make its own ring, never use its parent's). With `SHMBUS_AIO_WAKE=thread`
/// the same waits go through the waiter thread.
#[test]
#[cfg_attr(miri, ignore)]
fn a_task_on_a_runtime_with_its_io_driver_is_woken_by_its_reactor_without_a_waiter_thread() {
    let _serial = serial();
    let ring = ring_expected();
    in_forked_child(|| {
        wait_once(&runtime(false), 1);
        assert_eq!(
            has_waiter_thread(),
            !ring,
            "a waiter thread iff the ring is not used"
        );
        // This thread now holds a ring (of this child); its own child must
        // leave it alone and make another.
        in_forked_child(|| {
            wait_once(&runtime(false), 2);
            assert_eq!(has_waiter_thread(), !ring);
        })
        .expect("the grandchild's task was woken");
    })
    .expect("the child's task was woken");
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_subscribers_message_stream_yields_every_message_of_another_process_once_in_order() {
    use futures_core::Stream;
    let _serial = serial();
    let n = common::scale_min(3_000, 500);
    let bus = BusName::new("aio-stream-items");
    drop(Publisher::<u64>::create(bus.name(), &BusOptions::new(1 << 14)).expect("bus"));
    let open = OpenOptions::default().start(Start::Oldest);
    let mut sub = Subscriber::<u64>::open(bus.name(), &open).expect("open");
    let child = feeder(&bus, "bus", n, 500);
    let started = Instant::now();
    runtime(true).block_on(async {
        let mut messages = sub.messages();
        for want in 0..n {
            let next = std::future::poll_fn(|cx| std::pin::Pin::new(&mut messages).poll_next(cx));
            // (A timer that fires polls the stream once more: a stream
            // that was never woken would still get there, late, so the
            // test bounds the total time below.)
            match tokio::time::timeout(Duration::from_secs(30), next).await {
                Ok(Some(Received::Message(v))) => assert_eq!(v, want, "in order, once"),
                other => panic!("expected message {want}, got {other:?}"),
            }
        }
    });
    // The feeder takes about n / 16 × 0.5 ms.
    let limit = common::scale_deadline(Duration::from_secs(10));
    assert!(
        started.elapsed() < limit,
        "took {:?}: a stream that is not woken waits for its timer",
        started.elapsed()
    );
    child.wait_success();
    assert_no_registration_left();
    drop(sub);
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_leaked_waiting_future_whose_bus_is_unmapped_harms_neither_the_waiter_nor_other_tasks() {
    let _serial = serial();
    let gone = BusName::new("aio-leaked");
    let live = BusName::new("aio-leaked-live");
    let mut gone_pub = Publisher::<u64>::create(gone.name(), &BusOptions::new(8)).expect("bus");
    let mut live_pub = Publisher::<u64>::create(live.name(), &BusOptions::new(8)).expect("bus");
    // (The live subscriber maps first, so that its region does not land
    // where the dropped one was.)
    let mut on_live = Subscriber::<u64>::open(live.name(), &OpenOptions::default()).expect("open");
    let ring = ring_expected();
    // The waiter thread's, then (where the kernel has it) the ring's: a
    // future registered on a subscriber's mapping, then leaked (safe code
    // may do this), and the subscriber dropped: its region unmapped while
    // the waiter (or the kernel) still holds the word's address.
    for on_ring in [false, ring] {
        let rt = if on_ring {
            runtime(false)
        } else {
            thread_runtime(false)
        };
        let sub = Subscriber::<u64>::open(gone.name(), &OpenOptions::default()).expect("open");
        {
            let _in = rt.enter();
            let mut leaked = Box::pin(shmbus::aio::readable(&sub));
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            assert!(leaked.as_mut().poll(&mut cx).is_pending());
            std::mem::forget(leaked);
        }
        drop(sub);
        // Other tasks still sleep and wake, and the waiter lives on (a
        // read of the unmapped word would kill this process).
        rt.block_on(async {
            for i in 0..20u64 {
                let waiting =
                    tokio::time::timeout(Duration::from_millis(2), on_live.recv_async()).await;
                assert!(waiting.is_err(), "nothing published yet");
                live_pub.publish(&i);
                let got = tokio::time::timeout(Duration::from_secs(10), on_live.recv_async()).await;
                assert_eq!(got.expect("woken"), Received::Message(i));
            }
        });
        if on_ring {
            // The kernel keeps a ring's wait on the word of the file it
            // was made on, unmapped or not, reading nothing: it stays
            // until that word rings (or the ring closes).
            assert_eq!(shmbus::aio::registrations(), 1, "the leaked wait stays");
            gone_pub.publish(&1);
            // Its completion is reaped by the runtime's reactor: run it.
            rt.block_on(async {
                let deadline = Instant::now() + Duration::from_secs(5);
                while shmbus::aio::registrations() != 0 && Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            });
        }
        // The waiter's stale registration went with a wake of everyone
        // (EFAULT); the ring's with its word's ring.
        assert_no_registration_left();
    }
    drop(on_live);
    gone.finish();
    live.finish();
}

/// Opens `SHMBUS_BUS` lossless and reads `SHMBUS_COUNT` messages: the
/// first `SHMBUS_SLOW` of them 2 ms apart (a slow reader the publisher
/// must wait for), the rest at once; reports what it got.
#[test]
fn as_child_read_lossless_slowly() {
    role("slow-lossless", || {
        let name: String = param("SHMBUS_BUS");
        let count: u64 = param("SHMBUS_COUNT");
        let slow: u64 = param("SHMBUS_SLOW");
        let opts = OpenOptions::default().start(Start::Next).lossless(true);
        let mut sub = Subscriber::<u64>::open(&name, &opts).expect("open lossless");
        common::print_ready();
        let (mut delivered, mut skipped, mut wrong) = (0u64, 0u64, 0u64);
        while sub.position() < count {
            let pos = sub.position();
            match sub.recv(Wait::For(Duration::from_secs(60))) {
                Some(Received::Message(m)) => {
                    delivered += 1;
                    wrong += u64::from(m != pos);
                }
                Some(Received::Lagged { skipped: n }) => skipped += n,
                None => panic!("nothing for 60 s at {pos}"),
            }
            if pos < slow {
                std::thread::sleep(Duration::from_millis(2));
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

/// The async publisher wait: a task publishing with
/// `publish_async` to a lossless subscriber in another process that is
/// slow, then catches up, awaits room without blocking its thread (a
/// ticker task on the same current-thread runtime runs meanwhile), and
/// the subscriber gets every message once, in order; futures dropped
/// while they waited for room (a zero timeout) published nothing: the
/// same value published again is seen once.
#[test]
#[cfg_attr(miri, ignore)]
fn an_async_publisher_awaits_a_slow_lossless_subscriber_without_blocking_its_thread_and_a_dropped_publish_published_nothing()
 {
    let _serial = serial();
    const SLOW: u64 = 64;
    let n = common::scale_min(3_000, 300);
    let bus = BusName::new("aio-publish");
    let opts = BusOptions::new(8).evict_after(Duration::from_secs(60));
    let mut publisher = Publisher::<u64>::create(bus.name(), &opts).expect("bus");
    let mut child = spawn_child(
        "as_child_read_lossless_slowly",
        "slow-lossless",
        &[
            ("SHMBUS_BUS", bus.name().to_owned()),
            ("SHMBUS_COUNT", n.to_string()),
            ("SHMBUS_SLOW", SLOW.to_string()),
        ],
    );
    child.wait_ready();
    let (ticks, dropped) = runtime(false).block_on(async {
        let ticks = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let ticker = {
            let ticks = std::sync::Arc::clone(&ticks);
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            })
        };
        let mut dropped = 0u64;
        let mut ticks_while_slow = 0;
        for i in 0..n {
            if i % 4 == 0 {
                // Polled once: published if there is room, else dropped
                // while it waits (then it must have published nothing).
                match tokio::time::timeout(Duration::ZERO, publisher.publish_async(&i)).await {
                    Ok(seq) => {
                        assert_eq!(seq, i, "one sequence per message");
                        continue;
                    }
                    Err(_) => dropped += 1,
                }
            }
            let seq = tokio::time::timeout(Duration::from_secs(30), publisher.publish_async(&i))
                .await
                .expect("room within 30 s");
            assert_eq!(seq, i, "a dropped publish published nothing");
            if i == SLOW {
                ticks_while_slow = ticks.load(std::sync::atomic::Ordering::Relaxed);
            }
        }
        ticker.abort();
        (ticks_while_slow, dropped)
    });
    let got = child.wait_success().result();
    assert_eq!(got.get::<u64>("delivered"), n, "every message");
    assert_eq!(got.get::<u64>("skipped"), 0);
    assert_eq!(got.get::<u64>("wrong"), 0, "once, in order");
    assert_eq!(got.get::<u8>("lossless"), 1, "never evicted");
    // The slow phase takes at least SLOW × 2 ms: a publisher that blocked
    // the runtime's one thread would leave the ticker no turn.
    assert!(
        ticks >= SLOW / 4,
        "the ticker ran {ticks} times in {SLOW} slow reads: the thread was blocked"
    );
    assert!(dropped > 0, "no publish was ever dropped while it waited");
    assert_no_registration_left();
    drop(publisher);
    bus.finish();
}

/// The next item of a stream, within 30 s.
async fn next_item<S: futures_core::Stream + Unpin>(
    stream: &mut S,
    what: &str,
    at: u64,
) -> Option<S::Item> {
    let next = std::future::poll_fn(|cx| std::pin::Pin::new(&mut *stream).poll_next(cx));
    match tokio::time::timeout(Duration::from_secs(30), next).await {
        Ok(item) => item,
        Err(_) => panic!("{what}: no item {at} within 30 s"),
    }
}

/// The async `Stream`s beyond the bus subscriber (feature
/// `async-stream`), each on its own task of a multi-thread runtime: a
/// typed stream consumer's `records()` fed by another process yields
/// every record once, in order, then `PeerGone` when that producer has
/// died (exited without its clean drop), then ends; a pool subscriber's `samples()` fed by another
/// process yields every sample once, in order; a typed journal
/// subscriber's `entries()` and a raw one's `recv_async` get every entry
/// once, in order, from the file and then the ring, while a thread
/// publishes.
#[test]
#[cfg_attr(miri, ignore)]
fn streams_of_a_stream_consumer_a_pool_and_a_journal_yield_every_item_once_in_order() {
    use shmbus::journal::{self, Entry, JoinOptions};
    let _serial = serial();
    let n = common::scale_min(3_000, 300);
    let stream = BusName::new("aio-records");
    let pool = BusName::new("aio-samples");
    let journaled = BusName::new("aio-entries");
    let dir = std::env::temp_dir().join(format!("shmbus-aio-entries-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    drop(Producer::<u64>::create(stream.name(), &stream::Options::new(1 << 16)).expect("stream"));
    drop(
        pool::Publisher::<[u8]>::create(pool.name(), &pool::Options::new(1 << 13, 64, 1 << 14))
            .expect("pool"),
    );
    let mut journal = journal::Publisher::<u64>::create(
        journaled.name(),
        &BusOptions::new(1 << 14),
        &journal::Options::new(dir.join("entries.journal")),
    )
    .expect("journal");
    // Half in the file before anyone joins; the rest while they read.
    for i in 0..n / 2 {
        journal.publish(&i).expect("journal publish");
    }
    let open = OpenOptions::default().start(Start::Oldest);
    let mut consumer = Consumer::<u64>::attach(stream.name(), &open).expect("consumer");
    let mut on_pool = pool::Subscriber::<[u8]>::open(pool.name(), &open).expect("pool sub");
    let mut typed = journal::Subscriber::<u64>::join(journaled.name(), &JoinOptions::default())
        .expect("join typed");
    let mut raw = journal::Subscriber::<[u8]>::join(journaled.name(), &JoinOptions::default())
        .expect("join raw");
    let rt = runtime(true);
    let tasks = vec![
        rt.spawn(async move {
            let mut records = consumer.records();
            for want in 0..n {
                assert_eq!(
                    next_item(&mut records, "records", want).await,
                    Some(Ok(want)),
                    "records"
                );
            }
            match next_item(&mut records, "records", n).await {
                Some(Err(PopError::PeerGone { .. })) => {}
                other => panic!("expected PeerGone after the last record, got {other:?}"),
            }
            assert!(
                next_item(&mut records, "records", n + 1).await.is_none(),
                "ended"
            );
        }),
        rt.spawn(async move {
            let mut samples = on_pool.samples();
            for want in 0..n {
                match next_item(&mut samples, "samples", want).await {
                    Some(Ok(Received::Message(s))) => {
                        let got = u64::from_le_bytes(s[..8].try_into().expect("8 bytes"));
                        assert_eq!(got, want, "samples: in order, once");
                    }
                    other => panic!("expected sample {want}, got {other:?}"),
                }
            }
        }),
        rt.spawn(async move {
            let mut entries = typed.entries();
            for want in 0..n {
                assert_eq!(
                    next_item(&mut entries, "entries", want).await,
                    Some(Received::Message(Entry {
                        seq: want,
                        msg: want
                    })),
                    "entries"
                );
            }
        }),
        rt.spawn(async move {
            for want in 0..n {
                match raw.recv_async().await {
                    Received::Message(Entry { seq, msg }) => {
                        assert_eq!(seq, want, "raw entries: in order, once");
                        assert_eq!(msg, &want.to_le_bytes()[..]);
                    }
                    other => panic!("expected raw entry {want}, got {other:?}"),
                }
            }
        }),
    ];
    let stream_feeder = feeder(&stream, "stream-u64", n, 200);
    let pool_feeder = feeder(&pool, "pool", n, 200);
    let publishing = std::thread::spawn(move || {
        for i in n / 2..n {
            journal.publish(&i).expect("journal publish");
            if i % 16 == 15 {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        journal
    });
    let deadline = common::scale_deadline(Duration::from_secs(60));
    rt.block_on(async {
        tokio::time::timeout(deadline, async {
            for t in tasks {
                t.await.expect("task");
            }
        })
        .await
        .expect("every stream yielded every item before the deadline");
    });
    stream_feeder.wait_success();
    pool_feeder.wait_success();
    let journal = publishing.join().expect("publisher thread");
    drop(rt);
    assert_no_registration_left();
    journal.close().expect("close");
    for b in [stream, pool, journaled] {
        b.finish();
    }
    std::fs::remove_dir_all(&dir).expect("remove dir");
}

/// Where each thread of `pid` waits (`/proc`: name, kernel wait channel,
/// system call), for a hung child's report.
fn threads_of(pid: i32) -> String {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return "gone".into();
    };
    tasks
        .filter_map(Result::ok)
        .map(|t| {
            let read = |f: &str| {
                std::fs::read_to_string(t.path().join(f))
                    .unwrap_or_default()
                    .trim()
                    .to_owned()
            };
            format!(
                "[{} wchan={} syscall={}]",
                read("comm"),
                read("wchan"),
                read("syscall")
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Forks while another thread registers and removes futures without
/// pause (so the waiter's registry lock is often held at the fork);
/// each child registers a future of its own, checks that it sees only
/// that one, and exits. Returns how many children did not finish within
/// their watchdog's 5 s (each is killed) and how many failed.
fn fork_children_while_registering(forks: u64) -> (u64, u64) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let stop = Arc::new(AtomicBool::new(false));
    let hammer = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let p = Publisher::<u64, _>::on_heap(8).expect("heap bus");
            let sub = p.subscribe(Start::Next, shmbus::WaitStrategy::default());
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            while !stop.load(Ordering::Relaxed) {
                let mut fut = Box::pin(shmbus::aio::readable(&sub));
                assert!(fut.as_mut().poll(&mut cx).is_pending());
            }
        })
    };
    let (mut hung, mut failed) = (0, 0);
    for _ in 0..forks {
        let _no_spawn = common::no_spawn_in_flight();
        // SAFETY: the child runs only the closure below (a heap bus, one
        // registration with the waiter, which starts a waiter thread of
        // its own) and then _exit, never returning into the harness.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
        if pid == 0 {
            let ok = std::panic::catch_unwind(|| {
                let p = Publisher::<u64, _>::on_heap(8).expect("heap bus");
                let sub = p.subscribe(Start::Next, shmbus::WaitStrategy::default());
                let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                let mut fut = Box::pin(shmbus::aio::readable(&sub));
                assert!(fut.as_mut().poll(&mut cx).is_pending());
                assert_eq!(shmbus::aio::registrations(), 1, "only the child's own");
                drop(fut);
                assert_eq!(shmbus::aio::registrations(), 0);
            })
            .is_ok();
            // SAFETY: ends the child without running the parent's atexit work.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut status = 0;
        loop {
            // SAFETY: `status` is a valid out-pointer; `pid` is our child.
            let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if rc == pid {
                failed += u64::from(!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0));
                break;
            }
            assert_eq!(rc, 0, "waitpid: {}", std::io::Error::last_os_error());
            if Instant::now() > deadline {
                eprintln!("forked child {pid} hung: {}", threads_of(pid));
                // SAFETY: our own child, not yet reaped.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                }
                hung += 1;
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    stop.store(true, Ordering::Relaxed);
    hammer.join().expect("the registering thread");
    (hung, failed)
}

/// A `fork()` while another thread holds the waiter's registry lock (a
/// registration, a removal, the waiter's snapshot) copies that lock held
/// into the child: the child's registrations must not wait on it. Each
/// process keeps a registry of its own (keyed by pid), and a child never
/// touches its parent's.
#[test]
#[cfg_attr(miri, ignore)]
fn a_child_forked_while_another_thread_registers_futures_registers_its_own_without_deadlock() {
    let _serial = serial();
    let forks = common::scale_min(40, 10);
    let (hung, failed) = fork_children_while_registering(forks);
    assert_eq!(
        (hung, failed),
        (0, 0),
        "of {forks} forked children, {hung} deadlocked registering and {failed} saw \
         registrations not their own"
    );
    assert_no_registration_left();
}

/// The pool's loan publishes async too: a loan whose descriptor a slow
/// lossless subscriber (a thread reading 2 ms apart, then at once) has no
/// room for awaits it without blocking the runtime's thread; a loan's
/// future dropped while it waited (a zero timeout) published nothing and
/// gave its block back; the subscriber gets every value once, in order.
#[test]
#[cfg_attr(miri, ignore)]
fn a_pool_loan_published_async_awaits_a_slow_lossless_subscriber_and_a_dropped_one_gives_its_block_back()
 {
    let _serial = serial();
    const SLOW: u64 = 32;
    let n = common::scale_min(1_000, 200);
    let bus = BusName::new("aio-loan");
    let opts = pool::Options::new(4, 64, 16).evict_after(Duration::from_secs(60));
    let mut publisher = pool::Publisher::<u64>::create(bus.name(), &opts).expect("pool");
    let lossless = OpenOptions::default().start(Start::Next).lossless(true);
    let mut sub = pool::Subscriber::<u64>::open(bus.name(), &lossless).expect("lossless");
    let reader = std::thread::spawn(move || {
        for want in 0..n {
            match sub.recv(Wait::For(Duration::from_secs(30))) {
                Ok(Some(Received::Message(s))) => assert_eq!(*s, want, "in order, once"),
                other => panic!("expected {want}, got {other:?}"),
            }
            if want < SLOW {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        assert!(sub.is_lossless(), "never evicted");
    });
    let dropped = runtime(false).block_on(async {
        let mut dropped = 0u64;
        for i in 0..n {
            if i % 2 == 0 {
                let mut loan = publisher.loan(Wait::Forever).expect("loan");
                *loan = i;
                match tokio::time::timeout(Duration::ZERO, loan.publish_async()).await {
                    Ok(seq) => {
                        assert_eq!(seq, Ok(i));
                        continue;
                    }
                    Err(_) => dropped += 1,
                }
            }
            let mut loan = publisher.loan(Wait::Forever).expect("loan");
            *loan = i;
            let seq = tokio::time::timeout(Duration::from_secs(30), loan.publish_async())
                .await
                .expect("room within 30 s");
            assert_eq!(seq, Ok(i), "a dropped publish published nothing");
        }
        dropped
    });
    reader.join().expect("reader");
    assert!(dropped > 0, "no publish was ever dropped while it waited");
    // Every dropped loan's block came back: none is loaned now.
    assert_eq!(publisher.census().loaned, 0, "{:?}", publisher.census());
    assert_no_registration_left();
    drop(publisher);
    bus.finish();
}
