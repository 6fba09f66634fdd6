//! How to create a service ([`Options`]).

use crate::options::{FileOptions, file_setters};
use crate::wait::WaitStrategy;

/// How to create a request-response service: how many clients, how many
/// calls each may have outstanding, how many servers, and (raw services)
/// the largest request and response.
///
/// # Examples
/// ```
/// let opts = shmbus::reqrep::Options::new(16).slots(4).servers(2);
/// ```
#[derive(Clone, Debug)]
pub struct Options {
    pub(crate) clients: u32,
    pub(crate) slots: u32,
    pub(crate) servers: u32,
    pub(crate) request_size: Option<u32>,
    pub(crate) response_size: Option<u32>,
    pub(crate) file: FileOptions,
    pub(crate) wait: WaitStrategy,
}

impl Options {
    /// A service for up to `clients` client handles at once (1 to 256),
    /// 8 calls outstanding per client, 4 servers; mode 0600.
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::reqrep::Options::new(4);
    /// ```
    pub fn new(clients: u32) -> Self {
        Options {
            clients,
            slots: 8,
            servers: 4,
            request_size: None,
            response_size: None,
            file: FileOptions::default(),
            wait: WaitStrategy::default(),
        }
    }
    /// How many calls one client may have outstanding (1 to 64).
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::reqrep::Options::new(4).slots(16);
    /// ```
    pub fn slots(mut self, slots: u32) -> Self {
        self.slots = slots;
        self
    }
    /// How many servers may serve at once (1 to 64).
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::reqrep::Options::new(4).servers(1);
    /// ```
    pub fn servers(mut self, servers: u32) -> Self {
        self.servers = servers;
        self
    }
    /// The largest request of a raw service (`Server<[u8], _>`), in
    /// bytes; a typed request's size is its type's.
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::reqrep::Options::new(4).request_size(4096);
    /// ```
    pub fn request_size(mut self, bytes: u32) -> Self {
        self.request_size = Some(bytes);
        self
    }
    /// The largest response of a raw service (`Server<_, [u8]>`), in
    /// bytes; a typed response's size is its type's.
    ///
    /// # Examples
    /// ```
    /// let opts = shmbus::reqrep::Options::new(4).response_size(1 << 20);
    /// ```
    pub fn response_size(mut self, bytes: u32) -> Self {
        self.response_size = Some(bytes);
        self
    }
    /// How the creating server waits for requests (default: spin, then
    /// futex).
    ///
    /// # Examples
    /// ```
    /// use shmbus::{WaitStrategy, reqrep};
    /// let opts = reqrep::Options::new(4).wait_strategy(WaitStrategy::BusySpin);
    /// ```
    pub fn wait_strategy(mut self, wait: WaitStrategy) -> Self {
        self.wait = wait;
        self
    }
}

file_setters!([] Options, "reqrep::Options::new(1)");
