//! The journal's performance targets, side by side in one run,
//! rounds interleaved:
//! - publish cost per message, journaled vs ring-only (targets: mean at
//!   most 2x, p50 at most 1.5x), once with the journal growing as it goes
//!   (the default) and once with the whole run's file preallocated
//!   (`journal::Options::preallocate_bytes`), which keeps the kernel's
//!   page-cache allocation off the measured rounds;
//!   wall clock, and the publishing thread's own CPU time, page faults and
//!   waits from `getrusage`, which a preemption by another process (a busy
//!   machine) leaves out and the kernel's work on the hot path (growth,
//!   faults) does not;
//! - bootstrap of N keyed records: a joiner reading the journal vs a plain
//!   sequential `read` of the same file (target: at least half its speed).
//!
//! `cargo run --release -p shmbus --example journal_bench -- [records] [dir]`
//! (default 10 000 000 records, journal in the system temp dir).

use std::io::Read;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use shmbus::{
    BusOptions, Publisher, Received,
    journal::{self, JoinOptions, Keyed, KeyedState},
};

#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Kv {
    key: u64,
    val: u64,
}

impl shmbus::Message for Kv {
    const NAME: &'static str = "test.Kv";
}

impl Keyed for Kv {
    fn key(&self) -> u64 {
        self.key
    }
}

const BATCH: u64 = 1000;
const ROUNDS: usize = 5;

fn kv(i: u64) -> Kv {
    Kv {
        key: i.wrapping_mul(0x9e37_79b9_7f4a_7c15) % 100_000,
        val: i,
    }
}

/// CPU time (exact, from the scheduler's clocks) and what `getrusage`
/// counts for this thread.
#[derive(Clone, Copy, Default)]
struct Usage {
    /// The thread's CPU time, nanoseconds.
    cpu_ns: i64,
    /// The process's (all threads), nanoseconds.
    all_ns: i64,
    minflt: i64,
    /// Voluntary context switches: the thread waited (a lock, a fault's I/O).
    waits: i64,
    /// Involuntary ones: it was preempted.
    preempted: i64,
}

impl Usage {
    fn now() -> Usage {
        let get = |who| {
            // SAFETY: `getrusage` fills the zeroed struct it is given.
            let mut r: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: as above; RUSAGE_THREAD and RUSAGE_SELF are valid.
            unsafe { libc::getrusage(who, &mut r) };
            r
        };
        let ns = |clock| {
            // SAFETY: `clock_gettime` fills the zeroed struct it is given.
            let mut t: libc::timespec = unsafe { std::mem::zeroed() };
            // SAFETY: as above; both clocks exist on Linux.
            unsafe { libc::clock_gettime(clock, &mut t) };
            t.tv_sec * 1_000_000_000 + t.tv_nsec
        };
        let t = get(libc::RUSAGE_THREAD);
        Usage {
            cpu_ns: ns(libc::CLOCK_THREAD_CPUTIME_ID),
            all_ns: ns(libc::CLOCK_PROCESS_CPUTIME_ID),
            minflt: t.ru_minflt,
            waits: t.ru_nvcsw,
            preempted: t.ru_nivcsw,
        }
    }

    fn add_since(&mut self, start: Usage) {
        let now = Usage::now();
        self.cpu_ns += now.cpu_ns - start.cpu_ns;
        self.all_ns += now.all_ns - start.all_ns;
        self.minflt += now.minflt - start.minflt;
        self.waits += now.waits - start.waits;
        self.preempted += now.preempted - start.preempted;
    }

    fn line(&self, n: u64) -> String {
        format!(
            "cpu {:>6.2} ns/msg (other threads {:>5.2})  faults {:>5}  waits {:>3}  preempted {:>3}",
            self.cpu_ns as f64 / n as f64,
            (self.all_ns - self.cpu_ns) as f64 / n as f64,
            self.minflt,
            self.waits,
            self.preempted
        )
    }
}

fn pct(h: &Histogram<u64>) -> String {
    format!(
        "p50 {:>6.2}  p99 {:>6.2}  p99.9 {:>6.2}  max {:>8.2}",
        h.value_at_quantile(0.5) as f64 / 100.0,
        h.value_at_quantile(0.99) as f64 / 100.0,
        h.value_at_quantile(0.999) as f64 / 100.0,
        h.max() as f64 / 100.0
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u64 = args
        .get(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let dir = args
        .get(2)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let tag = std::process::id();
    let journal = dir.join(format!("shmbus-journal-bench-{tag}"));
    let (ring_name, j_name, pre_name) = (
        format!("shmbus-jbench-ring-{tag}"),
        format!("shmbus-jbench-journal-{tag}"),
        format!("shmbus-jbench-pre-{tag}"),
    );
    let pre_journal = dir.join(format!("shmbus-journal-bench-pre-{tag}"));
    println!(
        "journal bench: {n} records of 16 B (32 B journal records), journal in {}, {} CPUs",
        dir.display(),
        std::thread::available_parallelism().map_or(0, |p| p.get())
    );
    let opts = BusOptions::new(4096).prefault(true);
    let mut ring = Publisher::<Kv>::create(&ring_name, &opts).expect("ring bus");
    let mut jp = journal::Publisher::<Kv>::create(&j_name, &opts, &journal::Options::new(&journal))
        .expect("journaled bus");
    let t = Instant::now();
    let pre_bytes = n as usize * 32 + (1 << 20);
    let mut pp = journal::Publisher::<Kv>::create(
        &pre_name,
        &opts,
        &journal::Options::new(&pre_journal).preallocate_bytes(pre_bytes),
    )
    .expect("preallocated journaled bus");
    let pre_time = t.elapsed();
    // Publish cost: ns per message over batches of 1000, in hundredths.
    // Sides: 0 ring only, 1 journaled (growing), 2 journaled (preallocated).
    let mut h = [(); 3].map(|_| Histogram::<u64>::new(3).expect("histogram"));
    let per_round = n / ROUNDS as u64;
    let mut seq = [0u64; 3];
    let mut t_side = [Duration::ZERO; 3];
    let mut u_side = [Usage::default(); 3];
    for round in 0..ROUNDS {
        for k in 0..3 {
            let side = (k + round) % 3;
            let usage = Usage::now();
            let start = Instant::now();
            for _ in 0..per_round / BATCH {
                let t = Instant::now();
                let s = &mut seq[side];
                match side {
                    0 => {
                        for _ in 0..BATCH {
                            ring.publish(&kv(*s));
                            *s += 1;
                        }
                    }
                    1 => {
                        for _ in 0..BATCH {
                            jp.publish(&kv(*s)).expect("journal publish");
                            *s += 1;
                        }
                    }
                    _ => {
                        for _ in 0..BATCH {
                            pp.publish(&kv(*s)).expect("journal publish");
                            *s += 1;
                        }
                    }
                }
                let ns100 = t.elapsed().as_nanos() as u64 * 100 / BATCH;
                h[side].record(ns100.max(1)).expect("record");
            }
            t_side[side] += start.elapsed();
            u_side[side].add_since(usage);
        }
    }
    let names = ["ring only  ", "journaled  ", "preallocated"];
    println!(
        "\npublish cost, ns per message (batches of {BATCH}, {ROUNDS} interleaved rounds; preallocating {} MB took {:.0} ms)",
        pre_bytes >> 20,
        pre_time.as_secs_f64() * 1e3
    );
    let mean = |i: usize| t_side[i].as_nanos() as f64 / seq[i] as f64;
    for i in 0..3 {
        println!("  {} {}  mean {:.2}", names[i], pct(&h[i]), mean(i));
    }
    for i in 0..3 {
        println!("  {} {}", names[i], u_side[i].line(seq[i]));
    }
    let verdict = |r: f64, at_most: f64| if r <= at_most { "met" } else { "MISSED" };
    for i in 1..3 {
        let ratio = h[i].value_at_quantile(0.5) as f64 / h[0].value_at_quantile(0.5) as f64;
        let mean_ratio = mean(i) / mean(0);
        println!(
            "  {} / ring-only: p50 {ratio:.2}x (target <= 1.5x: {}), mean {mean_ratio:.2}x (target <= 2x: {})",
            names[i].trim_end(),
            verdict(ratio, 1.5),
            verdict(mean_ratio, 2.0)
        );
    }
    let seq_j = seq[1];
    drop(pp);
    let _ = shmbus::remove(&pre_name);
    let _ = std::fs::remove_file(&pre_journal);
    jp.flush().expect("flush");

    // Bootstrap: the joiner against a plain read of the same file.
    let bytes = std::fs::metadata(&journal).map_or(0, |m| m.len());
    println!(
        "\nbootstrap of {seq_j} records ({} MB file incl. preallocation), {ROUNDS} interleaved rounds",
        bytes >> 20
    );
    let mut plain = Vec::new();
    let mut joined = Vec::new();
    let mut folded = Vec::new();
    for round in 0..ROUNDS {
        for side in 0..3 {
            match (side + round) % 3 {
                0 => {
                    let t = Instant::now();
                    let mut f = std::fs::File::open(&journal).expect("open");
                    let mut buf = vec![0u8; 1 << 20];
                    let (mut total, mut sum) = (0usize, 0u64);
                    loop {
                        let k = f.read(&mut buf).expect("read");
                        if k == 0 {
                            break;
                        }
                        sum = sum.wrapping_add(u64::from(buf[k - 1]));
                        total += k;
                        if total as u64 >= 64 + seq_j * 32 {
                            break;
                        }
                    }
                    std::hint::black_box(sum);
                    plain.push(t.elapsed());
                }
                side => {
                    let t = Instant::now();
                    let mut sub = journal::Subscriber::<Kv>::join(&j_name, &JoinOptions::default())
                        .expect("join");
                    let mut state = KeyedState::new();
                    let mut sum = 0u64;
                    while sub.position() < seq_j {
                        sub.drain_ready(|r| match r {
                            Received::Message(e) => {
                                if side == 2 {
                                    state.apply(e.seq, e.msg);
                                } else {
                                    sum = sum.wrapping_add(e.msg.val);
                                }
                            }
                            Received::Lagged { skipped } => panic!("lagged {skipped}"),
                        });
                    }
                    std::hint::black_box((sum, state.len()));
                    if side == 1 {
                        joined.push(t.elapsed())
                    } else {
                        folded.push(t.elapsed())
                    }
                }
            }
        }
    }
    let rate = |v: &[Duration]| {
        let mut s: Vec<f64> = v
            .iter()
            .map(|d| seq_j as f64 / d.as_secs_f64() / 1e6)
            .collect();
        s.sort_by(|a, b| a.total_cmp(b));
        (s[s.len() / 2], s[0], s[s.len() - 1])
    };
    let (p, pmin, pmax) = rate(&plain);
    let (j, jmin, jmax) = rate(&joined);
    let (f, fmin, fmax) = rate(&folded);
    println!(
        "  plain read()            median {p:>7.1} M records/s ({:.2} GB/s)  min {pmin:.1}  max {pmax:.1}",
        p * 32.0 / 1e3
    );
    println!("  join + read journal     median {j:>7.1} M records/s  min {jmin:.1}  max {jmax:.1}");
    println!("  join + fold into state  median {f:>7.1} M records/s  min {fmin:.1}  max {fmax:.1}");
    println!(
        "  journal / plain read: {:.2}x (target >= 0.5x: {}); folded into a HashMap state: {:.2}x",
        j / p,
        if j / p >= 0.5 { "met" } else { "MISSED" },
        f / p
    );
    drop(jp);
    drop(ring);
    let _ = shmbus::remove(&ring_name);
    let _ = shmbus::remove(&j_name);
    let _ = std::fs::remove_file(&journal);
}
