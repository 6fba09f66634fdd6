use std::time::Duration;

use crate::{Publisher, Received, Start, WaitStrategy};

/// The tests count the process's registrations: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
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
    let _serial = serial();
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
    let _serial = serial();
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
