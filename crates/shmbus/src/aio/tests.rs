use std::time::Duration;

use crate::{Publisher, Received, Start, WaitStrategy};

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime")
}

#[test]
#[cfg_attr(miri, ignore = "the waiter thread sleeps in futex_waitv")]
fn a_timed_out_receive_loses_no_message_and_leaves_no_registration() {
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
