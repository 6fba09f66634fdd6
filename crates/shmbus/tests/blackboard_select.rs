//! A blackboard reader in a select: the select wakes for a put
//! made by another thread through its own handle on the table's file, and
//! a reader whose `seen` is the table's version is not ready.

mod common;

use std::time::Duration;

use common::BusName;
use shmbus::blackboard::{self, Reader, Writer};
use shmbus::select::Select;
use shmbus::{BusOptions, OpenOptions, Publisher, Subscriber, Wait};

#[test]
#[cfg_attr(miri, ignore)]
fn a_select_over_a_bus_and_a_blackboard_reader_wakes_for_each_put_and_not_before() {
    let (b, t) = (BusName::new("I-bbsel-bus"), BusName::new("I-bbsel-table"));
    let _publisher = Publisher::<u64>::create(b.name(), &BusOptions::new(64)).expect("bus");
    let sub = Subscriber::<u64>::open(b.name(), &OpenOptions::default()).expect("sub");
    let mut writer =
        Writer::<u64, [u64; 8]>::create(t.name(), &blackboard::Options::new(16)).expect("table");
    let mut reader = Reader::<u64, [u64; 8]>::open(t.name(), &OpenOptions::default()).expect("rd");
    let mut select = Select::new();
    // Nothing written: neither is ready.
    assert_eq!(select.ready(&[&sub, &reader], Wait::Never), None);
    let rounds = common::scale_min(200, 20);
    let (ack, acked) = std::sync::mpsc::channel::<()>();
    let putter = std::thread::spawn(move || {
        for i in 1..=rounds {
            writer.put(&(i % 16), &[i; 8]).expect("put");
            // The next put only once the select has seen this one.
            acked.recv().expect("ack");
        }
    });
    for i in 1..=rounds {
        let woke = select.ready(&[&sub, &reader], Wait::For(Duration::from_secs(10)));
        assert_eq!(
            woke,
            Some(1),
            "round {i}: the blackboard reader, not the bus"
        );
        let version = reader.version();
        assert_eq!(version, i);
        let got = reader
            .get(&(i % 16))
            .expect("get")
            .expect("the key just put");
        assert_eq!((got.value, got.version), ([i; 8], i));
        reader.mark_seen(version);
        assert_eq!(
            select.ready(&[&sub, &reader], Wait::Never),
            None,
            "round {i}"
        );
        ack.send(()).expect("putter");
    }
    putter.join().expect("putter");
}
