//! `bridge in`: publishes what arrives from Zenoh into a local bus, at the
//! upstream's sequence numbers, repairing holes from the upstream's
//! journal where it has one.
//!
//! # Invariants
//! - The downstream bus's next sequence is the next upstream sequence this
//!   bridge expects. A new downstream bus starts at the first frame's
//!   sequence, so its subscribers, all of whom joined after it, have
//!   missed nothing.
//! - A frame past that point means a hole (a gap frame from the
//!   bridge-out, frames Zenoh dropped or never delivered, a bridge-in that
//!   was down). The hole is first asked of the upstream's journal
//!   (`replay`): what the journal gives is published in order; what it
//!   cannot is given up with `Publisher::skip`, which every downstream
//!   subscriber counts in `Lagged` (a journaled downstream cannot skip: it
//!   stops, `BridgeError::Unrepairable`). So, from a subscriber's join,
//!   delivered + skipped equals what the upstream published in that span,
//!   and skipped is zero while the upstream's journal holds what was lost.
//! - Each hole is asked for once (`asked_to`); once a query is answered
//!   with an error (the upstream bus has no journal) holes are skipped
//!   without asking. A query nobody answers (no bridge-out yet) changes
//!   nothing; a bootstrap nobody answers is asked again every second.
//! - A bootstrap comes before anything live: until it has made the bus,
//!   live frames wait in `pending`.
//! - One replay at a time. Live frames that arrive meanwhile wait in
//!   `pending`, in arrival order, and are applied after it: memory grows
//!   with the live rate times the replay's duration (bounded by its
//!   timeout).
//! - A frame before that point (a repeat) is dropped and counted in
//!   [`InStats::repeats`]: the downstream never goes back.
//! - Sequences are those of the upstream creation followed (frames name
//!   it, `frame::Upstream`) plus an offset: 0 for the first creation
//!   heard; a creation not followed before is a new stream whose first
//!   sequence lands on the downstream's next (`Following`), so a
//!   re-created upstream (sequences from 0 again) is mirrored, not taken
//!   for repeats; frames of the 16 creations followed last are repeats.
//! - Which creation is followed, at which offset, and the retired ones are
//!   stored (`InOptions::state`, `state.rs`) whenever that changes, before
//!   anything of a new creation is published, and loaded at start if the
//!   file names this downstream bus's creation: a restarted bridge-in maps
//!   the upstream as the last one did.
//! - A frame that cannot be applied whole (`admissible`: a larger message
//!   size than the bus's, a hole past 2^60) is dropped as bad before
//!   anything of it happens: a peer on the key may make the bus skip or
//!   repeat, never stop it.
//! - One writer for the downstream bus at a time: the bridge's state is
//!   under one mutex. A live frame at the next sequence, with nothing
//!   queued before it and no replay under way, is published on Zenoh's
//!   thread in its callback (a thread hand-off fewer: latency); any other
//!   frame, reply or end of a query goes through a channel to the
//!   caller's thread, which handles them in arrival order. `queued`
//!   counts the live frames in that channel, so a frame never overtakes
//!   one queued before it.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

use shmbus::mem::Region;
use zenoh::query::ConsolidationMode;
use zenoh::sample::Sample;
use zenoh::{Session, Wait as _};

use crate::downstream::{Create, Downstream};
use crate::frame::{Frame, Upstream};
use crate::{BridgeError, Endpoints, replay, session, state};

/// How `bridge_in` runs.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use shmbus_zenoh::{Endpoints, InOptions};
///
/// // A journaled mirror of the upstream, listening for the bridge-out.
/// let opts = InOptions {
///     key: "md/ticks".into(),
///     name: "ticks".into(),
///     create: Some(4096),
///     journal: Some("/var/lib/md/ticks.journal".into()),
///     message_type: Some(("md.Tick".into(), 8)),
///     bootstrap: true,
///     replay_timeout: Duration::from_secs(10),
///     state: None,
///     endpoints: Endpoints { listen: vec!["tcp/10.0.0.2:7447".into()], ..Endpoints::default() },
/// };
/// ```
#[derive(Clone, Debug)]
pub struct InOptions {
    /// The Zenoh key expression to subscribe to.
    pub key: String,
    /// The local bus to publish into.
    pub name: String,
    /// Create the bus, with this many slots and the upstream's message
    /// size, when the first frame arrives, unless it exists (then, as
    /// without this, it is taken over: it must have no live publisher).
    pub create: Option<u64>,
    /// Give the bus it creates a journal here (needs `create`; implies
    /// `bootstrap`): late joiners on this host then get the upstream's
    /// whole state.
    pub journal: Option<PathBuf>,
    /// With `create`: the message type the bus records (name, alignment:
    /// `BusOptions::message_type`), as the upstream's, so that typed
    /// subscribers may open it. `None`: bytes.
    pub message_type: Option<(String, u32)>,
    /// Start from the upstream's journal (its compacted state and every
    /// record after), then go live: every sequence once.
    pub bootstrap: bool,
    /// How long a journal query may take.
    pub replay_timeout: Duration,
    /// Where to listen and whom to dial.
    pub endpoints: Endpoints,
    /// A file to keep, for this downstream bus, which creations of the
    /// upstream it followed and at which offsets (docs/BRIDGE-WIRE.md,
    /// "The state file"), so that a bridge-in restarted after the upstream
    /// was made again maps its sequences as this one did. `None`: kept
    /// in memory only; a restarted bridge-in then takes the first
    /// creation it hears to be the one the bus followed. Its directory
    /// should be the user's own, private.
    pub state: Option<PathBuf>,
}

/// What `bridge_in` has done so far.
///
/// # Examples
/// ```
/// let s = shmbus_zenoh::InStats { published: 10, replayed: 4, ..Default::default() };
/// assert_eq!(s.published - s.replayed, 6); // arrived live
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InStats {
    /// Messages published into the local bus (live and replayed).
    pub published: u64,
    /// Of those, messages the upstream's journal gave (bootstrap and
    /// repairs).
    pub replayed: u64,
    /// Upstream sequences given up (gap frames and holes no journal
    /// filled).
    pub skipped: u64,
    /// Frames dropped because their sequence was already passed.
    pub repeats: u64,
    /// Payloads that were not frames (see `frame::FrameError`), dropped.
    pub bad_frames: u64,
    /// Journal queries asked.
    pub queries: u64,
    /// State files (`InOptions::state`) ignored as unreadable or not
    /// state, and writes of it that failed: the bridge goes on without.
    pub state_errors: u64,
    /// Why, the last time.
    pub state_error: Option<String>,
}

const STATS_EVERY: Duration = Duration::from_secs(1);

/// What Zenoh's callbacks hand over.
enum Event {
    Live(Sample),
    Reply(Result<Sample, String>),
    /// The query's callback was dropped: every reply is in.
    ReplayDone,
}

/// Sends `ReplayDone` when the query's callback is dropped (Zenoh drops it
/// once the query is answered in full or times out).
struct DoneOnDrop(mpsc::Sender<Event>);

impl Drop for DoneOnDrop {
    fn drop(&mut self) {
        let _ = self.0.send(Event::ReplayDone);
    }
}

/// Subscribes to `opts.key` and publishes every frame into `opts.name`
/// until `stop` is set (checked at least every 100 ms), calling
/// `on_stats` about once a second and once the subscription is declared
/// (with all counts zero), so a caller can tell it is listening.
///
/// # Errors
/// [`BridgeError`]: Zenoh could not be set up, the bus could not be made
/// or taken over, upstream messages do not fit it, a bootstrap found no
/// journal, or a journaled downstream met a hole no journal filled.
///
/// # Examples
/// ```
/// use std::sync::atomic::AtomicBool;
/// use std::time::Duration;
/// use shmbus_zenoh::{bridge_in, Endpoints, InOptions};
///
/// let opts = InOptions {
///     key: "doc/in".into(),
///     name: format!("/dev/shm/doc-bridge-in-{}", std::process::id()),
///     create: Some(64), // made when the first message arrives
///     journal: None,
///     message_type: None,
///     bootstrap: false,
///     replay_timeout: Duration::from_secs(10),
///     state: None,
///     endpoints: Endpoints::default(),
/// };
/// // Set from a signal handler in `shmbus bridge in`; set already here,
/// // so it returns at its first look.
/// let stop = AtomicBool::new(true);
/// let stats = bridge_in(&opts, &stop, |s| println!("published {}", s.published))?;
/// assert_eq!(stats.published, 0);
/// # Ok::<(), shmbus_zenoh::BridgeError>(())
/// ```
pub fn bridge_in(
    opts: &InOptions,
    stop: &AtomicBool,
    mut on_stats: impl FnMut(&InStats),
) -> Result<InStats, BridgeError> {
    check_create(opts)?;
    let bus = Downstream::attach(&opts.name, opts.create.is_some())?;
    let mut stats = InStats::default();
    let bus_id = bus.as_ref().and_then(|_| identity(&opts.name));
    let following = match (&opts.state, bus_id) {
        (Some(path), Some(id)) => load_following(path, id, &mut stats),
        _ => Following::default(),
    };
    if bus.is_none() && opts.create.is_none() {
        // Not there and not to be made: the attach error names it.
        shmbus::Publisher::<[u8]>::attach(&opts.name, &shmbus::OpenOptions::default()).map_err(
            |source| BridgeError::Attach {
                name: opts.name.clone(),
                source,
            },
        )?;
    }
    let session = session(&opts.endpoints)?;
    let (tx, rx) = mpsc::channel();
    let b = Arc::new(Mutex::new(Bridge {
        opts: opts.clone(),
        session: session.clone(),
        tx: tx.clone(),
        bus,
        pending: VecDeque::new(),
        replay: None,
        asked_to: None,
        journal_answers: true,
        saved: following.changes,
        following,
        bus_id,
        bootstrap_at: None,
        stats,
        failed: None,
    }));
    // Live frames queued for this thread and not yet handled.
    let queued = Arc::new(AtomicUsize::new(0));
    let (shared, waiting) = (Arc::clone(&b), Arc::clone(&queued));
    let _sub = session
        .declare_subscriber(opts.key.clone())
        .callback(move |sample| {
            // The next sequence, nothing queued before it, no replay: it
            // is published here, on Zenoh's thread (one hand-off fewer);
            // anything else goes to the bridge's thread, in order.
            if waiting.load(Ordering::Acquire) == 0 {
                if let Ok(mut b) = shared.try_lock() {
                    if waiting.load(Ordering::Acquire) == 0 {
                        if let Some(done) = b.publish_in_order(&sample) {
                            if let Err(e) = done {
                                b.failed.get_or_insert(e);
                            }
                            return;
                        }
                    }
                }
            }
            waiting.fetch_add(1, Ordering::AcqRel);
            let _ = tx.send(Event::Live(sample));
        })
        .wait()
        .map_err(|e| BridgeError::Zenoh(e.to_string()))?;
    let lock = || b.lock().unwrap_or_else(PoisonError::into_inner);
    on_stats(&lock().stats);
    {
        // A bus that exists carries on from where it is: first what passed
        // meanwhile, from the journal if the upstream has one. A bootstrap
        // asks for everything.
        let mut b = lock();
        match b.bus.as_ref().map(Downstream::next_sequence) {
            Some(next) => b.ask(next, None, false)?,
            None if opts.bootstrap || opts.journal.is_some() => {
                b.bootstrap_at = Some(Instant::now())
            }
            None => {}
        }
    }
    let mut last_report = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        if last_report.elapsed() >= STATS_EVERY {
            let stats = lock().stats.clone();
            on_stats(&stats);
            last_report = Instant::now();
        }
        let event = rx.recv_timeout(Duration::from_millis(100));
        let mut b = lock();
        if let Some(e) = b.failed.take() {
            return Err(e);
        }
        if b.replay.is_none() && b.bootstrap_at.is_some_and(|at| Instant::now() >= at) {
            b.ask(0, None, true)?;
        }
        match event {
            Ok(event) => {
                let live = matches!(event, Event::Live(_));
                let handled = b.handle(event);
                if live {
                    queued.fetch_sub(1, Ordering::AcqRel);
                }
                handled?;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => b.check_replay_deadline()?,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let stats = lock().stats.clone();
    Ok(stats)
}

/// Refuses, before anything listens, a bus `opts.create` could never
/// make (a capacity that is not a power of two, a message type no bus
/// records, a journal path that does not resolve or does not fit the
/// header), with the error creating it would give: the bus is made only
/// when the first frame brings the upstream's message size, and a bridge
/// that said "listening" must not die then. Checked with the smallest
/// message the type allows; the first frame's size is checked when the
/// bus is made.
fn check_create(opts: &InOptions) -> Result<(), BridgeError> {
    let Some(capacity) = opts.create else {
        return Ok(());
    };
    let invalid = |e| BridgeError::Create {
        name: opts.name.clone(),
        source: shmbus::CreateError::InvalidGeometry(e),
    };
    let (type_name, align) = match &opts.message_type {
        Some((name, align)) => (name.as_str(), *align),
        None => ("bytes", 1),
    };
    let smallest = shmbus::TypeFingerprint::checked(type_name, align, align).map_err(invalid)?;
    shmbus::wire::Header::broadcast(capacity, smallest, 4096, 0).map_err(invalid)?;
    if let Some(path) = &opts.journal {
        check_journal_path(path).map_err(|message| BridgeError::Journal {
            name: opts.name.clone(),
            message,
        })?;
    }
    Ok(())
}

/// The journal path as the bus's creator will record it (absolute, its
/// directory resolved) fits the header (docs/LAYOUT.md §4).
fn check_journal_path(path: &std::path::Path) -> Result<(), String> {
    let shown = path.display();
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => std::path::Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| format!("{shown}: names no file"))?;
    let dir = dir
        .canonicalize()
        .map_err(|e| format!("{shown}: resolve: {e}"))?;
    let len = dir.join(name).as_os_str().len();
    let max = shmbus::wire::header::JOURNAL_PATH_MAX;
    if len > max {
        return Err(format!(
            "{shown}: the absolute path is {len} bytes, at most {max}"
        ));
    }
    Ok(())
}

/// A journal query in flight.
struct Replay {
    /// The creation asked and the offset its answer is published at;
    /// `None`: the first creation that answers, at its own sequences (a
    /// bootstrap, or a restarted bridge-in's first question).
    follow: Option<Follow>,
    /// The range asked for (`to` exclusive), in downstream sequences.
    to: Option<u64>,
    /// A bootstrap of a bus not made yet: the entries, to make it from.
    collect: Option<Vec<(u64, Vec<u8>)>>,
    /// The upstream's message size, from the replies.
    msg_size: u64,
    /// The end frame's `next` (downstream): the answer was complete.
    end: Option<u64>,
    /// An error reply.
    error: Option<String>,
    /// When to stop waiting for Zenoh to end it.
    deadline: Instant,
}

struct Bridge {
    opts: InOptions,
    session: Session,
    tx: mpsc::Sender<Event>,
    bus: Option<Downstream>,
    pending: VecDeque<Sample>,
    replay: Option<Replay>,
    /// The end of the last hole asked for.
    asked_to: Option<u64>,
    /// False once a query was answered with an error: no journal upstream.
    journal_answers: bool,
    /// Which creation of the upstream bus the downstream follows.
    following: Following,
    /// `following.changes` when it was last stored (or loaded).
    saved: u64,
    /// The downstream bus's identity (`identity`), once it is known.
    bus_id: Option<(u64, u32)>,
    /// A bootstrap is due (at this time) and not done yet.
    bootstrap_at: Option<Instant>,
    stats: InStats,
    /// What stopped the bridge on Zenoh's thread, for its own to return.
    failed: Option<BridgeError>,
}

/// The upstream creation a downstream bus follows, and where its
/// sequences land: downstream sequence = upstream sequence + `offset`
/// (wrapping). docs/BRIDGE-WIRE.md "A new upstream creation".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Follow {
    upstream: Upstream,
    offset: u64,
}

/// How many creations followed before are remembered.
const RETIRED: usize = state::RETIRED;

/// Which creation of the upstream the downstream bus follows, and which
/// it followed before (docs/BRIDGE-WIRE.md, "A new upstream creation").
#[derive(Debug, Default)]
struct Following {
    /// The creation followed now: `None` until a frame names one.
    now: Option<Follow>,
    /// Creations followed before, oldest first (at most [`RETIRED`]):
    /// their late frames are repeats.
    retired: VecDeque<u64>,
    /// How many times `now` changed: the state file is written when this
    /// moves.
    changes: u64,
}

impl Following {
    /// Where the frames of `upstream` go, for a downstream bus whose next
    /// sequence is `next` (`None`: not made yet): the creation followed
    /// now, at its offset; one followed before, `None` (its frames are
    /// repeats); the first one heard, at its own sequences (a new bus is
    /// made at them; an existing one is taken to follow it already); any
    /// later one is a new stream, its first sequence at `next`.
    fn offset_for(&self, upstream: Upstream, next: Option<u64>) -> Option<Follow> {
        let offset = match (self.now, next) {
            (Some(f), _) if f.upstream.instance == upstream.instance => return Some(f),
            _ if self.retired.contains(&upstream.instance) => return None,
            (Some(_), Some(next)) => next.wrapping_sub(upstream.first),
            _ => 0,
        };
        Some(Follow { upstream, offset })
    }

    /// From now on `to` is followed; the creation followed until now is
    /// retired. Whether that was another creation.
    fn switch(&mut self, to: Follow) -> bool {
        let old = self.now.replace(to);
        if old != Some(to) {
            self.changes += 1;
        }
        match old {
            Some(old) if old.upstream.instance != to.upstream.instance => {
                self.retired.push_back(old.upstream.instance);
                if self.retired.len() > RETIRED {
                    self.retired.pop_front();
                }
                true
            }
            _ => false,
        }
    }
}

/// The identity of bus `name` (its header's `created_ns`, `creator_pid`):
/// each creation of a bus has its own. `None` if it cannot be read.
fn identity(name: &str) -> Option<(u64, u32)> {
    let s = shmbus::stat::stat(name).ok()?;
    Some((s.created_ns, s.creator_pid))
}

/// The creations the downstream bus `id` followed, from the state file at
/// `path`; none (what a bridge-in without one does) if there is no file,
/// it is about another creation of the bus, or it is not a state (then
/// counted in `stats`).
fn load_following(path: &std::path::Path, id: (u64, u32), stats: &mut InStats) -> Following {
    match state::load(path) {
        Ok(Some(saved)) if saved.downstream == id => Following {
            now: Some(Follow {
                upstream: saved.following,
                offset: saved.offset,
            }),
            retired: saved.retired.into(),
            changes: 0,
        },
        Ok(_) => Following::default(),
        Err(e) => {
            stats.state_errors += 1;
            stats.state_error = Some(e.to_string());
            Following::default()
        }
    }
}

/// The creation a frame comes from.
fn upstream_of(frame: &Frame<'_>) -> Upstream {
    match *frame {
        Frame::Message { upstream, .. }
        | Frame::Batch { upstream, .. }
        | Frame::Gap { upstream, .. }
        | Frame::End { upstream, .. } => upstream,
    }
}

/// `frame` at downstream sequences: each of its sequences plus `offset`.
fn shifted<'a>(frame: &Frame<'a>, offset: u64) -> Frame<'a> {
    let at = |seq: u64| seq.wrapping_add(offset);
    match *frame {
        Frame::Message {
            upstream,
            seq,
            msg_size,
            bytes,
        } => Frame::Message {
            upstream,
            seq: at(seq),
            msg_size,
            bytes,
        },
        Frame::Batch {
            upstream,
            first,
            msg_size,
            bytes,
        } => Frame::Batch {
            upstream,
            first: at(first),
            msg_size,
            bytes,
        },
        Frame::Gap {
            upstream,
            first,
            count,
        } => Frame::Gap {
            upstream,
            first: at(first),
            count,
        },
        Frame::End { upstream, next } => Frame::End {
            upstream,
            next: at(next),
        },
    }
}

/// Signed distance from `from` to `to`: sequences wrap like the bus's.
fn ahead(from: u64, to: u64) -> i64 {
    to.wrapping_sub(from) as i64
}

impl Bridge {
    /// Stores which creations the bus follows if that changed since it
    /// was last stored, once the bus exists (its identity names the file's
    /// bus). A failed write is counted; the bridge goes on.
    fn keep_state(&mut self) {
        let (Some(path), Some(now)) = (&self.opts.state, self.following.now) else {
            return;
        };
        if self.following.changes == self.saved || self.bus.is_none() {
            return;
        }
        if self.bus_id.is_none() {
            self.bus_id = identity(&self.opts.name);
        }
        let Some(downstream) = self.bus_id else {
            return;
        };
        let saved = state::Saved {
            downstream,
            following: now.upstream,
            offset: now.offset,
            retired: self.following.retired.iter().copied().collect(),
        };
        match state::store(path, &saved) {
            Ok(()) => self.saved = self.following.changes,
            Err(e) => {
                // Counted once per change, not per frame.
                self.saved = self.following.changes;
                self.stats.state_errors += 1;
                self.stats.state_error = Some(e.to_string());
            }
        }
    }

    fn handle(&mut self, event: Event) -> Result<(), BridgeError> {
        let handled = self.handle_event(event);
        self.keep_state();
        handled
    }

    fn handle_event(&mut self, event: Event) -> Result<(), BridgeError> {
        match event {
            Event::Live(sample) if self.replay.is_some() || self.bootstrap_at.is_some() => {
                self.pending.push_back(sample)
            }
            Event::Live(sample) => self.live(sample)?,
            Event::Reply(Ok(sample)) => self.reply(&sample)?,
            Event::Reply(Err(why)) => {
                if let Some(r) = &mut self.replay {
                    r.error = Some(why);
                }
            }
            Event::ReplayDone => self.replay_done()?,
        }
        // After a replay, what waited goes on, unless it asks again.
        while self.replay.is_none() && self.bootstrap_at.is_none() {
            match self.pending.pop_front() {
                Some(sample) => self.live(sample)?,
                None => break,
            }
        }
        Ok(())
    }

    /// Asks the upstream's journal for `[from, to)` (downstream
    /// sequences; asked at the followed creation's own).
    fn ask(&mut self, from: u64, to: Option<u64>, collect: bool) -> Result<(), BridgeError> {
        let timeout = self.opts.replay_timeout;
        let replies = self.tx.clone();
        let done = DoneOnDrop(self.tx.clone());
        let follow = self.following.now.filter(|_| !collect);
        let offset = follow.map_or(0, |f| f.offset);
        let upstream = |seq: u64| seq.wrapping_sub(offset);
        self.session
            .get(replay::selector(
                &self.opts.key,
                upstream(from),
                to.map(upstream),
            ))
            .consolidation(ConsolidationMode::None)
            .timeout(timeout)
            .callback(move |reply| {
                let _ = &done;
                let r = reply.into_result().map_err(|e| {
                    let text = e.payload().try_to_string().map(|s| s.into_owned());
                    text.unwrap_or_else(|_| "an error reply".into())
                });
                let _ = replies.send(Event::Reply(r));
            })
            .wait()
            .map_err(|e| BridgeError::Zenoh(e.to_string()))?;
        self.stats.queries += 1;
        self.replay = Some(Replay {
            follow,
            to,
            collect: collect.then(Vec::new),
            msg_size: 0,
            end: None,
            error: None,
            deadline: Instant::now() + timeout + Duration::from_secs(5),
        });
        Ok(())
    }

    /// Zenoh ends a query by its timeout; this bounds the wait even if it
    /// did not.
    fn check_replay_deadline(&mut self) -> Result<(), BridgeError> {
        if self
            .replay
            .as_ref()
            .is_some_and(|r| Instant::now() > r.deadline)
        {
            self.handle(Event::ReplayDone)?;
        }
        Ok(())
    }

    fn reply(&mut self, sample: &Sample) -> Result<(), BridgeError> {
        let payload = sample.payload().to_bytes();
        let Some(r) = &mut self.replay else {
            return Ok(()); // a reply after its query was given up
        };
        let frame = match Frame::parse(&payload) {
            Err(_) => {
                self.stats.bad_frames += 1;
                return Ok(());
            }
            Ok(frame) => frame,
        };
        // The answer of the creation asked (or of the first to answer),
        // at the sequences its frames go to; another creation's replies
        // answer a question not asked.
        let upstream = upstream_of(&frame);
        let follow = *r.follow.get_or_insert(Follow {
            upstream,
            offset: 0,
        });
        if follow.upstream.instance != upstream.instance {
            return Ok(());
        }
        if r.collect.is_none() && self.following.now.is_none() {
            self.following.switch(follow);
            // Stored before anything of it is published (as in `live`).
            self.keep_state();
        }
        let Some(r) = &mut self.replay else {
            return Ok(());
        };
        match shifted(&frame, follow.offset) {
            Frame::End { next, .. } => r.end = Some(next),
            Frame::Gap { .. } => {} // a hole: found as such below
            frame => {
                if let Some(entries) = &mut r.collect {
                    for m in frame.messages() {
                        if let Frame::Message {
                            seq,
                            msg_size,
                            bytes,
                            ..
                        } = m
                        {
                            r.msg_size = r.msg_size.max(msg_size);
                            if entries.last().is_none_or(|&(last, _)| ahead(last, seq) > 0) {
                                entries.push((seq, bytes.to_vec()));
                            }
                        }
                    }
                    return Ok(());
                }
                if let Some(bus) = &mut self.bus {
                    let before = self.stats.published;
                    apply(bus, &frame, &mut self.stats, &self.opts.name)?;
                    self.stats.replayed += self.stats.published - before;
                }
            }
        }
        Ok(())
    }

    fn replay_done(&mut self) -> Result<(), BridgeError> {
        let Some(r) = self.replay.take() else {
            return Ok(());
        };
        if r.end.is_none() && r.error.is_some() {
            self.journal_answers = false;
        }
        let Some(entries) = r.collect else {
            // A repair: what it did not fill, the frame that asked finds
            // still a hole, and skips.
            self.asked_to = r.to.or(r.end);
            return Ok(());
        };
        if let Some(why) = r.error.filter(|_| r.end.is_none()) {
            return Err(BridgeError::NoJournal {
                key: self.opts.key.clone(),
                why,
            });
        }
        if r.end.is_none() {
            // Nobody answered (no bridge-out yet): ask again in a second.
            self.bootstrap_at = Some(Instant::now() + Duration::from_secs(1));
            return Ok(());
        }
        self.bootstrap_at = None;
        self.asked_to = r.end;
        // The bus is made from this creation's answer: it follows it, at
        // its own sequences.
        if let Some(follow) = r.follow {
            self.following.switch(follow);
        }
        if entries.is_empty() {
            return Ok(()); // made at the first live frame
        }
        self.bootstrap(entries, r.msg_size)
    }

    /// Makes the downstream bus from a bootstrap's entries: a journal's
    /// snapshot is everything before the last hole (a compacted journal's
    /// keys skip sequences), its run the rest; a plain bus starts at the
    /// first entry and skips the holes.
    fn bootstrap(
        &mut self,
        mut entries: Vec<(u64, Vec<u8>)>,
        msg_size: u64,
    ) -> Result<(), BridgeError> {
        let how = self.create();
        let cut = match how.journal {
            Some(_) => (1..entries.len())
                .rev()
                .find(|&k| entries[k].0 != entries[k - 1].0.wrapping_add(1))
                .unwrap_or(0),
            None => 0,
        };
        let run = entries.split_off(cut);
        let mut bus = Downstream::create(&self.opts.name, &how, msg_size, run[0].0, entries)?;
        for (seq, bytes) in &run {
            let frame = Frame::Message {
                upstream: Upstream::default(),
                seq: *seq,
                msg_size,
                bytes,
            };
            apply(&mut bus, &frame, &mut self.stats, &self.opts.name)?;
        }
        self.stats.replayed += run.len() as u64;
        self.bus = Some(bus);
        Ok(())
    }

    fn create(&self) -> Create {
        Create {
            capacity: self.opts.create.unwrap_or(0),
            journal: self.opts.journal.clone(),
            message_type: self.opts.message_type.clone(),
        }
    }

    /// Publishes `sample` at once if it may be: no replay or bootstrap
    /// under way, nothing pending, and it is a message or batch of the
    /// creation followed that starts at the next sequence (then `live`
    /// would find no hole, no new creation, nothing to ask: `apply` is all
    /// it does). `None`: it goes the long way, through `live`, in order.
    /// The frame is parsed once either way it is published.
    fn publish_in_order(&mut self, sample: &Sample) -> Option<Result<(), BridgeError>> {
        if self.replay.is_some()
            || self.bootstrap_at.is_some()
            || !self.pending.is_empty()
            || self.failed.is_some()
        {
            return None;
        }
        let follow = self.following.now?;
        let bus = self.bus.as_mut()?;
        let payload = sample.payload().to_bytes();
        let frame = Frame::parse(&payload).ok()?;
        let (upstream, seq) = match frame {
            Frame::Message { upstream, seq, .. }
            | Frame::Batch {
                upstream,
                first: seq,
                ..
            } => (upstream, seq),
            _ => return None,
        };
        if upstream.instance != follow.upstream.instance
            || seq.wrapping_add(follow.offset) != bus.next_sequence()
        {
            return None;
        }
        let frame = shifted(&frame, follow.offset);
        Some(apply(bus, &frame, &mut self.stats, &self.opts.name))
    }

    fn live(&mut self, sample: Sample) -> Result<(), BridgeError> {
        let payload = sample.payload().to_bytes();
        let frame = match Frame::parse(&payload) {
            Ok(Frame::End { .. }) | Err(_) => {
                self.stats.bad_frames += 1;
                return Ok(());
            }
            Ok(frame) => frame,
        };
        let next = self.bus.as_ref().map(Downstream::next_sequence);
        let Some(follow) = self.following.offset_for(upstream_of(&frame), next) else {
            self.stats.repeats += 1; // a creation followed before
            return Ok(());
        };
        let frame = shifted(&frame, follow.offset);
        let (hole_end, msg_size) = match frame {
            Frame::Message { seq, msg_size, .. } => (seq, msg_size),
            Frame::Batch {
                first, msg_size, ..
            } => (first, msg_size),
            Frame::Gap { first, count, .. } => (first.wrapping_add(count), 0),
            Frame::End { .. } => return Ok(()),
        };
        let bus = match &mut self.bus {
            Some(bus) => bus,
            // A gap before any message says nothing a new bus needs: it
            // starts after it, at the next message.
            None if msg_size == 0 => return Ok(()),
            None => {
                let first = hole_end;
                self.bus.insert(Downstream::create(
                    &self.opts.name,
                    &self.create(),
                    msg_size,
                    first,
                    Vec::new(),
                )?)
            }
        };
        // Refused whole before anything of it happens (no creation
        // followed, no hole asked for, nothing skipped): a peer on the key
        // may make the bus skip or repeat, never stop or desynchronise it.
        if !admissible(bus, &frame) {
            self.stats.bad_frames += 1;
            return Ok(());
        }
        let next = bus.next_sequence();
        if self.following.switch(follow) {
            // Another creation: the last one's holes are not its to fill,
            // and it may have a journal where that one had none.
            self.asked_to = None;
            self.journal_answers = true;
        }
        // Stored before any of its messages is published: a bridge-in
        // killed after publishing some would otherwise be restarted with
        // the old state and put this creation's `first` past them.
        self.keep_state();
        let asked = self.asked_to.is_some_and(|to| ahead(to, hole_end) <= 0);
        if ahead(next, hole_end) > 0 && self.journal_answers && !asked {
            drop(payload);
            self.pending.push_front(sample);
            return self.ask(next, Some(hole_end), false);
        }
        let Some(bus) = &mut self.bus else {
            return Ok(());
        };
        apply(bus, &frame, &mut self.stats, &self.opts.name)
    }
}

/// Whether `frame` can be applied to `bus` as it is: its messages fit the
/// bus's message size (a bus keeps the size it was made with, from the
/// upstream's first frame), and the hole before it is one a bus can have
/// ([`shmbus::bus::SkipError::MAX`], 2^60: no bus publishes that many; a
/// frame further ahead is corrupt or hostile, not a loss). A frame behind
/// the bus is admissible: it is a repeat.
fn admissible<R: Region>(bus: &Downstream<R>, frame: &Frame<'_>) -> bool {
    let next = bus.next_sequence();
    let (lead, msg_size) = match *frame {
        Frame::Message { seq, msg_size, .. } => (ahead(next, seq), msg_size),
        Frame::Batch {
            first, msg_size, ..
        } => (ahead(next, first), msg_size),
        Frame::Gap { first, count, .. } => (ahead(next, first.wrapping_add(count)), 0),
        Frame::End { .. } => (0, 0),
    };
    msg_size <= bus.msg_size() as u64 && lead <= shmbus::bus::SkipError::MAX as i64
}

/// Publishes one frame at its upstream sequence, giving up the hole
/// before it; a frame that is not [`admissible`] is dropped whole and
/// counted in `bad_frames`.
fn apply<R: Region>(
    bus: &mut Downstream<R>,
    frame: &Frame<'_>,
    stats: &mut InStats,
    name: &str,
) -> Result<(), BridgeError> {
    if !admissible(bus, frame) {
        stats.bad_frames += 1;
        return Ok(());
    }
    let next = bus.next_sequence();
    match *frame {
        Frame::Message { seq, bytes, .. } => {
            if ahead(next, seq) < 0 {
                stats.repeats += 1;
                return Ok(());
            }
            skip(bus, ahead(next, seq) as u64, stats, name)?;
            bus.publish(bytes, name)?;
            stats.published += 1;
        }
        // Message by message, so holes and repeats within and between
        // batches follow the same rules as lone messages.
        Frame::Batch { .. } => {
            for message in frame.messages() {
                apply(bus, &message, stats, name)?;
            }
        }
        Frame::Gap { first, count, .. } => {
            let end = first.wrapping_add(count);
            if ahead(next, end) <= 0 {
                stats.repeats += 1;
                return Ok(());
            }
            skip(bus, ahead(next, end) as u64, stats, name)?;
        }
        Frame::End { .. } => {}
    }
    Ok(())
}

fn skip<R: Region>(
    bus: &mut Downstream<R>,
    n: u64,
    stats: &mut InStats,
    name: &str,
) -> Result<(), BridgeError> {
    if n > 0 {
        bus.skip(n, name)?;
        stats.skipped += n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use shmbus::{Publisher, Received, Start, Wait, WaitStrategy};

    use super::*;

    fn message(seq: u64, bytes: &[u8]) -> Frame<'_> {
        Frame::Message {
            upstream: Upstream::default(),
            seq,
            msg_size: 8,
            bytes,
        }
    }

    #[test]
    fn holes_are_skipped_repeats_dropped_and_every_sequence_kept() {
        let p = Publisher::<[u8], _>::on_heap_bytes(8, 64).expect("a heap bus");
        let mut sub = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        let mut p = Downstream::Plain(p);
        let mut stats = InStats::default();
        let frames = [
            message(0, b"a"),
            message(3, b"d"), // a hole: 1 and 2 never came
            message(2, b"c"), // late: a repeat now
            Frame::Gap {
                upstream: Upstream::default(),
                first: 4,
                count: 2,
            },
            Frame::Gap {
                upstream: Upstream::default(),
                first: 5,
                count: 2,
            }, // overlaps: only 6 is new
            message(7, b"h"),
        ];
        for f in &frames {
            apply(&mut p, f, &mut stats, "test").expect("fits");
        }
        assert_eq!(p.next_sequence(), 8);
        let (mut got, mut skipped) = (Vec::new(), 0);
        while let Some(r) = sub.recv(Wait::Never) {
            match r {
                Received::Message(m) => got.push(m[0]),
                Received::Lagged { skipped: n } => skipped += n,
            }
        }
        assert_eq!(got, b"adh");
        assert_eq!(skipped, 5, "1, 2, 4, 5, 6");
        assert_eq!(
            stats,
            InStats {
                published: 3,
                skipped: 5,
                repeats: 1,
                bad_frames: 0,
                ..InStats::default()
            }
        );
    }

    #[test]
    fn a_frame_that_cannot_be_applied_whole_changes_nothing() {
        let p = Publisher::<[u8], _>::on_heap_bytes(8, 64).expect("a heap bus");
        let mut sub = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        let mut p = Downstream::Plain(p);
        let mut stats = InStats::default();
        let far = 1 + shmbus::bus::SkipError::MAX + 1;
        let frames = [
            message(0, b"a"),
            // 16-byte messages into a bus of 8.
            Frame::Message {
                upstream: Upstream::default(),
                seq: 1,
                msg_size: 16,
                bytes: b"too big",
            },
            // Past what any bus can skip: a message, a batch, a gap's end.
            message(far, b"x"),
            Frame::Batch {
                upstream: Upstream::default(),
                first: far,
                msg_size: 8,
                bytes: b"xxxxxxxx",
            },
            Frame::Gap {
                upstream: Upstream::default(),
                first: far - 1,
                count: 1,
            },
            message(1, b"b"),
        ];
        for f in &frames {
            apply(&mut p, f, &mut stats, "test").expect("never an error");
        }
        assert_eq!(p.next_sequence(), 2, "nothing skipped, nothing published");
        let (mut got, mut skipped) = (Vec::new(), 0);
        while let Some(r) = sub.recv(Wait::Never) {
            match r {
                Received::Message(m) => got.push(m[0]),
                Received::Lagged { skipped: n } => skipped += n,
            }
        }
        assert_eq!((got, skipped), (b"ab".to_vec(), 0));
        assert_eq!(
            stats,
            InStats {
                published: 2,
                bad_frames: 4,
                ..InStats::default()
            }
        );
    }

    #[test]
    fn a_new_upstream_creation_continues_the_downstream_sequence_and_an_old_one_is_a_repeat() {
        let a = Upstream {
            instance: 1,
            first: 0,
        };
        let b = Upstream {
            instance: 2,
            first: 0,
        };
        let mut f = Following::default();
        // The first creation heard: its own sequences, bus or no bus.
        let at_a = f.offset_for(a, None).expect("followed");
        assert_eq!(at_a.offset, 0);
        assert!(!f.switch(at_a));
        assert_eq!(f.offset_for(a, Some(100)), Some(at_a));
        // Made again at 100 messages: its 0 lands on the downstream's 100.
        let at_b = f.offset_for(b, Some(100)).expect("a new stream");
        assert_eq!(at_b.offset, 100);
        assert!(f.switch(at_b), "another creation");
        assert_eq!(f.offset_for(b, Some(150)), Some(at_b), "an offset holds");
        assert_eq!(f.offset_for(a, Some(150)), None, "a late frame of A");
        // A creation continuing a journal starts at its first sequence.
        let c = Upstream {
            instance: 3,
            first: 40,
        };
        let at_c = f.offset_for(c, Some(150)).expect("a new stream");
        assert_eq!(40u64.wrapping_add(at_c.offset), 150);
        // Only the last RETIRED are remembered.
        for i in 10..10 + RETIRED as u64 + 1 {
            let next = f.offset_for(
                Upstream {
                    instance: i,
                    first: 0,
                },
                Some(0),
            );
            f.switch(next.expect("new"));
        }
        assert!(f.offset_for(a, Some(0)).is_some(), "forgotten at last");
    }

    #[test]
    fn batches_with_holes_repeats_and_overlaps_keep_delivered_plus_skipped_exact() {
        let p = Publisher::<[u8], _>::on_heap_bytes(1, 64).expect("a heap bus");
        let mut sub = p.subscribe(Start::Next, WaitStrategy::BusySpin);
        let mut p = Downstream::Plain(p);
        let mut stats = InStats::default();
        let batch = |first: u64, bytes: &'static [u8]| Frame::Batch {
            upstream: Upstream::default(),
            first,
            msg_size: 1,
            bytes,
        };
        let frames = [
            batch(0, b"abc"),  // 0..3
            batch(5, b"fg"),   // a hole: 3 and 4
            batch(4, b"efgh"), // overlaps: 4..7 repeats, 7 is new
            Frame::Gap {
                upstream: Upstream::default(),
                first: 8,
                count: 2,
            }, // 8, 9 lost upstream
            batch(9, b"jk"),   // 9 is past, 10 new
            batch(11, b"l"),   // one
            batch(0, b"abc"),  // a late repeat of the first
            batch(14, b"op"),  // a hole: 12, 13
        ];
        for f in &frames {
            apply(&mut p, f, &mut stats, "test").expect("fits");
        }
        assert_eq!(p.next_sequence(), 16);
        let (mut got, mut skipped) = (Vec::new(), 0);
        while let Some(r) = sub.recv(Wait::Never) {
            match r {
                Received::Message(m) => got.push(m[0]),
                Received::Lagged { skipped: n } => skipped += n,
            }
        }
        assert_eq!(got, b"abcfghklop");
        assert_eq!(skipped, 6, "3, 4, 8, 9, 12, 13");
        assert_eq!(got.len() as u64 + skipped, 16, "every sequence once");
        assert_eq!(
            stats,
            InStats {
                published: 10,
                skipped: 6,
                repeats: 3 + 1 + 3,
                bad_frames: 0,
                ..InStats::default()
            }
        );
    }
}
