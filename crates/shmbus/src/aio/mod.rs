//! Async waiting, for any executor (tokio, async-std, smol, a hand-made
//! one): what each kind's `async fn`s (`recv_async`, `pop_async`,
//! `publish_async`, `wait_changed_async`, ...) are built on, with no CPU
//! used while idle and no dependency on a runtime (std's `Waker` only).
//!
//! ```
//! # let rt = tokio::runtime::Builder::new_current_thread().build()?;
//! # rt.block_on(async {
//! use shmbus::{Publisher, Received, Start, WaitStrategy};
//!
//! let mut publisher = Publisher::<u64, _>::on_heap(8)?;
//! let mut member = publisher.subscribe(Start::Next, WaitStrategy::default());
//! publisher.publish(&5);
//! assert_eq!(member.recv_async().await, Received::Message(5));
//! # Ok::<(), shmbus::CreateError>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The shape: methods on the handles
//! Each receiving handle has an `async fn` beside its blocking one, in its
//! kind's module, taking `&mut self` as that one does; a publisher held
//! back by a lossless receiver awaits room the same way (`publish_async`).
//! With the feature `async-stream`, a typed receiving handle also gives a
//! `futures_core::Stream` over the same wait (raw-bytes handles have none:
//! their message borrows the handle's buffer, which a `Stream`'s items
//! cannot). This module holds what they share, and names no kind: for any
//! member of a [`Select`](crate::select::Select), [`readable`]; the one
//! `Stream` adapter, `Items`, each kind's stream is; beneath them,
//! for a binding to another event loop (Python's asyncio) that cannot hold
//! a future borrowing its handle, [`arm`], an owned registration
//! ([`Armed`]) that wakes a `Waker` once. No wrapper type: the handle a
//! program already holds (its options, its lag, its `position`) stays the
//! one it receives from, and a raw handle's borrowed message is as
//! zero-copy as from its blocking receive. The borrow also carries the
//! safety argument below: while a future waits, its handle cannot be
//! dropped.
//!
//! # The mechanisms: the runtime's ring, or one waiter thread per process
//! [`wake_mechanism`] says which a wait polled here would use, and why.
//!
//! **The ring** (feature `io-uring`, Linux 6.7+, inside a tokio runtime
//! with its I/O driver): a future that finds nothing does the sleeper's
//! half of the doorbell protocol as below, then submits an io_uring
//! `FUTEX_WAIT` on the word (and, for a nap, a linked timeout) to its
//! thread's ring, whose fd the runtime's reactor polls. The publisher's
//! `FUTEX_WAKE` completes the wait in the kernel; epoll reports the ring;
//! the ring's driver task (on the same runtime) wakes the future's waker.
//! One wake-up of the runtime's thread, no thread in between. Each thread
//! has a ring per runtime, made at its first wait there; a forked child
//! makes its own. `SHMBUS_AIO_WAKE=thread` in the environment forces the
//! waiter thread (read once per process).
//!
//! **The waiter thread** (everywhere else: another executor, a binding's
//! own loop, an older kernel): a shared-memory futex cannot be registered
//! with epoll. A future that
//! finds nothing does the sleeper's half of the doorbell protocol (module
//! `wait`): raises the sleepers flag on its handle's word, makes the heavy
//! barrier, looks again; still nothing, it registers (the word's address,
//! the value seen, its nap, its `Waker`) with the process's waiter thread
//! (started on first use, again in a forked child) and returns `Pending`.
//! That thread sleeps in one `futex_waitv` on every registered word and a
//! process-local control word (bumped and woken, as a shared futex, on
//! each new registration). When it returns, it wakes the wakers whose
//! word moved, or whose nap is over, and drops their registrations. A
//! writer rings exactly as for a blocked receiver: nothing changes on its
//! side. Idle, the process has one thread asleep in the kernel.
//!
//! Naps: a registration wakes at its member's nap, if it has one (a peer
//! that may die without ringing: each kind says which of its handles
//! have one), as the select's members do; a future whose heavy barrier
//! failed after 1 ms (`UNSURE_SLEEP`) at most.
//!
//! Registrations on one word (the tasks of one segment, or of one handle)
//! share one of `futex_waitv`'s 128 entries: any number of tasks on up to
//! 127 segments (one entry is the control word) sleep in it. More than 127
//! distinct words, or a kernel without `futex_waitv` (before 5.16): the
//! waiter naps at most [`POLL_NAP`](crate::select::POLL_NAP) (1 ms) on its
//! control word and then asks the kernel about every word (a `FUTEX_WAIT`
//! with a zero timeout each: the waiter never reads a registered word, see
//! below): a wake is then up to 1 ms late, at up to 1 000 rounds of those
//! calls a second while anything waits (the select, which borrows its
//! members, rotates its naps over their words instead).
//!
//! # Invariants
//! - **A registration never outlives its future**: a future's `Drop`
//!   (its [`Armed`]'s) removes its registration by id, under the registry
//!   lock (on a ring it also cancels the `FUTEX_WAIT`);
//!   [`registrations`] counts them, on rings and with the thread: zero once every future is dropped,
//!   also after a runtime shut down while its tasks waited.
//! - **The waiter never reads a registered word**: the future borrows its
//!   handle, but a future can be leaked (`mem::forget`) and its handle's
//!   region unmapped. The waiter hands addresses to the kernel only, and
//!   learns which word rang from `futex_waitv`'s answer; where that names
//!   none, it asks the kernel about each word (`FUTEX_WAIT`, zero
//!   timeout). An unmapped word is `EFAULT` (never a fault in this
//!   process), and its registration is dropped. A ring's wait was handed
//!   to the kernel when it was made: an unmapped word's wait stays queued
//!   there, reading nothing, until the word (its file's) rings or the
//!   ring closes.
//! - **Cancel-safe**: a future consumes nothing until the poll that
//!   returns `Ready`: it only looks (`ready`, the select's view) while it
//!   waits, and receives with `Wait::Never` in the poll that returns. A
//!   dropped future loses no message and no lag report.
//! - **No message twice**: each message is read by the handle's own
//!   receive, which moves its cursor.
//! - **Fair**: every task has its own handle and its own registration;
//!   one wake-up wakes every task whose word moved.
//! - **Fork-safe**: each process has its own registry (keyed by pid) and
//!   waiter thread. A forked child makes a fresh registry at its first
//!   use and never touches the copy of its parent's: that copy may hold
//!   the registry lock (another thread held it at the fork) and holds the
//!   parent's registrations, whose wakers are the parent's tasks.

mod mechanism;
mod per_process;
#[cfg(feature = "io-uring")]
mod uring;
mod waiter;

pub use mechanism::{WakeMechanism, WhyThread};

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::member::Selectable;
use crate::sync::AtomicU32;
use crate::wait;

/// The wake a future polled on this thread, now, would use: the io_uring
/// one inside a tokio runtime where the feature, the kernel and the
/// environment allow it, else the waiter thread, with the reason. A
/// runtime without an I/O driver is found out at its first wait (which
/// then uses the waiter thread, as every later one there); until then
/// this says `IoUring` for it.
///
/// # Examples
/// ```
/// # let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
/// rt.block_on(async {
///     // `IoUring` with the feature on Linux 6.7+, else the reason.
///     println!("{}", shmbus::aio::wake_mechanism());
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn wake_mechanism() -> WakeMechanism {
    #[cfg(feature = "io-uring")]
    {
        match uring::applies() {
            Ok(()) => WakeMechanism::IoUring,
            Err(why) => WakeMechanism::WaiterThread(why),
        }
    }
    #[cfg(not(feature = "io-uring"))]
    {
        WakeMechanism::WaiterThread(WhyThread::NotBuilt)
    }
}

/// How many futures wait now with the waiter thread: zero once every
/// future is done or dropped (a check for leaks).
///
/// # Examples
/// ```
/// assert_eq!(shmbus::aio::registrations(), 0);
/// ```
pub fn registrations() -> usize {
    #[cfg(feature = "io-uring")]
    let rings = uring::registered();
    #[cfg(not(feature = "io-uring"))]
    let rings = 0;
    waiter::registered() + rings
}

/// Registers `waker` to be woken when `word` no longer holds `seen`, or at
/// `until`: through the runtime's ring where [`wake_mechanism`] says so,
/// else with the waiter thread. `None`: nothing registered (no waiter
/// thread could be started).
fn register_wait(
    word: &AtomicU32,
    seen: u32,
    until: Option<Instant>,
    waker: &Waker,
) -> Option<u64> {
    #[cfg(feature = "io-uring")]
    if let Ok(id) = uring::register(word, seen, until, waker) {
        return Some(id);
    }
    waiter::register(word, seen, until, waker)
}

/// Whether the backend that made registration `id` is the ring's.
#[cfg(feature = "io-uring")]
fn on_ring(id: u64) -> bool {
    id & uring::ID_BIT != 0
}

/// True if registration `id` still waits (its waker replaced by `waker`).
fn refresh(id: u64, waker: &Waker) -> bool {
    #[cfg(feature = "io-uring")]
    if on_ring(id) {
        return uring::refresh(id, waker);
    }
    waiter::refresh(id, waker)
}

/// Whether registration `id` still waits.
fn is_registered(id: u64) -> bool {
    #[cfg(feature = "io-uring")]
    if on_ring(id) {
        return uring::is_registered(id);
    }
    waiter::is_registered(id)
}

/// Removes registration `id` if it still waits.
fn remove(id: u64) {
    #[cfg(feature = "io-uring")]
    if on_ring(id) {
        return uring::remove(id);
    }
    waiter::remove(id)
}

/// A future that completes when `member` has something to receive (what
/// [`Select::ready`](crate::select::Select::ready) would name it for);
/// receive from it then with `Wait::Never`. Consumes nothing: dropping it
/// loses nothing.
///
/// # Examples
/// ```
/// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
/// # rt.block_on(async {
/// use shmbus::{Publisher, Received, Start, Wait, WaitStrategy};
///
/// let mut publisher = Publisher::<u64, _>::on_heap(8)?;
/// let mut member = publisher.subscribe(Start::Next, WaitStrategy::default());
/// publisher.publish(&1);
/// shmbus::aio::readable(&member).await;
/// assert_eq!(member.recv(Wait::Never), Some(Received::Message(1)));
/// # Ok::<(), shmbus::CreateError>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn readable<M: Selectable + ?Sized>(member: &M) -> Readable<'_, M> {
    Readable {
        member,
        reg: None,
        missed: false,
    }
}

/// The future of [`readable`].
///
/// # Examples
/// ```
/// use shmbus::{Publisher, Start, WaitStrategy};
/// let publisher = Publisher::<u64, _>::on_heap(8)?;
/// let member = publisher.subscribe(Start::Next, WaitStrategy::default());
/// let fut: shmbus::aio::Readable<'_, _> = shmbus::aio::readable(&member);
/// drop(fut);
/// # Ok::<(), shmbus::CreateError>(())
/// ```
#[derive(Debug)]
#[must_use = "futures do nothing unless polled"]
pub struct Readable<'a, M: ?Sized> {
    member: &'a M,
    /// Our registration with the waiter, while we wait.
    reg: Option<Armed>,
    /// The member said ready but its receive found nothing (a claim not
    /// committed yet): wait a nap instead of looking again at once.
    missed: bool,
}

impl<M: ?Sized> Readable<'_, M> {
    fn after_miss(mut self) -> Self {
        self.missed = true;
        self
    }
}

/// One wait of a receive loop that found nothing: until `member` looks
/// readable, or, after a look that found it ready but its receive empty
/// (`missed`: a claim not committed yet), a nap first. Every later turn
/// counts as after a miss.
pub(crate) async fn turn<M: Selectable + ?Sized>(member: &M, missed: &mut bool) {
    let wait = readable(member);
    if *missed {
        wait.after_miss().await;
    } else {
        wait.await;
    }
    *missed = true;
}

impl<M: Selectable + ?Sized> Future for Readable<'_, M> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        poll_readable(this.member, &mut this.reg, &mut this.missed, cx)
    }
}

/// One poll of a wait for `member`: `reg` is the registration held
/// between polls, `missed` says the last Ready found nothing to receive.
fn poll_readable<M: Selectable + ?Sized>(
    member: &M,
    reg: &mut Option<Armed>,
    missed: &mut bool,
    cx: &mut Context<'_>,
) -> Poll<()> {
    if let Some(armed) = reg {
        if refresh(armed.id, cx.waker()) {
            // Polled again before the waiter woke us (a select! over
            // several futures): still registered, still waiting.
            return Poll::Pending;
        }
        // Woken: the word moved or the nap is over.
        *reg = None;
        *missed = false;
        return if member.ready() {
            Poll::Ready(())
        } else {
            register(member, reg, false, cx)
        };
    }
    if !*missed && member.ready() {
        return Poll::Ready(());
    }
    register(member, reg, *missed, cx)
}

/// A poll's [`arm_with`]: Pending with the registration in `reg`, or
/// Ready. Without a waiter thread (the system refused one) it asks to be
/// polled again rather than never wake: that costs CPU while it lasts,
/// and the next registration tries to start the thread again.
fn register<M: Selectable + ?Sized>(
    member: &M,
    reg: &mut Option<Armed>,
    missed: bool,
    cx: &mut Context<'_>,
) -> Poll<()> {
    match arm_with(member, missed, cx.waker()) {
        Arming::Readable => Poll::Ready(()),
        Arming::Armed(armed) => {
            *reg = Some(armed);
            Poll::Pending
        }
        Arming::NoWaiter => {
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// What [`arm_with`] did.
enum Arming {
    /// The member is readable: nothing registered.
    Readable,
    Armed(Armed),
    /// Not readable, and no waiter thread could be started.
    NoWaiter,
}

/// The sleeper's half of the doorbell protocol, then a registration:
/// `missed` (the last look found the member ready but its receive empty)
/// skips the look and naps at most `UNSURE_SLEEP`.
fn arm_with<M: Selectable + ?Sized>(member: &M, missed: bool, waker: &Waker) -> Arming {
    let bell = member.bell();
    let seen = wait::raise_flag(bell);
    let mut nap = member.nap();
    if missed {
        nap = Some(nap.map_or(wait::UNSURE_SLEEP, |n| n.min(wait::UNSURE_SLEEP)));
    }
    // Paired with each waker's fence in `wait::ring`: a publisher that
    // missed our flag stored its message before, and the look below
    // sees it.
    if !wait::heavy_barrier() {
        nap = Some(nap.map_or(wait::UNSURE_SLEEP, |n| n.min(wait::UNSURE_SLEEP)));
    }
    if !missed && member.ready() {
        return Arming::Readable;
    }
    let until = nap.map(|d: Duration| Instant::now() + d);
    match register_wait(bell, seen, until, waker) {
        Some(id) => Arming::Armed(Armed { id }),
        None => Arming::NoWaiter,
    }
}

/// Arms a wake-up: `waker` is woken (once, from the process's waiter
/// thread) when `member` may have something to receive, exactly as a
/// [`readable`] future waiting on it would be. For code that cannot hold
/// a future borrowing its handle across its own awaits (a binding to
/// another language's event loop): the registration is owned, and ends
/// when the [`Armed`] is dropped.
///
/// `None`: do not wait, look again now. Either the member is readable
/// already (nothing registered), or no waiter thread could be started
/// (then every look costs CPU: look again after a yield).
///
/// A turn of a loop over it: receive with `Wait::Never`; nothing, `arm`;
/// `None`, receive again; nothing again (the member looked ready but its
/// receive found nothing: a claim not committed yet), arm with
/// [`arm_after_miss`], whose nap keeps the loop from spinning. Each wake
/// starts a turn afresh (with `arm`, which looks: a wake that finds the
/// member not ready, a nap's, arms without a nap), as a [`readable`]
/// future does.
///
/// Sound without a borrow: the waiter never reads a registered word (see
/// the module docs), so a handle may be dropped (its region unmapped)
/// while armed: the registration then ends with `EFAULT` or the `Drop`.
///
/// # Examples
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::task::{Wake, Waker};
/// use shmbus::{Publisher, Received, Start, Wait, WaitStrategy};
///
/// struct Flag(AtomicBool);
/// impl Wake for Flag {
///     fn wake(self: Arc<Self>) {
///         self.0.store(true, Ordering::SeqCst);
///     }
/// }
///
/// let mut publisher = Publisher::<u64, _>::on_heap(8)?;
/// let mut member = publisher.subscribe(Start::Next, WaitStrategy::default());
/// let flag = Arc::new(Flag(AtomicBool::new(false)));
/// let waker = Waker::from(flag.clone());
/// assert_eq!(member.recv(Wait::Never), None);
/// let armed = shmbus::aio::arm(&member, &waker).expect("nothing to read yet");
/// assert_eq!(shmbus::aio::registrations(), 1);
/// publisher.publish(&9);
/// // The waiter thread wakes the waker (here: sets the flag).
/// while !flag.0.load(Ordering::SeqCst) {
///     std::thread::yield_now();
/// }
/// drop(armed);
/// assert_eq!(shmbus::aio::registrations(), 0);
/// assert_eq!(member.recv(Wait::Never), Some(Received::Message(9)));
/// // Readable already: nothing to arm.
/// publisher.publish(&10);
/// assert!(shmbus::aio::arm(&member, &waker).is_none());
/// # Ok::<(), shmbus::CreateError>(())
/// ```
pub fn arm<M: Selectable + ?Sized>(member: &M, waker: &Waker) -> Option<Armed> {
    match arm_with(member, false, waker) {
        Arming::Armed(armed) => Some(armed),
        Arming::Readable | Arming::NoWaiter => None,
    }
}

/// [`arm`] after a look that found `member` ready but its receive empty
/// (a claim not committed yet, a handle moving from a file to its ring): registers without looking, to be woken
/// when the word moves or after at most 1 ms (`UNSURE_SLEEP`), so that a
/// loop over it does not spin. `None` only if no waiter thread could be
/// started.
///
/// # Examples
/// ```
/// use std::task::Waker;
/// use shmbus::{Publisher, Start, WaitStrategy};
///
/// let mut publisher = Publisher::<u64, _>::on_heap(8)?;
/// let member = publisher.subscribe(Start::Next, WaitStrategy::default());
/// publisher.publish(&1);
/// // Armed even though a message is there: it wakes within 1 ms.
/// let armed = shmbus::aio::arm_after_miss(&member, Waker::noop());
/// assert!(armed.is_some());
/// # Ok::<(), shmbus::CreateError>(())
/// ```
pub fn arm_after_miss<M: Selectable + ?Sized>(member: &M, waker: &Waker) -> Option<Armed> {
    match arm_with(member, true, waker) {
        Arming::Armed(armed) => Some(armed),
        Arming::Readable | Arming::NoWaiter => None,
    }
}

/// A registration with the process's waiter thread, made by [`arm`] or
/// [`arm_after_miss`]: dropping it removes the registration (if the
/// waiter has not already woken its waker and removed it), so
/// [`registrations`] counts it no more.
///
/// # Examples
/// ```
/// use std::task::Waker;
/// use shmbus::{Publisher, Start, WaitStrategy};
///
/// let publisher = Publisher::<u64, _>::on_heap(8)?;
/// let member = publisher.subscribe(Start::Next, WaitStrategy::default());
/// let armed: shmbus::aio::Armed = shmbus::aio::arm(&member, Waker::noop()).expect("empty");
/// assert!(armed.is_waiting());
/// drop(armed);
/// assert_eq!(shmbus::aio::registrations(), 0);
/// # Ok::<(), shmbus::CreateError>(())
/// ```
#[derive(Debug)]
#[must_use = "dropping it removes the registration"]
pub struct Armed {
    id: u64,
}

impl Armed {
    /// Whether the registration still waits: false once the waiter woke
    /// its waker (the word moved, its nap ended, or its word is gone).
    ///
    /// # Examples
    /// ```
    /// use std::task::Waker;
    /// use shmbus::{Publisher, Start, WaitStrategy};
    ///
    /// let publisher = Publisher::<u64, _>::on_heap(8)?;
    /// let member = publisher.subscribe(Start::Next, WaitStrategy::default());
    /// let armed = shmbus::aio::arm(&member, Waker::noop()).expect("empty");
    /// assert!(armed.is_waiting());
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn is_waiting(&self) -> bool {
        is_registered(self.id)
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        remove(self.id);
    }
}

/// A receiving handle's items as a `futures_core::Stream` (feature
/// `async-stream`): each item is what the handle's own async receive would
/// return, received without waiting once [`readable`]'s wait says there
/// is one. The one adapter every kind's stream is (`messages()`,
/// `samples()`, `records()`, `entries()`, each named in its kind's
/// module). It borrows its handle and keeps its registration between
/// items (removed when it is dropped). Cancel-safe as the async receive:
/// dropping it between items loses nothing. It ends after an item its
/// handle says is its last (a peer gone), else never.
///
/// # Examples
/// ```
/// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
/// # rt.block_on(async {
/// use std::pin::Pin;
/// use futures_core::Stream;
/// use shmbus::{Publisher, Received, Start, WaitStrategy};
///
/// let mut publisher = Publisher::<u64, _>::on_heap(8)?;
/// let mut member = publisher.subscribe(Start::Next, WaitStrategy::default());
/// let mut items: shmbus::aio::Items<'_, _> = member.messages();
/// publisher.publish(&4);
/// let next = std::future::poll_fn(|cx| Pin::new(&mut items).poll_next(cx)).await;
/// assert_eq!(next, Some(Received::Message(4)));
/// # Ok::<(), shmbus::CreateError>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "async-stream")]
#[derive(Debug)]
#[must_use = "streams do nothing unless polled"]
pub struct Items<'a, H: ?Sized> {
    handle: &'a mut H,
    /// Our registration with the waiter between items (dropping it
    /// removes the registration).
    reg: Option<Armed>,
    /// The last Ready found nothing to receive.
    missed: bool,
    /// The handle's last item came: the stream ended.
    ended: bool,
}

#[cfg(feature = "async-stream")]
impl<'a, H: ?Sized> Items<'a, H> {
    /// The stream of `handle`'s items.
    pub(crate) fn new(handle: &'a mut H) -> Self {
        Items {
            handle,
            reg: None,
            missed: false,
            ended: false,
        }
    }
}

#[cfg(feature = "async-stream")]
pub(crate) use sealed::Next;

#[cfg(feature = "async-stream")]
mod sealed {
    /// What a receiving handle gives [`Items`](super::Items).
    pub trait Next: crate::member::Member {
        /// What the stream yields.
        type Item;
        /// The next item without waiting (`None`: nothing now).
        fn next(&mut self) -> Option<Self::Item>;
        /// Whether `item` is the handle's last.
        fn is_last(_item: &Self::Item) -> bool {
            false
        }
    }
}

#[cfg(feature = "async-stream")]
impl<H: Next> futures_core::Stream for Items<'_, H> {
    type Item = H::Item;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<H::Item>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        loop {
            if let Some(item) = this.handle.next() {
                this.reg = None;
                this.missed = false;
                this.ended = H::is_last(&item);
                return Poll::Ready(Some(item));
            }
            match poll_readable(&*this.handle, &mut this.reg, &mut this.missed, cx) {
                Poll::Pending => return Poll::Pending,
                // Ready: receive; should that find nothing (a claim not
                // committed yet), the next wait naps instead of looking.
                Poll::Ready(()) => this.missed = true,
            }
        }
    }
}

/// Sleeps (with the waiter) until `bell` moves from `seen` or `until`.
pub(crate) struct Doze<'a> {
    bell: &'a AtomicU32,
    seen: u32,
    until: Instant,
    reg: Option<u64>,
    polled: bool,
}

impl<'a> Doze<'a> {
    /// A doze on `bell`, seen at `seen` after its flag was raised, until
    /// `until` at the latest.
    pub(crate) fn new(bell: &'a AtomicU32, seen: u32, until: Instant) -> Self {
        Doze {
            bell,
            seen,
            until,
            reg: None,
            polled: false,
        }
    }
}

impl Future for Doze<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if let Some(id) = this.reg {
            if refresh(id, cx.waker()) {
                return Poll::Pending;
            }
            this.reg = None;
            return Poll::Ready(());
        }
        if this.polled {
            // Polled again without a registration (no waiter thread, see
            // below): try the publish again.
            return Poll::Ready(());
        }
        this.polled = true;
        match register_wait(this.bell, this.seen, Some(this.until), cx.waker()) {
            Some(id) => this.reg = Some(id),
            // No waiter thread (the system refused one): poll again rather
            // than never wake.
            None => cx.waker().wake_by_ref(),
        }
        Poll::Pending
    }
}

impl Drop for Doze<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.reg.take() {
            remove(id);
        }
    }
}
