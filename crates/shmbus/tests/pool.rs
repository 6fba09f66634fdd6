//! Pool buses across processes: typed pools (a `T` sent and received in
//! place, a pool opened as another type, raw readers and writers of a
//! typed pool), blocks held by a subscriber that is killed, loaned by a
//! publisher that is killed, and a chaos loop of both, after which every
//! block is accounted for and no message seen was torn.

mod common;

use std::time::Duration;

use bytemuck::{Pod, Zeroable};
use common::{BusName, param, print_ready, role, spawn_child, splitmix};
use shmbus::{
    AttachError, Message, OpenError, OpenOptions, Received, Start, TypeFingerprint, Wait, pool,
};

/// The typed tests' message: 24 bytes, aligned to 8.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
struct Tick {
    id: u64,
    price: f64,
    qty: u64,
}

impl shmbus::Message for Tick {
    const NAME: &'static str = "test.pool.Tick";
}

/// Same size and alignment as `Tick`, another name.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Quote {
    bid: u64,
    ask: u64,
    size: u64,
}

impl shmbus::Message for Quote {
    const NAME: &'static str = "test.pool.Quote";
}

fn tick(id: u64) -> Tick {
    Tick {
        id,
        price: id as f64 + 0.5,
        qty: 100 * id,
    }
}

/// Receives `COUNT` ticks with a typed subscriber, printing each.
#[test]
fn as_child_pool_tick_reader() {
    role("pool-tick-reader", || {
        let name: String = param("BUS");
        let count: u64 = param("COUNT");
        let opts = OpenOptions::default().start(Start::Oldest);
        let mut s = pool::Subscriber::<Tick>::open(&name, &opts).expect("open");
        print_ready();
        let mut got = 0;
        while got < count {
            match s.recv(Wait::For(Duration::from_secs(5))).expect("recv") {
                Some(Received::Message(t)) => {
                    println!("TICK {} {} {}", t.id, t.price, t.qty);
                    got += 1;
                }
                Some(Received::Lagged { skipped }) => println!("LAGGED {skipped}"),
                None => panic!("no tick within 5 s"),
            }
        }
    });
}

/// Receives `COUNT` messages with a raw subscriber, printing each as hex.
#[test]
fn as_child_pool_raw_reader() {
    role("pool-raw-reader", || {
        let name: String = param("BUS");
        let count: u64 = param("COUNT");
        let opts = OpenOptions::default().start(Start::Oldest);
        let mut s = pool::Subscriber::<[u8]>::open(&name, &opts).expect("open");
        print_ready();
        for _ in 0..count {
            match s.recv(Wait::For(Duration::from_secs(5))).expect("recv") {
                Some(Received::Message(m)) => {
                    let hex: String = m.iter().map(|b| format!("{b:02x}")).collect();
                    println!("BYTES {hex}");
                }
                other => panic!("expected a message, got {other:?}"),
            }
        }
    });
}

/// Attaches as a raw publisher (which opens a pool of any type) and
/// publishes a 3-byte message, then the bytes of `tick(9)`.
#[test]
fn as_child_pool_raw_writer() {
    role("pool-raw-writer", || {
        let name: String = param("BUS");
        let mut p =
            pool::Publisher::<[u8]>::attach(&name, &OpenOptions::default()).expect("attach");
        let mut loan = p.loan(3, Wait::Never).expect("a block");
        loan.copy_from_slice(b"abc");
        loan.publish().expect("single publisher");
        let nine = tick(9);
        let bytes = bytemuck::bytes_of(&nine);
        let mut loan = p.loan(bytes.len(), Wait::Never).expect("a block");
        loan.copy_from_slice(bytes);
        loan.publish().expect("single publisher");
        println!("PUBLISHED");
    });
}

#[test]
fn a_typed_pool_publishes_and_receives_a_t_across_processes() {
    let bus = BusName::new("pool-typed");
    let mut p = pool::Publisher::<Tick>::create(bus.name(), &pool::Options::new(8, 64, 16))
        .expect("create");
    let mut reader = spawn_child(
        "as_child_pool_tick_reader",
        "pool-tick-reader",
        &[("BUS", bus.name().to_string()), ("COUNT", "5".into())],
    );
    reader.wait_ready();
    for id in 1..=5 {
        let mut loan = p.loan(Wait::For(Duration::from_secs(5))).expect("a block");
        *loan = tick(id);
        loan.qty += 1; // written in place, field by field
        assert_eq!(loan.publish(), Ok(id - 1));
    }
    let done = reader.wait();
    assert_eq!(done.code(), Some(0), "{}", done.output());
    let out = done.output();
    for id in 1..=5u64 {
        let t = tick(id);
        let line = format!("TICK {} {} {}", t.id, t.price, t.qty + 1);
        assert!(out.contains(&line), "missing {line:?}:\n{out}");
    }
    drop(p);
    bus.finish();
}

#[test]
fn opening_a_pool_as_another_message_type_is_a_type_mismatch_naming_both() {
    // Handles are dropped and the bus opened again: no child of another
    // test may be between fork and exec meanwhile, holding a copy of a
    // dropped handle's lock.
    let _no_fork = common::no_spawn_in_flight();
    let bus = BusName::new("pool-mismatch");
    let p =
        pool::Publisher::<Tick>::create(bus.name(), &pool::Options::new(4, 64, 8)).expect("create");
    let opts = OpenOptions::default();
    // Same size and alignment, another name; then another size.
    for (err, expected) in [
        (
            pool::Subscriber::<Quote>::open(bus.name(), &opts).err(),
            TypeFingerprint::of::<Quote>(),
        ),
        (
            pool::Subscriber::<u64>::open(bus.name(), &opts).err(),
            TypeFingerprint::of::<u64>(),
        ),
    ] {
        match err {
            Some(OpenError::TypeMismatch { found, expected: e }) => {
                assert_eq!(found, TypeFingerprint::of::<Tick>());
                assert_eq!(e, expected);
            }
            other => panic!("expected a type mismatch, got {other:?}"),
        }
    }
    let text = pool::Subscriber::<Quote>::open(bus.name(), &opts)
        .expect_err("a Quote reader of a Tick pool")
        .to_string();
    assert!(
        text.contains("test.pool.Tick") && text.contains("test.pool.Quote"),
        "{text}"
    );
    // A raw opener naming another type is refused; naming the pool's, or
    // none, it opens.
    let named = OpenOptions::default().message_type("test.pool.Quote", 24, 8);
    assert!(matches!(
        pool::Subscriber::<[u8]>::open(bus.name(), &named),
        Err(OpenError::TypeMismatch { .. })
    ));
    let named = OpenOptions::default().message_type("test.pool.Tick", 24, 8);
    drop(pool::Subscriber::<[u8]>::open(bus.name(), &named).expect("the pool's own type"));
    drop(pool::Subscriber::<Tick>::open(bus.name(), &opts).expect("the pool's own type"));

    // A publisher of another type is refused before it takes the role: the
    // epoch stays, and the right type attaches after it.
    drop(p);
    let epoch = shmbus::stat::stat(bus.name()).expect("stat").epoch;
    match pool::Publisher::<Quote>::attach(bus.name(), &opts) {
        Err(AttachError::Open(OpenError::TypeMismatch { found, expected })) => {
            assert_eq!(found, TypeFingerprint::of::<Tick>());
            assert_eq!(expected, TypeFingerprint::of::<Quote>());
        }
        other => panic!("expected a type mismatch, got {other:?}"),
    }
    assert_eq!(shmbus::stat::stat(bus.name()).expect("stat").epoch, epoch);
    drop(pool::Publisher::<Tick>::attach(bus.name(), &opts).expect("the pool's own type"));
    assert_eq!(
        shmbus::stat::stat(bus.name()).expect("stat").epoch,
        epoch.map(|e| e + 1)
    );
    bus.finish();
}

#[test]
fn a_raw_subscriber_reads_a_typed_pools_messages_as_their_bytes() {
    let bus = BusName::new("pool-raw-reads-typed");
    let mut p = pool::Publisher::<Tick>::create(bus.name(), &pool::Options::new(8, 64, 16))
        .expect("create");
    let mut reader = spawn_child(
        "as_child_pool_raw_reader",
        "pool-raw-reader",
        &[("BUS", bus.name().to_string()), ("COUNT", "2".into())],
    );
    reader.wait_ready();
    for id in [3, 4] {
        let mut loan = p.loan(Wait::Never).expect("a block");
        *loan = tick(id);
        loan.publish().expect("single publisher");
    }
    let done = reader.wait();
    assert_eq!(done.code(), Some(0), "{}", done.output());
    for id in [3, 4] {
        let hex: String = bytemuck::bytes_of(&tick(id))
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert!(
            done.output().contains(&format!("BYTES {hex}\n")),
            "tick {id}: {}",
            done.output()
        );
    }
    drop(p);
    bus.finish();
}

#[test]
fn a_typed_subscriber_counts_a_raw_writers_message_of_another_length_as_lost() {
    let bus = BusName::new("pool-raw-writes-typed");
    let no_fork = common::no_spawn_in_flight(); // as in `opening_a_pool_as_...`
    drop(
        pool::Publisher::<Tick>::create(bus.name(), &pool::Options::new(8, 64, 16))
            .expect("create"),
    );
    drop(no_fork);
    let opts = OpenOptions::default().start(Start::Oldest);
    let mut s = pool::Subscriber::<Tick>::open(bus.name(), &opts).expect("open");
    let writer = spawn_child(
        "as_child_pool_raw_writer",
        "pool-raw-writer",
        &[("BUS", bus.name().to_string())],
    );
    let done = writer.wait();
    assert!(done.output().contains("PUBLISHED"), "{}", done.output());
    // The 3-byte message is no Tick: lost, counted, nothing held.
    match s.recv(Wait::Never).expect("recv") {
        Some(Received::Lagged { skipped: 1 }) => {}
        other => panic!("expected one lost message, got {other:?}"),
    }
    assert_eq!(s.held(), 0);
    match s.recv(Wait::Never).expect("recv") {
        Some(Received::Message(t)) => assert_eq!(*t, tick(9)),
        other => panic!("expected tick 9, got {other:?}"),
    }
    // Counted where `stat` and `top` see it, as any lost message.
    let lines = shmbus::stat::stat(bus.name()).expect("stat").subscribers;
    assert_eq!(
        lines
            .iter()
            .map(|l| (l.delivered, l.skipped))
            .collect::<Vec<_>>(),
        [(1, 1)]
    );
    drop(s);
    bus.finish();
}

#[test]
fn a_raw_creator_records_the_block_type_it_names_and_only_that_type_opens_it_typed() {
    let _no_fork = common::no_spawn_in_flight(); // handles dropped, the bus opened again
    let bus = BusName::new("pool-named");
    let opts = pool::Options::new(4, 64, 8).message_type(Tick::NAME, 24, 8);
    let mut raw = pool::Publisher::<[u8]>::create(bus.name(), &opts).expect("create");
    let mut typed =
        pool::Subscriber::<Tick>::open(bus.name(), &OpenOptions::default().start(Start::Oldest))
            .expect("the named type opens typed");
    match pool::Subscriber::<Quote>::open(bus.name(), &OpenOptions::default()) {
        Err(OpenError::TypeMismatch { found, .. }) => assert_eq!(found.name, Tick::NAME),
        other => panic!("expected a type mismatch, got {other:?}"),
    }
    let mut loan = raw.loan(24, Wait::Never).expect("a block");
    loan.copy_from_slice(bytemuck::bytes_of(&tick(5)));
    loan.publish().expect("published");
    match typed.recv(Wait::Never).expect("recv") {
        Some(Received::Message(sample)) => assert_eq!(*sample, tick(5)),
        other => panic!("expected tick 5, got {other:?}"),
    }
    drop((raw, typed));
    bus.finish();
    // A type the blocks cannot hold, or one not aligned as blocks are, is
    // refused when the pool is made.
    for (size, align) in [(65, 8), (24, 128), (24, 3)] {
        let bad = BusName::new("pool-named-bad");
        let opts = pool::Options::new(4, 64, 8).message_type(Tick::NAME, size, align);
        let err = pool::Publisher::<[u8]>::create(bad.name(), &opts).expect_err("refused");
        assert!(
            matches!(err, shmbus::CreateError::InvalidGeometry(_)),
            "size {size} align {align}: {err}"
        );
        bad.finish();
    }
}

#[test]
fn a_pool_made_before_the_header_recorded_its_block_type_opens_raw_only() {
    // Handles are dropped and the bus opened again: no child of another
    // test may be between fork and exec meanwhile, holding a copy of a
    // dropped handle's lock.
    let _no_fork = common::no_spawn_in_flight();
    let bus = BusName::new("pool-untyped");
    drop(
        pool::Publisher::<Tick>::create(bus.name(), &pool::Options::new(4, 64, 8)).expect("create"),
    );
    // As an older build left it: the block type's bytes are zero.
    let path = bus.path();
    let (from, to) = (
        shmbus::wire::header::POOL_TYPE_HASH,
        shmbus::wire::header::POOL_TYPE_NAME + 64,
    );
    common::write_at(path, from as u64, &vec![0u8; to - from]);
    match pool::Subscriber::<Tick>::open(bus.name(), &OpenOptions::default()) {
        Err(OpenError::TypeMismatch { found, .. }) => {
            assert_eq!((found.size, found.align, found.name_hash), (0, 0, 0));
        }
        other => panic!("expected a type mismatch, got {other:?}"),
    }
    drop(pool::Subscriber::<[u8]>::open(bus.name(), &OpenOptions::default()).expect("raw opens"));
    drop(
        pool::Publisher::<[u8]>::attach(bus.name(), &OpenOptions::default()).expect("raw attaches"),
    );
    let pool = shmbus::stat::stat(bus.name())
        .expect("stat")
        .pool
        .expect("a pool");
    assert_eq!(pool.block_type.name_hash, 0);
    bus.finish();
}

#[test]
fn a_typed_pool_whose_header_says_its_blocks_are_smaller_than_its_type_is_refused() {
    // Handles are dropped and the bus opened again: no child of another
    // test may be between fork and exec meanwhile, holding a copy of a
    // dropped handle's lock.
    let _no_fork = common::no_spawn_in_flight();
    let bus = BusName::new("pool-small-blocks");
    drop(
        pool::Publisher::<[u64; 16]>::create(bus.name(), &pool::Options::new(4, 128, 8))
            .expect("create"),
    );
    // Blocks of 64 bytes still lie inside the file: only the type says no.
    let path = bus.path();
    common::patch_u64(path, shmbus::wire::header::POOL_BLOCK_SIZE as u64, 64);
    match pool::Subscriber::<[u64; 16]>::open(bus.name(), &OpenOptions::default()) {
        Err(OpenError::InvalidGeometry(text)) => {
            assert!(
                text.contains("64-byte blocks") && text.contains("u64[16]"),
                "{text}"
            );
        }
        other => panic!("expected invalid geometry, got {other:?}"),
    }
    match pool::Publisher::<[u64; 16]>::attach(bus.name(), &OpenOptions::default()) {
        Err(AttachError::Open(OpenError::InvalidGeometry(_))) => {}
        other => panic!("expected invalid geometry, got {other:?}"),
    }
    drop(pool::Subscriber::<[u8]>::open(bus.name(), &OpenOptions::default()).expect("raw opens"));
    bus.finish();
}

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

fn publish(p: &mut pool::Publisher<[u8]>, tag: u64, len: usize) {
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
        let mut s = pool::Subscriber::<[u8]>::open(&name, &OpenOptions::default()).expect("open");
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
        let mut p =
            pool::Publisher::<[u8]>::attach_many(&name, &OpenOptions::default()).expect("attach");
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
            let mut p = pool::Publisher::<[u8]>::attach_many(&name, &OpenOptions::default())
                .expect("attach");
            print_ready();
            for tag in 0.. {
                rng = splitmix(rng);
                publish(&mut p, tag, 8 + (rng % 4000) as usize);
            }
        } else {
            let mut s =
                pool::Subscriber::<[u8]>::open(&name, &OpenOptions::default()).expect("open");
            print_ready();
            let mut held = std::collections::VecDeque::new();
            loop {
                if let Ok(Some(Received::Message(m))) = s.recv(Wait::For(Duration::from_millis(1)))
                {
                    assert!(whole(&m), "torn or rewritten block");
                    held.push_back(m);
                }
                rng = splitmix(rng);
                if held.len() == pool::Subscriber::<[u8]>::MAX_HELD || rng % 3 == 0 {
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
        match pool::Publisher::<[u8]>::attach_many(&name, &OpenOptions::default()) {
            Err(e @ shmbus::AttachError::PidNamespace { .. }) => println!("REFUSED {e}"),
            Err(e) => println!("OTHER {e}"),
            Ok(_) => println!("ATTACHED"),
        }
        let opened = pool::Subscriber::<[u8]>::open(&name, &OpenOptions::default()).is_ok();
        println!("SUBSCRIBER {opened}");
    });
}

/// A sweep frees a loan whose pid is gone; from another pid namespace a
/// live publisher's pid looks gone, so publishers must share one.
#[test]
fn a_publisher_in_another_pid_namespace_is_refused_and_a_subscriber_is_not() {
    let bus = BusName::new("pool-pidns");
    let _p = pool::Publisher::<[u8]>::create_many(
        bus.name(),
        &shmbus::pool::Options::new(2, 64, 3).many(),
    )
    .expect("create");
    if common::run(common::command("unshare", &["--pid", "--fork", "true"])).code() != Some(0) {
        common::skip(
            common::Need::Namespaces,
            "this machine cannot unshare a pid namespace (needs root)",
        );
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
    let mut p = pool::Publisher::<[u8]>::create(bus.name(), &shmbus::pool::Options::new(8, 64, 16))
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
    let p = pool::Publisher::<[u8]>::create_many(
        bus.name(),
        &shmbus::pool::Options::new(2, 64, 3).many(),
    )
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
    let p = pool::Publisher::<[u8]>::create_many(
        bus.name(),
        &shmbus::pool::Options::new(16, 4096, blocks).many(),
    )
    .expect("create");
    // A live reader throughout, checking every block it gets.
    let mut reader =
        pool::Subscriber::<[u8]>::open(bus.name(), &OpenOptions::default()).expect("open");
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
    println!(
        "{seen} blocks read whole, {skipped} skipped; swept {entries} dead subscribers, {loans} dead loans; {c:?}"
    );
    assert_eq!((c.held, c.loaned, c.corrupt), (0, 0, 0), "{c:?}");
    assert_eq!(c.free + c.on_ring + c.reclaimable, blocks);
    assert!(seen > 0, "the reader read nothing");
    drop(reader);
    drop(p);
    bus.finish();
}

/// Reads `COUNT` raw messages, lossless or not as `LOSSLESS` says, slowly
/// if `SLOW` (a pause every few messages), checking every byte of each
/// block; reports what it got.
#[test]
fn as_child_pool_checking_reader() {
    role("pool-checking-reader", || {
        let name: String = param("BUS");
        let count: u64 = param("COUNT");
        let lossless = param::<u8>("LOSSLESS") == 1;
        let slow = param::<u8>("SLOW") == 1;
        let opts = OpenOptions::default().start(Start::Next).lossless(lossless);
        let mut s = pool::Subscriber::<[u8]>::open(&name, &opts).expect("open");
        assert_eq!(s.is_lossless(), lossless);
        print_ready();
        let (mut delivered, mut skipped, mut torn, mut wrong) = (0u64, 0u64, 0u64, 0u64);
        while s.position() < count {
            let pos = s.position();
            match s.recv(Wait::For(Duration::from_secs(30))).expect("recv") {
                Some(Received::Message(m)) => {
                    delivered += 1;
                    if !whole(&m) {
                        torn += 1;
                    }
                    if u64::from_le_bytes(m[..8].try_into().unwrap()) != pos {
                        wrong += 1;
                    }
                }
                Some(Received::Lagged { skipped: n }) => skipped += n,
                None => panic!("nothing for 30 s at {pos}"),
            }
            if slow && pos % 8 == 0 {
                std::thread::sleep(Duration::from_micros(200));
            }
        }
        println!(
            "RESULT delivered={delivered} skipped={skipped} torn={torn} wrong={wrong} lossless={}",
            u8::from(s.is_lossless())
        );
    });
}

#[test]
fn a_slow_lossless_pool_subscriber_reads_every_block_intact_beside_a_lossy_one() {
    let bus = BusName::new("pool-lossless");
    // Blocks: the ring's 16 descriptors, the loan, and a few spare.
    let opts = pool::Options::new(16, 256, 20).evict_after(Duration::from_secs(20));
    let mut p = pool::Publisher::<[u8]>::create(bus.name(), &opts).expect("create");
    let count = common::scale_min(4_000, 1_000);
    let reader = |lossless: bool, slow: bool| {
        let mut c = spawn_child(
            "as_child_pool_checking_reader",
            "pool-checking-reader",
            &[
                ("BUS", bus.name().to_owned()),
                ("COUNT", count.to_string()),
                ("LOSSLESS", u8::from(lossless).to_string()),
                ("SLOW", u8::from(slow).to_string()),
            ],
        );
        c.wait_ready();
        c
    };
    let lossless = reader(true, true);
    let lossy = reader(false, true);
    for i in 0..count {
        // Every byte of the block says which message it is: a block
        // reclaimed under a reader shows as torn or wrong.
        publish(&mut p, i, 256);
    }
    let result = |out: &str, key: &str| -> u64 {
        let line = out
            .lines()
            .find(|l| l.starts_with("RESULT"))
            .unwrap_or_else(|| panic!("no result in {out}"));
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(&format!("{key}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in {line}"))
    };
    let out = lossless.wait_success().output();
    assert_eq!(result(&out, "delivered"), count, "{out}");
    assert_eq!(result(&out, "skipped"), 0, "{out}");
    assert_eq!(result(&out, "torn"), 0, "{out}");
    assert_eq!(result(&out, "wrong"), 0, "{out}");
    assert_eq!(result(&out, "lossless"), 1, "never evicted: {out}");
    let out = lossy.wait_success().output();
    assert_eq!(
        result(&out, "delivered") + result(&out, "skipped"),
        count,
        "{out}"
    );
    assert_eq!(result(&out, "torn"), 0, "{out}");
    drop(p);
    bus.finish();
}
