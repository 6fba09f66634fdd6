//! A 64 B call through shmbus's request-response service beside the same
//! round trip over two buses, for `perf record` and callgrind: the
//! measured causes of the request-response rows' figures
//! (docs/bench-notes/BENCHMARKS-reqrep.md).
//!
//! `reqrep_path heap reqrep|2bus CALLS`: one thread plays both sides on
//! the heap (callgrind: instructions per call are the difference of two
//! runs' totals over the difference of their calls).
//! `reqrep_path work SIZE CALLS`: what the rows' sides do with the bytes
//! of one call, on one core with no transfer: the request copied in and
//! read in full, the response the same (ns per call).
//! `reqrep_path procs reqrep|2bus CALLS`: the server in a child process
//! pinned to CPU 1, the client here on CPU 0, both spinning; prints ns
//! per call (for `perf record -e cpu-clock`).

use std::hint::black_box;
use std::time::Instant;

use shmbus::{OpenOptions, Publisher, Received, Start, Subscriber, Wait, WaitStrategy, reqrep};

const SIZE: usize = 64;

fn sum(b: &[u8]) -> u64 {
    b.iter().map(|&x| u64::from(x)).sum()
}

fn pin(cpu: usize) {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set).expect("pin");
}

fn opts() -> reqrep::Options {
    reqrep::Options::new(1)
        .slots(1)
        .servers(1)
        .request_size(SIZE as u32)
        .response_size(SIZE as u32)
        .wait_strategy(WaitStrategy::BusySpin)
}

fn heap(kind: &str, calls: u64) {
    let req = [7u8; SIZE];
    if kind == "reqrep" {
        let (server, mut client) =
            shmbus::internals::service_on_heap::<[u8], [u8]>(&opts()).expect("service");
        for i in 0..calls {
            let call = client
                .send_with(SIZE, Wait::Never, |b| b.copy_from_slice(&req))
                .expect("send");
            let r = server.recv(Wait::Never).expect("a request");
            let s = sum(r.bytes());
            r.respond_with(SIZE, |b| b.fill(s as u8)).expect("respond");
            black_box(client.wait_with(call, Wait::Never, sum).expect("answer") + i);
        }
    } else {
        type Heap = std::sync::Arc<shmbus::mem::HeapRegion>;
        let mut ping = Publisher::<[u8], Heap>::on_heap_bytes(SIZE as u32, 64).expect("bus");
        let mut pong = Publisher::<[u8], Heap>::on_heap_bytes(SIZE as u32, 64).expect("bus");
        let mut a = ping.subscribe(Start::Next, WaitStrategy::BusySpin);
        let mut b = pong.subscribe(Start::Next, WaitStrategy::BusySpin);
        let mut resp = [0u8; SIZE];
        for i in 0..calls {
            ping.publish(&req).expect("publish");
            assert!(matches!(a.try_recv(), Some(Received::Message(_))));
            resp.fill(sum(a.message()) as u8);
            pong.publish(&resp).expect("publish");
            assert!(matches!(b.try_recv(), Some(Received::Message(_))));
            black_box(sum(b.message()) + i);
        }
    }
}

fn serve(kind: &str, name: &str, calls: u64) {
    pin(1);
    if kind == "reqrep" {
        let server = reqrep::Server::<[u8], [u8]>::create(name, &opts()).expect("create");
        println!("READY");
        for _ in 0..calls {
            let r = server.recv(Wait::Forever).expect("a request");
            let s = sum(r.bytes());
            r.respond_with(SIZE, |b| b.fill(s as u8)).expect("respond");
        }
    } else {
        let o = shmbus::BusOptions::new(16384)
            .prefault(true)
            .msg_size(SIZE as u32);
        let (req, resp) = (format!("{name}-req"), format!("{name}-resp"));
        Publisher::<[u8]>::create(&req, &o).expect("create");
        let mut tx = Publisher::<[u8]>::create(&resp, &o).expect("create");
        let sub = OpenOptions::default()
            .start(Start::Next)
            .wait_strategy(WaitStrategy::BusySpin);
        let mut rx = Subscriber::<[u8]>::open(&req, &sub).expect("open");
        println!("READY");
        let mut out = [0u8; SIZE];
        for _ in 0..calls {
            while !matches!(rx.try_recv(), Some(Received::Message(_))) {
                std::hint::spin_loop();
            }
            out.fill(sum(rx.message()) as u8);
            tx.publish(&out).expect("publish");
        }
    }
}

fn procs(kind: &str, calls: u64) {
    use std::io::BufRead;
    let name = format!("shmbus-reqrep-path-{}", std::process::id());
    let mut child = std::process::Command::new(std::env::current_exe().expect("exe"))
        .args(["serve", kind, &calls.to_string(), &name])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("piped"))
        .read_line(&mut line)
        .expect("READY");
    pin(0);
    let req = [7u8; SIZE];
    let t = Instant::now();
    if kind == "reqrep" {
        let o = OpenOptions::default().wait_strategy(WaitStrategy::BusySpin);
        let mut client = reqrep::Client::<[u8], [u8]>::attach(&name, &o).expect("attach");
        for i in 0..calls {
            let call = client
                .send_with(SIZE, Wait::Forever, |b| b.copy_from_slice(&req))
                .expect("send");
            black_box(client.wait_with(call, Wait::Forever, sum).expect("answer") + i);
        }
    } else {
        let mut tx = Publisher::<[u8]>::attach(&format!("{name}-req"), &OpenOptions::default())
            .expect("attach");
        let sub = OpenOptions::default()
            .start(Start::Next)
            .wait_strategy(WaitStrategy::BusySpin);
        let mut rx = Subscriber::<[u8]>::open(&format!("{name}-resp"), &sub).expect("open");
        for i in 0..calls {
            tx.publish(&req).expect("publish");
            while !matches!(rx.try_recv(), Some(Received::Message(_))) {
                std::hint::spin_loop();
            }
            black_box(sum(rx.message()) + i);
        }
    }
    let ns = t.elapsed().as_nanos() as f64 / calls as f64;
    child.wait().expect("server");
    for n in [name.clone(), format!("{name}-req"), format!("{name}-resp")] {
        let _ = shmbus::remove(&n);
    }
    println!("{kind}: {ns:.0} ns per call (mean of {calls})");
}

/// The bench's fold: a wrapping sum of 8-byte words, four lanes.
fn fold(b: &[u8]) -> u64 {
    let mut lanes = [0u64; 4];
    for c in b.chunks_exact(32) {
        for (l, w) in lanes.iter_mut().zip(c.chunks_exact(8)) {
            *l = l.wrapping_add(u64::from_le_bytes(w.try_into().expect("8 bytes")));
        }
    }
    lanes.iter().fold(0, |a, &l| a.wrapping_add(l))
}

fn work(size: usize, calls: u64) {
    let template = vec![7u8; size];
    let (mut req, mut resp) = (vec![0u8; size], vec![0u8; size]);
    let t = Instant::now();
    for i in 0..calls {
        req.copy_from_slice(black_box(&template));
        let s = fold(black_box(&req));
        resp.copy_from_slice(black_box(&template));
        black_box(fold(black_box(&resp)).wrapping_add(s) + i);
    }
    let ns = t.elapsed().as_nanos() as f64 / calls as f64;
    println!("work {size} B: {ns:.0} ns per call (mean of {calls})");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let calls = |s: &str| s.parse::<u64>().expect("CALLS");
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["heap", kind, n] => heap(kind, calls(n)),
        ["work", size, n] => work(calls(size) as usize, calls(n)),
        ["procs", kind, n] => procs(kind, calls(n)),
        ["serve", kind, n, name] => serve(kind, name, calls(n)),
        _ => eprintln!("usage: reqrep_path heap|procs reqrep|2bus CALLS, or work SIZE CALLS"),
    }
}
