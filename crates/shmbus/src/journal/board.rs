//! [`BoardFeed`]: a journaled bus's last value per key, kept in a
//! blackboard, so that one process folds the journal and every other
//! reads the table (a late joiner reads it instead of folding).

use super::error::FeedError;
use super::keyed::KeyedPayload;
use super::state::State;
use crate::blackboard::{Field, PutError, Writer};
use crate::mem::{DefaultRegion, Region};
use crate::wait::Wait;

/// A journaled bus folded into last-value-per-key ([`State`]) and written
/// into a blackboard as it folds: key `u64` ([`Keyed::key`](super::Keyed::key),
/// or a raw message's first 8 bytes), value the message. Run it in one
/// process; any number of others read the table with a
/// [`blackboard::Reader`](crate::blackboard::Reader), late or not,
/// without joining the journal. After lost updates the state rejoins and
/// the journal's entries are written again (versions go up; values come
/// back to the latest).
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus::{BusOptions, OpenOptions, Wait};
/// use shmbus::blackboard::{self, Reader, Writer};
/// use shmbus::journal::{self, BoardFeed, JoinOptions, Keyed, State};
///
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// struct Tick { key: u64, val: u64 }
/// # impl shmbus::Message for Tick { const NAME: &'static str = "example.Tick"; }
/// impl Keyed for Tick { fn key(&self) -> u64 { self.key } }
///
/// # let dir = std::env::temp_dir().join(format!("shmbus-doc-feed-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let name = format!("/dev/shm/shmbus-doc-feed-{}", std::process::id());
/// # let board = format!("/dev/shm/shmbus-doc-feed-bb-{}", std::process::id());
/// let mut publisher = journal::Publisher::<Tick>::create(
///     &name,
///     &BusOptions::new(64),
///     &journal::Options::new(dir.join("ticks.journal")),
/// )?;
/// publisher.publish(&Tick { key: 1, val: 10 })?;
/// let last = publisher.publish(&Tick { key: 1, val: 11 })?;
///
/// // The folding process:
/// let writer = Writer::<u64, Tick>::create(&board, &blackboard::Options::new(1000))?;
/// let mut feed = BoardFeed::new(State::<Tick>::join(&name, &JoinOptions::default())?, writer)?;
/// assert!(feed.wait_for(last, Wait::For(Duration::from_secs(5)))?);
///
/// // Any other process:
/// let mut reader = Reader::<u64, Tick>::open(&board, &OpenOptions::default())?;
/// assert_eq!(reader.get(&1)?.map(|e| e.value.val), Some(11));
/// # drop(feed); publisher.close()?; shmbus::remove(&name)?; shmbus::remove(&board)?;
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct BoardFeed<T: ?Sized + KeyedPayload + Field, R: Region = DefaultRegion> {
    state: State<T>,
    board: Writer<u64, T, R>,
}

impl<T: ?Sized + KeyedPayload + Field, R: Region> std::fmt::Debug for BoardFeed<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoardFeed")
            .field("state", &self.state)
            .field("board", &self.board)
            .finish()
    }
}

impl<T: ?Sized + KeyedPayload + Field, R: Region> BoardFeed<T, R> {
    /// Feeds `board` from `state`; writes nothing yet (call
    /// [`BoardFeed::poll`] or [`BoardFeed::wait_for`]). A state that has
    /// folded entries already is written whole first.
    ///
    /// # Errors
    /// [`FeedError::ValueSize`] if the table's values are not the bus's
    /// messages (raw sides of other sizes); [`FeedError::Board`] if the
    /// state already holds more keys than the table.
    ///
    /// # Examples
    /// See [`BoardFeed`].
    pub fn new(state: State<T>, mut board: Writer<u64, T, R>) -> Result<Self, FeedError> {
        let bus = state.subscriber().msg_size();
        if board.value_size() != bus {
            return Err(FeedError::ValueSize {
                board: board.value_size(),
                bus,
            });
        }
        for (key, msg) in state.state().iter() {
            board
                .put_bytes(&key.to_ne_bytes(), T::bytes_of(msg))
                .map_err(FeedError::Board)?;
        }
        Ok(BoardFeed { state, board })
    }

    /// Folds in everything available now and writes each key it folds;
    /// returns how many entries it took (as [`State::poll`]).
    ///
    /// # Errors
    /// [`FeedError::Join`] as [`State::poll`]; [`FeedError::Board`] when
    /// the table refused a key (the state has folded it all the same).
    ///
    /// # Examples
    /// See [`BoardFeed`].
    pub fn poll(&mut self) -> Result<usize, FeedError> {
        let board = &mut self.board;
        let mut refused = None;
        let n = self
            .state
            .poll_each(|| true, |key, bytes| put(board, &mut refused, key, bytes))?;
        refused.map_or(Ok(n), |e| Err(FeedError::Board(e)))
    }

    /// Folds in and writes entries until sequence `seq` is in (true), or
    /// the wait ran out first (false), as [`State::wait_for`].
    ///
    /// # Errors
    /// As [`BoardFeed::poll`].
    ///
    /// # Examples
    /// See [`BoardFeed`].
    pub fn wait_for(&mut self, seq: u64, wait: Wait) -> Result<bool, FeedError> {
        let board = &mut self.board;
        let mut refused = None;
        let done = self.state.wait_for_each(
            seq,
            wait,
            || true,
            |key, bytes| put(board, &mut refused, key, bytes),
        )?;
        refused.map_or(Ok(done), |e| Err(FeedError::Board(e)))
    }

    /// The state folded so far.
    ///
    /// # Examples
    /// See [`BoardFeed`].
    pub fn state(&self) -> &State<T> {
        &self.state
    }

    /// The blackboard's writer.
    ///
    /// # Examples
    /// See [`BoardFeed`].
    pub fn board(&self) -> &Writer<u64, T, R> {
        &self.board
    }
}

/// Writes one folded entry, unless the table refused one already.
fn put<T: ?Sized + Field, R: Region>(
    board: &mut Writer<u64, T, R>,
    refused: &mut Option<PutError>,
    key: u64,
    bytes: &[u8],
) {
    if refused.is_none() {
        if let Err(e) = board.put_bytes(&key.to_ne_bytes(), bytes) {
            *refused = Some(e);
        }
    }
}
