//! `shmbus`: create, feed, watch and clean up shared-memory buses from the
//! shell, and play the late-join demo. (The benchmark is its own binary,
//! `shmbus-bench`, so that installing `shmbus` builds none of its peers.)
//!
//! Every error is one line on stderr, `shmbus: ...`, with exit code 2 for a
//! usage error or bad input and 1 for a failure at run time (see `error`).
//! That holds for clap's own usage errors too, which are flattened to one
//! line; `--help` and `--version` print as clap makes them.

// Its writer half is the bridge's (feature `bridge`); the reader half is
// stat's, top's and clean's in every build.
#[cfg_attr(not(feature = "bridge"), allow(dead_code))]
mod bridge_status;
mod cmd;
mod error;
mod group;
mod out;
mod version;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use cmd::{
    blackboard, bridge, clean, create, demo, export, generate, inspect, publish, record, replay,
    service, subscribe, subscribe_many, top,
};
use error::CliError;

/// Shared-memory message buses for processes on one Linux machine.
// The version is set at run time (`cli_command`): it names the formats'
// versions, constants of the core that `concat!` cannot read.
#[derive(Parser, Debug)]
#[command(name = "shmbus", propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Create a broadcast bus of raw byte messages (in a block pool with
    /// --pool), a stream of records, a blackboard, or a service of
    /// requests and responses.
    Create(create::CreateArgs),
    /// Publish each line of stdin as one message (one record of a stream).
    Pub(publish::PubArgs),
    /// Print a blackboard key's latest value (`create --kind blackboard`).
    Get(blackboard::GetArgs),
    /// Set a blackboard key's value, or remove the key (no VALUE).
    Put(blackboard::PutArgs),
    /// Print each message of a bus (record of a stream) as one line.
    Sub(subscribe::SubArgs),
    /// Answer a service's requests (`create --kind service`): --echo sends
    /// each request's bytes back, until SIGINT or SIGTERM.
    Serve(service::ServeArgs),
    /// Call a service once and print its response as one line; how a
    /// call ended without one is one line on stderr and its exit code.
    #[command(after_help = service::EXIT_CODES)]
    Call(service::CallArgs),
    /// Show a bus's, stream's, blackboard's or service's geometry,
    /// counters and processes.
    Stat(inspect::StatArgs),
    /// List the buses in a directory.
    Ls(inspect::LsArgs),
    /// Watch running buses live: rates, each subscriber's position and lag,
    /// liveness, CPU and context switches, a pool bus's blocks and those
    /// each subscriber holds, a blackboard's keys used, updates/s and
    /// hottest keys (q quits); --json or --prometheus print one sample.
    Top(top::TopArgs),
    /// Record every message of buses of any kind, with its sequence and
    /// receive time, to a file (lags as gaps) until SIGINT or SIGTERM;
    /// --lossless, --rotate-size, --rotate-secs, --mode, --group,
    /// --format mcap.
    Record(record::RecordArgs),
    /// Publish a recording (native or MCAP) into a bus at the recorded
    /// pace (--speed), its gaps as gaps.
    Replay(replay::ReplayArgs),
    /// Convert a recording into an MCAP file (--mcap OUT), every part,
    /// every message, gap and time.
    Export(export::ExportArgs),
    /// Remove the buses no live process uses, and the status files that
    /// bridges and recorders of buses in the same directory left when
    /// killed.
    Clean(clean::CleanArgs),
    /// Carry a bus to other machines over Zenoh: `bridge out` puts a local
    /// bus's messages on a key, `bridge in` publishes a key into a local
    /// bus at the same sequence numbers (losses counted end to end).
    Bridge(bridge::BridgeArgs),
    /// Remove one bus.
    Rm(clean::RmArgs),
    /// The late-join scenario: a journaled publisher of key/value updates, two
    /// live subscribers and a late joiner that is killed and rejoins; prints
    /// per-round latency and checks every subscriber ends with the
    /// publisher's state.
    Demo(demo::DemoArgs),
    /// One process of the demo (run by `demo` itself).
    #[command(hide = true)]
    DemoChild(demo::ChildArgs),
    /// Man pages and shell completions, for installing the tool.
    #[command(hide = true)]
    Generate(generate::GenerateArgs),
}

/// The whole tool's clap command, with `--version`'s line.
fn cli_command() -> clap::Command {
    Cli::command().version(version::line())
}

/// `Cli::try_parse_from`, with `cli_command`'s version (clap's derived
/// parse would build the command without it).
fn parse<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let matches = cli_command().try_get_matches_from(args)?;
    Cli::from_arg_matches(&matches)
}

fn main() -> ExitCode {
    let cli = match parse(std::env::args_os()) {
        Ok(cli) => cli,
        Err(err) => return clap_error(err),
    };
    match run(&cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => err.report(),
    }
}

fn run(command: &Command) -> Result<(), CliError> {
    match command {
        Command::Create(args) => create::run(args),
        Command::Pub(args) => publish::run(args),
        Command::Get(args) => blackboard::get(args),
        Command::Put(args) => blackboard::put(args),
        // Several names: one select over them (`subscribe_many` sits on
        // `subscribe`'s arguments and printing).
        Command::Sub(args) if !args.more.is_empty() => subscribe_many::run(args),
        Command::Sub(args) => subscribe::run(args),
        Command::Serve(args) => service::serve(args),
        Command::Call(args) => service::call(args),
        Command::Stat(args) => inspect::stat(args),
        Command::Ls(args) => inspect::ls(args),
        Command::Top(args) => top::run(args),
        Command::Record(args) => record::record(args),
        Command::Replay(args) => replay::replay(args),
        Command::Clean(args) => clean::clean(args),
        Command::Export(args) => export::run(args),
        Command::Bridge(args) => bridge::run(args),
        Command::Rm(args) => clean::rm(args),
        Command::Demo(args) => demo::run(args),
        Command::DemoChild(args) => demo::run_child(args),
        Command::Generate(args) => generate::run(args, cli_command()),
    }
}

/// Help and version go out as clap writes them; a usage error becomes our
/// one line, exit 2.
fn clap_error(err: clap::Error) -> ExitCode {
    let is_help = matches!(
        err.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    if is_help {
        let _ = err.print();
        return ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(2));
    }
    CliError::usage(one_line(&err.to_string(), typed_subcommand().as_deref())).report()
}

/// The first paragraph of clap's message, its lines joined, without the
/// `error: ` label: "the following required arguments were not provided:
/// `--slots <N>`". The usage and tip paragraphs after it are dropped
/// for a pointer to the right `--help`.
fn one_line(rendered: &str, subcommand: Option<&str>) -> String {
    let first = rendered.split("\n\n").next().unwrap_or(rendered);
    let joined: Vec<&str> = first
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let joined = joined.join(" ");
    let text = joined.strip_prefix("error: ").unwrap_or(&joined);
    match subcommand {
        Some(sub) => format!("{text} (see `shmbus {sub} --help`)"),
        None => format!("{text} (see `shmbus --help`)"),
    }
}

/// The subcommand the user typed, if the first argument names one.
fn typed_subcommand() -> Option<String> {
    let arg = std::env::args().nth(1)?;
    cli_command().find_subcommand(&arg).map(|_| arg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_definitions_are_consistent() {
        cli_command().debug_assert();
    }

    #[test]
    fn clap_errors_become_one_line() {
        let err = parse(["shmbus", "create", "x", "--msg-size", "8"]).unwrap_err();
        let line = one_line(&err.to_string(), Some("create"));
        assert!(!line.contains('\n'), "{line}");
        assert!(line.contains("--slots <N>"), "{line}");
        assert!(!line.starts_with("error"), "{line}");
        assert!(line.ends_with("(see `shmbus create --help`)"), "{line}");
    }
}
