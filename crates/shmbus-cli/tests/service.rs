//! `shmbus create --kind service`, `serve` and `call` in separate
//! processes: a response is one line; every way a call ends without one
//! is one stderr line and its own exit code; bad flags are one line and
//! exit 2; `stat` and `top` show the service's figures.
//!
//! Each outcome is made deterministic: a server that holds every request
//! (`serve --delay-ms`) for a timeout, the same killed for a server gone,
//! a response longer than the service's largest for a refusal, a client
//! entry whose one slot that server holds for full.

mod common;

use common::{BusName, CliOutput, Watched, run_shmbus as shmbus, start, wait_for};
use shmbus::stat::{CallPhase, ServiceStat};

fn service(name: &str) -> Option<ServiceStat> {
    shmbus::stat::stat(name).ok()?.service
}

/// Waits until `server` (a `shmbus serve`) serves `name`.
fn wait_serving(name: &str, server: &Watched) {
    let pid = server.pid();
    wait_for("the server to take its entry", || {
        service(name).is_some_and(|s| s.per_server.iter().any(|l| l.pid == pid && l.alive))
    });
}

/// Waits until some call of `name` is in `phase`.
fn wait_phase(name: &str, phase: CallPhase) {
    wait_for(&format!("a call {}", phase.name()), || {
        service(name).is_some_and(|s| {
            s.per_client
                .iter()
                .any(|c| c.outstanding.iter().any(|k| k.phase == phase))
        })
    });
}

fn create(name: &str, extra: &[&str]) {
    let mut args = vec!["create", name, "--kind", "service", "--clients", "4"];
    args.extend_from_slice(extra);
    shmbus(&args).assert_success();
}

#[test]
fn serve_echo_answers_calls_from_other_processes_and_stops_quietly_on_sigterm() {
    let svc = BusName::new("C-svc-echo");
    let server = start(&["serve", svc.name(), "--echo", "--create", "--clients", "2"]);
    wait_serving(svc.name(), &server);
    let out = shmbus(&["call", svc.name(), "hello, service"]);
    out.assert_success();
    assert_eq!(out.stdout(), "hello, service\n");
    let out = shmbus(&["call", svc.name(), "--hex", "00ff10"]);
    out.assert_success();
    assert_eq!(out.stdout(), "00ff10\n");
    // A payload that looks like a flag is still the payload.
    assert_eq!(shmbus(&["call", svc.name(), "-x"]).stdout(), "-x\n");
    let stat = service(svc.name()).expect("a service");
    assert_eq!((stat.clients, stat.per_server[0].answered), (2, 3));
    common::signal(&server, rustix::process::Signal::TERM);
    let done = server.wait();
    done.assert_success();
    assert_eq!(done.stdout(), "", "nothing per request without --verbose");
    svc.finish();
}

#[test]
fn serve_verbose_prints_one_line_per_request() {
    let svc = BusName::new("C-svc-verbose");
    create(svc.name(), &[]);
    let mut server = start(&["serve", svc.name(), "--echo", "--verbose"]);
    wait_serving(svc.name(), &server);
    shmbus(&["call", svc.name(), "a\nb"]).assert_success();
    server.wait_until_printed("answered", common::RUN_DEADLINE);
    common::signal(&server, rustix::process::Signal::INT);
    let done = server.wait();
    done.assert_success();
    assert_eq!(done.stdout(), "0\tanswered\ta\\nb\n");
    svc.finish();
}

#[test]
fn a_call_with_no_server_alive_is_one_line_and_exit_5() {
    let svc = BusName::new("C-svc-noserver");
    create(svc.name(), &[]);
    shmbus(&["call", svc.name(), "anyone?"]).assert_error(5, "no server");
    let stat = service(svc.name()).expect("a service");
    assert_eq!(stat.per_client[0].gone, 1);
    assert!(stat.per_client[0].outstanding.is_empty(), "withdrawn");
    svc.finish();
}

#[test]
fn a_call_held_by_a_slow_server_times_out_with_exit_3_and_stat_and_top_show_it() {
    let svc = BusName::new("C-svc-timeout");
    create(
        svc.name(),
        &["--slots", "2", "--servers", "2", "--request-size", "32"],
    );
    let server = start(&["serve", svc.name(), "--echo", "--delay-ms", "600000"]);
    wait_serving(svc.name(), &server);
    let timeout = std::time::Duration::from_millis(300);
    shmbus(&["call", svc.name(), "slow", "--timeout", "0.3"])
        .assert_error(3, "timed out")
        .assert_ended_by_timeout(timeout);

    // The server still holds the call it took: cancelled, by server 0.
    let stat = shmbus(&["stat", svc.name(), "--json"]).json();
    assert_eq!(stat["kind"], "service");
    assert_eq!(
        (&stat["clients"], &stat["slots"], &stat["servers"]),
        (&4.into(), &2.into(), &2.into())
    );
    assert_eq!(stat["request_size"], 32);
    assert_eq!(stat["response_size"], 4096);
    let client = &stat["per_client"][0];
    assert_eq!(client["timeouts"], 1);
    assert_eq!(client["calls"], 1);
    assert_eq!(client["outstanding"][0]["phase"], "cancelled");
    assert_eq!(client["outstanding"][0]["server"], 0);
    let srv = &stat["per_server"][0];
    assert_eq!(
        (&srv["pid"], &srv["alive"]),
        (&server.pid().into(), &true.into())
    );
    assert_eq!(srv["taken"], 1);
    let text = shmbus(&["stat", svc.name()]);
    text.assert_success();
    let text = text.stdout();
    assert!(text.contains("slot 0: cancelled by server 0"), "{text}");
    assert!(text.contains("timeouts 1"), "{text}");
    assert!(
        text.contains("request:        bytes, up to 32 bytes"),
        "{text}"
    );

    let top = shmbus(&["top", svc.name(), "--json", "--interval-ms", "10"]).json();
    let bus = &top["buses"][0];
    assert_eq!(bus["kind"], "service");
    assert_eq!(bus["service"]["in_flight"], 1);
    assert_eq!(bus["service"]["per_client"][0]["timeouts"], 1);
    assert_eq!(bus["service"]["live_servers"], 1);
    let prom = shmbus(&["top", svc.name(), "--prometheus", "--interval-ms", "10"]);
    let prom = prom.stdout();
    assert!(
        prom.lines()
            .any(|l| l.starts_with("shmbus_client_timeouts_total{") && l.ends_with(" 1")),
        "{prom}"
    );
    assert!(prom.contains("shmbus_service_calls_in_flight{"), "{prom}");
    let once = shmbus(&["top", svc.name(), "--once", "--interval-ms", "10"]);
    assert!(once.stdout().contains("in flight: 1 calls"), "{once:?}");
    let listed = shmbus(&["ls"]).stdout();
    let row = listed
        .lines()
        .find(|l| l.starts_with(svc.name()))
        .unwrap_or_else(|| panic!("no ls row: {listed}"));
    assert!(
        row.contains("service") && row.contains("4 clients"),
        "{row}"
    );
    server.kill();
    svc.finish();
}

#[test]
fn a_call_whose_server_is_killed_holding_it_ends_server_gone_with_exit_4() {
    let svc = BusName::new("C-svc-gone");
    create(svc.name(), &[]);
    let server = start(&["serve", svc.name(), "--echo", "--delay-ms", "600000"]);
    wait_serving(svc.name(), &server);
    let call = start(&["call", svc.name(), "doomed", "--timeout", "60"]);
    wait_phase(svc.name(), CallPhase::Taken);
    let pid = server.pid();
    server.kill();
    call.wait()
        .assert_error(4, "server gone")
        .assert_error(4, &format!("pid {pid}"));
    svc.finish();
}

#[test]
fn a_request_the_server_cannot_echo_is_refused_with_exit_6() {
    let svc = BusName::new("C-svc-refused");
    create(svc.name(), &["--response-size", "4"]);
    let server = start(&["serve", svc.name(), "--echo"]);
    wait_serving(svc.name(), &server);
    shmbus(&["call", svc.name(), "more than four bytes"]).assert_error(6, "refused");
    assert_eq!(shmbus(&["call", svc.name(), "four"]).stdout(), "four\n");
    let stat = service(svc.name()).expect("a service");
    assert_eq!(
        (stat.per_server[0].refused, stat.per_server[0].answered),
        (1, 1)
    );
    server.kill();
    svc.finish();
}

#[test]
fn a_client_entry_whose_one_slot_a_live_server_holds_is_full_with_exit_7() {
    let svc = BusName::new("C-svc-full");
    shmbus(&[
        "create",
        svc.name(),
        "--kind",
        "service",
        "--clients",
        "1",
        "--slots",
        "1",
    ])
    .assert_success();
    let server = start(&["serve", svc.name(), "--echo", "--delay-ms", "600000"]);
    wait_serving(svc.name(), &server);
    shmbus(&["call", svc.name(), "first", "--timeout", "0.2"]).assert_error(3, "timed out");
    // The next call takes the same entry over; its one slot is the
    // server's until it answers.
    shmbus(&["call", svc.name(), "second", "--timeout", "0.2"]).assert_error(7, "full");
    assert_eq!(
        service(svc.name()).expect("a service").per_client[0].full,
        1
    );
    server.kill();
    svc.finish();
}

#[test]
fn bad_flags_and_payloads_are_one_line_and_exit_2() {
    let svc = BusName::new("C-svc-flags");
    let name = svc.name();
    for (args, needle) in [
        (vec!["create", name, "--kind", "service"], "needs --clients"),
        (
            vec!["create", name, "--kind", "service", "--clients", "0"],
            "0 clients",
        ),
        (
            vec!["create", name, "--kind", "service", "--clients", "300"],
            "300 clients",
        ),
        (
            vec![
                "create",
                name,
                "--kind",
                "service",
                "--clients",
                "2",
                "--slots",
                "65",
            ],
            "slots per client",
        ),
        (
            vec![
                "create",
                name,
                "--kind",
                "service",
                "--clients",
                "2",
                "--servers",
                "0",
            ],
            "0 servers",
        ),
        (
            vec![
                "create",
                name,
                "--kind",
                "service",
                "--clients",
                "2",
                "--msg-size",
                "8",
            ],
            "--msg-size",
        ),
        (
            vec![
                "create",
                name,
                "--kind",
                "service",
                "--clients",
                "2",
                "--request-size",
                "x",
            ],
            "--request-size",
        ),
        (
            vec![
                "create",
                name,
                "--slots",
                "8",
                "--msg-size",
                "8",
                "--clients",
                "2",
            ],
            "--clients applies to --kind service",
        ),
        (vec!["serve", name], "--echo"),
        (
            vec!["serve", name, "--echo", "--clients", "2"],
            "--clients applies with --create",
        ),
        (vec!["call", name, "x", "--timeout", "-1"], "seconds"),
        (vec!["call", name, "zz", "--hex"], "not hex digits"),
        (vec!["call", name], "PAYLOAD"),
    ] {
        shmbus(&args).assert_error(2, needle);
    }
    assert!(!svc.path().exists(), "nothing was created");
    create(name, &["--request-size", "4"]);
    shmbus(&["call", name, "12345"]).assert_error(2, "largest is 4");
    svc.finish();
}

#[test]
fn serving_or_calling_what_is_not_a_service_is_one_line_and_exit_1() {
    let bus = BusName::new("C-svc-notone");
    shmbus(&["create", bus.name(), "--slots", "8", "--msg-size", "8"]).assert_success();
    shmbus(&["call", bus.name(), "x"]).assert_error(1, "");
    shmbus(&["serve", bus.name(), "--echo"]).assert_error(1, "");
    let missing = BusName::new("C-svc-missing");
    shmbus(&["call", missing.name(), "x"]).assert_error(1, "");
    shmbus(&["serve", missing.name(), "--echo", "--create"]).assert_error(2, "--clients");
    missing.finish();
    bus.finish();
}
