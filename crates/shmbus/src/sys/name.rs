//! Bus names: a bare name lives under /dev/shm, a name with a slash is a
//! path used as given.

use std::path::{Path, PathBuf};

use thiserror::Error;

/// A bus name that cannot be turned into a path. A bare name (no slash)
/// lives in /dev/shm and must be a valid file name there; a name with a
/// slash is a path, used as given.
///
/// # Examples
/// ```
/// use shmbus::{OpenError, OpenOptions, Subscriber, error::NameError};
///
/// let err = Subscriber::<u64>::open("", &OpenOptions::default()).err();
/// assert!(matches!(err, Some(OpenError::Name(NameError::Empty))));
/// let err = shmbus::stat::stat("..").err();
/// assert!(matches!(err, Some(OpenError::Name(NameError::Reserved(_)))));
/// ```
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameError {
    /// The name is the empty string.
    #[error("bus name is empty")]
    Empty,
    /// The name contains a NUL byte.
    #[error("bus name contains a NUL byte")]
    Nul,
    /// `.` or `..`.
    #[error("bus name {0:?} is reserved")]
    Reserved(String),
    /// Longer than a file name may be.
    #[error("bus name is {0} bytes long, at most 255 expected")]
    TooLong(usize),
}

/// Where a bus name lives: a bare name goes under /dev/shm, anything with a
/// slash is a path used as given.
pub(crate) fn resolve(name: &str) -> Result<PathBuf, NameError> {
    if name.is_empty() {
        return Err(NameError::Empty);
    }
    if name.contains('\0') {
        return Err(NameError::Nul);
    }
    if name.contains('/') {
        return Ok(PathBuf::from(name));
    }
    if name == "." || name == ".." {
        return Err(NameError::Reserved(name.to_owned()));
    }
    if name.len() > 255 {
        return Err(NameError::TooLong(name.len()));
    }
    Ok(Path::new("/dev/shm").join(name))
}
