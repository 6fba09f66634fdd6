//! `shmbus bridge out|in`: a bus carried over Zenoh (crate shmbus-zenoh).
//!
//! Both run until SIGINT, SIGTERM or SIGHUP. On stdout: `listening` once the
//! bridge-in's subscription is declared, `matched` / `unmatched` when the
//! bridge-out's key gains or loses a remote subscriber (puts before that
//! go nowhere), and with `--stats` one line a second of counts.
//!
//! Each keeps a status file (`crate::bridge_status`) from its stats
//! callback, for `shmbus stat` and `top`; it is removed when the bridge
//! ends, however it ends short of being killed. A status that cannot be
//! written is said once on stderr, and the bridge goes on without it.

use std::io::Write;
use std::path::PathBuf;

use shmbus::Start;
use shmbus_zenoh::{bridge_in, bridge_out, Endpoints, InOptions, OutOptions};

use crate::bridge_status::{self, Counts, Direction as Way, Identity};
use crate::cmd::signals;
use crate::error::{print_error, CliError};

/// `shmbus bridge ...`.
#[derive(clap::Args, Debug)]
pub struct BridgeArgs {
    #[command(subcommand)]
    pub direction: Direction,
}

/// Which way.
#[derive(clap::Subcommand, Debug)]
pub enum Direction {
    /// Read a local bus and put each message on Zenoh under KEY, with its
    /// upstream sequence (losses are sent on as gaps).
    Out(OutArgs),
    /// Publish what arrives on Zenoh under KEY into a local bus, at the
    /// upstream's sequence numbers (losses become `lagged` downstream).
    In(InArgs),
}

/// Zenoh endpoints and config, shared by both directions.
#[derive(clap::Args, Debug)]
pub struct ZenohArgs {
    /// Listen on this Zenoh endpoint (repeatable), like tcp/10.0.0.1:7447.
    #[arg(long, value_name = "ENDPOINT")]
    pub listen: Vec<String>,
    /// Connect to this Zenoh endpoint (repeatable).
    #[arg(long, value_name = "ENDPOINT")]
    pub connect: Vec<String>,
    /// A Zenoh config file (JSON5 or YAML: TLS, access control, routers),
    /// read before --listen and --connect. Without it: peer to peer, no
    /// multicast scouting, only the endpoints given.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print a line of counts on stdout every second.
    #[arg(long)]
    pub stats: bool,
}

/// `bridge out`.
#[derive(clap::Args, Debug)]
pub struct OutArgs {
    /// The local bus (a bare name lives in /dev/shm).
    pub name: String,
    /// The Zenoh key expression to publish on.
    #[arg(long, value_name = "KEYEXPR")]
    pub key: String,
    /// Start with the oldest message still in the ring rather than the next.
    #[arg(long)]
    pub oldest: bool,
    /// How to wait for the bus's next message (spin: lowest latency, one
    /// core busy).
    #[arg(long, value_enum, default_value_t = crate::cmd::subscribe::Wait::Futex)]
    pub wait: crate::cmd::subscribe::Wait,
    #[command(flatten)]
    pub zenoh: ZenohArgs,
}

/// `bridge in`.
#[derive(clap::Args, Debug)]
pub struct InArgs {
    /// The Zenoh key expression to subscribe to.
    pub key: String,
    /// The local bus to publish into (a bare name lives in /dev/shm).
    pub name: String,
    /// Create the bus with N slots and the upstream's message size when
    /// the first message arrives (mode 0600), unless it exists already (a
    /// restarted bridge-in carries on in it): an existing bus is taken
    /// over only if it is yours with a mode within 0600, so no other user
    /// can make it first and read the mirror. Without this it must exist.
    /// Either way it must have no other live publisher.
    #[arg(long, value_name = "N")]
    pub create: Option<u64>,
    /// With --create: give the bus a journal at PATH, started from the
    /// upstream's journal (implies --bootstrap), so that `sub --bootstrap`
    /// on this host gets the upstream's whole state.
    #[arg(long, value_name = "PATH", requires = "create")]
    pub journal: Option<PathBuf>,
    /// With --create: the message type the bus records, as the upstream's
    /// (`shmbus create --type`), so that typed subscribers on this host
    /// (Rust `Message`, C, Python) may open it.
    #[arg(long = "type", value_name = "NAME[:ALIGN]", requires = "create", value_parser = crate::cmd::create::parse_type)]
    pub message_type: Option<crate::cmd::create::MessageType>,
    /// Start from the upstream's journal (its compacted state and every
    /// record after; the upstream bus must be journaled), then go live:
    /// every sequence once.
    #[arg(long)]
    pub bootstrap: bool,
    /// Seconds a journal query (bootstrap, or the repair of a hole) may
    /// take.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub replay_timeout: f64,
    #[command(flatten)]
    pub zenoh: ZenohArgs,
}

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
            };
            let mut status = Status::create(Way::Out, &a.name, &a.key, &a.zenoh);
            let mut matched = false;
            let stats = a.zenoh.stats;
            bridge_out(&opts, &signals::STOP, |s| {
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
