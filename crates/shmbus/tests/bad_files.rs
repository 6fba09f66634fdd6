//! Every way a file under /dev/shm can be wrong is a typed error whose
//! message names what was found and what was expected: never a panic, a
//! hang or a SIGBUS. Each case is a real file, made bad with `set_len` or
//! patched with `write_at` at the offsets in `shmbus::wire::header`.

mod common;

use std::path::Path;
use std::time::Duration;

use bytemuck::{Pod, Zeroable};
use common::{BusName, patch_u32, patch_u64, write_at};
use shmbus::stat::{self, BusStat};
use shmbus::wire::{self, Kind, header};
use shmbus::{
    AttachError, BusOptions, CreateError, OpenError, OpenOptions, Publisher, Subscriber,
    error::{GeometryError, NameError},
};

/// Same size and alignment as u64, another name.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Other8 {
    x: u64,
}

impl shmbus::Message for Other8 {
    const NAME: &'static str = "test.Other8";
}

fn opts() -> OpenOptions {
    OpenOptions::default().init_timeout(Duration::from_millis(50))
}

/// A finished bus of u64 (16 slots, 3 messages) with no process attached.
fn valid_bus(label: &str) -> (BusName, BusStat) {
    let bus = BusName::new(label);
    let mut p = Publisher::<u64>::create(bus.name(), &BusOptions::new(16)).expect("create");
    for s in 0..3u64 {
        p.publish(&s);
    }
    drop(p);
    let st = stat::stat(bus.name()).expect("stat of a valid bus");
    (bus, st)
}

fn subscriber_err<T: shmbus::Message>(name: &str) -> OpenError {
    match Subscriber::<T>::open(name, &opts()) {
        Ok(_) => panic!(
            "Subscriber::<{}>::open({name}) succeeded",
            std::any::type_name::<T>()
        ),
        Err(e) => e,
    }
}

fn raw_err(name: &str) -> OpenError {
    match Subscriber::<[u8]>::open(name, &opts()) {
        Ok(_) => panic!("Subscriber::<[u8]>::open({name}) succeeded"),
        Err(e) => e,
    }
}

fn attach_err<T: shmbus::Message>(name: &str) -> OpenError {
    match Publisher::<T>::attach(name, &opts()) {
        Ok(_) => panic!("Publisher::attach({name}) succeeded"),
        Err(AttachError::Open(e)) => e,
        Err(e) => panic!("Publisher::attach({name}): expected an open error, got {e}"),
    }
}

fn stat_err(name: &str) -> OpenError {
    match stat::stat(name) {
        Ok(st) => panic!("stat({name}) succeeded: {st:?}"),
        Err(e) => e,
    }
}

/// The error from each way of opening a segment: subscriber, raw
/// subscriber, publisher attach, and `stat`.
fn from_every_opener(name: &str) -> Vec<(&'static str, OpenError)> {
    vec![
        ("Subscriber::open", subscriber_err::<u64>(name)),
        ("Subscriber::<[u8]>::open", raw_err(name)),
        ("Publisher::attach", attach_err::<u64>(name)),
        ("stat", stat_err(name)),
    ]
}

/// Checks every opener's error with `check`, and that its message contains
/// each of `words`.
fn every_opener_says(name: &str, words: &[String], check: impl Fn(&OpenError) -> bool) {
    for (who, e) in from_every_opener(name) {
        assert!(check(&e), "{who}({name}): unexpected error {e:?} ({e})");
        let text = e.to_string();
        for w in words {
            assert!(
                text.contains(w.as_str()),
                "{who}: {text:?} does not mention {w:?}"
            );
        }
    }
}

fn hex(v: u64) -> String {
    format!("{v:#018x}")
}

#[test]
#[cfg_attr(miri, ignore)]
fn random_bytes_are_refused_as_bad_magic() {
    let bus = BusName::new("random");
    let mut x = 0x1234_5678_9abc_def1u64;
    let bytes: Vec<u8> = (0..8192)
        .flat_map(|_| {
            x = common::splitmix(x);
            x.to_le_bytes()
        })
        .take(8192)
        .collect();
    std::fs::write(bus.path(), &bytes).unwrap();
    let found = u64::from_le_bytes(bytes[..8].try_into().unwrap());
    assert!(found != 0 && found != wire::MAGIC && found != wire::MAGIC_BUILDING);
    let at = bus.path().to_owned();
    every_opener_says(bus.name(), &[hex(found), hex(wire::MAGIC)], |e| {
        matches!(e, OpenError::BadMagic { found: f, expected, path }
            if *f == found && *expected == wire::MAGIC && *path == at)
    });
    // `remove` deletes only buses.
    assert!(matches!(
        shmbus::remove(bus.name()),
        Err(OpenError::BadMagic { found: f, .. }) if f == found
    ));
    assert!(
        bus.path().exists(),
        "remove deleted a file that is not a bus"
    );
    // `list` skips what is not a shmbus file, and `clean` leaves it alone.
    let dir = bus.path().parent().unwrap();
    assert!(
        stat::list(dir)
            .unwrap()
            .iter()
            .all(|l| l.path != bus.path())
    );
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_bus_whose_magic_was_changed_is_refused_as_bad_magic() {
    let (bus, _) = valid_bus("magic");
    write_at(bus.path(), header::MAGIC as u64, b"NOTABUS!");
    let found = u64::from_le_bytes(*b"NOTABUS!");
    every_opener_says(
        bus.name(),
        &[hex(found), hex(wire::MAGIC)],
        |e| matches!(e, OpenError::BadMagic { found: f, .. } if *f == found),
    );
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_truncated_bus_is_refused_as_truncated() {
    let (bus, st) = valid_bus("truncated");
    let total = st.raw_header().total_len;
    assert_eq!(std::fs::metadata(bus.path()).unwrap().len(), total);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(bus.path())
        .unwrap();
    for len in [
        total - 1,
        total - st.raw_header().page_size,
        2 * st.raw_header().page_size,
    ] {
        file.set_len(len).unwrap();
        every_opener_says(
            bus.name(),
            &[len.to_string(), total.to_string()],
            |e| matches!(e, OpenError::Truncated { len: l, expected, path } if *l == len && *expected == total && path == bus.path()),
        );
    }
    // Shorter than the header itself.
    file.set_len(100).unwrap();
    let end = header::END as u64;
    every_opener_says(
        bus.name(),
        &["100".into(), end.to_string()],
        |e| matches!(e, OpenError::Truncated { len: 100, expected, path } if *expected == end && path == bus.path()),
    );
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_bus_of_another_layout_version_is_refused_naming_both_versions() {
    let (bus, _) = valid_bus("version");
    // 1: what older builds wrote (no subscriber lines, data at 2P).
    for found in [1, 7] {
        patch_u32(bus.path(), header::VERSION as u64, found);
        every_opener_says(
            bus.name(),
            &[format!("version {found}, expected {}", wire::VERSION)],
            |e| {
                matches!(e, OpenError::VersionMismatch { found: f, expected }
                    if *f == found && *expected == wire::VERSION)
            },
        );
    }
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_segment_of_another_kind_is_refused_as_wrong_kind() {
    let (bus, _) = valid_bus("kind");
    for (code, kind, said) in [
        (2, Kind::Stream, "stream"),
        (3, Kind::Blackboard, "blackboard"),
        (99, Kind::Unknown(99), "unknown (99)"),
    ] {
        patch_u32(bus.path(), header::KIND as u64, code);
        let words = [format!("kind is {said}, expected broadcast")];
        for (who, e) in [
            ("Subscriber::open", subscriber_err::<u64>(bus.name())),
            ("Subscriber::<[u8]>::open", raw_err(bus.name())),
            ("Publisher::attach", attach_err::<u64>(bus.name())),
        ] {
            assert!(
                matches!(e, OpenError::WrongKind { found, expected: Kind::Broadcast } if found == kind),
                "{who}: {e:?}"
            );
            assert!(e.to_string().contains(&words[0]), "{who}: {e}");
        }
        // `stat` shows a kind it does not know as it is; a known kind must
        // have that kind's geometry, which a patched bus has not.
        match stat::stat(bus.name()) {
            Ok(st) => {
                assert_eq!(st.raw_header().kind, kind);
                assert!(
                    matches!(kind, Kind::Unknown(_)),
                    "stat accepted a broken {kind}"
                );
            }
            Err(e) => assert!(
                matches!(e, OpenError::InvalidGeometry(_)) && !matches!(kind, Kind::Unknown(_)),
                "stat of a {kind}: {e:?}"
            ),
        }
        assert_eq!(Kind::from_code(code), kind);
        assert_eq!(kind.code(), code);
    }
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn opening_a_bus_as_another_message_type_is_a_type_mismatch() {
    let (bus, _) = valid_bus("type");
    // Another size.
    let e = subscriber_err::<u32>(bus.name());
    match &e {
        OpenError::TypeMismatch { found, expected } => {
            assert_eq!((found.size, found.name.as_str()), (8, "u64"));
            assert_eq!((expected.size, expected.name.as_str()), (4, "u32"));
        }
        other => panic!("u32 on a u64 bus: {other:?}"),
    }
    let text = e.to_string();
    assert!(
        text.contains("`u64` (size 8") && text.contains("`u32` (size 4"),
        "{text}"
    );

    // Same size and alignment, another name.
    let e = subscriber_err::<Other8>(bus.name());
    match &e {
        OpenError::TypeMismatch { found, expected } => {
            assert_eq!((found.size, found.align), (expected.size, expected.align));
            assert_ne!(found.name_hash, expected.name_hash);
            assert_eq!(found.name, "u64");
            assert!(expected.name.ends_with("Other8"), "{}", expected.name);
        }
        other => panic!("Other8 on a u64 bus: {other:?}"),
    }
    let text = e.to_string();
    assert!(text.contains("u64") && text.contains("Other8"), "{text}");

    // A publisher of another type may not attach either.
    assert!(matches!(
        attach_err::<u32>(bus.name()),
        OpenError::TypeMismatch { .. }
    ));
    assert!(matches!(
        attach_err::<Other8>(bus.name()),
        OpenError::TypeMismatch { .. }
    ));

    // Raw subscribers take any type; the right type opens.
    let raw = Subscriber::<[u8]>::open(bus.name(), &opts()).expect("raw open");
    assert_eq!(raw.msg_size(), 8);
    drop(raw);
    drop(Subscriber::<u64>::open(bus.name(), &opts()).expect("u64 open"));
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn impossible_geometry_is_refused_as_invalid_geometry() {
    let (bus, st) = valid_bus("geometry");
    let h = st.raw_header();
    let page = h.page_size;
    let good = std::fs::read(bus.path()).unwrap();
    let restore = || write_at(bus.path(), 0, &good[..page as usize]);
    // (field, value, width in bytes, what the message must mention)
    let cases: [(usize, u64, usize, &str); 10] = [
        (header::CAPACITY, 3, 8, "capacity 3"),
        (header::CAPACITY, 0, 8, "capacity 0"),
        (header::CAPACITY, 1 << 40, 8, "do not fit"),
        (header::PAGE_SIZE, 1000, 4, "page size 1000"),
        (header::PAGE_SIZE, 0, 4, "page size 0"),
        (header::CONTROL_OFFSET, 0, 8, "control page at 0"),
        (header::DATA_OFFSET, 3 * page, 8, "data pages at"),
        (header::SLOT_SIZE, 8, 4, "slot size 8"),
        (header::MSG_SIZE, 0, 4, "message size 0"),
        (header::TOTAL_LEN, u64::MAX, 8, "too large"),
    ];
    for (field, value, width, said) in cases {
        restore();
        match width {
            4 => patch_u32(bus.path(), field as u64, value as u32),
            _ => patch_u64(bus.path(), field as u64, value),
        }
        every_opener_says(bus.name(), &[said.to_owned()], |e| {
            matches!(e, OpenError::InvalidGeometry(_))
        });
    }
    restore();
    stat::stat(bus.name()).expect("the restored header is valid again");
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn an_empty_file_is_not_initialized_after_the_init_timeout() {
    let bus = BusName::new("empty");
    std::fs::write(bus.path(), b"").unwrap();
    let path = bus.path().display().to_string();
    every_opener_says(
        bus.name(),
        &[path, "not initialized".into()],
        |e| matches!(e, OpenError::NotInitialized { path, .. } if path == bus.path()),
    );
    match subscriber_err::<u64>(bus.name()) {
        OpenError::NotInitialized { waited, .. } => {
            assert!(waited >= Duration::from_millis(50), "waited {waited:?}")
        }
        e => panic!("{e:?}"),
    }
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_half_built_bus_is_not_initialized_after_the_init_timeout() {
    let bus = BusName::new("building");
    let mut bytes = wire::MAGIC_BUILDING.to_le_bytes().to_vec();
    bytes.resize(3 * 4096, 0);
    std::fs::write(bus.path(), &bytes).unwrap();
    let path = bus.path().display().to_string();
    every_opener_says(bus.name(), &[path], |e| {
        matches!(e, OpenError::NotInitialized { .. })
    });
    // `list` shows it for what it is.
    let all = stat::list(bus.path().parent().unwrap()).unwrap();
    let l = all
        .iter()
        .find(|l| l.path == bus.path())
        .expect("a half-built segment is listed");
    assert!(matches!(l.state, Err(OpenError::NotInitialized { .. })));
    assert!(l.is_abandoned());
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_missing_bus_is_not_found() {
    let bus = BusName::new("missing");
    let path = bus.path().display().to_string();
    every_opener_says(
        bus.name(),
        &[path],
        |e| matches!(e, OpenError::NotFound { path } if path == bus.path()),
    );
    assert!(matches!(
        shmbus::remove(bus.name()),
        Err(OpenError::NotFound { .. })
    ));
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_symlink_to_a_valid_bus_is_never_followed() {
    let (bus, _) = valid_bus("target");
    let link = BusName::new("link");
    std::os::unix::fs::symlink(bus.path(), link.path()).unwrap();
    let path = link.path().display().to_string();
    every_opener_says(
        link.name(),
        &[path, "symbolic link".into()],
        |e| matches!(e, OpenError::Symlink { path } if path == link.path()),
    );
    // Nor created through: the target stays as it was.
    let before = std::fs::read(bus.path()).unwrap();
    match Publisher::<u64>::create(link.name(), &BusOptions::new(16)) {
        Err(CreateError::AlreadyExists { path }) => assert_eq!(path, link.path()),
        Err(e) => panic!("create over a symlink: {e:?}"),
        Ok(_) => panic!("create over a symlink succeeded"),
    }
    assert_eq!(std::fs::read(bus.path()).unwrap(), before);
    link.finish();
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_device_file_is_not_a_file() {
    // A name with a slash is a path, used as given.
    every_opener_says(
        "/dev/null",
        &["/dev/null".into(), "not a regular file".into()],
        |e| matches!(e, OpenError::NotAFile { path } if path == Path::new("/dev/null")),
    );
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_directory_is_not_a_file_to_stat() {
    let dir = common::ShmDir::new("a-dir");
    let name = dir.path().to_str().unwrap().to_owned();
    let e = stat_err(&name);
    assert!(
        matches!(&e, OpenError::NotAFile { path } if path == dir.path()),
        "{e:?}"
    );
    assert!(e.to_string().contains(&name), "{e}");
    dir.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_directory_is_not_a_file_to_subscribers_and_publishers() {
    let dir = common::ShmDir::new("a-dir");
    let name = dir.path().to_str().unwrap().to_owned();
    every_opener_says(
        &name,
        &[name.clone(), "not a regular file".into()],
        |e| matches!(e, OpenError::NotAFile { path } if path == dir.path()),
    );
    dir.finish();
}

fn make_fifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo: {}", std::io::Error::last_os_error());
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_fifo_is_not_a_file_to_subscribers_and_publishers() {
    let dir = common::ShmDir::new("fifo-dir");
    let fifo = dir.path().join("fifo");
    make_fifo(&fifo);
    let name = fifo.to_str().unwrap();
    // Opened read-write, which Linux allows on a FIFO without blocking.
    for (who, e) in [
        ("Subscriber::open", subscriber_err::<u64>(name)),
        ("Subscriber::<[u8]>::open", raw_err(name)),
        ("Publisher::attach", attach_err::<u64>(name)),
    ] {
        assert!(
            matches!(&e, OpenError::NotAFile { path } if path == &fifo),
            "{who}: {e:?}"
        );
    }
    dir.finish();
}

/// Runs `f` on a thread; if it has not returned after `limit`, opens the
/// FIFO at `fifo` read-write (which releases any `open` blocked on it) and
/// reports that it blocked.
fn blocks_on_fifo<T: Send + 'static>(
    fifo: &Path,
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> (T, bool) {
    let (tx, rx) = std::sync::mpsc::channel();
    let worker = std::thread::spawn(move || {
        let out = f();
        let _ = tx.send(());
        out
    });
    let blocked = rx.recv_timeout(limit).is_err();
    let mut unblockers = Vec::new();
    while blocked && !worker.is_finished() {
        unblockers.push(
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(fifo)
                .unwrap(),
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    (worker.join().unwrap(), blocked)
}

#[test]
#[cfg_attr(miri, ignore)]
fn inspecting_a_fifo_or_a_directory_holding_one_does_not_block() {
    let dir = common::ShmDir::new("fifo-dir");
    let fifo = dir.path().join("fifo");
    make_fifo(&fifo);
    // Any user can put a FIFO in /dev/shm: `stat` of it, and `list` (so
    // `shmbus ls` and `clean`) of a directory holding one, must not block.
    let name = fifo.to_str().unwrap().to_owned();
    let (r, stat_blocked) = blocks_on_fifo(&fifo, Duration::from_secs(10), move || {
        stat::stat(&name).map(|_| ()).map_err(|e| e.to_string())
    });
    let d = dir.path().to_owned();
    let (l, list_blocked) = blocks_on_fifo(&fifo, Duration::from_secs(10), move || {
        stat::list(&d).map(|v| v.len()).map_err(|e| e.to_string())
    });
    assert!(
        !stat_blocked,
        "stat blocked opening a FIFO (then returned {r:?})"
    );
    assert!(
        !list_blocked,
        "list blocked opening a FIFO (then returned {l:?})"
    );
    assert!(r.unwrap_err().contains("not a regular file"));
    assert_eq!(l, Ok(0));
    dir.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn invalid_names_are_name_errors() {
    let long = "a".repeat(256);
    for (name, expected) in [
        ("", NameError::Empty),
        (".", NameError::Reserved(".".into())),
        ("..", NameError::Reserved("..".into())),
        ("a\0b", NameError::Nul),
        (long.as_str(), NameError::TooLong(256)),
    ] {
        for (who, e) in from_every_opener(name) {
            assert!(
                matches!(&e, OpenError::Name(n) if *n == expected),
                "{who}({name:?}): {e:?}"
            );
        }
        match Publisher::<u64>::create(name, &BusOptions::new(16)) {
            Err(CreateError::Name(n)) => assert_eq!(n, expected),
            Err(e) => panic!("create({name:?}): {e:?}"),
            Ok(_) => panic!("create({name:?}) succeeded"),
        }
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn create_never_reuses_an_existing_file_and_leaves_nothing_when_it_fails() {
    let (bus, _) = valid_bus("exists");
    let before = std::fs::read(bus.path()).unwrap();
    match Publisher::<u64>::create(bus.name(), &BusOptions::new(64)) {
        Err(CreateError::AlreadyExists { path }) => assert_eq!(path, bus.path()),
        Err(e) => panic!("{e:?}"),
        Ok(_) => panic!("create over an existing bus succeeded"),
    }
    assert_eq!(std::fs::read(bus.path()).unwrap(), before, "untouched");

    let fresh = BusName::new("bad-geometry");
    for cap in [0, 3, 1 << 62] {
        match Publisher::<u64>::create(fresh.name(), &BusOptions::new(cap)) {
            Err(CreateError::InvalidGeometry(
                GeometryError::Capacity { capacity } | GeometryError::TooLarge { capacity, .. },
            )) => {
                assert_eq!(capacity, cap);
            }
            Err(e) => panic!("capacity {cap}: {e:?}"),
            Ok(_) => panic!("capacity {cap} accepted"),
        }
        assert!(!fresh.path().exists(), "a failed create left a file");
    }
    fresh.finish();
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn an_impossible_pool_is_refused_as_invalid_geometry_by_every_pool_opener() {
    use shmbus::pool;
    let bus = BusName::new("pool-geometry");
    let opts8 = shmbus::pool::Options::new(8, 4096, 16);
    drop(pool::Publisher::<[u8]>::create(bus.name(), &opts8).expect("create"));
    let good = std::fs::read(bus.path()).unwrap();
    let page = stat::stat(bus.name()).unwrap().raw_header().page_size as usize;
    let restore = || write_at(bus.path(), 0, &good[..page]);
    let flags = u32::from_le_bytes(good[header::FLAGS..header::FLAGS + 4].try_into().unwrap());
    // (field, value, width in bytes, what the message must mention)
    let cases: [(usize, u64, usize, &str); 5] = [
        (header::POOL_BLOCKS, 8, 8, "needs more blocks than slots"),
        (header::POOL_BLOCKS, 17, 8, "past the segment"),
        (header::POOL_BLOCKS, 1 << 40, 8, "blocks"),
        (header::POOL_BLOCK_SIZE, 100, 8, "100"),
        (
            header::FLAGS,
            // Flag bit 0, `JOURNALED` (LAYOUT §4).
            u64::from(flags | 1),
            4,
            "a pool has no journal",
        ),
    ];
    for (field, value, width, said) in cases {
        restore();
        match width {
            4 => patch_u32(bus.path(), field as u64, value as u32),
            _ => patch_u64(bus.path(), field as u64, value),
        }
        let errs = [
            (
                "PoolSubscriber::open",
                pool::Subscriber::<[u8]>::open(bus.name(), &opts()).err(),
            ),
            (
                "PoolPublisher::attach",
                match pool::Publisher::<[u8]>::attach(bus.name(), &opts()) {
                    Err(AttachError::Open(e)) => Some(e),
                    Err(other) => panic!("attach: {other:?}"),
                    Ok(_) => None,
                },
            ),
            ("stat", stat::stat(bus.name()).err()),
        ];
        for (who, err) in errs {
            match err {
                Some(OpenError::InvalidGeometry(m)) if m.contains(said) => {}
                other => panic!(
                    "{who} with {field}={value}: expected InvalidGeometry naming {said:?}, got {other:?}"
                ),
            }
        }
    }
    restore();
    pool::Subscriber::<[u8]>::open(bus.name(), &opts())
        .expect("the restored header is valid again");
    bus.finish();
}
