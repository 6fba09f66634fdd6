//! The operating system, below every protocol: bus names and paths, OFD
//! locks on bytes of a file (who is alive), and a directory opened without
//! following links (for `remove`, `stat` and `clean`). Std and rustix only;
//! nothing here knows what a segment is. `fork` says whether a handle is
//! in the process that made it.

pub(crate) mod clock;
#[cfg(not(loom))]
pub(crate) mod dir;
pub(crate) mod fork;
#[cfg(not(loom))]
pub(crate) mod lock;
mod name;

pub use name::NameError;
pub(crate) use name::resolve;
