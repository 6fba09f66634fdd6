//! `shmbus create --kind blackboard`, `put`, `get`, and how `stat` and
//! `ls` show a blackboard; bad input is one line and exit 2.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::{BusName, CliOutput, run_shmbus as shmbus};
use shmbus_testkit::{blackboard_home, scale_min};

fn create(name: &str) {
    shmbus(&[
        "create",
        name,
        "--kind",
        "blackboard",
        "--keys",
        "100",
        "--key-size",
        "8",
        "--value-size",
        "16",
        "--type",
        "md.Quote:8",
    ])
    .assert_success();
}

#[test]
fn put_then_get_prints_the_latest_value_and_a_removed_key_is_gone() {
    let bb = BusName::new("C-cli-bb");
    create(bb.name());
    shmbus(&["put", bb.name(), "AAPL", "101.5 101.75"]).assert_success();
    shmbus(&["put", bb.name(), "AAPL", "101.5 101.80"]).assert_success();
    shmbus(&["put", bb.name(), "MSFT", "400"]).assert_success();
    let out = shmbus(&["get", bb.name(), "AAPL", "--with-version"]);
    out.assert_success();
    assert_eq!(out.stdout(), "2\t101.5 101.80\n");
    // Hex in, hex out: the key's bytes zero-padded to 8.
    let out = shmbus(&["get", bb.name(), "--hex", "4d53465400000000"]);
    out.assert_success();
    assert_eq!(out.stdout(), "34303000000000000000000000000000\n");
    shmbus(&["put", bb.name(), "MSFT"]).assert_success();
    shmbus(&["get", bb.name(), "MSFT"]).assert_error(1, "no key \"MSFT\"");
    // The library reads what the tool wrote.
    let mut reader = shmbus::blackboard::Reader::<[u8], [u8]>::open(bb.name(), &Default::default())
        .expect("open");
    let got = reader.get(b"AAPL\0\0\0\0").expect("get").expect("present");
    assert_eq!(&got.value[..12], b"101.5 101.80");
    bb.finish();
}

#[test]
fn get_of_a_key_never_written_beside_one_written_flat_out_is_not_found_never_busy() {
    let bb = BusName::new("C-cli-bbhot");
    create(bb.name());
    // 100 keys: 256 entries. `never` starts its probe at `hot`'s entry.
    let padded = |key: &str| {
        let mut bytes = key.as_bytes().to_vec();
        bytes.resize(8, 0);
        bytes
    };
    let hot = padded("hot");
    let never = (0..)
        .map(|n| format!("k{n}"))
        .find(|k| blackboard_home(&padded(k), 256) == blackboard_home(&hot, 256))
        .expect("a key sharing the home");
    let mut writer =
        shmbus::blackboard::Writer::<[u8], [u8]>::attach(bb.name(), &Default::default())
            .expect("attach");
    writer.put_bytes(&hot, &[0; 16]).expect("put");
    let stop = Arc::new(AtomicBool::new(false));
    let flat_out = std::thread::spawn({
        let stop = stop.clone();
        move || {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                writer.put_bytes(&hot, &[n as u8; 16]).expect("put");
            }
            n
        }
    });
    let gets = scale_min(200, 50);
    let outcomes: Vec<_> = (0..gets)
        .map(|_| shmbus(&["get", bb.name(), &never]))
        .collect();
    stop.store(true, Ordering::Relaxed);
    let puts = flat_out.join().expect("writer");
    let busy = outcomes
        .iter()
        .filter(|o| o.stderr.contains("busy"))
        .count();
    assert_eq!(
        busy, 0,
        "{busy} of {gets} gets busy ({puts} puts meanwhile)"
    );
    for out in &outcomes {
        out.assert_error(1, &format!("no key {never:?}"));
    }
    bb.finish();
}

#[test]
fn top_json_gives_a_blackboard_its_max_keys_and_no_epoch_or_lossless_limits() {
    let bb = BusName::new("C-cli-bbtop");
    create(bb.name());
    let top = shmbus(&["top", bb.name(), "--once", "--json", "--interval-ms", "10"]).json();
    let row = &top["buses"][0];
    assert_eq!(row["kind"], "blackboard", "{row}");
    assert_eq!(row["max_keys"], 100, "{row}");
    assert!(row.get("capacity").is_none(), "{row}");
    assert!(row["epoch"].is_null(), "{row}");
    assert!(row["lossless"].is_null(), "{row}");
    let json = shmbus(&["stat", bb.name(), "--json"]).json();
    assert!(
        json.get("epoch").is_none() && json.get("lossless").is_none(),
        "{json}"
    );
}

#[test]
fn stat_and_ls_show_keys_used_capacity_and_updates() {
    let bb = BusName::new("C-cli-bbstat");
    create(bb.name());
    shmbus(&["put", bb.name(), "a", "1"]).assert_success();
    shmbus(&["put", bb.name(), "a", "2"]).assert_success();
    shmbus(&["put", bb.name(), "b", "3"]).assert_success();
    let json = shmbus(&["stat", bb.name(), "--json"]).json();
    assert_eq!(json["kind"], "blackboard");
    assert_eq!(json["keys"], 2);
    assert_eq!(json["max_keys"], 100);
    assert_eq!(json["entries"], 256);
    assert_eq!(json["updates"], 3);
    assert_eq!(json["mid_write"], 0);
    assert_eq!(json["value_type"], "md.Quote");
    assert_eq!(json["key_type"], "bytes");
    let text = shmbus(&["stat", bb.name()]);
    text.assert_success();
    assert!(
        text.stdout()
            .contains("keys:           2 of 100 (256 entries)"),
        "{}",
        text.stdout()
    );
    let ls = shmbus(&["ls"]);
    ls.assert_success();
    let row = ls
        .stdout()
        .lines()
        .find(|l| l.starts_with(bb.name()))
        .map(str::to_owned)
        .expect("ls lists it");
    for cell in ["blackboard", "100 keys", "16 B value", "2 keys used"] {
        assert!(row.contains(cell), "{row}");
    }
    bb.finish();
}

#[test]
fn bad_blackboard_input_is_one_line_and_exit_2() {
    let bb = BusName::new("C-cli-bbbad");
    shmbus(&["create", bb.name(), "--kind", "blackboard", "--keys", "4"]).assert_error(
        2,
        "needs --keys <N>, --key-size <BYTES> and --value-size <BYTES>",
    );
    shmbus(&[
        "create",
        bb.name(),
        "--kind",
        "blackboard",
        "--keys",
        "4",
        "--key-size",
        "8",
        "--value-size",
        "8",
        "--journal",
        "/tmp/x",
    ])
    .assert_error(2, "--journal does not apply to a blackboard");
    shmbus(&[
        "create",
        bb.name(),
        "--slots",
        "8",
        "--msg-size",
        "8",
        "--keys",
        "4",
    ])
    .assert_error(2, "cannot be used with");
    create(bb.name());
    shmbus(&["put", bb.name(), "a", "12345678901234567"])
        .assert_error(2, "is 17 bytes, the table's values are 16");
    shmbus(&["put", bb.name(), "--hex", "zz", "00"]).assert_error(2, "2 hex digits");
    shmbus(&["get", bb.name(), "--hex", "zzzzzzzzzzzzzzzz"]).assert_error(2, "is not hex digits");
    shmbus(&["get", bb.name(), "a-key-too-long"]).assert_error(2, "the table's keys are 8");
    bb.finish();
}

#[test]
fn put_writes_beside_a_running_writer_on_a_table_made_for_many_writers() {
    let bb = BusName::new("K-cli-bbmany");
    shmbus(&[
        "create",
        bb.name(),
        "--kind",
        "blackboard",
        "--keys",
        "16",
        "--key-size",
        "8",
        "--value-size",
        "8",
        "--many-writers",
        "--unblock-ms",
        "200",
    ])
    .assert_success();
    // A running writer (the library's), and `put` beside it.
    let mut running =
        shmbus::blackboard::ManyWriter::<[u8], [u8]>::attach(bb.name(), &Default::default())
            .expect("attach");
    assert_eq!(
        running.unblock_timeout(),
        std::time::Duration::from_millis(200)
    );
    running
        .put_bytes(b"lib\0\0\0\0\0", b"1\0\0\0\0\0\0\0")
        .expect("put");
    shmbus(&["put", bb.name(), "cli", "2"]).assert_success();
    shmbus(&["put", bb.name(), "lib2", "3"]).assert_success();
    shmbus(&["put", bb.name(), "lib2"]).assert_success();
    let out = shmbus(&["get", bb.name(), "lib"]);
    out.assert_success();
    assert_eq!(out.stdout(), "1\n");
    let out = shmbus(&["get", bb.name(), "cli", "--with-version"]);
    out.assert_success();
    assert_eq!(out.stdout(), "2\t2\n");
    assert_eq!(running.keys(), 2);
    let json = shmbus(&["stat", bb.name(), "--json"]).json();
    assert_eq!(
        (
            &json["many_writers"],
            &json["unblock_ns"],
            &json["writer_alive"]
        ),
        (&true.into(), &200_000_000u64.into(), &true.into())
    );
    let text = shmbus(&["stat", bb.name()]);
    assert!(
        text.stdout()
            .contains("writers:        many (unblock 200 ms)"),
        "{}",
        text.stdout()
    );
    drop(running);
    // Flags that do not fit: one line, exit 2.
    shmbus(&[
        "create",
        "K-cli-bbmany-x",
        "--slots",
        "64",
        "--many-writers",
    ])
    .assert_error(2, "--many-writers applies to --kind blackboard");
    shmbus(&[
        "create",
        "K-cli-bbmany-y",
        "--kind",
        "blackboard",
        "--keys",
        "4",
        "--key-size",
        "8",
        "--value-size",
        "8",
        "--unblock-ms",
        "5",
    ])
    .assert_error(
        2,
        "--unblock-ms applies to a blackboard with --many-writers",
    );
    bb.finish();
}
