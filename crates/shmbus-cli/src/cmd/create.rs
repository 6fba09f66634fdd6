//! `shmbus create`: makes a broadcast bus of raw byte messages, a stream
//! of byte records, a blackboard or a request-response service, then
//! exits.
//!
//! The creator is the bus's first publisher (the stream's first producer);
//! its lock dies with this process, which is what lets `shmbus pub` attach
//! afterwards.
//!
//! With `--journal PATH` the bus is journaled: its header names the file,
//! every publisher appends to it first, and `sub --bootstrap` reads it.
//!
//! With `--pool BLOCK_SIZE:BLOCKS` it is a pool bus: messages of any length
//! up to a block live in a shared pool of blocks, and the ring's slots
//! carry their descriptors (see the library's `pool::Publisher`).
//!
//! `--lossless-subscribers N` and `--evict-ms MS` set a bus's gate: how many
//! lossless subscribers (`sub --lossless`) may hold its publisher back (0:
//! none, a bus that never waits), and how long one may before it is
//! evicted. Every broadcast kind takes them (plain, many-publisher, pool,
//! journaled); a stream refuses them in one line (it has one consumer,
//! which loses nothing).
//!
//! `--kind service` makes a service of raw requests and responses
//! (`shmbus serve` answers it, `shmbus call` calls it): `--clients` entries
//! of `--slots` calls each, `--servers` entries, the largest request and
//! response in `--request-size` and `--response-size`. Every other kind's
//! flag is refused for it in one line, and its flags for every other kind.

use std::path::{Path, PathBuf};
use std::time::Duration;

use shmbus::{BusOptions, Publisher, journal, mem::HugePages, pool, stream};

use crate::error::CliError;

/// Arguments of `shmbus create`.
#[derive(clap::Args, Debug)]
pub struct CreateArgs {
    /// Bus name (a bare name lives in /dev/shm) or a path.
    pub name: String,
    /// Bytes per message (1 to 16 MiB); shorter messages are zero-padded.
    /// Required for a broadcast bus; a stream takes no message size (its
    /// records are any length up to half its --bytes, less 8), nor
    /// does a pool bus (its messages are any length up to a block).
    #[arg(long, value_name = "BYTES")]
    pub msg_size: Option<u32>,
    /// A pool bus: messages of any length up to BLOCK_SIZE bytes (a
    /// multiple of 64, up to 1 GiB) live in a pool of BLOCKS blocks, more
    /// than its --slots (each message on the ring keeps its block); the
    /// slots carry 16-byte descriptors. Both in plain numbers: 4096:64.
    #[arg(long, value_name = "BLOCK_SIZE:BLOCKS", value_parser = parse_pool)]
    pub pool: Option<Pool>,
    /// A broadcast or pool bus: its number of slots, a power of two. A
    /// service: how many calls each client may have outstanding (1 to 64)
    /// [default: 8].
    #[arg(long, value_name = "N", required_unless_present_any = ["bytes", "capacity", "keys", "clients", "kind"])]
    pub slots: Option<u64>,
    /// A stream: its size in bytes, a power of two from 64 B to 4 GiB.
    #[arg(long, value_name = "N", conflicts_with = "slots")]
    pub bytes: Option<u64>,
    /// The older spelling of --slots (a bus) and --bytes (a stream), kept
    /// for scripts; one word per unit is what the help shows.
    #[arg(long, value_name = "N", hide = true, conflicts_with_all = ["slots", "bytes"])]
    pub capacity: Option<u64>,
    /// The message type a broadcast bus (the record type a stream, the
    /// blocks' message type a pool bus, with its size in --msg-size)
    /// records, as the Rust `Message` trait, C and Python name it: a schema
    /// name (1 to 64 bytes) and its alignment (default 1; at most 8 for a
    /// stream, 64 for a pool), like `md.Tick:8`. Openers that name a type
    /// must then name this one; without it the bus carries `bytes`, the
    /// stream `stream` and the pool `bytes`, raw records of any length.
    #[arg(long = "type", value_name = "NAME[:ALIGN]", value_parser = parse_type)]
    pub message_type: Option<MessageType>,
    /// A blackboard: the most keys it holds (1 to 2^24).
    #[arg(long, value_name = "N", conflicts_with_all = ["slots", "bytes", "capacity"])]
    pub keys: Option<u64>,
    /// A blackboard: bytes per key (1 to 1024).
    #[arg(long, value_name = "BYTES")]
    pub key_size: Option<u32>,
    /// A blackboard: bytes per value (1 to 1 MiB).
    #[arg(long, value_name = "BYTES")]
    pub value_size: Option<u32>,
    /// A blackboard: the key type it records, as --type names the value
    /// type (default `bytes`).
    #[arg(long = "key-type", value_name = "NAME[:ALIGN]", value_parser = parse_type)]
    pub key_type: Option<MessageType>,
    #[command(flatten)]
    pub service: ServiceShape,
    /// Permission bits of the file, in octal (660 lets the group in).
    #[arg(long, value_name = "OCTAL", default_value = "600", value_parser = parse_mode)]
    pub mode: u32,
    /// The file's group, a name or a number (default: yours), so that
    /// with --mode 660 a team's users in that group may open it; a journal
    /// (and each compaction's file) gets the same group. You must be a
    /// member of the group.
    #[arg(long, value_name = "GROUP", value_parser = parse_group)]
    pub group: Option<u32>,
    /// Touch every page now, so the first messages do not page-fault.
    #[arg(long)]
    pub prefault: bool,
    /// Lock the segment in memory (subject to RLIMIT_MEMLOCK).
    #[arg(long)]
    pub mlock: bool,
    /// What the bus carries.
    #[arg(long, value_enum, default_value_t = BusKind::Broadcast)]
    pub kind: BusKind,
    /// Journal every message to this file (a broadcast bus only), so that
    /// `sub --bootstrap` can start with everything published. An existing
    /// journal there is continued if it is yours and lets write no one the
    /// bus's mode does not (refused otherwise, naming its owner).
    #[arg(long, value_name = "PATH")]
    pub journal: Option<PathBuf>,
    /// A broadcast bus: one publisher at a time, or with `many` any number
    /// of `shmbus pub` processes at once (a many-publisher bus, made by
    /// the library's `ManyPublisher::create`: claims by fetch_add).
    #[arg(long, value_enum, default_value_t = PublisherCount::One)]
    pub publishers: PublisherCount,
    /// With `--publishers many` only: milliseconds a claimed message may
    /// stay unwritten (its publisher died) before subscribers skip it:
    /// 1 to 60000 ms [default: 1000]. Refused without it: one publisher
    /// claims nothing. A blackboard takes it with --many-writers (see
    /// there).
    #[arg(long, value_name = "MS", value_parser = parse_unblock_ms)]
    pub unblock_ms: Option<u64>,
    /// A blackboard for many writers at once (the library's
    /// `ManyWriter`; `shmbus put` then writes beside running writers),
    /// each key written by one of them. With it, --unblock-ms is how long
    /// an entry a writer died writing stays busy before another writer
    /// takes it over (1 to 60000 ms, default 1000).
    #[arg(long)]
    pub many_writers: bool,
    /// Back the bus with 2 MiB huge pages: `transparent` for a bare name
    /// (tmpfs, collapsed with MADV_COLLAPSE, Linux 6.1), `hugetlbfs` for a
    /// path on a hugetlbfs mount with pages reserved in
    /// /proc/sys/vm/nr_hugepages. Header and control pages then take a huge
    /// page each.
    #[arg(long, value_enum, value_name = "KIND")]
    pub huge_pages: Option<HugePagesArg>,
    /// How many lossless subscribers (`sub --lossless`) may hold the
    /// publisher back at once [default: 8]; 0 makes a bus whose publisher
    /// never waits: lossless subscribers are refused.
    #[arg(long, value_name = "N")]
    pub lossless_subscribers: Option<u32>,
    /// How long one lossless subscriber may hold the publisher back before
    /// it is evicted (made lossy, told its lag) and the publisher goes on:
    /// 1 to 60000 ms [default: 1000].
    #[arg(long, value_name = "MS", value_parser = parse_evict_ms)]
    pub evict_ms: Option<u64>,
}

/// Parses `--evict-ms`: the library's `MIN_TIMEOUT` to `MAX_EVICT` (1 ms
/// to 60 s), in ms.
fn parse_evict_ms(s: &str) -> Result<u64, String> {
    parse_timeout_ms(s, "eviction timeout", shmbus::bus::MAX_EVICT)
}

/// Parses `--unblock-ms`: `MIN_TIMEOUT` to `MAX_UNBLOCK` (1 ms to 60 s),
/// in ms; 0 would let readers skip a live claim at once.
fn parse_unblock_ms(s: &str) -> Result<u64, String> {
    parse_timeout_ms(s, "unblock timeout", shmbus::bus::MAX_UNBLOCK)
}

/// A whole number of milliseconds from the library's `MIN_TIMEOUT` to
/// `max`, else a line naming `what` and the bounds.
fn parse_timeout_ms(s: &str, what: &str, max: std::time::Duration) -> Result<u64, String> {
    let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    let (min, max) = (ms(shmbus::bus::MIN_TIMEOUT), ms(max));
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "{s:?} is not a whole number of milliseconds ({min} to {max})"
        ));
    }
    match s.parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "{s} ms is out of range: the {what} is {min} to {max} ms"
        )),
    }
}

/// `--huge-pages`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum HugePagesArg {
    /// Transparent huge pages on a /dev/shm file.
    Transparent,
    /// A file on a hugetlbfs mount.
    Hugetlbfs,
}

/// `--publishers`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PublisherCount {
    /// One publisher at a time.
    One,
    /// Any number of publishers at once.
    Many,
}

/// `--kind`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum BusKind {
    /// One publisher, any number of subscribers, lossy.
    Broadcast,
    /// One producer, one consumer, bytes with backpressure.
    Stream,
    /// The latest value of each key (--keys, --key-size, --value-size).
    Blackboard,
    /// Requests and responses: clients call, servers answer (--clients,
    /// --slots, --servers, --request-size, --response-size).
    Service,
}

/// A service's shape beyond its call slots per client (`--slots`), as
/// `create --kind service` and `serve --create` take it.
#[derive(clap::Args, Debug, Default)]
pub struct ServiceShape {
    /// A service: how many clients may be attached at once (1 to 256).
    #[arg(long, value_name = "N")]
    pub clients: Option<u32>,
    /// A service: how many servers may serve at once (1 to 64)
    /// [default: 4].
    #[arg(long, value_name = "N")]
    pub servers: Option<u32>,
    /// A service: the largest request, in bytes (1 to 64 MiB)
    /// [default: 4096].
    #[arg(long, value_name = "BYTES")]
    pub request_size: Option<u32>,
    /// A service: the largest response, in bytes (1 to 64 MiB)
    /// [default: 4096].
    #[arg(long, value_name = "BYTES")]
    pub response_size: Option<u32>,
}

/// A service's largest request or response unless asked.
pub const SERVICE_PAYLOAD: u32 = 4096;

impl ServiceShape {
    /// The first flag given, if any: refused for a kind that is not a
    /// service.
    fn given(&self) -> Option<&'static str> {
        [
            (self.clients.is_some(), "--clients"),
            (self.servers.is_some(), "--servers"),
            (self.request_size.is_some(), "--request-size"),
            (self.response_size.is_some(), "--response-size"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag))
    }

    /// The library's options for this shape and `slots` per client
    /// (its bounds are the library's, which names the number out of them).
    pub fn options(&self, clients: u32, slots: Option<u64>) -> shmbus::reqrep::Options {
        let mut opts = shmbus::reqrep::Options::new(clients)
            .request_size(self.request_size.unwrap_or(SERVICE_PAYLOAD))
            .response_size(self.response_size.unwrap_or(SERVICE_PAYLOAD));
        if let Some(slots) = slots {
            opts = opts.slots(u32::try_from(slots).unwrap_or(u32::MAX));
        }
        if let Some(servers) = self.servers {
            opts = opts.servers(servers);
        }
        opts
    }
}

/// `--pool`: a pool of `blocks` blocks of `block_size` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool {
    pub block_size: u64,
    pub blocks: u64,
}

/// Parses `--pool BLOCK_SIZE:BLOCKS`, two plain decimal numbers (the
/// library checks their ranges, and says which is wrong).
fn parse_pool(s: &str) -> Result<Pool, String> {
    let number = |part: &str| part.parse::<u64>().ok().filter(|_| !part.starts_with('+'));
    let parsed = s
        .split_once(':')
        .and_then(|(size, blocks)| Some((number(size)?, number(blocks)?)));
    match parsed {
        Some((block_size, blocks)) => Ok(Pool { block_size, blocks }),
        None => Err(
            "expected BLOCK_SIZE:BLOCKS, two plain numbers: bytes per block, \
             then blocks (like 4096:64)"
                .to_string(),
        ),
    }
}

/// `--type NAME[:ALIGN]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageType {
    pub name: String,
    pub align: u32,
}

/// Parses `--type NAME[:ALIGN]`: a trailing `:` and plain number is the
/// alignment (the library checks the name's length and the alignment).
pub(crate) fn parse_type(s: &str) -> Result<MessageType, String> {
    let (name, align) = match s.rsplit_once(':') {
        Some((name, align)) if !align.is_empty() && align.bytes().all(|b| b.is_ascii_digit()) => {
            let align = align
                .parse::<u32>()
                .map_err(|_| format!("alignment {align:?} is too large"))?;
            (name, align)
        }
        _ => (s, 1),
    };
    Ok(MessageType {
        name: name.to_owned(),
        align,
    })
}

/// Parses permission bits written in octal, as chmod takes them.
pub(crate) fn parse_mode(s: &str) -> Result<u32, String> {
    match u32::from_str_radix(s, 8) {
        Ok(mode) if mode <= 0o777 => Ok(mode),
        _ => Err(format!(
            "{s:?} is not an octal permission mode (000 to 777)"
        )),
    }
}

/// `--group`: a group's name (looked up in the group database) or its
/// number.
pub(crate) fn parse_group(s: &str) -> Result<u32, String> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse::<u32>()
            .map_err(|_| format!("{s} is not a group number (0 to {})", u32::MAX));
    }
    match crate::group::gid_of(s) {
        Ok(Some(gid)) => Ok(gid),
        Ok(None) => Err(format!(
            "no group named {s:?} (getent group {s} finds none)"
        )),
        Err(e) => Err(format!("looking up group {s:?}: {e}")),
    }
}

/// `opts` with the file's flags of `args`, the same whatever the kind (the
/// option types share these setters by a macro, not a trait).
macro_rules! file_options {
    ($opts:expr, $args:expr) => {{
        let args: &CreateArgs = $args;
        let opts = $opts
            .mode(args.mode)
            .prefault(args.prefault)
            .mlock(args.mlock);
        let opts = match args.group {
            Some(gid) => opts.group(gid),
            None => opts,
        };
        match args.huge_pages {
            None => opts,
            Some(HugePagesArg::Transparent) => opts.huge_pages(HugePages::Transparent),
            Some(HugePagesArg::Hugetlbfs) => opts.huge_pages(HugePages::Hugetlbfs),
        }
    }};
}

pub fn run(args: &CreateArgs) -> Result<(), CliError> {
    if args.kind == BusKind::Service {
        return create_service(args);
    }
    if let Some(flag) = args.service.given() {
        return Err(CliError::usage(format!(
            "{flag} applies to --kind service (see `shmbus create --help`)"
        )));
    }
    if args.kind == BusKind::Blackboard {
        return create_blackboard(args);
    }
    for (given, flag) in [
        (args.keys.is_some(), "--keys"),
        (args.key_size.is_some(), "--key-size"),
        (args.value_size.is_some(), "--value-size"),
        (args.key_type.is_some(), "--key-type"),
        (args.many_writers, "--many-writers"),
    ] {
        if given {
            return Err(CliError::usage(format!(
                "{flag} applies to --kind blackboard (see `shmbus create --help`)"
            )));
        }
    }
    let size = args.size()?;
    let mut opts = file_options!(BusOptions::new(size), args);
    if let Some(ty) = &args.message_type {
        // A pool records its blocks' type itself (`create_pool`).
        if args.pool.is_none() {
            opts = opts.message_type(&ty.name, ty.align);
        }
    }
    // Dropping the publisher (producer) at once releases its lock; the
    // segment stays.
    if let (BusKind::Stream, Some(_)) = (args.kind, &args.journal) {
        return Err(CliError::usage(
            "--journal does not apply to a stream: nothing is lost from one, so there is \
             nothing to bootstrap from (see `shmbus create --help`)",
        ));
    }
    let many = args.publishers == PublisherCount::Many;
    if args.unblock_ms.is_some() && !many {
        return Err(CliError::usage(
            "--unblock-ms applies to a many-publisher bus (--publishers many); one publisher \
             claims no slot to unblock (see `shmbus create --help`)",
        ));
    }
    if many && args.kind == BusKind::Stream {
        return Err(CliError::usage(
            "--publishers many applies to a broadcast bus; a stream has one producer",
        ));
    }
    if many && args.journal.is_some() {
        return Err(CliError::usage(
            "--journal needs one publisher: the journal's order is the publisher's \
             (see `shmbus create --help`)",
        ));
    }
    if args.kind == BusKind::Stream {
        refuse_gate(
            args,
            "a stream: its one consumer loses nothing, and its producer waits for it",
        )?;
    }
    if let Some(pool) = args.pool {
        return create_pool(args, pool, size, many);
    }
    if let Some(max) = args.lossless_subscribers {
        opts = opts.lossless_subscribers(max);
    }
    if let Some(ms) = args.evict_ms {
        opts = opts.evict_after(Duration::from_millis(ms));
    }
    match (args.kind, args.msg_size) {
        (BusKind::Blackboard, _) => return create_blackboard(args),
        (BusKind::Service, _) => return create_service(args),
        (BusKind::Broadcast, Some(msg_size)) if many => {
            let mut opts = opts.many().msg_size(msg_size);
            if let Some(ms) = args.unblock_ms {
                opts = opts.unblock_timeout(Duration::from_millis(ms));
            }
            shmbus::bus::ManyPublisher::<[u8]>::create(&args.name, &opts)?;
        }
        (BusKind::Broadcast, Some(msg_size)) => match &args.journal {
            Some(path) => create_journaled(&args.name, msg_size, &opts, path)?,
            None => {
                Publisher::<[u8]>::create(&args.name, &opts.clone().msg_size(msg_size))?;
            }
        },
        (BusKind::Broadcast, None) => {
            return Err(CliError::usage(
                "a broadcast bus needs --msg-size <BYTES> (see `shmbus create --help`)",
            ));
        }
        (BusKind::Stream, None) => {
            let mut opts = file_options!(stream::Options::new(size), args);
            if let Some(ty) = &args.message_type {
                opts = opts.message_type(&ty.name, ty.align);
            }
            shmbus::stream::Producer::<[u8]>::create(&args.name, &opts)?;
        }
        (BusKind::Stream, Some(_)) => {
            return Err(CliError::usage(
                "--msg-size does not apply to a stream: its records have any length up to \
                 half its --bytes, less 8 (see `shmbus create --help`)",
            ));
        }
    }
    Ok(())
}

impl CreateArgs {
    /// The ring's size in the kind's unit: slots for a bus, bytes for a
    /// stream. A flag of the other unit is refused, naming the right one.
    fn size(&self) -> Result<u64, CliError> {
        let stream = self.kind == BusKind::Stream;
        match (stream, self.slots, self.bytes, self.capacity) {
            (false, Some(n), None, None) | (true, None, Some(n), None) => Ok(n),
            (_, None, None, Some(n)) => Ok(n),
            (true, Some(_), _, _) => Err(CliError::usage(
                "a stream is sized in bytes: --bytes <N>, not --slots (see `shmbus create --help`)",
            )),
            (false, _, Some(_), _) => Err(CliError::usage(
                "a bus is sized in slots: --slots <N>, not --bytes (see `shmbus create --help`)",
            )),
            _ => Err(CliError::usage(
                "give the ring's size: --slots <N> for a bus, --bytes <N> for a stream",
            )),
        }
    }
}

/// Creates a blackboard of raw keys and values and lets go of it (`shmbus
/// put` attaches as its writer).
fn create_blackboard(args: &CreateArgs) -> Result<(), CliError> {
    let refused = [
        (args.slots.is_some() || args.capacity.is_some(), "--slots"),
        (args.bytes.is_some(), "--bytes"),
        (
            args.msg_size.is_some(),
            "--msg-size (a blackboard's is --value-size)",
        ),
        (args.pool.is_some(), "--pool"),
        (args.journal.is_some(), "--journal"),
        (
            args.publishers == PublisherCount::Many,
            "--publishers many (a blackboard's is --many-writers)",
        ),
    ];
    if let Some((_, flag)) = refused.iter().find(|(given, _)| *given) {
        return Err(CliError::usage(format!(
            "{flag} does not apply to a blackboard: it takes --keys, --key-size, --value-size (see `shmbus create --help`)"
        )));
    }
    if args.unblock_ms.is_some() && !args.many_writers {
        return Err(CliError::usage(
            "--unblock-ms applies to a blackboard with --many-writers; one writer leaves no entry to take over (see `shmbus create --help`)",
        ));
    }
    refuse_gate(args, "a blackboard: its readers never hold the writer back")?;
    let (Some(keys), Some(key_size), Some(value_size)) =
        (args.keys, args.key_size, args.value_size)
    else {
        return Err(CliError::usage(
            "a blackboard needs --keys <N>, --key-size <BYTES> and --value-size <BYTES> (see `shmbus create --help`)",
        ));
    };
    let mut opts = file_options!(
        shmbus::blackboard::Options::new(keys)
            .key_size(key_size)
            .value_size(value_size),
        args
    );
    if let Some(ty) = &args.key_type {
        opts = opts.key_type(&ty.name, ty.align);
    }
    if let Some(ty) = &args.message_type {
        opts = opts.value_type(&ty.name, ty.align);
    }
    if let Some(ms) = args.unblock_ms {
        opts = opts.unblock_timeout(Duration::from_millis(ms));
    }
    if args.many_writers {
        shmbus::blackboard::ManyWriter::<[u8], [u8]>::create(&args.name, &opts)?;
    } else {
        shmbus::blackboard::Writer::<[u8], [u8]>::create(&args.name, &opts)?;
    }
    Ok(())
}

/// Creates a service of raw requests and responses and lets go of it
/// (`shmbus serve` attaches as its server).
fn create_service(args: &CreateArgs) -> Result<(), CliError> {
    let refused = [
        (args.bytes.is_some() || args.capacity.is_some(), "--bytes"),
        (
            args.msg_size.is_some(),
            "--msg-size (a service's are --request-size and --response-size)",
        ),
        (args.pool.is_some(), "--pool"),
        (args.journal.is_some(), "--journal"),
        (args.message_type.is_some(), "--type"),
        (args.keys.is_some(), "--keys"),
        (args.key_size.is_some(), "--key-size"),
        (args.value_size.is_some(), "--value-size"),
        (args.key_type.is_some(), "--key-type"),
        (args.many_writers, "--many-writers"),
        (args.publishers == PublisherCount::Many, "--publishers many"),
        (args.unblock_ms.is_some(), "--unblock-ms"),
        (
            args.lossless_subscribers.is_some(),
            "--lossless-subscribers",
        ),
        (args.evict_ms.is_some(), "--evict-ms"),
    ];
    if let Some((_, flag)) = refused.iter().find(|(given, _)| *given) {
        return Err(CliError::usage(format!(
            "{flag} does not apply to a service: it takes --clients, --slots, --servers, --request-size, --response-size (see `shmbus create --help`)"
        )));
    }
    let Some(clients) = args.service.clients else {
        return Err(CliError::usage(
            "a service needs --clients <N> (see `shmbus create --help`)",
        ));
    };
    let opts = file_options!(args.service.options(clients, args.slots), args);
    shmbus::reqrep::Server::<[u8], [u8]>::create(&args.name, &opts)?;
    Ok(())
}

/// Refuses `--lossless-subscribers` and `--evict-ms` for a kind (`what`,
/// and why) whose options have no gate.
fn refuse_gate(args: &CreateArgs, what: &str) -> Result<(), CliError> {
    let flag = match (args.lossless_subscribers, args.evict_ms) {
        (Some(_), _) => "--lossless-subscribers",
        (None, Some(_)) => "--evict-ms",
        (None, None) => return Ok(()),
    };
    Err(CliError::usage(format!(
        "{flag} does not apply to {what} (see `shmbus create --help`)"
    )))
}

/// Creates a pool bus, one publisher's or many's, and lets go of it.
fn create_pool(args: &CreateArgs, pool: Pool, slots: u64, many: bool) -> Result<(), CliError> {
    let refused = |what: &str| {
        Err(CliError::usage(format!(
            "{what} (see `shmbus create --help`)"
        )))
    };
    if args.kind == BusKind::Stream {
        return refused("--pool makes a pool bus, a broadcast bus; a stream has no block pool");
    }
    if args.msg_size.is_some() && args.message_type.is_none() {
        return refused(
            "--msg-size on a pool bus is the size of the blocks' message type, which --type \
             names: without --type its messages have any length up to the block size of --pool",
        );
    }
    if args.journal.is_some() {
        return refused("--journal does not apply to a pool bus");
    }
    let mut opts = file_options!(
        shmbus::pool::Options::new(slots, pool.block_size, pool.blocks),
        args
    );
    if let Some(max) = args.lossless_subscribers {
        opts = opts.lossless_subscribers(max);
    }
    if let Some(ms) = args.evict_ms {
        opts = opts.evict_after(Duration::from_millis(ms));
    }
    if let Some(ty) = &args.message_type {
        let Some(size) = args.msg_size else {
            return refused(
                "--type on a pool bus names its blocks' message type: give its size with \
                 --msg-size too",
            );
        };
        opts = opts.message_type(&ty.name, size, ty.align);
    }
    if many {
        let mut opts = opts.many();
        if let Some(ms) = args.unblock_ms {
            opts = opts.unblock_timeout(Duration::from_millis(ms));
        }
        pool::Publisher::<[u8]>::create_many(&args.name, &opts)?;
    } else {
        pool::Publisher::<[u8]>::create(&args.name, &opts)?;
    }
    Ok(())
}

/// Creates a journaled bus. A journal this command made is removed again if
/// the bus cannot be made (the library leaves it behind when the bus's
/// geometry is refused after the file was created).
fn create_journaled(
    name: &str,
    msg_size: u32,
    opts: &BusOptions,
    path: &Path,
) -> Result<(), CliError> {
    let existed = path.symlink_metadata().is_ok();
    match journal::Publisher::<[u8]>::create(
        name,
        &opts.clone().msg_size(msg_size),
        &journal::Options::new(path),
    ) {
        Ok(_) => Ok(()),
        Err(e) => {
            if !existed {
                let _ = std::fs::remove_file(path);
            }
            Err(CliError::runtime(e.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Pool, parse_evict_ms, parse_mode, parse_pool, parse_unblock_ms};

    #[test]
    fn evict_ms_is_1_to_60000_and_names_the_limit() {
        assert_eq!(parse_evict_ms("1"), Ok(1));
        assert_eq!(parse_evict_ms("60000"), Ok(60_000));
        for far in ["0", "60001", "99999999999999999999999"] {
            let err = parse_evict_ms(far).unwrap_err();
            assert!(err.contains("1 to 60000 ms"), "{far}: {err}");
        }
        for bad in ["", "1.5", "-1", "+5", "1s"] {
            assert!(parse_evict_ms(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn unblock_ms_is_1_to_60000_and_names_the_limit() {
        assert_eq!(parse_unblock_ms("1"), Ok(1));
        assert_eq!(parse_unblock_ms("60000"), Ok(60_000));
        for far in ["0", "60001", "999999999999"] {
            let err = parse_unblock_ms(far).unwrap_err();
            assert!(
                err.contains("the unblock timeout is 1 to 60000 ms"),
                "{far}: {err}"
            );
        }
        for bad in ["", "1.5", "-1", "+5", "1s"] {
            assert!(parse_unblock_ms(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn mode_is_octal_permission_bits() {
        assert_eq!(parse_mode("600"), Ok(0o600));
        assert_eq!(parse_mode("0660"), Ok(0o660));
        assert!(parse_mode("999").is_err());
        assert!(parse_mode("1777").is_err());
        assert!(parse_mode("").is_err());
    }

    #[test]
    fn pool_is_two_plain_numbers_around_a_colon() {
        let pool = |block_size, blocks| Ok(Pool { block_size, blocks });
        assert_eq!(parse_pool("4096:64"), pool(4096, 64));
        assert_eq!(parse_pool("0:0"), pool(0, 0), "ranges are the library's");
        for bad in [
            "",
            ":",
            "4096",
            "4096:",
            ":64",
            "4K:64",
            "4096:64:1",
            "+64:9",
            "-64:9",
            " 64:9",
            "64 : 9",
            "99999999999999999999:9",
            "a:b",
        ] {
            let err = parse_pool(bad).unwrap_err();
            assert!(err.contains("BLOCK_SIZE:BLOCKS"), "{bad:?}: {err}");
        }
    }
}
