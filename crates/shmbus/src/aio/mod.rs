//! Async receiving, for any executor (tokio, async-std, smol, a hand-made
//! one): `recv_async`/`pop_async` on the receiving handles, with no CPU
//! used while idle and no dependency on a runtime (std's `Waker` only).
//!
//! ```
//! # let rt = tokio::runtime::Builder::new_current_thread().build()?;
//! # rt.block_on(async {
//! use shmbus::{Publisher, Received, Start, WaitStrategy};
//!
//! let mut publisher = Publisher::<u64, _>::on_heap(8)?;
//! let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
//! publisher.publish(&5);
//! assert_eq!(subscriber.recv_async().await, Received::Message(5));
//! # Ok::<(), shmbus::CreateError>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The shape: methods on the handles
//! Each receiving handle gains an `async fn` beside its blocking one,
//! taking `&mut self` as that one does: [`Subscriber::recv_async`]
//! (typed and raw bytes), [`PoolSubscriber::recv_async`],
//! [`JournalSubscriber::recv_async`] (typed and raw bytes),
//! [`Consumer::pop_async`] (typed and raw bytes), a blackboard
//! [`Reader`](crate::blackboard::Reader)'s
//! [`wait_changed_async`](crate::blackboard::Reader::wait_changed_async)
//! and [`wait_key_async`](crate::blackboard::Reader::wait_key_async), and,
//! for any member of a [`Select`](crate::select::Select), [`readable`]. With the feature
//! `async-stream`, `futures_core::Stream`s over the same waits: a bus
//! subscriber's `messages()`, a pool subscriber's `samples()` (a sample
//! does not borrow its subscriber, so items may be held across later
//! ones), a typed stream consumer's `records()` (it ends after
//! `PeerGone`) and a typed journal subscriber's `entries()`. Raw-bytes
//! handles have no `Stream`: their message borrows the handle's buffer,
//! which a `Stream`'s items cannot. Beneath them, for a binding to
//! another event loop (Python's asyncio) that cannot hold a future
//! borrowing its handle: [`arm`], an owned registration ([`Armed`]) that
//! wakes a `Waker` once; `readable` is built on it. No wrapper type: the
//! handle a program already holds (its options, its lag, its `position`)
//! stays the one it receives from, and a raw subscriber's borrowed message
//! is as zero-copy as from `recv`. The borrow also carries the safety
//! argument below: while a future waits, its handle cannot be dropped.
//!
//! # Publishing: the lossless publisher's wait
//! A publisher held back by a lossless subscriber (issue 30) awaits room
//! with [`Publisher::publish_async`](crate::Publisher::publish_async)
//! (typed and raw bytes),
//! [`ManyPublisher::publish_async`](crate::bus::ManyPublisher::publish_async)
//! and a pool's [`Loan::publish_async`](crate::pool::Loan::publish_async)
//! instead of blocking its thread. It sleeps as the blocking publish
//! does, on the bus's `room` word (rung by gating subscribers after each
//! position store), registered with the same waiter thread, with a nap
//! of 2 ms (the blocking wait's liveness check: a dead subscriber in the
//! way is cleared, and one in the way for the eviction timeout evicted,
//! by the next try). Cancel-safe: each try publishes or publishes
//! nothing, so a dropped future published nothing (a dropped loan's
//! future gives its block back). Not async yet: waiting for a free block
//! (`PoolPublisher::loan` with a wait) and an `OwnedLoan`'s publish.
//!
//! # The mechanism: one waiter thread per process
//! A shared-memory futex cannot be registered with epoll. A future that
//! finds nothing does the sleeper's half of the doorbell protocol (module
//! `wait`): raises the sleepers flag on its handle's word, makes the heavy
//! barrier, looks again; still nothing, it registers (the word's address,
//! the value seen, its nap, its `Waker`) with the process's waiter thread
//! (started on first use, again in a forked child) and returns `Pending`.
//! That thread sleeps in one `futex_waitv` on every registered word and a
//! process-local control word (bumped and woken, as a shared futex, on
//! each new registration). When it returns, it wakes the wakers whose
//! word moved, or whose nap is over, and drops their registrations. A
//! publisher rings exactly as for a blocked subscriber: nothing changes on
//! its side. Idle, the process has one thread asleep in the kernel.
//!
//! Naps: a stream consumer's registration wakes every
//! [`PEER_CHECK`](crate::stream::PEER_CHECK) (a dead producer rings no
//! bell), a many-publisher bus's at a quarter of its unblock timeout, as
//! the select's members do; a future whose heavy barrier failed after
//! 1 ms (`UNSURE_SLEEP`) at most.
//!
//! Registrations on one word (the tasks of one bus, or of one handle)
//! share one of `futex_waitv`'s 128 entries: any number of tasks on up to
//! 127 buses (one entry is the control word) sleep in it. More than 127
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
//!   lock;
//!   [`registrations`] counts them: zero once every future is dropped,
//!   also after a runtime shut down while its tasks waited.
//! - **The waiter never reads a registered word**: the future borrows its
//!   handle, but a future can be leaked (`mem::forget`) and its handle's
//!   region unmapped. The waiter hands addresses to the kernel only, and
//!   learns which word rang from `futex_waitv`'s answer; where that names
//!   none, it asks the kernel about each word (`FUTEX_WAIT`, zero
//!   timeout). An unmapped word is `EFAULT` (never a fault in this
//!   process), and its registration is dropped.
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

mod board;
mod room;
mod waiter;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::bus::{Payload, Received, Subscriber};
use crate::journal::{Entry, JournalSubscriber};
use crate::mem::Region;
use crate::pool::{PoolRecvError, PoolSubscriber, Sample};
use crate::select::Selectable;
use crate::stream::{Consumer, PopError};
use crate::wait::{self, Wait};
use crate::Message;

/// How many futures wait now with the waiter thread: zero once every
/// future is done or dropped (a check for leaks).
///
/// # Examples
/// ```
/// assert_eq!(shmbus::aio::registrations(), 0);
/// ```
pub fn registrations() -> usize {
    waiter::registered()
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
/// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
/// publisher.publish(&1);
/// shmbus::aio::readable(&subscriber).await;
/// assert_eq!(subscriber.recv(Wait::Never), Some(Received::Message(1)));
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
/// let subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
/// let fut: shmbus::aio::Readable<'_, _> = shmbus::aio::readable(&subscriber);
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
async fn turn<M: Selectable + ?Sized>(member: &M, missed: &mut bool) {
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
        if waiter::refresh(armed.id, cx.waker()) {
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
    match waiter::register(bell, seen, until, waker) {
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
/// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
/// let flag = Arc::new(Flag(AtomicBool::new(false)));
/// let waker = Waker::from(flag.clone());
/// assert_eq!(subscriber.recv(Wait::Never), None);
/// let armed = shmbus::aio::arm(&subscriber, &waker).expect("nothing to read yet");
/// assert_eq!(shmbus::aio::registrations(), 1);
/// publisher.publish(&9);
/// // The waiter thread wakes the waker (here: sets the flag).
/// while !flag.0.load(Ordering::SeqCst) {
///     std::thread::yield_now();
/// }
/// drop(armed);
/// assert_eq!(shmbus::aio::registrations(), 0);
/// assert_eq!(subscriber.recv(Wait::Never), Some(Received::Message(9)));
/// // Readable already: nothing to arm.
/// publisher.publish(&10);
/// assert!(shmbus::aio::arm(&subscriber, &waker).is_none());
/// # Ok::<(), shmbus::CreateError>(())
/// ```
pub fn arm<M: Selectable + ?Sized>(member: &M, waker: &Waker) -> Option<Armed> {
    match arm_with(member, false, waker) {
        Arming::Armed(armed) => Some(armed),
        Arming::Readable | Arming::NoWaiter => None,
    }
}

/// [`arm`] after a look that found `member` ready but its receive empty
/// (a many-publisher claim not committed yet, a journal subscriber moving
/// from its file to the ring): registers without looking, to be woken
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
/// let subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
/// publisher.publish(&1);
/// // Armed even though a message is there: it wakes within 1 ms.
/// let armed = shmbus::aio::arm_after_miss(&subscriber, Waker::noop());
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
/// let subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
/// let armed: shmbus::aio::Armed = shmbus::aio::arm(&subscriber, Waker::noop()).expect("empty");
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
    /// let subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
    /// let armed = shmbus::aio::arm(&subscriber, Waker::noop()).expect("empty");
    /// assert!(armed.is_waiting());
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn is_waiting(&self) -> bool {
        waiter::is_registered(self.id)
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        waiter::remove(self.id);
    }
}

/// A bus subscriber's messages as a `futures_core::Stream` (feature
/// `async-stream`): each item is what `recv_async` would return; it never
/// ends. Cancel-safe as `recv_async`: dropping it between items loses
/// nothing.
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
/// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
/// let mut messages = subscriber.messages();
/// publisher.publish(&4);
/// let next = std::future::poll_fn(|cx| Pin::new(&mut messages).poll_next(cx)).await;
/// assert_eq!(next, Some(Received::Message(4)));
/// # Ok::<(), shmbus::CreateError>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "async-stream")]
#[derive(Debug)]
#[must_use = "streams do nothing unless polled"]
pub struct Messages<'a, T: Message, R: Region> {
    sub: &'a mut Subscriber<T, R>,
    between: Between,
}

#[cfg(feature = "async-stream")]
impl<T: Message, R: Region> Subscriber<T, R> {
    /// This subscriber's messages as a `futures_core::Stream` (feature
    /// `async-stream`): see [`Messages`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Publisher, Start, WaitStrategy};
    /// let publisher = Publisher::<u64, _>::on_heap(8)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
    /// let messages = subscriber.messages();
    /// # drop(messages);
    /// # Ok::<(), shmbus::CreateError>(())
    /// ```
    pub fn messages(&mut self) -> Messages<'_, T, R> {
        Messages {
            sub: self,
            between: Between::default(),
        }
    }
}

#[cfg(feature = "async-stream")]
impl<T: Message, R: Region> futures_core::Stream for Messages<'_, T, R> {
    type Item = Received<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Received<T>>> {
        let this = self.get_mut();
        poll_item(&mut *this.sub, &mut this.between, cx, |s| {
            s.recv(Wait::Never)
        })
        .map(Some)
    }
}

/// One poll of a stream over `handle`: `next` receives without waiting
/// (`None`: nothing now); between items, the wait of [`readable`], its
/// registration kept in `reg`.
#[cfg(feature = "async-stream")]
fn poll_item<H: Selectable + ?Sized, I>(
    handle: &mut H,
    between: &mut Between,
    cx: &mut Context<'_>,
    mut next: impl FnMut(&mut H) -> Option<I>,
) -> Poll<I> {
    loop {
        if let Some(r) = next(handle) {
            between.reg = None;
            between.missed = false;
            return Poll::Ready(r);
        }
        match poll_readable(&*handle, &mut between.reg, &mut between.missed, cx) {
            Poll::Pending => return Poll::Pending,
            // Ready: receive; should that find nothing (a claim not
            // committed yet), the next wait naps instead of looking.
            Poll::Ready(()) => between.missed = true,
        }
    }
}

/// A stream's wait between items: its registration with the waiter
/// (removed on drop) and whether the last Ready found nothing.
#[cfg(feature = "async-stream")]
#[derive(Debug, Default)]
struct Between {
    /// Dropping it removes the registration.
    reg: Option<Armed>,
    missed: bool,
}

#[cfg(feature = "async-stream")]
/// A typed stream consumer's records as a `futures_core::Stream`
/// (feature `async-stream`): each item is what
/// [`Consumer::pop_async`] would return. After
/// [`PopError::PeerGone`] (the producer died and the ring is empty)
/// it ends. Cancel-safe as `pop_async`: dropping it between items
/// loses nothing.
///
/// # Examples
/// ```
/// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
/// # rt.block_on(async {
/// use std::pin::Pin;
/// use futures_core::Stream;
/// use shmbus::{OpenOptions, Wait, stream::{Consumer, Producer, StreamOptions}};
/// # let name = format!("/dev/shm/shmbus-doc-records-{}", std::process::id());
/// let mut producer = Producer::<u32>::create(&name, &StreamOptions::new(4096))?;
/// let mut consumer = Consumer::<u32>::attach(&name, &OpenOptions::default())?;
/// producer.push(&7, Wait::Never)?;
/// let mut records = consumer.records();
/// let next = std::future::poll_fn(|cx| Pin::new(&mut records).poll_next(cx)).await;
/// assert_eq!(next, Some(Ok(7)));
/// # shmbus::remove(&name)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[must_use = "streams do nothing unless polled"]
pub struct Records<'a, T: ?Sized + Payload, R: Region> {
    handle: &'a mut Consumer<T, R>,
    between: Between,
    /// The producer is gone: the stream ended.
    ended: bool,
}

#[cfg(feature = "async-stream")]
impl<T: Message, R: Region> Consumer<T, R> {
    /// This consumer's records as a `futures_core::Stream` (feature
    /// `async-stream`): see [`Records`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{OpenOptions, stream::{Consumer, Producer, StreamOptions}};
    /// # let name = format!("/dev/shm/shmbus-doc-records-fn-{}", std::process::id());
    /// let _producer = Producer::<u32>::create(&name, &StreamOptions::new(4096))?;
    /// let mut consumer = Consumer::<u32>::attach(&name, &OpenOptions::default())?;
    /// let records = consumer.records();
    /// # drop(records);
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn records(&mut self) -> Records<'_, T, R> {
        Records {
            handle: self,
            between: Between::default(),
            ended: false,
        }
    }
}

#[cfg(feature = "async-stream")]
impl<T: Message, R: Region> futures_core::Stream for Records<'_, T, R> {
    type Item = Result<T, PopError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        let item = poll_item(&mut *this.handle, &mut this.between, cx, |c| {
            match c.pop(Wait::Never) {
                Err(PopError::Empty) => {}
                other => return Some(other),
            }
            let pid = c.producer_gone()?;
            // One last look: the producer may have pushed, then died.
            Some(match c.pop(Wait::Never) {
                Err(PopError::Empty) => Err(PopError::PeerGone { pid }),
                other => other,
            })
        });
        if let Poll::Ready(Err(PopError::PeerGone { .. })) = item {
            this.ended = true;
        }
        item.map(Some)
    }
}

#[cfg(feature = "async-stream")]
/// A typed journal subscriber's entries (from the file, then the
/// ring) and lag reports as a `futures_core::Stream` (feature
/// `async-stream`): each item is what
/// [`JournalSubscriber::recv_async`] would return; it never ends.
/// Cancel-safe as `recv_async`.
///
/// # Examples
/// ```
/// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
/// # rt.block_on(async {
/// use std::pin::Pin;
/// use futures_core::Stream;
/// use shmbus::{BusOptions, Received};
/// use shmbus::journal::{Entry, JoinOptions, JournalOptions, JournalPublisher, JournalSubscriber};
/// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jentries-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// # let name = format!("/dev/shm/shmbus-doc-jentries-{}", std::process::id());
/// let mut publisher = JournalPublisher::<u64>::create(
///     &name,
///     &BusOptions::new(64),
///     &JournalOptions::new(dir.join("ticks.journal")),
/// )?;
/// publisher.publish(&1)?;
/// let mut late = JournalSubscriber::<u64>::join(&name, &JoinOptions::default())?;
/// let mut entries = late.entries();
/// let next = std::future::poll_fn(|cx| Pin::new(&mut entries).poll_next(cx)).await;
/// assert_eq!(next, Some(Received::Message(Entry { seq: 0, msg: 1 })));
/// # drop(entries); drop(late);
/// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[must_use = "streams do nothing unless polled"]
pub struct Entries<'a, T: Message> {
    handle: &'a mut JournalSubscriber<T>,
    between: Between,
}

#[cfg(feature = "async-stream")]
impl<T: Message> JournalSubscriber<T> {
    /// This subscriber's entries as a `futures_core::Stream` (feature
    /// `async-stream`): see [`Entries`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::BusOptions;
    /// use shmbus::journal::{JoinOptions, JournalOptions, JournalPublisher, JournalSubscriber};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jentries-fn-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-jentries-fn-{}", std::process::id());
    /// let publisher = JournalPublisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &JournalOptions::new(dir.join("ticks.journal")),
    /// )?;
    /// let mut late = JournalSubscriber::<u64>::join(&name, &JoinOptions::default())?;
    /// let entries = late.entries();
    /// # drop(entries); drop(late);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn entries(&mut self) -> Entries<'_, T> {
        Entries {
            handle: self,
            between: Between::default(),
        }
    }
}

#[cfg(feature = "async-stream")]
impl<T: Message> futures_core::Stream for Entries<'_, T> {
    type Item = Received<Entry<T>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        poll_item(&mut *this.handle, &mut this.between, cx, |j| {
            j.recv(Wait::Never)
        })
        .map(Some)
    }
}

#[cfg(feature = "async-stream")]
/// A pool subscriber's samples and lag reports as a
/// `futures_core::Stream` (feature `async-stream`): each item is what
/// [`PoolSubscriber::recv_async`] would return; it never ends. A
/// [`Sample`] does not borrow its subscriber (it keeps the mapping
/// alive itself), so items may be held across later ones, up to
/// [`PoolSubscriber::MAX_HELD`] at once (then the item is
/// [`PoolRecvError::TooManySamples`], and nothing is lost).
/// Cancel-safe as `recv_async`.
///
/// # Examples
/// ```
/// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
/// # rt.block_on(async {
/// use std::pin::Pin;
/// use futures_core::Stream;
/// use shmbus::{Received, Start, Wait, WaitStrategy, pool::PoolPublisher};
///
/// let mut publisher = PoolPublisher::<[u8], _>::on_heap(4, 64, 8)?;
/// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
/// let mut loan = publisher.loan(2, Wait::Never)?;
/// loan.copy_from_slice(b"hi");
/// loan.publish()?;
/// let mut samples = subscriber.samples();
/// let next = std::future::poll_fn(|cx| Pin::new(&mut samples).poll_next(cx)).await;
/// let Some(Ok(Received::Message(sample))) = next else { panic!() };
/// assert_eq!(&*sample, b"hi");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[must_use = "streams do nothing unless polled"]
pub struct Samples<'a, T: ?Sized + Payload, R: Region> {
    handle: &'a mut PoolSubscriber<T, R>,
    between: Between,
}

#[cfg(feature = "async-stream")]
impl<T: ?Sized + Payload, R: Region> PoolSubscriber<T, R> {
    /// This subscriber's samples as a `futures_core::Stream` (feature
    /// `async-stream`): see [`Samples`].
    ///
    /// # Examples
    /// ```
    /// use shmbus::{Start, WaitStrategy, pool::PoolPublisher};
    /// let publisher = PoolPublisher::<[u8], _>::on_heap(4, 64, 8)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
    /// let samples = subscriber.samples();
    /// # drop(samples);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn samples(&mut self) -> Samples<'_, T, R> {
        Samples {
            handle: self,
            between: Between::default(),
        }
    }
}

#[cfg(feature = "async-stream")]
impl<T: ?Sized + Payload, R: Region> futures_core::Stream for Samples<'_, T, R> {
    type Item = Result<Received<Sample<T, R>>, PoolRecvError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        poll_item(&mut *this.handle, &mut this.between, cx, |p| {
            p.recv(Wait::Never).transpose()
        })
        .map(Some)
    }
}

impl<T: Message, R: Region> Subscriber<T, R> {
    /// The next message or lag report, waiting without a thread and
    /// without spinning (see [`aio`](crate::aio)). Cancel-safe: a dropped
    /// future has received nothing.
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().enable_time().build()?;
    /// # rt.block_on(async {
    /// use std::time::Duration;
    /// use shmbus::{Publisher, Received, Start, WaitStrategy};
    ///
    /// let mut publisher = Publisher::<u64, _>::on_heap(8)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
    /// // Nothing yet: the timeout drops the future, which took nothing.
    /// let early = tokio::time::timeout(Duration::from_millis(5), subscriber.recv_async()).await;
    /// assert!(early.is_err());
    /// publisher.publish(&3);
    /// assert_eq!(subscriber.recv_async().await, Received::Message(3));
    /// # Ok::<(), shmbus::CreateError>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn recv_async(&mut self) -> Received<T> {
        let mut missed = false;
        loop {
            if let Some(r) = self.recv(Wait::Never) {
                return r;
            }
            turn(&*self, &mut missed).await;
        }
    }
}

impl<R: Region> Subscriber<[u8], R> {
    /// The next message (borrowed, as from `recv`) or lag report, waiting
    /// as [`Subscriber::recv_async`] does. Cancel-safe.
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// # rt.block_on(async {
    /// use shmbus::{Publisher, Received, Start, WaitStrategy};
    ///
    /// let mut publisher = Publisher::<[u8], _>::on_heap_bytes(2, 8)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default());
    /// publisher.publish(b"hi")?;
    /// assert_eq!(subscriber.recv_async().await, Received::Message(&b"hi"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn recv_async(&mut self) -> Received<&[u8]> {
        let mut missed = false;
        loop {
            // The message is lent again through `message()` so that the
            // borrow of this look ends here (a loop may look again).
            match self.recv(Wait::Never) {
                Some(Received::Message(_)) => break,
                Some(Received::Lagged { skipped }) => return Received::Lagged { skipped },
                None => {}
            }
            turn(&*self, &mut missed).await;
        }
        Received::Message(self.message())
    }
}

impl<T: Message> JournalSubscriber<T> {
    /// The next entry (from the file, then the ring) or lag report,
    /// waiting as [`Subscriber::recv_async`] does. Cancel-safe.
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// # rt.block_on(async {
    /// use shmbus::{BusOptions, Received};
    /// use shmbus::journal::{Entry, JoinOptions, JournalOptions, JournalPublisher, JournalSubscriber};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jasync-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-jasync-{}", std::process::id());
    /// let mut publisher = JournalPublisher::<u64>::create(
    ///     &name,
    ///     &BusOptions::new(64),
    ///     &JournalOptions::new(dir.join("ticks.journal")),
    /// )?;
    /// publisher.publish(&1)?;
    /// let mut late = JournalSubscriber::<u64>::join(&name, &JoinOptions::default())?;
    /// assert_eq!(late.recv_async().await, Received::Message(Entry { seq: 0, msg: 1 }));
    /// publisher.publish(&2)?;
    /// assert_eq!(late.recv_async().await, Received::Message(Entry { seq: 1, msg: 2 }));
    /// # drop(late);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn recv_async(&mut self) -> Received<Entry<T>> {
        let mut missed = false;
        loop {
            if let Some(r) = self.recv(Wait::Never) {
                return r;
            }
            // (The receive that finds the file's end moves to the ring and
            // may deliver nothing: a miss, then a wait on the ring.)
            turn(&*self, &mut missed).await;
        }
    }
}

impl JournalSubscriber<[u8]> {
    /// The next entry (borrowed, as from `recv`: the bus's message size,
    /// zero-padded as published) or lag report, waiting as
    /// [`Subscriber::recv_async`] does. Cancel-safe.
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// # rt.block_on(async {
    /// use shmbus::{BusOptions, Received};
    /// use shmbus::journal::{Entry, JoinOptions, JournalOptions, JournalPublisher, JournalSubscriber};
    /// # let dir = std::env::temp_dir().join(format!("shmbus-doc-jrawasync-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let name = format!("/dev/shm/shmbus-doc-jrawasync-{}", std::process::id());
    /// let mut publisher = JournalPublisher::<[u8]>::create(
    ///     &name,
    ///     &BusOptions::new(64).msg_size(8),
    ///     &JournalOptions::new(dir.join("raw.journal")),
    /// )?;
    /// publisher.publish(b"hello")?;
    /// let mut late = JournalSubscriber::<[u8]>::join(&name, &JoinOptions::default())?;
    /// let Received::Message(Entry { seq, msg }) = late.recv_async().await else { panic!() };
    /// assert_eq!((seq, msg), (0, &b"hello\0\0\0"[..]));
    /// # drop(late);
    /// # publisher.close()?; shmbus::remove(&name)?; std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn recv_async(&mut self) -> Received<Entry<&[u8]>> {
        let mut missed = false;
        let seq = loop {
            // The message is lent again through `last_bytes()` so that the
            // borrow of this look ends here (a loop may look again).
            match self.recv(Wait::Never) {
                Some(Received::Message(entry)) => break entry.seq,
                Some(Received::Lagged { skipped }) => return Received::Lagged { skipped },
                None => {}
            }
            turn(&*self, &mut missed).await;
        };
        Received::Message(Entry {
            seq,
            msg: self.last_bytes(),
        })
    }
}

impl<T: ?Sized + Payload, R: Region> PoolSubscriber<T, R> {
    /// The next sample or lag report, waiting as
    /// [`Subscriber::recv_async`] does. Cancel-safe.
    ///
    /// # Errors
    /// As [`PoolSubscriber::recv`]: [`PoolRecvError`].
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// # rt.block_on(async {
    /// use shmbus::{Received, Start, Wait, WaitStrategy, pool::PoolPublisher};
    ///
    /// let mut publisher = PoolPublisher::<[u8], _>::on_heap(4, 64, 8)?;
    /// let mut subscriber = publisher.subscribe(Start::Next, WaitStrategy::default())?;
    /// let mut loan = publisher.loan(2, Wait::Never)?;
    /// loan.copy_from_slice(b"hi");
    /// loan.publish()?;
    /// let Received::Message(sample) = subscriber.recv_async().await? else { panic!() };
    /// assert_eq!(&*sample, b"hi");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn recv_async(&mut self) -> Result<Received<Sample<T, R>>, PoolRecvError> {
        let mut missed = false;
        loop {
            if let Some(r) = self.recv(Wait::Never)? {
                return Ok(r);
            }
            turn(&*self, &mut missed).await;
        }
    }
}

impl<T: ?Sized + Payload, R: Region> Consumer<T, R> {
    /// Waits until a pop would not wait, or the producer died with the
    /// ring empty (its pid).
    async fn pop_ready(
        &mut self,
        mut pop: impl FnMut(&mut Self) -> Result<(), PopError>,
    ) -> Result<(), PopError> {
        let mut missed = false;
        loop {
            match pop(self) {
                Err(PopError::Empty) => {}
                other => return other,
            }
            if let Some(pid) = self.producer_gone() {
                // One last look: the producer may have pushed, then died.
                return match pop(self) {
                    Err(PopError::Empty) => Err(PopError::PeerGone { pid }),
                    other => other,
                };
            }
            turn(&*self, &mut missed).await;
        }
    }
}

impl<R: Region> Consumer<[u8], R> {
    /// Pops the next record into `out` (replacing its contents), waiting
    /// without a thread and without spinning (see [`aio`](crate::aio)).
    /// Cancel-safe: a dropped future popped nothing.
    ///
    /// # Errors
    /// [`PopError::PeerGone`] if the producer died (after this consumer
    /// opened) and the ring is empty, within about
    /// [`PEER_CHECK`](crate::stream::PEER_CHECK); the corruption errors
    /// of [`Consumer::pop`].
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// # rt.block_on(async {
    /// use shmbus::{OpenOptions, Wait, stream::{Consumer, Producer, StreamOptions}};
    /// # let name = format!("/dev/shm/shmbus-doc-pop-async-{}", std::process::id());
    /// let mut producer = Producer::<[u8]>::create(&name, &StreamOptions::new(4096))?;
    /// let mut consumer = Consumer::<[u8]>::attach(&name, &OpenOptions::default())?;
    /// producer.push(b"rec", Wait::Never)?;
    /// let mut out = Vec::new();
    /// consumer.pop_async(&mut out).await?;
    /// assert_eq!(out, b"rec");
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn pop_async(&mut self, out: &mut Vec<u8>) -> Result<(), PopError> {
        self.pop_ready(|c| c.pop(out, Wait::Never)).await
    }
}

impl<T: Message, R: Region> Consumer<T, R> {
    /// Pops the next record, one `T`, waiting as the raw
    /// [`Consumer::pop_async`] does. Cancel-safe.
    ///
    /// # Errors
    /// As the raw `pop_async`, and [`Consumer::pop`]'s typed errors.
    ///
    /// # Examples
    /// ```
    /// # let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// # rt.block_on(async {
    /// use shmbus::{OpenOptions, Wait, stream::{Consumer, Producer, StreamOptions}};
    /// # let name = format!("/dev/shm/shmbus-doc-pop-async-t-{}", std::process::id());
    /// let mut producer = Producer::<u32>::create(&name, &StreamOptions::new(4096))?;
    /// let mut consumer = Consumer::<u32>::attach(&name, &OpenOptions::default())?;
    /// producer.push(&7, Wait::Never)?;
    /// assert_eq!(consumer.pop_async().await, Ok(7));
    /// # shmbus::remove(&name)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn pop_async(&mut self) -> Result<T, PopError> {
        let mut got = None;
        self.pop_ready(|c| {
            got = Some(c.pop(Wait::Never)?);
            Ok(())
        })
        .await?;
        got.ok_or(PopError::Empty)
    }
}

#[cfg(test)]
mod tests;
