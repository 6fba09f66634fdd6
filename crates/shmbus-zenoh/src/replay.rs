//! Journal queries: how a bridge-in asks the bridge-out for what its
//! journal holds, and how the bridge-out answers (docs/LAYOUT.md §24).
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
//! - The answer is read on the bridge-out's own thread, never a Zenoh
//!   one: replies travel with the query's congestion control (Block), so
//!   a long replay must not stall Zenoh's runtime.
//! - The bridge-in asks with `ConsolidationMode::None` (all the replies
//!   share one key; the default would keep the last only) and an explicit
//!   timeout.

use std::time::{Duration, Instant};

use shmbus::{Entry, JoinError, JoinOptions, JournalSubscriber, Received, Wait};
use zenoh::handlers::FifoChannelHandler;
use zenoh::query::{Query, Queryable};
use zenoh::Wait as _;

use crate::frame::{Frame, Upstream};

/// The key a bridge-out answers journal queries on.
pub(crate) fn journal_key(key: &str) -> String {
    format!("{key}/@journal")
}

/// The selector a bridge-in asks with.
pub(crate) fn selector(key: &str, from: u64, to: Option<u64>) -> String {
    match to {
        Some(to) => format!("{}?from={from};to={to}", journal_key(key)),
        None => format!("{}?from={from}", journal_key(key)),
    }
}

/// How long an answer may take to read the journal before it gives up.
const READ_LIMIT: Duration = Duration::from_secs(60);

/// Answers the journal queries of `queryable` from the journal of bus
/// `name` until `stopped()` (asked at least every 100 ms).
pub(crate) fn serve(
    queryable: &Queryable<FifoChannelHandler<Query>>,
    name: &str,
    upstream: Upstream,
    stopped: &(dyn Fn() -> bool + Sync),
) {
    while !stopped() {
        match queryable.recv_timeout(Duration::from_millis(100)) {
            Ok(Some(query)) => answer(&query, name, upstream, stopped),
            Ok(None) => {}
            Err(_) => return,
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
fn join(name: &str) -> Result<JournalSubscriber<[u8]>, JoinError> {
    let mut tries = 0;
    loop {
        match JournalSubscriber::<[u8]>::join(name, &JoinOptions::default()) {
            Err(JoinError::PublisherGone { .. }) if tries < 3 => tries += 1,
            other => return other,
        }
    }
}

fn answer(query: &Query, name: &str, upstream: Upstream, stopped: &(dyn Fn() -> bool + Sync)) {
    let fail = |why: String| {
        let _ = query.reply_err(why).wait();
    };
    let (from, to) = match range(query) {
        Ok(r) => r,
        Err(why) => return fail(why),
    };
    let mut journal = match join(name) {
        Ok(j) => j,
        Err(e) => return fail(format!("{name}: {e}")),
    };
    let key = query.key_expr().clone();
    let reply = |frame: Frame<'_>| query.reply(key.clone(), frame.encode()).wait().is_ok();
    // Signed distance: sequences wrap like the bus's.
    let at_or_after = |seq: u64, mark: u64| (seq.wrapping_sub(mark) as i64) >= 0;
    // Every sequence below the head at the join is in the journal (a
    // message is in the file before it is on the ring): the answer ends
    // there, or at `to` if that is sooner. The joiner reads the file, or
    // the ring while it still holds them; either way in order.
    let head = journal.head();
    let target = to.filter(|&to| !at_or_after(to, head)).unwrap_or(head);
    let deadline = Instant::now() + READ_LIMIT;
    loop {
        if stopped() || Instant::now() > deadline {
            return fail(format!("{name}: journal not read within {READ_LIMIT:?}"));
        }
        let at = journal.position();
        let sent = match journal.recv(Wait::For(Duration::from_millis(10))) {
            Some(Received::Message(Entry { seq, msg })) => {
                if at_or_after(seq, target) {
                    break;
                }
                !at_or_after(seq, from)
                    || reply(Frame::Message {
                        upstream,
                        seq,
                        msg_size: msg.len() as u64,
                        bytes: msg,
                    })
            }
            Some(Received::Lagged { skipped }) => {
                // Lost to the journal too (two compactions over it).
                let first = if at_or_after(at, from) { at } else { from };
                let end = at.wrapping_add(skipped);
                let end = if at_or_after(end, target) {
                    target
                } else {
                    end
                };
                let count = end.wrapping_sub(first);
                (count as i64) <= 0
                    || reply(Frame::Gap {
                        upstream,
                        first,
                        count,
                    })
            }
            None => true,
        };
        if sent && at_or_after(journal.position(), target) && journal.is_live() {
            break;
        }
        if !sent {
            return; // the asker is gone
        }
    }
    let _ = reply(Frame::End {
        upstream,
        next: target,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_selector_names_the_journal_key_and_the_range() {
        assert_eq!(selector("a/b", 5, None), "a/b/@journal?from=5");
        assert_eq!(selector("a/*", 5, Some(9)), "a/*/@journal?from=5;to=9");
    }
}
