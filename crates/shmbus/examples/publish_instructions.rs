//! Publishes `N` (first argument, default 1 000 000) u64 messages on a
//! 1024-slot heap bus with no subscriber: a lossy publish, for counting
//! instructions per message under callgrind (run it with two `N` and take
//! the difference, which cancels the start-up):
//! `valgrind --tool=callgrind target/release/examples/publish_instructions 1000000`.

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let mut publisher = shmbus::Publisher::<u64, _>::on_heap(1024).expect("heap bus");
    for i in 0..n {
        publisher.publish(std::hint::black_box(&i));
    }
    std::hint::black_box(publisher.next_sequence());
}
