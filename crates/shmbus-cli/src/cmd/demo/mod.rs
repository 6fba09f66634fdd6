//! `shmbus demo`: the late-join scenario on one command.
//!
//! A publisher streams key/value updates on a journaled bus; two
//! subscribers are there from the start; a third joins late, is killed
//! with SIGKILL mid-stream, and joins again as a new process. Each
//! subscriber prints one line per round of the latency from the
//! publisher's send to its receive (in the format of
//! `subscriber::RoundStats::line`), and at the end its last-value-per-key
//! state, which must equal the publisher's. Halfway, the publisher compacts
//! the journal while it goes on publishing.
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
//!
//! This file is the parent: the arguments, the plan of the run and the
//! orchestration of its children (`kids`). Each child plays one role
//! (`publisher`, `subscriber`); `wire` is what crosses between them.

mod kids;
mod publisher;
mod subscriber;
mod wire;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::value_parser;
use shmbus::journal;
use shmbus::journal::format::{HEADER_LEN, record_size};

use crate::error::CliError;
use kids::Kids;
use wire::Update;

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
    #[arg(long, value_name = "N", default_value_t = 4096, alias = "capacity")]
    pub slots: u64,
    /// Where the journal goes [default: the temporary directory].
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// A run of a few seconds.
    #[arg(long)]
    pub quick: bool,
    /// The CPU live-1 busy-spins on, kept free of the rest of the demo
    /// [default: the last one this process may use, if the load average
    /// leaves a CPU idle; else live-1 sleeps on the futex like the others].
    #[arg(long, value_name = "CPU")]
    pub spin_cpu: Option<usize>,
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
    slots: u64,
    /// Publisher: compact when this round is done.
    #[arg(long, default_value_t = 0)]
    compact_round: u64,
    /// Subscriber: the sequence of the first update.
    #[arg(long, default_value_t = 0)]
    first: u64,
    /// Subscriber: busy-spin, alone on this CPU (the others were kept off
    /// it), instead of sleeping on the futex.
    #[arg(long)]
    spin_cpu: Option<usize>,
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
    slots: u64,
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
        if !args.slots.is_power_of_two() {
            return Err(CliError::usage(format!(
                "--slots {} is not a power of two (see `shmbus demo --help`)",
                args.slots
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
            slots: args.slots,
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

/// Files the run makes; removed on drop, also on an error or Ctrl-C.
struct Leftovers(Vec<PathBuf>);

impl Drop for Leftovers {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn print(line: &str) -> Result<(), CliError> {
    let mut out = crate::out::stdout()?;
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(CliError::stdout)
}

/// Runs the demo: spawns the roles, follows the plan, compares the states.
pub fn run(args: &DemoArgs) -> Result<(), CliError> {
    let plan = Plan::new(args)?;
    kids::catch_interrupts();
    let pid = std::process::id();
    let bus = format!("shmbus-demo-{pid}");
    let dir = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let journal = dir.join(format!("shmbus-demo-{pid}.journal"));
    // Declared before the children, so dropped after they are dead.
    let mut files = vec![Path::new("/dev/shm").join(&bus), journal.clone()];
    files.extend(shmbus::journal::side_files(&journal));
    let _files = Leftovers(files);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let spin_cpu = match args.spin_cpu {
        Some(cpu) => Some(reserve_cpu(cpu)?),
        None => spare_cpu(),
    };
    print(&format!(
        "shmbus demo: {} rounds of {} updates over {} keys, one every {} µs; \
         a publisher, 2 live subscribers and a late joiner on {cpus} CPUs",
        plan.rounds, plan.updates, plan.keys, plan.pace_us
    ))?;
    let waits = match spin_cpu {
        Some(cpu) => format!(
            "live-1 busy-spins on CPU {cpu}, kept free for it: the bus's own latency; \
             live-2 and the late joiner poll 50 µs, then sleep on a futex: a wake-up's cost"
        ),
        None => "every subscriber polls 50 µs, then sleeps on a futex (no idle CPU \
                 for one that spins: fewer than 2, or the load average leaves none)"
            .to_owned(),
    };
    print(&format!(
        "  latency: publisher's send to subscriber's receive (CLOCK_MONOTONIC); {waits}\n  \
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
        "--slots".into(),
        plan.slots.to_string(),
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
    let mut spin_args = sub_args.clone();
    if let Some(cpu) = spin_cpu {
        spin_args.extend(["--spin-cpu".to_string(), cpu.to_string()]);
    }
    let live = vec![
        kids.spawn("live-1", &spin_args)?,
        kids.spawn("live-2", &sub_args)?,
    ];
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
            let done = wire::parse_done(rest).ok_or_else(|| {
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
    match shmbus::journal::stat(&journal) {
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

/// A CPU for the spinning subscriber, taken out of this process's affinity
/// set (which every child inherits) so that none of the demo runs there;
/// `None` with fewer than two CPUs to run on, when the machine is busy (a
/// one-minute load average that leaves no CPU idle: a spinner that shares
/// its CPU waits for a scheduler slice, milliseconds, not for the bus), or
/// where affinity cannot be set.
fn spare_cpu() -> Option<usize> {
    let set = rustix::thread::sched_getaffinity(None).ok()?;
    let load: f64 = std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    if set.count() < 2 || load > f64::from(set.count()) - 1.0 {
        return None;
    }
    let cpu = (0..rustix::thread::CpuSet::MAX_CPU)
        .rev()
        .find(|&c| set.is_set(c))?;
    reserve_cpu(cpu).ok()
}

/// Keeps this process, and so every child it starts, off `cpu`, which
/// must be one of at least two it may use.
fn reserve_cpu(cpu: usize) -> Result<usize, CliError> {
    let mut set = rustix::thread::sched_getaffinity(None)
        .map_err(|e| CliError::runtime(format!("sched_getaffinity: {e}")))?;
    if cpu >= rustix::thread::CpuSet::MAX_CPU || !set.is_set(cpu) || set.count() < 2 {
        return Err(CliError::usage(format!(
            "--spin-cpu {cpu}: not one of at least two CPUs this process may run on \
             ({} allowed)",
            set.count()
        )));
    }
    set.unset(cpu);
    rustix::thread::sched_setaffinity(None, &set)
        .map_err(|e| CliError::runtime(format!("sched_setaffinity: {e}")))?;
    Ok(cpu)
}

/// Bytes the records take (the file is allocated ahead in chunks).
fn journal_size(j: &journal::Stat) -> String {
    let used =
        HEADER_LEN as u64 + j.records * record_size(std::mem::size_of::<Update>() as u32) as u64;
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

/// A child of `shmbus demo`.
pub fn run_child(args: &ChildArgs) -> Result<(), CliError> {
    // Die with the parent, even if it is killed; if it is gone already,
    // stop at once.
    rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
        .map_err(|e| CliError::runtime(format!("prctl: {e}")))?;
    if rustix::process::getppid().map(|p| p.as_raw_nonzero().get()) != Some(args.parent) {
        return Err(CliError::runtime("the demo is gone"));
    }
    if let Some(cpu) = args.spin_cpu {
        let mut set = rustix::thread::CpuSet::new();
        set.set(cpu);
        rustix::thread::sched_setaffinity(None, &set)
            .map_err(|e| CliError::runtime(format!("sched_setaffinity to CPU {cpu}: {e}")))?;
    }
    match args.role {
        Role::Publisher => publisher::run(args),
        Role::Subscriber => subscriber::run(args),
    }
}

fn fail(what: &str) -> impl Fn(String) -> CliError + '_ {
    move |e| CliError::runtime(format!("{what}: {e}"))
}
