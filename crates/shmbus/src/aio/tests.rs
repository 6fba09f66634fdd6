use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Wake, Waker};
use std::time::{Duration, Instant};

use crate::{Publisher, Received, Start, Wait, WaitStrategy};

/// The tests that count registrations (one count per process) run one at
/// a time.
fn counting() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Counts its wakes.
#[derive(Default)]
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn woken(count: &Count, times: usize) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while count.0.load(Ordering::SeqCst) < times {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime")
}

#[test]
#[cfg_attr(miri, ignore = "the waiter thread sleeps in futex_waitv")]
fn a_timed_out_receive_loses_no_message_and_leaves_no_registration() {
    let _one = counting();
    current_thread().block_on(async {
        let mut publisher = Publisher::<u64, _>::on_heap(8).expect("heap bus");
        let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
        for i in 0..3u64 {
            let early =
                tokio::time::timeout(Duration::from_millis(2), subscriber.recv_async()).await;
            assert!(early.is_err(), "nothing was published yet");
            publisher.publish(&i);
            assert_eq!(subscriber.recv_async().await, Received::Message(i));
        }
        assert_eq!(super::registrations(), 0);
    });
}

#[test]
#[cfg_attr(miri, ignore = "the waiter thread sleeps in futex_waitv")]
fn a_many_publishers_async_publish_dropped_while_it_waits_for_room_claimed_nothing() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};
    let _one = counting();
    let mut publisher =
        crate::bus::ManyPublisher::<u64, _>::on_heap(2, Duration::from_secs(1)).expect("heap bus");
    let mut lossless = publisher
        .subscribe_lossless(Start::Next, WaitStrategy::default())
        .expect("lossless");
    let mut cx = Context::from_waker(Waker::noop());
    for i in 0..2u64 {
        let mut fut = std::pin::pin!(publisher.publish_async(&i));
        assert_eq!(fut.as_mut().poll(&mut cx), Poll::Ready(Ok(i)));
    }
    {
        // Both slots unread: it waits, registered with the waiter.
        let mut fut = std::pin::pin!(publisher.publish_async(&99));
        assert!(fut.as_mut().poll(&mut cx).is_pending());
        assert_eq!(super::registrations(), 1);
    }
    assert_eq!(
        super::registrations(),
        0,
        "the dropped future's registration"
    );
    assert_eq!(
        lossless.recv(crate::Wait::Never),
        Some(Received::Message(0))
    );
    current_thread().block_on(async {
        assert_eq!(
            publisher.publish_async(&2).await,
            Ok(2),
            "nothing was claimed"
        );
    });
    assert_eq!(
        lossless.recv(crate::Wait::Never),
        Some(Received::Message(1))
    );
    assert_eq!(
        lossless.recv(crate::Wait::Never),
        Some(Received::Message(2))
    );
}

#[test]
#[cfg_attr(miri, ignore = "the waiter thread sleeps in futex_waitv")]
fn an_armed_wake_up_wakes_once_when_a_message_comes_and_its_drop_leaves_no_registration() {
    let _one = counting();
    let mut publisher = Publisher::<u64, _>::on_heap(8).expect("heap bus");
    let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
    let count = Arc::new(Count::default());
    let waker = Waker::from(count.clone());

    // Armed on an empty bus: registered, not woken.
    let armed = super::arm(&subscriber, &waker).expect("nothing to read: armed");
    assert!(armed.is_waiting());
    assert_eq!(super::registrations(), 1);
    // Dropped unwoken: the registration goes with it.
    drop(armed);
    assert_eq!(super::registrations(), 0);

    let armed = super::arm(&subscriber, &waker).expect("still nothing to read");
    publisher.publish(&7);
    assert!(woken(&count, 1), "the publish woke the armed waker");
    assert!(
        !armed.is_waiting(),
        "the waiter removed the woken registration"
    );
    drop(armed);
    assert_eq!(count.0.load(Ordering::SeqCst), 1, "woken once");
    assert_eq!(subscriber.recv(Wait::Never), Some(Received::Message(7)));

    // Readable already: nothing armed.
    publisher.publish(&8);
    assert!(super::arm(&subscriber, &waker).is_none());
    assert_eq!(super::registrations(), 0);

    // After a miss: armed without a look, woken by its nap (1 ms).
    let armed = super::arm_after_miss(&subscriber, &waker).expect("armed after a miss");
    assert!(woken(&count, 2), "the nap after a miss ended the wait");
    drop(armed);
    assert_eq!(super::registrations(), 0);
}
