//! The service's errors: one enum per operation.

use crate::error::{ErrorKind, OpenError};

/// Which side of a service a handle takes.
///
/// # Examples
/// ```
/// assert_eq!(shmbus::reqrep::Side::Client.to_string(), "client");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// A [`Server`](super::Server): takes requests and answers them.
    Server,
    /// A [`Client`](super::Client): sends requests and waits for answers.
    Client,
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Side::Server => "server",
            Side::Client => "client",
        })
    }
}

/// Why a server or client could not attach to a service.
///
/// # Examples
/// ```
/// use shmbus::{OpenOptions, reqrep::{self, AttachError, Client, Server, Side}};
/// # let name = format!("/dev/shm/shmbus-doc-rr-attach-{}", std::process::id());
/// let server = Server::<u64, u64>::create(&name, &reqrep::Options::new(1))?;
/// let first = Client::<u64, u64>::attach(&name, &OpenOptions::default())?;
/// match Client::<u64, u64>::attach(&name, &OpenOptions::default()) {
///     Err(AttachError::NoEntry { side: Side::Client, entries: 1 }) => {}
///     other => panic!("expected NoEntry, got {:?}", other.err()),
/// }
/// # drop((server, first));
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AttachError {
    /// The service could not be opened (missing, another kind, other
    /// request or response types, ...).
    #[error(transparent)]
    Open(#[from] OpenError),
    /// Every entry of that side is held by a live process.
    #[error("every one of the service's {entries} {side} entries is held by a live process")]
    NoEntry {
        /// The side asked for.
        side: Side,
        /// The service's entries of that side.
        entries: u32,
    },
}

impl AttachError {
    /// The kind of failure, as C and Python report it.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, reqrep::{AttachError, Side}};
    /// let e = AttachError::NoEntry { side: Side::Server, entries: 4 };
    /// assert_eq!(e.kind(), ErrorKind::RoleTaken);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            AttachError::Open(e) => e.kind(),
            AttachError::NoEntry { .. } => ErrorKind::RoleTaken,
        }
    }
}

/// Why a request was not sent.
///
/// # Examples
/// ```
/// use shmbus::{ErrorKind, reqrep::SendError};
/// let e = SendError::Full { outstanding: 8 };
/// assert_eq!(e.to_string(), "the client has 8 calls outstanding, as many as it may");
/// assert_eq!(e.kind(), ErrorKind::Full);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// Every call slot of this client holds a call not yet answered (or
    /// one a slow server has not given back), and the wait ran out.
    #[error("the client has {outstanding} calls outstanding, as many as it may")]
    Full {
        /// Its calls outstanding: the service's slots per client.
        outstanding: u32,
    },
    /// The request is longer than the service's largest.
    #[error("a request of {len} bytes, the service's largest is {max}")]
    TooLong {
        /// The request's length.
        len: usize,
        /// The service's largest.
        max: usize,
    },
}

impl SendError {
    /// The kind of failure, as C and Python report it.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, reqrep::SendError};
    /// assert_eq!(SendError::TooLong { len: 9, max: 8 }.kind(), ErrorKind::TooLong);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            SendError::Full { .. } => ErrorKind::Full,
            SendError::TooLong { .. } => ErrorKind::TooLong,
        }
    }
}

/// How a call ended without a response: exactly one of these, or the
/// response, for every request sent.
///
/// # Examples
/// ```
/// use shmbus::{ErrorKind, reqrep::CallError};
/// assert_eq!(CallError::ServerGone { pid: 42 }.to_string(), "the server that took the request (pid 42) died before it answered");
/// assert_eq!(CallError::TimedOut.kind(), ErrorKind::TimedOut);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The caller's deadline passed first. A response that comes later
    /// is dropped (and counted), never delivered to another call.
    #[error("no response before the deadline")]
    TimedOut,
    /// The server that took the request died before it answered.
    #[error("the server that took the request (pid {pid}) died before it answered")]
    ServerGone {
        /// That server's pid.
        pid: u32,
    },
    /// No server lives to take the request: it was withdrawn.
    #[error("no server is alive to take the request")]
    NoServer,
    /// The server dropped the request unanswered.
    #[error("the server (pid {pid}) dropped the request unanswered")]
    Refused {
        /// That server's pid.
        pid: u32,
    },
    /// The request was not sent (`call` only).
    #[error(transparent)]
    Send(#[from] SendError),
    /// The response's length is not one this call can take: longer than
    /// the service's largest, or not one typed response.
    #[error("a response of {len} bytes, expected {expected}")]
    BadResponse {
        /// The length the server wrote.
        len: u32,
        /// What this call takes (the largest, or the type's size).
        expected: u32,
    },
    /// The call is not one of this client's outstanding ones (answered
    /// already, or another client's).
    #[error("no such call outstanding on this client")]
    UnknownCall,
}

impl CallError {
    /// The kind of failure, as C and Python report it.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, reqrep::CallError};
    /// assert_eq!(CallError::NoServer.kind(), ErrorKind::PeerGone);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            CallError::TimedOut => ErrorKind::TimedOut,
            CallError::ServerGone { .. } | CallError::NoServer | CallError::Refused { .. } => {
                ErrorKind::PeerGone
            }
            CallError::Send(e) => e.kind(),
            CallError::BadResponse { .. } => ErrorKind::Corrupt,
            CallError::UnknownCall => ErrorKind::InvalidArgument,
        }
    }
}

/// Why a response was not delivered.
///
/// # Examples
/// ```
/// use shmbus::{ErrorKind, reqrep::RespondError};
/// assert_eq!(RespondError::Late.to_string(), "the caller gave up before the response: dropped and counted");
/// assert_eq!(RespondError::Late.kind(), ErrorKind::TimedOut);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RespondError {
    /// The caller had given up (its deadline passed, or it died and a new
    /// client took its entry): the response is dropped and counted on
    /// the client's line.
    #[error("the caller gave up before the response: dropped and counted")]
    Late,
    /// The response is longer than the service's largest (nothing was
    /// sent; the request is still this server's to answer).
    #[error("a response of {len} bytes, the service's largest is {max}")]
    TooLong {
        /// The response's length.
        len: usize,
        /// The service's largest.
        max: usize,
    },
}

impl RespondError {
    /// The kind of failure, as C and Python report it.
    ///
    /// # Examples
    /// ```
    /// use shmbus::{ErrorKind, reqrep::RespondError};
    /// assert_eq!(RespondError::TooLong { len: 9, max: 8 }.kind(), ErrorKind::TooLong);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            RespondError::Late => ErrorKind::TimedOut,
            RespondError::TooLong { .. } => ErrorKind::TooLong,
        }
    }
}
