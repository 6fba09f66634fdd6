//! A request-response server of raw bytes in its own process, for the C
//! and Python bindings' tests across processes (and a small example of
//! `reqrep::Server`). It prints `ready` once it serves, and `taken` each
//! time it takes a request.
//!
//! `cargo run -p shmbus --example reqrep_serve -- NAME [options]`
//! - `--create`: create the service (else serve an existing one);
//!   `--clients N`, `--slots K`, `--request-size B`, `--response-size B`
//!   shape it (defaults 4, 8, 256, 256);
//! - `--mode echo` (default): answer each request with its own bytes;
//!   `--mode hold:MS`: answer each after MS milliseconds (a caller with a
//!   shorter deadline has given up: the answer is late, and it prints
//!   `late`); `--mode hang`: take a request and never answer (a test kills
//!   it); `--mode refuse`: drop each request unanswered;
//! - `--count N`: exit after N requests (default: serve until killed);
//! - `--exit-after S`: exit after S seconds whatever happens (default 60:
//!   no server outlives a test that lost track of it).

use std::io::Write;
use std::time::Duration;

use shmbus::{
    OpenOptions, Wait,
    reqrep::{self, RespondError, Server},
};

#[derive(Clone, Copy)]
enum Mode {
    Echo,
    Hold(Duration),
    Hang,
    Refuse,
}

struct Args {
    name: String,
    create: bool,
    clients: u32,
    slots: u32,
    request_size: u32,
    response_size: u32,
    mode: Mode,
    count: Option<u64>,
    exit_after: Duration,
}

fn parse() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let mut out = Args {
        name: String::new(),
        create: false,
        clients: 4,
        slots: 8,
        request_size: 256,
        response_size: 256,
        mode: Mode::Echo,
        count: None,
        exit_after: Duration::from_secs(60),
    };
    let number = |v: Option<String>, flag: &str| -> Result<u64, String> {
        v.ok_or(format!("{flag} needs a value"))?
            .parse()
            .map_err(|e| format!("{flag}: {e}"))
    };
    let small =
        |n: u64, flag: &str| u32::try_from(n).map_err(|_| format!("{flag}: {n} is too large"));
    while let Some(a) = args.next() {
        match a.as_str() {
            "--create" => out.create = true,
            "--clients" => out.clients = small(number(args.next(), &a)?, &a)?,
            "--slots" => out.slots = small(number(args.next(), &a)?, &a)?,
            "--request-size" => out.request_size = small(number(args.next(), &a)?, &a)?,
            "--response-size" => out.response_size = small(number(args.next(), &a)?, &a)?,
            "--count" => out.count = Some(number(args.next(), &a)?),
            "--exit-after" => out.exit_after = Duration::from_secs(number(args.next(), &a)?),
            "--mode" => {
                let m = args.next().ok_or("--mode needs a value")?;
                out.mode = match m.as_str() {
                    "echo" => Mode::Echo,
                    "hang" => Mode::Hang,
                    "refuse" => Mode::Refuse,
                    hold => match hold.strip_prefix("hold:") {
                        Some(ms) => Mode::Hold(Duration::from_millis(
                            ms.parse().map_err(|e| format!("--mode {hold}: {e}"))?,
                        )),
                        None => {
                            return Err(format!(
                                "--mode {m}: expected echo, hold:MS, hang or refuse"
                            ));
                        }
                    },
                };
            }
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            name if out.name.is_empty() => out.name = name.to_owned(),
            extra => return Err(format!("unexpected argument {extra}")),
        }
    }
    if out.name.is_empty() {
        return Err(
            "usage: reqrep_serve NAME [--create] [--mode echo|hold:MS|hang|refuse] ...".into(),
        );
    }
    Ok(out)
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("reqrep_serve: {e}");
            std::process::exit(2);
        }
    };
    let limit = args.exit_after;
    std::thread::spawn(move || {
        std::thread::sleep(limit);
        eprintln!("reqrep_serve: exiting after {limit:?}");
        std::process::exit(3);
    });
    let server = if args.create {
        let opts = reqrep::Options::new(args.clients)
            .slots(args.slots)
            .request_size(args.request_size)
            .response_size(args.response_size);
        Server::<[u8], [u8]>::create(&args.name, &opts).map_err(|e| e.to_string())
    } else {
        Server::<[u8], [u8]>::attach(&args.name, &OpenOptions::default()).map_err(|e| e.to_string())
    };
    let server = match server {
        Ok(s) => s,
        Err(e) => {
            eprintln!("reqrep_serve: {}: {e}", args.name);
            std::process::exit(1);
        }
    };
    say("ready");
    let mut served = 0u64;
    while args.count.is_none_or(|n| served < n) {
        let Some(request) = server.recv(Wait::Forever) else {
            continue;
        };
        served += 1;
        say("taken");
        match args.mode {
            Mode::Echo => {
                let bytes = request.bytes().to_vec();
                if let Err(e) = request.respond(&bytes) {
                    eprintln!("reqrep_serve: {e}");
                }
            }
            Mode::Hold(d) => {
                std::thread::sleep(d);
                let bytes = request.bytes().to_vec();
                match request.respond(&bytes) {
                    Ok(()) => say("answered"),
                    Err(RespondError::Late) => say("late"),
                    Err(e) => eprintln!("reqrep_serve: {e}"),
                }
            }
            Mode::Hang => {
                // Held, never answered: the caller learns only from this
                // process's death.
                std::mem::forget(request);
                loop {
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
            Mode::Refuse => drop(request),
        }
    }
}
