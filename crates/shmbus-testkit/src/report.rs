//! The RESULT line: what a child saw, as `RESULT key=value ...`, printed by
//! the child and parsed by its parent.

use std::collections::HashMap;
use std::fmt::Debug;
use std::str::FromStr;

use crate::watchdog::Finished;

/// Prints the one line the parent parses ([`Finished::result`]). Values
/// must have no whitespace. The leading newline keeps the line off the one
/// libtest starts with `test <name> ... `.
pub fn print_result(fields: &[(&str, String)]) {
    use std::io::Write;
    let mut line = String::from("\nRESULT");
    for (k, v) in fields {
        assert!(
            !v.contains(char::is_whitespace),
            "RESULT value for {k} has whitespace: {v:?}"
        );
        line.push_str(&format!(" {k}={v}"));
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").expect("write RESULT");
    out.flush().expect("flush RESULT");
}

/// A parsed `RESULT` line.
pub struct Report {
    who: String,
    fields: HashMap<String, String>,
}

impl Report {
    /// The value of `key`, parsed; fails naming the child if it is absent
    /// or does not parse.
    pub fn get<T: FromStr>(&self, key: &str) -> T
    where
        T::Err: Debug,
    {
        let raw = self
            .fields
            .get(key)
            .unwrap_or_else(|| panic!("{}: RESULT has no {key}: {:?}", self.who, self.fields));
        raw.parse()
            .unwrap_or_else(|e| panic!("{}: RESULT {key}={raw:?}: {e:?}", self.who))
    }

    /// The raw value of `key`, if present.
    pub fn raw(&self, key: &str) -> Option<&str> {
        self.fields.get(key).map(String::as_str)
    }
}

impl Finished {
    /// The process's last `RESULT` line as key/value pairs; fails the test,
    /// with the output, if there is none.
    pub fn result(&self) -> Report {
        let stdout = self.stdout();
        let line = stdout
            .lines()
            .rev()
            .find_map(|l| l.find("RESULT ").map(|i| &l[i + "RESULT ".len()..]))
            .unwrap_or_else(|| {
                panic!(
                    "{} (pid {}) printed no RESULT line ({:?})\n{}",
                    self.label,
                    self.pid,
                    self.status,
                    self.output()
                )
            });
        let fields = line
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        Report {
            who: format!("{} (pid {})", self.label, self.pid),
            fields,
        }
    }
}
