//! loom models of the stream's protocol: the real `Producer` and `Consumer`
//! over the heap, through the `sync` facade. The cursors' Release/Acquire
//! pairs (a record, its header and any wrap marker are visible before
//! `TAIL`; bytes are done with before `HEAD`), and both doorbells (a side
//! asleep on an empty or a full ring is always woken). Run with:
//! `RUSTFLAGS="--cfg loom" cargo test -p shmbus --release --lib loom`
//!
//! loom's futex (see `wait`) blocks until the word changes and never times
//! out, so a lost wake-up leaves a sleeper looping until loom gives up on
//! the execution, and the test fails. Each sleep test also counts, across
//! all executions, how many took the sleep path and how many woke the
//! sleeper, and fails if none did: a model that never sleeps proves
//! nothing about the doorbells.
//!
//! What these models cannot see: the loom heap region holds the payload in
//! Relaxed atomics, not in `UnsafeCell`s, and loom does not explore load
//! buffering, so a producer that overwrote bytes the consumer had not yet
//! released through `HEAD` with Release would go unnoticed here (the
//! `TAIL` side is caught: a stale word reads as a wrong record).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering as Std};
use std::time::Duration;

use loom::thread;

use crate::loom::bus::model;

use crate::mem::{HeapRegion, Region};
use crate::stream::ring::StreamRing;
use crate::stream::{Consumer, Producer, on_heap};
use crate::sync::Ordering;
use crate::wait::Wait;
use crate::wait::WaitStrategy;
use crate::wire::{Header, stream_control as ctl};

/// Spins no time: sleeps on the futex as soon as `wait::Backoff` first
/// reads the clock, which is after 63 spins (see `DELAYS`).
const SLEEPY: WaitStrategy = WaitStrategy::SpinFutex {
    spin: Duration::ZERO,
};

type HeapProducer = Producer<[u8], Arc<HeapRegion>>;
type HeapConsumer = Consumer<[u8], Arc<HeapRegion>>;

/// A stream on the heap as `on_heap` builds it, with a wait strategy for
/// each side, and a handle on its control page to read the doorbells.
struct Heap {
    region: Arc<HeapRegion>,
    control: usize,
}

impl Heap {
    fn new(
        capacity: u64,
        producer: WaitStrategy,
        consumer: WaitStrategy,
    ) -> (HeapProducer, HeapConsumer, Heap) {
        let header = Header::stream(capacity, crate::mem::heap::HEAP_PAGE).expect("geometry");
        let region = Arc::new(HeapRegion::new(header.total_len as usize));
        header.write(&*region);
        Header::publish_magic(&*region);
        let p = Producer::from_ring(StreamRing::new(Arc::clone(&region), &header), producer);
        let c = Consumer::from_ring(StreamRing::new(Arc::clone(&region), &header), consumer);
        let control = header.control_offset as usize;
        (p, c, Heap { region, control })
    }

    /// A doorbell's word: bit 0 the sleeper's flag, bits 1.. the wakes.
    fn bell(&self, field: usize) -> u32 {
        self.region
            .word32(self.control + field)
            .load(Ordering::SeqCst)
    }
}

/// Executions in all, that took the sleep path, and that woke the sleeper.
pub(super) struct Coverage {
    runs: AtomicUsize,
    slept: AtomicUsize,
    woken: AtomicUsize,
}

impl Coverage {
    pub(super) const fn new() -> Coverage {
        Coverage {
            runs: AtomicUsize::new(0),
            slept: AtomicUsize::new(0),
            woken: AtomicUsize::new(0),
        }
    }

    /// Counts one execution by the doorbell it left: the flag or a wake
    /// means the sleeper raised its flag at least once.
    pub(super) fn count(&self, bell: u32) {
        self.runs.fetch_add(1, Std::Relaxed);
        if bell != 0 {
            self.slept.fetch_add(1, Std::Relaxed);
        }
        if bell >> 1 != 0 {
            self.woken.fetch_add(1, Std::Relaxed);
        }
    }

    pub(super) fn assert_covered(&self, who: &str) {
        let runs = self.runs.load(Std::Relaxed);
        let slept = self.slept.load(Std::Relaxed);
        let woken = self.woken.load(Std::Relaxed);
        println!("{who}: of {runs} executions, {slept} slept and {woken} were woken by a doorbell");
        assert!(slept > 0, "no execution ever put the {who} to sleep");
        assert!(woken > 0, "no execution ever rang the {who}'s doorbell");
    }
}

/// Three records through a 64-byte ring: 24 bytes each with its header,
/// so the third does not fit in the 16 bytes before the end and goes at
/// 0 after a wrap marker, once the consumer has released the first. Every
/// record arrives whole (no stale word from before the producer wrote it)
/// and in order: the TAIL and HEAD Release/Acquire pairs.
#[test]
fn loom_records_cross_whole_and_in_order_through_a_wrap() {
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    model(|| {
        RUNS.fetch_add(1, Std::Relaxed);
        let (mut p, mut c) = on_heap::<[u8]>(64, WaitStrategy::BusySpin).expect("geometry");
        let writer = thread::spawn(move || {
            for i in 1..=3u8 {
                p.push(&[i; 16], Wait::Forever).expect("pushed");
            }
        });
        let mut out = Vec::new();
        for i in 1..=3u8 {
            c.pop(&mut out, Wait::Forever).expect("popped");
            assert_eq!(out, [i; 16], "record {i}");
        }
        assert!(c.is_empty());
        writer.join().unwrap();
    });
    println!("{} executions", RUNS.load(Std::Relaxed));
}

/// How many times the side that does not wait yields before it acts, one
/// model per value. A waiting side spins (under loom, yields) through
/// `wait::Backoff`'s first 63 steps even with `spin: ZERO` before it reads
/// the clock and goes to sleep; loom runs the other side to completion
/// long before that unless it, too, yields about as often. Delays near 63
/// line the two up at the sleep path, so loom's preemptions explore the
/// doorbell race itself (the waker's cursor store, fence and flag load
/// against the sleeper's flag, fence and re-check); delay 0 explores a
/// waker that runs ahead (and a sleeper that sleeps at once, should the
/// backoff ever skip its spin for `spin: ZERO`). The coverage check below
/// fails if a change to the backoff moves the sleep path out of reach.
pub(super) const DELAYS: std::ops::RangeInclusive<usize> = 0..=72;

pub(super) fn pause(delay: usize) {
    for _ in 0..delay {
        thread::yield_now();
    }
}

/// A consumer that goes to sleep on an empty ring is always woken by the
/// next record: the DATA_BELL doorbell loses no wake-up, whatever the
/// interleaving of its flag and the producer's TAIL store.
#[test]
fn loom_a_consumer_asleep_on_an_empty_ring_is_always_woken() {
    static COVERAGE: Coverage = Coverage::new();
    for delay in DELAYS {
        model(move || {
            let (mut p, mut c, heap) = Heap::new(64, WaitStrategy::BusySpin, SLEEPY);
            let writer = thread::spawn(move || {
                pause(delay);
                p.push(&[7; 8], Wait::Forever).expect("pushed");
            });
            let mut out = Vec::new();
            c.pop(&mut out, Wait::Forever).expect("popped");
            assert_eq!(out, [7; 8]);
            writer.join().unwrap();
            COVERAGE.count(heap.bell(ctl::DATA_BELL));
        });
    }
    COVERAGE.assert_covered("consumer");
}

/// A producer that goes to sleep on a full ring is always woken when the
/// consumer releases room: the SPACE_BELL doorbell loses no wake-up. One
/// release, and one only, makes the room, and the consumer then waits for
/// the producer: a lost wake-up strands both (no later release rings the
/// doorbell again).
#[test]
fn loom_a_producer_asleep_on_a_full_ring_is_always_woken() {
    static COVERAGE: Coverage = Coverage::new();
    for delay in DELAYS {
        model(move || {
            let (mut p, mut c, heap) = Heap::new(64, SLEEPY, WaitStrategy::BusySpin);
            // Record 1 (16 bytes at 0) comes and goes; record 2 takes 32
            // bytes at 16. Record 3 (32 bytes) does not fit in the 16 before
            // the end: it needs the marker and 32 at 0, so it waits for the
            // release of record 2.
            p.push(&[1; 8], Wait::Never).expect("room");
            let mut out = Vec::new();
            c.pop(&mut out, Wait::Never).expect("record 1");
            p.push(&[2; 24], Wait::Never).expect("room");
            let reader = thread::spawn(move || {
                pause(delay);
                let mut out = Vec::new();
                for i in 2..=3u8 {
                    c.pop(&mut out, Wait::Forever).expect("popped");
                    assert_eq!(out, [i; 24], "record {i}");
                }
            });
            p.push(&[3; 24], Wait::Forever).expect("pushed");
            reader.join().unwrap();
            COVERAGE.count(heap.bell(ctl::SPACE_BELL));
        });
    }
    COVERAGE.assert_covered("producer");
}

/// Both sides sleep when they must, in turn, and neither strands the
/// other. Records of 16 bytes take 24 of the 64-byte ring: the third does
/// not fit until the first is released (the producer sleeps on the full
/// ring) and goes at 0 after a wrap marker; the producer then pauses
/// before the fourth, which the consumer sleeps for on the empty ring.
#[test]
fn loom_a_producer_and_a_consumer_that_both_sleep_never_strand_each_other() {
    static PRODUCER: Coverage = Coverage::new();
    static CONSUMER: Coverage = Coverage::new();
    for delay in DELAYS {
        model(move || {
            let (mut p, mut c, heap) = Heap::new(64, SLEEPY, SLEEPY);
            let reader = thread::spawn(move || {
                pause(delay);
                let mut out = Vec::new();
                for i in 1..=4u8 {
                    c.pop(&mut out, Wait::Forever).expect("popped");
                    assert_eq!(out, [i; 16], "record {i}");
                }
            });
            for i in 1..=4u8 {
                if i == 4 {
                    pause(delay);
                }
                p.push(&[i; 16], Wait::Forever).expect("pushed");
            }
            reader.join().unwrap();
            PRODUCER.count(heap.bell(ctl::SPACE_BELL));
            CONSUMER.count(heap.bell(ctl::DATA_BELL));
        });
    }
    PRODUCER.assert_covered("producer");
    CONSUMER.assert_covered("consumer");
}
