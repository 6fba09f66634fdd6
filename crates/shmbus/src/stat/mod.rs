//! Looking at buses from outside: `stat`, `ls` and `clean`.
//!
//! Nothing here writes shared memory: segments are mapped read-only, and
//! liveness is probed with `F_OFD_GETLK` (see `lock`). Only `clean` takes
//! locks, to decide and remove each file atomically with respect to
//! processes that attach (see [`clean`](fn@clean)).
//!
//! Files: `bus.rs` reads one bus ([`stat`]), `keys.rs` a blackboard's
//! entry versions, chosen keys ([`blackboard_keys`]) and how often
//! they change ([`blackboard_watch`]), `service.rs` a service's servers,
//! clients and calls ([`ServiceStat`]), `list.rs` lists a
//! directory ([`list`](fn@list)), `clean.rs` removes what nobody uses
//! ([`clean`](fn@clean)); both walk the directory with `scan.rs` and read
//! /proc/*/maps with `proc.rs`.

mod bus;
mod clean;
mod keys;
mod list;
mod proc;
mod scan;
mod service;

pub use bus::{
    BlackboardStat, BusStat, Contract, Lossless, PoolHolder, PoolStat, Size, StreamStat,
    SubscriberStat, monotonic_ns, stat,
};
pub use clean::{CleanError, Cleaned, clean};
pub use keys::{
    EntryKey, EntryVersion, KeyRead, MAX_PASSES, MAX_WATCHED, Watch, blackboard_keys,
    blackboard_watch,
};
pub use list::{Listing, list};
pub use scan::ScanError;
pub use service::{CallPhase, CallStat, ClientStat, ServerStat, ServiceStat};
