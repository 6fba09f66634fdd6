//! loom models of request-response: the real `Server` and `Client` over
//! the heap, through the `sync` facade. A request is taken by one server
//! of two, whole; its answer and the caller's give-up exclude each other
//! (exactly one outcome, the slot given back either way); and neither
//! doorbell loses a wake-up (a client asleep on its answer, a server
//! asleep on the work bell). Run with `ci/loom.sh`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering as Std};
use std::time::Duration;

use loom::thread;

use crate::loom::bus::model;
// The sleep models' coverage count and the waker's delays, as the
// stream's models use them.
use crate::loom::stream::{Coverage, DELAYS, pause};
use crate::mem::HeapRegion;
use crate::reqrep::{CallError, Client, Options, RespondError, Server, on_heap};
use crate::wait::{Wait, WaitStrategy};

/// A request and a response of two words, equal when whole.
type Pair = [u64; 2];

type HeapServer = Server<Pair, Pair, Arc<HeapRegion>>;
type HeapClient = Client<Pair, Pair, Arc<HeapRegion>>;

/// Spins no time: sleeps on the futex as soon as the backoff first reads
/// the clock.
const SLEEPY: WaitStrategy = WaitStrategy::SpinFutex {
    spin: Duration::ZERO,
};

fn service(servers: u32, wait: WaitStrategy) -> (HeapServer, HeapClient) {
    let opts = Options::new(1)
        .slots(1)
        .servers(servers)
        .wait_strategy(wait);
    on_heap::<Pair, Pair>(&opts).expect("geometry")
}

/// Another server entry of the same service.
fn second(server: &HeapServer) -> HeapServer {
    Server::from_service(server.service.share(), 1, WaitStrategy::BusySpin)
}

#[test]
fn loom_a_request_is_taken_whole_by_exactly_one_of_two_servers_and_answered_whole() {
    model(|| {
        let (first, mut client) = service(2, WaitStrategy::BusySpin);
        let other = second(&first);
        let call = client.send(&[7, 7], Wait::Never).expect("a free slot");
        let took = Arc::new(AtomicUsize::new(0));
        let servers: Vec<_> = [first, other]
            .into_iter()
            .map(|server| {
                let took = Arc::clone(&took);
                thread::spawn(move || {
                    if let Some(r) = server.recv(Wait::Never) {
                        let [a, b] = r.get();
                        assert_eq!(a, b, "a torn request");
                        took.fetch_add(1, Std::Relaxed);
                        r.respond(&[a + 1, b + 1]).expect("the caller waits");
                    }
                })
            })
            .collect();
        for s in servers {
            s.join().unwrap();
        }
        assert_eq!(took.load(Std::Relaxed), 1, "taken by exactly one");
        assert_eq!(client.wait(call, Wait::Forever), Ok([8, 8]));
    });
}

#[test]
fn loom_an_answer_and_the_callers_give_up_exclude_each_other_and_the_slot_comes_back() {
    model(|| {
        let (server, mut client) = service(1, WaitStrategy::BusySpin);
        let call = client.send(&[1, 1], Wait::Never).expect("a free slot");
        let answering = thread::spawn(move || {
            // `None`: the caller withdrew it before this look.
            let answered = server.recv(Wait::Never).map(|r| r.respond(&[2, 2]));
            (server, answered)
        });
        // A deadline of now: the caller gives up at its first look unless
        // the answer is there.
        let got = client.wait(call, Wait::Never);
        let (server, answered) = answering.join().unwrap();
        match (got, answered) {
            (Ok(resp), Some(Ok(()))) => assert_eq!(resp, [2, 2]),
            (Err(CallError::TimedOut), Some(Err(RespondError::Late)) | None) => {}
            other => panic!("two outcomes that do not agree: {other:?}"),
        }
        // Either way the one slot is the client's again (given back by
        // the late server), and the next call is answered, not the last.
        let call = client
            .send(&[3, 3], Wait::Never)
            .expect("the slot came back");
        let r = server.recv(Wait::Never).expect("posted");
        assert_eq!(r.get(), [3, 3]);
        r.respond(&[4, 4]).unwrap();
        assert_eq!(client.wait(call, Wait::Never), Ok([4, 4]));
    });
}

#[test]
fn loom_a_client_asleep_on_its_answer_is_woken_by_it() {
    static COVERAGE: Coverage = Coverage::new();
    for delay in DELAYS {
        model(move || {
            let (server, mut client) = service(1, SLEEPY);
            let call = client.send(&[5, 5], Wait::Never).expect("a free slot");
            let answering = thread::spawn(move || {
                pause(delay);
                let r = server.recv(Wait::Never).expect("posted before");
                r.respond(&[6, 6]).expect("the caller waits");
            });
            // loom's futex never times out: a lost wake-up is a deadlock.
            assert_eq!(client.wait(call, Wait::Forever), Ok([6, 6]));
            answering.join().unwrap();
            let bell = client
                .service
                .client_bell(0)
                .load(crate::sync::Ordering::SeqCst);
            COVERAGE.count(bell);
        });
    }
    COVERAGE.assert_covered("client");
}

#[test]
fn loom_a_server_asleep_on_the_work_bell_is_woken_by_a_post() {
    static COVERAGE: Coverage = Coverage::new();
    for delay in DELAYS {
        model(move || {
            let (server, mut client) = service(1, SLEEPY);
            let bells = server.service.share();
            let serving = thread::spawn(move || {
                let r = server.recv(Wait::Forever).expect("waits forever");
                let [a, b] = r.get();
                r.respond(&[a * 2, b * 2]).expect("the caller waits");
            });
            pause(delay);
            client.set_wait_strategy(WaitStrategy::BusySpin);
            assert_eq!(client.call(&[3, 3], Wait::Forever), Ok([6, 6]));
            serving.join().unwrap();
            COVERAGE.count(bells.work_bell().load(crate::sync::Ordering::SeqCst));
        });
    }
    COVERAGE.assert_covered("server");
}

/// A server about to sleep clears the summary bit of a client with
/// nothing posted while that client posts its next call: the post stays
/// findable (the server's look after its clear sees it and sets the bit
/// back, or the client's summary load sees the clear and sets it), so a
/// take after both finds the request.
#[test]
fn loom_a_post_racing_a_servers_summary_clear_is_never_lost() {
    model(|| {
        let (server, mut client) = service(1, WaitStrategy::BusySpin);
        // One call first, on one thread: the client's summary bit is set
        // and nothing is posted.
        let call = client.send(&[1, 1], Wait::Never).expect("a free slot");
        server
            .recv(Wait::Never)
            .expect("posted")
            .respond(&[2, 2])
            .unwrap();
        assert_eq!(client.wait(call, Wait::Never), Ok([2, 2]));
        let cleaning = thread::spawn(move || {
            server.service.clean_summary();
            server
        });
        let call = client.send(&[5, 5], Wait::Never).expect("a free slot");
        let server = cleaning.join().unwrap();
        let r = server.recv(Wait::Never).expect("the post is findable");
        assert_eq!(r.get(), [5, 5]);
        r.respond(&[6, 6]).unwrap();
        assert_eq!(client.wait(call, Wait::Never), Ok([6, 6]));
    });
}
