//! `shmbus --version` and the hidden `shmbus generate`: the man pages and
//! shell completions an install puts in place (README, "Install"). That
//! each page renders and each script loads in its shell is ci/install.sh's
//! check (groff, bash, zsh, fish); these tests check what the tool writes.

mod common;

use common::{ShmDir, run_shmbus as shmbus};

#[test]
fn version_names_the_formats_this_build_reads_and_writes() {
    let expected = format!(
        "shmbus {} (segment layout {}, journal format {}, recording format {})\n",
        env!("CARGO_PKG_VERSION"),
        shmbus::segment::VERSION,
        shmbus::journal::format::VERSION,
        shmbus::record::format::VERSION,
    );
    let run = shmbus(&["--version"]);
    run.assert_success();
    assert_eq!(run.stdout(), expected);
    // Each subcommand says the same (propagate_version).
    let run = shmbus(&["sub", "--version"]);
    run.assert_success();
    assert!(
        run.stdout().ends_with(&expected["shmbus ".len()..]),
        "{}",
        run.output()
    );
}

#[test]
fn generate_man_writes_one_page_per_subcommand_a_user_can_type() {
    let dir = ShmDir::new("E-man");
    let out = dir.path().join("man1");
    let run = shmbus(&["generate", "man", out.to_str().unwrap()]);
    run.assert_success();
    let mut pages: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    pages.sort();
    let mut expected: Vec<String> = [
        "",
        "-bridge",
        "-bridge-in",
        "-bridge-out",
        "-call",
        "-clean",
        "-create",
        "-demo",
        "-export",
        "-get",
        "-ls",
        "-pub",
        "-put",
        "-record",
        "-replay",
        "-rm",
        "-serve",
        "-stat",
        "-sub",
        "-top",
    ]
    .iter()
    .map(|s| format!("shmbus{s}.1"))
    .collect();
    expected.sort();
    // No page for the hidden commands (demo-child, generate) nor `help`.
    assert_eq!(pages, expected);
    // One line per page, each naming the file it wrote.
    assert_eq!(
        run.stdout().lines().count(),
        expected.len(),
        "{}",
        run.output()
    );
    for line in run.stdout().lines() {
        let path = line.strip_prefix("wrote ").expect(line);
        assert!(std::path::Path::new(path).is_file(), "{line}");
    }
    let create = std::fs::read_to_string(out.join("shmbus-create.1")).unwrap();
    assert!(create.contains(".TH shmbus-create 1"), "{create}");
    // The options come from the clap definitions.
    assert!(create.contains("\\-\\-msg\\-size"), "{create}");
    let top = std::fs::read_to_string(out.join("shmbus.1")).unwrap();
    let layout = format!("segment layout {}", shmbus::segment::VERSION);
    assert!(top.contains(&layout), "the VERSION section: {top}");
}

#[test]
fn generate_completions_prints_each_shells_script() {
    for (shell, marker) in [
        ("bash", "complete -F _shmbus"),
        ("zsh", "#compdef shmbus"),
        ("fish", "complete -c shmbus"),
    ] {
        let run = shmbus(&["generate", "completions", shell]);
        run.assert_success();
        let script = run.stdout();
        assert!(script.contains(marker), "{shell}: {script}");
        // Subcommands and their flags are in it; the hidden ones are not.
        assert!(
            script.contains("create") && script.contains("msg-size"),
            "{shell}"
        );
        assert!(!script.contains("demo-child"), "{shell}: {script}");
    }
}

#[test]
fn generate_refuses_an_unknown_shell_in_one_line_with_exit_2() {
    let run = shmbus(&["generate", "completions", "tcsh"]);
    assert_eq!(run.code(), Some(2), "{}", run.output());
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.output());
    assert!(run.stderr.contains("'tcsh'"), "{}", run.output());
    assert!(run.stderr.contains("bash"), "{}", run.output());
}

#[test]
fn generate_man_where_no_directory_can_be_made_fails_in_one_line_with_exit_1() {
    let run = shmbus(&["generate", "man", "/dev/null/man1"]);
    assert_eq!(run.code(), Some(1), "{}", run.output());
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.output());
    assert!(
        run.stderr.starts_with("shmbus: creating /dev/null/man1: "),
        "{}",
        run.output()
    );
    assert!(run.stdout().is_empty(), "{}", run.output());
}
