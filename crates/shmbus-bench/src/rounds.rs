//! Running the cases round by round: every mechanism one block per round,
//! the order rotating, with a progress bar on stderr.

use crate::case::Pattern;
use crate::error::BenchError;
use crate::figures::Figures;
use crate::mech::Mechanism;
use crate::memcpy::{self, MEMCPY};
use crate::runner::Runner;
use crate::settings::Settings;

/// Runs every case: within a case, one block per mechanism per round, the
/// mechanisms' order rotating every round. A block's error marks its row
/// failed (no later round of it runs) and the run goes on: the caller
/// fails the run after the tables.
pub fn run_all(
    runner: &mut Runner,
    mechanisms: &[&'static dyn Mechanism],
    settings: &Settings,
) -> Result<Vec<Figures>, BenchError> {
    let mut all = Vec::new();
    let mut total = 0u64;
    let mut per_case = Vec::new();
    for case in &settings.cases {
        let mut figs: Vec<Figures> = mechanisms.iter().map(|m| Figures::new(case, *m)).collect();
        for (f, m) in figs.iter_mut().zip(mechanisms) {
            if case.only.is_some_and(|only| !only.contains(&m.name())) {
                f.skipped = Some(format!(
                    "only shared-memory rows run at {} B",
                    case.msg_size
                ));
            } else if let Some(why) = m.unsupported(case.pattern, case.msg_size) {
                f.skipped = Some(why);
            } else {
                total += u64::from(settings.rounds);
            }
        }
        per_case.push(figs);
    }
    let bar = indicatif::ProgressBar::with_draw_target(
        Some(total),
        indicatif::ProgressDrawTarget::stderr(),
    );
    bar.set_style(
        indicatif::ProgressStyle::with_template("{elapsed:>4} [{bar:30}] {pos}/{len} {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    for (case, mut figs) in settings.cases.iter().zip(per_case) {
        let plan = settings.plan(case);
        let mut reference =
            (case.pattern == Pattern::Throughput).then(|| Figures::named(case, MEMCPY, true));
        for round in 0..settings.rounds as usize {
            if let Some(f) = reference.as_mut() {
                bar.set_message(format!("memcpy {} B round {}", case.msg_size, round + 1));
                memcpy::round(f, &plan, settings.ticks_per_ns);
            }
            let n = mechanisms.len();
            for k in 0..n {
                let i = (k + round) % n;
                if figs[i].skipped.is_some() || figs[i].failed.is_some() {
                    continue;
                }
                let m = mechanisms[i];
                bar.set_message(format!(
                    "{} {} {} B x{} round {}",
                    m.name(),
                    case.pattern.name(),
                    case.msg_size,
                    case.receivers,
                    round + 1
                ));
                let plan = settings.plan_for(m, case, &plan);
                match runner.run_block(m, case, &plan) {
                    Ok(block) => figs[i].absorb(block, &plan, settings.ticks_per_ns)?,
                    Err(e) => {
                        bar.suspend(|| eprintln!("shmbus-bench: {e}"));
                        figs[i].failed = Some(e.to_string());
                    }
                }
                bar.inc(1);
            }
        }
        all.extend(figs);
        all.extend(reference);
    }
    bar.finish_and_clear();
    Ok(all)
}
