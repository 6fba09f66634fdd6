//! The `shmbus` binary on pool buses (`create --pool`): `pub` loans a
//! block per line, `sub` reads each in place, `stat` and `ls` show the
//! pool, and a handle of the other kind is refused.
//!
//! The ground rules are `cli.rs`'s: every child runs under the testkit's
//! watchdog, every bus lives in a private directory under /dev/shm
//! ([`ShmDir`]) or has a unique name ([`BusName`]) removed on drop, a test
//! that publishes after a subscriber joined waits until it sleeps, and
//! every run checks that stderr never says "panicked".

mod common;

use std::io::Write;

use common::{BusName, CliOutput, ShmDir, numbered_lines, publish, run_stdin, wait_until_waiting};
use shmbus::{
    AttachError, OpenError, OpenOptions, Publisher, Received, Start, Subscriber, Wait, pool,
};

use common::{run_shmbus as shmbus, start, start_with_stdin};

/// `shmbus create BUS --capacity CAPACITY --pool POOL [MORE...]`.
fn create_pool(bus: &str, capacity: u64, pool: &str, more: &[&str]) {
    let capacity = capacity.to_string();
    let args = ["create", bus, "--capacity", &capacity, "--pool", pool];
    shmbus(&[&args[..], more].concat()).assert_success();
}

/// A pool subscriber of this test process, from the oldest message.
fn open_oldest(bus: &str) -> pool::Subscriber<[u8]> {
    pool::Subscriber::<[u8]>::open(bus, &OpenOptions::default().start(Start::Oldest))
        .expect("a pool subscriber")
}

// ---------------------------------------------------------------------------
// Publishing and subscribing.

#[test]
fn a_pool_bus_gives_sub_from_oldest_every_line_pub_sent() {
    let dir = ShmDir::new("pool-roundtrip");
    let bus = dir.bus("bus");
    create_pool(&bus, 4, "256:8", &[]);
    publish(&bus, "one\ntwo\nthree\n");
    let out = shmbus(&["sub", &bus, "--from", "oldest", "--timeout", "0.3"]);
    out.assert_success();
    assert_eq!(out.stdout(), "one\ntwo\nthree\n");
    assert_eq!(out.stderr, "");
}

#[test]
fn a_pool_message_keeps_its_exact_length_trailing_zeros_and_empty_lines_included() {
    let dir = ShmDir::new("pool-bytes");
    let bus = dir.bus("bus");
    create_pool(&bus, 8, "64:16", &[]);
    let input = b"plain\n\nzero at the end\0\n\xff\xfe raw\n";
    run_stdin(&["pub", &bus], input).assert_success();
    let out = shmbus(&["sub", &bus, "--from", "oldest", "--count", "4"]);
    assert_eq!(out.assert_success().stdout, input.to_vec());
}

#[test]
fn a_line_longer_than_the_block_size_fails_naming_its_number_and_earlier_lines_stay() {
    let dir = ShmDir::new("pool-long");
    let bus = dir.bus("bus");
    create_pool(&bus, 4, "64:8", &[]);
    let input = format!("first\n{}\n{}\nnever\n", "x".repeat(64), "y".repeat(65));
    let out = run_stdin(&["pub", &bus], input.as_bytes());
    out.assert_error(2, "line 3 is longer than 64 bytes, the pool's block size");
    assert!(
        out.stderr.contains("2 earlier lines stay published"),
        "{out:?}"
    );
    let sub = shmbus(&["sub", &bus, "--from", "oldest", "--timeout", "0.3"]);
    assert_eq!(
        sub.assert_success().stdout(),
        format!("first\n{}\n", "x".repeat(64))
    );
}

#[test]
fn a_pool_sub_that_waits_prints_each_line_as_it_is_published() {
    let dir = ShmDir::new("pool-live");
    let bus = dir.bus("bus");
    create_pool(&bus, 8, "64:16", &[]);
    publish(&bus, "old\n");
    let sub = start(&["sub", &bus, "--count", "2", "--timeout", "10"]);
    wait_until_waiting(&bus, &sub);
    publish(&bus, "new1\nnew2\n");
    let out = sub.wait();
    out.assert_success();
    assert_eq!(out.stdout(), "new1\nnew2\n");
}

#[test]
fn lag_on_a_pool_bus_is_reported_on_stderr_as_lagged_skipped_n() {
    let dir = ShmDir::new("pool-lag");
    let bus = dir.bus("bus");
    // 4 slots and 8 blocks: the last four messages' blocks are on the ring.
    create_pool(&bus, 4, "64:8", &[]);
    // As `cli.rs`'s plain-bus test: stopped at sequence 0 while ten go by,
    // the subscriber wakes lapped, re-syncs half a ring behind the newest,
    // reports 8 skipped, and prints 9 and 10 from their blocks.
    let out = common::lapped_while_stopped(&bus);
    out.assert_success();
    assert_eq!(out.stderr, "lagged: skipped 8\n");
    assert_eq!(out.stdout(), "9\n10\n");
}

#[test]
fn several_pub_processes_publish_to_one_pool_bus_created_with_publishers_many() {
    let dir = ShmDir::new("pool-many");
    let bus = dir.bus("bus");
    create_pool(&bus, 16, "64:32", &["--publishers", "many"]);
    let stat = shmbus::stat::stat(&bus).expect("stat");
    assert_eq!(stat.kind, shmbus::SegmentKind::ManyPublisherPool);
    let mut a = start_with_stdin(&["pub", &bus]);
    let mut b = start_with_stdin(&["pub", &bus]);
    for (p, lines) in [(&mut a, &b"a1\na2\na3\n"[..]), (&mut b, &b"b1\nb2\n"[..])] {
        p.stdin().write_all(lines).expect("write to pub");
    }
    a.close_stdin();
    b.close_stdin();
    a.wait().assert_success();
    b.wait().assert_success();
    let out = shmbus(&["sub", &bus, "--from", "oldest", "--count", "5"]);
    let text = out.assert_success().stdout();
    let of = |p: char| -> Vec<&str> { text.lines().filter(|l| l.starts_with(p)).collect() };
    assert_eq!(of('a'), ["a1", "a2", "a3"]);
    assert_eq!(of('b'), ["b1", "b2"]);
}

#[test]
fn pub_fails_after_its_timeout_when_subscribers_hold_every_free_block() {
    let dir = ShmDir::new("pool-exhausted");
    let bus = dir.bus("bus");
    // 4 slots, 5 blocks: one block to spare beyond the ring's four.
    create_pool(&bus, 4, "64:5", &[]);
    publish(&bus, "1\n2\n3\n4\n");
    let mut subscriber = open_oldest(&bus);
    let mut held = Vec::new();
    for _ in 0..4 {
        match subscriber.recv(Wait::Never).expect("under MAX_HELD") {
            Some(Received::Message(sample)) => held.push(sample),
            other => panic!("expected a message, got {other:?}"),
        }
    }
    // Line 5 takes the spare block; line 6 would need the block of message
    // 1, which the ring has let go of but this subscriber holds.
    let out = run_stdin(&["pub", &bus, "--timeout", "0.3"], b"5\n6\n7\n");
    out.assert_error(1, "no block came free for 0.3 s: line 2 not published");
    assert!(
        out.stderr.contains("(1 earlier line is published)"),
        "{out:?}"
    );
    assert!(out.stderr.contains("1 held by subscribers"), "{out:?}");
    // Let go, and the block is the next line's.
    drop(held);
    publish(&bus, "6\n");
    let out = shmbus(&["sub", &bus, "--from", "oldest", "--timeout", "0.3"]);
    assert_eq!(out.assert_success().stdout(), "3\n4\n5\n6\n");
}

// ---------------------------------------------------------------------------
// stat and ls.

#[test]
fn stat_on_a_pool_bus_shows_its_block_size_blocks_census_and_each_subscribers_holds() {
    let dir = ShmDir::new("pool-stat");
    let bus = dir.bus("bus");
    create_pool(&bus, 4, "256:8", &[]);
    // Six messages through four slots: four blocks on the ring; of the
    // other four, those of messages 1 and 2 are reclaimable unless a loan
    // already took one back (the publisher's choice), the rest free.
    publish(&bus, &numbered_lines(1..=6));
    let json = shmbus(&["stat", &bus, "--json"]).assert_success().json();
    let pool = &json["pool"];
    assert_eq!(
        (&pool["block_size"], &pool["blocks"]),
        (&256.into(), &8.into()),
        "{json}"
    );
    let census = |key: &str| pool["census"][key].as_u64().expect("a count");
    let (free, reclaimable) = (census("free"), census("reclaimable"));
    assert_eq!(free + reclaimable, 4, "{json}");
    assert!(reclaimable <= 2, "{json}");
    for (key, n) in [("loaned", 0), ("on_ring", 4), ("held", 0), ("corrupt", 0)] {
        assert_eq!(census(key), n, "{key}: {json}");
    }
    let text = shmbus(&["stat", &bus]).assert_success().stdout();
    for expected in [
        "block size:     256 bytes\n".to_string(),
        "blocks:         8\n".to_string(),
        format!(
            "pool census:    free {free}, loaned 0, on ring 4, held 0, \
             reclaimable {reclaimable}, corrupt 0\n"
        ),
        "message size:   up to 256 bytes, a block".to_string(),
    ] {
        assert!(text.contains(&expected), "{expected:?} in {text}");
    }

    // This process holds the oldest message still on the ring; one more
    // line pushes it off the ring, so it counts as held.
    let mut subscriber = open_oldest(&bus);
    let Ok(Some(Received::Message(sample))) = subscriber.recv(Wait::Never) else {
        panic!("expected the oldest message")
    };
    assert_eq!(&*sample, b"3");
    publish(&bus, "7\n");
    let json = shmbus(&["stat", &bus, "--json"]).assert_success().json();
    let census = &json["pool"]["census"];
    assert_eq!(
        (&census["held"], &census["on_ring"], &census["loaned"]),
        (&1.into(), &4.into(), &0.into()),
        "{json}"
    );
    let me = std::process::id();
    assert_eq!(json["per_subscriber"][0]["pid"], me, "{json}");
    assert_eq!(json["per_subscriber"][0]["held_blocks"], 1, "{json}");
    assert_eq!(json["pool"]["holders"][0]["pid"], me, "{json}");
    assert_eq!(json["pool"]["holders"][0]["alive"], true, "{json}");
    let text = shmbus(&["stat", &bus]).assert_success().stdout();
    assert!(
        text.contains(&format!(
            "pid {me}: position 3, lag 4, delivered 1, skipped 0, holds 1 block\n"
        )),
        "{text}"
    );
    drop(sample);
    let json = shmbus(&["stat", &bus, "--json"]).assert_success().json();
    assert_eq!(json["pool"]["census"]["held"], 0, "{json}");
    assert_eq!(json["per_subscriber"][0]["held_blocks"], 0, "{json}");
}

#[test]
fn stat_shows_a_typed_pools_block_type_and_a_raw_pools_bytes() {
    let dir = ShmDir::new("pool-type");
    let typed = dir.bus("typed");
    let opts = shmbus::pool::Options::new(4, 64, 8);
    let publisher = shmbus::pool::Publisher::<[u64; 4]>::create(&typed, &opts).expect("create");
    let text = shmbus(&["stat", &typed]).assert_success().stdout();
    let row = "type:           u64[4] (size 32, align 8), one per block; \
               the slots carry shmbus::pool::Descriptor (size 16, align 8)\n";
    assert!(text.contains(row), "{row:?} in {text}");
    let json = shmbus(&["stat", &typed, "--json"]).assert_success().json();
    let pool = &json["pool"];
    assert_eq!(
        (&pool["type_name"], &pool["msg_size"], &pool["msg_align"]),
        (&"u64[4]".into(), &32.into(), &8.into()),
        "{json}"
    );
    let hash = shmbus::TypeFingerprint::of::<[u64; 4]>().name_hash;
    assert_eq!(pool["type_hash"], format!("{hash:#018x}"), "{json}");
    // The ring's own type stays the descriptor's.
    assert_eq!(json["type_name"], "shmbus::pool::Descriptor", "{json}");
    drop(publisher);

    // The tool records a type it is given, with its size.
    let named = dir.bus("named");
    create_pool(&named, 4, "64:8", &["--type", "u64:8", "--msg-size", "8"]);
    let json = shmbus(&["stat", &named, "--json"]).assert_success().json();
    assert_eq!(
        (
            &json["pool"]["type_name"],
            &json["pool"]["msg_size"],
            &json["pool"]["msg_align"]
        ),
        (&"u64".into(), &8.into(), &8.into()),
        "{json}"
    );
    let opts = shmbus::OpenOptions::default();
    drop(shmbus::pool::Subscriber::<u64>::open(&named, &opts).expect("opens as u64"));

    let raw = dir.bus("raw");
    create_pool(&raw, 4, "256:8", &[]);
    let json = shmbus(&["stat", &raw, "--json"]).assert_success().json();
    assert_eq!(
        (&json["pool"]["type_name"], &json["pool"]["msg_size"]),
        (&"bytes".into(), &256.into()),
        "{json}"
    );
    let text = shmbus(&["stat", &raw]).assert_success().stdout();
    assert!(
        text.contains("type:           bytes (size 256, align 1), one per block"),
        "{text}"
    );
}

#[test]
fn ls_marks_a_pool_bus_and_shows_its_block_size_and_a_plain_bus_has_no_pool() {
    let dir = ShmDir::new("pool-ls");
    create_pool(&dir.bus("pooled"), 4, "1024:8", &[]);
    let plain = dir.bus("plain");
    let args = ["create", &plain, "--msg-size", "16", "--capacity", "4"];
    shmbus(&args).assert_success();
    let table = shmbus(&["ls", "--dir", dir.dir()])
        .assert_success()
        .stdout();
    let row = |name: &str| -> Vec<String> {
        let line = table.lines().find(|l| l.starts_with(name));
        let line = line.unwrap_or_else(|| panic!("no row {name}: {table}"));
        line.split_whitespace().map(str::to_owned).collect()
    };
    assert_eq!(
        row("pooled")[..6],
        ["pooled", "pool", "4", "1024", "B", "max"]
    );
    assert_eq!(row("plain")[..4], ["plain", "broadcast", "4", "16"]);
    let json = shmbus(&["stat", &plain, "--json"]).assert_success().json();
    assert!(json["pool"].is_null(), "{json}");
    assert!(json.to_string().find("held_blocks").is_none(), "{json}");
}

#[test]
fn a_pool_bus_is_called_pool_by_stat_its_json_ls_and_top_alike() {
    let dir = ShmDir::new("pool-kind");
    let (one, many) = (dir.bus("one"), dir.bus("many"));
    create_pool(&one, 4, "1024:8", &[]);
    create_pool(&many, 4, "1024:8", &["--publishers", "many"]);
    for (bus, kind) in [(&one, "pool"), (&many, "pool, many-publisher")] {
        let json = shmbus(&["stat", bus, "--json"]).assert_success().json();
        assert_eq!(json["kind"], kind, "{json}");
        let text = shmbus(&["stat", bus]).assert_success().stdout();
        let line = format!("kind:           {kind}\n");
        assert!(text.contains(&line), "{text}");
        let top = shmbus(&["top", bus, "--once", "--json", "--interval-ms", "10"])
            .assert_success()
            .json();
        assert_eq!(top["buses"][0]["kind"], kind, "{top}");
    }
    let table = shmbus(&["ls", "--dir", dir.dir()])
        .assert_success()
        .stdout();
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("many ") && l.contains("pool, many-publisher")),
        "{table}"
    );
}

// ---------------------------------------------------------------------------
// Errors: one line, the right exit code, nothing left behind.

#[test]
fn a_bad_pool_value_fails_in_one_line_and_leaves_nothing_in_dev_shm() {
    let bus = BusName::new("pool-bad");
    let cases: [(&[&str], i32, &str); 12] = [
        (&["--pool", "4096"], 2, "expected BLOCK_SIZE:BLOCKS"),
        (&["--pool", "4K:64"], 2, "expected BLOCK_SIZE:BLOCKS"),
        (&["--pool", "4096:-1"], 2, "expected BLOCK_SIZE:BLOCKS"),
        (&["--pool", ""], 2, "expected BLOCK_SIZE:BLOCKS"),
        (
            &["--pool", "100:64"],
            2,
            "pool block size 100 is not a multiple of 64",
        ),
        (
            &["--pool", "4096:4"],
            2,
            "pool of 4 blocks for 4 slots: it needs at least capacity + 1",
        ),
        (&["--pool", "4096:0"], 2, "pool of 0 blocks is outside"),
        (
            &["--pool", "64:8", "--msg-size", "8"],
            2,
            "--msg-size on a pool bus is the size of the blocks' message type",
        ),
        (
            &["--pool", "64:8", "--type", "md.Tick:8"],
            2,
            "give its size with --msg-size",
        ),
        (
            &["--pool", "64:8", "--type", "md.Tick:8", "--msg-size", "72"],
            2,
            "72",
        ),
        (
            &["--pool", "64:8", "--type", "md.Tick:128", "--msg-size", "8"],
            2,
            "128",
        ),
        (
            &["--pool", "64:8", "--kind", "stream"],
            2,
            "a stream has no block pool",
        ),
    ];
    for (more, code, needle) in cases {
        let args = ["create", bus.name(), "--capacity", "4"];
        let out = shmbus(&[&args[..], more].concat());
        out.assert_error(code, needle);
        assert!(
            !bus.path().exists(),
            "{more:?} left {}",
            bus.path().display()
        );
    }
    bus.finish();
}

#[test]
fn a_plain_subscriber_or_publisher_on_a_pool_bus_gets_pool_mismatch() {
    let dir = ShmDir::new("pool-mismatch");
    let pooled = dir.bus("pooled");
    create_pool(&pooled, 4, "64:8", &[]);
    let opts = OpenOptions::default();
    match Subscriber::<[u8]>::open(&pooled, &opts) {
        Err(OpenError::PoolMismatch { found: true }) => {}
        Err(other) => panic!("expected PoolMismatch {{ found: true }}, got {other:?}"),
        Ok(_) => panic!("a plain subscriber opened a pool bus"),
    }
    match Publisher::<[u8]>::attach(&pooled, &opts) {
        Err(AttachError::Open(OpenError::PoolMismatch { found: true })) => {}
        Err(other) => panic!("expected PoolMismatch {{ found: true }}, got {other:?}"),
        Ok(_) => panic!("a plain publisher attached to a pool bus"),
    }
    let err = OpenError::PoolMismatch { found: true }.to_string();
    assert!(err.contains("pool::Subscriber"), "{err}");
    // The CLI takes the mismatch as "a pool bus" and carries on with the
    // pool handles; what does not apply to one is still refused.
    let out = shmbus(&["sub", &pooled, "--bootstrap", "--timeout", "0.1"]);
    out.assert_error(2, "has no journal");
    let out = run_stdin(&["pub", &pooled, "--compact-after", "2"], b"x\n");
    out.assert_error(2, "--compact-after applies to a journaled bus");
    assert_eq!(shmbus::stat::stat(&pooled).expect("stat").published, 0);
}

/// A pool handle on a plain bus is told the bus has no pool (the pool flag
/// is checked before the message type).
#[test]
fn a_pool_subscriber_or_publisher_on_a_plain_bus_gets_pool_mismatch() {
    let dir = ShmDir::new("pool-mismatch-plain");
    let plain = dir.bus("plain");
    let args = ["create", &plain, "--msg-size", "16", "--capacity", "4"];
    shmbus(&args).assert_success();
    let opts = OpenOptions::default();
    match pool::Subscriber::<[u8]>::open(&plain, &opts) {
        Err(OpenError::PoolMismatch { found: false }) => {}
        Err(other) => panic!("expected PoolMismatch {{ found: false }}, got {other:?}"),
        Ok(_) => panic!("a pool subscriber opened a plain bus"),
    }
    match shmbus::pool::Publisher::<[u8]>::attach(&plain, &opts) {
        Err(AttachError::Open(OpenError::PoolMismatch { found: false })) => {}
        Err(other) => panic!("expected PoolMismatch {{ found: false }}, got {other:?}"),
        Ok(_) => panic!("a pool publisher attached to a plain bus"),
    }
}
