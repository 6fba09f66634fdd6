use shmbus::{CreateOptions, OpenOptions, Publisher, Received, Start, Subscriber};

#[test]
fn heap_and_shm_round_trip() {
    let mut p = Publisher::<u64, _>::on_heap(4).unwrap();
    let mut s = p.subscribe(Start::Oldest, Default::default());
    assert_eq!(s.try_recv(), None);
    for i in 0..6u64 {
        p.publish(&i);
    }
    assert_eq!(s.try_recv(), Some(Received::Lagged { skipped: 2 }));
    for i in 2..6u64 {
        assert_eq!(s.try_recv(), Some(Received::Message(i)));
    }
    assert_eq!(s.try_recv(), None);

    let name = format!("shmbus-smoke-{}", std::process::id());
    let mut p = Publisher::<u64>::create(&name, &CreateOptions::new(8)).unwrap();
    let mut s =
        Subscriber::<u64>::open(&name, &OpenOptions::default().start(Start::Oldest)).unwrap();
    p.publish(&7);
    assert_eq!(s.recv(), Received::Message(7));
    let st = shmbus::stat::stat(&name).unwrap();
    println!("{st:?}");
    assert!(st.publisher_alive);
    assert_eq!(st.subscribers.len(), 1);
    let e = Publisher::<u64>::attach(&name, &OpenOptions::default())
        .err()
        .unwrap();
    println!("{e}");
    shmbus::remove(&name).unwrap();
}
