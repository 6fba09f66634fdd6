//! `shmbus bench`: every way to move a message between processes, side by
//! side, in one run. (Being built; see issue 2/3.)

/// Arguments of `shmbus bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// A short run (under 60 s on 2 cores).
    #[arg(long)]
    pub quick: bool,
}

/// Arguments of the hidden `shmbus bench-child`, which `bench` re-executes
/// its own binary with to get a second process.
#[derive(clap::Args, Debug, Clone)]
pub struct ChildArgs {
    /// Everything the child needs, encoded by the parent.
    #[arg(allow_hyphen_values = true, num_args = 0..)]
    pub spec: Vec<String>,
}

/// Runs the benchmark; the error is one line for the user.
pub fn run(_args: &BenchArgs) -> Result<(), String> {
    Err("bench is not built yet".into())
}

/// Runs one child side of a benchmark.
pub fn run_child(_args: &ChildArgs) -> Result<(), String> {
    Err("bench-child is not built yet".into())
}
