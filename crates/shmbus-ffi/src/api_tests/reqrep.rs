//! Request-response through the C calls, server and client in this
//! process: a call answered, each outcome's status and code, the
//! options' checks, a response longer than the caller's buffer, a request
//! that outlives its server handle. (A server that dies holding a request
//! is `crates/shmbus-ffi/tests/examples.rs`'s, across processes.)

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use super::{common, last_error};
use crate::error_code::*;
use crate::last_error::*;
use crate::reqrep::*;
use crate::status::*;
use common::Bus;

const MS: i64 = 1_000_000;

fn opts(slots: u32) -> ServiceOpts {
    let mut o = shmbus_service_options_default();
    o.request_size = 64;
    o.response_size = 16;
    o.clients = 2;
    o.slots = slots;
    o
}

/// A server (made with `o`) and a client of the service `bus`.
fn service(bus: &Bus, o: &ServiceOpts) -> (*mut ShmbusServer, *mut ShmbusClient) {
    let (mut server, mut client) = (null_mut(), null_mut());
    // SAFETY: a NUL-terminated name, live options and out-parameters.
    unsafe {
        assert_eq!(
            shmbus_server_create(bus.ptr(), o, &mut server),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        assert_eq!(
            shmbus_client_attach(bus.ptr(), null(), &mut client),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
    }
    (server, client)
}

fn send(client: *mut ShmbusClient, msg: &[u8]) -> (Status, u64) {
    let mut call = 0;
    // SAFETY: a live client; `msg` readable for its length.
    let st = unsafe { shmbus_client_send(client, msg.as_ptr().cast(), msg.len(), &mut call, 0) };
    (st, call)
}

/// `shmbus_client_wait` into a buffer of `cap` bytes: (status, code, bytes).
fn wait(client: *mut ShmbusClient, call: u64, cap: usize, timeout_ns: i64) -> (Status, Vec<u8>) {
    let mut buf = vec![0u8; cap];
    let mut len = cap;
    // SAFETY: a live client; `buf` holds `len` writable bytes.
    let st =
        unsafe { shmbus_client_wait(client, call, buf.as_mut_ptr().cast(), &mut len, timeout_ns) };
    buf.truncate(len.min(cap));
    if st == Status::SHMBUS_TOO_SMALL {
        buf = len.to_le_bytes().to_vec();
    }
    (st, buf)
}

fn recv(server: *mut ShmbusServer) -> *mut ShmbusRequest {
    let mut request = null_mut();
    // SAFETY: a live server and a writable out-parameter.
    let st = unsafe { shmbus_server_recv(server, &mut request, 1000 * MS) };
    assert_eq!(st, Status::SHMBUS_MESSAGE, "{}", last_error());
    request
}

fn respond(request: *mut ShmbusRequest, msg: &[u8]) -> Status {
    // SAFETY: a live request; `msg` readable for its length.
    unsafe { shmbus_request_respond(request, msg.as_ptr().cast(), msg.len()) }
}

#[test]
fn a_c_call_gets_its_response_and_the_server_reads_the_request_in_place() {
    let bus = Bus::new("rr-call");
    let (server, client) = service(&bus, &opts(4));
    // SAFETY: live handles, closed once; out-parameters are live.
    unsafe {
        let (st, call) = send(client, b"ping");
        assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
        let mut answered = true;
        assert_eq!(
            shmbus_client_is_answered(client, call, &mut answered),
            Status::SHMBUS_OK
        );
        assert!(!answered);
        let request = recv(server);
        let (mut data, mut len, mut entry): (*const c_void, usize, u32) = (null(), 0, 99);
        assert_eq!(
            shmbus_request_data(request, &mut data, &mut len, &mut entry),
            Status::SHMBUS_OK
        );
        assert_eq!(std::slice::from_raw_parts(data.cast::<u8>(), len), b"ping");
        assert_eq!(entry, 0);
        assert_eq!(respond(request, b"pong"), Status::SHMBUS_OK);
        assert_eq!(
            shmbus_client_is_answered(client, call, &mut answered),
            Status::SHMBUS_OK
        );
        assert!(answered);
        assert_eq!(
            wait(client, call, 16, 0),
            (Status::SHMBUS_MESSAGE, b"pong".to_vec())
        );
        // Waited for: the id is no call any more.
        let (st, _) = wait(client, call, 16, 0);
        assert_eq!(st, Status::SHMBUS_ERROR);
        assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_INVALID_ARGUMENT);
        let mut n = 9;
        assert_eq!(shmbus_client_outstanding(client, &mut n), Status::SHMBUS_OK);
        assert_eq!(n, 0);
        let mut max = 0;
        assert_eq!(
            shmbus_server_max_response(server, &mut max),
            Status::SHMBUS_OK
        );
        assert_eq!(max, 16);
        assert_eq!(
            shmbus_server_max_request(server, &mut max),
            Status::SHMBUS_OK
        );
        assert_eq!(max, 64);
        shmbus_client_close(client);
        shmbus_server_close(server);
    }
}

#[test]
fn a_refused_a_timed_out_and_an_unserved_call_each_have_their_status_and_code() {
    let bus = Bus::new("rr-outcomes");
    let (server, client) = service(&bus, &opts(4));
    // SAFETY: live handles, closed once.
    unsafe {
        let (_, call) = send(client, b"no");
        shmbus_request_refuse(recv(server));
        let (st, _) = wait(client, call, 16, 1000 * MS);
        assert_eq!(st, Status::SHMBUS_REFUSED, "{}", last_error());
        assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_PEER_GONE);
        assert!(last_error().contains("unanswered"), "{}", last_error());

        // Taken, not answered in time: timed out; the late answer is
        // dropped, and the next call gets its own.
        let (_, call) = send(client, b"slow");
        let request = recv(server);
        let (st, _) = wait(client, call, 16, 5 * MS);
        assert_eq!(st, Status::SHMBUS_TIMED_OUT);
        assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_TIMED_OUT);
        assert_eq!(respond(request, b"late"), Status::SHMBUS_TIMED_OUT);
        assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_TIMED_OUT);
        let (_, call) = send(client, b"next");
        assert_eq!(respond(recv(server), b"own"), Status::SHMBUS_OK);
        assert_eq!(
            wait(client, call, 16, 0),
            (Status::SHMBUS_MESSAGE, b"own".to_vec())
        );

        // No server lives: withdrawn unseen.
        shmbus_server_close(server);
        let (_, call) = send(client, b"anyone?");
        let (st, _) = wait(client, call, 16, 1000 * MS);
        assert_eq!(st, Status::SHMBUS_NO_SERVER, "{}", last_error());
        assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_PEER_GONE);
        shmbus_client_close(client);
    }
}

#[test]
fn a_full_client_a_long_request_and_an_unknown_call_fail_with_their_codes() {
    let bus = Bus::new("rr-full");
    let (server, client) = service(&bus, &opts(1));
    // SAFETY: live handles, closed once.
    unsafe {
        let (st, first) = send(client, b"one");
        assert_eq!(st, Status::SHMBUS_OK);
        let (st, _) = send(client, b"two");
        assert_eq!(st, Status::SHMBUS_FULL);
        assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_FULL);
        assert!(
            last_error().contains("1 calls outstanding"),
            "{}",
            last_error()
        );
        let long = [7u8; 65];
        let mut call = 0;
        assert_eq!(
            shmbus_client_send(client, long.as_ptr().cast(), long.len(), &mut call, 0),
            Status::SHMBUS_ERROR
        );
        assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_TOO_LONG);
        assert_eq!(
            shmbus_client_cancel(client, first + 100),
            Status::SHMBUS_ERROR
        );
        assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_INVALID_ARGUMENT);
        assert_eq!(shmbus_client_cancel(client, first), Status::SHMBUS_OK);
        // Withdrawn before any server took it: its slot is free again.
        let (st, _) = send(client, b"three");
        assert_eq!(st, Status::SHMBUS_OK, "{}", last_error());
        assert_eq!(
            shmbus_client_send(null_mut(), null(), 0, &mut call, 0),
            Status::SHMBUS_ERROR
        );
        assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_INVALID_ARGUMENT);
        shmbus_client_close(client);
        shmbus_server_close(server);
    }
}

#[test]
fn a_response_longer_than_the_buffer_is_too_small_and_kept_for_the_next_wait() {
    let bus = Bus::new("rr-small");
    let (server, client) = service(&bus, &opts(4));
    // SAFETY: live handles, closed once.
    unsafe {
        let (_, call) = send(client, b"q");
        assert_eq!(respond(recv(server), b"0123456789"), Status::SHMBUS_OK);
        let (st, need) = wait(client, call, 4, 1000 * MS);
        assert_eq!(st, Status::SHMBUS_TOO_SMALL);
        assert_eq!(need, 10usize.to_le_bytes());
        assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_TOO_LONG);
        assert_eq!(
            wait(client, call, 10, 0),
            (Status::SHMBUS_MESSAGE, b"0123456789".to_vec())
        );

        // A call's own: its id comes back with the status.
        let serving = {
            let server = server as usize;
            std::thread::spawn(move || {
                let request = recv(server as *mut ShmbusServer);
                assert_eq!(respond(request, b"abcdefgh"), Status::SHMBUS_OK);
            })
        };
        let mut buf = [0u8; 2];
        let (mut len, mut call) = (buf.len(), 0);
        let st = shmbus_client_call(
            client,
            b"x".as_ptr().cast(),
            1,
            buf.as_mut_ptr().cast(),
            &mut len,
            &mut call,
            5000 * MS,
        );
        serving.join().unwrap();
        assert_eq!((st, len), (Status::SHMBUS_TOO_SMALL, 8));
        assert_eq!(
            wait(client, call, 8, 0),
            (Status::SHMBUS_MESSAGE, b"abcdefgh".to_vec())
        );
        shmbus_client_close(client);
        shmbus_server_close(server);
    }
}

#[test]
fn a_response_too_long_leaves_the_request_to_answer_and_it_outlives_its_server_handle() {
    let bus = Bus::new("rr-outlive");
    let (server, client) = service(&bus, &opts(4));
    // SAFETY: live handles, closed once; the request is used after its
    // server's handle is closed, which it keeps alive.
    unsafe {
        let (_, call) = send(client, b"q");
        let request = recv(server);
        shmbus_server_close(server);
        assert_eq!(respond(request, &[1u8; 17]), Status::SHMBUS_ERROR);
        assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_TOO_LONG);
        assert!(last_error().contains("17 bytes"), "{}", last_error());
        assert_eq!(respond(request, b"fits"), Status::SHMBUS_OK);
        assert_eq!(
            wait(client, call, 16, 0),
            (Status::SHMBUS_MESSAGE, b"fits".to_vec())
        );
        assert_eq!(
            shmbus_request_data(null_mut(), null_mut(), null_mut(), null_mut()),
            Status::SHMBUS_ERROR
        );
        shmbus_request_refuse(null_mut());
        shmbus_client_close(client);
    }
}

#[test]
fn service_options_out_of_range_are_refused_naming_the_field_and_nothing_is_made() {
    let bus = Bus::new("rr-options");
    let mut server = null_mut();
    type Spoil = fn(&mut ServiceOpts);
    let cases: [(Spoil, &str); 6] = [
        (|o| o.request_size = 0, "request_size is 0"),
        (|o| o.response_size = 0, "response_size is 0"),
        (|o| o.clients = 257, "clients is 257"),
        (|o| o.slots = 65, "slots is 65"),
        (|o| o.servers = 65, "servers is 65"),
        (|o| o.mode = 0o1777, "mode"),
    ];
    // SAFETY: a NUL-terminated name, live options and out-parameter.
    unsafe {
        for (bad, says) in cases {
            let mut o = opts(4);
            bad(&mut o);
            assert_eq!(
                shmbus_server_create(bus.ptr(), &o, &mut server),
                Status::SHMBUS_ERROR
            );
            assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_INVALID_ARGUMENT);
            assert!(last_error().contains(says), "{says}: {}", last_error());
            assert!(server.is_null());
        }
        assert_eq!(
            shmbus_server_create(bus.ptr(), null(), &mut server),
            Status::SHMBUS_ERROR
        );
        assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_INVALID_ARGUMENT);
        assert!(!std::path::Path::new("/dev/shm").join(&bus.name).exists());
        // The zero fields are the defaults.
        let mut o = shmbus_service_options_default();
        o.request_size = 8;
        o.response_size = 8;
        assert_eq!(
            shmbus_server_create(bus.ptr(), &o, &mut server),
            Status::SHMBUS_OK,
            "{}",
            last_error()
        );
        let mut s2 = null_mut();
        assert_eq!(
            shmbus_server_attach(bus.ptr(), null(), &mut s2),
            Status::SHMBUS_OK
        );
        let mut c = null_mut();
        assert_eq!(
            shmbus_client_attach(c"no-such-service".as_ptr(), null(), &mut c),
            Status::SHMBUS_ERROR
        );
        assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_NOT_FOUND);
        shmbus_server_close(s2);
        shmbus_server_close(server);
    }
}

#[test]
fn a_second_client_of_a_one_client_service_fails_with_the_role_taken_code() {
    let bus = Bus::new("rr-role");
    let mut o = opts(4);
    o.clients = 1;
    let (server, client) = service(&bus, &o);
    let mut other = null_mut();
    // SAFETY: live handles, closed once.
    unsafe {
        assert_eq!(
            shmbus_client_attach(bus.ptr(), null(), &mut other),
            Status::SHMBUS_ERROR
        );
        assert_eq!(shmbus_error_code(), ErrorCode::SHMBUS_E_ROLE_TAKEN);
        assert!(other.is_null());
        shmbus_client_close(client);
        shmbus_server_close(server);
    }
}
