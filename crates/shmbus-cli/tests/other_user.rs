//! What another user plants is never adopted: a bus another user made
//! first is not taken over by `bridge in --create` nor published into by
//! `replay`, and a journal another user left at a path is not continued by
//! `create --journal` (nor by `bridge in --journal`). And a member of a
//! team's directory who cleans it is told of a bus there it may not open.
//! The other user is uid 65534 (`nobody`), run through `setpriv`, as an
//! attacker (or a team member) on the same machine would be; the tests
//! need root for that and skip elsewhere (`common::skip`: under CI's
//! strict skips, which run as root, a skip fails).

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{BusName, CliOutput, Finished, run, run_shmbus as shmbus};

const NOBODY: &str = "65534";

/// Whether this process can run a command as uid 65534 (root can); where
/// it cannot, the test skips (`common::skip`, which fails under CI).
fn can_be_nobody() -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    common::skip(
        common::Need::Root,
        "only root can run a command as uid 65534",
    );
    false
}

/// `shmbus ARGS` as uid/gid 65534 with no other group.
fn nobody(args: &[&str]) -> std::process::Command {
    let mut all = vec![
        "--reuid",
        NOBODY,
        "--regid",
        NOBODY,
        "--clear-groups",
        "--",
        env!("CARGO_BIN_EXE_shmbus"),
    ];
    all.extend_from_slice(args);
    shmbus_testkit::command("setpriv", &all)
}

/// `shmbus ARGS` run to its end as uid 65534.
fn as_nobody(args: &[&str]) -> Finished {
    run(nobody(args))
}

/// `shmbus create BUS` of 16-byte messages journaled at `journal`.
fn create_journaled(bus: &str, journal: &Path) -> Finished {
    shmbus(&[
        "create",
        bus,
        "--msg-size",
        "16",
        "--capacity",
        "8",
        "--journal",
        text(journal),
    ])
}

/// A directory every user may create files in (as /tmp is), removed with
/// its contents on drop.
struct SharedDir(PathBuf);

impl SharedDir {
    fn new(label: &str) -> SharedDir {
        let path = std::env::temp_dir().join(format!("{}{label}", shmbus_testkit::unique_prefix()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir(&path).expect("a directory");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o1777)).expect("chmod");
        SharedDir(path)
    }

    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for SharedDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn text(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// A journal of three records at `path`, owned by nobody (mode 0600), its
/// bus gone again.
fn plant_journal(path: &Path) {
    let planted = BusName::new("planted");
    as_nobody(&[
        "create",
        planted.name(),
        "--msg-size",
        "16",
        "--capacity",
        "8",
        "--journal",
        text(path),
    ])
    .assert_success();
    let mut publish = nobody(&["pub", planted.name()]);
    publish.stdin(std::process::Stdio::piped());
    common::run_with_input(publish, b"planted-1\nplanted-2\nplanted-3\n").assert_success();
    as_nobody(&["rm", planted.name()]).assert_success();
    let meta = std::fs::metadata(path).expect("the planted journal");
    assert_eq!(std::os::unix::fs::MetadataExt::uid(&meta), 65534);
    planted.finish();
}

#[test]
fn create_journal_refuses_to_continue_a_journal_another_user_planted_and_names_its_owner() {
    if !can_be_nobody() {
        return;
    }
    let dir = SharedDir::new("planted-journal");
    let journal = dir.file("bus.journal");
    plant_journal(&journal);
    let bus = BusName::new("victim");
    let out = create_journaled(bus.name(), &journal);
    out.assert_error(1, "owned by uid 65534");
    assert!(
        !bus.path().exists(),
        "no bus is made over a planted journal"
    );
    // Its records were never taken for the bus's history, nor rewritten.
    let meta = std::fs::metadata(&journal).expect("the journal is still there");
    assert_eq!(meta.permissions().mode() & 0o7777, 0o600);

    // Root's own journal, left writable by every user, is refused too:
    // anyone could have rewritten it.
    let open = dir.file("open.journal");
    let first = BusName::new("open-first");
    create_journaled(first.name(), &open).assert_success();
    shmbus(&["rm", first.name()]).assert_success();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    create_journaled(bus.name(), &open).assert_error(1, "mode 666");
    // Made private again, it is the caller's own and is continued.
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    create_journaled(bus.name(), &open).assert_success();
    shmbus(&["rm", bus.name()]).assert_success();
    bus.finish();
    first.finish();
}

#[test]
fn bridge_in_create_refuses_to_adopt_a_bus_another_user_made_first() {
    if !can_be_nobody() {
        return;
    }
    let bus = BusName::new("squatted");
    as_nobody(&[
        "create",
        bus.name(),
        "--msg-size",
        "32",
        "--capacity",
        "256",
        "--mode",
        "666",
    ])
    .assert_success();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a loopback port")
        .port();
    let endpoint = format!("tcp/127.0.0.1:{port}");
    let key = format!("shmbus-test/{}", bus.name());
    // Its own runtime directory: a bridge that wrongly ran on (killed by
    // the watchdog) leaves its status file there, not in the machine's.
    let runtime = shmbus_testkit::RuntimeDir::new("runtime");
    let bridge_in = || {
        let mut cmd = common::shmbus(&[
            "bridge",
            "in",
            &key,
            bus.name(),
            "--create",
            "4096",
            "--listen",
            &endpoint,
        ]);
        runtime.apply(&mut cmd);
        run(cmd)
    };
    let started = std::time::Instant::now();
    let out = bridge_in();
    out.assert_error(1, "owned by uid 65534");
    assert!(
        !out.stdout().contains("listening"),
        "refused before it listens: {}",
        out.stdout()
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    as_nobody(&["rm", bus.name()]).assert_success();

    // Root's own bus, but readable by every user: not what the bridge
    // would have made (0600), so not adopted either.
    shmbus(&[
        "create",
        bus.name(),
        "--msg-size",
        "32",
        "--capacity",
        "256",
        "--mode",
        "644",
    ])
    .assert_success();
    bridge_in().assert_error(1, "mode 644");
    shmbus(&["rm", bus.name()]).assert_success();
    bus.finish();
}

#[test]
fn a_members_clean_of_a_team_directory_names_a_bus_it_may_not_open_and_removes_the_others() {
    if !can_be_nobody() {
        return;
    }
    // The team's directory: setgid, not sticky, of nobody's group, so
    // that nobody (the member) may remove any file in it.
    let team = common::ShmDir::new("team");
    std::os::unix::fs::chown(team.path(), Some(0), Some(65534)).expect("chown");
    std::fs::set_permissions(team.path(), std::fs::Permissions::from_mode(0o2770)).expect("chmod");
    let create = |name: &str, mode: &str| {
        let bus = team.bus(name);
        shmbus(&[
            "create",
            &bus,
            "--msg-size",
            "16",
            "--capacity",
            "8",
            "--mode",
            mode,
        ])
        .assert_success();
        bus
    };
    // Root's, both dead: one the group may open, one only root may.
    let shared = create("shared", "660");
    let private = create("private", "600");
    let out = as_nobody(&["clean", "--dir", team.dir()]);
    assert_eq!(out.code(), Some(0), "{out:?}");
    assert_eq!(
        out.stdout(),
        format!("removed {shared}\nremoved 1 segment\n"),
        "{out:?}"
    );
    assert_eq!(
        out.stderr,
        format!(
            "shmbus: {private}: left alone: cannot open it to tell whether it is an abandoned \
             bus: permission denied: the file (uid 0, gid 65534, mode 600) does not let you \
             open it (its owner or root may clean it)\n"
        ),
        "one line naming the bus it may not open, and why"
    );
    assert!(Path::new(&private).exists());
    team.finish();
}

#[test]
fn replay_refuses_to_publish_into_a_bus_another_user_made_first() {
    if !can_be_nobody() {
        return;
    }
    let bus = BusName::new("squatted-replay");
    let create = |mode: &'static str| {
        vec![
            "create",
            bus.name(),
            "--msg-size",
            "16",
            "--slots",
            "64",
            "--mode",
            mode,
        ]
    };
    as_nobody(&create("666")).assert_success();
    // A recording of one plain bus of 16-byte messages.
    let dir = SharedDir::new("replay");
    let file = dir.file("r.rec");
    let mut rec = shmbus::record::Recorder::new(Vec::new()).unwrap();
    let id = rec
        .add_bus("r", shmbus::record::RecordedKind::Bus, 16)
        .unwrap();
    for i in 0..3u64 {
        rec.message(id, i, i * 1000, 0, &[b'x'; 16]).unwrap();
    }
    std::fs::write(&file, rec.into_inner()).unwrap();
    let map = format!("r={}", bus.name());
    for target in [["--to", bus.name()], ["--map", map.as_str()]] {
        let mut args = vec!["replay", text(&file), "--speed", "max"];
        args.extend(target);
        shmbus(&args).assert_error(1, "owned by uid 65534");
    }
    let stat = shmbus::stat::stat(bus.name()).expect("the squatter's bus");
    assert_eq!(stat.published, 0, "nothing published into it");
    as_nobody(&["rm", bus.name()]).assert_success();

    // Root's own bus, readable by every user: not what the replay makes
    // (0600), so not adopted either, unless the replay is given that mode.
    shmbus(&create("644")).assert_success();
    let replay = |extra: &[&str]| {
        let mut args = vec!["replay", text(&file), "--speed", "max", "--to", bus.name()];
        args.extend_from_slice(extra);
        shmbus(&args)
    };
    replay(&[]).assert_error(1, "mode 644");
    replay(&["--mode", "644"]).assert_success();
    assert_eq!(shmbus::stat::stat(bus.name()).unwrap().published, 3);
    shmbus(&["rm", bus.name()]).assert_success();
    bus.finish();
}
