//! The `shmbus-bench` binary from the outside: its arguments, its one-line
//! errors and exit codes, and a tiny run that goes through the hidden
//! `child` subcommand and writes the JSON and the plot.
//!
//! Kept small: a real run takes minutes (CI runs `--quick` in release).
//! Every run is under the testkit's watchdog ([`RUN_LIMIT`]).

use std::path::PathBuf;
use std::time::Duration;

/// How long one run may take before it is killed and the test fails: the
/// longest (the lossless rows) takes about 30 s in a debug build.
const RUN_LIMIT: Duration = Duration::from_secs(300);

/// What a run of the binary left.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn bench(args: &[&str]) -> Run {
    bench_with(&[], args)
}

/// As [`bench`], with `env` set for the run (and its children).
fn bench_with(env: &[(&str, &str)], args: &[&str]) -> Run {
    let mut cmd = shmbus_testkit::command(env!("CARGO_BIN_EXE_shmbus-bench"), args);
    cmd.envs(env.iter().copied());
    let out = shmbus_testkit::Watched::spawn(
        "shmbus-bench",
        cmd,
        shmbus_testkit::scale_deadline(RUN_LIMIT),
    )
    .wait();
    Run {
        code: out.code(),
        stdout: out.stdout(),
        stderr: out.stderr,
    }
}

impl Run {
    /// Asserts the run failed with `code` and one stderr line naming `needle`.
    fn assert_error(&self, code: i32, needle: &str) {
        assert_eq!(self.code, Some(code), "{}", self.stderr);
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "one line: {:?}", self.stderr);
        assert!(lines[0].starts_with("shmbus-bench: "), "{}", lines[0]);
        assert!(lines[0].contains(needle), "{needle:?} in {}", lines[0]);
    }
}

/// A file in the temporary directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str) -> TempFile {
        TempFile(std::env::temp_dir().join(format!("shmbus-bench-{}-{name}", std::process::id())))
    }

    fn arg(&self) -> &str {
        self.0.to_str().expect("UTF-8 temporary directory")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn list_names_the_kernel_mechanisms_and_the_peers() {
    let run = bench(&["--list"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    for name in [
        "floor",
        "shmbus",
        "shmbus-stream",
        "pipe",
        "mq",
        "iceoryx2",
        "ipmpsc",
        "photon-ring",
        "crossbar-podbus",
        "ringfire",
    ] {
        assert!(
            run.stdout
                .lines()
                .any(|l| l.split_whitespace().next() == Some(name)),
            "{name} in {}",
            run.stdout
        );
    }
}

#[test]
fn help_shows_the_flags_but_not_the_child_subcommand() {
    let run = bench(&["--help"]);
    assert_eq!(run.code, Some(0));
    for flag in [
        "--quick",
        "--json",
        "--plot",
        "--cpus",
        "--mechanisms",
        "--fanout",
        "--mpmc",
    ] {
        assert!(run.stdout.contains(flag), "{flag}");
    }
    assert!(!run.stdout.contains("child"), "hidden: {}", run.stdout);
}

#[test]
fn the_help_and_the_list_say_what_a_row_does_never_which_issue_brought_it() {
    for args in [&["--help"][..], &["--list"]] {
        let run = bench(args);
        assert_eq!(run.code, Some(0), "{args:?}: {}", run.stderr);
        let words: Vec<&str> = run.stdout.split_whitespace().collect();
        for pair in words.windows(2) {
            let number = pair[1].trim_start_matches('#');
            let is_number = number.starts_with(|c: char| c.is_ascii_digit());
            assert!(
                !(pair[0].to_ascii_lowercase().trim_start_matches('(') == "issue" && is_number),
                "{args:?} names a tracker number: {:?} in\n{}",
                pair.join(" "),
                run.stdout
            );
        }
    }
}

#[test]
fn bad_arguments_are_one_line_with_exit_code_2() {
    bench(&["--msg-size", "8"]).assert_error(
        2,
        "message size 8 (--msg-size, --sizes) is too small: expected at least 16",
    );
    let unknown = bench(&["--mechanisms", "pipe,carrier-pigeon"]);
    unknown.assert_error(2, "unknown mechanism \"carrier-pigeon\"");
    assert!(
        unknown.stderr.contains("photon-ring"),
        "lists the known ones"
    );
}

#[test]
fn a_fanout_of_no_receivers_is_refused_in_one_line_with_exit_code_2() {
    bench(&["--fanout", "0"]).assert_error(2, "--fanout 0: expected receiver counts of at least 1");
    bench(&["--fanout", "2,0,4"]).assert_error(2, "--fanout 2,0,4");
}

#[test]
fn a_child_with_an_unknown_clock_fails_in_one_line() {
    let args = [
        "child",
        "--mechanism",
        "pipe",
        "--pattern",
        "pingpong",
        "--msg-size",
        "64",
        "--receivers",
        "1",
        "--index",
        "0",
        "--token",
        "none",
        "--prefix",
        "none",
        "--warmup",
        "1",
        "--count",
        "1",
        "--pace",
        "0",
        "--clock",
        "sundial",
    ];
    bench(&args).assert_error(1, "unknown clock \"sundial\"");
}

#[test]
fn a_tiny_run_goes_through_child_processes_and_writes_json_and_plot() {
    let (json, svg) = (TempFile::new("tiny.json"), TempFile::new("tiny.svg"));
    let run = bench(&[
        "--mechanisms",
        "floor,pipe",
        "--patterns",
        "pingpong",
        "--msg-size",
        "16",
        "--rounds",
        "1",
        "--count",
        "200",
        "--json",
        json.arg(),
        "--plot",
        svg.arg(),
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(
        run.stdout
            .contains("pingpong: round-trip time, 16 B messages"),
        "{}",
        run.stdout
    );

    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json.0).expect("JSON written"))
            .expect("valid JSON");
    assert_eq!(doc["schema"], "shmbus-bench/1");
    let results = doc["results"].as_array().expect("results");
    for name in ["floor", "pipe"] {
        let r = results
            .iter()
            .find(|r| r["mechanism"] == name)
            .unwrap_or_else(|| panic!("{name} in {results:?}"));
        assert!(r["skipped"].is_null(), "{name} ran: {r}");
        assert_eq!(r["sent"], 200);
        assert!(
            r["latency_ns"]["p50"].as_f64().is_some_and(|v| v > 0.0),
            "{r}"
        );
    }
    assert!(doc["mpmc"].is_null(), "no shmbus row, so no MPMC table");

    let plot = std::fs::read_to_string(&svg.0).expect("plot written");
    assert!(plot.starts_with("<svg"), "{}", &plot[..plot.len().min(80)]);
}

/// A run of one bus row alone (`shmbus-unregistered`: the `shmbus` row
/// would bring the many-publishers and blackboard tables), one round of
/// a few hundred messages, with `SHMBUS_BENCH_FAULT=fault` and the JSON
/// in `json`.
fn faulty_run(fault: &str, pattern: &str, json: &TempFile) -> Run {
    bench_with(
        &[("SHMBUS_BENCH_FAULT", fault)],
        &[
            "--mechanisms",
            "shmbus-unregistered",
            "--patterns",
            pattern,
            "--msg-size",
            "64",
            "--rounds",
            "1",
            "--count",
            "300",
            "--json",
            json.arg(),
        ],
    )
}

/// The JSON a run wrote.
fn written(json: &TempFile) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(&json.0).expect("JSON written"))
        .expect("valid JSON")
}

#[test]
fn torn_payloads_fail_the_run_naming_the_row_after_its_tables_and_json() {
    let json = TempFile::new("torn.json");
    let run = faulty_run("torn-payload", "pingpong", &json);
    // Each of the 300 pings, and each pong the sender checked; the 16 B
    // row's messages have no payload past the header to tear.
    run.assert_error(
        1,
        "1 row(s) failed, expected every row that runs to run with every payload intact: \
         shmbus-unregistered pingpong 64 B x1: 600 message(s) failed the payload check \
         (torn or corrupt)",
    );
    // The table still came out, saying so, and the JSON holds the count.
    assert!(
        run.stdout
            .contains("payload check FAILED (torn or corrupt messages): shmbus-unregistered ("),
        "{}",
        run.stdout
    );
    let doc = written(&json);
    let row = doc["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|r| r["mechanism"] == "shmbus-unregistered" && r["msg_size"] == 64)
        .cloned()
        .expect("the row");
    assert_eq!(row["checksum_errors"], 600, "{row}");
    let missed = doc["targets"]
        .as_array()
        .expect("targets")
        .iter()
        .find(|t| {
            t["target"] == "shmbus-unregistered pingpong 64 B x1 ran with every payload intact"
        })
        .cloned()
        .expect("the row's target");
    assert_eq!(missed["met"], false, "{missed}");
}

#[test]
fn a_receiver_that_fails_fails_the_run_naming_the_row_instead_of_a_skipped_row() {
    let json = TempFile::new("crashed.json");
    let run = faulty_run("receiver-fails", "throughput", &json);
    let line = run.stderr.lines().last().unwrap_or_default();
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    // Every size's row failed; each is named, with its receiver's words.
    assert!(
        line.starts_with("shmbus-bench: 7 row(s) failed, expected every row that runs")
            && line.contains(
                "; shmbus-unregistered throughput 64 B x1: shmbus-unregistered: receiver \
                 failed: shmbus-unregistered: receive: failed as \
                 SHMBUS_BENCH_FAULT=receiver-fails asked;"
            ),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout
            .contains("FAILED: shmbus-unregistered: receiver failed"),
        "{}",
        run.stdout
    );
    let doc = written(&json);
    let row = doc["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|r| r["mechanism"] == "shmbus-unregistered" && r["msg_size"] == 64)
        .cloned()
        .expect("the row");
    assert!(row["skipped"].is_null(), "failed, not skipped: {row}");
    assert!(
        row["failed"]
            .as_str()
            .is_some_and(|w| w.contains("receiver failed")),
        "{row}"
    );
    let targets = doc["targets"].as_array().expect("targets");
    assert!(
        targets.iter().any(|t| t["target"]
            == "shmbus-unregistered throughput 64 B x1 ran with every payload intact"
            && t["met"] == false),
        "{targets:?}"
    );
}

#[test]
fn a_fault_the_bench_does_not_inject_is_refused_in_one_line_with_exit_code_2() {
    bench_with(&[("SHMBUS_BENCH_FAULT", "gremlins")], &["--list"]).assert_error(
        2,
        "SHMBUS_BENCH_FAULT=\"gremlins\": expected torn-payload or receiver-fails, or unset",
    );
}

#[test]
fn ringfire_runs_every_pattern_across_processes_and_fanout_reports_its_worst_receiver() {
    let json = TempFile::new("ringfire.json");
    let cmd = shmbus_testkit::command(
        env!("CARGO_BIN_EXE_shmbus-bench"),
        &[
            "--quick",
            "--rounds",
            "1",
            "--count",
            "200",
            "--mechanisms",
            "ringfire",
            "--fanout",
            "1,2",
            "--json",
            json.arg(),
        ],
    );
    let child = shmbus_testkit::Watched::spawn(
        "shmbus-bench",
        cmd,
        shmbus_testkit::scale_deadline(RUN_LIMIT),
    );
    // The run's files under /dev/shm are named after its process id.
    let prefix = format!("shmbus-bench-{}-", child.pid());
    let out = child.wait();
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let stdout = out.stdout();
    assert!(
        stdout.contains("fanout by receivers: the worst receiver's one-way p50 / p99"),
        "{stdout}"
    );

    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json.0).expect("JSON written"))
            .expect("valid JSON");
    let results = doc["results"].as_array().expect("results");
    let ran = |pattern: &str| {
        results
            .iter()
            // The throughput tables' memcpy reference is a row too.
            .filter(|r| r["pattern"] == pattern && r["mechanism"] != "memcpy")
            .filter(|r| r["skipped"].is_null())
            .collect::<Vec<_>>()
    };
    for pattern in ["pingpong", "oneway", "throughput", "fanout"] {
        let rows = ran(pattern);
        assert!(!rows.is_empty(), "ringfire ran {pattern}: {results:?}");
        for r in rows {
            assert_eq!(r["mechanism"], "ringfire");
            // Every byte of every message was checked by the harness.
            assert_eq!(r["checksum_errors"], 0, "{r}");
            if pattern == "throughput" {
                assert!(r["msgs_per_sec"].as_f64().is_some_and(|v| v > 0.0), "{r}");
                assert!(r["lost"].as_u64().is_some(), "{r}");
            } else {
                assert!(
                    r["latency_ns"]["p50"].as_f64().is_some_and(|v| v > 0.0),
                    "{r}"
                );
            }
        }
    }
    let mut widths: Vec<u64> = ran("fanout")
        .iter()
        .map(|r| r["receivers"].as_u64().expect("receivers"))
        .collect();
    widths.sort_unstable();
    assert_eq!(widths, [1, 2], "--fanout 1,2");
    for r in ran("fanout") {
        let worst = &r["worst_receiver_ns"];
        let p50 = worst["p50"].as_f64().expect("worst receiver's p50");
        assert!(
            p50 > 0.0 && worst["p99"].as_f64().is_some_and(|p99| p99 >= p50),
            "{r}"
        );
        assert_eq!(worst["p50_rounds"].as_array().map(Vec::len), Some(1), "{r}");
    }
    assert!(
        ran("pingpong")
            .iter()
            .all(|r| r["worst_receiver_ns"].is_null())
    );

    let left: Vec<String> = std::fs::read_dir("/dev/shm")
        .expect("read /dev/shm")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "left in /dev/shm: {left:?}");
}

#[test]
#[ignore = "about 20 s in a debug build; .ci/run's --quick run checks every row of the table (ci/bench_check.py)"]
fn mpmc_alone_prints_the_many_publishers_table() {
    let run = bench(&["--mpmc", "--quick"]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.contains("many publishers and subscriber groups"));
    assert!(run.stdout.contains("shmbus ManyPublisher, 2 processes"));
}

#[test]
fn the_lossless_rows_deliver_every_message_time_each_publish_of_a_fanout_and_a_stalled_one_is_evicted_within_its_timeout()
 {
    let json = TempFile::new("lossless.json");
    let run = bench(&[
        "--mechanisms",
        "shmbus-lossless,ringfire-lossless,crossbar-podbus-lossless",
        "--patterns",
        "throughput,pingpong,fanout",
        "--fanout",
        "1",
        "--quick",
        "--rounds",
        "1",
        "--json",
        json.arg(),
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json.0).expect("JSON written"))
            .expect("valid JSON");
    let results = doc["results"].as_array().expect("results");
    for name in [
        "shmbus-lossless",
        "ringfire-lossless",
        "crossbar-podbus-lossless",
    ] {
        let ran: Vec<_> = results
            .iter()
            .filter(|r| r["mechanism"] == name && r["skipped"].is_null())
            .collect();
        // 16, 256 and 4096 B every row supports.
        let throughput = ran.iter().filter(|r| r["pattern"] == "throughput");
        assert!(throughput.count() >= 3, "{name} ran: {results:?}");
        for r in ran {
            assert_ne!(
                r["pattern"], "pingpong",
                "{name}: a lossless row is throughput and fanout only"
            );
            assert_eq!(r["lost"], 0, "{name} lost messages: {r}");
            if r["pattern"] == "throughput" {
                assert!(r["msgs_per_sec"].as_f64().is_some_and(|v| v > 0.0), "{r}");
            }
        }
    }
    // The publisher's cost (the lossless rows' first target): the time inside each
    // publish of a fanout block whose receivers keep up.
    for name in ["shmbus-lossless", "ringfire-lossless"] {
        let fanout = results
            .iter()
            .find(|r| r["mechanism"] == name && r["pattern"] == "fanout")
            .unwrap_or_else(|| panic!("no {name} fanout row: {results:?}"));
        assert!(fanout["skipped"].is_null(), "{fanout}");
        assert!(
            fanout["publish_ns"]["p50"]
                .as_f64()
                .is_some_and(|v| v > 0.0),
            "{fanout}"
        );
    }
    // A stalled lossless subscriber (the third target): every stall held
    // the publisher for the eviction timeout (20 ms: it gated), and none
    // past it by a second (it was evicted: no hang).
    let stall = &doc["stall"];
    assert_eq!(stall["evict_ms"], 20.0, "{stall}");
    let rows = stall["rows"].as_array().expect("stall rows");
    assert_eq!(rows.len(), 2, "{stall}");
    for r in rows {
        let blocks = r["block_ms"].as_array().expect("stalls");
        assert_eq!(blocks.len(), 3, "{r}");
        for b in blocks {
            let ms = b.as_f64().expect("ms");
            assert!((20.0..1020.0).contains(&ms), "{r}");
        }
    }
    let targets = doc["targets"].as_array().expect("targets");
    for wanted in [
        "shmbus-lossless lost throughput at 16 B",
        "shmbus-lossless / ringfire-lossless throughput at 16 B",
        "shmbus-lossless / crossbar-podbus-lossless throughput at 4096 B",
        "stalled lossless subscriber: longest publish - eviction timeout (20 ms), ms, publisher SpinFutex (default)",
    ] {
        assert!(
            targets.iter().any(|t| t["target"] == wanted),
            "{wanted} in {targets:?}"
        );
    }
}

#[test]
fn the_sleeping_receivers_rows_run_oneway_report_their_cpu_and_the_idle_rows_and_targets_are_there()
{
    let json = TempFile::new("async.json");
    let run = bench(&[
        "--mechanisms",
        "shmbus-futex,shmbus-async,shmbus-select64,ringfire-async",
        "--patterns",
        "oneway",
        "--quick",
        "--rounds",
        "1",
        "--json",
        json.arg(),
    ]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json.0).expect("JSON written"))
            .expect("valid JSON");
    let results = doc["results"].as_array().expect("results");
    for name in [
        "shmbus-futex",
        "shmbus-async",
        "shmbus-select64",
        "ringfire-async",
    ] {
        let r = results
            .iter()
            .find(|r| r["mechanism"] == name && r["pattern"] == "oneway")
            .unwrap_or_else(|| panic!("{name} in {results:?}"));
        assert!(r["skipped"].is_null(), "{name} ran: {r}");
        assert_eq!(r["checksum_errors"], 0, "{r}");
        assert!(r["latency_ns"]["p50"].as_f64().is_some(), "{r}");
        // The receiver process's CPU over the measured interval.
        assert!(
            r["receiver_cpu_percent"].as_f64().is_some_and(|c| c >= 0.0),
            "{r}"
        );
    }
    // The idle rows: each async row at 1 and 100 subscribers.
    let idle = doc["idle"]["rows"].as_array().expect("idle rows");
    for (name, n) in [
        ("shmbus-async", 1),
        ("shmbus-async", 100),
        ("ringfire-async", 1),
        ("ringfire-async", 100),
    ] {
        let r = idle
            .iter()
            .find(|r| r["mechanism"] == name && r["subscribers"] == n)
            .unwrap_or_else(|| panic!("{name} x{n} in {idle:?}"));
        assert!(r["cpu_percent"].as_f64().is_some(), "{r}");
    }
    let targets = doc["targets"].as_array().expect("targets");
    for wanted in [
        "shmbus-async oneway p50 / shmbus-futex p50 at 64 B",
        "shmbus-async oneway p99 / shmbus-futex p99 at 64 B",
        "shmbus-select64 oneway p50 / shmbus-futex p50 at 64 B",
        "shmbus-async receiver CPU / ringfire-async's, oneway (same rate)",
        "shmbus-async oneway p50 / ringfire-async p50",
        "shmbus-async idle CPU, 100 subscriber(s) in one runtime, % of a core over 1 s",
    ] {
        assert!(
            targets.iter().any(|t| t["target"] == wanted),
            "{wanted} in {targets:?}"
        );
    }
}

#[test]
fn the_request_response_rows_run_alone_and_a_torn_response_fails_them() {
    let json = TempFile::new("reqrep.json");
    let run = bench(&["--reqrep", "--quick", "--rounds", "1", "--json", json.arg()]);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    assert!(run.stdout.contains("Request-response"), "{}", run.stdout);
    assert!(
        !run.stdout.contains("Blackboard"),
        "only its rows: {}",
        run.stdout
    );
    let doc = written(&json);
    assert_eq!(doc["schema"], "shmbus-bench/reqrep-1");
    let rows = doc["reqrep"]["rows"].as_array().expect("rows");
    let names: std::collections::BTreeSet<&str> =
        rows.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        [
            "floor",
            "iceoryx2-reqrep",
            "shmbus-2bus",
            "shmbus-reqrep",
            "uds-reqrep"
        ]
    );
    for r in rows {
        assert!(r["failed"].is_null(), "{r}");
        assert_eq!(r["rounds"].as_array().map(Vec::len), Some(1), "{r}");
        assert!(r["p50_ns"].as_f64().is_some_and(|v| v > 0.0), "{r}");
    }
    let targets = doc["reqrep"]["targets"].as_array().expect("targets");
    assert!(
        targets.iter().any(|t| t["target"]
            == "request-response call p50 / two-bus ping-pong p50 at 64 B, 1 client"),
        "{targets:?}"
    );

    // Every server tears its responses: every row that carries a payload
    // fails, and the run with it, naming each.
    let run = bench_with(
        &[("SHMBUS_BENCH_FAULT", "torn-payload")],
        &["--reqrep", "--quick", "--rounds", "1"],
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let last = run.stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("shmbus-bench: 21 row(s) failed")
            && last.contains(
                "; shmbus-reqrep 4096 B x1: client 0: call 1: a response torn, or not its call's;"
            ),
        "{}",
        run.stderr
    );
}
