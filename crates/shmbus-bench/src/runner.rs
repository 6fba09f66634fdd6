//! Running one block: the sender here, the receivers as threads of this
//! process or as child processes re-executed from this binary, each pinned;
//! their reports collected, and children that hang or fail killed.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::case::{Case, Pattern};
use crate::cpu::pin;
use crate::error::BenchError;
use crate::mech::{self, ChannelSpec, Mechanism, Side, marker, stamp};
use crate::pattern::{self, Block, Plan, ReceiverReport};

/// How long any block may take before its children are killed.
pub const BLOCK_LIMIT: Duration = Duration::from_secs(60);

/// Runs blocks: pins, spawns, collects.
pub struct Runner {
    cpus: Vec<usize>,
    blocks: u64,
}

impl Runner {
    /// A runner that pins receivers to `cpus` after the first (the sender's).
    pub fn new(cpus: Vec<usize>) -> Runner {
        Runner { cpus, blocks: 0 }
    }
}

impl Runner {
    fn receiver_cpu(&self, i: usize) -> Option<usize> {
        match self.cpus.len() {
            0 => None,
            1 => Some(self.cpus[0]),
            n => Some(self.cpus[1 + i % (n - 1)]),
        }
    }

    /// Runs one block of `m` for `case`.
    pub fn run_block(
        &mut self,
        m: &dyn Mechanism,
        case: &Case,
        plan: &Plan,
    ) -> Result<Block, BenchError> {
        self.blocks += 1;
        mech::set_deadline(BLOCK_LIMIT);
        let spec = ChannelSpec {
            msg_size: case.msg_size,
            receivers: case.receivers,
            duplex: case.pattern == Pattern::Pingpong,
            prefix: format!("shmbus-bench-{}-{}", std::process::id(), self.blocks),
        };
        if m.in_process() {
            self.run_threads(m, &spec, plan)
        } else {
            self.run_processes(m, &spec, plan)
        }
    }

    fn run_threads(
        &self,
        m: &dyn Mechanism,
        spec: &ChannelSpec,
        plan: &Plan,
    ) -> Result<Block, BenchError> {
        let mechanism = m.name();
        let failed = |stage| {
            move |source| BenchError::Mechanism {
                mechanism,
                stage,
                source,
            }
        };
        let (mut tx, rxs) = m.pair(spec).map_err(failed("set up"))?;
        let ready = std::sync::Arc::new(std::sync::Barrier::new(rxs.len() + 1));
        let handles: Vec<_> = rxs
            .into_iter()
            .enumerate()
            .map(|(i, mut rx)| {
                let (plan, ready, cpu) = (plan.clone(), ready.clone(), self.receiver_cpu(i));
                std::thread::spawn(move || {
                    if let Some(cpu) = cpu {
                        let _ = pin(cpu);
                    }
                    ready.wait();
                    pattern::receive(rx.as_mut(), &plan)
                })
            })
            .collect();
        ready.wait();
        let sender = pattern::send(tx.as_mut(), plan).map_err(failed("send"))?;
        let mut stop = vec![0u8; spec.msg_size];
        stamp(&mut stop, marker::STOP, 0);
        tx.send(&stop).map_err(failed("stop"))?;
        let mut receivers = Vec::new();
        for h in handles {
            let report = h
                .join()
                .map_err(|_| BenchError::ReceiverPanicked { mechanism })?;
            let mut report = report.map_err(failed("receive"))?;
            // The process is the sender's too: its CPU time is not the
            // receiver's.
            report.cpu_ns = None;
            receivers.push(report);
        }
        Ok(Block { sender, receivers })
    }

    fn run_processes(
        &self,
        m: &dyn Mechanism,
        spec: &ChannelSpec,
        plan: &Plan,
    ) -> Result<Block, BenchError> {
        let name = m.name();
        let failed = |stage| {
            move |source| BenchError::Mechanism {
                mechanism: name,
                stage,
                source,
            }
        };
        let resources = m.setup(spec).map_err(failed("setup"))?;
        let token = resources.token();
        let exe = std::env::current_exe().map_err(BenchError::CurrentExe)?;
        let mut children = Vec::new();
        let (lines_tx, lines) = mpsc::channel::<(usize, String)>();
        for i in 0..spec.receivers {
            let mut cmd = Command::new(&exe);
            cmd.envs(m.child_env().iter().copied());
            cmd.arg("child")
                .args(["--mechanism", name, "--pattern", plan.pattern.name()])
                .args([
                    "--msg-size",
                    &spec.msg_size.to_string(),
                    "--receivers",
                    &spec.receivers.to_string(),
                ])
                .args([
                    "--index",
                    &i.to_string(),
                    "--token",
                    &token,
                    "--prefix",
                    &spec.prefix,
                ])
                .args([
                    "--warmup",
                    &plan.warmup.to_string(),
                    "--count",
                    &plan.count.to_string(),
                ])
                .args([
                    "--pace",
                    &plan.pace.to_string(),
                    "--clock",
                    plan.clock.name(),
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            if let Some(cpu) = self.receiver_cpu(i) {
                cmd.args(["--cpu", &cpu.to_string()]);
            }
            let mut child = cmd.spawn().map_err(|source| BenchError::Spawn {
                what: format!("a {name} receiver"),
                source,
            })?;
            let out = child.stdout.take().expect("piped");
            let tx = lines_tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    if tx.send((i, line)).is_err() {
                        break;
                    }
                }
            });
            children.push(Watched(child));
        }
        drop(lines_tx);
        let deadline = Instant::now() + BLOCK_LIMIT;
        let result = (|| {
            let mut ep = m.open(&token, Side::Sender, spec).map_err(failed("open"))?;
            let mut reports: Vec<Option<ReceiverReport>> =
                (0..spec.receivers).map(|_| None).collect();
            let mut ready = 0;
            while ready < spec.receivers {
                let (_, line) = next_line(&lines, deadline, &mut children, name)?;
                if line == "READY" {
                    ready += 1;
                }
            }
            let sender = pattern::send(ep.as_mut(), plan).map_err(failed("send"))?;
            // STOP, again every 50 ms until every child reported: a lossy
            // mechanism may drop it.
            let mut stop = vec![0u8; spec.msg_size];
            stamp(&mut stop, marker::STOP, 0);
            let mut reported = 0;
            while reported < spec.receivers {
                let _ = ep.send(&stop);
                let until = (Instant::now() + Duration::from_millis(50)).min(deadline);
                while reported < spec.receivers {
                    match lines.recv_timeout(until.saturating_duration_since(Instant::now())) {
                        Ok((i, line)) => {
                            if let Some(json) = line.strip_prefix("REPORT ") {
                                let report = serde_json::from_str(json).map_err(|source| {
                                    BenchError::BadReport {
                                        mechanism: name,
                                        source,
                                    }
                                })?;
                                // Counted once per receiver, so every slot is
                                // filled when the count is reached.
                                if reports[i].replace(report).is_none() {
                                    reported += 1;
                                }
                            }
                        }
                        Err(mpsc::RecvTimeoutError::Timeout) if Instant::now() < deadline => break,
                        // Every child's stdout ended with a report missing
                        // (a receiver that failed or crashed), or time is up.
                        Err(_) => return Err(child_failure(name, &mut children)),
                    }
                }
            }
            drop(ep);
            Ok(Block {
                sender,
                receivers: reports
                    .into_iter()
                    .map(|r| r.expect("all reported"))
                    .collect(),
            })
        })();
        for c in &mut children {
            c.finish(Duration::from_secs(5));
        }
        drop(resources);
        result
    }
}

/// A child process that is killed if it is still running when dropped.
struct Watched(Child);

impl Watched {
    fn finish(&mut self, grace: Duration) {
        let until = Instant::now() + grace;
        while Instant::now() < until {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

fn next_line(
    lines: &mpsc::Receiver<(usize, String)>,
    deadline: Instant,
    children: &mut [Watched],
    name: &'static str,
) -> Result<(usize, String), BenchError> {
    lines
        .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        .map_err(|_| child_failure(name, children))
}

/// Kills the children and says what the first one that failed printed.
fn child_failure(name: &'static str, children: &mut [Watched]) -> BenchError {
    use std::io::Read;
    let mut why = String::from("timed out");
    for c in children.iter_mut() {
        let _ = c.0.kill();
        let _ = c.0.wait();
        let mut err = String::new();
        if let Some(mut pipe) = c.0.stderr.take() {
            let _ = pipe.read_to_string(&mut err);
        }
        if let Some(line) = err.lines().rev().find(|l| !l.trim().is_empty()) {
            // The child's own `main` put our prefix on it.
            why = line.trim().trim_start_matches("shmbus-bench: ").to_owned();
            break;
        }
    }
    BenchError::ReceiverFailed {
        mechanism: name,
        why,
    }
}
