//! A Zenoh session as a bridge opens it: peer to peer, on the endpoints
//! given and no others (no multicast scouting, no gossip), or as Zenoh's
//! own config file says (TLS, access control, routers).

use std::path::PathBuf;

use zenoh::{Config, Session, Wait};

/// Where a bridge listens and whom it dials, and the Zenoh config file
/// they refine.
///
/// # Examples
/// ```
/// let at = shmbus_zenoh::Endpoints {
///     connect: vec!["tcp/10.0.0.2:7447".into()],
///     ..Default::default()
/// };
/// ```
#[derive(Clone, Debug, Default)]
pub struct Endpoints {
    /// Zenoh endpoints to listen on (`tcp/10.0.0.1:7447`).
    pub listen: Vec<String>,
    /// Zenoh endpoints to connect to.
    pub connect: Vec<String>,
    /// A Zenoh config file (JSON5 or YAML), read first.
    pub config: Option<PathBuf>,
}

/// Why a Zenoh session could not be opened.
///
/// # Examples
/// ```
/// use shmbus_zenoh::{session, Endpoints, SessionError};
///
/// let at = Endpoints { listen: vec!["tcp/not an address".into()], ..Endpoints::default() };
/// match session(&at) {
///     Err(SessionError::Setting { key, .. }) | Err(SessionError::Open(key)) => println!("{key}"),
///     Err(other) => println!("{other}"),
///     Ok(_) => panic!("no such endpoint"),
/// }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The config file could not be read or parsed.
    #[error("zenoh config {path}: {message}")]
    ConfigFile {
        /// The file.
        path: PathBuf,
        /// Zenoh's message.
        message: String,
    },
    /// An endpoint or setting Zenoh refused.
    #[error("zenoh config {key} = {value}: {message}")]
    Setting {
        /// The config key.
        key: String,
        /// The value.
        value: String,
        /// Zenoh's message.
        message: String,
    },
    /// Zenoh could not open the session (an address in use, say).
    #[error("zenoh session: {0}")]
    Open(String),
}

/// Opens a session: the config file if given, then peer mode, no
/// scouting, and the endpoints (listening on none unless asked, so a
/// bridge opens no port it was not told to).
///
/// # Errors
/// [`SessionError`] naming the file, key or reason.
///
/// # Examples
/// ```
/// // Peer mode, listening nowhere, dialing no one: a session of one.
/// let s = shmbus_zenoh::session(&shmbus_zenoh::Endpoints::default())?;
/// # drop(s);
/// # Ok::<(), shmbus_zenoh::SessionError>(())
/// ```
pub fn session(at: &Endpoints) -> Result<Session, SessionError> {
    let mut config = match &at.config {
        Some(path) => Config::from_file(path).map_err(|e| SessionError::ConfigFile {
            path: path.clone(),
            message: e.to_string(),
        })?,
        None => Config::default(),
    };
    let mut set = |key: &str, value: String| {
        config
            .insert_json5(key, &value)
            .map_err(|e| SessionError::Setting {
                key: key.to_owned(),
                value,
                message: e.to_string(),
            })
    };
    if at.config.is_none() {
        set("mode", "\"peer\"".into())?;
        set("scouting/multicast/enabled", "false".into())?;
        set("scouting/gossip/enabled", "false".into())?;
        set("listen/endpoints", json_list(&at.listen))?;
    } else if !at.listen.is_empty() {
        set("listen/endpoints", json_list(&at.listen))?;
    }
    if !at.connect.is_empty() {
        set("connect/endpoints", json_list(&at.connect))?;
    }
    zenoh::open(config)
        .wait()
        .map_err(|e| SessionError::Open(e.to_string()))
}

/// `["a","b"]`, each string JSON-escaped.
fn json_list(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")))
        .collect();
    format!("[{}]", quoted.join(","))
}
