//! Request-response between real processes: calls answered across
//! processes, and every outcome a caller can get: a server SIGKILLed
//! holding a request (`ServerGone`, within the bound), a client SIGKILLed
//! with calls outstanding (its entry taken over, its answers dropped and
//! counted), a deadline passed with a late response (never delivered to
//! the next call), a full client that would not wait, and no server.
//!
//! Each child is this test binary run again (see `common`); its entry is an
//! `as_child_*` test that does nothing unless `SHMBUS_CHILD_ROLE` names it.

mod common;

use std::time::{Duration, Instant};

use common::{BusName, Watched, param, print_ready, print_result, role, spawn_child};
use shmbus::reqrep::{self, CallError, Client, RespondError, SendError, Server};
use shmbus::{OpenOptions, Wait};

/// How long a waiting client may take to notice a dead server: its probe
/// period, and a margin for a loaded machine.
fn gone_bound() -> Duration {
    reqrep::PEER_CHECK + common::scale_deadline(Duration::from_secs(2))
}

/// A server child: `echo` answers `n + 1` to `SHMBUS_COUNT` requests and
/// exits; `hold` takes one request, says ready, waits for the file
/// `SHMBUS_GO` to exist, answers it (reporting whether it was late), then
/// echoes as `echo`; `hang` takes one request, says ready and waits to be killed;
/// `create` makes the service and exits at once.
#[test]
fn as_child_serve() {
    role("rr_serve", || {
        let name: String = param("SHMBUS_NAME");
        let mode: String = param("SHMBUS_MODE");
        let count: u64 = param("SHMBUS_COUNT");
        let server = if mode == "create" {
            let s = Server::<u64, u64>::create(&name, &reqrep::Options::new(4).slots(2))
                .expect("create");
            print_ready();
            drop(s);
            return;
        } else {
            Server::<u64, u64>::attach(&name, &OpenOptions::default()).expect("attach")
        };
        print_ready();
        let mut late = String::from("none");
        if mode == "hold" || mode == "hang" {
            let r = server.recv(Wait::Forever).expect("a request");
            println!("took {}", r.get());
            if mode == "hang" {
                common::idle_until_killed();
            }
            let go: String = param("SHMBUS_GO");
            common::wait_for("the test's go", &mut [], || {
                std::path::Path::new(&go).exists()
            });
            late = format!("{:?}", r.respond(&666).err());
        }
        for _ in 0..count {
            let r = server.recv(Wait::Forever).expect("a request");
            let n = r.get();
            r.respond(&(n + 1)).expect("the caller waits");
        }
        print_result(&[("late", late)]);
    });
}

/// A client child: sends `SHMBUS_COUNT` calls and waits for each (`n +
/// 1`), or (`SHMBUS_MODE=leave`) sends three, waits until the server took
/// two, and says ready with them outstanding, to be killed.
#[test]
fn as_child_call() {
    role("rr_call", || {
        let name: String = param("SHMBUS_NAME");
        let mode: String = param("SHMBUS_MODE");
        let count: u64 = param("SHMBUS_COUNT");
        let id: u64 = param("SHMBUS_ID");
        let mut client =
            Client::<u64, u64>::attach(&name, &OpenOptions::default()).expect("attach");
        if mode == "leave" {
            let calls: Vec<_> = (0..3)
                .map(|i| client.send(&i, Wait::Never).unwrap())
                .collect();
            print_ready();
            std::mem::forget(calls);
            common::idle_until_killed();
        }
        for i in 0..count {
            let n = id << 32 | i;
            assert_eq!(client.call(&n, Wait::Forever), Ok(n + 1), "call {i}");
        }
        print_result(&[("calls", count.to_string())]);
    });
}

fn serve(name: &BusName, mode: &str, count: u64) -> Watched {
    let mut s = spawn_server(name, mode, count);
    s.wait_ready();
    s
}

/// A server child, not waited for: one that exits at once (`create`)
/// may be gone before its ready line is looked for.
fn spawn_server(name: &BusName, mode: &str, count: u64) -> Watched {
    spawn_child(
        "as_child_serve",
        "rr_serve",
        &[
            ("SHMBUS_NAME", name.name().to_owned()),
            ("SHMBUS_MODE", mode.to_owned()),
            ("SHMBUS_COUNT", count.to_string()),
            ("SHMBUS_GO", go_file(name).display().to_string()),
        ],
    )
}

fn call(name: &BusName, mode: &str, id: u64, count: u64) -> Watched {
    spawn_child(
        "as_child_call",
        "rr_call",
        &[
            ("SHMBUS_NAME", name.name().to_owned()),
            ("SHMBUS_MODE", mode.to_owned()),
            ("SHMBUS_ID", id.to_string()),
            ("SHMBUS_COUNT", count.to_string()),
        ],
    )
}

/// The service's creator, kept by the test: server entry 0, never
/// serving.
fn create(name: &BusName, slots: u32) -> Server<u64, u64> {
    Server::<u64, u64>::create(name.name(), &reqrep::Options::new(4).slots(slots)).expect("create")
}

#[test]
fn a_server_process_answers_every_call_of_two_client_processes_each_its_own() {
    let name = BusName::new("rr-two");
    let _creator = create(&name, 4);
    let count = common::scale_min(20_000, 500);
    let server = serve(&name, "echo", 2 * count);
    let clients: Vec<_> = (1..=2).map(|id| call(&name, "run", id, count)).collect();
    for c in clients {
        assert_eq!(c.wait_success().result().get::<u64>("calls"), count);
    }
    server.wait_success();
    drop(_creator);
    name.finish();
}

#[test]
fn a_server_killed_holding_a_request_is_server_gone_to_its_caller_within_the_bound_and_the_slot_comes_back()
 {
    let name = BusName::new("rr-gone");
    let _creator = create(&name, 1);
    let mut server = serve(&name, "hang", 0);
    let mut client = Client::<u64, u64>::attach(name.name(), &OpenOptions::default()).unwrap();
    let pending = client.send(&5, Wait::Never).unwrap();
    server.wait_until_printed("took 5", common::scale_deadline(Duration::from_secs(10)));
    let pid = server.pid();
    let killed = Instant::now();
    let f = server.kill();
    assert_eq!(f.signal(), Some(libc::SIGKILL), "{}", f.output());
    // A bounded wait: a client that missed the death times out instead
    // of hanging the test.
    assert_eq!(
        client.wait(pending, Wait::For(2 * gone_bound())),
        Err(CallError::ServerGone { pid })
    );
    let waited = killed.elapsed();
    assert!(waited < gone_bound(), "told after {waited:?}");
    // The one slot is the client's again: the next call goes out.
    let pending = client.send(&6, Wait::Never).expect("the slot came back");
    client.cancel(pending);
    drop((client, _creator));
    name.finish();
}

#[test]
fn with_no_server_alive_a_call_is_no_server_within_the_bound() {
    let name = BusName::new("rr-none");
    // Made by a process that then exits: no server lives.
    spawn_server(&name, "create", 0).wait_success();
    let mut client = Client::<u64, u64>::attach(name.name(), &OpenOptions::default()).unwrap();
    let start = Instant::now();
    assert_eq!(
        client.call(&1, Wait::For(2 * gone_bound())),
        Err(CallError::NoServer)
    );
    assert!(
        start.elapsed() < gone_bound(),
        "told after {:?}",
        start.elapsed()
    );
    assert_eq!(client.outstanding(), 0, "withdrawn");
    drop(client);
    shmbus::remove(name.name()).unwrap();
    name.finish();
}

#[test]
fn a_deadline_passed_is_timed_out_and_the_late_response_is_dropped_never_delivered_to_the_next_call()
 {
    let name = BusName::new("rr-late");
    let _creator = create(&name, 1);
    let mut server = serve(&name, "hold", 3);
    let mut client = Client::<u64, u64>::attach(name.name(), &OpenOptions::default()).unwrap();
    let pending = client.send(&1, Wait::Never).unwrap();
    server.wait_until_printed("took 1", common::scale_deadline(Duration::from_secs(10)));
    assert_eq!(
        client.wait(pending, Wait::For(Duration::from_millis(20))),
        Err(CallError::TimedOut)
    );
    // The server answers now, late; the slot comes back, and each next
    // call gets its own answer.
    std::fs::write(go_file(&name), b"").unwrap();
    for n in [10u64, 20, 30] {
        assert_eq!(
            client.call(
                &n,
                Wait::For(common::scale_deadline(Duration::from_secs(10)))
            ),
            Ok(n + 1)
        );
    }
    let r = server.wait_success().result();
    assert_eq!(
        r.raw("late"),
        Some(&*format!("{:?}", Some(RespondError::Late)))
    );
    let _ = std::fs::remove_file(go_file(&name));
    drop((client, _creator));
    name.finish();
}

#[test]
fn a_full_client_asked_not_to_wait_is_told_full_while_a_server_process_holds_its_calls() {
    let name = BusName::new("rr-full");
    let _creator = create(&name, 1);
    let mut server = serve(&name, "hang", 0);
    let mut client = Client::<u64, u64>::attach(name.name(), &OpenOptions::default()).unwrap();
    let _held = client.send(&1, Wait::Never).unwrap();
    server.wait_until_printed("took 1", common::scale_deadline(Duration::from_secs(10)));
    assert_eq!(
        client.send(&2, Wait::Never),
        Err(SendError::Full { outstanding: 1 })
    );
    assert_eq!(
        client.call(&2, Wait::For(Duration::from_millis(5))),
        Err(CallError::Send(SendError::Full { outstanding: 1 }))
    );
    server.kill();
    drop((client, _creator));
    name.finish();
}

#[test]
fn a_client_killed_with_calls_outstanding_leaves_its_entry_to_the_next_which_drops_and_counts_its_answers()
 {
    let name = BusName::new("rr-client-dies");
    let creator = create(&name, 4);
    let mut victim = call(&name, "leave", 1, 0);
    victim.wait_ready();
    // Three requests posted by the victim: take two, answer one.
    let answered = creator.recv(Wait::Forever).expect("a request");
    answered
        .respond(&100)
        .expect("the victim's slot still waits");
    let held = creator.recv(Wait::Forever).expect("a request");
    let f = victim.kill();
    assert_eq!(f.signal(), Some(libc::SIGKILL), "{}", f.output());
    // The next client takes the dead one's entry: the untaken request is
    // withdrawn, the answer dropped and counted, the held call given up.
    let heir = Client::<u64, u64>::attach(name.name(), &OpenOptions::default()).unwrap();
    assert_eq!(heir.entry(), 0, "the dead client's entry");
    assert!(
        creator.recv(Wait::Never).is_none(),
        "the untaken request was withdrawn"
    );
    assert_eq!(heir.outstanding(), 1, "the call the server still holds");
    assert_eq!(held.respond(&200), Err(RespondError::Late));
    let stat = late_count(&name, heir.entry());
    assert_eq!(stat, 2, "the answer nobody read and the late one");
    drop((heir, creator));
    name.finish();
}

/// The file a `hold` server waits for.
fn go_file(name: &BusName) -> std::path::PathBuf {
    name.path().with_extension("go")
}

/// Client entry `entry`'s count of late responses, read from the file.
fn late_count(name: &BusName, entry: u32) -> u64 {
    use shmbus::internals::wire::service::{ServiceGeometry, client, control};
    let page = common::read_u32_at(name.path(), 16) as u64;
    let control_at = common::read_u64_at(name.path(), 24);
    let clients = common::read_u64_at(name.path(), 48) as u32;
    let slots = common::read_u32_at(name.path(), 616);
    let servers = common::read_u32_at(name.path(), 620);
    let geo = ServiceGeometry::new(clients, slots, servers, 8, 8).unwrap();
    let _ = (page, control::SERVERS);
    let at = control_at + geo.clients_at() as u64 + u64::from(entry) * client::BYTES as u64;
    common::read_u64_at(name.path(), at + client::LATE as u64)
}
