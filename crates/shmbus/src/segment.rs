//! Creating and opening a bus segment under /dev/shm: the steps between a
//! name and a validated, mapped, locked ring.
//!
//! Create: `O_CREAT|O_EXCL|O_NOFOLLOW`, exact mode, publisher lock, write
//! [`MAGIC_BUILDING`], reserve the pages, header, control fields, slot stamps,
//! then the magic (Release), then make the header page read-only, then (with
//! transparent huge pages) collapse the data pages. Any failure after the
//! file exists removes it again.
//!
//! Open: no symlinks; `fstat`; wait (up to `init_timeout`) while the file is
//! empty or still says [`MAGIC_BUILDING`]; map exactly the `fstat` length,
//! aligned to the header's page size (huge pages, see `region`);
//! validate the header against it; set page protections for the role:
//! publishers cannot write the header, subscribers can write only the
//! control page.

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytemuck::Pod;

use crate::broadcast::{Publisher, RawPublisher, RawSubscriber, Ring, Start, Subscriber};
use crate::error::{AttachError, CreateError, HugePageError, OpenError, TypeFingerprint};
use crate::layout::{control, header, lock_byte, Header, Kind, MAGIC, MAGIC_BUILDING};
use crate::lock;
use crate::region::{resolve, Access, HugePages, Region, ShmRegion};
use crate::sync::Ordering;
use crate::wait::WaitStrategy;

/// How to create a bus.
#[derive(Clone, Debug)]
pub struct CreateOptions {
    capacity: u64,
    mode: u32,
    prefault: bool,
    mlock: bool,
    first_seq: u64,
    unblock: Duration,
    huge: Option<HugePages>,
}

impl CreateOptions {
    /// A bus of `capacity` slots (a power of two), mode 0600.
    pub fn new(capacity: u64) -> Self {
        CreateOptions {
            capacity,
            mode: 0o600,
            prefault: false,
            mlock: false,
            first_seq: 0,
            unblock: crate::mpmc::DEFAULT_UNBLOCK,
            huge: None,
        }
    }
    /// Back the bus with huge pages (see `region`'s module docs): a bare
    /// name with [`HugePages::Transparent`], a path on a hugetlbfs mount with
    /// [`HugePages::Hugetlbfs`]. A system that cannot is a
    /// [`CreateError::HugePages`] naming what it found.
    pub fn huge_pages(mut self, huge: HugePages) -> Self {
        self.huge = Some(huge);
        self
    }
    /// The huge pages asked for, if any.
    pub fn huge_pages_kind(&self) -> Option<HugePages> {
        self.huge
    }
    /// File mode; 0o600 (owner only) unless asked. 0o660 lets the group in.
    pub fn mode(mut self, mode: u32) -> Self {
        self.mode = mode & 0o777;
        self
    }
    /// Touch every page at creation so the first messages do not fault.
    pub fn prefault(mut self, yes: bool) -> Self {
        self.prefault = yes;
        self
    }
    /// `mlock` the segment so it is never paged out.
    pub fn mlock(mut self, yes: bool) -> Self {
        self.mlock = yes;
        self
    }
    /// Slots of a bus, or bytes of a stream.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }
    pub(crate) fn mode_bits(&self) -> u32 {
        self.mode
    }
    /// Multi-publisher buses: how long a claimed slot may stay uncommitted
    /// (its publisher died, or stalled) before it is skipped (default 1 s).
    pub fn unblock_timeout(mut self, timeout: Duration) -> Self {
        self.unblock = timeout;
        self
    }
    pub(crate) fn first_seq(&self) -> u64 {
        self.first_seq
    }
    /// Starts the sequence at `first` instead of 0 (to test the wrap).
    #[doc(hidden)]
    pub fn first_sequence(mut self, first: u64) -> Self {
        self.first_seq = first;
        self
    }
}

/// How to open an existing bus (as a subscriber, or a publisher attaching).
#[derive(Clone, Debug)]
pub struct OpenOptions {
    start: Start,
    wait: WaitStrategy,
    init_timeout: Duration,
    prefault: bool,
    mlock: bool,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            start: Start::Next,
            wait: WaitStrategy::default(),
            init_timeout: Duration::from_secs(1),
            prefault: false,
            mlock: false,
        }
    }
}

impl OpenOptions {
    /// Where a subscriber starts (default [`Start::Next`]).
    pub fn start(mut self, start: Start) -> Self {
        self.start = start;
        self
    }
    /// The start set with [`OpenOptions::start`].
    pub fn start_position(&self) -> Start {
        self.start
    }
    /// The wait strategy set with [`OpenOptions::wait`].
    pub fn wait_strategy(&self) -> WaitStrategy {
        self.wait
    }
    /// How a subscriber waits in `recv` (default spin 50 µs, then futex).
    pub fn wait(mut self, wait: WaitStrategy) -> Self {
        self.wait = wait;
        self
    }
    /// How long to wait for a bus being created to finish (default 1 s).
    pub fn init_timeout(mut self, timeout: Duration) -> Self {
        self.init_timeout = timeout;
        self
    }
    /// Touch every page on open.
    pub fn prefault(mut self, yes: bool) -> Self {
        self.prefault = yes;
        self
    }
    /// `mlock` the mapping.
    pub fn mlock(mut self, yes: bool) -> Self {
        self.mlock = yes;
        self
    }
}

/// What an opener is going to do with the segment.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Publisher,
    Subscriber,
    /// `stat`, `ls`: read-only, takes no lock.
    Inspect,
}

/// The page size a new segment named `name` is laid out with, and the
/// header flags that go with it: the system's page, or (with huge pages,
/// once the system is known able to give them) the huge page size and
/// `HUGE_PAGES`.
pub(crate) fn layout_page(name: &str, opts: &CreateOptions) -> Result<(u64, u32), CreateError> {
    match opts.huge {
        None => Ok((rustix::param::page_size() as u64, 0)),
        Some(huge) => Ok((
            huge.page_size(&resolve(name)?)?,
            crate::layout::flags::HUGE_PAGES,
        )),
    }
}

/// Creates the file and builds the segment: header, `init` for the kind's
/// own fields, then the magic. The creator holds the writer's lock (byte
/// `PUBLISHER`) from before the first byte is written, so a dead creator is
/// always recognisable. Removes the file again if any step fails.
pub(crate) fn create_region(
    name: &str,
    header: &Header,
    opts: &CreateOptions,
    init: impl FnOnce(&ShmRegion),
) -> Result<ShmRegion, CreateError> {
    let path = resolve(name)?;
    let len = header.total_len;
    let huge = header.flags & crate::layout::flags::HUGE_PAGES != 0;
    if opts.huge.is_some() && !huge {
        // A caller that built its header without `layout_page`.
        return Err(HugePageError::Unsupported {
            what: if header.journal.is_some() {
                "a journaled bus"
            } else {
                "this kind of segment"
            },
        }
        .into());
    }
    // Locked and marked before its pages are reserved, so that a creator
    // killed at any later point leaves a file `clean` knows for a dead
    // shmbus creator's (found by tests/chaos.rs: a large segment's
    // reservation was a window in which a kill left an anonymous file).
    let marked = std::cell::Cell::new(false);
    let claim = |file: std::os::fd::BorrowedFd<'_>| {
        if !lock::try_lock(file, lock_byte::PUBLISHER, true)?
            || !lock::try_lock(file, lock_byte::ATTACHED, false)?
        {
            return Err(std::io::Error::other("new file already locked"));
        }
        let mark = MAGIC_BUILDING.to_le_bytes();
        match rustix::io::pwrite(file, &mark, 0) {
            Ok(8) => {
                marked.set(true);
                Ok(())
            }
            // A file system without write(2) (hugetlbfs): the mark goes in
            // through the mapping below instead, a moment later.
            Err(rustix::io::Errno::INVAL) => Ok(()),
            Ok(_) => Err(std::io::Error::other("short write of the magic")),
            Err(e) => Err(e.into()),
        }
    };
    let region = ShmRegion::create(
        &path,
        len as usize,
        opts.mode,
        header.page_size as usize,
        claim,
    )
    .map_err(|e| match (opts.huge, e.raw_os_error()) {
        (Some(HugePages::Hugetlbfs), Some(libc::ENOSPC | libc::ENOMEM)) => {
            crate::region::none_free(&path, len, header.page_size).into()
        }
        _ => CreateError::from_create(&path, len, e),
    })?;
    let built = (|| {
        let io = |what| move |source| CreateError::Io { what, source };
        if !marked.get() {
            region
                .word(header::MAGIC)
                .store(MAGIC_BUILDING, Ordering::Relaxed);
        }
        header.write(&region);
        // The writer's pid sits at the same offset for every kind.
        let pid_field = header.control_offset as usize + control::PUBLISHER_PID;
        region
            .word32(pid_field)
            .store(std::process::id(), Ordering::Relaxed);
        init(&region);
        Header::publish_magic(&region);
        region
            .protect(0, header.page_size as usize, Access::ReadOnly)
            .map_err(io("mprotect"))?;
        if opts.huge == Some(HugePages::Transparent) {
            let data = header.data_offset as usize;
            region.collapse_huge(data, len as usize - data)?;
        }
        if opts.prefault {
            region.prefault();
        }
        if opts.mlock {
            region.lock_in_memory().map_err(CreateError::Mlock)?;
        }
        Ok(())
    })();
    match built {
        Ok(()) => Ok(region),
        Err(e) => {
            let _ = crate::region::unlink(&path);
            Err(e)
        }
    }
}

pub(crate) fn create_ring(
    name: &str,
    header: &Header,
    opts: &CreateOptions,
) -> Result<Ring<ShmRegion>, CreateError> {
    let region = create_region(name, header, opts, |r| {
        if header.flags & crate::layout::flags::MULTI_PUBLISHER != 0 {
            crate::mpmc::init_control(r, header, opts.unblock);
        }
        Ring::new(r, header).init()
    })?;
    Ok(Ring::new(region, header))
}

fn read_magic(file: &std::os::fd::OwnedFd) -> u64 {
    let mut buf = [0u8; 8];
    match rustix::io::pread(file, &mut buf, 0) {
        Ok(8) => u64::from_le_bytes(buf),
        _ => 0,
    }
}

/// The creator's page size, read before mapping so that a huge-page bus is
/// mapped aligned to its pages. Only a hint: `Header::read` validates the
/// field once mapped; a value no sane creator writes asks for no alignment.
fn read_page_size(file: &std::os::fd::OwnedFd) -> usize {
    let mut buf = [0u8; 4];
    match rustix::io::pread(file, &mut buf, header::PAGE_SIZE as u64) {
        Ok(4) => {
            let page = u32::from_le_bytes(buf) as usize;
            if page.is_power_of_two() && page <= 1 << 30 {
                page
            } else {
                0
            }
        }
        _ => 0,
    }
}

/// Opens, waits for initialization, maps and validates a segment. A file
/// that `clean` unlinked while we opened it is let go and the name opened
/// again (a few times: each retry needs another create and clean).
pub(crate) fn open_region(
    path: &Path,
    role: Role,
    init_timeout: Duration,
) -> Result<(ShmRegion, Header), OpenError> {
    for _ in 0..3 {
        if let Some(opened) = open_region_once(path, role, init_timeout)? {
            return Ok(opened);
        }
    }
    Err(OpenError::NotFound {
        path: path.to_owned(),
    })
}

fn open_region_once(
    path: &Path,
    role: Role,
    init_timeout: Duration,
) -> Result<Option<(ShmRegion, Header)>, OpenError> {
    let access = if role == Role::Inspect {
        Access::ReadOnly
    } else {
        Access::ReadWrite
    };
    let start = Instant::now();
    let (file, len) = loop {
        let (file, len) =
            ShmRegion::open_file(path, access).map_err(|e| OpenError::from_open(path, e))?;
        // `create` first writes the 8 bytes of `MAGIC_BUILDING` (one
        // `pwrite`), then reserves the whole length, so a file of 1 to 7
        // bytes is no bus being built: it is cut short.
        if (1..8).contains(&len) {
            return Err(OpenError::Truncated {
                path: path.to_owned(),
                len,
                expected: header::END as u64,
            });
        }
        let magic = if len >= 8 { read_magic(&file) } else { 0 };
        if magic == MAGIC {
            break (file, len);
        }
        if magic != 0 && magic != MAGIC_BUILDING {
            return Err(OpenError::BadMagic {
                path: path.to_owned(),
                found: magic,
                expected: MAGIC,
            });
        }
        if start.elapsed() >= init_timeout {
            return Err(OpenError::NotInitialized {
                path: path.to_owned(),
                waited: start.elapsed(),
            });
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    if len < header::END as u64 {
        return Err(OpenError::Truncated {
            path: path.to_owned(),
            len,
            expected: header::END as u64,
        });
    }
    let io = |what| move |source| OpenError::Io { what, source };
    let map_access = if role == Role::Publisher {
        Access::ReadWrite
    } else {
        Access::ReadOnly
    };
    let align = read_page_size(&file);
    let region =
        ShmRegion::map_aligned(file, path, len as usize, map_access, align).map_err(io("mmap"))?;
    let header = Header::read(&region, len).map_err(|e| e.at(path))?;
    let page = header.page_size as usize;
    match role {
        Role::Publisher => region
            .protect(0, page, Access::ReadOnly)
            .map_err(io("mprotect"))?,
        Role::Subscriber => region
            .protect(header.control_offset as usize, page, Access::ReadWrite)
            .map_err(io("mprotect"))?,
        Role::Inspect => {}
    }
    if role != Role::Inspect {
        match attach_lock(&region, path, start, init_timeout)? {
            Linked::Yes => {}
            // `clean` removed it while we opened it: the name may already
            // be a new bus, or nothing (then `NotFound`).
            Linked::No => return Ok(None),
        }
    }
    Ok(Some((region, header)))
}

/// Whether the file an opener locked still has its name.
enum Linked {
    Yes,
    No,
}

/// Takes the shared attach lock, then checks that the file is still linked.
/// `clean` holds the lock exclusively from its decision until after its
/// unlink, so once we hold it shared, the file can no longer be removed by
/// `clean`, and `st_nlink == 0` says it already was: we must not publish
/// into (or wait on) an orphan nobody else can find. The lock is retried
/// until `init_timeout`; `clean` holds it for a moment only.
fn attach_lock(
    region: &ShmRegion,
    path: &Path,
    start: Instant,
    init_timeout: Duration,
) -> Result<Linked, OpenError> {
    let io = |what| move |source| OpenError::Io { what, source };
    while !lock::try_lock(region.file(), lock_byte::ATTACHED, false).map_err(io("lock"))? {
        if start.elapsed() >= init_timeout {
            return Err(OpenError::Locked {
                path: path.to_owned(),
                waited: start.elapsed(),
            });
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let st = rustix::fs::fstat(region.file()).map_err(|e| io("fstat")(e.into()))?;
    Ok(if st.st_nlink == 0 {
        Linked::No
    } else {
        Linked::Yes
    })
}

fn finish_open(region: &ShmRegion, opts: &OpenOptions) -> Result<(), OpenError> {
    if opts.prefault {
        region.prefault();
    }
    if opts.mlock {
        region.lock_in_memory().map_err(OpenError::Mlock)?;
    }
    Ok(())
}

/// Opens a segment of `kind` (and message type `msg`, if given) for `role`.
pub(crate) fn open_checked(
    name: &str,
    role: Role,
    kind: Kind,
    msg: Option<&TypeFingerprint>,
    opts: &OpenOptions,
) -> Result<(ShmRegion, Header), OpenError> {
    let path = resolve(name)?;
    let (region, header) = open_region(&path, role, opts.init_timeout)?;
    header.expect(kind, msg)?;
    finish_open(&region, opts)?;
    Ok((region, header))
}

pub(crate) fn open_ring(
    name: &str,
    role: Role,
    msg: Option<&TypeFingerprint>,
    opts: &OpenOptions,
) -> Result<Ring<ShmRegion>, OpenError> {
    let (region, header) = open_checked(name, role, Kind::Broadcast, msg, opts)?;
    if role == Role::Subscriber && header.flags & crate::layout::flags::MULTI_PUBLISHER != 0 {
        // Subscribers of a multi-publisher bus may skip an abandoned claim,
        // a CAS on its stamp (see `mpmc`).
        let data = header.data_offset as usize;
        region
            .protect(data, header.total_len as usize - data, Access::ReadWrite)
            .map_err(|source| OpenError::Io {
                what: "mprotect",
                source,
            })?;
    }
    Ok(Ring::new(region, &header))
}

/// Takes the exclusive lock `byte` and writes our pid at `pid_field`; if a
/// live process holds it, returns that process's pid (from `pid_field`).
pub(crate) fn take_role(region: &ShmRegion, byte: u64, pid_field: usize) -> Result<(), u32> {
    let locked = lock::try_lock(region.file(), byte, true).unwrap_or(false);
    if !locked {
        return Err(region.word32(pid_field).load(Ordering::Relaxed));
    }
    region
        .word32(pid_field)
        .store(std::process::id(), Ordering::Relaxed);
    Ok(())
}

/// Takes a free registry entry, if any, so `stat` can name this subscriber.
/// A subscriber beyond the registry's size works all the same, uncounted
/// but still holding the attached lock that keeps `clean` away.
/// Called once the subscriber's start position is fixed, so that "registered"
/// means "will see everything published from now on".
pub(crate) fn register(ring: &Ring<ShmRegion>) {
    let region = ring.region();
    for i in 0..control::REGISTRY_SLOTS {
        if let Ok(true) = lock::try_lock(region.file(), lock_byte::REGISTRY + i as u64, true) {
            let field = ring.control_field(control::REGISTRY + 4 * i);
            region
                .word32(field)
                .store(std::process::id(), Ordering::Relaxed);
            return;
        }
    }
}

fn attach_ring(
    name: &str,
    msg: Option<&TypeFingerprint>,
    opts: &OpenOptions,
) -> Result<(Ring<ShmRegion>, u64), AttachError> {
    let (region, header) = open_checked(name, Role::Publisher, Kind::Broadcast, msg, opts)?;
    if let Some(path) = header.journal {
        return Err(AttachError::Journaled { path });
    }
    let ring = Ring::new(region, &header);
    if ring.is_multi() {
        return Err(AttachError::WrongPublishers {
            found: crate::mpmc::Publishers::Many,
            expected: crate::mpmc::Publishers::One,
        });
    }
    let pid_field = ring.control_field(control::PUBLISHER_PID);
    take_role(ring.region(), lock_byte::PUBLISHER, pid_field)
        .map_err(|pid| AttachError::PublisherActive { pid })?;
    let next = ring.resume();
    Ok((ring, next))
}

impl<T: Pod> Publisher<T> {
    /// Creates a new bus named `name` (a bare name goes under /dev/shm) and
    /// becomes its publisher.
    pub fn create(name: &str, opts: &CreateOptions) -> Result<Self, CreateError> {
        let (page, flags) = layout_page(name, opts)?;
        let mut header = Header::broadcast(
            opts.capacity,
            TypeFingerprint::of::<T>(),
            page,
            opts.first_seq,
        )
        .map_err(CreateError::InvalidGeometry)?;
        header.flags |= flags;
        let ring = create_ring(name, &header, opts)?;
        Ok(Publisher::from_parts(ring, opts.first_seq))
    }

    /// Becomes the publisher of an existing bus, after a previous publisher
    /// exited or died: resumes its sequence and bumps the epoch.
    pub fn attach(name: &str, opts: &OpenOptions) -> Result<Self, AttachError> {
        let (ring, next) = attach_ring(name, Some(&TypeFingerprint::of::<T>()), opts)?;
        Ok(Publisher::from_parts(ring, next))
    }
}

impl<T: Pod> Subscriber<T> {
    /// Opens the bus named `name` and starts where `opts` says.
    pub fn open(name: &str, opts: &OpenOptions) -> Result<Self, OpenError> {
        let ring = open_ring(
            name,
            Role::Subscriber,
            Some(&TypeFingerprint::of::<T>()),
            opts,
        )?;
        let subscriber = Subscriber::from_parts(ring, opts.start, opts.wait);
        register(&subscriber.ring);
        Ok(subscriber)
    }

    /// The first byte of the data pages, which this process maps read-only.
    /// For the test that proves a stray store faults.
    #[doc(hidden)]
    pub fn data_pages_ptr(&self) -> *mut u8 {
        // SAFETY: data_offset is inside the mapping (validated on open).
        unsafe { self.ring.region().base_ptr().add(self.ring.data_offset()) }
    }
}

impl RawPublisher {
    /// Creates a bus of raw messages of `msg_size` bytes.
    pub fn create(name: &str, msg_size: u32, opts: &CreateOptions) -> Result<Self, CreateError> {
        let (page, flags) = layout_page(name, opts)?;
        let mut header = Header::broadcast(
            opts.capacity,
            TypeFingerprint::bytes(msg_size),
            page,
            opts.first_seq,
        )
        .map_err(CreateError::InvalidGeometry)?;
        header.flags |= flags;
        let ring = create_ring(name, &header, opts)?;
        Ok(RawPublisher::from_parts(ring, opts.first_seq))
    }

    /// Attaches to any broadcast bus, whatever its message type: raw
    /// messages are written as bytes, zero-padded to its message size.
    pub fn attach(name: &str, opts: &OpenOptions) -> Result<Self, AttachError> {
        let (ring, next) = attach_ring(name, None, opts)?;
        Ok(RawPublisher::from_parts(ring, next))
    }
}

impl RawSubscriber {
    /// Opens any broadcast bus, whatever its message type.
    pub fn open(name: &str, opts: &OpenOptions) -> Result<Self, OpenError> {
        let ring = open_ring(name, Role::Subscriber, None, opts)?;
        let subscriber = RawSubscriber::from_parts(ring, opts.start, opts.wait);
        register(&subscriber.ring);
        Ok(subscriber)
    }
}

/// Why `name` in a directory is not a shmbus file this process could open.
pub(crate) enum BusAt {
    /// A symbolic link (never followed).
    Symlink,
    /// A directory, FIFO, device or socket.
    NotRegular,
    /// A regular file without shmbus's magic (finished or half-built); 0 if
    /// it is shorter than 8 bytes.
    BadMagic(u64),
    /// A system call failed.
    Io {
        step: &'static str,
        source: std::io::Error,
    },
}

/// Opens the shmbus file `name` in `dir` (read-write if `write`) without
/// following a symlink or opening anything but a regular file, and checks
/// its magic. Returns the file and its identity, for a later
/// `dir::unlink_checked`. The one way `remove` and `stat::list`/`clean`
/// look at a file by directory.
pub(crate) fn open_bus_at(
    dir: std::os::fd::BorrowedFd<'_>,
    name: &std::ffi::OsStr,
    write: bool,
) -> Result<(crate::dir::FileId, std::os::fd::OwnedFd), BusAt> {
    let io = |step| move |source| BusAt::Io { step, source };
    let st = crate::dir::stat_at(dir, name).map_err(io("stat"))?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink {
        return Err(BusAt::Symlink);
    }
    if !crate::dir::is_regular(&st) {
        return Err(BusAt::NotRegular);
    }
    let id = crate::dir::FileId::of(&st);
    let file = crate::dir::open_at(dir, name, write, id).map_err(io("open"))?;
    let mut buf = [0u8; 8];
    let magic = match rustix::io::pread(&file, &mut buf, 0) {
        Ok(8) => u64::from_le_bytes(buf),
        Ok(_) => 0,
        Err(e) => return Err(io("read")(e.into())),
    };
    if magic != MAGIC && magic != MAGIC_BUILDING {
        return Err(BusAt::BadMagic(magic));
    }
    Ok((id, file))
}

/// A directory on the way to a bus that could not be opened, as an
/// opener's error.
fn open_error(e: crate::dir::DirError) -> OpenError {
    use crate::dir::DirError;
    match e {
        DirError::Symlink { component } => OpenError::Symlink { path: component },
        DirError::NotADirectory { component } => OpenError::NotAFile { path: component },
        DirError::Io { component, source } => OpenError::from_open(&component, source),
    }
}

/// Removes a bus's name from the file system. Processes that have it mapped
/// keep working; nobody new can open it. Refuses a file that does not start
/// with shmbus's magic (finished or half-built), so it deletes only buses,
/// and removes the file it checked, never what a symlink or a renamed
/// directory puts in its place (see `dir`).
///
/// # Errors
/// [`OpenError::NotFound`], [`OpenError::Symlink`] (the bus's name, or a
/// directory on the way, is a symbolic link), [`OpenError::NotAFile`],
/// [`OpenError::BadMagic`], [`OpenError::PermissionDenied`], or
/// [`OpenError::Io`] for any other failure.
pub fn remove(name: &str) -> Result<PathBuf, OpenError> {
    let path = resolve(name)?;
    let Some((parent, file_name)) = crate::dir::split(&path) else {
        return Err(OpenError::NotAFile { path });
    };
    let dir = crate::dir::open_dir(parent).map_err(open_error)?;
    let (id, _file) = open_bus_at(dir.as_fd(), file_name, false).map_err(|e| match e {
        BusAt::Symlink => OpenError::Symlink { path: path.clone() },
        BusAt::NotRegular => OpenError::NotAFile { path: path.clone() },
        BusAt::BadMagic(found) => OpenError::BadMagic {
            path: path.clone(),
            found,
            expected: MAGIC,
        },
        BusAt::Io { source, .. } => OpenError::from_open(&path, source),
    })?;
    match crate::dir::unlink_checked(dir.as_fd(), file_name, id) {
        Ok(()) => Ok(path),
        Err(crate::dir::UnlinkError::Replaced) => Err(OpenError::NotFound { path }),
        Err(crate::dir::UnlinkError::Io(e)) => Err(OpenError::from_open(&path, e)),
    }
}
