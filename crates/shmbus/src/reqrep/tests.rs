//! The service on the heap, between threads: every outcome, pipelining,
//! fairness, and hostile bytes. Across processes: `tests/reqrep.rs`.

use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::mem::HeapRegion;
use crate::wait::Wait;
use crate::wire::service::{client as cl, state};

type HeapServer<Req = u64, Resp = u64> = Server<Req, Resp, Arc<HeapRegion>>;
type HeapClient<Req = u64, Resp = u64> = Client<Req, Resp, Arc<HeapRegion>>;

fn service(opts: &Options) -> (HeapServer, HeapClient) {
    on_heap::<u64, u64>(opts).expect("geometry")
}

/// Client entry `entry` of `server`'s service.
fn client_at(server: &HeapServer, entry: u32) -> HeapClient {
    Client::from_service(
        server.service.share(),
        entry,
        crate::WaitStrategy::default(),
    )
}

/// Server entry `entry` of `server`'s service.
fn server_at(server: &HeapServer, entry: u32) -> HeapServer {
    Server::from_service(
        server.service.share(),
        entry,
        crate::WaitStrategy::default(),
    )
}

#[test]
fn a_call_gets_its_response() {
    let (server, mut client) = service(&Options::new(1));
    let call = client.send(&6, Wait::Never).unwrap();
    let r = server.recv(Wait::Never).expect("a request");
    assert_eq!(r.get(), 6);
    r.respond(&36).unwrap();
    assert_eq!(client.wait(call, Wait::Never), Ok(36));
    assert_eq!(client.outstanding(), 0);
}

#[test]
fn responses_are_matched_to_their_requests_whatever_order_they_come_in() {
    let (server, mut client) = service(&Options::new(1).slots(8));
    let calls: Vec<_> = (0..8u64)
        .map(|i| client.send(&i, Wait::Never).expect("a free slot"))
        .collect();
    // One server holds all eight, and answers them last first.
    let mut held: Vec<_> = std::iter::from_fn(|| server.recv(Wait::Never)).collect();
    assert_eq!(held.len(), 8);
    while let Some(r) = held.pop() {
        let n = r.get();
        r.respond(&(n * 100)).unwrap();
    }
    for (i, call) in calls.into_iter().enumerate() {
        assert_eq!(client.wait(call, Wait::Never), Ok(i as u64 * 100));
    }
}

#[test]
fn a_request_is_taken_by_exactly_one_of_several_servers() {
    let (first, mut client) = service(&Options::new(1).slots(64).servers(3));
    let second = server_at(&first, 1);
    let third = server_at(&first, 2);
    let calls: Vec<_> = (0..64u64)
        .map(|i| client.send(&i, Wait::Never).unwrap())
        .collect();
    let mut seen = vec![0u32; 64];
    std::thread::scope(|scope| {
        let mut takers = Vec::new();
        for server in [first, second, third] {
            takers.push(scope.spawn(move || {
                let mut got = Vec::new();
                while let Some(r) = server.recv(Wait::For(Duration::from_millis(50))) {
                    let n = r.get();
                    got.push(n);
                    r.respond(&n).unwrap();
                }
                got
            }));
        }
        for t in takers {
            for n in t.join().unwrap() {
                seen[n as usize] += 1;
            }
        }
    });
    assert!(seen.iter().all(|&n| n == 1), "each taken once: {seen:?}");
    for (i, call) in calls.into_iter().enumerate() {
        assert_eq!(client.wait(call, Wait::Never), Ok(i as u64));
    }
}

#[test]
fn a_deadline_passed_is_timed_out_and_the_late_response_is_dropped_and_counted_never_delivered_to_the_next_call()
 {
    let (server, mut client) = service(&Options::new(1).slots(1));
    let call = client.send(&1, Wait::Never).unwrap();
    let late = server.recv(Wait::Never).expect("taken");
    assert_eq!(
        client.wait(call, Wait::For(Duration::from_millis(1))),
        Err(CallError::TimedOut)
    );
    // The only slot is the server's until it answers.
    assert_eq!(
        client.send(&2, Wait::Never),
        Err(SendError::Full { outstanding: 1 })
    );
    assert_eq!(late.respond(&111), Err(RespondError::Late));
    let count = |f| {
        client
            .service
            .client_count(0, f)
            .load(crate::sync::Ordering::Relaxed)
    };
    assert_eq!((count(cl::LATE), count(cl::TIMEOUTS)), (1, 1));
    // The slot came back: the next call gets its own answer, not 111.
    let call = client.send(&2, Wait::Never).unwrap();
    let r = server.recv(Wait::Never).unwrap();
    assert_eq!(r.get(), 2);
    r.respond(&222).unwrap();
    assert_eq!(client.wait(call, Wait::Never), Ok(222));
}

#[test]
fn a_deadline_passed_before_any_server_took_it_withdraws_the_request() {
    let (server, mut client) = service(&Options::new(1));
    let call = client.send(&1, Wait::Never).unwrap();
    assert_eq!(client.wait(call, Wait::Never), Err(CallError::TimedOut));
    assert!(server.recv(Wait::Never).is_none(), "withdrawn");
    assert_eq!(client.outstanding(), 0);
}

#[test]
fn a_full_client_says_so_when_asked_not_to_wait_and_a_slot_answered_frees_it() {
    let (server, mut client) = service(&Options::new(1).slots(2));
    let a = client.send(&1, Wait::Never).unwrap();
    let _b = client.send(&2, Wait::Never).unwrap();
    assert_eq!(
        client.send(&3, Wait::Never),
        Err(SendError::Full { outstanding: 2 })
    );
    let r = server.recv(Wait::Never).unwrap();
    r.respond(&10).unwrap();
    assert_eq!(client.wait(a, Wait::Never), Ok(10));
    assert!(client.send(&3, Wait::Never).is_ok());
}

#[test]
fn a_request_dropped_unanswered_is_refused_to_its_caller() {
    let (server, mut client) = service(&Options::new(1));
    let call = client.send(&1, Wait::Never).unwrap();
    drop(server.recv(Wait::Never).unwrap());
    assert!(matches!(
        client.wait(call, Wait::Never),
        Err(CallError::Refused { .. })
    ));
    assert_eq!(client.outstanding(), 0);
}

#[test]
fn a_call_given_to_another_client_is_unknown_to_it() {
    let (server, mut client) = service(&Options::new(2));
    let mut other = client_at(&server, 1);
    let call = client.send(&1, Wait::Never).unwrap();
    assert_eq!(other.wait(call, Wait::Never), Err(CallError::UnknownCall));
}

#[test]
fn four_clients_calling_flat_out_each_get_every_answer_right() {
    const CALLS: u64 = if cfg!(miri) { 20 } else { 20_000 };
    let (server, first) = service(&Options::new(4).slots(4));
    let clients: Vec<_> = std::iter::once(first)
        .chain((1..4).map(|e| client_at(&server, e)))
        .collect();
    let served = std::thread::scope(|scope| {
        let callers: Vec<_> = clients
            .into_iter()
            .enumerate()
            .map(|(id, mut client)| {
                scope.spawn(move || {
                    for i in 0..CALLS {
                        let n = (id as u64) << 32 | i;
                        assert_eq!(client.call(&n, Wait::Forever), Ok(n + 1));
                    }
                })
            })
            .collect();
        let mut served = [0u64; 4];
        for _ in 0..4 * CALLS {
            let r = server.recv(Wait::Forever).expect("waits forever");
            served[r.client() as usize] += 1;
            let n = r.get();
            r.respond(&(n + 1)).unwrap();
        }
        for c in callers {
            c.join().unwrap();
        }
        served
    });
    assert_eq!(served, [CALLS; 4]);
}

#[test]
fn a_hostile_request_length_is_refused_and_a_hostile_response_length_is_a_typed_error() {
    let (server, mut client) = service(&Options::new(1));
    let call = client.send(&1, Wait::Never).unwrap();
    client
        .service
        .request_len(0, call.slot())
        .store(9, crate::sync::Ordering::Relaxed);
    assert!(server.recv(Wait::Never).is_none(), "refused, not served");
    assert!(matches!(
        client.wait(call, Wait::Never),
        Err(CallError::Refused { .. })
    ));
    let call = client.send(&1, Wait::Never).unwrap();
    let r = server.recv(Wait::Never).unwrap();
    let slot = call.slot();
    r.respond(&2).unwrap();
    client
        .service
        .response_len(0, slot)
        .store(3, crate::sync::Ordering::Relaxed);
    assert_eq!(
        client.wait(call, Wait::Never),
        Err(CallError::BadResponse {
            len: 3,
            expected: 8
        })
    );
    // Garbage in the summary and posted words finds nothing and hangs
    // nothing.
    client
        .service
        .posted(0)
        .store(u64::MAX, crate::sync::Ordering::Relaxed);
    assert!(server.recv(Wait::Never).is_none());
}

#[test]
fn a_client_taking_over_a_dead_ones_entry_drops_and_counts_its_answers_and_withdraws_its_requests()
{
    let (server, mut client) = service(&Options::new(1).slots(3));
    let _answered = client.send(&1, Wait::Never).unwrap();
    let _taken = client.send(&2, Wait::Never).unwrap();
    let r = server.recv(Wait::Never).unwrap();
    r.respond(&10).unwrap();
    let held = server.recv(Wait::Never).unwrap();
    let _posted = client.send(&3, Wait::Never).unwrap();
    // Dies without a word: its calls stay as they are.
    client.die();
    let heir = client_at(&server, 0);
    let count = |f| {
        heir.service
            .client_count(0, f)
            .load(crate::sync::Ordering::Relaxed)
    };
    assert_eq!(count(cl::LATE), 1, "the answer nobody read");
    assert!(
        server.recv(Wait::Never).is_none(),
        "the untaken request withdrawn"
    );
    assert_eq!(heir.outstanding(), 1, "the call a live server holds");
    assert_eq!(held.respond(&20), Err(RespondError::Late));
    assert_eq!(count(cl::LATE), 2);
    let st = heir
        .service
        .state(0, 1)
        .load(crate::sync::Ordering::Relaxed);
    assert_eq!(state::phase(st), state::FREE, "given back");
}

#[test]
fn raw_bytes_of_any_length_up_to_the_largest_go_both_ways_in_place() {
    let opts = Options::new(1).request_size(100).response_size(300);
    let (server, mut client) = on_heap::<[u8], [u8]>(&opts).unwrap();
    for len in [0usize, 1, 7, 8, 99, 100] {
        let req: Vec<u8> = (0..len as u8).collect();
        let call = client.send(&req, Wait::Never).unwrap();
        let r = server.recv(Wait::Never).unwrap();
        #[cfg(not(loom))]
        assert_eq!(r.bytes(), &req[..]);
        let resp = vec![len as u8; 3 * len];
        r.respond(&resp).unwrap();
        let mut out = Vec::new();
        client.wait_into(call, &mut out, Wait::Never).unwrap();
        assert_eq!(out, resp);
    }
    assert_eq!(
        client.send(&[0; 101], Wait::Never),
        Err(SendError::TooLong { len: 101, max: 100 })
    );
    let call = client.send(b"x", Wait::Never).unwrap();
    let r = server.recv(Wait::Never).unwrap();
    assert_eq!(
        r.respond(&[0; 301]).err(),
        Some(RespondError::TooLong { len: 301, max: 300 })
    );
    let _ = call;
}

#[test]
fn a_server_is_a_select_member_so_one_thread_serves_several_services() {
    let (a, mut alice) = service(&Options::new(1));
    let (b, mut bob) = service(&Options::new(1));
    let mut select = crate::select::Select::new();
    assert_eq!(select.ready(&[&a, &b], Wait::Never), None);
    let call = bob.send(&2, Wait::Never).unwrap();
    assert_eq!(select.ready(&[&a, &b], Wait::Forever), Some(1));
    let r = b.recv(Wait::Never).expect("ready said so");
    r.respond(&20).unwrap();
    assert_eq!(bob.wait(call, Wait::Never), Ok(20));
    let call = alice.send(&1, Wait::Never).unwrap();
    assert_eq!(select.ready(&[&a, &b], Wait::Forever), Some(0));
    a.recv(Wait::Never).unwrap().respond(&10).unwrap();
    assert_eq!(alice.wait(call, Wait::Never), Ok(10));
}

#[test]
#[cfg_attr(miri, ignore)] // tokio's timer under Miri: slow, and no new protocol
fn an_async_call_is_answered_by_an_async_server_and_a_dropped_one_is_given_up() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let (server, mut client) = service(&Options::new(1).slots(1));
    rt.block_on(async {
        let serving = async {
            for _ in 0..3 {
                let r = server.recv_async().await;
                let n = r.get();
                r.respond(&(n * 2)).unwrap();
            }
        };
        let calling = async {
            for n in 1..=3u64 {
                assert_eq!(client.call_async(&n).await, Ok(n * 2));
            }
        };
        tokio::join!(serving, calling);
        // No server looks now: the future is dropped at its timeout, and
        // the call with it, so the one slot is free again.
        let early = tokio::time::timeout(Duration::from_millis(5), client.call_async(&9)).await;
        assert!(early.is_err());
        assert_eq!(client.outstanding(), 0);
        assert!(server.recv(Wait::Never).is_none(), "withdrawn");
    });
}
