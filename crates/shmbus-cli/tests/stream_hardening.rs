//! The stream's hardening, end to end with the real binary: a
//! `sub` that cannot write releases nothing; corrupt cursors are an error
//! line from `pub` and `sub` and a flag in `stat`, never a wait; a consumer
//! may start after its producer was killed and wait for the next one;
//! `pub --timeout`; an endless line is refused with pub's memory bounded.
//!
//! As in tests/cli.rs: every child runs under the testkit's watchdog
//! ([`common::RUN_DEADLINE`]), every stream lives in a private directory
//! under /dev/shm removed on drop, and no stderr says "panicked".

mod common;

use std::io::Write;
use std::process::Stdio;
use std::thread;
use std::time::Duration;

use common::{
    CliOutput, ShmDir, process_state, run, run_stdin, shmbus, spawn, wait_for, with_stdout_closed,
};
use serde_json::Value;
use shmbus::internals::wire::stream_control as sc;

fn create_stream(stream: &str, capacity: u64) {
    run(shmbus(&[
        "create",
        stream,
        "--kind",
        "stream",
        "--capacity",
        &capacity.to_string(),
    ]))
    .assert_success();
}

fn stream_stat(stream: &str) -> shmbus::stat::StreamStat {
    shmbus::stat::stat(stream)
        .expect("stat")
        .stream
        .expect("a stream")
}

/// A field of /proc/PID/status in kB (`RssAnon`, `VmHWM`...); `None` once
/// the process is gone.
fn status_kb(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status
        .lines()
        .find(|l| l.starts_with(&format!("{field}:")))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

// ---------------------------------------------------------------------------
// 3. A `sub` that cannot write its line releases nothing.

#[test]
fn sub_with_stdout_closed_fails_and_every_record_stays_in_the_stream() {
    let dir = ShmDir::new("closed-stdout");
    let stream = dir.bus("stream");
    create_stream(&stream, 4096);
    run_stdin(&["pub", &stream], b"one\ntwo\nthree\n").assert_success();

    let out = run(with_stdout_closed(shmbus(&[
        "sub",
        &stream,
        "--timeout",
        "0.3",
    ])));
    out.assert_error(1, "standard output is closed");
    // A write that fails later (ENOSPC) is an error too, before the release.
    let mut cmd = shmbus(&["sub", &stream, "--timeout", "0.3"]);
    cmd.stdout(std::fs::File::create("/dev/full").expect("open /dev/full"));
    run(cmd).assert_error(1, "writing to stdout");

    assert_eq!(stream_stat(&stream).head, 0, "nothing released");
    let out = run(shmbus(&["sub", &stream, "--count", "3", "--timeout", "5"]));
    assert_eq!(out.assert_success().stdout(), "one\ntwo\nthree\n");
}

#[test]
fn sub_whose_reader_is_gone_stops_quietly_and_releases_nothing() {
    let dir = ShmDir::new("gone-reader");
    let stream = dir.bus("stream");
    create_stream(&stream, 4096);
    run_stdin(&["pub", &stream], b"one\ntwo\n").assert_success();
    // Like `shmbus sub S | true` once `true` has exited: EPIPE at once.
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let mut cmd = shmbus(&["sub", &stream, "--timeout", "0.3"]);
    cmd.stdout(writer);
    let out = run(cmd);
    out.assert_success();
    assert_eq!(out.stderr, "");
    assert_eq!(stream_stat(&stream).head, 0, "nothing released");
    let out = run(shmbus(&["sub", &stream, "--count", "2", "--timeout", "5"]));
    assert_eq!(out.assert_success().stdout(), "one\ntwo\n");
}

#[test]
fn every_command_that_prints_refuses_a_closed_stdout_instead_of_printing_into_nothing() {
    let dir = ShmDir::new("closed-stdout-all");
    let bus = dir.bus("bus");
    run(shmbus(&[
        "create",
        &bus,
        "--msg-size",
        "16",
        "--capacity",
        "8",
    ]))
    .assert_success();
    run_stdin(&["pub", &bus], b"hello\n").assert_success();
    for args in [
        &["sub", &bus, "--from", "oldest", "--timeout", "0.3"][..],
        &["stat", &bus],
        &["ls", "--dir", dir.dir()],
        &["clean", "--dir", dir.dir(), "--dry-run"],
    ] {
        let out = run(with_stdout_closed(shmbus(args)));
        out.assert_error(1, "standard output is closed");
    }
    // `pub` prints nothing, so it needs no stdout.
    let mut cmd = with_stdout_closed(shmbus(&["pub", &bus]));
    cmd.stdin(Stdio::null());
    run(cmd).assert_success();
}

// ---------------------------------------------------------------------------
// 7. Corrupt cursors: an error at once, naming them; `stat` flags them.

#[test]
fn pub_sub_and_stat_report_cursors_more_than_the_capacity_apart_as_corrupt() {
    let dir = ShmDir::new("corrupt-cursors");
    let stream = dir.bus("stream");
    create_stream(&stream, 4096);
    run_stdin(&["pub", &stream], b"a\nb\n").assert_success();
    // The records are valid; TAIL is 17 rings ahead of HEAD.
    let control = shmbus::stat::stat(&stream)
        .expect("stat")
        .raw_header()
        .control_offset;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&stream)
        .expect("open the stream file");
    std::os::unix::fs::FileExt::write_all_at(
        &file,
        &(17u64 * 4096).to_le_bytes(),
        control + sc::TAIL as u64,
    )
    .expect("write TAIL");

    let out = run(shmbus(&["sub", &stream]));
    out.assert_error(1, "corrupt stream cursors: TAIL is 69632 with HEAD at 0");
    assert!(out.stdout.is_empty(), "{out:?}");
    let out = run_stdin(&["pub", &stream], b"c\n");
    out.assert_error(1, "corrupt stream cursors: HEAD is 0 with TAIL at 69632");

    let text = run(shmbus(&["stat", &stream])).assert_success().stdout();
    let fill = text
        .lines()
        .find(|l| l.starts_with("fill:"))
        .expect("a fill row");
    assert!(
        fill.contains("CORRUPT") && !fill.contains('%'),
        "stat flags it instead of a percentage: {text}"
    );
    let json: Value = serde_json::from_slice(
        &run(shmbus(&["stat", &stream, "--json"]))
            .assert_success()
            .stdout,
    )
    .expect("JSON");
    assert_eq!(json["corrupt"], true, "{json}");
    let table = run(shmbus(&["ls", "--dir", dir.dir()]))
        .assert_success()
        .stdout();
    assert!(table.contains("fill CORRUPT"), "{table}");
}

// ---------------------------------------------------------------------------
// 8. A consumer after a killed producer; `pub --timeout`.

/// Starts `pub` on `stream`, lets a consumer take its one record (so the
/// stream is empty), then kills it with SIGKILL; returns its pid.
fn kill_a_producer(stream: &str) -> u32 {
    let mut cmd = shmbus(&["pub", stream]);
    cmd.stdin(Stdio::piped());
    let mut producer = spawn(cmd);
    let pipe = producer.stdin();
    pipe.write_all(b"first\n").expect("write to pub");
    pipe.flush().expect("flush");
    let out = run(shmbus(&["sub", stream, "--count", "1", "--timeout", "10"]));
    assert_eq!(out.assert_success().stdout(), "first\n");
    let pid = producer.pid();
    let killed = producer.kill();
    assert_eq!(killed.code(), None, "killed by a signal");
    let st = shmbus::stat::stat(stream).expect("stat");
    assert_eq!((st.publisher_pid, st.publisher_alive), (pid, false));
    pid
}

#[test]
fn a_consumer_started_after_the_producer_was_killed_waits_for_a_new_one() {
    let dir = ShmDir::new("killed-producer");
    let stream = dir.bus("stream");
    create_stream(&stream, 4096);
    kill_a_producer(&stream);

    let sub = spawn(shmbus(&["sub", &stream, "--count", "2", "--timeout", "10"]));
    let pid = sub.pid();
    wait_for("the consumer to attach and sleep", || {
        let s = stream_stat(&stream);
        (s.consumer_alive && s.consumer_pid == pid) && process_state(pid) == Some('S')
    });
    // Ten peer checks: a consumer that gave up on the dead producer has.
    thread::sleep(shmbus::internals::PEER_CHECK * 10);
    run_stdin(&["pub", &stream], b"second\nthird\n").assert_success();
    let out = sub.wait();
    assert_eq!(out.assert_success().stdout(), "second\nthird\n");
    assert_eq!(out.stderr, "");
}

#[test]
fn a_consumer_with_no_producer_coming_ends_at_its_timeout() {
    let dir = ShmDir::new("no-producer");
    let stream = dir.bus("stream");
    create_stream(&stream, 4096);
    kill_a_producer(&stream);

    let out = run(shmbus(&["sub", &stream, "--timeout", "0.5"]));
    out.assert_success();
    assert_eq!((out.stdout(), out.stderr.as_str()), (String::new(), ""));
    assert!(out.took >= Duration::from_millis(500), "{out:?}");
    let out = run(shmbus(&[
        "sub",
        &stream,
        "--count",
        "1",
        "--timeout",
        "0.5",
    ]));
    out.assert_error(1, "timed out after 0.5 s waiting for record 1 of 1");
}

#[test]
fn pub_timeout_gives_up_on_a_stream_that_stays_full() {
    let dir = ShmDir::new("pub-timeout");
    let stream = dir.bus("stream");
    // 16 bytes a record: four fill the 64-byte ring; nobody reads.
    create_stream(&stream, 64);
    let out = run_stdin(&["pub", &stream, "--timeout", "1"], b"1\n2\n3\n4\n5\n6\n");
    out.assert_error(
        1,
        &format!("stream {stream} stayed full for 1.0 s: line 5 not pushed (4 records sent)"),
    );
    assert!(
        out.took >= Duration::from_secs(1) && out.took < Duration::from_secs(4),
        "{:?}",
        out.took
    );
    let out = run(shmbus(&["sub", &stream, "--timeout", "0.3"]));
    assert_eq!(out.assert_success().stdout(), "1\n2\n3\n4\n");
    let out = run_stdin(&["pub", &stream, "--timeout", "-1"], b"");
    out.assert_error(2, "is not a number of seconds");
}

// ---------------------------------------------------------------------------
// 13. An endless line: refused at its first byte too many, pub's memory
// bounded.

#[test]
fn pub_refuses_an_endless_line_once_it_is_too_long_with_its_memory_bounded() {
    const CAP: u64 = 256 << 20;
    const MAX: u64 = CAP / 2 - 8;
    const BLOCK: usize = 1 << 20;
    let dir = ShmDir::new("endless-line");
    let stream = dir.bus("stream");
    create_stream(&stream, CAP);

    // Fed through a pipe: once `write_all` returns, pub has read all but
    // the pipe's 64 KiB, so what it holds of the line is in its memory by
    // then (on the heap before the fix: RssAnon grew with every block).
    let mut cmd = shmbus(&["pub", &stream]);
    cmd.stdin(Stdio::piped());
    let mut p = spawn(cmd);
    let pid = p.pid();
    let mut pipe = p.take_stdin();
    let block = vec![b'z'; BLOCK];
    let mut fed: u64 = 0;
    let mut peak_anon_kb = 0;
    loop {
        match pipe.write_all(&block) {
            Ok(()) => fed += BLOCK as u64,
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => break,
            Err(e) => panic!("feeding pub: {e}"),
        }
        if fed.is_multiple_of(8 * BLOCK as u64)
            && let Some(kb) = status_kb(pid, "RssAnon")
        {
            peak_anon_kb = peak_anon_kb.max(kb);
        }
        assert!(
            fed <= MAX + 16 * BLOCK as u64,
            "pub still reading {fed} bytes into a line longer than {MAX}"
        );
    }
    drop(pipe);
    let out = p.wait();
    println!(
        "refused after {fed} bytes fed, in {:?}; RssAnon at most {peak_anon_kb} kB",
        out.took
    );
    out.assert_error(2, &format!("line 1 is longer than {MAX} bytes"));
    assert!(fed >= MAX, "refused before the line was too long: {fed}");
    assert!(
        peak_anon_kb < 32 << 10,
        "pub held {peak_anon_kb} kB of anonymous memory for a line of {fed} bytes"
    );

    // The issue's own case: stdin is /dev/zero.
    let mut cmd = shmbus(&["pub", &stream]);
    cmd.stdin(std::fs::File::open("/dev/zero").expect("open /dev/zero"));
    run(cmd).assert_error(2, &format!("line 1 is longer than {MAX} bytes"));

    // Neither refused line reached the stream.
    let s = stream_stat(&stream);
    assert_eq!((s.tail, s.fill), (0, 0), "{s:?}");
    run_stdin(&["pub", &stream], b"after\n").assert_success();
    let out = run(shmbus(&["sub", &stream, "--count", "1", "--timeout", "5"]));
    assert_eq!(out.assert_success().stdout(), "after\n");
}

/// Line `i` of `len` bytes: no newline, and every byte a function of its
/// line and place, so a byte moved or lost shows.
fn patterned_line(i: usize, len: usize) -> Vec<u8> {
    let mut line: Vec<u8> = (0..len).map(|j| ((i * 7 + j * 13) % 250) as u8).collect();
    for b in &mut line {
        if *b == b'\n' {
            *b = 250;
        }
    }
    line
}

#[test]
fn lines_longer_than_the_heap_stage_arrive_whole_even_where_they_wrap() {
    // 1 MiB ring: its largest record is 512 KiB - 8. After lines of 500 000
    // and 300 000 bytes, one of 200 000 starts at byte 800 016, where the
    // room reserved for it (doubling from 128 KiB) has to wrap to the
    // ring's start, taking the bytes read so far along.
    const CAP: u64 = 1 << 20;
    let max = (CAP / 2 - 8) as usize;
    let stage = 64 << 10;
    let lens = [
        500_000,
        300_000,
        200_000,
        0,
        stage,
        stage + 1,
        max,
        70_000,
        100_000,
    ];
    let dir = ShmDir::new("long-lines");
    let stream = dir.bus("stream");
    create_stream(&stream, CAP);
    let mut input = Vec::new();
    for (i, &len) in lens.iter().enumerate() {
        input.extend(patterned_line(i, len));
        input.push(b'\n');
    }
    input.pop(); // the last line ends at the end of input, not a newline
    let count = lens.len().to_string();
    let sub = spawn(shmbus(&[
        "sub",
        &stream,
        "--count",
        &count,
        "--timeout",
        "10",
    ]));
    let pid = sub.pid();
    wait_for("the consumer to attach", || {
        let s = stream_stat(&stream);
        s.consumer_alive && s.consumer_pid == pid
    });
    run_stdin(&["pub", &stream], &input).assert_success();
    let out = sub.wait();
    out.assert_success();
    let mut want = input.clone();
    want.push(b'\n');
    assert!(out.stdout == want, "the lines differ from what was sent");
}
