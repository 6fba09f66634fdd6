//! Every error enum's variants and their kinds, one by one: every kind's
//! errors, so this sits at the crate's root, above the kinds it names.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use crate::blackboard::{GetError, PutError, RemoveError};
use crate::bus::{Abandoned, ManyPublishError, PublishError, TryPublishError};
use crate::error::*;
use crate::journal::{self, AppendError, CloseError, JoinError, SnapshotError};
use crate::pool::{self, Census, LoanError};
use crate::stream::{PopError, PushError};
use crate::wire::{Kind, Publishers, TypeFingerprint};
use ErrorKind as K;

fn path() -> PathBuf {
    PathBuf::from("/dev/shm/x")
}

fn io() -> io::Error {
    io::Error::from_raw_os_error(libc::EIO)
}

fn fingerprint() -> TypeFingerprint {
    TypeFingerprint {
        size: 8,
        align: 8,
        name_hash: 1,
        name: "u64".into(),
    }
}

fn open_errors() -> Vec<(OpenError, ErrorKind)> {
    let waited = Duration::from_secs(1);
    vec![
        (OpenError::Name(NameError::Empty), K::InvalidName),
        (OpenError::NotFound { path: path() }, K::NotFound),
        (OpenError::PermissionDenied { path: path() }, K::Permission),
        (
            OpenError::NotOwn {
                path: path(),
                owner: 1,
                mode: 0o666,
                uid: 2,
                max_mode: 0o600,
            },
            K::Other,
        ),
        (OpenError::Symlink { path: path() }, K::Other),
        (OpenError::NotAFile { path: path() }, K::Other),
        (
            OpenError::NotInitialized {
                path: path(),
                waited,
            },
            K::TimedOut,
        ),
        (
            OpenError::BadMagic {
                path: path(),
                found: 0,
                expected: 1,
            },
            K::Other,
        ),
        (
            OpenError::VersionMismatch {
                found: 0,
                expected: 1,
            },
            K::Other,
        ),
        (
            OpenError::WrongKind {
                found: Kind::Stream,
                expected: Kind::Broadcast,
            },
            K::WrongKind,
        ),
        (
            OpenError::TypeMismatch {
                found: fingerprint(),
                expected: fingerprint(),
            },
            K::TypeMismatch,
        ),
        (
            OpenError::Truncated {
                path: path(),
                len: 0,
                expected: 1,
            },
            K::Corrupt,
        ),
        (OpenError::InvalidGeometry("x".into()), K::Corrupt),
        (
            OpenError::Locked {
                path: path(),
                waited,
            },
            K::TimedOut,
        ),
        (OpenError::Mlock(io()), K::Other),
        (OpenError::PoolMismatch { found: true }, K::WrongKind),
        (OpenError::RegistryFull { entries: 1 }, K::Other),
        (
            OpenError::Lossless(crate::bus::LosslessRefused::NotAllowed),
            K::LosslessRefused,
        ),
        (
            OpenError::Io {
                what: "open",
                source: io(),
            },
            K::Other,
        ),
    ]
}

fn create_errors() -> Vec<(CreateError, ErrorKind)> {
    vec![
        (CreateError::Name(NameError::Nul), K::InvalidName),
        (CreateError::AlreadyExists { path: path() }, K::Exists),
        (
            CreateError::PermissionDenied { path: path() },
            K::Permission,
        ),
        (
            CreateError::Group {
                path: path(),
                gid: 1,
                source: io(),
            },
            K::Permission,
        ),
        (
            CreateError::InvalidGeometry(GeometryError::RawNeedsMsgSize),
            K::InvalidArgument,
        ),
        (
            CreateError::NoSpace {
                path: path(),
                len: 1,
            },
            K::Other,
        ),
        (CreateError::Mlock(io()), K::Other),
        (
            CreateError::HugePages(HugePageError::ShmemDenied {
                found: "deny".into(),
            }),
            K::Other,
        ),
        (CreateError::NoDirectory { path: path() }, K::NotFound),
        (
            CreateError::File {
                path: path(),
                source: io(),
            },
            K::Other,
        ),
        (
            CreateError::Io {
                what: "x",
                source: io(),
            },
            K::Other,
        ),
    ]
}

#[test]
fn every_open_and_create_error_has_the_kind_python_raises_for_it() {
    for (e, kind) in open_errors() {
        assert_eq!(e.kind(), kind, "{e:?}");
    }
    for (e, kind) in create_errors() {
        assert_eq!(e.kind(), kind, "{e:?}");
    }
}

#[test]
fn an_attach_error_has_its_open_errors_kind_or_its_own() {
    for (e, kind) in open_errors() {
        assert_eq!(AttachError::Open(e).kind(), kind);
    }
    let cases = [
        (
            AttachError::RoleTaken {
                role: Role::Publisher,
                pid: 1,
            },
            K::RoleTaken,
        ),
        (
            AttachError::RoleTaken {
                role: Role::Consumer,
                pid: 1,
            },
            K::RoleTaken,
        ),
        (AttachError::Journaled { path: path() }, K::WrongKind),
        (
            AttachError::WrongMode {
                role: Role::Writer,
                found: Publishers::One,
                expected: Publishers::Many,
            },
            K::WrongKind,
        ),
        (AttachError::PidNamespace { bus: 1, ours: 2 }, K::Other),
    ];
    for (e, kind) in cases {
        assert_eq!(e.kind(), kind, "{e:?}");
    }
}

#[test]
fn a_wrong_mode_names_publishers_for_a_bus_and_writers_for_a_blackboard() {
    let (one, many) = (Publishers::One, Publishers::Many);
    let bus = AttachError::WrongMode {
        role: Role::Publisher,
        found: one,
        expected: many,
    };
    assert_eq!(
        bus.to_string(),
        "bus is single-publisher, a many-publisher publisher cannot attach to it"
    );
    let board = AttachError::WrongMode {
        role: Role::Writer,
        found: many,
        expected: one,
    };
    assert_eq!(
        board.to_string(),
        "blackboard is made for many writers (`ManyWriter`), expected one made for one writer (`Writer`)"
    );
    let taken = AttachError::RoleTaken {
        role: Role::Consumer,
        pid: 7,
    };
    assert_eq!(
        taken.to_string(),
        "stream already has a live consumer (pid 7)"
    );
}

#[test]
fn publish_loan_and_receive_errors_have_their_kinds() {
    let abandoned = Abandoned {
        seq: 1,
        unblock: Duration::from_secs(1),
    };
    assert_eq!(PublishError::TooLong { len: 2, max: 1 }.kind(), K::TooLong);
    assert_eq!(
        ManyPublishError::TooLong { len: 2, max: 1 }.kind(),
        K::TooLong
    );
    assert_eq!(ManyPublishError::Abandoned(abandoned).kind(), K::Abandoned);
    let full = TryPublishError::Full {
        entry: 3,
        pid: Some(7),
    };
    assert_eq!(full.kind(), K::Full);
    assert_eq!(
        TryPublishError::TooLong { len: 2, max: 1 }.kind(),
        K::TooLong
    );
    assert_eq!(abandoned.kind(), K::Abandoned);
    assert_eq!(LoanError::TooLong { len: 2, max: 1 }.kind(), K::TooLong);
    let census = Census::default();
    assert_eq!(LoanError::Exhausted { census }.kind(), K::PoolExhausted);
    let held = pool::RecvError::TooManySamples { max: 8 };
    assert_eq!(held.kind(), K::TooManySamples);
}

#[test]
fn stream_errors_have_their_kinds() {
    let wait = Duration::from_millis(1);
    let push = [
        (PushError::TooLong { len: 2, max: 1 }, K::TooLong),
        (PushError::Full, K::TimedOut),
        (PushError::TimedOut(wait), K::TimedOut),
        (PushError::PeerGone { pid: 1 }, K::PeerGone),
        (
            PushError::CorruptCursors {
                head: 0,
                tail: 0,
                capacity: 64,
                min_head: 0,
            },
            K::Corrupt,
        ),
    ];
    for (e, kind) in push {
        assert_eq!(e.kind(), kind, "{e:?}");
    }
    let pop = [
        (PopError::Empty, K::TimedOut),
        (PopError::TimedOut(wait), K::TimedOut),
        (PopError::PeerGone { pid: 1 }, K::PeerGone),
        (
            PopError::CorruptCursors {
                head: 0,
                tail: 0,
                capacity: 64,
            },
            K::Corrupt,
        ),
        (PopError::Corrupt { at: 0, header: 0 }, K::Corrupt),
        (
            PopError::RecordLength {
                at: 0,
                len: 3,
                expected: 8,
                type_name: "u64",
            },
            K::TypeMismatch,
        ),
    ];
    for (e, kind) in pop {
        assert_eq!(e.kind(), kind, "{e:?}");
    }
}

#[test]
fn a_blackboard_entry_busy_or_stuck_is_of_the_busy_or_stuck_kind_not_timed_out_or_peer_gone() {
    let get = [
        (GetError::Busy { entry: 1 }, K::Busy),
        (
            GetError::Stuck {
                entry: 1,
                version: 3,
            },
            K::Stuck,
        ),
        (GetError::Corrupt { entry: 1, tag: 9 }, K::Corrupt),
        (
            GetError::KeySize {
                found: 3,
                expected: 8,
            },
            K::InvalidArgument,
        ),
    ];
    for (e, kind) in get {
        assert_eq!(e.kind(), kind, "{e:?}");
    }
    let put = [
        (PutError::Full { keys: 8 }, K::Full),
        (
            PutError::KeySize {
                found: 3,
                expected: 8,
            },
            K::InvalidArgument,
        ),
        (
            PutError::ValueSize {
                found: 3,
                expected: 8,
            },
            K::InvalidArgument,
        ),
        (PutError::Busy { entry: 1 }, K::Busy),
    ];
    for (e, kind) in put {
        assert_eq!(e.kind(), kind, "{e:?}");
    }
    assert_eq!(RemoveError::Busy { entry: 1 }.kind(), K::Busy);
}

/// The kind's place in [`ErrorKind::ALL`]: a match with no `_` arm, so
/// a new kind does not compile until it is placed there.
fn position(kind: ErrorKind) -> usize {
    match kind {
        K::NotFound => 0,
        K::Exists => 1,
        K::Permission => 2,
        K::TypeMismatch => 3,
        K::WrongKind => 4,
        K::InvalidName => 5,
        K::InvalidArgument => 6,
        K::RoleTaken => 7,
        K::TooLong => 8,
        K::Abandoned => 9,
        K::TimedOut => 10,
        K::PoolExhausted => 11,
        K::TooManySamples => 12,
        K::PeerGone => 13,
        K::Corrupt => 14,
        K::NotJournaled => 15,
        K::Journal => 16,
        K::Full => 17,
        K::LosslessRefused => 18,
        K::Busy => 19,
        K::Stuck => 20,
        K::Other => 21,
    }
}

#[test]
fn every_kind_is_in_all_once_in_declaration_order() {
    for (i, kind) in ErrorKind::ALL.iter().enumerate() {
        assert_eq!(position(*kind), i, "{kind:?}");
    }
    // `Other` is placed last: a kind placed but missing from `ALL`
    // leaves it short.
    assert_eq!(ErrorKind::ALL.len(), position(K::Other) + 1);
}

fn journal_error() -> journal::OpenError {
    journal::OpenError::Sealed { path: path() }
}

#[test]
fn journal_errors_have_their_kinds() {
    assert_eq!(journal_error().kind(), K::Journal);
    let join = [
        (
            JoinError::Open(OpenError::NotFound { path: path() }),
            K::NotFound,
        ),
        (
            JoinError::NotJournaled { name: "x".into() },
            K::NotJournaled,
        ),
        (JoinError::PublisherGone { pid: 1 }, K::PeerGone),
        (
            JoinError::FlushTimeout {
                waited: Duration::from_secs(1),
            },
            K::TimedOut,
        ),
        (JoinError::FlushFailed, K::Journal),
        (JoinError::Journal(journal_error()), K::Journal),
        (JoinError::Cancelled, K::Other),
    ];
    for (e, kind) in join {
        assert_eq!(e.kind(), kind, "{e:?}");
    }
    let create = [
        (
            journal::CreateError::Create(CreateError::AlreadyExists { path: path() }),
            K::Exists,
        ),
        (journal::CreateError::Journal(journal_error()), K::Journal),
        (
            journal::CreateError::Snapshot(SnapshotError::Exists { path: path() }),
            K::InvalidArgument,
        ),
        (
            journal::CreateError::TooLarge {
                option: "chunk_bytes",
                value: 2,
                max: 1,
            },
            K::InvalidArgument,
        ),
    ];
    for (e, kind) in create {
        assert_eq!(e.kind(), kind, "{e:?}");
    }
    let attach = [
        (
            journal::AttachError::Attach(AttachError::RoleTaken {
                role: Role::Publisher,
                pid: 1,
            }),
            K::RoleTaken,
        ),
        (
            journal::AttachError::NotJournaled { name: "x".into() },
            K::NotJournaled,
        ),
        (journal::AttachError::Journal(journal_error()), K::Journal),
    ];
    for (e, kind) in attach {
        assert_eq!(e.kind(), kind, "{e:?}");
    }
    let append = [
        (AppendError::TooLong { len: 2, max: 1 }, K::TooLong),
        (
            AppendError::Full {
                path: path(),
                len: 1,
            },
            K::Journal,
        ),
        (
            AppendError::Io {
                path: path(),
                what: "x",
                source: io(),
            },
            K::Journal,
        ),
    ];
    for (e, kind) in append {
        assert_eq!(e.kind(), kind, "{e:?}");
    }
    let close = CloseError::Compaction {
        path: path(),
        reason: "x".into(),
    };
    assert_eq!(close.kind(), K::Journal);
}
