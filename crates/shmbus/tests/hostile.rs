//! A hostile or unlucky peer: `clean` and `remove` racing attachers and
//! directory swaps, corrupt stamps and cursors, another user's dead buses.
//!
//! Race windows are opened deterministically with the library's unlink hook
//! (feature `test-hooks`): `clean` and `remove` stop just before they
//! re-check and unlink a file, holding whatever locks they hold, and the
//! test acts in that window. Every child runs under a watchdog.

mod common;

use std::ffi::OsStr;
use std::path::Path;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use common::{
    BusName, ShmDir, param, print_ready, print_result, role, spawn_child, wait_for_within,
};
use shmbus::stat;
use shmbus::wire::control;
use shmbus::{BusOptions, OpenOptions, Publisher, Received, Start, Subscriber};

/// The unlink hook is one per process: tests that run `clean` or `remove`
/// take turns.
static HOOK_USERS: Mutex<()> = Mutex::new(());

fn hook_turn() -> MutexGuard<'static, ()> {
    HOOK_USERS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The hook's gate: the hook says it has arrived, then waits for `open`.
struct Gate {
    state: Mutex<(bool, bool)>,
    cv: Condvar,
}

static GATE: Gate = Gate {
    state: Mutex::new((false, false)),
    cv: Condvar::new(),
};

fn pause_here(_: &OsStr) {
    let mut s = GATE.state.lock().unwrap();
    s.0 = true;
    GATE.cv.notify_all();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !s.1 {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "the test never opened the gate");
        s = GATE.cv.wait_timeout(s, left).unwrap().0;
    }
}

/// Arms the hook: the next unlink by `clean`/`remove` stops in `pause_here`.
fn arm() {
    *GATE.state.lock().unwrap() = (false, false);
    shmbus::internals::unlink_hook::set_before_unlink(Some(pause_here));
}

fn wait_arrived() {
    let mut s = GATE.state.lock().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !s.0 {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "clean/remove never reached its unlink");
        s = GATE.cv.wait_timeout(s, left).unwrap().0;
    }
}

fn open_gate_and_disarm() {
    shmbus::internals::unlink_hook::set_before_unlink(None);
    let mut s = GATE.state.lock().unwrap();
    s.1 = true;
    GATE.cv.notify_all();
}

/// A bus at `path` whose publisher has gone: what `clean` removes.
fn dead_bus(path: &Path) {
    // No child of another test may be mid-spawn holding a copy of our lock
    // when we drop it (see `no_spawn_in_flight`).
    let _no_fork = common::no_spawn_in_flight();
    let mut p = Publisher::<[u8]>::create(path.to_str().unwrap(), &BusOptions::new(8).msg_size(8))
        .expect("create");
    p.publish(b"12345678").expect("publish");
}

// ---------------------------------------------------------------------------
// 1. `clean` against a publisher that attaches after its decision.

/// Attaches to SHMBUS_BUS as publisher and publishes 5 messages; says
/// whether it could.
#[test]
fn as_child_attach_and_publish() {
    role("attach_publish", || {
        let name: String = param("SHMBUS_BUS");
        match Publisher::<[u8]>::attach(&name, &OpenOptions::default()) {
            Ok(mut p) => {
                for i in 0..5u64 {
                    p.publish(&i.to_le_bytes()).expect("publish");
                }
                print_result(&[("attached", "1".into()), ("error", "none".into())]);
            }
            Err(e) => print_result(&[
                ("attached", "0".into()),
                ("error", format!("{e}").replace(char::is_whitespace, "_")),
            ]),
        }
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_publisher_attaching_while_clean_removes_the_bus_fails_instead_of_publishing_into_an_orphan() {
    let _turn = hook_turn();
    let dir = ShmDir::new("clean-attach");
    let bus = BusName::in_dir(dir.path(), "bus");
    dead_bus(bus.path());

    arm();
    let dir_path = dir.path().to_owned();
    let cleaner = std::thread::spawn(move || stat::clean(&dir_path, false));
    // `clean` has decided the bus is abandoned and is about to unlink it.
    wait_arrived();
    let child = spawn_child(
        "as_child_attach_and_publish",
        "attach_publish",
        &[("SHMBUS_BUS", bus.name().to_owned())],
    )
    .wait_success();
    open_gate_and_disarm();
    let cleaned = cleaner.join().expect("clean thread").expect("clean");

    let r = child.result();
    let attached: u32 = r.get("attached");
    if attached == 1 {
        // Then clean must have spared it, with its messages.
        assert!(
            bus.path().exists(),
            "the publisher attached and published, and clean then deleted the bus: \
             every message is lost ({cleaned:?})"
        );
    } else {
        assert!(
            r.raw("error").unwrap().contains("locked_exclusively"),
            "{:?}",
            r.raw("error")
        );
        assert!(!bus.path().exists());
        assert!(matches!(&cleaned[..], [c] if c.result.is_ok() && c.path == bus.path()));
    }
    // Once it is gone, an attacher is told so.
    let late = spawn_child(
        "as_child_attach_and_publish",
        "attach_publish",
        &[("SHMBUS_BUS", bus.name().to_owned())],
    )
    .wait_success();
    if attached == 0 {
        assert_eq!(late.result().get::<u32>("attached"), 0);
        assert!(late.result().raw("error").unwrap().contains("no_such_bus"));
    }
    bus.finish();
    dir.finish();
}

// ---------------------------------------------------------------------------
// 2. `clean` and `remove` delete the file they checked.

/// How the test swaps things under `clean`/`remove` at the pause.
#[derive(Clone, Copy, Debug)]
enum Swap {
    /// The bus's directory becomes a symlink to a directory with a
    /// precious file of the same name.
    DirectoryToSymlink,
    /// Another (non-bus) file is renamed over the bus's name.
    NameToAnotherFile,
}

fn swapped_under(swap: Swap, by_clean: bool) {
    let _turn = hook_turn();
    let base = ShmDir::new("swap");
    let d = base.path().join("d");
    let victim = base.path().join("victim");
    std::fs::create_dir(&d).unwrap();
    std::fs::create_dir(&victim).unwrap();
    std::fs::write(victim.join("bus"), b"precious").unwrap();
    std::fs::write(d.join("other"), b"precious too").unwrap();
    dead_bus(&d.join("bus"));

    arm();
    let (d2, bus_path) = (d.clone(), d.join("bus"));
    let worker = std::thread::spawn(move || {
        if by_clean {
            stat::clean(&d2, false)
                .map(|v| format!("{v:?}"))
                .map_err(|e| e.to_string())
        } else {
            shmbus::remove(bus_path.to_str().unwrap())
                .map(|p| format!("{p:?}"))
                .map_err(|e| e.to_string())
        }
    });
    wait_arrived();
    match swap {
        Swap::DirectoryToSymlink => {
            std::fs::rename(&d, base.path().join("d.old")).unwrap();
            std::os::unix::fs::symlink(&victim, &d).unwrap();
        }
        Swap::NameToAnotherFile => std::fs::rename(d.join("other"), d.join("bus")).unwrap(),
    }
    open_gate_and_disarm();
    let outcome = worker.join().expect("worker");
    match swap {
        Swap::DirectoryToSymlink => {
            assert_eq!(
                std::fs::read(victim.join("bus")).ok().as_deref(),
                Some(&b"precious"[..]),
                "{swap:?}: a file behind the symlink was deleted ({outcome:?})"
            );
            // The bus it checked is what went.
            assert!(!base.path().join("d.old/bus").exists(), "{outcome:?}");
        }
        Swap::NameToAnotherFile => {
            assert_eq!(
                std::fs::read(d.join("bus")).ok().as_deref(),
                Some(&b"precious too"[..]),
                "{swap:?}: the file renamed over the bus was deleted ({outcome:?})"
            );
            let said = match &outcome {
                Ok(s) | Err(s) => s.clone(),
            };
            assert!(
                said.contains("Replaced") || said.contains("no such bus"),
                "{said}"
            );
        }
    }
    base.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn clean_deletes_the_bus_it_checked_not_what_a_directory_swapped_for_a_symlink_points_to() {
    swapped_under(Swap::DirectoryToSymlink, true);
}

#[test]
#[cfg_attr(miri, ignore)]
fn clean_leaves_a_file_renamed_over_the_bus_after_its_check() {
    swapped_under(Swap::NameToAnotherFile, true);
}

#[test]
#[cfg_attr(miri, ignore)]
fn remove_deletes_the_bus_it_checked_not_what_a_directory_swapped_for_a_symlink_points_to() {
    swapped_under(Swap::DirectoryToSymlink, false);
}

#[test]
#[cfg_attr(miri, ignore)]
fn remove_leaves_a_file_renamed_over_the_bus_after_its_check() {
    swapped_under(Swap::NameToAnotherFile, false);
}

#[test]
#[cfg_attr(miri, ignore)]
fn remove_of_a_symlink_says_it_is_a_symlink_and_removes_nothing() {
    let _turn = hook_turn();
    let dir = ShmDir::new("rm-link");
    let target = dir.path().join("bus");
    dead_bus(&target);
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let err = shmbus::remove(link.to_str().unwrap()).unwrap_err();
    assert!(matches!(err, shmbus::OpenError::Symlink { .. }), "{err:?}");
    assert!(err.to_string().contains("is a symbolic link"), "{err}");
    assert!(link.symlink_metadata().is_ok() && target.exists());
    dir.finish();
}

// ---------------------------------------------------------------------------
// 6. Corrupt stamps: every reader step makes progress, every lag is
// between 1 and what was published past the reader.

/// Reads with `recv_timeout` until nothing comes for a moment, checking
/// each message (its payload is its sequence) and each lag against the
/// cursor (`head`), and that the reader ended within `end` having lost at
/// most `may_lose` messages in all. Returns the steps taken.
fn drain_checked(
    name: &str,
    (head, end): (u64, std::ops::RangeInclusive<u64>),
    start_pos: u64,
    may_lose: u64,
    what: &str,
) -> u64 {
    let mut sub = Subscriber::<[u8]>::open(name, &OpenOptions::default().start(Start::Oldest))
        .expect("open subscriber");
    let mut pos = start_pos;
    let (mut steps, mut lost) = (0u64, 0u64);
    let started = Instant::now();
    while let Some(got) = sub.recv(shmbus::Wait::For(Duration::from_millis(5))) {
        steps += 1;
        assert!(
            steps <= 4 * head + 16,
            "{what}: {steps} steps for {head} messages: the reader is not making progress"
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{what}: the reader ignores its timeout"
        );
        match got {
            Received::Message(m) => {
                let seq = u64::from_le_bytes(m.try_into().unwrap());
                assert_eq!(seq, pos, "{what}: delivered the wrong message");
                pos += 1;
            }
            Received::Lagged { skipped } => {
                assert!(
                    skipped >= 1 && skipped <= head - pos,
                    "{what}: lag {skipped} at position {pos} with {head} published"
                );
                pos += skipped;
                lost += skipped;
            }
        }
    }
    assert!(
        end.contains(&pos),
        "{what}: the reader stopped at {pos}, expected {end:?} (head {head})"
    );
    assert!(
        lost <= may_lose,
        "{what}: {lost} messages lost, at most {may_lose} may be"
    );
    steps
}

#[test]
#[cfg_attr(miri, ignore)]
fn any_single_corrupt_stamp_costs_readers_at_most_that_message_and_never_hangs_them() {
    const CAP: u64 = 8;
    const PUBLISHED: u64 = 21;
    let bus = BusName::new("stamps");
    let mut p =
        Publisher::<[u8]>::create(bus.name(), &BusOptions::new(CAP).msg_size(8)).expect("create");
    for s in 0..PUBLISHED {
        p.publish(&s.to_le_bytes()).expect("publish");
    }
    let st = stat::stat(bus.name()).expect("stat");
    let (data, slot) = (
        st.raw_header().data_offset,
        st.raw_header().slot_size as u64,
    );
    let done = |s: u64| s.wrapping_mul(2).wrapping_add(2);
    let writing = |s: u64| s.wrapping_mul(2).wrapping_add(1);
    let oldest = PUBLISHED - CAP;
    let mut rng = 0x5eed_u64;
    for i in 0..CAP {
        let off = data + i * slot;
        let original = common::read_u64_at(bus.path(), off);
        // The sequence this slot holds now.
        let s = (oldest..PUBLISHED).find(|s| s % CAP == i).unwrap();
        let mut values = vec![0, u64::MAX, 1 << 63, original ^ (1 << 63)];
        for k in -(2 * CAP as i64)..=(3 * CAP as i64) {
            let t = s.wrapping_add_signed(k);
            // `s` is the value there; `done(PUBLISHED)` in its own slot is
            // the next message as the publisher would write it: a forgery,
            // not corruption (see "Untrusted stamps" in bus/mod.rs).
            if t == s || t == PUBLISHED {
                continue;
            }
            values.extend([done(t), writing(t), done(t) ^ (1 << 63)]);
        }
        for _ in 0..16 {
            rng = common::splitmix(rng);
            values.push(rng);
        }
        for v in values {
            common::patch_u64(bus.path(), off, v);
            // Only the message of the corrupt slot may be lost, and the
            // reader reads on to the end; but the newest slot also
            // confirms the cursor (`slots_confirm`), so a corrupt stamp
            // there may be "not yet" (a write in progress, for all a
            // reader can tell): the reader may wait at it.
            let end = if s == PUBLISHED - 1 {
                s..=PUBLISHED
            } else {
                PUBLISHED..=PUBLISHED
            };
            drain_checked(
                bus.name(),
                (PUBLISHED, end),
                oldest,
                1,
                &format!("slot {i} = {v:#x}"),
            );
        }
        common::patch_u64(bus.path(), off, original);
    }
    drop(p);
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_corrupt_cursor_makes_readers_neither_skip_unpublished_messages_nor_hang() {
    const CAP: u64 = 8;
    const PUBLISHED: u64 = 21;
    let bus = BusName::new("cursor");
    let mut p =
        Publisher::<[u8]>::create(bus.name(), &BusOptions::new(CAP).msg_size(8)).expect("create");
    for s in 0..PUBLISHED {
        p.publish(&s.to_le_bytes()).expect("publish");
    }
    let st = stat::stat(bus.name()).expect("stat");
    let cursor = st.raw_header().control_offset + control::CURSOR as u64;
    let data = st.raw_header().data_offset;
    let mut rng = 7u64;
    let mut values: Vec<u64> = (0..3 * CAP).map(|d| PUBLISHED + d).collect();
    values.extend([0, 1, u64::MAX, 1 << 63, PUBLISHED - 1]);
    for _ in 0..8 {
        rng = common::splitmix(rng);
        values.push(rng);
    }
    for v in values {
        common::patch_u64(bus.path(), cursor, v);
        // And one stale stamp at the reader's start, which only a cursor
        // past it could make the reader skip.
        let first = PUBLISHED - CAP;
        let off = data + (first % CAP) * st.raw_header().slot_size as u64;
        let original = common::read_u64_at(bus.path(), off);
        common::patch_u64(bus.path(), off, 2 * (first - CAP) + 2);
        // Start::Oldest reads the cursor: a reader starting from a corrupt
        // one may start anywhere, but must not run past what was published.
        let mut sub =
            Subscriber::<[u8]>::open(bus.name(), &OpenOptions::default().start(Start::Oldest))
                .expect("open");
        let started = Instant::now();
        let mut steps = 0;
        while let Some(got) = sub.recv(shmbus::Wait::For(Duration::from_millis(5))) {
            steps += 1;
            assert!(
                steps < 1000 && started.elapsed() < Duration::from_secs(5),
                "cursor {v:#x}: no progress"
            );
            if let Received::Lagged { skipped } = got {
                assert!(skipped >= 1, "cursor {v:#x}: lag 0");
            }
        }
        common::patch_u64(bus.path(), off, original);
    }
    // The publisher's next message puts the cursor right again.
    common::patch_u64(bus.path(), cursor, PUBLISHED);
    drop(p);
    bus.finish();
}

// ---------------------------------------------------------------------------
// The hostile-peer fuzz: a process scribbling random stamps and cursors
// while a publisher publishes and subscriber processes read.

const FUZZ_CAP: u64 = 64;
const FUZZ_MSG: usize = 64;

fn fuzz_payload(seq: u64) -> [u8; FUZZ_MSG] {
    let mut m = [0u8; FUZZ_MSG];
    for (i, w) in m.chunks_exact_mut(8).enumerate() {
        w.copy_from_slice(&(seq ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)).to_le_bytes());
    }
    m
}

/// Publishes SHMBUS_COUNT messages over about a second, once SHMBUS_READERS
/// subscribers are registered.
#[test]
fn as_child_fuzz_publisher() {
    role("fuzz_pub", || {
        let name: String = param("SHMBUS_BUS");
        let count: u64 = param("SHMBUS_COUNT");
        let readers: usize = param("SHMBUS_READERS");
        let mut p =
            Publisher::<[u8]>::create(&name, &BusOptions::new(FUZZ_CAP).msg_size(FUZZ_MSG as u32))
                .expect("create");
        print_ready();
        wait_for_within("the readers", Duration::from_secs(20), &mut [], || {
            stat::stat(&name).expect("stat").subscribers.len() >= readers
        });
        let start = Instant::now();
        for s in 0..count {
            // Paced, so the scribbler's stores land among the publisher's.
            while start.elapsed() < Duration::from_micros(s * 1_000_000 / count) {
                std::hint::spin_loop();
            }
            assert_eq!(p.publish(&fuzz_payload(s)).expect("publish"), s);
        }
        print_result(&[("published", count.to_string())]);
        common::idle_until_killed();
    });
}

/// Reads until nothing comes for 2 s; checks every message and lag.
#[test]
fn as_child_fuzz_reader() {
    role("fuzz_reader", || {
        let name: String = param("SHMBUS_BUS");
        let count: u64 = param("SHMBUS_COUNT");
        let mut sub = Subscriber::<[u8]>::open(&name, &OpenOptions::default()).expect("open");
        print_ready();
        let (mut pos, mut delivered, mut lags, mut skipped_total) = (0u64, 0u64, 0u64, 0u64);
        while let Some(got) = sub.recv(shmbus::Wait::For(Duration::from_secs(2))) {
            match got {
                Received::Message(m) => {
                    assert_eq!(m, fuzz_payload(pos), "torn or wrong message at {pos}");
                    pos += 1;
                    delivered += 1;
                }
                Received::Lagged { skipped } => {
                    assert!(skipped >= 1, "a lag of 0 at {pos}");
                    pos += skipped;
                    lags += 1;
                    skipped_total += skipped;
                }
            }
            assert!(
                pos <= count,
                "position {pos}: more lag than the {count} published"
            );
        }
        print_result(&[
            ("pos", pos.to_string()),
            ("delivered", delivered.to_string()),
            ("lags", lags.to_string()),
            ("skipped", skipped_total.to_string()),
        ]);
    });
}

/// Stores corrupt values into random stamps and the cursor until killed.
/// Corruption, not forgery: never a stamp the publisher itself could write
/// next for that slot (see "Untrusted stamps" in bus/mod.rs), which only
/// a peer impersonating the publisher would write.
#[test]
fn as_child_fuzz_scribbler() {
    role("fuzz_scribbler", || {
        use std::sync::atomic::{AtomicU64, Ordering};
        let path: String = param("SHMBUS_PATH");
        let seed: u64 = param("SHMBUS_SEED");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let len = file.metadata().unwrap().len() as usize;
        // SAFETY: a fresh shared mapping of the whole file; only touched below
        // through atomics.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                std::os::fd::AsRawFd::as_raw_fd(&file),
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        let word = |off: u64| {
            assert!(off as usize + 8 <= len);
            // SAFETY: in bounds, 8-aligned (page-aligned mapping, 8-aligned
            // offsets), shared memory every process accesses atomically.
            unsafe { &*(base.cast::<u8>().add(off as usize).cast::<AtomicU64>()) }
        };
        let st = stat::stat(&path).expect("stat");
        let (data, slot) = (
            st.raw_header().data_offset,
            st.raw_header().slot_size as u64,
        );
        let cursor = word(st.raw_header().control_offset + control::CURSOR as u64);
        let done = |s: u64| s.wrapping_mul(2).wrapping_add(2);
        let writing = |s: u64| s.wrapping_mul(2).wrapping_add(1);
        let mut x = seed;
        let mut next = || {
            x = common::splitmix(x);
            x
        };
        print_ready();
        // The publisher's cursor as last seen: never a value this process
        // wrote, or its "older lap" stamps would agree with its own forged
        // cursor (a forgery of two fields, not corruption).
        let (mut head, mut forged) = (0u64, None);
        loop {
            let r = next();
            let i = next() % FUZZ_CAP;
            let stamp = word(data + i * slot);
            let seen = cursor.load(Ordering::Relaxed);
            if Some(seen) != forged {
                head = seen;
            }
            let d = (next() % (4 * FUZZ_CAP)) as i64 - 2 * FUZZ_CAP as i64;
            match r % 10 {
                0..=2 => stamp.store(next(), Ordering::Relaxed),
                3 | 4 => {
                    // An older lap of this slot, still being written.
                    let laps = 1 + next() % 3;
                    let old = head.wrapping_sub(laps * FUZZ_CAP);
                    let t = old - old % FUZZ_CAP + i;
                    stamp.store(writing(t), Ordering::Relaxed);
                }
                5 | 6 => {
                    // A sequence of another slot.
                    let mut t = head.wrapping_add_signed(d);
                    if t % FUZZ_CAP == i {
                        t = t.wrapping_add(1);
                    }
                    let v = if next() % 2 == 0 { done(t) } else { writing(t) };
                    stamp.store(v, Ordering::Relaxed);
                }
                7 => {
                    let v = stamp.load(Ordering::Relaxed) ^ (1 << 63);
                    stamp.store(v, Ordering::Relaxed);
                }
                _ => {
                    let v = if next() % 2 == 0 {
                        next()
                    } else {
                        head.wrapping_add_signed(d)
                    };
                    cursor.store(v, Ordering::Relaxed);
                    forged = Some(v);
                }
            }
            // A store every few microseconds, among the publisher's.
            for _ in 0..200 {
                std::hint::spin_loop();
            }
        }
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_peer_scribbling_stamps_and_cursors_never_makes_a_reader_hang_over_report_or_tear() {
    const COUNT: u64 = 200_000;
    let seed: u64 = std::env::var("SHMBUS_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x0bad_5eed);
    println!("seed {seed} (SHMBUS_CHAOS_SEED)");
    let bus = BusName::new("scribbled");
    let params = [
        ("SHMBUS_BUS", bus.name().to_owned()),
        ("SHMBUS_COUNT", COUNT.to_string()),
        ("SHMBUS_READERS", "2".to_owned()),
    ];
    let mut publisher = spawn_child("as_child_fuzz_publisher", "fuzz_pub", &params);
    publisher.wait_ready();
    let mut readers: Vec<_> = (0..2)
        .map(|_| spawn_child("as_child_fuzz_reader", "fuzz_reader", &params))
        .collect();
    for r in &mut readers {
        r.wait_ready();
    }
    let mut scribbler = spawn_child(
        "as_child_fuzz_scribbler",
        "fuzz_scribbler",
        &[
            ("SHMBUS_PATH", bus.path().to_str().unwrap().to_owned()),
            ("SHMBUS_SEED", seed.to_string()),
        ],
    );
    scribbler.wait_ready();
    // The cursor may be scribbled: ask the publisher, not the bus.
    publisher.wait_until_printed("RESULT published=", Duration::from_secs(60));
    scribbler.kill();
    for r in readers {
        let f = r.wait_success();
        let rep = f.result();
        let (pos, delivered, lags): (u64, u64, u64) =
            (rep.get("pos"), rep.get("delivered"), rep.get("lags"));
        println!(
            "reader {}: at {pos}, delivered {delivered}, {lags} lag reports",
            f.pid
        );
        assert!(delivered > 0, "the reader read nothing");
    }
    publisher.kill();
    bus.finish();
}

// ---------------------------------------------------------------------------
// 10. Another user's dead bus in a sticky directory.

/// Becomes uid/gid 65534 and cleans SHMBUS_DIR; prints each outcome.
#[test]
fn as_child_clean_as_nobody() {
    role("clean_nobody", || {
        let dir: String = param("SHMBUS_DIR");
        // SAFETY: plain system calls on this single-threaded child (libtest runs
        // it with --test-threads=1), before it opens anything.
        unsafe {
            assert_eq!(libc::setgroups(0, std::ptr::null()), 0, "setgroups");
            assert_eq!(libc::setresgid(65534, 65534, 65534), 0, "setresgid");
            assert_eq!(libc::setresuid(65534, 65534, 65534), 0, "setresuid");
        }
        // Two dead buses of our own, sorted after root's.
        for name in ["b-mine", "c-mine"] {
            let path = Path::new(&dir).join(name);
            let mut p =
                Publisher::<[u8]>::create(path.to_str().unwrap(), &BusOptions::new(8).msg_size(8))
                    .expect("create as nobody");
            p.publish(b"nobody!!").unwrap();
        }
        let cleaned = stat::clean(Path::new(&dir), false).expect("clean");
        let show = |c: &stat::Cleaned| {
            let name = c.path.file_name().unwrap().to_string_lossy().into_owned();
            match &c.result {
                Ok(()) => format!("{name}:removed"),
                Err(e) => format!("{name}:{}", e.to_string().replace(char::is_whitespace, "_")),
            }
        };
        let outcomes: Vec<String> = cleaned.iter().map(show).collect();
        print_result(&[("outcomes", outcomes.join(","))]);
    });
}

#[test]
#[cfg_attr(miri, ignore)]
fn clean_as_another_user_reports_a_bus_it_may_not_remove_and_still_removes_its_own() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        shmbus_testkit::skip(
            shmbus_testkit::Need::Root,
            "only root can run a child as uid 65534",
        );
        return;
    }
    let _turn = hook_turn();
    let dir = ShmDir::new("sticky");
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o1777),
    )
    .unwrap();
    // Root's dead bus, open to everyone but in a sticky directory.
    let root_bus = dir.path().join("a-root");
    {
        let _no_fork = common::no_spawn_in_flight();
        let mut p = Publisher::<[u8]>::create(
            root_bus.to_str().unwrap(),
            &BusOptions::new(8).mode(0o666).msg_size(8),
        )
        .expect("create");
        p.publish(b"root!!!!").unwrap();
    }
    let f = spawn_child(
        "as_child_clean_as_nobody",
        "clean_nobody",
        &[("SHMBUS_DIR", dir.path().to_str().unwrap().to_owned())],
    )
    .wait_success();
    let outcomes: String = f.result().get("outcomes");
    let outcomes: Vec<&str> = outcomes.split(',').collect();
    assert_eq!(outcomes.len(), 3, "{outcomes:?}");
    assert!(
        outcomes[0].starts_with("a-root:") && outcomes[0].contains("Operation_not_permitted"),
        "{outcomes:?}"
    );
    assert_eq!(&outcomes[1..], ["b-mine:removed", "c-mine:removed"]);
    assert!(root_bus.exists());
    assert!(!dir.path().join("b-mine").exists() && !dir.path().join("c-mine").exists());
    dir.finish();
}
