//! The journal's hardening, through the real `shmbus` binary:
//! short `pub --compact-after` runs keep the journal bounded; a FIFO, a
//! device or a symlink at the journal path is refused at once, naming what
//! was found; the journal gets exactly the bus's mode whatever the umask.
//!
//! Every run is under the watchdog of `common`; every file lives in a
//! private directory under /dev/shm, removed on drop.

mod common;

use common::{CliOutput, Finished, ShmDir, run_with_input};
use serde_json::Value;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::Path;

fn utf8(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// Runs `shmbus ARGS` with `input` on stdin (and `umask`, if given) to the
/// end, under the watchdog.
fn run(args: &[&str], input: &[u8], umask: Option<libc::mode_t>) -> Finished {
    let mut cmd = common::shmbus(args);
    if let Some(mask) = umask {
        // SAFETY: runs in the forked child before exec; umask(2) is
        // async-signal-safe and changes only that child.
        unsafe {
            cmd.pre_exec(move || {
                libc::umask(mask);
                Ok(())
            });
        }
    }
    run_with_input(cmd, input)
}

fn shmbus(args: &[&str]) -> Finished {
    run(args, b"", None)
}

fn create_journaled(bus: &str, journal: &Path, extra: &[&str], umask: Option<libc::mode_t>) {
    let args = [
        "create",
        bus,
        "--msg-size",
        "16",
        "--capacity",
        "8",
        "--journal",
        utf8(journal),
    ];
    run(&[&args[..], extra].concat(), b"", umask).assert_success();
}

/// The journal object of `stat --json`.
fn journal_json(bus: &str) -> Value {
    shmbus(&["stat", bus, "--json"]).assert_success().json()["journal"].clone()
}

/// The CLI keys a message by its first 8 bytes: these are the two keys.
const KEYS: [&str; 2] = ["key-aaaa", "key-bbbb"];

#[test]
fn forty_one_line_pub_runs_with_compact_after_5_over_2_keys_leave_at_most_keys_plus_4_records() {
    let dir = ShmDir::new("short-runs");
    let bus = dir.bus("bus");
    let journal = dir.file("journal");
    create_journaled(&bus, &journal, &[], None);
    let mut last = [None; 2];
    let mut n = 0u64;
    for round in 0..40 {
        // One line a run, two every fourth run.
        let mut input = String::new();
        for _ in 0..1 + u64::from(round % 4 == 0) {
            let key = (n % 2) as usize;
            input.push_str(&format!("{}={n}\n", KEYS[key]));
            last[key] = Some(n);
            n += 1;
        }
        run(
            &["pub", &bus, "--compact-after", "5"],
            input.as_bytes(),
            None,
        )
        .assert_success();
        // A run that reaches 5 records since the last compaction compacts
        // before it exits: at rest, one record per key plus at most 4.
        let j = journal_json(&bus);
        let records = j["records"].as_u64().expect("records");
        assert!(records <= 2 + 4, "{records} records after run {round}: {j}");
    }
    let j = journal_json(&bus);
    assert_eq!(j["snapshot_records"], 2, "{j}");
    assert_eq!(j["next"], n, "{j}");
    // And a joiner still gets each key's last value.
    let out = run(&["sub", &bus, "--bootstrap", "--timeout", "0.3"], b"", None);
    out.assert_success();
    let mut seen = [None; 2];
    for line in out.stdout().lines() {
        let (seq, msg) = line.split_once('\t').expect("SEQ<TAB>MESSAGE");
        let key = KEYS.iter().position(|k| msg.starts_with(k)).expect("a key");
        assert_eq!(msg, format!("{}={seq}", KEYS[key]));
        seen[key] = Some(seq.parse::<u64>().expect("a sequence"));
    }
    assert_eq!(seen, last);
}

/// Plants `kind` at `path`; false if this user may not (a device needs
/// root).
fn plant(kind: &str, path: &Path, target: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("no NUL");
    match kind {
        // SAFETY: `c` is a valid NUL-terminated path.
        "fifo" => unsafe { libc::mkfifo(c.as_ptr(), 0o666) == 0 },
        // SAFETY: as above; (1, 3) is /dev/null's device number.
        "device" => unsafe {
            libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) == 0
        },
        "symlink" => std::os::unix::fs::symlink(target, path).is_ok(),
        other => panic!("unknown kind {other}"),
    }
}

#[test]
fn a_fifo_a_device_or_a_symlink_at_the_journal_path_makes_stat_ls_sub_and_pub_fail_fast_naming_it()
{
    let dir = ShmDir::new("planted");
    let bus = dir.bus("bus");
    let journal = dir.file("journal");
    create_journaled(&bus, &journal, &[], None);
    run(&["pub", &bus], b"one\ntwo\n", None).assert_success();
    // A whole, valid journal: a reader that followed the link would read it.
    let elsewhere = dir.file("elsewhere");
    std::fs::copy(&journal, &elsewhere).expect("copy the journal");
    for (kind, found) in [
        ("fifo", "a FIFO"),
        ("device", "a character device"),
        ("symlink", "a symlink"),
    ] {
        std::fs::remove_file(&journal).expect("remove the journal");
        if !plant(kind, &journal, &elsewhere) {
            assert_eq!(kind, "device", "could not make a {kind}");
            common::skip(
                common::Need::Root,
                format!("{kind}: only root may make a device node"),
            );
            continue;
        }
        let want = format!("{}: is {found}", journal.display());
        // Each run is under the watchdog: a hang fails the test.
        let text = shmbus(&["stat", &bus]);
        text.assert_success();
        let stdout = text.stdout();
        let row = stdout
            .lines()
            .find(|l| l.starts_with("journal:"))
            .unwrap_or_else(|| panic!("{kind}: no journal row: {text:?}"));
        assert!(row.contains(&want), "{kind}: {row}");
        let j = journal_json(&bus);
        assert!(
            j["error"].as_str().is_some_and(|e| e.contains(&want)),
            "{kind}: {j}"
        );
        let ls = shmbus(&["ls", "--dir", dir.dir(), "--json"]);
        let listed = ls.assert_success().json();
        let entry = listed
            .as_array()
            .and_then(|a| a.iter().find(|e| e["name"] == "bus"))
            .unwrap_or_else(|| panic!("{kind}: bus not listed: {listed}"));
        assert!(
            entry["journal"]["error"]
                .as_str()
                .is_some_and(|e| e.contains(&want)),
            "{kind}: {entry}"
        );
        shmbus(&["sub", &bus, "--bootstrap", "--timeout", "1"]).assert_error(1, &want);
        run(&["pub", &bus], b"three\n", None).assert_error(1, &want);
        std::fs::remove_file(&journal).expect("remove what was planted");
        std::fs::copy(&elsewhere, &journal).expect("restore the journal");
    }
}

/// A file's permission bits, in octal.
fn mode(path: &Path) -> String {
    let bits = std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode();
    format!("{:o}", bits & 0o777)
}

fn inode(path: &Path) -> u64 {
    std::fs::metadata(path).expect("metadata").ino()
}

#[test]
fn under_umask_027_the_journal_and_its_compacted_successor_get_exactly_the_bus_mode() {
    let dir = ShmDir::new("umask");
    for (name, extra, want) in [
        ("open", &["--mode", "666"][..], "666"),
        ("default", &[][..], "600"),
    ] {
        let bus = dir.bus(name);
        let journal = dir.file(&format!("{name}.journal"));
        create_journaled(&bus, &journal, extra, Some(0o027));
        assert_eq!(mode(Path::new(&bus)), want, "{name}: bus");
        assert_eq!(mode(&journal), want, "{name}: journal");
        // Three lines with --compact-after 2: a compaction replaces the file.
        let before = inode(&journal);
        let lines = format!("{0}=1\n{0}=2\n{0}=3\n", KEYS[0]);
        run(
            &["pub", &bus, "--compact-after", "2"],
            lines.as_bytes(),
            Some(0o027),
        )
        .assert_success();
        assert_ne!(inode(&journal), before, "{name}: not compacted");
        assert_eq!(mode(&journal), want, "{name}: compacted journal");
        let prev = dir.file(&format!("{name}.journal.prev"));
        assert_eq!(mode(&prev), want, "{name}: the replaced file");
    }
}

/// A journaled publisher starts two threads (flusher, grower). When the
/// system refuses either (`clone3` made to fail with EAGAIN by strace, the
/// first or the second call), `create` fails with one line naming the
/// journal and the thread, and leaves neither the bus nor the journal
/// behind, nor a thread running (the process exits).
#[test]
fn a_thread_the_system_refuses_fails_create_with_one_line_and_leaves_no_bus_and_no_journal() {
    let dir = ShmDir::new("no-thread");
    let bus = dir.bus("bus");
    let journal = dir.file("journal");
    let create = common::shmbus(&[
        "create",
        &bus,
        "--msg-size",
        "16",
        "--capacity",
        "8",
        "--journal",
        utf8(&journal),
    ]);
    for when in ["1", "2"] {
        let inject = format!("inject=clone3:error=EAGAIN:when={when}");
        let mut traced = std::process::Command::new("strace");
        traced
            .args([
                "-f",
                "-qq",
                "-o",
                "/dev/null",
                "-e",
                "trace=clone3",
                "-e",
                &inject,
            ])
            .arg(create.get_program())
            .args(create.get_args())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let out = common::run(traced);
        out.assert_error(1, "spawn a thread");
        assert!(
            out.stderr.contains(utf8(&journal)),
            "names the journal: {out:?}"
        );
        assert!(
            !Path::new(&bus).exists(),
            "bus left behind (clone3 #{when})"
        );
        assert!(!journal.exists(), "journal left behind (clone3 #{when})");
    }
    // Without the injection the same command works.
    common::run(create).assert_success();
}
