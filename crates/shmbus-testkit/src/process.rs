//! What /proc says about a process: for a test that waits until a process
//! it started is asleep, stopped, and so on.

/// The state letter of process `pid` in /proc/PID/stat (`R` running, `S`
/// sleeping, `T` stopped, `Z` zombie, ...); `None` if it is gone.
pub fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses; the state
    // follows its last `)`.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}
