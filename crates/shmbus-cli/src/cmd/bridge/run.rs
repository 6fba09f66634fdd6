//! The bridge itself (feature `bridge`): the options handed to
//! `shmbus_zenoh`, its counts shown on stdout and in the status file.

use std::io::Write;

use shmbus::Start;
use shmbus_zenoh::{Endpoints, InOptions, OutOptions, bridge_in, bridge_out};

use super::{BridgeArgs, Direction, ZenohArgs};
use crate::bridge_status::{self, Counts, Direction as Way, Identity};
use crate::cmd::signals;
use crate::error::{CliError, print_error};

pub fn run(args: &BridgeArgs) -> Result<(), CliError> {
    // SIGHUP too: a bridge whose terminal closes ends as cleanly (its
    // status file removed) as one told to stop.
    signals::stop_on(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP]);
    match &args.direction {
        Direction::Out(a) => {
            let opts = OutOptions {
                name: a.name.clone(),
                key: a.key.clone(),
                endpoints: endpoints(&a.zenoh),
                start: if a.oldest { Start::Oldest } else { Start::Next },
                wait: a.wait.strategy(),
                lossless: a.lossless,
            };
            let mut status = Status::create(Way::Out, &a.name, &a.key, &a.zenoh);
            let mut matched = false;
            let mut evicted = false;
            let stats = a.zenoh.stats;
            bridge_out(&opts, &signals::STOP, |s| {
                if s.evicted && !evicted {
                    evicted = true;
                    say(
                        "evicted: this bridge held the bus's publisher back past the bus's \
                         eviction timeout; lossy from now on, its losses counted and sent on \
                         as gaps",
                    );
                }
                if s.matched != matched {
                    matched = s.matched;
                    say(if matched { "matched" } else { "unmatched" });
                }
                if stats {
                    say(&format!("out: forwarded {} lost {}", s.forwarded, s.lost));
                }
                status.update(Counts {
                    messages: s.forwarded,
                    lost: s.lost,
                    repeats: 0,
                    bad_frames: 0,
                    bytes: 0,
                    peer: s.matched,
                });
            })
            .map(drop)
            .map_err(cli_error)
        }
        Direction::In(a) => {
            let opts = InOptions {
                key: a.key.clone(),
                name: a.name.clone(),
                create: a.create,
                journal: a.journal.clone(),
                message_type: a.message_type.clone().map(|t| (t.name, t.align)),
                bootstrap: a.bootstrap,
                replay_timeout: seconds(a.replay_timeout, "--replay-timeout")?,
                endpoints: endpoints(&a.zenoh),
                state: bridge_status::in_state_path(&a.name)
                    .map_err(|e| {
                        print_error(&format!(
                            "{e} (the bridge goes on; a restart after the upstream is made again may take its messages for repeats)"
                        ))
                    })
                    .ok(),
            };
            let mut status = Status::create(Way::In, &a.name, &a.key, &a.zenoh);
            let mut listening = false;
            let stats = a.zenoh.stats;
            let mut frames_before = 0;
            let mut state_errors = 0;
            bridge_in(&opts, &signals::STOP, |s| {
                if s.state_errors != state_errors {
                    state_errors = s.state_errors;
                    if let Some(why) = &s.state_error {
                        print_error(&format!("{why} (ignored; the bridge goes on)"));
                    }
                }
                if !listening {
                    listening = true;
                    say("listening");
                }
                if stats {
                    say(&format!(
                        "in: published {} replayed {} skipped {} repeats {} bad frames {} queries {}",
                        s.published, s.replayed, s.skipped, s.repeats, s.bad_frames, s.queries
                    ));
                }
                // Every frame moves one of these: a message is published
                // or a repeat, a gap is skipped or a repeat.
                let frames = s
                    .published
                    .wrapping_add(s.skipped)
                    .wrapping_add(s.repeats)
                    .wrapping_add(s.bad_frames);
                status.update(Counts {
                    messages: s.published,
                    lost: s.skipped,
                    repeats: s.repeats,
                    bad_frames: s.bad_frames,
                    bytes: 0,
                    peer: frames != frames_before,
                });
                frames_before = frames;
            })
            .map(drop)
            .map_err(cli_error)
        }
    }
}

/// A bus the options could never make is the command line's fault (exit
/// 2, as `shmbus create` says it); anything else failed at run time.
fn cli_error(e: shmbus_zenoh::BridgeError) -> CliError {
    use shmbus::CreateError::{InvalidGeometry, Name};
    let usage = matches!(
        &e,
        shmbus_zenoh::BridgeError::Create {
            source: InvalidGeometry(_) | Name(_),
            ..
        }
    );
    if usage {
        CliError::usage(e.to_string())
    } else {
        CliError::runtime(e.to_string())
    }
}

/// A positive, finite number of seconds.
fn seconds(secs: f64, flag: &str) -> Result<std::time::Duration, CliError> {
    std::time::Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            CliError::usage(format!(
                "{flag} {secs}: expected a positive number of seconds"
            ))
        })
}

/// The bridge's status file, or nothing once writing it failed (said
/// once: the bridge is worth more than its status).
struct Status(Option<bridge_status::Writer>);

impl Status {
    fn create(direction: Way, bus: &str, key: &str, z: &ZenohArgs) -> Status {
        let identity = Identity {
            direction,
            bus: bridge_status::bus_path(bus),
            key: key.to_owned(),
            listen: z.listen.clone(),
            connect: z.connect.clone(),
        };
        Status(
            bridge_status::Writer::create(identity)
                .map_err(|e| warn(&e))
                .ok(),
        )
    }

    fn update(&mut self, counts: Counts) {
        if let Some(Err(e)) = self.0.as_mut().map(|w| w.update(counts)) {
            warn(&e);
            // Dropping it removes what is there: no status rather than an
            // old one.
            self.0 = None;
        }
    }
}

fn warn(e: &bridge_status::WriteError) {
    print_error(&format!(
        "{e} (the bridge goes on; `shmbus stat` and `top` will not show it)"
    ));
}

fn endpoints(z: &ZenohArgs) -> Endpoints {
    Endpoints {
        listen: z.listen.clone(),
        connect: z.connect.clone(),
        config: z.config.clone(),
    }
}

/// One line on stdout, at once (a closed stdout is not the bridge's
/// business: it goes on).
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}
