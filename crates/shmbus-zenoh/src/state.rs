//! A bridge-in's state file: which creations of the upstream bus its
//! downstream bus followed, and at which offsets, so that a restarted
//! bridge-in maps a creation's sequences as the last one did
//! (docs/BRIDGE-WIRE.md, "The state file").
//!
//! The file is untrusted input (another process may have written it):
//! read at most [`MAX_STATE`] bytes, never through a symlink nor from a
//! FIFO, and parsed or refused with a [`StateError`], never a panic. It
//! is written whole into `PATH.tmp` (0600, `O_NOFOLLOW`, created new),
//! then renamed over `PATH`: a reader sees one state or the next.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::frame::Upstream;

/// How many creations followed before a bridge-in remembers (and a state
/// file may name).
pub(crate) const RETIRED: usize = 16;

/// The longest state file read: the header, the creation followed and
/// [`RETIRED`] retired ones take under 1 KiB.
pub(crate) const MAX_STATE: u64 = 4096;

/// The file's first line: its format and version.
const MAGIC: &str = "shmbus-bridge-in-state 1";

/// What a state file holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Saved {
    /// The downstream bus it is about: its header's `created_ns` and
    /// `creator_pid` (a bus removed and made again has others).
    pub(crate) downstream: (u64, u32),
    /// The creation followed now.
    pub(crate) following: Upstream,
    /// Its offset: downstream sequence = its sequence + this (wrapping).
    pub(crate) offset: u64,
    /// Creations followed before, oldest first (at most [`RETIRED`]).
    pub(crate) retired: Vec<u64>,
}

/// Why a state file was not read or not written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum StateError {
    /// It could not be opened or read (not a file, a symlink, ...).
    #[error("state file {path}: read: {source}")]
    Read { path: PathBuf, source: io::Error },
    /// Anyone but its owner may write it.
    #[error("state file {path}: mode {mode:o} lets others write it, expected none")]
    NotPrivate { path: PathBuf, mode: u32 },
    /// Longer than any state.
    #[error("state file {path}: more than {max} bytes, expected at most {max}")]
    TooLong { path: PathBuf, max: u64 },
    /// Not a state: the line that is not what was expected.
    #[error("state file {path}: line {line}: expected {expected}, found {found:?}")]
    Malformed {
        path: PathBuf,
        line: usize,
        expected: &'static str,
        found: String,
    },
    /// It could not be written or renamed into place.
    #[error("state file {path}: write: {source}")]
    Write { path: PathBuf, source: io::Error },
}

/// Reads the state at `path`: `Ok(None)` if there is none.
pub(crate) fn load(path: &Path) -> Result<Option<Saved>, StateError> {
    let read = |source| StateError::Read {
        path: path.to_owned(),
        source,
    };
    let file = match fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(read(e)),
    };
    let meta = file.metadata().map_err(read)?;
    if !meta.is_file() {
        return Err(read(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        )));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(StateError::NotPrivate {
            path: path.to_owned(),
            mode: meta.mode() & 0o7777,
        });
    }
    let mut bytes = Vec::new();
    file.take(MAX_STATE + 1)
        .read_to_end(&mut bytes)
        .map_err(read)?;
    if bytes.len() as u64 > MAX_STATE {
        return Err(StateError::TooLong {
            path: path.to_owned(),
            max: MAX_STATE,
        });
    }
    parse(&bytes)
        .map(Some)
        .map_err(|(line, expected, found)| StateError::Malformed {
            path: path.to_owned(),
            line,
            expected,
            found,
        })
}

/// The line (from 1) that is wrong, what it should be, and what it is.
type ParseError = (usize, &'static str, String);

/// A state from a file's bytes.
fn parse(bytes: &[u8]) -> Result<Saved, ParseError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        (
            1,
            "UTF-8 text",
            format!("a byte that is not at {}", e.valid_up_to()),
        )
    })?;
    let text = text.strip_suffix('\n').ok_or((
        1,
        "text ending in a newline",
        "no newline at the end".into(),
    ))?;
    let mut lines = text.split('\n').enumerate().map(|(i, l)| (i + 1, l));
    let mut next = |expected: &'static str| {
        lines
            .next()
            .ok_or((0, expected, "the end of the file".into()))
    };
    let (n, magic) = next(MAGIC)?;
    if magic != MAGIC {
        return Err((n, MAGIC, magic.into()));
    }
    const DOWN: &str = "downstream CREATED_NS CREATOR_PID";
    let (n, line) = next(DOWN)?;
    let f = fields(line, "downstream", 2).ok_or((n, DOWN, line.into()))?;
    let pid = u32::try_from(f[1]).map_err(|_| (n, DOWN, line.to_string()))?;
    let downstream = (f[0], pid);
    const FOLLOWING: &str = "following INSTANCE FIRST OFFSET";
    let (n, line) = next(FOLLOWING)?;
    let f = fields(line, "following", 3).ok_or((n, FOLLOWING, line.into()))?;
    let following = Upstream {
        instance: f[0],
        first: f[1],
    };
    let offset = f[2];
    const RETIRED_LINE: &str = "retired INSTANCE";
    let mut retired = Vec::new();
    for (n, line) in lines {
        let f = fields(line, "retired", 1).ok_or((n, RETIRED_LINE, line.into()))?;
        if retired.len() == RETIRED {
            return Err((n, "the end of the file", line.into()));
        }
        retired.push(f[0]);
    }
    Ok(Saved {
        downstream,
        following,
        offset,
        retired,
    })
}

/// The `count` decimal numbers after `word` on `line`, separated by one
/// space, or `None`.
fn fields(line: &str, word: &str, count: usize) -> Option<Vec<u64>> {
    let mut parts = line.split(' ');
    if parts.next()? != word {
        return None;
    }
    let numbers: Vec<u64> = parts
        .map(|p| {
            // Digits only: `parse` takes a leading '+'.
            p.bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| p.parse().ok())
                .flatten()
        })
        .collect::<Option<_>>()?;
    (numbers.len() == count).then_some(numbers)
}

/// The file's text for `saved`.
fn render(saved: &Saved) -> String {
    let mut text = format!(
        "{MAGIC}\ndownstream {} {}\nfollowing {} {} {}\n",
        saved.downstream.0,
        saved.downstream.1,
        saved.following.instance,
        saved.following.first,
        saved.offset
    );
    for r in &saved.retired {
        text.push_str(&format!("retired {r}\n"));
    }
    text
}

/// Writes `saved` to `path`: whole into `PATH.tmp`, then renamed over it.
pub(crate) fn store(path: &Path, saved: &Saved) -> Result<(), StateError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let write = || -> io::Result<()> {
        // A tmp file left by a bridge-in killed while writing.
        let _ = fs::remove_file(&tmp);
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        file.write_all(render(saved).as_bytes())?;
        drop(file);
        fs::rename(&tmp, path)
    };
    write().map_err(|source| {
        let _ = fs::remove_file(&tmp);
        StateError::Write {
            path: path.to_owned(),
            source,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Saved {
        Saved {
            downstream: (1_700_000_000_000_000_000, 4242),
            following: Upstream {
                instance: u64::MAX,
                first: 40,
            },
            offset: 110,
            retired: vec![1, 2, 3],
        }
    }

    #[test]
    fn a_state_reads_back_as_it_was_written() {
        let s = sample();
        assert_eq!(parse(render(&s).as_bytes()), Ok(s));
        let none = Saved {
            retired: Vec::new(),
            ..sample()
        };
        assert_eq!(parse(render(&none).as_bytes()), Ok(none));
    }

    #[test]
    fn any_bytes_are_a_state_or_a_typed_error_never_a_panic() {
        let good = render(&sample());
        let bad = [
            String::new(),
            good.trim_end().to_owned(),
            good.replace("state 1", "state 2"),
            good.replace("4242", "4294967296"),
            good.replace("4242", "+4242"),
            good.replace("4242", "4242 1"),
            good.replace("following", "followin"),
            good.replace("retired 3", "retired 18446744073709551616"),
            good.replace("\n", "\r\n"),
            format!("{good}{}", "retired 9\n".repeat(RETIRED)),
            good.lines().take(2).collect::<Vec<_>>().join("\n") + "\n",
        ];
        for text in &bad {
            assert!(parse(text.as_bytes()).is_err(), "{text:?}");
        }
        // Every cut and every byte flipped: a state or an error.
        for cut in 0..good.len() {
            let _ = parse(&good.as_bytes()[..cut]);
        }
        for i in 0..good.len() {
            for b in [0u8, b' ', b'\n', b'9', 0xff] {
                let mut bytes = good.clone().into_bytes();
                bytes[i] = b;
                let _ = parse(&bytes);
            }
        }
    }

    #[test]
    fn a_state_file_is_written_private_and_a_planted_or_long_one_refused() {
        let dir = std::env::temp_dir().join(format!("shmbus-state-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir(&dir).expect("a directory");
        let path = dir.join("bus.state");
        assert!(matches!(load(&path), Ok(None)), "none yet");
        store(&path, &sample()).expect("written");
        assert_eq!(fs::metadata(&path).expect("there").mode() & 0o777, 0o600);
        assert_eq!(load(&path).expect("read"), Some(sample()));
        // Writable by others: refused.
        fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .expect("chmod");
        assert!(matches!(load(&path), Err(StateError::NotPrivate { .. })));
        // Longer than any state.
        fs::remove_file(&path).expect("rm");
        store(&path, &sample()).expect("written");
        let long = format!("{}{}", render(&sample()), "x".repeat(MAX_STATE as usize));
        fs::write(&path, long).expect("write");
        assert!(matches!(load(&path), Err(StateError::TooLong { .. })));
        // A symlink is not followed.
        fs::remove_file(&path).expect("rm");
        std::os::unix::fs::symlink("/etc/passwd", &path).expect("symlink");
        assert!(matches!(load(&path), Err(StateError::Read { .. })));
        fs::remove_dir_all(&dir).expect("clean up");
    }
}
