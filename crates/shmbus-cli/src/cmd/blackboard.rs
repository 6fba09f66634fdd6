//! `shmbus get` and `shmbus put`: one key of a blackboard (the library's
//! `blackboard`), read or written from the shell. Keys and values are
//! bytes: the argument's own bytes, zero-padded to the table's size (as
//! `pub` pads a line to a message), or with `--hex` the bytes its hex
//! digits spell, exactly the table's size. `get` prints the value as `sub`
//! prints a message (its zero padding trimmed, then a newline), or with
//! `--hex` as hex digits.

use std::io::Write;

use std::time::{Duration, Instant};

use shmbus::blackboard::{GetError, ManyWriter, PutError, Reader, RemoveError, Writer};
use shmbus::error::Role;
use shmbus::{AttachError, OpenOptions, Publishers};

use crate::error::CliError;

/// Arguments of `shmbus get`.
#[derive(clap::Args, Debug)]
pub struct GetArgs {
    /// Blackboard name (a bare name lives in /dev/shm) or a path.
    pub name: String,
    /// The key: its bytes, zero-padded to the table's key size.
    pub key: String,
    /// KEY is hex digits (two per byte, exactly the key size); the value
    /// is printed as hex digits.
    #[arg(long)]
    pub hex: bool,
    /// Print the value's version (the table's count of writes when it was
    /// written) before it, and a tab.
    #[arg(long)]
    pub with_version: bool,
}

/// Arguments of `shmbus put`.
#[derive(clap::Args, Debug)]
pub struct PutArgs {
    /// Blackboard name (a bare name lives in /dev/shm) or a path.
    pub name: String,
    /// The key: its bytes, zero-padded to the table's key size.
    pub key: String,
    /// The value: its bytes, zero-padded to the table's value size.
    /// Without it, the key is removed.
    pub value: Option<String>,
    /// KEY and VALUE are hex digits (two per byte, exactly the sizes).
    #[arg(long)]
    pub hex: bool,
}

/// The bytes `arg` stands for, `size` of them.
fn bytes_of(what: &str, arg: &str, size: usize, hex: bool) -> Result<Vec<u8>, CliError> {
    let bytes = if hex {
        let digits = arg.as_bytes();
        if digits.len() != 2 * size {
            return Err(CliError::usage(format!(
                "{what} {arg:?}: {} hex digits, the table's {what}s are {size} bytes ({} digits)",
                digits.len(),
                2 * size
            )));
        }
        let mut out = Vec::with_capacity(size);
        for pair in digits.chunks_exact(2) {
            let text = std::str::from_utf8(pair).unwrap_or("");
            let byte = u8::from_str_radix(text, 16).map_err(|_| {
                CliError::usage(format!("{what} {arg:?} is not hex digits (0-9, a-f)"))
            })?;
            out.push(byte);
        }
        out
    } else {
        let mut out = arg.as_bytes().to_vec();
        if out.len() > size {
            return Err(CliError::usage(format!(
                "{what} {arg:?} is {} bytes, the table's {what}s are {size}",
                out.len()
            )));
        }
        out.resize(size, 0);
        out
    };
    Ok(bytes)
}

pub(crate) fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn get(args: &GetArgs) -> Result<(), CliError> {
    let mut reader = Reader::<[u8], [u8]>::open(&args.name, &OpenOptions::default())?;
    let key = bytes_of("key", &args.key, reader.key_size(), args.hex)?;
    let (value, version) = match reader.get_bytes(&key) {
        Ok(Some(found)) => found,
        Ok(None) => {
            return Err(CliError::runtime(format!(
                "{}: no key {:?}",
                args.name, args.key
            )));
        }
        Err(e @ (GetError::Busy { .. } | GetError::Stuck { .. } | GetError::Corrupt { .. })) => {
            return Err(CliError::runtime(format!("{}: {e}", args.name)));
        }
        Err(e) => return Err(CliError::usage(format!("{}: {e}", args.name))),
    };
    let mut out = crate::out::stdout()?;
    let mut line = Vec::new();
    if args.with_version {
        line.extend_from_slice(format!("{version}\t").as_bytes());
    }
    if args.hex {
        line.extend_from_slice(hex_of(value).as_bytes());
    } else {
        line.extend_from_slice(crate::cmd::subscribe::trim_padding(value));
    }
    line.push(b'\n');
    out.write_all(&line)
        .and_then(|()| out.flush())
        .map_err(CliError::stdout)
}

pub fn put(args: &PutArgs) -> Result<(), CliError> {
    let opts = OpenOptions::default();
    match Writer::<[u8], [u8]>::attach(&args.name, &opts) {
        Ok(mut w) => put_with(
            args,
            (w.key_size(), w.value_size()),
            |key, value| match value {
                Some(value) => w.put_bytes(key, value).map(drop).map_err(Failed::Put),
                None => w.remove_bytes(key).map(drop).map_err(Failed::Remove),
            },
        ),
        // A table made for many writers: one more, beside those running.
        Err(AttachError::WrongMode {
            role: Role::Writer,
            found: Publishers::Many,
            ..
        }) => {
            let mut w = ManyWriter::<[u8], [u8]>::attach(&args.name, &opts)?;
            // An entry a dead writer left mid-write is busy until the
            // table's unblock timeout has passed, then taken over: wait
            // that long (and a little more), no longer.
            let until = Instant::now() + 2 * w.unblock_timeout() + Duration::from_millis(100);
            put_with(args, (w.key_size(), w.value_size()), |key, value| {
                loop {
                    let res = match value {
                        Some(value) => w.put_bytes(key, value).map(drop).map_err(Failed::Put),
                        None => w.remove_bytes(key).map(drop).map_err(Failed::Remove),
                    };
                    match res {
                        Err(
                            Failed::Put(PutError::Busy { .. })
                            | Failed::Remove(RemoveError::Busy { .. }),
                        ) if Instant::now() < until => {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        res => return res,
                    }
                }
            })
        }
        Err(e) => Err(e.into()),
    }
}

/// Why a write of `put` failed.
enum Failed {
    Put(PutError),
    Remove(RemoveError),
}

/// `put`'s work over either writer: the key and value as bytes of the
/// table's sizes, then `write` (a removal without a value).
fn put_with(
    args: &PutArgs,
    (key_size, value_size): (usize, usize),
    mut write: impl FnMut(&[u8], Option<&[u8]>) -> Result<(), Failed>,
) -> Result<(), CliError> {
    let key = bytes_of("key", &args.key, key_size, args.hex)?;
    let value = match &args.value {
        Some(value) => Some(bytes_of("value", value, value_size, args.hex)?),
        None => None,
    };
    write(&key, value.as_deref()).map_err(|e| match e {
        Failed::Put(e) => CliError::runtime(format!("{}: {e}", args.name)),
        Failed::Remove(e @ RemoveError::KeySize { .. }) => {
            CliError::usage(format!("{}: {e}", args.name))
        }
        Failed::Remove(e) => CliError::runtime(format!("{}: {e}", args.name)),
    })
}
