//! Who can open a bus: another user (uid 65534, `nobody`) is refused a
//! bus of the default mode 0600 with a typed permission error, by every
//! opener, and let in only where the creator asked for group or world
//! access. Nor can that user create over a name that exists.
//!
//! The child drops to the other user itself (setgroups, setresgid,
//! setresuid, as `setpriv --reuid 65534` would) before it opens anything.
//! Needs root to do so; elsewhere the test skips (`shmbus_testkit::skip`).

mod common;

use common::{BusName, param, print_result, role, spawn_child};
use shmbus::stream::{Consumer, Producer};
use shmbus::{
    AttachError, BusOptions, CreateError, OpenError, OpenOptions, Publisher, Received, Subscriber,
};

const NOBODY: u32 = 65534;

fn outcome<T>(r: Result<T, OpenError>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(OpenError::PermissionDenied { .. }) => "denied".into(),
        Err(e) => format!("other:{e:?}").replace(char::is_whitespace, "_"),
    }
}

fn attach_outcome<T>(r: Result<T, AttachError>) -> String {
    match r {
        Err(AttachError::Open(e)) => outcome::<()>(Err(e)),
        Ok(_) => "ok".into(),
        Err(e) => format!("other:{e:?}").replace(char::is_whitespace, "_"),
    }
}

/// Becomes uid 65534 with gid SHMBUS_GID and no other group, then tries
/// every opener on the bus SHMBUS_BUS (of kind SHMBUS_KIND) and create on
/// its name.
#[test]
fn as_child_open_as_another_user() {
    role("other_user", || {
        let gid: u32 = param("SHMBUS_GID");
        // SAFETY: plain system calls on this single-threaded child's own
        // credentials; each result is checked.
        unsafe {
            assert_eq!(libc::setgroups(0, std::ptr::null()), 0, "setgroups");
            assert_eq!(libc::setresgid(gid, gid, gid), 0, "setresgid");
            assert_eq!(libc::setresuid(NOBODY, NOBODY, NOBODY), 0, "setresuid");
        }
        let name: String = param("SHMBUS_BUS");
        let opts = OpenOptions::default();
        let created = match Publisher::<u64>::create(&name, &BusOptions::new(8)) {
            Err(CreateError::AlreadyExists { .. }) => "exists".to_owned(),
            Err(e) => format!("other:{e:?}").replace(char::is_whitespace, "_"),
            Ok(_) => "created".into(),
        };
        let mut fields = vec![
            ("uid", NOBODY.to_string()),
            ("stat", outcome(shmbus::stat::stat(&name))),
            ("create", created),
        ];
        if param::<String>("SHMBUS_KIND") == "stream" {
            fields.push((
                "consumer",
                attach_outcome(Consumer::<[u8]>::attach(&name, &opts)),
            ));
            fields.push((
                "producer",
                attach_outcome(Producer::<[u8]>::attach(&name, &opts)),
            ));
        } else {
            let sub = Subscriber::<u64>::open(&name, &opts.clone().start(shmbus::Start::Oldest));
            let first = match sub {
                Ok(mut s) => match s.try_recv() {
                    Some(Received::Message(v)) => v.to_string(),
                    other => format!("{other:?}").replace(char::is_whitespace, "_"),
                },
                Err(_) => "none".into(),
            };
            fields.push(("subscriber", outcome(Subscriber::<u64>::open(&name, &opts))));
            fields.push(("first", first));
            fields.push((
                "raw",
                outcome(shmbus::Subscriber::<[u8]>::open(&name, &opts)),
            ));
            fields.push((
                "publisher",
                attach_outcome(Publisher::<u64>::attach(&name, &opts)),
            ));
        }
        print_result(&fields);
    });
}

fn as_other_user(bus: &BusName, kind: &str, gid: u32) -> common::Report {
    let f = spawn_child(
        "as_child_open_as_another_user",
        "other_user",
        &[
            ("SHMBUS_BUS", bus.name().to_owned()),
            ("SHMBUS_KIND", kind.to_owned()),
            ("SHMBUS_GID", gid.to_string()),
        ],
    )
    .wait_success();
    let stdout = f.stdout();
    let line = stdout.lines().find(|l| l.starts_with("RESULT"));
    println!(
        "as uid {NOBODY}, gid {gid}, on a {kind}: {}",
        line.unwrap_or("-")
    );
    f.result()
}

fn root() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        shmbus_testkit::skip(
            shmbus_testkit::Need::Root,
            format!("only root can run a child as uid {NOBODY}"),
        );
    }
    root
}

/// A bus of `mode` holding one message (42), created by this process.
fn bus_of_mode(label: &str, mode: u32) -> (BusName, Publisher<u64>) {
    let bus = BusName::new(label);
    let mut p =
        Publisher::<u64>::create(bus.name(), &BusOptions::new(8).mode(mode)).expect("create");
    p.publish(&42);
    (bus, p)
}

#[test]
#[cfg_attr(miri, ignore)]
fn another_user_is_refused_a_default_bus_with_a_permission_error_by_every_opener() {
    if !root() {
        return;
    }
    let (bus, p) = bus_of_mode("other-0600", 0o600);
    let r = as_other_user(&bus, "broadcast", NOBODY);
    for opener in ["stat", "subscriber", "raw", "publisher"] {
        assert_eq!(r.raw(opener), Some("denied"), "{opener}");
    }
    assert_eq!(
        r.raw("create"),
        Some("exists"),
        "create never reuses a name"
    );
    drop(p);

    let stream = BusName::new("other-stream-0600");
    let producer = Producer::<[u8]>::create(stream.name(), &shmbus::stream::Options::new(4096))
        .expect("create");
    let r = as_other_user(&stream, "stream", NOBODY);
    for opener in ["stat", "consumer", "producer"] {
        assert_eq!(r.raw(opener), Some("denied"), "{opener}");
    }
    assert_eq!(r.raw("create"), Some("exists"));
    drop(producer);
    stream.finish();
    bus.finish();
}

#[test]
#[cfg_attr(miri, ignore)]
fn group_access_is_given_only_when_asked_for_and_world_access_likewise() {
    if !root() {
        return;
    }
    // 0660: the creator's group (root's, gid 0) is let in; others are not.
    let (bus, p) = bus_of_mode("other-0660", 0o660);
    let in_group = as_other_user(&bus, "broadcast", 0);
    assert_eq!(in_group.raw("subscriber"), Some("ok"));
    assert_eq!(in_group.raw("first"), Some("42"));
    let outside = as_other_user(&bus, "broadcast", NOBODY);
    assert_eq!(outside.raw("subscriber"), Some("denied"));
    drop(p);
    bus.finish();

    // 0600: not even the group.
    let (bus, p) = bus_of_mode("other-0600-group", 0o600);
    let in_group = as_other_user(&bus, "broadcast", 0);
    assert_eq!(in_group.raw("subscriber"), Some("denied"));
    drop(p);
    bus.finish();

    // 0666: anyone may subscribe (and, the bus being writable, publish once
    // the publisher is gone).
    let (bus, p) = bus_of_mode("other-0666", 0o666);
    let anyone = as_other_user(&bus, "broadcast", NOBODY);
    assert_eq!(anyone.raw("subscriber"), Some("ok"));
    assert_eq!(anyone.raw("first"), Some("42"));
    assert_eq!(anyone.raw("stat"), Some("ok"));
    drop(p);
    bus.finish();
}
