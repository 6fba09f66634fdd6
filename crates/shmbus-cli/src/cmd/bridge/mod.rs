//! `shmbus bridge out|in`: a bus carried over Zenoh (crate shmbus-zenoh).
//!
//! Both run until SIGINT, SIGTERM or SIGHUP. On stdout: `listening` once the
//! bridge-in's subscription is declared, `matched` / `unmatched` when the
//! bridge-out's key gains or loses a remote subscriber (puts before that
//! go nowhere), `evicted ...` when the bus evicts a `--lossless` bridge-out
//! (it held the bus's publisher back past the eviction timeout), and with
//! `--stats` one line a second of counts.
//!
//! Each keeps a status file (`crate::bridge_status`) from its stats
//! callback, for `shmbus stat` and `top`; it is removed when the bridge
//! ends, however it ends short of being killed. A status that cannot be
//! written is said once on stderr, and the bridge goes on without it.
//!
//! The bridge is the cargo feature `bridge` (it brings Zenoh and tokio): a
//! `shmbus` built without it parses the same arguments and says, in one
//! line, how to get it.

use std::path::PathBuf;

use crate::error::CliError;

#[cfg(feature = "bridge")]
mod run;

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
    /// Read the bus as a lossless subscriber (`sub --lossless`): a network
    /// slower than the bus holds the bus's publisher back instead of
    /// losing, up to the bus's eviction timeout; held back longer, the
    /// bridge is evicted (it says `evicted`), lossy from then on, and its
    /// losses are counted and sent on as gaps.
    #[arg(long)]
    pub lossless: bool,
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

/// Runs the bridge (feature `bridge`).
///
/// # Errors
/// What the bridge fails with; without the feature, always: how to build it.
pub fn run(args: &BridgeArgs) -> Result<(), CliError> {
    #[cfg(feature = "bridge")]
    return run::run(args);
    #[cfg(not(feature = "bridge"))]
    {
        let _ = args;
        Err(CliError::runtime(
            "bridge: this shmbus was built without the Zenoh bridge; build it with the `bridge` feature (cargo install --path crates/shmbus-cli --features bridge)",
        ))
    }
}
