//! loom models of the shared-memory protocols, one file per kind, each
//! over the real code through the `sync` facade (`ci/loom.sh` runs them
//! all: `RUSTFLAGS="--cfg loom" cargo test -p shmbus --release --lib loom`).
//! `bus` holds the slot, sleep, gate and claim models and the `model`
//! runner the others share.

mod blackboard;
mod blackboard_many_writer;
pub(crate) mod bus;
mod many_publisher;
mod pool;
mod reqrep;
mod stream;
