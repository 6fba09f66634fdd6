//! The grower thread: maps the journal's next chunk ahead of the writer,
//! so that an append never waits for `fallocate`, the page cache or a page
//! fault.
//!
//! # Protocol
//! The writer asks through the mapping ([`GrowableRegion::want_growth`]),
//! and the publisher then rings `Shared::grow_bell`: a `fetch_add` (Release)
//! and a futex wake. The grower reads the bell (Acquire, paired with that
//! `fetch_add`) *before* it looks for a request, and sleeps only while the
//! bell still reads the same: a request made after its look changed the
//! word, so the futex does not sleep through it. (The flusher's futex word,
//! `FLUSH_REQUEST`, is the joiners' counter; a wake on it that does not
//! change it was lost whenever the flusher was busy growing, and the writer
//! then grew every chunk itself.)
//!
//! [`GrowableRegion::want_growth`]: crate::mem::growable::GrowableRegion::want_growth

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::shared::{Shared, lock};
use crate::wait;

/// Grows the current file when asked, until told to stop.
pub(super) fn grower(shared: &Shared) {
    loop {
        // Acquire, paired with the Release `fetch_add` in `Shared::ring_grower`.
        let bell = shared.grow_bell.load(Ordering::Acquire);
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        // The current file changes at a compaction's switch, which rings.
        let map = Arc::clone(&lock(&shared.current).map);
        map.grow_if_wanted();
        wait::futex_wait(&shared.grow_bell, bell, None);
    }
}

// Real files and mappings, which Miri does not model.
#[cfg(all(test, not(miri)))]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;
    use crate::mem::Region;
    use crate::mem::growable::GrowableRegion;

    /// Waits (bounded) for `cond`, which another thread makes true.
    fn until(what: &str, cond: impl Fn() -> bool) {
        let start = Instant::now();
        while !cond() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{what}: timed out"
            );
            std::thread::yield_now();
        }
    }

    #[test]
    fn a_request_made_while_the_grower_is_growing_is_served_without_another_wake() {
        let (file, path) = crate::mem::growable::tests::temp("grower");
        let page = rustix::param::page_size();
        let map = Arc::new(GrowableRegion::map(file, &path, page, 64 * page, page).unwrap());
        let shared = Arc::new(Shared::new(
            map.file().try_clone().unwrap(),
            Arc::clone(&map),
            0,
        ));
        let s = Arc::clone(&shared);
        let thread = std::thread::spawn(move || grower(&s));
        // The grower takes a first request and blocks inside `ensure`...
        let held = map.hold_growth();
        assert!(map.want_growth());
        shared.ring_grower();
        until("the grower takes the first request", || {
            !map.growth_wanted()
        });
        // ...while the writer asks again; its wake finds nobody asleep.
        assert!(map.want_growth(), "the first request was taken");
        shared.ring_grower();
        drop(held);
        until("both chunks grown by the grower", || map.len() == 3 * page);
        shared.stop.store(true, Ordering::Release);
        shared.ring_grower();
        thread.join().unwrap();
        std::fs::remove_file(&path).unwrap();
    }
}
