//! Pool buses across processes: blocks held by a subscriber that is
//! killed, loaned by a publisher that is killed, and a chaos loop of both,
//! after which every block is accounted for and no message seen was torn.

mod common;

use std::time::Duration;

use common::{param, print_ready, role, spawn_child, splitmix, BusName};
use shmbus::{
    pool::{PoolPublisher, PoolSubscriber},
    OpenOptions, Received, Wait,
};

/// A payload that names itself: 8 bytes of tag, then the tag's low byte,
/// so a block rewritten under a reader (or torn) is caught.
fn fill(buf: &mut [u8], tag: u64) {
    buf[..8].copy_from_slice(&tag.to_le_bytes());
    buf[8..].fill(tag as u8);
}

fn whole(buf: &[u8]) -> bool {
    let tag = u64::from_le_bytes(buf[..8].try_into().unwrap());
    buf[8..].iter().all(|&b| b == tag as u8)
}

fn publish(p: &mut PoolPublisher, tag: u64, len: usize) {
    let mut loan = p
        .loan(len, Wait::For(Duration::from_secs(5)))
        .expect("a block");
    fill(&mut loan, tag);
    let _ = loan.publish();
}

#[test]
fn as_child_pool_holder() {
    role("pool-holder", || {
        let name: String = param("BUS");
        let hold: usize = param("HOLD");
        let mut s = PoolSubscriber::open(&name, &OpenOptions::default()).expect("open");
        print_ready();
        let mut held = Vec::new();
        while held.len() < hold {
            if let Ok(Some(Received::Message(m))) = s.recv(Wait::For(Duration::from_secs(5))) {
                assert!(whole(&m));
                held.push(m);
            }
        }
        println!("HELD");
        common::idle_until_killed();
    });
}

#[test]
fn as_child_pool_loaner() {
    role("pool-loaner", || {
        let name: String = param("BUS");
        let mut p = PoolPublisher::attach_many(&name, &OpenOptions::default()).expect("attach");
        let loan = p.loan(64, Wait::Never).expect("a block");
        print_ready();
        let _keep = loan;
        common::idle_until_killed();
    });
}

/// Publishes (many publishers) or holds samples (a subscriber) until killed.
#[test]
fn as_child_pool_worker() {
    role("pool-worker", || {
        let name: String = param("BUS");
        let kind: String = param("KIND");
        let mut rng: u64 = param("SEED");
        if kind == "publisher" {
            let mut p = PoolPublisher::attach_many(&name, &OpenOptions::default()).expect("attach");
            print_ready();
            for tag in 0.. {
                rng = splitmix(rng);
                publish(&mut p, tag, 8 + (rng % 4000) as usize);
            }
        } else {
            let mut s = PoolSubscriber::open(&name, &OpenOptions::default()).expect("open");
            print_ready();
            let mut held = std::collections::VecDeque::new();
            loop {
                if let Ok(Some(Received::Message(m))) = s.recv(Wait::For(Duration::from_millis(1)))
                {
                    assert!(whole(&m), "torn or rewritten block");
                    held.push_back(m);
                }
                rng = splitmix(rng);
                if held.len() == PoolSubscriber::<shmbus::mem::ShmRegion>::MAX_HELD || rng % 3 == 0
                {
                    if let Some(m) = held.pop_front() {
                        assert!(whole(&m), "a held block was rewritten");
                    }
                }
            }
        }
    });
}

/// Tries to join a many-publisher pool bus, and a subscriber to it, from
/// wherever it was started (another pid namespace); prints the outcomes.
#[test]
fn as_child_pool_foreigner() {
    role("pool-foreigner", || {
        let name: String = param("BUS");
        match PoolPublisher::attach_many(&name, &OpenOptions::default()) {
            Err(e @ shmbus::AttachError::PidNamespace { .. }) => println!("REFUSED {e}"),
            Err(e) => println!("OTHER {e}"),
            Ok(_) => println!("ATTACHED"),
        }
        let opened = PoolSubscriber::open(&name, &OpenOptions::default()).is_ok();
        println!("SUBSCRIBER {opened}");
    });
}

/// A sweep frees a loan whose pid is gone; from another pid namespace a
/// live publisher's pid looks gone, so publishers must share one.
#[test]
fn a_publisher_in_another_pid_namespace_is_refused_and_a_subscriber_is_not() {
    let bus = BusName::new("pool-pidns");
    let _p =
        PoolPublisher::create_many(bus.name(), &shmbus::pool::PoolOptions::new(2, 64, 3).many())
            .expect("create");
    if common::run(common::command("unshare", &["--pid", "--fork", "true"])).code() != Some(0) {
        eprintln!("SKIPPED: this machine cannot unshare a pid namespace (needs root)");
        bus.finish();
        return;
    }
    let exe = std::env::current_exe().expect("current_exe");
    let exe = exe.to_str().expect("a UTF-8 path");
    let args = [
        "--pid",
        "--fork",
        exe,
        "--exact",
        "as_child_pool_foreigner",
        "--nocapture",
    ];
    let mut cmd = common::command("unshare", &args);
    cmd.env(common::ROLE_VAR, "pool-foreigner")
        .env("BUS", bus.name());
    let out = common::Watched::spawn("pool foreigner", cmd, common::CHILD_DEADLINE)
        .wait()
        .output();
    assert!(
        out.contains("REFUSED pool bus was made in pid namespace"),
        "{out}"
    );
    assert!(out.contains("SUBSCRIBER true"), "{out}");
    drop(_p);
    bus.finish();
}

#[test]
fn a_subscriber_killed_holding_samples_gives_its_blocks_back_to_the_next_loan() {
    let bus = BusName::new("pool-holder");
    // 8 slots and 16 blocks: with the holder's 8 held and 8 on the ring,
    // none is free until the holder dies.
    let mut p = PoolPublisher::create(bus.name(), &shmbus::pool::PoolOptions::new(8, 64, 16))
        .expect("create");
    let mut holder = spawn_child(
        "as_child_pool_holder",
        "pool-holder",
        &[("BUS", bus.name().to_string()), ("HOLD", "8".into())],
    );
    holder.wait_ready();
    for tag in 0..8 {
        publish(&mut p, tag, 64);
    }
    holder.wait_until_printed("HELD", Duration::from_secs(20));
    for tag in 8..16 {
        publish(&mut p, tag, 64);
    }
    let c = p.census();
    assert_eq!((c.held, c.on_ring, c.free), (8, 8, 0), "{c:?}");
    assert!(
        p.loan(64, Wait::Never).is_err(),
        "a live holder's blocks are not free"
    );
    let f = holder.kill();
    assert_eq!(f.signal(), Some(libc::SIGKILL), "{}", f.output());
    // This loan finds no free block, sweeps the dead holder's, takes one.
    publish(&mut p, 16, 64);
    let c = p.census();
    assert_eq!((c.held, c.loaned, c.corrupt), (0, 0, 0), "{c:?}");
    drop(p);
    bus.finish();
}

#[test]
fn a_publisher_killed_holding_a_loan_loses_only_that_block_until_a_loan_sweeps_it() {
    let bus = BusName::new("pool-loaner");
    let p =
        PoolPublisher::create_many(bus.name(), &shmbus::pool::PoolOptions::new(2, 64, 3).many())
            .expect("create");
    let child = spawn_child(
        "as_child_pool_loaner",
        "pool-loaner",
        &[("BUS", bus.name().to_string())],
    );
    let mut child = child;
    child.wait_ready();
    assert_eq!(p.census().loaned, 1);
    let f = child.kill();
    assert_eq!(f.signal(), Some(libc::SIGKILL), "{}", f.output());
    assert_eq!(p.census().loaned, 1, "nobody has looked yet");
    assert_eq!(p.reclaim_dead(), (0, 1));
    assert_eq!(p.census().free, 3);
    drop(p);
    bus.finish();
}

#[test]
fn publishers_and_subscribers_killed_at_random_leave_every_block_accounted_for() {
    let seed: u64 = std::env::var("SHMBUS_CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9001);
    // 8 times SHMBUS_TEST_SCALE, at least 2 (a kill after a kill), or
    // exactly SHMBUS_CHAOS_ROUNDS.
    let rounds: u64 = std::env::var("SHMBUS_CHAOS_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| common::scale_min(8, 2));
    println!(
        "pool chaos: seed {seed:#x}, {rounds} rounds (SHMBUS_CHAOS_SEED, SHMBUS_CHAOS_ROUNDS)"
    );
    let bus = BusName::new("pool-chaos");
    let blocks = 16 + 3 * 8 + 4;
    let p = PoolPublisher::create_many(
        bus.name(),
        &shmbus::pool::PoolOptions::new(16, 4096, blocks).many(),
    )
    .expect("create");
    // A live reader throughout, checking every block it gets.
    let mut reader = PoolSubscriber::open(bus.name(), &OpenOptions::default()).expect("open");
    let mut rng = seed;
    let (mut seen, mut skipped) = (0u64, 0u64);
    for round in 0..rounds {
        let mut children: Vec<_> = ["publisher", "subscriber", "publisher"]
            .iter()
            .map(|kind| {
                rng = splitmix(rng);
                spawn_child(
                    "as_child_pool_worker",
                    "pool-worker",
                    &[
                        ("BUS", bus.name().to_string()),
                        ("KIND", kind.to_string()),
                        ("SEED", rng.to_string()),
                    ],
                )
            })
            .collect();
        for c in &mut children {
            c.wait_ready();
        }
        rng = splitmix(rng);
        let until = std::time::Instant::now() + Duration::from_micros(rng % 50_000);
        while std::time::Instant::now() < until {
            match reader.recv(Wait::For(Duration::from_millis(1))) {
                Ok(Some(Received::Message(m))) => {
                    assert!(whole(&m), "round {round}: torn block");
                    seen += 1;
                }
                Ok(Some(Received::Lagged { skipped: k })) => skipped += k,
                _ => {}
            }
        }
        for mut c in children {
            c.check_alive("the kill");
            let f = c.kill();
            assert_eq!(
                f.signal(),
                Some(libc::SIGKILL),
                "round {round}: {}",
                f.output()
            );
        }
    }
    let (entries, loans) = p.reclaim_dead();
    let c = p.census();
    println!("{seen} blocks read whole, {skipped} skipped; swept {entries} dead subscribers, {loans} dead loans; {c:?}");
    assert_eq!((c.held, c.loaned, c.corrupt), (0, 0, 0), "{c:?}");
    assert_eq!(c.free + c.on_ring + c.reclaimable, blocks);
    assert!(seen > 0, "the reader read nothing");
    drop(reader);
    drop(p);
    bus.finish();
}
