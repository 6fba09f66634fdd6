//! `shmbus generate`: the man pages and the shell completions, made from
//! the clap definitions themselves, so they cannot drift from the tool.
//! Hidden from `--help`: it is for whoever installs the tool (README,
//! "Install"), not for daily use.
//!
//! Both render into memory first and write afterwards: clap_complete
//! panics on a failed write, and a page half written is worse than none.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::cmd::inspect::escaped;
use crate::error::CliError;

/// Arguments of `shmbus generate`.
#[derive(clap::Args, Debug)]
pub struct GenerateArgs {
    #[command(subcommand)]
    pub what: What,
}

/// What `shmbus generate` makes.
#[derive(clap::Subcommand, Debug)]
pub enum What {
    /// Write shmbus.1 and one page per subcommand (shmbus-create.1, ...)
    /// into DIR (created if missing), one line per page written.
    Man {
        /// The directory, e.g. ~/.local/share/man/man1.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
    /// Print the completion script for SHELL on stdout.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        #[arg(value_enum, value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
}

/// `cli` is the whole tool's command (main's `Cli`), version set.
pub fn run(args: &GenerateArgs, cli: clap::Command) -> Result<(), CliError> {
    match &args.what {
        What::Man { dir } => man(cli, dir),
        What::Completions { shell } => completions(cli, *shell),
    }
}

fn man(cli: clap::Command, dir: &Path) -> Result<(), CliError> {
    let shown = escaped(&dir.display().to_string());
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::runtime(format!("creating {shown}: {e}")))?;
    let mut pages = Vec::new();
    let mut cli = cli.disable_help_subcommand(true);
    cli.build();
    render_pages(&cli, &mut pages)?;
    let mut written = Vec::with_capacity(pages.len());
    for (file, text) in pages {
        let path = escaped(&dir.join(&file).display().to_string());
        std::fs::write(dir.join(&file), text)
            .map_err(|e| CliError::runtime(format!("writing {path}: {e}")))?;
        written.push(path);
    }
    // Every page is written before the list is printed: a reader that
    // goes away (`| head -1`) stops the list, not the install.
    let mut out = crate::out::stdout()?;
    for path in written {
        writeln!(out, "wrote {path}")
            .and_then(|()| out.flush())
            .map_err(CliError::stdout)?;
    }
    Ok(())
}

/// One page for `cmd` and one for each subcommand a user can type
/// (hidden ones, `generate` itself among them, have none), as
/// clap_mangen's `generate_to` walks them.
fn render_pages(cmd: &clap::Command, pages: &mut Vec<(String, Vec<u8>)>) -> Result<(), CliError> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        render_pages(sub, pages)?;
    }
    // The footer's source: the full version line (the formats' versions)
    // does not fit beside the title, and the VERSION section has it.
    let man =
        clap_mangen::Man::new(cmd.clone()).source(concat!("shmbus ", env!("CARGO_PKG_VERSION")));
    let mut text = Vec::new();
    man.render(&mut text).map_err(|e| {
        CliError::runtime(format!("rendering the man page of {}: {e}", cmd.get_name()))
    })?;
    pages.push((man.get_filename(), text));
    Ok(())
}

fn completions(cli: clap::Command, shell: clap_complete::Shell) -> Result<(), CliError> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut without_hidden(&cli), "shmbus", &mut script);
    let mut out = crate::out::stdout()?;
    out.write_all(&script)
        .and_then(|()| out.flush())
        .map_err(CliError::stdout)
}

/// `cli` without its hidden subcommands: clap_complete would offer them
/// (`shmbus demo-<TAB>`), and clap has no way to remove one, so the root
/// is made again (it has no arguments of its own) with the visible ones.
fn without_hidden(cli: &clap::Command) -> clap::Command {
    let mut root = clap::Command::new("shmbus")
        .version(crate::version::line())
        .propagate_version(true)
        .subcommands(cli.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
    if let Some(about) = cli.get_about() {
        root = root.about(about.clone());
    }
    root
}
