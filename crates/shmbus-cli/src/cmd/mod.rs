//! One module per group of subcommands. Each exposes its clap `Args` struct
//! and a `run` that returns a [`crate::error::CliError`]; main prints it.
//!
//! Nothing here uses `println!` or `io::stdout()`: output goes through
//! `crate::out::stdout`, which reports a stdout that was closed or fails
//! (std hides both), while a reader that went away (EPIPE) ends a command
//! quietly (see `CliError::stdout`).

pub mod blackboard;
pub mod bridge;
pub mod clean;
pub mod create;
pub mod demo;
pub mod export;
pub mod generate;
pub mod inspect;
pub mod mcap;
pub mod publish;
pub mod record;
pub mod record_status;
pub mod replay;
pub mod service;
pub mod signals;
pub mod subscribe;
pub mod subscribe_many;
pub mod top;
