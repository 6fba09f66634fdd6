//! The bus's unit tests: the slot protocol on the heap, the claim
//! protocol, the lossless gate, then a select and the async waits over bus
//! subscribers.

mod ring {
    use std::sync::Arc;
    use std::time::Duration;

    use crate::bus::{PublishError, Publisher, Received};
    use crate::mem::HeapRegion;
    use crate::options::Start;
    use crate::wait::WaitStrategy;

    fn bus(capacity: u64) -> Publisher<u64, Arc<HeapRegion>> {
        Publisher::on_heap(capacity).expect("valid geometry")
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn a_ring_whose_region_cannot_hold_its_slots_panics_when_it_is_made() {
        use crate::bus::payload::Payload;
        use crate::mem::heap::HEAP_PAGE;
        use crate::wire::Header;
        let msg = <u64 as Payload>::fingerprint(None, None).expect("u64 fits");
        let header = Header::broadcast(8, msg, HEAP_PAGE, 0)
            .expect("valid geometry")
            .with_heap_lines();
        // A word short of the last slot: the hot paths reach slots
        // unchecked, so the ring refuses here, not on a publish.
        let region = HeapRegion::new(header.total_len as usize - 8);
        let _ = crate::bus::ring::Ring::new(region, &header);
    }

    #[test]
    fn lagged_subscriber_is_told_exactly_how_many_it_missed() {
        let mut p = bus(4);
        let mut s = p.subscribe(Start::Oldest, WaitStrategy::BusySpin);
        for i in 0..10 {
            p.publish(&i);
        }
        // Re-synced half a ring behind the head (8), not at the oldest (6).
        assert_eq!(s.try_recv(), Some(Received::Lagged { skipped: 8 }));
        for i in 8..10 {
            assert_eq!(s.try_recv(), Some(Received::Message(i)));
        }
        assert_eq!(s.try_recv(), None);
    }

    #[test]
    fn a_lapped_subscriber_resyncs_half_a_ring_back_and_keeps_up_with_half_a_ring_more() {
        const CAP: u64 = 8;
        let mut p = bus(CAP);
        let mut s = p.subscribe(Start::Oldest, WaitStrategy::BusySpin);
        for i in 0..3 * CAP {
            p.publish(&i);
        }
        assert_eq!(
            s.try_recv(),
            Some(Received::Lagged {
                skipped: 3 * CAP - CAP / 2
            })
        );
        // Re-synced at head - capacity/2: the publisher may write another
        // half ring before the reader reads again, and it is not lapped.
        // At the oldest slot (the old rule) the first of these would lap it.
        for i in 3 * CAP..3 * CAP + CAP / 2 {
            p.publish(&i);
        }
        for i in 3 * CAP - CAP / 2..3 * CAP + CAP / 2 {
            assert_eq!(s.try_recv(), Some(Received::Message(i)));
        }
        assert_eq!(s.try_recv(), None);
    }

    #[test]
    fn a_lapped_subscriber_of_a_one_or_two_slot_bus_resyncs_to_the_newest() {
        for cap in [1, 2] {
            let mut p = bus(cap);
            let mut s = p.subscribe(Start::Oldest, WaitStrategy::BusySpin);
            for i in 0..5 {
                p.publish(&i);
            }
            assert_eq!(s.try_recv(), Some(Received::Lagged { skipped: 4 }));
            assert_eq!(s.try_recv(), Some(Received::Message(4)));
            assert_eq!(s.try_recv(), None);
        }
    }

    #[test]
    fn each_start_position_begins_where_it_says() {
        let mut p = bus(4);
        for i in 0..6 {
            p.publish(&i);
        }
        let mut oldest = p.subscribe(Start::Oldest, WaitStrategy::BusySpin);
        let mut latest = p.subscribe(Start::Latest, WaitStrategy::BusySpin);
        let mut next = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        assert_eq!(oldest.try_recv(), Some(Received::Message(2)));
        assert_eq!(latest.try_recv(), Some(Received::Message(5)));
        assert_eq!(next.try_recv(), None);
        p.publish(&6);
        assert_eq!(next.try_recv(), Some(Received::Message(6)));
        assert_eq!(next.latest(), Some(6));
    }

    #[test]
    fn an_empty_bus_has_no_latest_and_every_start_waits_for_the_first_message() {
        let mut p = bus(2);
        for start in [Start::Oldest, Start::Latest, Start::Next] {
            let mut s = p.subscribe(start, WaitStrategy::BusySpin);
            assert_eq!(s.latest(), None);
            assert_eq!(s.try_recv(), None);
            assert_eq!(
                s.recv(crate::wait::Wait::For(Duration::from_millis(1))),
                None
            );
        }
        p.publish(&1);
    }

    #[test]
    fn a_raw_message_longer_than_the_slot_is_refused_and_a_short_one_is_zero_padded() {
        let mut p = Publisher::<[u8], _>::on_heap_bytes(12, 2).expect("valid geometry");
        let mut s = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        assert_eq!(
            p.publish(&[1; 13]),
            Err(PublishError::TooLong { len: 13, max: 12 })
        );
        p.publish(&[7; 12]).expect("fits");
        p.publish(&[9; 3]).expect("fits");
        assert_eq!(s.try_recv(), Some(Received::Message(&[7u8; 12][..])));
        assert_eq!(
            s.try_recv(),
            Some(Received::Message(&[9, 9, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0][..]))
        );
    }

    #[test]
    fn delivered_plus_skipped_equals_published_between_threads() {
        // Under SHMBUS_TEST_SCALE; at least 1 000 (125 laps of the 8 slots),
        // or under Miri 50 (6 laps).
        let n = if cfg!(miri) {
            shmbus_testkit::scale_min(200, 50)
        } else {
            shmbus_testkit::scale_min(200_000, 1_000)
        };
        let mut p = bus(8);
        let mut s = p.subscribe(Start::Oldest, WaitStrategy::default());
        let reader = std::thread::spawn(move || {
            let (mut delivered, mut skipped, mut last) = (0u64, 0u64, None);
            while s.position() < n {
                match s.recv(crate::wait::Wait::Forever).expect("waits forever") {
                    Received::Message(v) => {
                        assert!(last.is_none_or(|l| v > l), "{v} after {last:?}");
                        last = Some(v);
                        delivered += 1;
                    }
                    Received::Lagged { skipped: k } => skipped += k,
                }
            }
            (delivered, skipped)
        });
        for i in 0..n {
            p.publish(&i);
        }
        let (delivered, skipped) = reader.join().expect("reader");
        assert_eq!(delivered + skipped, n);
    }

    /// What a subscriber reads until the ring has nothing: messages in
    /// order, and the total it was told it skipped.
    fn drain(s: &mut crate::bus::Subscriber<u64, Arc<HeapRegion>>) -> (Vec<u64>, u64) {
        let (mut got, mut skipped) = (Vec::new(), 0);
        while let Some(r) = s.try_recv() {
            match r {
                Received::Message(m) => got.push(m),
                Received::Lagged { skipped: n } => skipped += n,
            }
        }
        (got, skipped)
    }

    #[test]
    fn a_skip_shorter_than_the_ring_is_one_lag_report_of_its_length() {
        let mut p = bus(8);
        let mut s = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        p.publish(&0);
        assert_eq!(p.skip(3), Ok(4));
        assert_eq!(p.publish(&4), 4);
        assert_eq!(s.try_recv(), Some(Received::Message(0)));
        assert_eq!(s.try_recv(), Some(Received::Lagged { skipped: 3 }));
        assert_eq!(s.try_recv(), Some(Received::Message(4)));
        assert_eq!(s.try_recv(), None);
        // Skipping nothing changes nothing.
        assert_eq!(p.skip(0), Ok(5));
        assert_eq!(p.next_sequence(), 5);
    }

    #[test]
    fn a_skip_longer_than_the_ring_laps_every_subscriber_by_exactly_that_much() {
        let mut p = bus(4);
        let mut read = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        let mut behind = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        p.publish(&0);
        assert_eq!(read.try_recv(), Some(Received::Message(0)));
        assert_eq!(p.skip(100), Ok(101));
        p.publish(&101);
        // The skip overwrote every slot, message 0's too; a reader that was
        // following is told the gap in one report, as a lag of 100.
        assert_eq!(read.try_recv(), Some(Received::Lagged { skipped: 100 }));
        assert_eq!(drain(&mut read), (vec![101], 0));
        assert_eq!(behind.try_recv(), Some(Received::Lagged { skipped: 101 }));
        assert_eq!(drain(&mut behind), (vec![101], 0));
        // Nothing at all read in between: the lap and the marked slots.
        let mut late = p.subscribe(Start::Oldest, WaitStrategy::BusySpin);
        let (got, skipped) = drain(&mut late);
        assert_eq!(
            (got, skipped),
            (vec![101], 3),
            "the three marked slots, then 101"
        );
    }

    #[test]
    fn a_skip_of_a_whole_ring_is_one_lag_report_and_a_reader_inside_it_is_told_the_rest() {
        let mut p = bus(4);
        let mut s = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        assert_eq!(p.skip(4), Ok(4));
        p.publish(&4);
        assert_eq!(s.try_recv(), Some(Received::Lagged { skipped: 4 }));
        assert_eq!(s.try_recv(), Some(Received::Message(4)));
        // Joined at the oldest slot after a skip: the marked rest, once.
        assert_eq!(p.skip(3), Ok(8));
        let mut late = p.subscribe(Start::Oldest, WaitStrategy::BusySpin);
        assert_eq!(late.try_recv(), Some(Received::Message(4)));
        assert_eq!(late.try_recv(), Some(Received::Lagged { skipped: 3 }));
        assert_eq!(late.try_recv(), None);
    }

    #[test]
    fn a_run_of_forged_abandoned_stamps_past_the_cursor_is_not_reported() {
        let mut p = bus(8);
        let mut s = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        assert_eq!(p.skip(2), Ok(2));
        // Forge the marks of sequences 2..6, never published: the report
        // stops at the cursor.
        for seq in 2..6u64 {
            p.ring.stamp(seq).store(
                crate::bus::stamp::abandoned(seq),
                crate::sync::Ordering::Relaxed,
            );
        }
        assert_eq!(s.try_recv(), Some(Received::Lagged { skipped: 2 }));
        assert_eq!(s.try_recv(), None);
        assert_eq!(s.position(), 2);
    }

    #[test]
    fn skips_and_messages_in_any_mix_keep_delivered_plus_skipped_equal_to_published() {
        // A splitmix64 stream: the same mix on every run, and under Miri.
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        // Under SHMBUS_TEST_SCALE; at least 200 steps (Miri: 50), for every
        // kind of step many times over.
        let steps = if cfg!(miri) {
            shmbus_testkit::scale_min(200, 50)
        } else {
            shmbus_testkit::scale_min(20_000, 200)
        };
        let mut p = bus(16);
        let mut s = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        let (mut delivered, mut skipped, mut last) = (0u64, 0u64, None::<u64>);
        for _ in 0..steps {
            match next() % 4 {
                0 => {
                    p.skip(next() % 40).expect("small skip");
                }
                1 | 2 => {
                    let seq = p.next_sequence();
                    assert_eq!(p.publish(&seq), seq);
                }
                _ => {
                    for _ in 0..next() % 20 {
                        match s.try_recv() {
                            Some(Received::Message(m)) => {
                                assert!(last.is_none_or(|l| m > l), "{m} after {last:?}");
                                last = Some(m);
                                delivered += 1;
                            }
                            Some(Received::Lagged { skipped: n }) => skipped += n,
                            None => break,
                        }
                    }
                }
            }
        }
        let (got, rest) = drain(&mut s);
        delivered += got.len() as u64;
        skipped += rest;
        assert_eq!(delivered + skipped, p.next_sequence());
    }

    #[test]
    fn a_skip_too_far_to_tell_from_a_lap_is_refused_and_changes_nothing() {
        let mut p = bus(4);
        let max = crate::bus::SkipError::MAX;
        assert_eq!(
            p.skip(max + 1),
            Err(crate::bus::SkipError::TooFar { n: max + 1, max })
        );
        assert_eq!(p.next_sequence(), 0);
    }
}

mod claim {
    use std::time::{Duration, Instant};

    use crate::bus::Received::{Lagged, Message};
    use crate::bus::stamp::{Stamp, abandoned, decode, done, writing};
    use crate::bus::{ManyPublisher, SubscriberGroup};
    use crate::options::DEFAULT_UNBLOCK;
    use crate::options::Start;
    use crate::wait::WaitStrategy;

    #[test]
    fn an_abandoned_stamp_decodes_as_abandoned_and_no_normal_one_does() {
        for s in [0u64, 1, 7, u64::MAX, u64::MAX - 3, 1 << 62, 1 << 63] {
            assert_eq!(decode(abandoned(s), s), Stamp::Abandoned(s));
            assert_eq!(
                decode(abandoned(s.wrapping_add(8)), s),
                Stamp::Abandoned(s.wrapping_add(8))
            );
            assert_eq!(decode(done(s), s), Stamp::Done(s));
            assert_eq!(decode(writing(s), s), Stamp::Writing(s));
            let old = s.wrapping_sub(16);
            assert_eq!(decode(done(old), s), Stamp::Done(old));
            assert_eq!(
                decode(abandoned(old), s),
                Stamp::Abandoned(old),
                "older abandoned at {s}"
            );
        }
    }

    #[test]
    fn messages_of_two_publishers_arrive_in_one_order_each_publisher_in_its_own() {
        let mut a = ManyPublisher::<[u64; 2], _>::on_heap(64, DEFAULT_UNBLOCK).expect("geometry");
        let mut b = a.another();
        let mut s = a.subscribe(Start::Oldest, WaitStrategy::BusySpin);
        for i in 0..10 {
            a.publish(&[1, i]).expect("committed");
            b.publish(&[2, i]).expect("committed");
        }
        let mut next = [0u64; 3];
        while let Some(Message([who, i])) = s.try_recv() {
            assert_eq!(i, next[who as usize]);
            next[who as usize] += 1;
        }
        assert_eq!(next, [0, 10, 10]);
    }

    #[test]
    fn a_claim_never_committed_is_skipped_as_one_lagged_slot_after_the_timeout() {
        let unblock = Duration::from_millis(20);
        let mut p = ManyPublisher::<u64, _>::on_heap(8, unblock).expect("geometry");
        let mut s = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        // A publisher that claims and dies: the claim alone, no stamp.
        let dead = p.claim_for_test();
        p.publish(&7).expect("committed");
        let started = Instant::now();
        assert_eq!(
            s.recv(crate::wait::Wait::Forever).expect("waits forever"),
            Lagged { skipped: 1 }
        );
        assert!(started.elapsed() >= unblock);
        assert_eq!(
            s.recv(crate::wait::Wait::Forever).expect("waits forever"),
            Message(7)
        );
        // The dead claimer, were it only slow, learns it lost.
        assert_eq!(
            p.w.ring.begin(dead).map_err(|st| st.seq()),
            Err(dead),
            "begin after the skip"
        );
    }

    #[test]
    fn a_publisher_committing_after_its_claim_was_skipped_gets_abandoned() {
        let p = ManyPublisher::<u64, _>::on_heap(8, Duration::ZERO).expect("geometry");
        let mut s = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        let seq = p.claim_for_test();
        p.w.ring.begin(seq).expect("slot free");
        assert_eq!(s.try_recv(), Some(Lagged { skipped: 1 }));
        assert!(p.w.ring.commit(seq).is_err());
        assert_eq!(s.try_recv(), None);
    }

    #[test]
    fn a_publisher_lapping_an_unfinished_claim_skips_it_after_the_timeout() {
        let mut p =
            ManyPublisher::<u64, _>::on_heap(2, Duration::from_millis(5)).expect("geometry");
        let mut s = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        let stuck = p.claim_for_test();
        p.w.ring.begin(stuck).expect("slot free");
        p.publish(&1).expect("committed");
        // The next lap of the stuck slot: waits 5 ms, then skips it.
        p.publish(&2).expect("committed");
        // Lapped: a two-slot ring re-syncs to the newest (the "Lagging"
        // rule), so the dead claim and message 1 are skipped together.
        assert_eq!(s.try_recv(), Some(Lagged { skipped: 2 }));
        assert_eq!(s.try_recv(), Some(Message(2)));
        assert!(p.w.ring.commit(stuck).is_err());
    }

    #[test]
    fn a_subscriber_group_delivers_what_independent_subscribers_would() {
        let mut p = crate::Publisher::<u64, _>::on_heap(4).expect("geometry");
        let mut group = p.subscribe_group::<3>(Start::Oldest, WaitStrategy::BusySpin);
        let mut alone: Vec<_> = (0..3)
            .map(|_| p.subscribe(Start::Oldest, WaitStrategy::BusySpin))
            .collect();
        let mut check = |group: &mut SubscriberGroup<u64, 3, _>| loop {
            let g = group.try_recv();
            for a in alone.iter_mut() {
                assert_eq!(a.try_recv(), g);
                assert_eq!(group.positions(), &[a.position(); 3]);
            }
            if g.is_none() {
                break;
            }
        };
        for i in 0..3 {
            p.publish(&i);
        }
        check(&mut group);
        for i in 3..13 {
            p.publish(&i);
        }
        check(&mut group);
    }
}

mod gate {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use crate::bus::BusOptions;
    use crate::bus::{LosslessRefused, Publisher, Received, Subscriber, TryPublishError};
    use crate::error::OpenError;
    use crate::mem::HeapRegion;
    use crate::options::{OpenOptions, Start};
    use crate::wait::{Wait, WaitStrategy};

    fn bus(capacity: u64) -> Publisher<u64, Arc<HeapRegion>> {
        Publisher::on_heap(capacity).expect("valid geometry")
    }

    #[test]
    fn a_block_that_a_live_subscriber_clears_within_the_liveness_period_makes_no_liveness_probe() {
        use crate::bus::gate::{LIVENESS_EVERY, PROBES};
        const CAP: u64 = 4;
        let mut p = bus(CAP);
        let mut s = p
            .subscribe_lossless(Start::Next, WaitStrategy::BusySpin)
            .expect("lossless");
        for i in 0..CAP {
            p.publish(&i);
        }
        for round in 0..20 {
            let reader = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_micros(100));
                assert!(matches!(s.recv(Wait::Forever), Some(Received::Message(_))));
                s
            });
            let before = PROBES.with(|c| c.get());
            let start = Instant::now();
            // Full: blocked until the reader reads one.
            p.publish(&(CAP + round));
            let took = start.elapsed();
            let probes = PROBES.with(|c| c.get()) - before;
            s = reader.join().expect("reader");
            // A loaded machine may hold the reader back for longer: then a
            // probe per period is allowed, none for a block that cleared
            // sooner (each is a system call on a bus in /dev/shm).
            let allowed = (took.as_nanos() / LIVENESS_EVERY.as_nanos()) as u64;
            assert!(
                probes <= allowed,
                "{probes} probes in a block of {took:?} (round {round})"
            );
        }
    }

    /// A heap ring of `u64`s whose publishers evict a lossless subscriber
    /// after `evict`, not the heap's 1 s.
    fn ring_evicting(
        capacity: u64,
        unblock: Option<Duration>,
        evict: Duration,
    ) -> crate::bus::ring::Ring<Arc<HeapRegion>> {
        use crate::bus::payload::Payload;
        let msg = <u64 as Payload>::fingerprint(None, None).expect("u64 fits");
        let ring = crate::bus::heap::heap_ring(capacity, msg, 0, unblock).expect("valid geometry");
        // Every publisher reads the timeout when it is made: none is yet.
        crate::bus::gate::init_control(
            ring.region(),
            ring.control_field(0),
            crate::bus::ring::HEAP_ENTRIES as u32,
            evict,
        );
        ring
    }

    /// One that evicts only after `MAX_EVICT`: a test of what a lossless
    /// subscriber receives from publishers running flat out must not fail
    /// because the machine paused its reader for a second (CI's TSan run
    /// did, a lane of builds beside it: evicted, then lapped).
    fn patient_ring(
        capacity: u64,
        unblock: Option<Duration>,
    ) -> crate::bus::ring::Ring<Arc<HeapRegion>> {
        ring_evicting(capacity, unblock, crate::bus::MAX_EVICT)
    }

    fn patient_bus(capacity: u64) -> Publisher<u64, Arc<HeapRegion>> {
        Publisher::from_parts(patient_ring(capacity, None), 0)
    }

    /// How late a wait may end past what it waited for: a scheduling
    /// margin for a loaded two-core machine beside the TSan lane (where
    /// pauses near a second were seen), far below the patient buses'
    /// 60 s eviction timeout.
    const LATE: Duration = Duration::from_secs(5);

    /// Fails unless `waited` is `deadline` or later, by at most [`LATE`].
    fn assert_waited_until(waited: Duration, deadline: Duration, what: &str) {
        assert!(
            waited >= deadline && waited < deadline + LATE,
            "{what}: waited {waited:?}, expected {deadline:?} and at most {LATE:?} more"
        );
    }

    /// Waits until a publisher of `s`'s bus is parked for room: it raised
    /// the sleepers flag on `ROOM`, which it does only after finding the
    /// ring full behind a gating subscriber (and, on a many-publisher bus,
    /// its sequence claimed) and spinning its while. A test that reads
    /// then has proved the blocked path, not raced the publisher to it.
    fn wait_until_a_publisher_waits_for_room<R: crate::mem::Region>(s: &Subscriber<u64, R>) {
        shmbus_testkit::wait_for("a publisher asleep for room", &mut [], || {
            s.ring.room_bell().load(crate::sync::Ordering::SeqCst) & 1 != 0
        });
    }

    fn patient_many(
        capacity: u64,
        unblock: Duration,
    ) -> crate::bus::ManyPublisher<u64, Arc<HeapRegion>> {
        crate::bus::ManyPublisher::from_ring(patient_ring(capacity, Some(unblock)))
    }

    /// A /dev/shm name of this test's own, removed when dropped.
    struct Name(String);
    impl Name {
        fn new(tag: &str) -> Name {
            Name(format!(
                "/dev/shm/shmbus-unit-gate-{tag}-{}",
                std::process::id()
            ))
        }
    }
    impl Drop for Name {
        fn drop(&mut self) {
            let _ = crate::remove(&self.0);
        }
    }

    #[test]
    // A /dev/shm file: Miri maps no files.
    #[cfg_attr(miri, ignore)]
    fn an_eviction_timeout_past_the_most_is_read_as_the_most_whatever_the_file_says() {
        use crate::mem::Region;
        let name = Name::new("evictcap");
        let opts = BusOptions::new(8).evict_after(crate::bus::MAX_EVICT);
        let p = Publisher::<u64>::create(&name.0, &opts).expect("create");
        let at = p.ring.control_field(crate::wire::control::EVICT_NS);
        let recorded = p
            .ring
            .region()
            .word(at)
            .load(crate::sync::Ordering::Relaxed);
        assert_eq!(recorded, crate::bus::MAX_EVICT.as_nanos() as u64);
        // A hostile peer's value: a publisher that attaches reads the cap.
        p.ring
            .region()
            .word(at)
            .store(u64::MAX, crate::sync::Ordering::Relaxed);
        drop(p);
        let p = Publisher::<u64>::attach(&name.0, &OpenOptions::default()).expect("attach");
        assert_eq!(p.evict_timeout(), crate::bus::MAX_EVICT);
    }

    #[test]
    fn a_lossless_subscriber_joining_a_bus_already_publishing_holds_the_publisher_back_from_its_next_unread_slot()
     {
        // The publisher has written a lap and more with nobody gating, so
        // its cached limit is far away: only the join's announcement (the
        // generation, raised through the futex word's flag) makes it look.
        let mut p = bus(4);
        for i in 0..10 {
            p.publish(&i);
        }
        let mut s = p
            .subscribe_lossless(Start::Next, WaitStrategy::default())
            .expect("a heap bus takes lossless subscribers");
        for i in 10..14 {
            assert!(p.try_publish(&i).is_ok(), "room for {i}: a ring of 4");
        }
        assert!(
            matches!(p.try_publish(&14), Err(TryPublishError::Full { .. })),
            "the fifth would overwrite the joiner's first unread message"
        );
        assert_eq!(s.try_recv(), Some(Received::Message(10)));
        assert!(p.try_publish(&14).is_ok(), "one read, one slot free");
    }

    #[test]
    fn a_lossless_subscriber_beside_a_lossy_one_gets_every_message_while_the_lossy_one_is_lapped_exactly()
     {
        const N: u64 = if cfg!(miri) { 200 } else { 20_000 };
        let mut p = patient_bus(4);
        let mut lossless = p
            .subscribe_lossless(Start::Next, WaitStrategy::default())
            .expect("a heap bus takes lossless subscribers");
        let mut lossy = p.subscribe(Start::Next, WaitStrategy::default());
        let reader = std::thread::spawn(move || {
            let mut next = 0;
            while next < N {
                match lossless.recv(Wait::For(Duration::from_secs(10))) {
                    Some(Received::Message(m)) => {
                        assert_eq!(m, next, "out of order or lost");
                        next += 1;
                    }
                    other => panic!(
                        "a lossless subscriber got {other:?} at {next} (still lossless: {})",
                        lossless.is_lossless()
                    ),
                }
            }
            lossless.is_lossless()
        });
        for i in 0..N {
            p.publish(&i);
        }
        assert!(reader.join().unwrap(), "it kept up: never evicted");
        let (mut delivered, mut skipped) = (0, 0);
        while let Some(r) = lossy.try_recv() {
            match r {
                Received::Message(_) => delivered += 1,
                Received::Lagged { skipped: s } => skipped += s,
            }
        }
        assert!(skipped > 0, "the lossy one, never reading, was lapped");
        assert_eq!(delivered + skipped, N);
    }

    #[test]
    fn try_publish_says_full_naming_the_lossless_subscriber_that_has_not_read() {
        let mut p = bus(2);
        let mut s = p
            .subscribe_lossless(Start::Next, WaitStrategy::BusySpin)
            .unwrap();
        let _lossy = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        assert_eq!(p.try_publish(&0), Ok(0));
        assert_eq!(p.try_publish(&1), Ok(1));
        assert_eq!(
            p.try_publish(&2),
            Err(TryPublishError::Full {
                entry: 0,
                pid: None
            })
        );
        assert_eq!(p.next_sequence(), 2, "nothing published");
        assert_eq!(s.try_recv(), Some(Received::Message(0)));
        assert_eq!(p.try_publish(&2), Ok(2));
        assert_eq!(s.try_recv(), Some(Received::Message(1)));
        assert_eq!(s.try_recv(), Some(Received::Message(2)));
    }

    #[test]
    fn a_dropped_lossless_subscriber_releases_the_publisher_and_its_entry() {
        let mut p = bus(2);
        let s = p
            .subscribe_lossless(Start::Next, WaitStrategy::BusySpin)
            .unwrap();
        p.publish(&0);
        p.publish(&1);
        assert!(p.try_publish(&2).is_err());
        drop(s);
        assert_eq!(p.try_publish(&2), Ok(2));
        // Eight entries on the heap, all free again.
        let all: Vec<_> = (0..8)
            .map(|_| p.subscribe_lossless(Start::Next, WaitStrategy::BusySpin))
            .collect::<Result<_, _>>()
            .expect("eight fit");
        assert_eq!(
            p.subscribe_lossless(Start::Next, WaitStrategy::BusySpin)
                .err(),
            Some(LosslessRefused::RegistryFull { entries: 8 })
        );
        drop(all);
    }

    #[test]
    fn a_publisher_blocked_by_a_lossless_subscriber_goes_on_as_soon_as_it_reads() {
        // A 60 s eviction timeout: going on at once is told from waiting
        // for the eviction by a bound no pause of a loaded machine reaches.
        let mut p = patient_bus(2);
        let mut s = p
            .subscribe_lossless(Start::Next, WaitStrategy::default())
            .unwrap();
        p.publish(&0);
        p.publish(&1);
        let writer = std::thread::spawn(move || {
            p.publish(&2); // waits for the reader
            Instant::now()
        });
        wait_until_a_publisher_waits_for_room(&s);
        let read = Instant::now();
        assert_eq!(s.try_recv(), Some(Received::Message(0)));
        let went_on = writer.join().unwrap();
        assert_waited_until(went_on - read, Duration::ZERO, "went on after the read");
        assert!(s.is_lossless());
        assert_eq!(s.try_recv(), Some(Received::Message(1)));
        assert_eq!(s.try_recv(), Some(Received::Message(2)));
    }

    #[test]
    // A /dev/shm file: Miri maps no files.
    #[cfg_attr(miri, ignore)]
    fn a_bus_created_refusing_lossless_subscribers_says_so_with_a_typed_error() {
        let name = Name::new("refused");
        let _p =
            Publisher::<u64>::create(&name.0, &BusOptions::new(8).lossless_subscribers(0)).unwrap();
        let err = Subscriber::<u64>::open(&name.0, &OpenOptions::default().lossless(true)).err();
        assert!(
            matches!(err, Some(OpenError::Lossless(LosslessRefused::NotAllowed))),
            "{err:?}"
        );
        // A lossy subscriber is welcome.
        assert!(Subscriber::<u64>::open(&name.0, &OpenOptions::default()).is_ok());
    }

    #[test]
    // A /dev/shm file: Miri maps no files.
    #[cfg_attr(miri, ignore)]
    fn a_bus_allows_only_as_many_lossless_subscribers_as_it_was_made_for() {
        let name = Name::new("max");
        let _p =
            Publisher::<u64>::create(&name.0, &BusOptions::new(8).lossless_subscribers(1)).unwrap();
        let opts = OpenOptions::default().lossless(true);
        let first = Subscriber::<u64>::open(&name.0, &opts).unwrap();
        assert!(first.is_lossless());
        let err = Subscriber::<u64>::open(&name.0, &opts).err();
        assert!(
            matches!(
                err,
                Some(OpenError::Lossless(LosslessRefused::TooMany { max: 1 }))
            ),
            "{err:?}"
        );
        drop(first);
        assert!(Subscriber::<u64>::open(&name.0, &opts).is_ok());
    }

    #[test]
    // A /dev/shm file: Miri maps no files.
    #[cfg_attr(miri, ignore)]
    fn a_many_publisher_bus_takes_a_lossless_subscriber_and_its_publishers_wait_for_it() {
        let name = Name::new("many");
        let mut p =
            crate::bus::ManyPublisher::<u64>::create(&name.0, &BusOptions::new(2).many()).unwrap();
        let mut s = Subscriber::<u64>::open(&name.0, &OpenOptions::default().lossless(true))
            .expect("a many-publisher bus takes lossless subscribers");
        assert!(s.is_lossless());
        p.publish(&0).unwrap();
        p.publish(&1).unwrap();
        let full = p.publish_within(&2, Wait::For(Duration::from_millis(5)));
        assert!(
            matches!(full, Err(TryPublishError::Full { entry: 0, pid: Some(pid) }) if pid == std::process::id()),
            "{full:?}"
        );
        assert_eq!(s.try_recv(), Some(Received::Message(0)));
        assert_eq!(p.publish_within(&2, Wait::Never), Ok(2));
        assert_eq!(s.try_recv(), Some(Received::Message(1)));
        assert_eq!(s.try_recv(), Some(Received::Message(2)));
    }

    #[test]
    fn three_many_publishers_flat_out_never_pass_a_lossless_subscriber() {
        // Miri runs every step slowly: a few laps of the ring are enough.
        const EACH: u64 = if cfg!(miri) { 40 } else { 3_000 };
        let yielding = WaitStrategy::SpinYield {
            spin: Duration::from_micros(5),
        };
        let p = patient_many(8, Duration::from_secs(30));
        let mut lossless = p.subscribe_lossless(Start::Next, yielding).unwrap();
        let mut lossy = p.subscribe(Start::Next, yielding);
        let writers: Vec<_> = (0..3u64)
            .map(|id| {
                let mut w = p.another();
                w.set_wait_strategy(yielding);
                std::thread::spawn(move || {
                    for i in 0..EACH {
                        w.publish(&(id << 32 | i)).expect("no claim abandoned");
                    }
                })
            })
            .collect();
        let mut next = [0u64; 3];
        let mut got = 0;
        let mut lossy_count = 0u64;
        while got < 3 * EACH {
            match lossless.recv(Wait::For(Duration::from_secs(5))) {
                Some(Received::Message(m)) => {
                    let (id, i) = ((m >> 32) as usize, m & 0xffff_ffff);
                    assert_eq!(i, next[id], "publisher {id} lost or reordered");
                    next[id] += 1;
                    got += 1;
                }
                other => panic!(
                    "a lossless subscriber got {other:?} after {got} (still lossless: {})",
                    lossless.is_lossless()
                ),
            }
            while let Some(r) = lossy.try_recv() {
                lossy_count += match r {
                    Received::Message(_) => 1,
                    Received::Lagged { skipped } => skipped,
                };
            }
        }
        for w in writers {
            w.join().unwrap();
        }
        while let Some(r) = lossy.try_recv() {
            lossy_count += match r {
                Received::Message(_) => 1,
                Received::Lagged { skipped } => skipped,
            };
        }
        assert_eq!(lossy_count, 3 * EACH, "lossy delivered + skipped");
        assert!(lossless.is_lossless());
    }

    #[test]
    // Real time and a thread spinning on the line: too slow under Miri.
    #[cfg_attr(miri, ignore)]
    fn a_gating_line_whose_position_steps_back_and_forth_holds_a_claim_for_a_few_eviction_timeouts_not_for_ever()
     {
        use crate::mem::Region;
        use crate::sync::Ordering;
        // A claim more than a ring ahead waits for several reads, and its
        // eviction clock restarts when the subscriber moves on: only
        // forward, past the furthest position seen, so a hostile line
        // that steps back and forth between blocking positions cannot
        // hold it past one restart per position.
        let evict = Duration::from_millis(100);
        let p = crate::bus::ManyPublisher::<u64, _>::from_ring(ring_evicting(
            2,
            Some(Duration::from_millis(20)),
            evict,
        ));
        let lossless = p
            .subscribe_lossless(Start::Next, WaitStrategy::BusySpin)
            .unwrap();
        // The heap's first free line.
        let entry = 0;
        assert!(p.w.ring.is_gating(entry));
        let mut w = p.another();
        w.publish(&0).unwrap();
        w.publish(&1).unwrap();
        // Claims 2 and 3 made by publishers that never got past the
        // gate: the next claim, 4, waits for positions 0, 1 and 2.
        let ring = p.w.ring.share();
        ring.claim();
        ring.claim();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let hostile = {
            let (ring, stop) = (ring.share(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let at = ring.line_at(entry) + crate::wire::subscriber_line::POSITION;
                let mut p = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    ring.region().word(at).store(p, Ordering::Release);
                    p ^= 1;
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        };
        let start = Instant::now();
        // A deadline, so a clock restarted for ever fails, not hangs.
        let published = w.publish_within(&4, Wait::For(20 * evict));
        let held = start.elapsed();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        hostile.join().unwrap();
        assert_eq!(
            published,
            Ok(4),
            "held {held:?}: the clock restarted by positions going back"
        );
        assert!(held >= evict, "evicted only after its timeout: {held:?}");
        assert!(!ring.is_gating(entry), "evicted");
        drop(lossless);
    }

    #[test]
    fn a_reader_does_not_skip_a_claim_that_waits_at_the_gate() {
        // A zero unblock timeout: a reader that finds a claim unfinished
        // may skip it at once, unless the gate says its slot is still
        // needed. A 60 s eviction timeout: under Miri beside other tests,
        // the wait for the parked publisher can pass the heap's 1 s, and an
        // evicted subscriber would let the claim through.
        let p = patient_many(2, Duration::ZERO);
        let mut lossless = p
            .subscribe_lossless(Start::Next, WaitStrategy::BusySpin)
            .unwrap();
        let mut w = p.another();
        w.publish(&0).unwrap();
        w.publish(&1).unwrap();
        let mut lossy = p.subscribe(Start::Oldest, WaitStrategy::BusySpin);
        assert_eq!(lossy.try_recv(), Some(Received::Message(0)));
        assert_eq!(lossy.try_recv(), Some(Received::Message(1)));
        let writer = std::thread::spawn(move || w.publish(&2));
        // The claim of 2 is made and held at the gate: the lossy reader
        // at 2 must not skip it (its stamp would destroy message 0).
        wait_until_a_publisher_waits_for_room(&lossy);
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(50) {
            assert_eq!(lossy.try_recv(), None);
            std::thread::yield_now();
        }
        assert_eq!(lossless.try_recv(), Some(Received::Message(0)));
        assert_eq!(lossless.try_recv(), Some(Received::Message(1)));
        // Past the gate, the claim may be committed or (zero timeout)
        // skipped by the lossy reader: either way it is counted.
        let published = writer.join().unwrap();
        let got = lossless.recv(Wait::For(Duration::from_secs(5)));
        match published {
            Ok(2) => assert!(
                matches!(
                    got,
                    Some(Received::Message(2)) | Some(Received::Lagged { skipped: 1 })
                ),
                "{got:?}"
            ),
            _ => assert_eq!(got, Some(Received::Lagged { skipped: 1 })),
        }
    }

    #[test]
    // Two seconds of real time: Miri's clock runs on its own steps.
    #[cfg_attr(miri, ignore)]
    fn a_claim_held_at_the_gate_for_most_of_the_timeout_gets_a_whole_timeout_once_through() {
        let unblock = Duration::from_secs(2);
        let p = patient_many(2, unblock);
        let mut lossless = p
            .subscribe_lossless(Start::Next, WaitStrategy::BusySpin)
            .unwrap();
        let mut w = p.another();
        w.publish(&0).unwrap();
        w.publish(&1).unwrap();
        let mut lossy = p.subscribe(Start::Oldest, WaitStrategy::BusySpin);
        assert_eq!(lossy.try_recv(), Some(Received::Message(0)));
        assert_eq!(lossy.try_recv(), Some(Received::Message(1)));
        // Claim 2, never committed: the gate holds it while the lossless
        // subscriber has not read 0. The lossy reader at 2 sees it now.
        let _claim = w.claim_for_test();
        assert_eq!(lossy.try_recv(), None);
        let first_sight = Instant::now();
        while first_sight.elapsed() < unblock * 3 / 4 {
            assert_eq!(lossy.try_recv(), None, "skipped while held at the gate");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(lossless.try_recv(), Some(Received::Message(0)));
        let through = Instant::now();
        // Counted from first sight, the timeout ends a quarter in; a whole
        // one from the gate's release ends well after this.
        while through.elapsed() < unblock / 2 {
            assert_eq!(
                lossy.try_recv(),
                None,
                "skipped {:?} after the gate let the claim through",
                through.elapsed()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(
            lossy.recv(Wait::For(unblock * 2)),
            Some(Received::Lagged { skipped: 1 })
        );
        let waited = through.elapsed();
        assert!(
            waited >= unblock - Duration::from_millis(50),
            "skipped {waited:?} after the gate's release, not a whole {unblock:?}"
        );
    }

    #[test]
    fn a_deadline_publish_says_full_naming_the_subscriber_and_claims_nothing() {
        // A 60 s eviction timeout, as above: a pause past 1 s mid-wait
        // must not evict before the deadline is looked at.
        let p = patient_many(1, Duration::from_secs(1));
        let mut lossless = p
            .subscribe_lossless(Start::Next, WaitStrategy::BusySpin)
            .unwrap();
        let mut w = p.another();
        w.set_wait_strategy(WaitStrategy::SpinYield {
            spin: Duration::from_micros(1),
        });
        assert_eq!(w.publish_within(&7, Wait::Never), Ok(0));
        let start = Instant::now();
        let full = w.publish_within(&8, Wait::For(Duration::from_millis(30)));
        let waited = start.elapsed();
        assert_eq!(
            full,
            Err(TryPublishError::Full {
                entry: 0,
                pid: None
            })
        );
        assert_waited_until(
            waited,
            Duration::from_millis(30),
            "the deadline, not the eviction timeout",
        );
        assert_eq!(lossless.try_recv(), Some(Received::Message(7)));
        // Nothing was claimed by the failed publishes: 8 gets sequence 1.
        assert_eq!(w.publish_within(&8, Wait::Never), Ok(1));
        assert_eq!(lossless.try_recv(), Some(Received::Message(8)));
        assert!(lossless.is_lossless());
    }

    #[test]
    fn a_lossless_subscriber_stepping_over_skipped_messages_does_not_rejoin() {
        let mut p = bus(16);
        let mut s = p
            .subscribe_lossless(Start::Next, WaitStrategy::BusySpin)
            .unwrap();
        let generation = |s: &Subscriber<u64, Arc<HeapRegion>>| {
            s.ring.gate_gen().load(crate::sync::Ordering::SeqCst)
        };
        let before = generation(&s);
        p.publish(&1);
        assert_eq!(p.skip(10), Ok(11));
        p.publish(&2);
        assert_eq!(s.try_recv(), Some(Received::Message(1)));
        assert_eq!(s.try_recv(), Some(Received::Lagged { skipped: 10 }));
        assert_eq!(s.try_recv(), Some(Received::Message(2)));
        // Each rejoin bumps GATE_GEN (a SeqCst RMW and a membarrier): a
        // contiguous step over skipped stamps needs none.
        assert_eq!(generation(&s), before, "rejoined after contiguous skips");
        assert!(s.is_lossless());
    }

    /// Whether a publisher is asleep on `ROOM`, waiting for a gating
    /// subscriber (its sleepers flag; only a waiting publisher raises it).
    fn publisher_waits_for_room(s: &Subscriber<u64, Arc<HeapRegion>>) -> bool {
        s.ring.room_bell().load(crate::sync::Ordering::SeqCst) & 1 != 0
    }

    #[test]
    fn a_skip_waits_for_a_lossless_subscriber_to_read_the_messages_its_marks_overwrite() {
        // Five unread on eight slots, then a skip of five: its marks go
        // into the slots of 0 and 1. The reader starts only once the skip
        // returned or waits for it (asleep on ROOM), so a skip that does
        // not wait has overwritten them by then.
        let mut p = patient_bus(8);
        p.set_wait_strategy(WaitStrategy::SpinFutex {
            spin: Duration::ZERO,
        });
        let mut s = p
            .subscribe_lossless(Start::Next, WaitStrategy::BusySpin)
            .unwrap();
        for i in 0..5 {
            p.publish(&i);
        }
        let skipped = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let done = Arc::clone(&skipped);
        let writer = std::thread::spawn(move || {
            assert_eq!(p.skip(5), Ok(10));
            done.store(true, std::sync::atomic::Ordering::SeqCst);
            for i in 10..20 {
                p.publish(&i);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        while !skipped.load(std::sync::atomic::Ordering::SeqCst) && !publisher_waits_for_room(&s) {
            assert!(
                Instant::now() < deadline,
                "the skip neither returned nor waited"
            );
            std::thread::yield_now();
        }
        let mut got = Vec::new();
        while s.position() < 20 {
            match s.recv(Wait::For(Duration::from_secs(30))) {
                Some(r) => got.push(r),
                None => panic!("nothing for 30 s after {got:?}"),
            }
        }
        writer.join().unwrap();
        let want: Vec<_> = (0..5)
            .map(Received::Message)
            .chain([Received::Lagged { skipped: 5 }])
            .chain((10..20).map(Received::Message))
            .collect();
        assert_eq!(got, want, "lost more than the skipped sequences");
        assert!(s.is_lossless());
    }

    #[test]
    fn after_a_skip_longer_than_the_ring_the_publisher_waits_for_a_lossless_subscriber_to_step_over_it()
     {
        // The subscriber read everything before the skip, so the skip's
        // marks overwrite nothing it needs; but its position is then more
        // than a ring behind the publisher, which is not a lap: the
        // messages after the skip must wait for it as any others.
        let mut p = patient_bus(8);
        let mut s = p
            .subscribe_lossless(Start::Next, WaitStrategy::BusySpin)
            .unwrap();
        p.publish(&0);
        assert_eq!(s.try_recv(), Some(Received::Message(0)));
        assert_eq!(p.skip(100), Ok(101));
        let mut got = Vec::new();
        for i in 101..=120 {
            while let Err(TryPublishError::Full { entry: 0, .. }) = p.try_publish(&i) {
                got.push(s.try_recv().expect("in the way, so something to read"));
            }
        }
        while let Some(r) = s.try_recv() {
            got.push(r);
        }
        let want: Vec<_> = [Received::Lagged { skipped: 100 }]
            .into_iter()
            .chain((101..=120).map(Received::Message))
            .collect();
        assert_eq!(got, want, "lost more than the skipped sequences");
        assert!(s.is_lossless());
    }

    #[test]
    fn a_lossless_subscriber_reading_beside_a_skipping_publisher_loses_only_the_skipped_sequences()
    {
        // A replayed recording's shape: runs of messages with gaps shorter
        // than, as long as and longer than the ring between them, the
        // reader on its own thread.
        const RUNS: u64 = if cfg!(miri) { 3 } else { 200 };
        const RUN: u64 = 50;
        let gaps = [5u64, 8, 100, 1, 7, 9];
        let mut p = patient_bus(8);
        let mut s = p
            .subscribe_lossless(Start::Next, WaitStrategy::default())
            .unwrap();
        let reader = std::thread::spawn(move || {
            let (mut got, mut skipped, mut reports) = (Vec::new(), 0, 0);
            loop {
                match s.recv(Wait::For(Duration::from_secs(30))) {
                    Some(Received::Message(u64::MAX)) => break,
                    Some(Received::Message(m)) => got.push(m),
                    Some(Received::Lagged { skipped: n }) => {
                        skipped += n;
                        reports += 1;
                    }
                    None => panic!("nothing for 30 s after {} messages", got.len()),
                }
            }
            (got, skipped, reports, s.is_lossless())
        });
        let mut want = Vec::new();
        let mut gap_total = 0;
        for run in 0..RUNS {
            for _ in 0..RUN {
                let seq = p.next_sequence();
                want.push(seq);
                p.publish(&seq);
            }
            let gap = gaps[run as usize % gaps.len()];
            p.skip(gap).expect("a small skip");
            gap_total += gap;
        }
        p.publish(&u64::MAX);
        let (got, skipped, reports, lossless) = reader.join().unwrap();
        assert_eq!(skipped, gap_total, "told of more than the gaps");
        assert_eq!(reports, RUNS, "one report per gap");
        assert!(got == want, "lost or reordered messages");
        assert!(lossless, "evicted though it kept up");
    }

    #[test]
    fn a_single_publisher_deadline_publish_waits_that_long_then_names_the_subscriber() {
        // A 60 s eviction timeout, as above.
        let mut p = patient_bus(1);
        p.set_wait_strategy(WaitStrategy::BusySpin);
        let mut s = p
            .subscribe_lossless(Start::Next, WaitStrategy::BusySpin)
            .unwrap();
        assert_eq!(p.publish_within(&1, Wait::Never), Ok(0));
        let start = Instant::now();
        let full = p.publish_within(&2, Wait::For(Duration::from_millis(30)));
        let waited = start.elapsed();
        assert_eq!(
            full,
            Err(TryPublishError::Full {
                entry: 0,
                pid: None
            })
        );
        assert_waited_until(waited, Duration::from_millis(30), "the deadline");
        assert!(
            s.is_lossless(),
            "a deadline shorter than the timeout evicts nobody"
        );
        // A reader that reads on within the deadline lets it through.
        let reader = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            assert_eq!(s.try_recv(), Some(Received::Message(1)));
            s
        });
        assert_eq!(
            p.publish_within(&2, Wait::For(Duration::from_secs(20))),
            Ok(1)
        );
        let mut s = reader.join().unwrap();
        assert_eq!(s.try_recv(), Some(Received::Message(2)));
    }
}

/// A select over bus subscribers: the sleep over many doorbells.
mod select {
    use std::sync::Arc;
    use std::time::Duration;

    use crate::mem::HeapRegion;
    use crate::select::{Select, Selectable, WAITV_MAX};
    use crate::{Publisher, Received, Start, Subscriber, Wait, WaitStrategy};

    type HeapPair = (
        Publisher<u64, Arc<HeapRegion>>,
        Subscriber<u64, Arc<HeapRegion>>,
    );

    /// Waits until a sleeper raised its flag on `p`'s bus (bit 0 of the futex
    /// word): on a fresh heap bus, only a select about to sleep does. A
    /// publish after this wakes a sleeping select, not one still looking.
    fn wait_until_asleep_on(p: &Publisher<u64, Arc<HeapRegion>>) {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while p.ring.doorbell().load(crate::sync::Ordering::SeqCst) & 1 == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the select never went to sleep"
            );
            std::thread::yield_now();
        }
    }

    fn buses(n: usize) -> Vec<HeapPair> {
        (0..n)
            .map(|_| {
                let p = Publisher::<u64, _>::on_heap(4).expect("heap bus");
                let s = p.subscribe(Start::Next, WaitStrategy::default());
                (p, s)
            })
            .collect()
    }

    #[test]
    fn a_select_over_no_members_says_none_at_once_even_with_no_deadline() {
        assert_eq!(Select::new().ready(&[], Wait::Forever), None);
    }

    #[test]
    fn a_select_names_the_member_with_a_message_and_times_out_when_none_has_one() {
        let mut b = buses(3);
        let mut select = Select::new();
        fn members<P>(b: &[(P, Subscriber<u64, Arc<HeapRegion>>)]) -> Vec<&dyn Selectable> {
            b.iter().map(|(_, s)| s as &dyn Selectable).collect()
        }
        assert_eq!(
            select.ready(&members(&b), Wait::For(Duration::from_millis(5))),
            None
        );
        // Spin 0 goes straight to the sleep, and ends at the deadline too.
        let straight = WaitStrategy::SpinFutex {
            spin: Duration::ZERO,
        };
        let asked = std::time::Instant::now();
        let got = Select::with_strategy(straight)
            .ready(&members(&b), Wait::For(Duration::from_millis(5)));
        assert_eq!(got, None);
        assert!(asked.elapsed() >= Duration::from_millis(5));
        b[2].0.publish(&9);
        assert_eq!(select.ready(&members(&b), Wait::Never), Some(2));
        assert_eq!(b[2].1.recv(Wait::Never), Some(Received::Message(9)));
        assert_eq!(select.ready(&members(&b), Wait::Never), None);
    }

    #[test]
    fn a_lapped_member_is_ready_and_its_own_receive_reports_the_exact_lag() {
        let mut b = buses(2);
        for i in 0..10 {
            b[1].0.publish(&i);
        }
        let members: Vec<&dyn Selectable> = b.iter().map(|(_, s)| s as &dyn Selectable).collect();
        assert_eq!(Select::new().ready(&members, Wait::Never), Some(1));
        // 10 published on a 4-slot ring: the lag and what follows it account
        // for every one (a lapped reader goes on half a ring behind).
        let Some(Received::Lagged { skipped }) = b[1].1.recv(Wait::Never) else {
            panic!("expected a lag first")
        };
        let mut next = skipped;
        while let Some(Received::Message(m)) = b[1].1.recv(Wait::Never) {
            assert_eq!(m, next);
            next += 1;
        }
        assert_eq!(next, 10);
    }

    #[test]
    fn two_members_that_are_always_ready_are_named_in_turn() {
        let mut b = buses(2);
        b[0].0.publish(&1);
        b[1].0.publish(&2);
        let members: Vec<&dyn Selectable> = b.iter().map(|(_, s)| s as &dyn Selectable).collect();
        let mut select = Select::new();
        let picks: Vec<_> = (0..4)
            .map(|_| select.ready(&members, Wait::Never))
            .collect();
        assert_eq!(picks, [Some(0), Some(1), Some(0), Some(1)]);
    }

    #[test]
    fn a_sleeping_select_wakes_when_another_thread_publishes_on_any_member() {
        let n = if cfg!(miri) { 2 } else { 8 };
        let mut b = buses(n);
        let (mut publisher, _) = b.pop().expect("one bus");
        let subs = b;
        let last = publisher.subscribe(Start::Next, WaitStrategy::default());
        let t = std::thread::spawn(move || {
            wait_until_asleep_on(&publisher);
            publisher.publish(&5);
            publisher
        });
        let mut members: Vec<&dyn Selectable> =
            subs.iter().map(|(_, s)| s as &dyn Selectable).collect();
        members.push(&last);
        let asked = std::time::Instant::now();
        let got = Select::with_strategy(WaitStrategy::SpinFutex {
            spin: Duration::ZERO,
        })
        .ready(&members, Wait::For(Duration::from_secs(10)));
        // Woken by the publish, not by the end of the wait.
        assert!(
            asked.elapsed() < Duration::from_secs(5),
            "{:?}",
            asked.elapsed()
        );
        assert_eq!(got, Some(n - 1));
        drop(t.join().expect("publisher thread"));
    }

    #[test]
    fn a_select_over_more_members_than_futex_waitv_takes_still_wakes() {
        if cfg!(miri) {
            return; // hundreds of heap buses: too slow under Miri
        }
        let mut b = buses(WAITV_MAX + 20);
        let (mut publisher, last) = b.pop().expect("one bus");
        let t = std::thread::spawn(move || {
            wait_until_asleep_on(&publisher);
            publisher.publish(&5);
            publisher
        });
        let mut members: Vec<&dyn Selectable> =
            b.iter().map(|(_, s)| s as &dyn Selectable).collect();
        members.push(&last);
        let asked = std::time::Instant::now();
        let got = Select::with_strategy(WaitStrategy::SpinFutex {
            spin: Duration::ZERO,
        })
        .ready(&members, Wait::For(Duration::from_secs(10)));
        // Woken by the publish, not by the end of the wait.
        assert!(
            asked.elapsed() < Duration::from_secs(5),
            "{:?}",
            asked.elapsed()
        );
        assert_eq!(got, Some(WAITV_MAX + 19));
        drop(t.join().expect("publisher thread"));
    }
}

/// A bus's async waits, and the generic ones (`arm`) over a bus subscriber.
mod aio {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex, MutexGuard};
    use std::task::{Wake, Waker};
    use std::time::{Duration, Instant};

    use crate::{Publisher, Received, Start, Wait, WaitStrategy};

    /// The tests that count registrations (one count per process) run one at
    /// a time.
    fn counting() -> MutexGuard<'static, ()> {
        static ONE: Mutex<()> = Mutex::new(());
        ONE.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts its wakes.
    #[derive(Default)]
    struct Count(AtomicUsize);

    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn woken(count: &Count, times: usize) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while count.0.load(Ordering::SeqCst) < times {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }

    fn current_thread() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime")
    }

    #[test]
    #[cfg_attr(miri, ignore = "the waiter thread sleeps in futex_waitv")]
    fn a_timed_out_receive_loses_no_message_and_leaves_no_registration() {
        let _one = counting();
        current_thread().block_on(async {
            let mut publisher = Publisher::<u64, _>::on_heap(8).expect("heap bus");
            let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
            for i in 0..3u64 {
                let early =
                    tokio::time::timeout(Duration::from_millis(2), subscriber.recv_async()).await;
                assert!(early.is_err(), "nothing was published yet");
                publisher.publish(&i);
                assert_eq!(subscriber.recv_async().await, Received::Message(i));
            }
            assert_eq!(crate::aio::registrations(), 0);
        });
    }

    #[test]
    #[cfg_attr(miri, ignore = "the waiter thread sleeps in futex_waitv")]
    fn a_many_publishers_async_publish_dropped_while_it_waits_for_room_claimed_nothing() {
        use std::future::Future;
        use std::task::{Context, Poll, Waker};
        let _one = counting();
        let mut publisher = crate::bus::ManyPublisher::<u64, _>::on_heap(2, Duration::from_secs(1))
            .expect("heap bus");
        let mut lossless = publisher
            .subscribe_lossless(Start::Next, WaitStrategy::default())
            .expect("lossless");
        let mut cx = Context::from_waker(Waker::noop());
        for i in 0..2u64 {
            let mut fut = std::pin::pin!(publisher.publish_async(&i));
            assert_eq!(fut.as_mut().poll(&mut cx), Poll::Ready(Ok(i)));
        }
        {
            // Both slots unread: it waits, registered with the waiter. The
            // waiter's thread may wake it, which ends that registration,
            // before the count is read (a slow run, under a sanitizer, saw
            // 0): poll again then, as an executor would after the wake.
            let mut fut = std::pin::pin!(publisher.publish_async(&99));
            let registered = (0..1000).any(|_| {
                assert!(fut.as_mut().poll(&mut cx).is_pending());
                crate::aio::registrations() == 1
            });
            assert!(registered, "a waiting publish registers with the waiter");
        }
        assert_eq!(
            crate::aio::registrations(),
            0,
            "the dropped future's registration"
        );
        assert_eq!(
            lossless.recv(crate::Wait::Never),
            Some(Received::Message(0))
        );
        current_thread().block_on(async {
            assert_eq!(
                publisher.publish_async(&2).await,
                Ok(2),
                "nothing was claimed"
            );
        });
        assert_eq!(
            lossless.recv(crate::Wait::Never),
            Some(Received::Message(1))
        );
        assert_eq!(
            lossless.recv(crate::Wait::Never),
            Some(Received::Message(2))
        );
    }

    #[test]
    #[cfg_attr(miri, ignore = "the waiter thread sleeps in futex_waitv")]
    fn an_armed_wake_up_wakes_once_when_a_message_comes_and_its_drop_leaves_no_registration() {
        let _one = counting();
        let mut publisher = Publisher::<u64, _>::on_heap(8).expect("heap bus");
        let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
        let count = Arc::new(Count::default());
        let waker = Waker::from(count.clone());

        // Armed on an empty bus: registered, not woken.
        let armed = crate::aio::arm(&subscriber, &waker).expect("nothing to read: armed");
        assert!(armed.is_waiting());
        assert_eq!(crate::aio::registrations(), 1);
        // Dropped unwoken: the registration goes with it.
        drop(armed);
        assert_eq!(crate::aio::registrations(), 0);

        let armed = crate::aio::arm(&subscriber, &waker).expect("still nothing to read");
        publisher.publish(&7);
        assert!(woken(&count, 1), "the publish woke the armed waker");
        assert!(
            !armed.is_waiting(),
            "the waiter removed the woken registration"
        );
        drop(armed);
        assert_eq!(count.0.load(Ordering::SeqCst), 1, "woken once");
        assert_eq!(subscriber.recv(Wait::Never), Some(Received::Message(7)));

        // Readable already: nothing armed.
        publisher.publish(&8);
        assert!(crate::aio::arm(&subscriber, &waker).is_none());
        assert_eq!(crate::aio::registrations(), 0);

        // After a miss: armed without a look, woken by its nap (1 ms).
        let armed = crate::aio::arm_after_miss(&subscriber, &waker).expect("armed after a miss");
        assert!(woken(&count, 2), "the nap after a miss ended the wait");
        drop(armed);
        assert_eq!(crate::aio::registrations(), 0);
    }
}
