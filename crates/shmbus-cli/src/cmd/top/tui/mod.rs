//! The live view of `shmbus top`, and the same figures as plain text for
//! `top --once`.
//!
//! The screen, top to bottom: a title; the buses, one line each (a bus that
//! cannot be read is one line saying why); the selected bus's figures and
//! its subscribers, one line each; the keys. The view samples every
//! `interval` and redraws after each sample and each key. A pool bus's
//! figures add its census and a gauge of the blocks in use, and its
//! subscribers a HELD column (drawn by `pool`). A bus with bridges on it
//! has a `bridge:` line each among its figures (direction, key,
//! endpoints, peer, rate, losses), and a bridge-out's subscriber row says
//! `bridge out` as its state.
//!
//! Everything shown comes from files other processes write, so names,
//! paths and error texts are escaped: no control character they hold
//! reaches the terminal.
//!
//! This file is the loop (sample, draw, read keys, until a key or a signal
//! ends it). Around it, one concept each: `view` (what the user chose: the
//! selected bus, the subscribers' order, the keys), `terminal` (raw mode
//! and the alternate screen, put back however the view ends; the tty
//! polled for a hangup), `draw` (one frame with ratatui), `figures` (the
//! figures as text, the same in the view and in `--once`) and `plain`
//! (`--once`'s text).

use std::time::{Duration, Instant};

use crossterm::event::{self, Event, KeyEventKind};

use super::model::Sampler;
use crate::cmd::signals;
use crate::error::CliError;
use draw::draw;
use terminal::{Screen, Term, Tty, terminal_error};
use view::{Key, View};

mod board;
mod calls;
mod draw;
mod figures;
mod plain;
mod rate;
mod terminal;
mod view;

#[cfg(test)]
mod fixtures;

pub use plain::plain;

/// The longest the loop waits before it looks at the signal flag again: a
/// signal cuts a wait short, but not one that came just before it began.
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

/// How the view ended.
#[derive(Debug)]
enum End {
    /// A quit key: the terminal is there, and failing to restore it is
    /// worth a word.
    Quit,
    /// A signal, or the terminal hung up: restore what can be, quietly.
    Stopped,
}

/// Shows the buses `sampler` reads, sampled every `interval`, until a key
/// or a signal ends it.
pub fn run(mut sampler: Sampler, interval: Duration) -> Result<(), CliError> {
    let mut screen = Screen::enter()?;
    let watched = screen
        .parts()
        .and_then(|(term, tty)| watch(term, tty, &mut sampler, interval));
    // Put the terminal back before main prints any error, so that the
    // error lands on the main screen.
    let restored = screen.leave();
    match watched? {
        End::Quit => restored,
        End::Stopped => Ok(()),
    }
}

fn watch(
    term: &mut Term,
    tty: &Tty,
    sampler: &mut Sampler,
    interval: Duration,
) -> Result<End, CliError> {
    let mut view = View::new(interval);
    let mut snap = sampler.sample();
    view.follow(&snap);
    let mut next_sample = Instant::now() + interval;
    let mut redraw = true;
    loop {
        if signals::stopped() {
            return Ok(End::Stopped);
        }
        if redraw {
            term.draw(|frame| draw(frame, &view, &snap))
                .map_err(terminal_error)?;
            redraw = false;
        }
        let now = Instant::now();
        if now >= next_sample {
            snap = sampler.sample();
            view.follow(&snap);
            next_sample = now + interval;
            redraw = true;
            continue;
        }
        if !tty.wait((next_sample - now).min(SIGNAL_CHECK))? {
            return Ok(End::Stopped);
        }
        // Everything crossterm has, without waiting: what the tty holds,
        // events it parsed from an earlier read, a resize.
        while event::poll(Duration::ZERO).map_err(terminal_error)? {
            match event::read().map_err(terminal_error)? {
                // Only presses: a terminal that reports releases too would
                // otherwise move the selection twice.
                Event::Key(key) if key.kind == KeyEventKind::Press => match Key::of(key) {
                    Some(Key::Quit) => return Ok(End::Quit),
                    Some(key) => {
                        view.press(key, &snap);
                        redraw = true;
                    }
                    None => {}
                },
                Event::Resize(..) => redraw = true,
                _ => {}
            }
        }
    }
}
