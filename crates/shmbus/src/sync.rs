//! The one place the ring code gets its atomics from.
//!
//! Under `cfg(loom)` these are loom's model-checked types, so `cargo test`
//! with `RUSTFLAGS="--cfg loom"` explores the interleavings of the *real*
//! slot protocol in `bus`, not of a copy of it. Everything that touches
//! shared memory imports from here, never from `std::sync::atomic` directly
//! (process-local flags and counters, such as the journal publisher's, may).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

#[cfg(loom)]
pub(crate) use loom::hint::spin_loop;
#[cfg(not(loom))]
pub(crate) use std::hint::spin_loop;

#[cfg(loom)]
pub(crate) use loom::thread::yield_now;
#[cfg(not(loom))]
pub(crate) use std::thread::yield_now;
