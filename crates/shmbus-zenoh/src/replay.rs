//! Journal queries: how a bridge-in asks the bridge-out for what its
//! journal holds, and how the bridge-out answers (docs/BRIDGE-WIRE.md).
//!
//! # Protocol
//! - The query: `get` on `KEY/@journal` with parameters `from=N` and
//!   optionally `to=M` (decimal sequences; `to` exclusive). `@journal` is a
//!   verbatim chunk, so no live subscriber's wildcard matches it.
//! - The answer: every journal entry whose sequence is in `[from, to)`, in
//!   order, one message frame per reply (a compacted journal's snapshot
//!   skips sequences: each is its key's last update), a gap frame where
//!   the journal itself lost a range, then one end frame naming the
//!   sequence after the last it could give. A bus without a journal, or a
//!   malformed query, gets one error reply and no end frame.
//! - The answer is read on the bridge-out's own threads, never a Zenoh
//!   one: replies travel with the query's congestion control (Block), so
//!   a long replay must not stall Zenoh's runtime.
//! - The bridge-in asks with `ConsolidationMode::None` (all the replies
//!   share one key; the default would keep the last only) and an explicit
//!   timeout, and names itself with `peer=ID` (an id per process).
//!
//! # Answering in time
//! - A query costs what it asks for, not what the journal holds: the
//!   reader seeks to `from` ([`journal::Subscriber::seek`]: a direct offset,
//!   or a bisection of a compacted journal's snapshot), never reads from
//!   the start.
//! - [`WORKERS`] threads answer, in turns of at most [`SLICE`] records: a
//!   query not done after its turn goes to the back of the queue, so a
//!   whole-journal `from=0` is answered in slices between everyone else's
//!   and never holds a repair behind it for longer than a few turns.
//! - A peer (the `peer` parameter; queries without one share the name
//!   "") has at most [`PER_PEER`] queries in flight, and all peers together
//!   [`PENDING`]: a query past either bound gets an error reply at once,
//!   naming the bound. The peer name is the asker's own word (Zenoh's
//!   stable API tells a queryable nothing of who asks): the per-peer bound
//!   keeps well-behaved peers fair to each other, the total bound and the
//!   turns are what hold against a hostile one.
//! - Consecutive entries travel as batch frames (kind 3), up to
//!   [`BATCH_BYTES`] of messages each.

use std::collections::{HashMap, VecDeque};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use shmbus::{
    Received, Wait,
    journal::{self, Entry, JoinError, JoinOptions},
};
use zenoh::Wait as _;
use zenoh::handlers::FifoChannelHandler;
use zenoh::query::{Query, Queryable};

use crate::frame::{BATCH_BYTES, BatchWriter, Frame, Upstream};

/// The key a bridge-out answers journal queries on.
pub(crate) fn journal_key(key: &str) -> String {
    format!("{key}/@journal")
}

/// This process's name as a journal-query peer: its pid and a counter
/// value from its start, unique enough among the peers of one key.
fn own_peer() -> &'static str {
    static PEER: OnceLock<String> = OnceLock::new();
    PEER.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        format!("{}-{:x}", std::process::id(), nanos)
    })
}

/// The selector a bridge-in asks with.
pub(crate) fn selector(key: &str, from: u64, to: Option<u64>) -> String {
    let peer = own_peer();
    match to {
        Some(to) => format!("{}?from={from};to={to};peer={peer}", journal_key(key)),
        None => format!("{}?from={from};peer={peer}", journal_key(key)),
    }
}

/// How long an answer may take, all its turns and waits together.
const READ_LIMIT: Duration = Duration::from_secs(60);
/// Threads answering queries.
pub(crate) const WORKERS: usize = 4;
/// Records one turn of a query answers before the next query's turn.
pub(crate) const SLICE: u64 = 4096;
/// Queries one peer may have in flight (queued or being answered).
pub(crate) const PER_PEER: usize = 4;
/// Queries all peers together may have in flight.
pub(crate) const PENDING: usize = 64;

/// A query being answered.
struct Job {
    query: Query,
    peer: String,
    from: u64,
    to: Option<u64>,
    started: Instant,
    /// Joined at its first turn, positioned at `from`; kept between turns.
    journal: Option<journal::Subscriber<[u8]>>,
    /// Where the answer ends (fixed at the first turn).
    target: u64,
}

/// The queue of jobs and the count in flight per peer.
#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    in_flight: HashMap<String, usize>,
    total: usize,
}

struct Shared {
    queue: Mutex<Queue>,
    ready: Condvar,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        // A worker that panicked left the queue consistent (every change
        // is one statement): carry on with it.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A job is over: its peer has one query fewer in flight.
    fn finished(&self, peer: &str) {
        let mut q = self.lock();
        q.total -= 1;
        if let Some(n) = q.in_flight.get_mut(peer) {
            *n -= 1;
            if *n == 0 {
                q.in_flight.remove(peer);
            }
        }
    }
}

/// Answers the journal queries of `queryable` from the journal of bus
/// `name` until `stopped()` (asked at least every 100 ms).
pub(crate) fn serve(
    queryable: &Queryable<FifoChannelHandler<Query>>,
    name: &str,
    upstream: Upstream,
    stopped: &(dyn Fn() -> bool + Sync),
) {
    let shared = Shared {
        queue: Mutex::new(Queue::default()),
        ready: Condvar::new(),
    };
    std::thread::scope(|s| {
        for _ in 0..WORKERS {
            s.spawn(|| work(&shared, name, upstream, stopped));
        }
        while !stopped() {
            match queryable.recv_timeout(Duration::from_millis(100)) {
                Ok(Some(query)) => admit(&shared, query),
                Ok(None) => {}
                Err(_) => break,
            }
        }
        // The workers see `stopped()` too; a queryable that ended (the
        // session closed) stops them the same way.
        let left = std::mem::take(&mut shared.lock().jobs);
        shared.ready.notify_all();
        // Dropped outside the lock: each ends its query towards its asker.
        drop(left);
    });
}

/// Queues `query`, or refuses it with an error reply if it is malformed or
/// its peer or everyone is at the bound.
fn admit(shared: &Shared, query: Query) {
    let (from, to) = match range(&query) {
        Ok(r) => r,
        Err(why) => {
            let _ = query.reply_err(why).wait();
            return;
        }
    };
    let peer = query.parameters().get("peer").unwrap_or("").to_owned();
    let mut q = shared.lock();
    let mine = q.in_flight.get(&peer).copied().unwrap_or(0);
    let refused = if mine >= PER_PEER {
        Some(format!(
            "journal query refused: peer {peer:?} has {mine} queries in flight, at most {PER_PEER}"
        ))
    } else if q.total >= PENDING {
        Some(format!(
            "journal query refused: {} queries in flight, at most {PENDING}; ask again later",
            q.total
        ))
    } else {
        None
    };
    if let Some(why) = refused {
        drop(q);
        let _ = query.reply_err(why).wait();
        return;
    }
    *q.in_flight.entry(peer.clone()).or_default() += 1;
    q.total += 1;
    q.jobs.push_back(Job {
        query,
        peer,
        from,
        to,
        started: Instant::now(),
        journal: None,
        target: 0,
    });
    drop(q);
    shared.ready.notify_one();
}

/// One answering thread: a turn of the job at the front of the queue, then
/// the job to the back if it is not done.
fn work(shared: &Shared, name: &str, upstream: Upstream, stopped: &(dyn Fn() -> bool + Sync)) {
    while !stopped() {
        let mut q = shared.lock();
        let job = match q.jobs.pop_front() {
            Some(job) => job,
            None => {
                let _ = shared.ready.wait_timeout(q, Duration::from_millis(100));
                continue;
            }
        };
        drop(q);
        let mut job = job;
        if turn(&mut job, name, upstream, stopped) {
            shared.finished(&job.peer);
        } else {
            shared.lock().jobs.push_back(job);
            shared.ready.notify_one();
        }
    }
}

/// The range `[from, to)` a query asks for.
fn range(query: &Query) -> Result<(u64, Option<u64>), String> {
    let number = |name: &str| -> Result<Option<u64>, String> {
        match query.parameters().get(name) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| format!("journal query: {name}={v:?} is not a sequence number")),
        }
    };
    let from = number("from")?.ok_or("journal query without from=N")?;
    Ok((from, number("to")?))
}

/// Joins the journal. A publisher that exits while the join waits for its
/// flush (`shmbus pub` at the end of its input) leaves a journal as whole
/// as a flush would (its pages are in the page cache): joined again, with
/// no live publisher, it is read without one.
fn join(name: &str) -> Result<journal::Subscriber<[u8]>, JoinError> {
    let mut tries = 0;
    loop {
        match journal::Subscriber::<[u8]>::join(name, &JoinOptions::default()) {
            Err(JoinError::PublisherGone { .. }) if tries < 3 => tries += 1,
            other => return other,
        }
    }
}

/// Signed distance: sequences wrap like the bus's.
fn at_or_after(seq: u64, mark: u64) -> bool {
    (seq.wrapping_sub(mark) as i64) >= 0
}

/// One turn of `job`: at most [`SLICE`] records. True when the job is over
/// (answered, failed, or its asker gone).
fn turn(
    job: &mut Job,
    name: &str,
    upstream: Upstream,
    stopped: &(dyn Fn() -> bool + Sync),
) -> bool {
    let query = &job.query;
    let fail = |why: String| {
        let _ = query.reply_err(why).wait();
        true
    };
    if stopped() {
        return fail(format!("{name}: the bridge is stopping"));
    }
    if job.started.elapsed() > READ_LIMIT {
        return fail(format!("{name}: journal not read within {READ_LIMIT:?}"));
    }
    let key = query.key_expr().clone();
    let reply = |bytes: Vec<u8>| query.reply(key.clone(), bytes).wait().is_ok();
    let end = |target: u64| {
        let _ = reply(
            Frame::End {
                upstream,
                next: target,
            }
            .encode(),
        );
        true
    };
    let journal = match &mut job.journal {
        Some(j) => j,
        None => {
            let mut j = match join(name) {
                Ok(j) => j,
                Err(e) => return fail(format!("{name}: {e}")),
            };
            // Every sequence below the head now is in the journal (a
            // message is in the file before it is on the ring): the answer
            // ends there, or at `to` if that is sooner.
            let head = j.head();
            job.target = job.to.filter(|&to| !at_or_after(to, head)).unwrap_or(head);
            if at_or_after(job.from, job.target) {
                return end(job.target);
            }
            if let Err(e) = j.seek(job.from) {
                return fail(format!("{name}: {e}"));
            }
            job.journal.insert(j)
        }
    };
    let (from, target) = (job.from, job.target);
    // Consecutive entries go as one batch frame; (frame, next sequence).
    let mut batch: Option<(BatchWriter, u64)> = None;
    let send = |batch: &mut Option<(BatchWriter, u64)>| match batch.take() {
        Some((w, _)) => reply(w.finish()),
        None => true,
    };
    let (mut done, mut idle) = (false, false);
    for _ in 0..SLICE {
        let at = journal.position();
        let sent = match journal.recv(Wait::For(Duration::from_millis(10))) {
            Some(Received::Message(Entry { seq, msg })) => {
                if at_or_after(seq, target) {
                    done = true;
                    break;
                }
                if !at_or_after(seq, from) {
                    true
                } else if let Some((w, next)) =
                    batch.as_mut().filter(|(w, n)| *n == seq && w.has_room())
                {
                    w.push(msg);
                    *next = seq.wrapping_add(1);
                    true
                } else {
                    let ok = send(&mut batch);
                    batch = Some((
                        BatchWriter::new(upstream, seq, msg.len(), BATCH_BYTES, msg),
                        seq.wrapping_add(1),
                    ));
                    ok
                }
            }
            Some(Received::Lagged { skipped }) => {
                // Lost to the journal too (two compactions over it).
                let first = if at_or_after(at, from) { at } else { from };
                let last = at.wrapping_add(skipped);
                let last = if at_or_after(last, target) {
                    target
                } else {
                    last
                };
                let count = last.wrapping_sub(first);
                send(&mut batch)
                    && ((count as i64) <= 0
                        || reply(
                            Frame::Gap {
                                upstream,
                                first,
                                count,
                            }
                            .encode(),
                        ))
            }
            None => {
                idle = true;
                true
            }
        };
        if !sent {
            return true; // the asker is gone
        }
        if at_or_after(journal.position(), target) && journal.is_live() {
            done = true;
            break;
        }
        if idle {
            // Nothing to read for now: the turn ends here rather than
            // waiting out a slice 10 ms at a time (READ_LIMIT ends a job
            // that never gets further).
            break;
        }
    }
    if !send(&mut batch) {
        return true;
    }
    if done {
        return end(target);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selector_names_the_journal_key_and_the_range() {
        let peer = own_peer();
        assert_eq!(
            selector("a/b", 5, None),
            format!("a/b/@journal?from=5;peer={peer}")
        );
        assert_eq!(
            selector("a/*", 5, Some(9)),
            format!("a/*/@journal?from=5;to=9;peer={peer}")
        );
    }
}
