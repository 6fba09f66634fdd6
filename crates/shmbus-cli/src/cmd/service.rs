//! `shmbus serve` and `shmbus call`: a request-response service (the
//! library's `reqrep`, made by `create --kind service`) from the shell.
//!
//! `serve --echo` takes a server entry and answers every request with its
//! own bytes until SIGINT or SIGTERM (a request longer than the service's
//! largest response is refused). `--delay-ms` holds each request that long
//! first: a slow server, to try clients' deadlines against. `--create`
//! makes the service when there is none, of the shape its flags give.
//!
//! `call` sends one request, waits for its response and prints it as one
//! line: its bytes and a newline (with `--hex`, hex digits), as `get`
//! prints a value. A call that ends without a response says how in one
//! line on stderr, with an exit code of its own ([`EXIT_CODES`]), so that
//! a script can tell a slow server from a dead one.

use std::io::Write;
use std::time::{Duration, Instant};

use shmbus::reqrep::{self, CallError, Client, RespondError, SendError, Server};
use shmbus::{OpenError, OpenOptions, Wait};

use crate::cmd::create::ServiceShape;
use crate::cmd::signals;
use crate::cmd::subscribe::{Timeout, parse_timeout};
use crate::error::CliError;

/// `call`'s exit codes, as its help shows them.
pub const EXIT_CODES: &str = "\
Exit codes:
  0  the response, printed
  1  the service could not be used (not found, no client entry free, a bad response)
  2  bad arguments (a request longer than the service's largest, bad hex)
  3  timed out: no response within --timeout
  4  server gone: the server that took the request died before it answered
  5  no server: none is alive to take the request
  6  refused: the server dropped the request unanswered
  7  full: every call slot of the client entry is still held by a server";

/// How long `call` waits unless told.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// How often `serve` looks at its stop flag while it waits for work.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// Arguments of `shmbus serve`.
#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Service name (a bare name lives in /dev/shm) or a path.
    pub name: String,
    /// Answer every request with its own bytes (one longer than the
    /// service's largest response is refused).
    #[arg(long, required = true)]
    pub echo: bool,
    /// Print one line per request on stdout: its client entry, what became
    /// of it (answered, late, refused) and its bytes, each after a tab.
    #[arg(long, short)]
    pub verbose: bool,
    /// Hold each request MS milliseconds before answering it: a slow
    /// server (0 to 3600000).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(0..=3_600_000))]
    pub delay_ms: Option<u64>,
    /// Create the service if there is none at NAME, of the shape the
    /// flags below give (--clients is needed, the rest default as in
    /// `create --kind service`).
    #[arg(long)]
    pub create: bool,
    /// With --create: how many calls each client may have outstanding (1
    /// to 64) [default: 8].
    #[arg(long, value_name = "N")]
    pub slots: Option<u64>,
    #[command(flatten)]
    pub shape: ServiceShape,
    /// With --create: permission bits of the file, in octal.
    #[arg(long, value_name = "OCTAL", value_parser = crate::cmd::create::parse_mode)]
    pub mode: Option<u32>,
}

/// Arguments of `shmbus call`.
#[derive(clap::Args, Debug)]
pub struct CallArgs {
    /// Service name (a bare name lives in /dev/shm) or a path.
    pub name: String,
    /// The request: the argument's bytes (with --hex, the bytes its hex
    /// digits spell), up to the service's largest request.
    #[arg(allow_hyphen_values = true)]
    pub payload: String,
    /// Give up when no response came within SECS seconds (exit 3)
    /// [default: 5].
    #[arg(long, value_name = "SECS", value_parser = parse_timeout, allow_negative_numbers = true)]
    pub timeout: Option<Timeout>,
    /// PAYLOAD is hex digits (two per byte); the response is printed as hex
    /// digits.
    #[arg(long)]
    pub hex: bool,
}

pub fn serve(args: &ServeArgs) -> Result<(), CliError> {
    let server = attach_or_create(args)?;
    signals::stop_on(&[libc::SIGINT, libc::SIGTERM]);
    let mut out = if args.verbose {
        Some(crate::out::stdout()?)
    } else {
        None
    };
    let delay = args.delay_ms.map(Duration::from_millis);
    while !signals::stopped() {
        let Some(request) = server.recv(Wait::For(STOP_CHECK)) else {
            continue;
        };
        let (client, bytes) = (request.client(), request.bytes().to_vec());
        if let Some(delay) = delay {
            // Cut short by a stop: answered now rather than refused.
            pause(delay);
        }
        let outcome = match request.respond(&bytes) {
            Ok(()) => "answered",
            Err(RespondError::Late) => "late",
            // Dropped unanswered: the caller is told it was refused.
            Err(_) => "refused",
        };
        if let Some(out) = &mut out {
            let text = crate::cmd::inspect::escaped(&String::from_utf8_lossy(&bytes));
            writeln!(out, "{client}\t{outcome}\t{text}")
                .and_then(|()| out.flush())
                .map_err(CliError::stdout)?;
        }
    }
    Ok(())
}

/// Sleeps `delay`, or until a stop signal comes.
fn pause(delay: Duration) {
    let until = Instant::now() + delay;
    while !signals::stopped() {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(STOP_CHECK));
    }
}

/// A server of `args.name`: attached, or with `--create` made when there
/// is no service there.
fn attach_or_create(args: &ServeArgs) -> Result<Server<[u8], [u8]>, CliError> {
    if !args.create {
        let flag = args
            .shape
            .clients
            .map(|_| "--clients")
            .or(args.slots.map(|_| "--slots"))
            .or(args.mode.map(|_| "--mode"))
            .or(args.shape.servers.map(|_| "--servers"))
            .or(args.shape.request_size.map(|_| "--request-size"))
            .or(args.shape.response_size.map(|_| "--response-size"));
        if let Some(flag) = flag {
            return Err(CliError::usage(format!(
                "{flag} applies with --create: an existing service keeps its shape (see `shmbus serve --help`)"
            )));
        }
    }
    let opts = OpenOptions::default();
    let missing = match Server::<[u8], [u8]>::attach(&args.name, &opts) {
        Ok(server) => return Ok(server),
        Err(reqrep::AttachError::Open(e @ OpenError::NotFound { .. })) if args.create => e,
        Err(e) => return Err(attach_error(&args.name, e)),
    };
    let Some(clients) = args.shape.clients else {
        return Err(CliError::usage(format!(
            "{missing}; to create it, --create needs --clients <N> (see `shmbus serve --help`)"
        )));
    };
    let opts = args
        .shape
        .options(clients, args.slots)
        .mode(args.mode.unwrap_or(0o600));
    match Server::<[u8], [u8]>::create(&args.name, &opts) {
        Ok(server) => Ok(server),
        // Another `serve --create` made it first: serve beside it.
        Err(shmbus::CreateError::AlreadyExists { .. }) => {
            Server::<[u8], [u8]>::attach(&args.name, &OpenOptions::default())
                .map_err(|e| attach_error(&args.name, e))
        }
        Err(e) => Err(e.into()),
    }
}

/// An attach refused: every entry held is the service's state, not the
/// command line's fault.
fn attach_error(name: &str, e: reqrep::AttachError) -> CliError {
    match e {
        reqrep::AttachError::Open(open) => open.into(),
        e => CliError::runtime(format!("{name}: {e}")),
    }
}

pub fn call(args: &CallArgs) -> Result<(), CliError> {
    let request = if args.hex {
        parse_hex(&args.payload)?
    } else {
        args.payload.as_bytes().to_vec()
    };
    // First: with nowhere to print, no call is made.
    let mut out = crate::out::stdout()?;
    let mut client = Client::<[u8], [u8]>::attach(&args.name, &OpenOptions::default())
        .map_err(|e| attach_error(&args.name, e))?;
    let timeout = args.timeout.as_ref().map_or(CALL_TIMEOUT, |t| t.duration);
    let mut response = Vec::new();
    let name = &args.name;
    let outcome = |code: u8, what: String| Err(CliError::Outcome(code, format!("{name}: {what}")));
    match client.call_into(&request[..], &mut response, Wait::For(timeout)) {
        Ok(()) => {}
        Err(CallError::TimedOut) => {
            let secs = args.timeout.as_ref().map_or(5.0, |t| t.secs);
            return outcome(3, format!("timed out: no response within {secs} s"));
        }
        Err(e @ CallError::ServerGone { .. }) => return outcome(4, format!("server gone: {e}")),
        Err(e @ CallError::NoServer) => return outcome(5, format!("no server: {e}")),
        Err(e @ CallError::Refused { .. }) => return outcome(6, format!("refused: {e}")),
        Err(CallError::Send(e @ SendError::Full { .. })) => {
            return outcome(7, format!("full: {e}"));
        }
        Err(CallError::Send(e @ SendError::TooLong { .. })) => {
            return Err(CliError::usage(format!("{name}: {e}")));
        }
        Err(e) => return Err(CliError::runtime(format!("{name}: {e}"))),
    }
    let mut line = if args.hex {
        crate::cmd::blackboard::hex_of(&response).into_bytes()
    } else {
        response
    };
    line.push(b'\n');
    out.write_all(&line)
        .and_then(|()| out.flush())
        .map_err(CliError::stdout)
}

/// The bytes hex digits spell, two per byte.
fn parse_hex(digits: &str) -> Result<Vec<u8>, CliError> {
    let bad = || {
        CliError::usage(format!(
            "{digits:?} is not hex digits, two per byte (like 0a1b)"
        ))
    };
    if !digits.len().is_multiple_of(2) || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    digits
        .as_bytes()
        .chunks_exact(2)
        .map(|pair| {
            let text = std::str::from_utf8(pair).map_err(|_| bad())?;
            u8::from_str_radix(text, 16).map_err(|_| bad())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::parse_hex;

    #[test]
    fn hex_is_two_digits_per_byte_of_either_case() {
        assert_eq!(parse_hex("0aFf").unwrap(), [0x0a, 0xff]);
        assert_eq!(parse_hex("").unwrap(), Vec::<u8>::new());
        for bad in ["0", "0g", "+1", " 01", "é1"] {
            assert!(parse_hex(bad).is_err(), "{bad:?}");
        }
    }
}
