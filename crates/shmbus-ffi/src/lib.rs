//! The C API of shmbus: `libshmbus.so` / `libshmbus.a` and
//! `include/shmbus.h` (generated from this crate by cbindgen; see
//! `crates/shmbus-ffi/cbindgen.sh`).
//!
//! # Conventions (the header repeats them)
//! - Every handle is an opaque pointer made by a `_create`, `_attach`,
//!   `_open` or `_join` call, which writes it through an out-parameter and
//!   writes NULL there on failure. Each has a `_close` (a `_discard` or
//!   `_release` for loans and samples) that accepts NULL. A handle is used
//!   by one thread at a time; it may move between threads between calls.
//! - Every call returns a [`Status`](status::Status). On `SHMBUS_ERROR` (and on the other
//!   statuses that say something went wrong: `SHMBUS_TOO_SMALL`,
//!   `SHMBUS_ABANDONED`, `SHMBUS_PEER_GONE`, `SHMBUS_REFUSED`,
//!   `SHMBUS_NO_SERVER`), [`shmbus_error_message`](last_error::shmbus_error_message)
//!   returns this thread's message for it and [`shmbus_error_code`](last_error::shmbus_error_code) its
//!   [`ErrorCode`], the kind of failure (`SHMBUS_E_NOT_FOUND`, ...: the
//!   core's `ErrorKind`, as Python's exception classes are) to switch on
//!   instead of matching the message. Other statuses leave both as they
//!   were (so a polling loop formats nothing), except where a function
//!   says it sets one.
//! - Timeouts are `int64_t timeout_ns`: negative waits as long as it
//!   takes, 0 does not wait, else at most that many nanoseconds.
//! - No Rust panic crosses into C: every entry point catches one and
//!   returns `SHMBUS_ERROR` with its message (then close the handle it was
//!   called on: it may be half-way through an operation). NULL pointers,
//!   names that are not UTF-8, zero or unknown options are `SHMBUS_ERROR`
//!   with `SHMBUS_E_INVALID_ARGUMENT` and a message, never undefined
//!   behaviour. What C cannot be checked
//!   for (a dangling handle, a buffer shorter than the length given, a
//!   string without its NUL) is the caller's to get right.
//!
//! # Layout of the crate
//! One concept per file. The calls and types C sees: `last_error.rs` (the
//! thread's message and code), `error_code.rs` (the codes, from the
//! core's `ErrorKind`), `status.rs` (what a call returns), `version.rs`,
//! `options.rs` (the flags and the option structs every kind of bus
//! shares, and their conversion), `remove.rs`; then by kind: `bus.rs`
//! (single and many-publisher buses and their subscribers),
//! `journal.rs`, `pool.rs` (pool buses, loans and samples), `reqrep.rs`
//! (request-response: servers, requests and clients), `state.rs`
//! (a journaled bus folded into the last value per key), `stream.rs`
//! (producer and consumer, and a record peeked in place), each with its
//! own options. Under them, what
//! every entry point uses: `entry.rs` (the wrapper that turns a failure or
//! a panic into a status and this thread's error), `args.rs` (checked
//! conversions of C arguments), `bodies.rs` (the bodies many entry points
//! share: making a handle, reading one value, publishing, receiving into
//! a buffer).
//!
//! The header lists the calls in the order of the modules below: cbindgen
//! writes each module's items in the order the modules are declared.
//!
//! Every entry point is `#[unsafe(no_mangle)]`: an exported symbol may
//! clash with another of the same name in the process. Each name starts
//! with `shmbus_`, the prefix this library owns in C.

#![deny(unsafe_op_in_unsafe_fn)]

// The calls of general use, first in the header.
pub mod last_error;
// shmbus_error_code_name
pub mod error_code;
// shmbus_status_name
pub mod status;
// shmbus_version
pub mod version;
// SHMBUS_START_*, ..., shmbus_bus_options_t, shmbus_open_options_t
pub mod options;
// shmbus_remove
pub mod remove;

// The kinds.
pub mod blackboard;
pub mod bus;
pub mod journal;
pub mod pool;
pub mod reqrep;
pub mod state;
pub mod stream;

// What every entry point uses; nothing of it is in the header.
mod args;
mod bodies;
mod entry;

#[doc(hidden)]
pub use entry::run_as_entry_point;
pub use error_code::ErrorCode;

// Unit tests, not tests/: a Rust test crate would need an rlib of this
// library, whose file name (libshmbus.rlib) is the core crate's too.
#[cfg(test)]
mod api_tests;
