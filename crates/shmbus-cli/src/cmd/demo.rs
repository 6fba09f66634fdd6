//! `shmbus demo`: the late-join scenario on one command.
//!
//! A publisher streams key/value updates on a journaled bus; two
//! subscribers are there from the start; a third joins late, is killed
//! with SIGKILL mid-stream, and joins again as a new process. Each
//! subscriber prints one line per round of the latency from the
//! publisher's send to its receive (in the format of `RoundStats::line`),
//! and at the end its last-value-per-key state, which must equal the
//! publisher's. Halfway, the publisher compacts the journal while it goes
//! on publishing.
//!
//! Every role is this binary again, run as the hidden `demo-child`; the
//! children talk to the parent in lines on stdout (`READY`, `ROUND r`,
//! `SAY text`, `DONE digest keys last`). They run in their own process
//! group, so Ctrl-C reaches the parent alone, which then kills them and
//! removes the bus and the journal; each child also dies with its parent
//! (`PR_SET_PDEATHSIG`). A deadline bounds the whole run.
//!
//! Latency is CLOCK_MONOTONIC, which every process reads alike. Only
//! updates taken live from the ring are timed: what a subscriber read from
//! the journal (its bootstrap, or a lag the journal repaired) is counted
//! as "lost" for the round instead, with the part the journal no longer
//! had (folded by the compaction into the last value of its key) apart.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use clap::value_parser;
use hdrhistogram::Histogram;
use shmbus::journal::{
    self, JoinOptions, JournalOptions, JournalPublisher, JournalStat, JournalSubscriber, Keyed,
    KeyedState,
};
use shmbus::{CreateOptions, Received, WaitStrategy};

use crate::error::CliError;

/// One update: `key` now has value `val`; `sent_ns` is the publisher's
/// CLOCK_MONOTONIC just before it published it.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Update {
    key: u64,
    val: u64,
    sent_ns: u64,
}

impl Keyed for Update {
    fn key(&self) -> u64 {
        self.key
    }
}

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process of the
/// machine, so a subscriber can subtract the publisher's `sent_ns`.
fn monotonic_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Arguments of `shmbus demo`.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Rounds of updates, at least 4 [default: 10, --quick 6].
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(4..=1000))]
    pub rounds: Option<u64>,
    /// Updates per round [default: 30000, --quick 3000].
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=100_000_000))]
    pub updates: Option<u64>,
    /// Distinct keys [default: 10000, --quick 1000].
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=100_000_000))]
    pub keys: Option<u64>,
    /// The publisher's pace: microseconds from one update to the next, 0
    /// for as fast as it can [default: 33, about 30000 a second; --quick 100].
    #[arg(long, value_name = "MICROS", value_parser = value_parser!(u64).range(0..=1_000_000))]
    pub pace: Option<u64>,
    /// Slots of the ring, a power of two.
    #[arg(long, value_name = "N", default_value_t = 4096)]
    pub capacity: u64,
    /// Where the journal goes [default: the temporary directory].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// A run of a few seconds.
    #[arg(long)]
    pub quick: bool,
}

/// Arguments of the hidden `shmbus demo-child`: one role of the demo.
#[derive(clap::Args, Debug)]
pub struct ChildArgs {
    #[arg(long, value_enum)]
    role: Role,
    #[arg(long)]
    label: String,
    #[arg(long)]
    bus: String,
    #[arg(long)]
    journal: PathBuf,
    #[arg(long)]
    parent: i32,
    #[arg(long)]
    rounds: u64,
    #[arg(long)]
    updates: u64,
    #[arg(long, default_value_t = 0)]
    keys: u64,
    #[arg(long, default_value_t = 0)]
    pace: u64,
    #[arg(long, default_value_t = 0)]
    capacity: u64,
    /// Publisher: compact when this round is done.
    #[arg(long, default_value_t = 0)]
    compact_round: u64,
    /// Subscriber: the sequence of the first update.
    #[arg(long, default_value_t = 0)]
    first: u64,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Publisher,
    Subscriber,
}

/// The run's figures and when the late joiner comes, dies and comes back.
#[derive(Clone, Debug)]
struct Plan {
    rounds: u64,
    updates: u64,
    keys: u64,
    pace_us: u64,
    capacity: u64,
    /// The late joiner joins when this round is done.
    join: u64,
    /// It is killed when this round is done, and the journal compacted.
    kill: u64,
    /// It joins again when this round is done.
    rejoin: u64,
}

impl Plan {
    fn new(args: &DemoArgs) -> Result<Plan, CliError> {
        let (rounds, updates, keys, pace) = if args.quick {
            (6, 3_000, 1_000, 100)
        } else {
            (10, 30_000, 10_000, 33)
        };
        let rounds = args.rounds.unwrap_or(rounds);
        if !args.capacity.is_power_of_two() {
            return Err(CliError::usage(format!(
                "--capacity {} is not a power of two (see `shmbus demo --help`)",
                args.capacity
            )));
        }
        // join < kill < rejoin < rounds, for any rounds >= 4.
        let join = (rounds / 5).max(1);
        let kill = (rounds / 2).max(join + 1);
        Ok(Plan {
            rounds,
            updates: args.updates.unwrap_or(updates),
            keys: args.keys.unwrap_or(keys),
            pace_us: args.pace.unwrap_or(pace),
            capacity: args.capacity,
            join,
            kill,
            rejoin: kill + 1,
        })
    }

    /// How long the publisher should take, plus room for a slow machine.
    fn deadline(&self) -> Duration {
        let streaming = Duration::from_micros(self.rounds * self.updates * self.pace_us);
        streaming * 3 + Duration::from_secs(30)
    }
}

/// Set by SIGINT, SIGTERM or SIGHUP: the parent stops and cleans up.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

fn catch_interrupts() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let handler: extern "C" fn(libc::c_int) = on_signal;
        // SAFETY: the handler only stores to an atomic, which is
        // async-signal-safe; no other code of ours installs one for these.
        unsafe { libc::signal(sig, handler as libc::sighandler_t) };
    }
}

/// Files the run makes; removed on drop, also on an error or Ctrl-C.
struct Leftovers(Vec<PathBuf>);

impl Drop for Leftovers {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// One line from a child, or `None` when its stdout closed.
type Event = (usize, Option<String>);

struct Kid {
    label: String,
    child: Child,
    stdin: Option<ChildStdin>,
    stderr: Option<JoinHandle<String>>,
    /// (digest, keys, last sequence) once it said `DONE`.
    done: Option<(u64, u64, u64)>,
    killed: bool,
}

impl Kid {
    /// The last line it wrote to stderr, without our `shmbus: ` prefix.
    fn why(&mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let text = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        text.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.trim().trim_start_matches("shmbus: ").to_owned())
            .unwrap_or_else(|| "exited without a word".into())
    }
}

/// The children, under a watchdog: any still running when this is dropped
/// is killed.
struct Kids {
    exe: PathBuf,
    list: Vec<Kid>,
    tx: Sender<Event>,
    rx: Receiver<Event>,
}

impl Kids {
    fn new() -> Result<Kids, CliError> {
        let exe = std::env::current_exe()
            .map_err(|e| CliError::runtime(format!("cannot find this executable: {e}")))?;
        let (tx, rx) = mpsc::channel();
        Ok(Kids {
            exe,
            list: Vec::new(),
            tx,
            rx,
        })
    }

    fn spawn(&mut self, label: &str, args: &[String]) -> Result<usize, CliError> {
        let mut child = Command::new(&self.exe)
            .arg("demo-child")
            .args(["--label", label])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Ctrl-C goes to the parent alone, which cleans up.
            .process_group(0)
            .spawn()
            .map_err(|e| CliError::runtime(format!("{label}: cannot start: {e}")))?;
        let index = self.list.len();
        let out = child.stdout.take().expect("piped stdout");
        let tx = self.tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send((index, Some(line))).is_err() {
                    return;
                }
            }
            let _ = tx.send((index, None));
        });
        let mut err = child.stderr.take().expect("piped stderr");
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = err.read_to_string(&mut text);
            text
        });
        self.list.push(Kid {
            label: label.to_owned(),
            stdin: child.stdin.take(),
            child,
            stderr: Some(stderr),
            done: None,
            killed: false,
        });
        Ok(index)
    }

    /// The next event, or why the run must stop.
    fn next(&mut self, deadline: Instant) -> Result<Event, CliError> {
        loop {
            if INTERRUPTED.load(Ordering::Relaxed) {
                return Err(CliError::runtime(
                    "interrupted; stopped the demo's processes and removed its files",
                ));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(CliError::runtime(
                    "the demo overran its deadline; killed its processes and removed its files",
                ));
            }
            match self.rx.recv_timeout(left.min(Duration::from_millis(50))) {
                Ok((i, None)) if self.list[i].done.is_none() && !self.list[i].killed => {
                    let kid = &mut self.list[i];
                    let why = kid.why();
                    return Err(CliError::runtime(format!("{} failed: {why}", kid.label)));
                }
                Ok(event) => return Ok(event),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => unreachable!("we hold a sender"),
            }
        }
    }

    /// Waits for `READY` (and what follows it on the line) from each of
    /// `kids`, while nothing else is expected.
    fn ready(&mut self, kids: &[usize], deadline: Instant) -> Result<Vec<String>, CliError> {
        let mut said: Vec<Option<String>> = vec![None; kids.len()];
        while said.iter().any(Option::is_none) {
            let (j, line) = match self.next(deadline)? {
                (j, Some(line)) => (j, line),
                (_, None) => continue,
            };
            let Some(k) = kids.iter().position(|&i| i == j) else {
                continue;
            };
            let rest = line.strip_prefix("READY").ok_or_else(|| {
                CliError::runtime(format!("{} said {line:?}, not READY", self.list[j].label))
            })?;
            said[k] = Some(rest.trim().to_owned());
        }
        Ok(said.into_iter().flatten().collect())
    }

    fn kill(&mut self, i: usize) -> Result<u32, CliError> {
        let kid = &mut self.list[i];
        kid.killed = true;
        let pid = kid.child.id();
        kid.child
            .kill()
            .map_err(|e| CliError::runtime(format!("{}: cannot kill: {e}", kid.label)))?;
        let _ = kid.child.wait();
        Ok(pid)
    }

    /// Closes every stdin and waits a little for each child to exit.
    fn finish(&mut self) {
        for kid in &mut self.list {
            kid.stdin = None;
        }
        let until = Instant::now() + Duration::from_secs(5);
        for kid in &mut self.list {
            while Instant::now() < until {
                if let Ok(Some(_)) = kid.child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}

impl Drop for Kids {
    fn drop(&mut self) {
        for kid in &mut self.list {
            if let Ok(None) = kid.child.try_wait() {
                let _ = kid.child.kill();
                let _ = kid.child.wait();
            }
        }
    }
}

fn print(line: &str) -> Result<(), CliError> {
    let mut out = crate::out::stdout()?;
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(CliError::stdout)
}

fn parse_done(rest: &str) -> Option<(u64, u64, u64)> {
    let mut it = rest.split_whitespace().map(str::parse::<u64>);
    match (it.next(), it.next(), it.next()) {
        (Some(Ok(d)), Some(Ok(k)), Some(Ok(l))) => Some((d, k, l)),
        _ => None,
    }
}

pub fn run(args: &DemoArgs) -> Result<(), CliError> {
    let plan = Plan::new(args)?;
    catch_interrupts();
    let pid = std::process::id();
    let bus = format!("shmbus-demo-{pid}");
    let dir = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let journal = dir.join(format!("shmbus-demo-{pid}.journal"));
    // Declared before the children, so dropped after they are dead.
    let mut files = vec![Path::new("/dev/shm").join(&bus), journal.clone()];
    files.extend(shmbus::journal::side_files(&journal));
    let _files = Leftovers(files);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    print(&format!(
        "shmbus demo: {} rounds of {} updates over {} keys, one every {} µs; \
         a publisher, 2 live subscribers and a late joiner on {cpus} CPUs",
        plan.rounds, plan.updates, plan.keys, plan.pace_us
    ))?;
    print(&format!(
        "  latency: publisher's send to subscriber's receive (CLOCK_MONOTONIC); subscribers \
         poll 50 µs, then sleep on a futex\n  \
         lost: updates of the round not taken live from the ring (repaired from the journal, \
         or gone: folded by the compaction into their key's last value)\n  \
         late joiner: joins after round {}, is SIGKILLed after round {} while the journal is \
         compacted, and joins again after round {}",
        plan.join, plan.kill, plan.rejoin
    ))?;

    let deadline = Instant::now() + plan.deadline();
    let common = |role: &str| -> Vec<String> {
        [
            "--role",
            role,
            "--bus",
            &bus,
            "--journal",
            journal.to_str().unwrap_or_default(),
            "--parent",
            &pid.to_string(),
            "--rounds",
            &plan.rounds.to_string(),
            "--updates",
            &plan.updates.to_string(),
        ]
        .map(str::to_owned)
        .to_vec()
    };
    if journal.to_str().is_none() {
        return Err(CliError::usage(format!(
            "{}: the journal's directory must be a UTF-8 path",
            journal.display()
        )));
    }
    let mut kids = Kids::new()?;
    let mut publisher_args = common("publisher");
    publisher_args.extend([
        "--keys".to_string(),
        plan.keys.to_string(),
        "--pace".into(),
        plan.pace_us.to_string(),
        "--capacity".into(),
        plan.capacity.to_string(),
        "--compact-round".into(),
        plan.kill.to_string(),
    ]);
    let publisher = kids.spawn("publisher", &publisher_args)?;
    let ready = kids.ready(&[publisher], deadline)?;
    let first: u64 = ready[0]
        .parse()
        .map_err(|_| CliError::runtime(format!("publisher said READY {:?}", ready[0])))?;
    let mut sub_args = common("subscriber");
    sub_args.extend(["--first".to_string(), first.to_string()]);
    let live: Vec<usize> = ["live-1", "live-2"]
        .iter()
        .map(|label| kids.spawn(label, &sub_args))
        .collect::<Result<_, _>>()?;
    kids.ready(&live, deadline)?;
    if let Some(stdin) = kids.list[publisher].stdin.as_mut() {
        writeln!(stdin, "GO").map_err(|e| CliError::runtime(format!("publisher: {e}")))?;
    }

    let mut late = None;
    let mut final_late = None;
    let mut running = 3; // The publisher and the live subscribers.
    while running > 0 {
        let (i, line) = match kids.next(deadline)? {
            (i, Some(line)) => (i, line),
            (_, None) => continue,
        };
        if let Some(text) = line.strip_prefix("SAY ") {
            print(text)?;
        } else if let Some(rest) = line.strip_prefix("DONE ") {
            let done = parse_done(rest).ok_or_else(|| {
                CliError::runtime(format!("{} said {line:?}", kids.list[i].label))
            })?;
            kids.list[i].done = Some(done);
            running -= 1;
        } else if let Some(r) = line.strip_prefix("ROUND ") {
            let r: u64 = r.parse().unwrap_or(0);
            if r == plan.join {
                late = Some(kids.spawn("late#1", &sub_args)?);
            } else if r == plan.kill {
                if let Some(l) = late.take() {
                    let pid = kids.kill(l)?;
                    print(&format!("[late#1] killed with SIGKILL (pid {pid})"))?;
                }
            } else if r == plan.rejoin {
                final_late = Some(kids.spawn("late#2", &sub_args)?);
                running += 1;
            }
        }
    }
    kids.finish();

    let (digest, keys, last) = kids.list[publisher].done.expect("publisher done");
    match journal::stat(&journal) {
        Ok(j) => print(&format!("journal at the end: {}", journal_size(&j)))?,
        Err(e) => print(&format!("journal at the end: {e}"))?,
    }
    print(&format!(
        "[publisher] {keys} keys, last sequence {last}, state digest {digest:#018x}"
    ))?;
    let mut differ = Vec::new();
    for &i in live.iter().chain(final_late.iter()) {
        let kid = &kids.list[i];
        let (d, k, l) = kid.done.expect("subscriber done");
        let equal = (d, k, l) == (digest, keys, last);
        print(&format!(
            "[{}] state equal: {} ({k} keys, last sequence {l}, digest {d:#018x})",
            kid.label,
            if equal { "yes" } else { "NO" }
        ))?;
        if !equal {
            differ.push(kid.label.clone());
        }
    }
    if differ.is_empty() {
        Ok(())
    } else {
        Err(CliError::runtime(format!(
            "state differs from the publisher's for {}",
            differ.join(", ")
        )))
    }
}

/// Bytes the records take (the file is allocated ahead in chunks).
fn journal_size(j: &JournalStat) -> String {
    let used = journal::HEADER_LEN as u64
        + j.records * journal::record_size(std::mem::size_of::<Update>() as u32) as u64;
    let snapshot = if j.snapshot > 0 {
        format!(" ({} a snapshot of one per key)", j.snapshot)
    } else {
        String::new()
    };
    format!(
        "{} records{snapshot}, {:.1} MB used of {:.1} MB allocated",
        j.records,
        used as f64 / 1e6,
        j.file_bytes as f64 / 1e6
    )
}

/// Writes one protocol line to the parent.
fn say(line: &str) -> Result<(), CliError> {
    let mut out = crate::out::stdout()?;
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|e| CliError::runtime(format!("writing to the demo: {e}")))
}

/// A child of `shmbus demo`.
pub fn run_child(args: &ChildArgs) -> Result<(), CliError> {
    // Die with the parent, even if it is killed; if it is gone already,
    // stop at once.
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
        .map_err(|e| CliError::runtime(format!("prctl: {e}")))?;
    if rustix::process::getppid().map(|p| p.as_raw_nonzero().get()) != Some(args.parent) {
        return Err(CliError::runtime("the demo is gone"));
    }
    match args.role {
        Role::Publisher => publisher(args),
        Role::Subscriber => subscriber(args),
    }
}

fn fail(what: &str) -> impl Fn(String) -> CliError + '_ {
    move |e| CliError::runtime(format!("{what}: {e}"))
}

/// SplitMix64: the keys' order, the same in every run.
fn next_key(state: &mut u64, keys: u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) % keys
}

fn publisher(a: &ChildArgs) -> Result<(), CliError> {
    let opts = CreateOptions::new(a.capacity);
    let mut p = JournalPublisher::<Update>::create(&a.bus, &opts, &JournalOptions::new(&a.journal))
        .map_err(|e| fail("create")(e.to_string()))?;
    say(&format!("READY {}", p.next_sequence()))?;
    let mut stdin = io::stdin().lock();
    let mut go = String::new();
    let _ = stdin.read_line(&mut go);
    if go.trim() != "GO" {
        return Ok(());
    }
    let pace = a.pace * 1000;
    let mut state = KeyedState::<Update>::new();
    let mut rng = 0x5eed;
    let mut sent: u64 = 0;
    let mut compaction: Option<(JournalStat, Instant)> = None;
    let start = monotonic_ns();
    for round in 1..=a.rounds {
        for _ in 0..a.updates {
            // Sleep to the next update's time: the updates of a sleep's
            // overshoot then go out back to back.
            let due = start + sent * pace;
            let now = monotonic_ns();
            if now < due {
                std::thread::sleep(Duration::from_nanos(due - now));
            }
            let msg = Update {
                key: next_key(&mut rng, a.keys),
                val: sent,
                sent_ns: monotonic_ns(),
            };
            let seq = p
                .publish(&msg)
                .map_err(|e| fail("publish")(e.to_string()))?;
            state.apply(seq, msg);
            sent += 1;
            if sent.is_multiple_of(256) {
                if let Some((before, t)) = compaction.take_if(|_| !p.is_compacting()) {
                    report_compaction(&p, &before, t)?;
                }
            }
        }
        say(&format!("ROUND {round}"))?;
        if round == a.compact_round {
            let before = journal::stat(&a.journal).map_err(|e| fail("journal")(e.to_string()))?;
            p.compact();
            compaction = Some((before, Instant::now()));
        }
    }
    if let Some((before, t)) = compaction {
        if p.is_compacting() {
            say("SAY journal compaction still running at the end")?;
        } else {
            report_compaction(&p, &before, t)?;
        }
    }
    say(&format!(
        "DONE {} {} {}",
        state.digest(),
        state.len(),
        state.last_seq().unwrap_or(0)
    ))?;
    // Stay, serving joins' flush requests, until the parent closes stdin.
    let mut rest = String::new();
    while stdin.read_line(&mut rest).is_ok_and(|n| n > 0) {}
    Ok(())
}

fn report_compaction(
    p: &JournalPublisher<Update>,
    before: &JournalStat,
    started: Instant,
) -> Result<(), CliError> {
    if let Some(e) = p.compaction_error() {
        return Err(CliError::runtime(e));
    }
    let after = journal::stat(p.journal_path()).map_err(|e| fail("journal")(e.to_string()))?;
    say(&format!(
        "SAY journal compacted in {} ms while publishing went on: {} -> {}",
        started.elapsed().as_millis(),
        journal_size(before),
        journal_size(&after)
    ))
}

/// One round's figures of one subscriber.
struct RoundStats {
    latency: Histogram<u64>,
    repaired: u64,
    gone: u64,
}

impl RoundStats {
    fn new() -> RoundStats {
        RoundStats {
            latency: Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds"),
            repaired: 0,
            gone: 0,
        }
    }

    /// The round's line: `[round 1] avg: 61 ns | min: 30 ns | p50: 60 ns |
    /// p90: 70 ns | p99: 80 ns | lost: 0`, with the subscriber's label.
    fn line(&self, round: u64, label: &str) -> String {
        let h = &self.latency;
        let lost = self.repaired + self.gone;
        let why = if lost > 0 {
            format!(
                " ({} repaired from the journal, {} gone)",
                self.repaired, self.gone
            )
        } else {
            String::new()
        };
        if h.is_empty() {
            return format!(
                "[round {round}] [{label}] no update live from the ring | lost: {lost}{why}"
            );
        }
        format!(
            "[round {round}] [{label}] avg: {:.0} ns | min: {} ns | p50: {} ns | p90: {} ns | p99: {} ns | lost: {lost}{why}",
            h.mean(),
            h.min(),
            h.value_at_quantile(0.5),
            h.value_at_quantile(0.9),
            h.value_at_quantile(0.99),
        )
    }
}

fn subscriber(a: &ChildArgs) -> Result<(), CliError> {
    let opts = JoinOptions::default().wait(WaitStrategy::SpinFutex {
        spin: Duration::from_micros(50),
    });
    let t0 = Instant::now();
    let mut sub = JournalSubscriber::<Update>::join(&a.bus, &opts)
        .map_err(|e| fail("join")(e.to_string()))?;
    say("READY")?;
    let last = a.first + a.rounds * a.updates - 1;
    let round_of = |seq: u64| (seq - a.first) / a.updates.max(1) + 1;
    let mut state = KeyedState::<Update>::new();
    let mut bootstrap: u64 = 0;
    let mut live = false;
    let mut current: Option<(u64, RoundStats)> = None;
    let stall = Duration::from_secs(10);
    loop {
        let got = sub
            .recv_timeout(stall)
            .ok_or_else(|| CliError::runtime(format!("no update for {stall:?}")))?;
        let from_ring = sub.is_live();
        let now = monotonic_ns();
        let e = match got {
            Received::Message(e) => e,
            Received::Lagged { skipped } => {
                if let Some((_, s)) = current.as_mut() {
                    s.gone += skipped;
                }
                continue;
            }
        };
        state.apply(e.seq, e.msg);
        if !live && !from_ring {
            bootstrap += 1;
        } else {
            if !live {
                live = true;
                if bootstrap > 0 {
                    say(&format!(
                        "SAY [{}] joined: {bootstrap} updates from the journal in {} ms, \
                         then live on the ring from sequence {} (round {})",
                        a.label,
                        t0.elapsed().as_millis(),
                        e.seq,
                        round_of(e.seq)
                    ))?;
                }
            }
            let r = round_of(e.seq);
            if current.as_ref().is_none_or(|(c, _)| *c != r) {
                if let Some((c, s)) = current.replace((r, RoundStats::new())) {
                    say(&format!("SAY {}", s.line(c, &a.label)))?;
                }
            }
            let (_, s) = current.as_mut().expect("set above");
            if from_ring {
                s.latency
                    .saturating_record(now.saturating_sub(e.msg.sent_ns).max(1));
            } else {
                s.repaired += 1;
            }
        }
        if e.seq == last {
            break;
        }
    }
    if let Some((c, s)) = current {
        say(&format!("SAY {}", s.line(c, &a.label)))?;
    }
    say(&format!(
        "DONE {} {} {}",
        state.digest(),
        state.len(),
        state.last_seq().unwrap_or(0)
    ))
}
