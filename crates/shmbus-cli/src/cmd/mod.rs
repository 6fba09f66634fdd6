//! One module per group of subcommands. Each exposes its clap `Args` struct
//! and a `run` that returns a [`crate::error::CliError`]; main prints it.
//!
//! Nothing here uses `println!`: it panics when stdout is closed, and a
//! closed stdout must end a command quietly (see `CliError::stdout`).

pub mod clean;
pub mod create;
pub mod demo;
pub mod inspect;
pub mod publish;
pub mod subscribe;
