//! Replayer: what a replay does where a target cannot keep up, and with
//! gaps on kinds that have no skip. (Every kind end to end, from files
//! that `shmbus record` wrote: crates/shmbus-cli/tests/replay.rs.)

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::*;

/// A recording's directory and a target's name, both removed at the end.
struct Scratch {
    dir: PathBuf,
    target: String,
}

impl Scratch {
    fn new(test: &str) -> Self {
        let name = format!("shmbus-G-replay-{}-{test}", std::process::id());
        let dir = std::env::temp_dir().join(&name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self { dir, target: name }
    }

    /// A recording of one bus `spec`, `n` messages of `payload`, each
    /// followed by a gap of one where `gaps`.
    fn recording(&self, spec: &BusSpec, n: u64, payload: &[u8], gaps: bool) -> PathBuf {
        let path = self.dir.join(format!("{}.rec", spec.name));
        let mut rec = FileRecorder::create(&path, Rotation::default()).unwrap();
        let bus = rec.add_bus(spec).unwrap();
        let mut seq = 0;
        for i in 0..n {
            rec.message(bus, seq, 1_000 * (i + 1), 0, payload).unwrap();
            seq += 1;
            if gaps {
                rec.gap(bus, seq, 1).unwrap();
                seq += 1;
            }
        }
        rec.flush().unwrap();
        path
    }
}

/// A bus removed at the end, whatever the test did.
struct Removed(String);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = crate::remove(&self.0);
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = crate::remove(&self.target);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
#[cfg_attr(miri, ignore)] // shared memory and a timed wait
fn a_stream_target_that_stays_full_fails_after_the_stall_timeout_and_says_how_long_it_waited() {
    let s = Scratch::new("full");
    let path = s.recording(
        &BusSpec::new("s", RecordedKind::Stream, 64),
        10,
        &[7; 20],
        false,
    );
    let mut replay = Replayer::new(Speed::Max)
        .to(&s.target)
        .slots(64) // room for two records; no consumer
        .stall_timeout(Duration::from_millis(200));
    let started = Instant::now();
    let err = replay.run(&path).unwrap_err();
    let took = started.elapsed();
    // The whole wait, not its last slice.
    let ReplayError::Publish {
        source: PublishFailure::Push(crate::stream::PushError::TimedOut(waited)),
        ..
    } = &err
    else {
        panic!("{err}");
    };
    assert!(
        Duration::from_millis(200) <= *waited && *waited <= took,
        "{err} (after {took:?})"
    );
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(replay.stats().messages < 10, "{:?}", replay.stats());
}

static STOP: AtomicBool = AtomicBool::new(false);

#[test]
#[cfg_attr(miri, ignore)] // shared memory and a timed wait
fn a_stop_ends_a_wait_for_room_and_the_pass_without_an_error() {
    let s = Scratch::new("stop");
    let path = s.recording(
        &BusSpec::new("s", RecordedKind::Stream, 64),
        10,
        &[7; 20],
        false,
    );
    let mut replay = Replayer::new(Speed::Max)
        .to(&s.target)
        .slots(64)
        .stall_timeout(Duration::from_secs(600))
        .stop_when(|| STOP.load(Ordering::Relaxed));
    let stopper = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(100));
        STOP.store(true, Ordering::Relaxed);
    });
    let started = Instant::now();
    let published = replay.run(&path).unwrap();
    assert!(published < 10, "{published}");
    stopper.join().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[test]
#[cfg_attr(miri, ignore)] // shared memory
fn gaps_of_a_many_publisher_bus_are_counted_as_dropped_and_a_plain_bus_skips_them() {
    let s = Scratch::new("gaps");
    let many = s.recording(
        &BusSpec::new("m", RecordedKind::ManyPublisher, 8).slots(64),
        3,
        &[1; 8],
        true,
    );
    let mut replay = Replayer::new(Speed::Max).to(&s.target);
    assert_eq!(replay.run(&many).unwrap(), 3);
    let st = replay.stats();
    assert_eq!(
        (st.messages, st.gaps, st.skipped, st.gaps_dropped),
        (3, 0, 0, 3)
    );
    drop(replay);
    crate::remove(&s.target).unwrap();
    let plain = s.recording(
        &BusSpec::new("p", RecordedKind::Bus, 8).slots(64),
        3,
        &[1; 8],
        true,
    );
    let mut replay = Replayer::new(Speed::Max).to(&s.target);
    assert_eq!(replay.run(&plain).unwrap(), 6);
    let st = replay.stats();
    assert_eq!(
        (st.messages, st.gaps, st.skipped, st.gaps_dropped),
        (3, 3, 3, 0)
    );
}

#[test]
#[cfg_attr(miri, ignore)] // shared memory
fn a_gap_across_the_sequence_wrap_is_skipped_whole_and_read_as_one_lag_report() {
    use crate::{OpenOptions, Received, Start, Subscriber, Wait};
    let s = Scratch::new("wrap");
    let path = s.dir.join("wrap.rec");
    let mut rec = FileRecorder::create(&path, Rotation::default()).unwrap();
    let bus = rec
        .add_bus(&BusSpec::new("w", RecordedKind::Bus, 8).slots(64))
        .unwrap();
    // u64::MAX - 1, then u64::MAX, 0, 1, 2, 3 lost, then 4.
    rec.message(bus, u64::MAX - 1, 1_000, 0, &[1; 8]).unwrap();
    rec.gap(bus, u64::MAX, 5).unwrap();
    rec.message(bus, 4, 2_000, 0, &[2; 8]).unwrap();
    rec.flush().unwrap();
    let mut replay = Replayer::new(Speed::Max).to(&s.target);
    assert_eq!(replay.run(&path).unwrap(), 3);
    let st = replay.stats();
    assert_eq!((st.messages, st.gaps, st.skipped), (2, 1, 5), "{st:?}");
    let mut sub =
        Subscriber::<[u8]>::open(&s.target, &OpenOptions::default().start(Start::Oldest)).unwrap();
    let mut got = Vec::new();
    while let Some(r) = sub.recv(Wait::Never) {
        got.push(match r {
            Received::Message(m) => format!("message {}", m[0]),
            Received::Lagged { skipped } => format!("lag {skipped}"),
        });
    }
    assert_eq!(got, ["message 1", "lag 5", "message 2"]);
}

#[test]
#[cfg_attr(miri, ignore)] // shared memory and time
fn a_paced_replay_waits_each_message_out_and_has_a_pace_error_for_each() {
    let s = Scratch::new("pace");
    // 10 messages 20 ms apart: 180 ms from the first to the last.
    let path = s.dir.join("pace.rec");
    let mut rec = FileRecorder::create(&path, Rotation::default()).unwrap();
    let bus = rec
        .add_bus(&BusSpec::new("p", RecordedKind::Bus, 8).slots(64))
        .unwrap();
    for i in 0..10u64 {
        rec.message(bus, i, 5_000_000 + i * 20_000_000, 0, &i.to_le_bytes())
            .unwrap();
    }
    rec.flush().unwrap();
    let ms = Duration::from_millis;
    for (speed, least, most) in [(1.0, ms(180), None), (2.0, ms(90), Some(ms(170)))] {
        let mut replay = Replayer::new(Speed::Times(speed)).to(&s.target);
        let started = Instant::now();
        assert_eq!(replay.run(&path).unwrap(), 10);
        let took = started.elapsed();
        let st = replay.stats();
        assert_eq!(st.pace.count(), 10, "one pace error a message");
        // Not sooner than recorded, divided by the speed; at 2, well
        // before the recorded 180 ms.
        assert!(took >= least, "{took:?} at {speed}");
        assert!(most.is_none_or(|m| took < m), "{took:?} at {speed}");
        // Each late by what a loaded machine makes it (a message never
        // goes out before its time): most well within half a spacing,
        // none later than the pass lasted.
        let (p50, p99, max) = (
            st.pace.quantile_ns(0.5),
            st.pace.quantile_ns(0.99),
            st.pace.max_ns(),
        );
        assert!(p50 < 10_000_000, "p50 {p50} ns at {speed}");
        assert!(p50 <= p99 && p99 <= max, "{p50} {p99} {max}");
        assert!(
            u128::from(max) <= took.as_nanos(),
            "max {max} ns in {took:?}"
        );
        drop(replay);
        crate::remove(&s.target).unwrap();
    }
    // At max speed nothing is paced: no pace error.
    let mut replay = Replayer::new(Speed::Max).to(&s.target);
    assert_eq!(replay.run(&path).unwrap(), 10);
    assert_eq!(replay.stats().pace.count(), 0);
}

#[test]
#[cfg_attr(miri, ignore)] // shared memory
fn a_replay_refused_by_one_target_removes_the_targets_it_made_for_the_others() {
    use crate::{AttachError, BusOptions, OpenError, Publisher};
    let s = Scratch::new("undo");
    let path = s.dir.join("two.rec");
    let mut rec = FileRecorder::create(&path, Rotation::default()).unwrap();
    let a = rec
        .add_bus(&BusSpec::new("a", RecordedKind::Bus, 8).slots(64))
        .unwrap();
    let b = rec
        .add_bus(&BusSpec::new("b", RecordedKind::Bus, 8).slots(64))
        .unwrap();
    rec.message(a, 0, 1_000, 0, &[1; 8]).unwrap();
    rec.message(b, 0, 2_000, 0, &[2; 8]).unwrap();
    rec.flush().unwrap();
    // b's target is of the right kind and size, so it passes every look,
    // and its live publisher refuses the attach: a's new target goes.
    let taken = Removed(format!("{}-taken", s.target));
    let holder = Publisher::<[u8]>::create(&taken.0, &BusOptions::new(64).msg_size(8)).unwrap();
    let mut replay = Replayer::new(Speed::Max)
        .map("a", &s.target)
        .map("b", &taken.0);
    let err = replay.run(&path).unwrap_err();
    assert!(
        matches!(
            err,
            ReplayError::Attach {
                source: AttachError::RoleTaken {
                    role: crate::error::Role::Publisher,
                    ..
                },
                ..
            }
        ),
        "{err}"
    );
    assert!(
        matches!(
            crate::stat::stat(&s.target),
            Err(OpenError::NotFound { .. })
        ),
        "the target made for a is removed again"
    );
    assert_eq!(crate::stat::stat(&taken.0).unwrap().published, 0);
    drop(holder);
}
