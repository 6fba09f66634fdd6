//! The journaled bus: late join without a gap or a duplicate, recovery,
//! compaction, a full disk. Real processes where the issue asks for them.

mod common;

use std::time::Duration;

use common::{BusName, TestDir};
use shmbus::journal::{JoinOptions, JournalOptions, JournalPublisher, JournalSubscriber, Keyed};
use shmbus::{CreateOptions, Received};

#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Kv {
    key: u64,
    val: u64,
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

/// Receives until sequence `upto` (exclusive) has come, checking the
/// contiguous part has every sequence once, in order.
fn drain_to(sub: &mut JournalSubscriber<Kv>, upto: u64, keys: u64) -> Vec<u64> {
    let mut seqs = Vec::new();
    while sub.position() < upto {
        match sub.recv_timeout(Duration::from_secs(10)) {
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
    let dir = TestDir::new("jlate");
    let bus = BusName::new("jlate");
    let keys = 50;
    let mut p = JournalPublisher::<Kv>::create(
        bus.name(),
        &CreateOptions::new(64),
        &JournalOptions::new(dir.path().join("j")),
    )
    .expect("create");
    for i in 0..1000 {
        p.publish(&kv(i, keys)).expect("publish");
    }
    let mut s = JournalSubscriber::<Kv>::join(bus.name(), &JoinOptions::default()).expect("join");
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
