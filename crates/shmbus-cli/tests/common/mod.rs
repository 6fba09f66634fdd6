//! What the CLI's integration tests share: the harness of `shmbus-testkit`
//! (see its crate docs: every run under a watchdog of [`RUN_DEADLINE`],
//! stderr checked for "panicked", private directories under /dev/shm
//! removed on drop), the `shmbus` binary as a command, the suite's
//! [`wait_for`], and the checks of a run that are about the CLI: its one
//! error line and its JSON.

#![allow(dead_code, unused_imports)]

use std::process::Command;

use serde_json::Value;
pub use shmbus_testkit::{
    BusName, Finished, Need, RUN_DEADLINE, ShmDir, Watched, process_state, run, run_with_input,
    skip, spawn, spawn_head, with_stdout_closed,
};

/// `shmbus ARGS`, stdin /dev/null, stdout and stderr piped.
pub fn shmbus(args: &[&str]) -> Command {
    shmbus_testkit::command(env!("CARGO_BIN_EXE_shmbus"), args)
}

/// Runs `shmbus ARGS` with `input` on stdin to the end.
pub fn run_stdin(args: &[&str], input: &[u8]) -> Finished {
    run_with_input(shmbus(args), input)
}

/// `shmbus pub BUS` with `input` on stdin; fails the test unless it succeeds.
pub fn publish(bus: &str, input: &str) {
    run_stdin(&["pub", bus], input.as_bytes()).assert_success();
}

/// "1\n2\n...\nN\n".
pub fn numbered_lines(range: std::ops::RangeInclusive<u64>) -> String {
    range.map(|i| format!("{i}\n")).collect()
}

/// Waits until `sub` (a `--wait futex` subscriber) has joined `bus` and is
/// asleep on the futex. The library registers a subscriber just before it
/// picks its start position, so registration alone is not enough; asleep
/// after registering, it has picked it, and the next message published is
/// one it will see.
pub fn wait_until_waiting(bus: &str, sub: &Watched) {
    let pid = sub.pid();
    wait_for("the subscriber to register", || {
        shmbus::stat::stat(bus).is_ok_and(|s| s.subscribers.iter().any(|l| l.pid == pid))
    });
    wait_for("the subscriber to sleep", || {
        process_state(pid) == Some('S')
    });
}

/// `shmbus sub BUS --from oldest --count 2`, started on an empty bus of 8
/// slots (or 4: the same re-sync) and stopped (SIGSTOP) while ten messages
/// go by, then let go: it wakes lapped, re-syncs half a ring behind the
/// newest, so it should report 8 skipped and print 9 and 10. Its run.
pub fn lapped_while_stopped(bus: &str) -> Finished {
    let args = [
        "sub",
        bus,
        "--from",
        "oldest",
        "--count",
        "2",
        "--timeout",
        "10",
    ];
    let sub = spawn(shmbus(&args));
    wait_until_waiting(bus, &sub);
    signal(&sub, rustix::process::Signal::STOP);
    wait_for("the subscriber to stop", || {
        process_state(sub.pid()) == Some('T')
    });
    publish(bus, &numbered_lines(1..=10));
    signal(&sub, rustix::process::Signal::CONT);
    sub.wait()
}

/// Sends `sig` to `proc`.
pub fn signal(proc: &Watched, sig: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(proc.pid() as i32).expect("nonzero pid");
    rustix::process::kill_process(pid, sig).expect("kill");
}

/// Runs `shmbus ARGS` with empty stdin to the end.
pub fn run_shmbus(args: &[&str]) -> Finished {
    run(shmbus(args))
}

/// Starts `shmbus ARGS` in the background, stdin /dev/null.
pub fn start(args: &[&str]) -> Watched {
    spawn(shmbus(args))
}

/// Starts `shmbus ARGS` in the background, its stdin a pipe the test
/// holds open (see [`Watched::stdin`], [`Watched::close_stdin`]).
pub fn start_with_stdin(args: &[&str]) -> Watched {
    let mut cmd = shmbus(args);
    cmd.stdin(std::process::Stdio::piped());
    spawn(cmd)
}

/// Polls `done` until it holds; fails the test after [`RUN_DEADLINE`].
pub fn wait_for(what: &str, done: impl FnMut() -> bool) {
    shmbus_testkit::wait_for_within(what, RUN_DEADLINE, &mut [], done);
}

/// What a finished `shmbus` run is checked for, beyond its exit status.
pub trait CliOutput {
    /// stdout, parsed as JSON; fails the test if it is not.
    fn json(&self) -> Value;

    /// Exit `code` and exactly one stderr line, `shmbus: ...`, containing
    /// `needle`.
    fn assert_error(&self, code: i32, needle: &str) -> &Self;

    /// The run ended by its `--timeout`: it took `timeout` or longer, by
    /// at most [`LATE`] (process start and a loaded machine's scheduling),
    /// far below the run's watchdog.
    fn assert_ended_by_timeout(&self, timeout: std::time::Duration) -> &Self;
}

/// How late a run may end past its `--timeout` (see
/// [`CliOutput::assert_ended_by_timeout`]).
pub const LATE: std::time::Duration = std::time::Duration::from_secs(5);

impl CliOutput for Finished {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }

    fn assert_error(&self, code: i32, needle: &str) -> &Self {
        assert_eq!(self.code(), Some(code), "exit code: {self:?}");
        assert!(
            self.stderr.starts_with("shmbus: ") && self.stderr.ends_with('\n'),
            "stderr is not a `shmbus: ` line: {self:?}"
        );
        assert_eq!(self.stderr.lines().count(), 1, "one line: {self:?}");
        assert!(
            self.stderr.contains(needle),
            "stderr lacks {needle:?}: {self:?}"
        );
        self
    }

    fn assert_ended_by_timeout(&self, timeout: std::time::Duration) -> &Self {
        assert!(
            self.took >= timeout && self.took < timeout + LATE,
            "took {:?}, expected its timeout {timeout:?} and at most {LATE:?} more: {self:?}",
            self.took
        );
        self
    }
}

/// A pool bus (`pool`: 4 slots, 8 blocks of 256 bytes) and a plain bus
/// (`plain`: 8 slots of u64, one subscriber of this process) in one
/// directory, every block where the scene put it. On the pool bus: a
/// subscriber of this process that holds the samples of sequences 0 and
/// 1, and a `shmbus sub` that has read all 5 messages and holds nothing.
/// Sequence 0 is overwritten on the ring and held; 1 to 4 are on the ring;
/// 3 blocks were never loaned: census free 3, on_ring 4, held 1, loaned,
/// reclaimable and corrupt 0.
pub struct PoolScene {
    pub dir: ShmDir,
    /// The holder's registry entry.
    pub entry: usize,
    /// The `shmbus sub` that holds nothing.
    pub reader: Watched,
    samples: Vec<shmbus::pool::Sample<[u8]>>,
    holder: shmbus::pool::Subscriber<[u8]>,
    publisher: shmbus::pool::Publisher<[u8]>,
    plain: (shmbus::Publisher<u64>, shmbus::Subscriber<u64>),
}

impl PoolScene {
    pub fn new(label: &str) -> PoolScene {
        use shmbus::{BusOptions, OpenOptions, Received, Start, Wait};
        let dir = ShmDir::new(label);
        let pool = dir.bus("pool");
        let plain = dir.bus("plain");
        let mut publisher =
            shmbus::pool::Publisher::<[u8]>::create(&pool, &shmbus::pool::Options::new(4, 256, 8))
                .expect("create the pool bus");
        let plain = (
            shmbus::Publisher::<u64>::create(&plain, &BusOptions::new(8))
                .expect("create the plain bus"),
            shmbus::Subscriber::<u64>::open(&plain, &OpenOptions::default())
                .expect("open the plain bus"),
        );
        let mut holder = shmbus::pool::Subscriber::<[u8]>::open(
            &pool,
            &OpenOptions::default().start(Start::Oldest),
        )
        .expect("a pool subscriber");
        let reader = spawn(shmbus(&["sub", &pool, "--wait", "futex"]));
        let rpid = reader.pid();
        let line = |s: &shmbus::stat::BusStat, pid: u32| {
            s.subscribers
                .iter()
                .find(|l| l.pid == pid)
                .map(|l| (l.entry, l.position))
        };
        // The reader is asleep and holds nothing once it has read up to
        // `head`. It must read each burst before the next: 5 messages at
        // once would lap it on a ring of 4.
        let read_up_to = |head: u64| {
            wait_for("the reader to read all and drop it", || {
                let Ok(s) = shmbus::stat::stat(&pool) else {
                    return false;
                };
                let Some((entry, position)) = line(&s, rpid) else {
                    return false;
                };
                position == head
                    && s.pool.as_ref().is_some_and(|p| p.held_by(entry) == 0)
                    && process_state(rpid) == Some('S')
            });
        };
        let mut publish = |n: usize| {
            for _ in 0..n {
                publisher
                    .loan(3, Wait::Never)
                    .expect("a free block")
                    .publish()
                    .expect("published");
            }
        };
        read_up_to(0);
        publish(3);
        read_up_to(3);
        let mut samples = Vec::new();
        for _ in 0..2 {
            match holder.recv(Wait::Never) {
                Ok(Some(Received::Message(sample))) => samples.push(sample),
                other => panic!("expected a sample, got {:?}", other.map(|_| ())),
            }
        }
        publish(2);
        read_up_to(5);
        let stat = shmbus::stat::stat(&pool).expect("stat the pool bus");
        let entry = line(&stat, std::process::id())
            .expect("the holder is registered")
            .0;
        PoolScene {
            dir,
            entry,
            reader,
            samples,
            holder,
            publisher,
            plain,
        }
    }

    /// Lets go of everything and checks that nothing is left in /dev/shm.
    pub fn finish(self) {
        drop(self.samples);
        self.reader.kill();
        drop((self.holder, self.publisher, self.plain));
        self.dir.finish();
    }
}

/// A blackboard of `u32` keys and `u64` values (100 keys) made by the
/// test process, keys 1, 2, 3 and 7 put once; then a thread puts key 7
/// without a pause and key 1 once per 100,000 puts of it, until dropped.
/// Both are written between any two of `top`'s samples: only how often
/// tells them apart. Keys 2 and 3 are never written again.
pub struct HotBoard {
    bus: Option<BusName>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl HotBoard {
    pub fn start(label: &str) -> HotBoard {
        use shmbus::blackboard::{self, Writer};
        use std::sync::atomic::{AtomicBool, Ordering};
        let bus = BusName::new(label);
        let mut writer = Writer::<u32, u64>::create(bus.name(), &blackboard::Options::new(100))
            .expect("create the blackboard");
        for k in [1, 2, 3, 7] {
            writer.put(&k, &0).expect("put");
        }
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut i = 0u64;
            while !flag.load(Ordering::Relaxed) {
                for _ in 0..1000 {
                    i += 1;
                    writer.put(&7, &i).expect("put 7");
                }
                if i.is_multiple_of(100_000) {
                    writer.put(&1, &i).expect("put 1");
                }
                // Leaves the CPU to top and the other tests between bursts:
                // on a loaded 2-CPU machine a writer that only yielded kept
                // top from its second sample for 10 s.
                std::thread::sleep(std::time::Duration::from_micros(100));
            }
        });
        HotBoard {
            bus: Some(bus),
            stop,
            thread: Some(thread),
        }
    }

    /// The blackboard's name.
    pub fn name(&self) -> &str {
        self.bus.as_ref().expect("not finished").name()
    }

    /// Stops the writer and removes the blackboard, checking that nothing
    /// of it is left.
    pub fn finish(mut self) {
        self.stop_writer();
        if let Some(bus) = self.bus.take() {
            bus.finish();
        }
    }

    fn stop_writer(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for HotBoard {
    fn drop(&mut self) {
        self.stop_writer();
    }
}

/// One bus of each recordable kind in `dir`, made with `shmbus create`:
/// a plain and a many-publisher bus (64 slots of 16 bytes), a pool (16
/// slots, 64 blocks of 32 bytes), a stream (4 KiB) and a journaled bus
/// (64 slots of 16 bytes, its journal `j.journal` in `dir`), in that
/// order.
pub fn every_recordable_kind(dir: &ShmDir) -> [String; 5] {
    let (plain, many, pool, stream, journaled) = (
        dir.bus("plain"),
        dir.bus("many"),
        dir.bus("pool"),
        dir.bus("stream"),
        dir.bus("journaled"),
    );
    let journal = dir.file("j.journal");
    let creates: [&[&str]; 5] = [
        &["create", &plain, "--slots", "64", "--msg-size", "16"],
        &[
            "create",
            &many,
            "--capacity",
            "64",
            "--msg-size",
            "16",
            "--publishers",
            "many",
        ],
        &["create", &pool, "--capacity", "16", "--pool", "64:32"],
        &["create", &stream, "--kind", "stream", "--bytes", "4096"],
        &[
            "create",
            &journaled,
            "--capacity",
            "64",
            "--msg-size",
            "16",
            "--journal",
            journal.to_str().unwrap(),
        ],
    ];
    for c in creates {
        run_shmbus(c).assert_success();
    }
    [plain, many, pool, stream, journaled]
}
