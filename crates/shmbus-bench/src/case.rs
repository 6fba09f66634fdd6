//! What one block measures: the pattern, the message size and the number of
//! receivers.

/// What a block measures.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum, serde::Serialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// Round trip: ping, then wait for the pong.
    Pingpong,
    /// One-way latency, paced so nothing queues.
    Oneway,
    /// Messages and bytes per second, as fast as the sender can go.
    Throughput,
    /// One sender, several receiver processes, one-way latency.
    Fanout,
}

impl Pattern {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::Pingpong => "pingpong",
            Pattern::Oneway => "oneway",
            Pattern::Throughput => "throughput",
            Pattern::Fanout => "fanout",
        }
    }
}

/// Everything a block needs to know.
#[derive(Clone, Debug)]
pub struct Case {
    /// The pattern.
    pub pattern: Pattern,
    /// Message size.
    pub msg_size: usize,
    /// Number of receivers.
    pub receivers: usize,
    /// If set, only these mechanisms run this case.
    pub only: Option<&'static [&'static str]>,
}
