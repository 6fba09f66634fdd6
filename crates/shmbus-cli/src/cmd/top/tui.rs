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
//! The terminal is put back (raw mode off, main screen, cursor shown)
//! however the view ends: on return or error by [`Screen`]'s drop; on a
//! panic by a panic hook, before the message is printed; on SIGTERM,
//! SIGINT or SIGHUP by a flag the loop looks at every 100 ms. (In raw mode
//! Ctrl-C is a key, not SIGINT.)
//!
//! A terminal that hangs up (its window closed, its tmux killed) ends the
//! view quietly. The loop polls the tty itself to see it: crossterm 0.29,
//! reading a hung-up tty, spins in a loop that never returns, whatever the
//! timeout (crossterm-rs/crossterm#793), so it is asked for keys only
//! after a poll found the tty alive.

use std::cmp::Reverse;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossterm::cursor::{Hide, Show};
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, List, ListItem, ListState, Paragraph};
use ratatui::{Frame, Terminal};

use super::model::{BusRow, BusView, ProcRow, Sampler, SideRow, Snapshot, StreamRow, SubRow};
use super::pool;
use crate::cmd::inspect::escaped;
use crate::cmd::signals;
use crate::error::CliError;

// ---------------------------------------------------------------------------
// The loop.

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

/// What a key does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Quit,
    Up,
    Down,
    Next,
    Previous,
    Sort,
}

impl Key {
    fn of(key: KeyEvent) -> Option<Key> {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        Some(match key.code {
            KeyCode::Char('c') if ctrl => Key::Quit,
            KeyCode::Char('q') | KeyCode::Esc => Key::Quit,
            KeyCode::Up => Key::Up,
            KeyCode::Down => Key::Down,
            KeyCode::Tab => Key::Next,
            KeyCode::BackTab => Key::Previous,
            KeyCode::Char('s') => Key::Sort,
            _ => return None,
        })
    }
}

/// What the user chose: the bus selected and the subscribers' order.
#[derive(Debug)]
struct View {
    interval: Duration,
    /// The selected bus's name: a bus that appears or goes before it in a
    /// later sample does not move the selection to another bus.
    selected: Option<String>,
    /// Its index in the latest sample.
    index: usize,
    /// Subscribers by lag, most behind first (else in registry order).
    by_lag: bool,
}

impl View {
    fn new(interval: Duration) -> View {
        View {
            interval,
            selected: None,
            index: 0,
            by_lag: false,
        }
    }

    /// Finds the selected bus in a new sample; if it has gone, selects the
    /// one now at its place.
    fn follow(&mut self, snap: &Snapshot) {
        let buses = &snap.buses;
        let found = self
            .selected
            .as_ref()
            .and_then(|name| buses.iter().position(|b| &b.name == name));
        match found {
            Some(i) => self.index = i,
            None if buses.is_empty() => self.index = 0,
            None => {
                self.index = self.index.min(buses.len() - 1);
                self.selected = Some(buses[self.index].name.clone());
            }
        }
    }

    fn press(&mut self, key: Key, snap: &Snapshot) {
        let n = snap.buses.len();
        if key == Key::Sort {
            self.by_lag = !self.by_lag;
            return;
        }
        if n == 0 {
            return;
        }
        let i = self.index.min(n - 1);
        // Up and Down stop at the ends; Tab and Shift-Tab go round.
        self.index = match key {
            Key::Up => i.saturating_sub(1),
            Key::Down => (i + 1).min(n - 1),
            Key::Next => (i + 1) % n,
            Key::Previous => (i + n - 1) % n,
            Key::Quit | Key::Sort => i,
        };
        self.selected = Some(snap.buses[self.index].name.clone());
    }

    fn order(&self) -> &'static str {
        if self.by_lag {
            "by lag"
        } else {
            "in registry order"
        }
    }
}

// ---------------------------------------------------------------------------
// The terminal.

type Term = Terminal<CrosstermBackend<crate::out::Stdout>>;

/// The terminal while the view owns it: raw mode, the alternate screen, no
/// cursor. Dropping it puts the terminal back.
struct Screen {
    term: Option<Term>,
    tty: Tty,
}

/// Set while the terminal is in the view's modes, so that [`restore`] acts
/// once, whichever of `leave`, a drop or the panic hook comes first.
static ENTERED: AtomicBool = AtomicBool::new(false);

impl Screen {
    fn enter() -> Result<Screen, CliError> {
        // SAFETY: isatty takes a descriptor number and no pointer; a
        // descriptor that is not open makes it return 0, nothing else.
        if unsafe { libc::isatty(libc::STDOUT_FILENO) } != 1 {
            return Err(CliError::usage(
                "standard output is not a terminal: for a file or a pipe, \
                 use `shmbus top --once`, `--json` or `--prometheus`",
            ));
        }
        let out = crate::out::stdout()?;
        let tty = Tty::open().map_err(|e| {
            CliError::runtime(format!("terminal: no terminal to read keys from: {e}"))
        })?;
        install_panic_hook();
        // SIGTERM, SIGINT and SIGHUP end the view through the loop, which
        // restores the terminal, instead of killing the process in raw mode.
        signals::stop_on(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP]);
        // Set before the first change, so that a failure halfway (raw mode
        // on, no alternate screen) is undone too.
        ENTERED.store(true, Ordering::SeqCst);
        match enter_modes(out) {
            Ok(term) => Ok(Screen {
                term: Some(term),
                tty,
            }),
            Err(e) => {
                let _ = restore();
                Err(terminal_error(e))
            }
        }
    }

    fn parts(&mut self) -> Result<(&mut Term, &Tty), CliError> {
        match self.term.as_mut() {
            Some(term) => Ok((term, &self.tty)),
            None => Err(CliError::runtime("terminal: already restored")),
        }
    }

    /// Puts the terminal back, and says if that failed (a drop cannot).
    fn leave(mut self) -> Result<(), CliError> {
        // Dropped first: it flushes what it holds, on the alternate screen.
        drop(self.term.take());
        restore().map_err(terminal_error)
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        if let Some(term) = self.term.take() {
            if std::thread::panicking() {
                // A panic in the middle of a frame leaves part of it in the
                // writer's buffer: dropping the writer would flush it onto
                // the main screen, which the panic hook has restored.
                std::mem::forget(term);
            }
        }
        let _ = restore();
    }
}

/// The terminal crossterm reads keys from (stdin, or /dev/tty when stdin
/// is not a terminal, as crossterm chooses), polled to see a hangup.
struct Tty {
    fd: RawFd,
    /// /dev/tty, if opened: kept open while `fd` is used.
    _dev_tty: Option<std::fs::File>,
}

impl Tty {
    fn open() -> io::Result<Tty> {
        // SAFETY: isatty takes a descriptor number and no pointer.
        if unsafe { libc::isatty(libc::STDIN_FILENO) } == 1 {
            return Ok(Tty {
                fd: libc::STDIN_FILENO,
                _dev_tty: None,
            });
        }
        let file = std::fs::File::open("/dev/tty")?;
        Ok(Tty {
            fd: file.as_raw_fd(),
            _dev_tty: Some(file),
        })
    }

    /// Waits up to `timeout` for input (a signal ends the wait early);
    /// `false` if the terminal has hung up.
    fn wait(&self, timeout: Duration) -> Result<bool, CliError> {
        let mut fd = libc::pollfd {
            fd: self.fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: `fd` is one valid pollfd, alive for the call; the count
        // says one.
        if unsafe { libc::poll(&mut fd, 1, ms) } < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::Interrupted => Ok(true),
                _ => Err(terminal_error(e)),
            };
        }
        Ok(fd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) == 0)
    }
}

fn enter_modes(mut out: crate::out::Stdout) -> io::Result<Term> {
    enable_raw_mode()?;
    crossterm::execute!(out, EnterAlternateScreen, Hide)?;
    Terminal::new(CrosstermBackend::new(out))
}

/// Raw mode off, the main screen back, the cursor shown; each step is
/// tried even if one before it failed. Does nothing unless [`Screen::enter`]
/// changed the terminal and nothing has restored it since.
fn restore() -> io::Result<()> {
    if !ENTERED.swap(false, Ordering::SeqCst) {
        return Ok(());
    }
    let raw = disable_raw_mode();
    let screen = match crate::out::stdout() {
        Ok(mut out) => crossterm::execute!(out, LeaveAlternateScreen, Show),
        // fd 1 was closed at exec: `enter` refused to start.
        Err(_) => Ok(()),
    };
    raw.and(screen)
}

/// Restores the terminal before the panic message is printed, so that the
/// message is readable and the shell usable.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let _ = restore();
            previous(info);
        }));
    });
}

fn terminal_error(e: io::Error) -> CliError {
    CliError::runtime(format!("terminal: {e}"))
}

// ---------------------------------------------------------------------------
// Drawing.

fn draw(frame: &mut Frame, view: &View, snap: &Snapshot) {
    let area = frame.area();
    // The bus list takes up to a third of the screen and scrolls with the
    // selection; the selected bus's subscribers get the rest.
    let listed = snap
        .buses
        .len()
        .clamp(1, usize::from(area.height / 3).max(1));
    let listed = u16::try_from(listed).unwrap_or(u16::MAX);
    let [title, buses, detail, keys] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(listed.saturating_add(3)), // borders and heading
        Constraint::Min(4),
        Constraint::Length(1),
    ])
    .areas(area);
    frame.render_widget(title_line(view, snap), title);
    draw_buses(frame, buses, view, snap);
    draw_detail(frame, detail, view, snap);
    frame.render_widget(keys_line(view), keys);
}

fn title_line(view: &View, snap: &Snapshot) -> Line<'static> {
    let n = snap.buses.len();
    let rates = match snap.interval_s {
        Some(s) => format!("rates over {s:.2} s"),
        None => "rates from the next sample".to_string(),
    };
    Line::from(format!(
        "shmbus top · {n} bus{} · every {} ms · {rates}",
        if n == 1 { "" } else { "es" },
        view.interval.as_millis()
    ))
    .bold()
}

fn keys_line(view: &View) -> Line<'static> {
    let sort = if view.by_lag {
        "s registry order"
    } else {
        "s sort by lag"
    };
    Line::from(format!(" q quit   ↑/↓ Tab/Shift-Tab select bus   {sort} ")).reversed()
}

/// Column widths of a bus line after the name (whose width depends on the
/// names): kind, msgs/s, bytes/s, head, epoch, publisher, subscribers.
const BUS_COLUMNS: [(&str, usize, Align); 7] = [
    ("KIND", 9, Align::Left),
    ("MSGS/S", 9, Align::Right),
    ("BYTES/S", 12, Align::Right),
    ("HEAD", 12, Align::Right),
    ("EPOCH", 5, Align::Right),
    ("PUBLISHER", 14, Align::Left),
    ("SUBS", 4, Align::Right),
];

#[derive(Clone, Copy, Debug)]
enum Align {
    Left,
    Right,
}

/// `text` padded (or cut, with an ellipsis) to `width` characters.
fn fit(text: &str, width: usize, align: Align) -> String {
    let len = text.chars().count();
    if len > width {
        let cut: String = text.chars().take(width.saturating_sub(1)).collect();
        return format!("{cut}…");
    }
    match align {
        Align::Left => format!("{text:<width$}"),
        Align::Right => format!("{text:>width$}"),
    }
}

/// The name column's width: the longest name, within reason.
fn name_width(snap: &Snapshot) -> usize {
    snap.buses
        .iter()
        .map(|b| escaped(&b.name).chars().count())
        .max()
        .unwrap_or(0)
        .clamp(8, 40)
}

fn columns(name: &str, name_width: usize, cells: &[String], last: &str) -> String {
    let mut line = fit(name, name_width, Align::Left);
    for ((_, width, align), cell) in BUS_COLUMNS.iter().zip(cells) {
        line.push_str("  ");
        line.push_str(&fit(cell, *width, *align));
    }
    line.push_str("  ");
    line.push_str(last);
    line
}

fn draw_buses(frame: &mut Frame, area: Rect, view: &View, snap: &Snapshot) {
    let block = Block::bordered().title(" buses ");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let [heading, list] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(inner);
    let width = name_width(snap);
    let names: Vec<String> = BUS_COLUMNS.iter().map(|c| c.0.to_string()).collect();
    // Two spaces: where the list puts its selection mark.
    let text = format!(
        "  {}",
        columns("NAME", width, &names, "JOURNAL / STREAM / POOL")
    );
    frame.render_widget(Line::from(text).bold(), heading);
    if snap.buses.is_empty() {
        frame.render_widget(Line::from("  no shmbus buses").dim(), list);
        return;
    }
    let items: Vec<ListItem> = snap
        .buses
        .iter()
        .map(|b| ListItem::new(bus_line(b, width)))
        .collect();
    let list_widget = List::new(items)
        .highlight_symbol("> ")
        .highlight_style(Style::new().reversed());
    let mut state = ListState::default().with_selected(Some(view.index));
    frame.render_stateful_widget(list_widget, list, &mut state);
}

fn bus_line(b: &BusView, width: usize) -> Line<'static> {
    let name = escaped(&b.name);
    match &b.state {
        Err(e) => Line::from(vec![
            Span::raw(fit(&name, width, Align::Left)),
            Span::raw("  "),
            Span::raw(error_text(b, e)).red(),
        ]),
        Ok(r) => Line::from(columns(&name, width, &bus_cells(r), &bus_extra(r))),
    }
}

/// A bus's cells under [`BUS_COLUMNS`].
fn bus_cells(r: &BusRow) -> [String; 7] {
    let stream = r.stream.is_some();
    [
        // As `ls` calls it: a pool bus is a broadcast bus of descriptors.
        if r.pool.is_some() {
            "pool".into()
        } else {
            r.kind.clone()
        },
        // A stream counts bytes, not records: its rate is in BYTES/S.
        if stream {
            "-".into()
        } else {
            rate(r.msgs_per_sec)
        },
        byte_rate_cell(r),
        r.head.to_string(),
        if stream {
            "-".into()
        } else {
            r.epoch.to_string()
        },
        role_text(r.publisher_pid, r.publisher_alive, " "),
        if stream {
            "-".into()
        } else {
            r.subscribers.iter().filter(|s| !s.gone).count().to_string()
        },
    ]
}

/// The journal's or the stream's figures, short, for the bus line.
fn bus_extra(r: &BusRow) -> String {
    if let Some(st) = &r.stream {
        return format!(
            "fill {}, consumer {}",
            fill_text(st),
            role_text(st.consumer_pid, st.consumer_alive, " ")
        );
    }
    if let Some(p) = &r.pool {
        return pool::bus_extra(p);
    }
    match &r.journal {
        None => String::new(),
        Some(Ok(j)) => format!(
            "journal {}, {} records",
            bytes(j.file_bytes as f64),
            j.records
        ),
        Some(Err(e)) => format!("journal: {}", escaped(e)),
    }
}

fn draw_detail(frame: &mut Frame, area: Rect, view: &View, snap: &Snapshot) {
    let Some(bus) = snap.buses.get(view.index) else {
        frame.render_widget(Block::bordered(), area);
        return;
    };
    let name = escaped(&bus.name);
    let title = match &bus.state {
        Ok(r) if r.stream.is_none() => format!(" subscribers of {name}, {} ", view.order()),
        _ => format!(" {name} "),
    };
    let block = Block::bordered().title(title);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let r = match &bus.state {
        Ok(r) => r,
        Err(e) => {
            let text = Line::from(error_text(bus, e)).red();
            frame.render_widget(Paragraph::new(text), inner);
            return;
        }
    };
    let key_width = facts(r).iter().map(|f| f.0.len()).max().unwrap_or(0) + 2;
    let mut lines: Vec<Line> = facts(r)
        .into_iter()
        .map(|(key, value)| {
            let mut line = Line::from(format!("{:<key_width$}{value}", format!("{key}:")));
            if let (pool::IN_USE, Some(p)) = (key, &r.pool) {
                line.push_span(pool::gauge(p));
            }
            line
        })
        .collect();
    lines.push(Line::default());
    if r.stream.is_some() {
        lines.push(Line::from("a stream has one consumer and no subscribers").dim());
    } else if r.subscribers.is_empty() {
        lines.push(Line::from("no subscribers").dim());
    } else {
        let heading: Vec<String> = sub_headings(r.pool.is_some()).map(str::to_string).collect();
        lines.push(Line::from(sub_columns(&heading, "STATE")).bold());
        let subs = ordered(&r.subscribers, view.by_lag);
        // What does not fit is counted rather than cut off unseen.
        let room = usize::from(inner.height).saturating_sub(lines.len());
        let shown = if subs.len() > room {
            room.saturating_sub(1)
        } else {
            subs.len()
        };
        lines.extend(subs[..shown].iter().map(|s| sub_line(s)));
        if shown < subs.len() {
            lines.push(Line::from(format!("… and {} more", subs.len() - shown)).dim());
        }
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The subscribers' columns (all numbers, right-aligned), before STATE.
const SUB_COLUMNS: [(&str, usize); 12] = [
    ("PID", 8),
    ("ENTRY", 5),
    ("POSITION", 12),
    ("LAG", 10),
    ("LAG%", 7),
    ("DELIVERED", 12),
    ("SKIPPED", 10),
    ("MSGS/S", 8),
    ("IDLE S", 7),
    ("CPU%", 6),
    ("VCS/S", 7),
    ("ICS/S", 7),
];

/// Where LAG% is in [`SUB_COLUMNS`]: the cell that is highlighted.
const LAG_PERCENT: usize = 4;

/// The subscribers' columns, and on a pool bus HELD after them: a row has
/// as many cells as its bus has columns, so the zips below stop there.
fn all_sub_columns() -> impl Iterator<Item = &'static (&'static str, usize)> {
    SUB_COLUMNS.iter().chain([&pool::HELD_COLUMN])
}

/// The column headings, before STATE.
fn sub_headings(pool: bool) -> impl Iterator<Item = &'static str> {
    let n = SUB_COLUMNS.len() + usize::from(pool);
    all_sub_columns().take(n).map(|c| c.0)
}

fn sub_columns(cells: &[String], state: &str) -> String {
    let mut line: Vec<String> = all_sub_columns()
        .zip(cells)
        .map(|((_, width), cell)| fit(cell, *width, Align::Right))
        .collect();
    line.push(state.to_string());
    line.join("  ")
}

fn sub_line(s: &SubRow) -> Line<'static> {
    let cells = sub_cells(s);
    if let Some(why) = &s.corrupt {
        // No numbers: what the line says cannot be believed.
        let head = sub_columns(&cells[..2], "");
        return Line::from(vec![
            Span::raw(head),
            Span::raw(format!("corrupt: {}", escaped(why))).red(),
        ]);
    }
    let mut spans = Vec::new();
    for (i, ((_, width), cell)) in all_sub_columns().zip(&cells).enumerate() {
        let text = fit(cell, *width, Align::Right);
        spans.push(if i == LAG_PERCENT && (s.near_lap() || s.lapped()) {
            Span::raw(text).red().bold()
        } else {
            Span::raw(text)
        });
        spans.push(Span::raw("  "));
    }
    spans.push(Span::raw(sub_state(s)));
    let line = Line::from(spans);
    if s.gone {
        line.dim()
    } else {
        line
    }
}

// ---------------------------------------------------------------------------
// Figures as text, the same in the view and in `--once`.

/// The subscribers in registry order, or by lag, most behind first; gone
/// and corrupt ones stay last, since their lag no longer moves.
fn ordered(subs: &[SubRow], by_lag: bool) -> Vec<&SubRow> {
    let mut out: Vec<&SubRow> = subs.iter().collect();
    if by_lag {
        out.sort_by_key(|s| (s.gone, s.corrupt.is_some(), Reverse(s.line.lag)));
    }
    out
}

/// A subscriber's cells under [`SUB_COLUMNS`], then HELD on a pool bus:
/// "-" for any number a corrupt line would give (HELD comes from the
/// pool's hold lines, not the subscriber's, so it stays).
fn sub_cells(s: &SubRow) -> Vec<String> {
    let l = &s.line;
    let mut cells = vec!["-".to_string(); SUB_COLUMNS.len()];
    cells.extend(pool::held_cell(s));
    cells[0] = l.pid.to_string();
    cells[1] = l.entry.to_string();
    if s.corrupt.is_some() {
        return cells;
    }
    let proc = s.proc.unwrap_or_default();
    cells[2] = l.position.to_string();
    cells[3] = count(l.lag, SUB_COLUMNS[3].1);
    // Past the ring it is lapped already: how far past says nothing more.
    cells[4] = if s.lapped() {
        ">100%".into()
    } else {
        format!("{:.1}%", s.lag_fraction * 100.0)
    };
    cells[5] = l.delivered.to_string();
    cells[6] = l.skipped.to_string();
    cells[7] = rate(s.msgs_per_sec);
    cells[8] = one_decimal(s.idle_s);
    cells[9] = one_decimal(proc.cpu_percent);
    cells[10] = rate(proc.voluntary_per_sec);
    cells[11] = rate(proc.involuntary_per_sec);
    cells
}

/// What is wrong with a subscriber, if anything: empty for a live one
/// that keeps up.
fn sub_state(s: &SubRow) -> String {
    if let Some(why) = &s.corrupt {
        format!("corrupt: {}", escaped(why))
    } else if s.gone {
        "gone".into()
    } else if s.lapped() {
        "lapped".into()
    } else if s.near_lap() {
        "near lap".into()
    } else if s.bridge {
        "bridge out".into()
    } else {
        String::new()
    }
}

/// A bus's figures beyond its line, as (key, value) pairs.
fn facts(r: &BusRow) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    if let Some(st) = &r.stream {
        out.push((
            "kind",
            format!(
                "{}, {}, records up to {} B",
                r.kind,
                bytes(r.capacity as f64),
                r.msg_size
            ),
        ));
        out.push(("rate", byte_rate(r.bytes_per_sec)));
        out.push(("written", format!("{} B, released {} B", st.tail, st.head)));
        out.push(("fill", fill_text(st)));
        out.push((
            "producer",
            process_text(r.publisher_pid, r.publisher_alive, r.publisher_proc),
        ));
        out.push(("  records", side_text(&st.producer)));
        out.push((
            "consumer",
            process_text(st.consumer_pid, st.consumer_alive, st.consumer_proc),
        ));
        out.push(("  records", side_text(&st.consumer)));
        return out;
    }
    out.push((
        "kind",
        match &r.pool {
            Some(p) => pool::kind(r.capacity, r.msg_size, p),
            None => format!("{}, {} slots of {} B", r.kind, r.capacity, r.msg_size),
        },
    ));
    let bytes_per_sec = match r.pool {
        Some(_) => "bytes/s n/a (pool bus)".into(),
        None => byte_rate(r.bytes_per_sec),
    };
    out.push((
        "rate",
        format!("{} msgs/s, {bytes_per_sec}", rate(r.msgs_per_sec)),
    ));
    out.push((
        "head",
        format!("{}, epoch {}, published {}", r.head, r.epoch, r.published),
    ));
    out.push((
        "publisher",
        process_text(r.publisher_pid, r.publisher_alive, r.publisher_proc),
    ));
    match &r.journal {
        None => {}
        Some(Ok(j)) => out.push((
            "journal",
            format!(
                "{} ({}, {} records)",
                escaped(&j.path.display().to_string()),
                bytes(j.file_bytes as f64),
                j.records
            ),
        )),
        Some(Err(e)) => out.push(("journal", escaped(e))),
    }
    if let Some(p) = &r.pool {
        out.extend(pool::facts(p));
    }
    let gone = r.subscribers.iter().filter(|s| s.gone).count();
    out.push((
        "subscribers",
        format!("{} live, {gone} gone", r.subscribers.len() - gone),
    ));
    // The key and endpoints come from a file: escaped.
    for b in &r.bridges {
        out.push((
            "bridge",
            format!("pid {}: {}", b.pid, escaped(&b.summary())),
        ));
    }
    out
}

/// A bus that cannot be read: why, without the path the line already
/// names.
fn error_text(b: &BusView, e: &str) -> String {
    let path = b.path.display().to_string();
    let why = e
        .strip_prefix(path.as_str())
        .and_then(|rest| rest.strip_prefix(": "))
        .unwrap_or(e);
    escaped(why)
}

/// A stream side's records, rate and idle time.
fn side_text(s: &SideRow) -> String {
    format!(
        "{} since it attached, {}/s, idle {} s",
        s.records,
        rate(s.records_per_sec),
        one_decimal(s.idle_s)
    )
}

fn fill_text(st: &StreamRow) -> String {
    if st.corrupt {
        return format!(
            "CORRUPT: written {} and released {} are impossible",
            st.tail, st.head
        );
    }
    format!(
        "{} ({:.1}%)",
        bytes(st.fill as f64),
        st.fill_fraction * 100.0
    )
}

/// A publisher, producer or consumer: "pid 12 (alive)", or "none" for pid
/// 0 (none has attached, or the last left cleanly). `sep` goes between the
/// pid and its state.
fn role_text(pid: u32, alive: bool, sep: &str) -> String {
    match (pid, alive) {
        (0, false) => "none".into(),
        (pid, true) => format!("{pid}{sep}alive"),
        (pid, false) => format!("{pid}{sep}dead"),
    }
}

/// A process and, while it runs, its CPU and context switches.
fn process_text(pid: u32, alive: bool, proc: Option<ProcRow>) -> String {
    let who = match role_text(pid, alive, " (") {
        none if pid == 0 && !alive => none,
        some => format!("pid {some})"),
    };
    match proc {
        Some(p) if alive => format!(
            "{who}, CPU {}%, context switches/s {} voluntary, {} involuntary",
            one_decimal(p.cpu_percent),
            rate(p.voluntary_per_sec),
            rate(p.involuntary_per_sec)
        ),
        _ => who,
    }
}

/// A rate: "-" before there is one (the first sample), else about three
/// significant digits.
fn rate(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v < 100.0 => format!("{v:.1}"),
        Some(v) if v < 1e4 => format!("{v:.0}"),
        Some(v) if v < 1e6 => format!("{:.1}k", v / 1e3),
        Some(v) if v < 1e9 => format!("{:.1}M", v / 1e6),
        Some(v) => format!("{:.1}G", v / 1e9),
    }
}

/// A count in at most `width` characters: as it is if it fits, else with
/// a unit (k, M, G, T, P, E), so that a huge lag is never cut off.
fn count(n: u64, width: usize) -> String {
    let plain = n.to_string();
    if plain.len() <= width {
        return plain;
    }
    let mut v = n as f64;
    for unit in ["k", "M", "G", "T", "P", "E"] {
        v /= 1000.0;
        if v < 999.95 {
            return format!("{v:.1}{unit}");
        }
    }
    format!("{v:.0}E")
}

fn byte_rate(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{}/s", bytes(v)))
}

/// A bus's BYTES/S cell; "n/a" on a pool bus, which has none (see
/// `model`).
fn byte_rate_cell(r: &BusRow) -> String {
    if r.pool.is_some() {
        "n/a".into()
    } else {
        byte_rate(r.bytes_per_sec)
    }
}

/// A size in bytes, in binary units.
fn bytes(n: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let (mut v, mut unit) = (n, 0);
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

fn one_decimal(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.1}"))
}

// ---------------------------------------------------------------------------
// Plain text.

/// One sample as plain text: per bus, its name, its figures, and a table
/// of its subscribers (one row each); blocks apart by a blank line.
pub fn plain(snap: &Snapshot) -> String {
    if snap.buses.is_empty() {
        return "no shmbus buses".into();
    }
    let blocks: Vec<String> = snap.buses.iter().map(plain_bus).collect();
    blocks.join("\n\n")
}

fn plain_bus(b: &BusView) -> String {
    let name = escaped(&b.name);
    let r = match &b.state {
        Ok(r) => r,
        Err(e) => return format!("{name}: {}", error_text(b, e)),
    };
    let facts = facts(r);
    let key_width = facts.iter().map(|f| f.0.len()).max().unwrap_or(0) + 2;
    let mut lines = vec![name];
    for (key, value) in facts {
        lines.push(format!("  {:<key_width$}{value}", format!("{key}:")));
    }
    if r.stream.is_none() && !r.subscribers.is_empty() {
        for row in subscriber_table(&r.subscribers, r.pool.is_some()).lines() {
            lines.push(format!("  {row}"));
        }
    }
    lines.join("\n")
}

/// The subscribers, in registry order, as columns like `ps`'s (and HELD
/// on a pool bus).
fn subscriber_table(subs: &[SubRow], pool: bool) -> String {
    let mut heading: Vec<&str> = sub_headings(pool).collect();
    heading.push("STATE");
    let rows = subs.iter().map(|s| {
        let mut row = sub_cells(s);
        row.push(sub_state(s));
        row
    });
    crate::cmd::inspect::plain_table(heading, rows)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use ratatui::backend::TestBackend;
    use ratatui::style::{Color, Modifier};
    use shmbus::stat::SubscriberStat;

    use super::super::model::JournalRow;
    use super::*;

    fn sub(entry: usize, pid: u32, lag: u64) -> SubRow {
        SubRow {
            line: SubscriberStat {
                entry,
                pid,
                position: 100 - lag,
                lag,
                delivered: 100 - lag,
                skipped: 0,
                active_ns: 0,
                corrupt: None,
            },
            gone: false,
            lag_fraction: lag as f64 / 64.0,
            msgs_per_sec: Some(12.5),
            idle_s: Some(0.25),
            corrupt: None,
            proc: Some(ProcRow {
                cpu_percent: Some(1.5),
                voluntary_per_sec: Some(40.0),
                involuntary_per_sec: Some(0.0),
            }),
            held: None,
            reclaimable: None,
            bridge: false,
        }
    }

    fn bus(name: &str, subscribers: Vec<SubRow>) -> BusView {
        BusView {
            name: name.into(),
            path: PathBuf::from(format!("/dev/shm/{name}")),
            state: Ok(BusRow {
                kind: "broadcast".into(),
                capacity: 64,
                msg_size: 16,
                head: 100,
                published: 100,
                epoch: 1,
                publisher_pid: 4242,
                publisher_alive: true,
                msgs_per_sec: Some(50.0),
                bytes_per_sec: Some(800.0),
                journal: Some(Ok(JournalRow {
                    path: PathBuf::from("/tmp/j"),
                    file_bytes: 4096,
                    records: 7,
                })),
                subscribers,
                stream: None,
                publisher_proc: None,
                pool: None,
                bridges: Vec::new(),
            }),
        }
    }

    /// A bus with: one keeping up (pid 101), one near a lap (102), one
    /// gone (103), one corrupt (104); and a bus that cannot be read.
    fn sample() -> Snapshot {
        let mut gone = sub(2, 103, 1);
        gone.gone = true;
        gone.proc = None;
        let mut corrupt = sub(3, 104, 0);
        corrupt.corrupt = Some("skipped 9 is more than the 0 messages it moved".into());
        let bad = BusView {
            name: "bad\x1b[2Jname".into(),
            path: PathBuf::from("/dev/shm/bad\x1b[2Jname"),
            state: Err("/dev/shm/bad\x1b[2Jname: not a shmbus segment".into()),
        };
        Snapshot {
            at_ns: 1,
            interval_s: Some(0.5),
            buses: vec![
                bus(
                    "alpha",
                    vec![sub(0, 101, 0), sub(1, 102, 60), gone, corrupt],
                ),
                bad,
            ],
        }
    }

    fn screen(view: &View, snap: &Snapshot) -> (Vec<String>, ratatui::buffer::Buffer) {
        let mut term = Terminal::new(TestBackend::new(160, 30)).expect("test terminal");
        term.draw(|f| draw(f, view, snap)).expect("draw");
        let buf = term.backend().buffer().clone();
        let lines = (0..buf.area.height)
            .map(|y| {
                (0..buf.area.width)
                    .map(|x| buf[(x, y)].symbol())
                    .collect::<String>()
            })
            .collect();
        (lines, buf)
    }

    fn line_with<'a>(lines: &'a [String], needle: &str) -> (usize, &'a String) {
        lines
            .iter()
            .enumerate()
            .find(|(_, l)| l.contains(needle))
            .unwrap_or_else(|| panic!("no line with {needle:?} in\n{}", lines.join("\n")))
    }

    #[test]
    fn the_view_shows_every_bus_and_the_selected_bus_s_subscribers() {
        let snap = sample();
        let mut view = View::new(Duration::from_millis(500));
        view.follow(&snap);
        let (lines, buf) = screen(&view, &snap);
        let (_, alpha) = line_with(&lines, "> alpha ");
        assert!(alpha.contains("broadcast"), "{alpha}");
        assert!(alpha.contains("4242 alive") && alpha.contains("journal 4.0 KiB, 7 records"));
        let (_, bad) = line_with(&lines, "not a shmbus segment");
        assert!(bad.contains("bad\\x1b[2Jname"), "escaped: {bad}");
        line_with(&lines, "subscribers of alpha, in registry order");
        let (near, near_line) = line_with(&lines, "     102 ");
        assert!(near_line.contains("93.8%") && near_line.contains("near lap"));
        // The LAG% cell, and only it, is red and bold.
        let byte = near_line.find("93.8%").expect("lag%");
        let x = near_line[..byte].chars().count() as u16;
        let cell = &buf[(x, near as u16)];
        assert_eq!(cell.fg, Color::Red);
        assert!(cell.modifier.contains(Modifier::BOLD));
        assert_ne!(buf[(2, near as u16)].fg, Color::Red);
        let (gone, gone_line) = line_with(&lines, "     103 ");
        assert!(gone_line.trim_end_matches(['│', ' ']).ends_with("gone"));
        assert!(buf[(2, gone as u16)].modifier.contains(Modifier::DIM));
        let (_, corrupt) = line_with(&lines, "     104 ");
        assert!(corrupt.contains("corrupt: skipped 9 is more than"));
        assert!(!corrupt.contains("12.5"), "no numbers: {corrupt}");
        line_with(&lines, "q quit");
        let order: Vec<usize> = ["101", "102", "103", "104"]
            .iter()
            .map(|p| line_with(&lines, &format!("     {p} ")).0)
            .collect();
        assert!(order.is_sorted(), "registry order: {order:?}");
    }

    #[test]
    fn s_sorts_by_lag_and_tab_and_the_arrows_move_the_selection() {
        let snap = sample();
        let mut view = View::new(Duration::from_millis(500));
        view.follow(&snap);
        view.press(Key::Sort, &snap);
        let (lines, _) = screen(&view, &snap);
        line_with(&lines, "subscribers of alpha, by lag");
        let rows: Vec<usize> = ["102", "101", "104", "103"]
            .iter()
            .map(|p| line_with(&lines, &format!("     {p} ")).0)
            .collect();
        assert!(rows.is_sorted(), "by lag, gone and corrupt last: {rows:?}");
        view.press(Key::Next, &snap);
        assert_eq!(view.index, 1);
        let (lines, _) = screen(&view, &snap);
        assert!(line_with(&lines, "> bad")
            .1
            .contains("not a shmbus segment"));
        view.press(Key::Next, &snap);
        assert_eq!(view.index, 0, "Tab goes round");
        view.press(Key::Up, &snap);
        assert_eq!(view.index, 0, "Up stops at the top");
        view.press(Key::Down, &snap);
        view.press(Key::Down, &snap);
        assert_eq!(view.index, 1, "Down stops at the bottom");
        view.press(Key::Previous, &snap);
        assert_eq!(view.index, 0);
    }

    #[test]
    fn the_selection_follows_its_bus_when_another_appears_before_it() {
        let snap = sample();
        let mut view = View::new(Duration::from_millis(500));
        view.follow(&snap);
        view.press(Key::Next, &snap);
        let mut more = sample();
        more.buses.insert(0, bus("aardvark", vec![]));
        view.follow(&more);
        assert_eq!(view.index, 2);
        assert_eq!(view.selected.as_deref(), Some("bad\x1b[2Jname"));
        more.buses.truncate(1);
        view.follow(&more);
        assert_eq!(view.index, 0, "gone: the one at its place, or the last");
    }

    #[test]
    fn quit_keys_are_q_esc_and_ctrl_c() {
        let key = |code, modifiers| Key::of(KeyEvent::new(code, modifiers));
        assert_eq!(key(KeyCode::Char('q'), KeyModifiers::NONE), Some(Key::Quit));
        assert_eq!(key(KeyCode::Esc, KeyModifiers::NONE), Some(Key::Quit));
        assert_eq!(
            key(KeyCode::Char('c'), KeyModifiers::CONTROL),
            Some(Key::Quit)
        );
        assert_eq!(key(KeyCode::Char('c'), KeyModifiers::NONE), None);
        assert_eq!(
            key(KeyCode::BackTab, KeyModifiers::SHIFT),
            Some(Key::Previous)
        );
    }

    #[test]
    fn a_bridge_is_a_line_of_its_bus_s_figures_and_its_subscriber_says_so() {
        use crate::bridge_status::{Counts, Direction, Identity, Status};
        let mut snap = sample();
        let Ok(row) = &mut snap.buses[0].state else {
            unreachable!("alpha is readable")
        };
        row.subscribers[0].bridge = true;
        row.bridges.push(Status {
            pid: 101,
            started: 1,
            identity: Identity {
                direction: Direction::Out,
                bus: PathBuf::from("/dev/shm/alpha"),
                key: "md/\x1b[2Jticks".into(),
                listen: vec![],
                connect: vec!["tcp/10.0.0.2:7447".into()],
            },
            counts: Counts {
                messages: 100,
                lost: 3,
                peer: true,
                ..Counts::default()
            },
            msgs_per_sec: Some(123_456.0),
            // Written just now: no "old" remark.
            updated_unix_ns: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64),
        });
        let text = plain(&snap);
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text}");
        assert!(
            text.contains(
                "bridge:      pid 101: out -> key md/\\x1b[2Jticks, connect tcp/10.0.0.2:7447, \
                 peer matched, 123.5k msgs/s, forwarded 100, lost 3\n"
            ),
            "{text}"
        );
        let row = text
            .lines()
            .find(|l| l.trim_start().starts_with("101"))
            .unwrap_or_else(|| panic!("no row 101: {text}"));
        assert!(row.ends_with("bridge out"), "{row}");
        let mut view = View::new(Duration::from_millis(500));
        view.follow(&snap);
        let (lines, _) = screen(&view, &snap);
        line_with(&lines, "bridge:      pid 101: out -> key md/\\x1b[2Jticks");
    }

    #[test]
    fn plain_text_has_a_block_per_bus_a_row_per_subscriber_and_no_control_characters() {
        let text = plain(&sample());
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text}");
        let blocks: Vec<&str> = text.split("\n\n").collect();
        assert_eq!(blocks.len(), 2, "{text}");
        assert!(blocks[0].starts_with("alpha\n"), "{text}");
        assert!(
            blocks[0].contains("publisher:   pid 4242 (alive)"),
            "{text}"
        );
        assert!(blocks[0].contains("subscribers: 3 live, 1 gone"), "{text}");
        let row = |pid: &str| {
            blocks[0]
                .lines()
                .find(|l| l.trim_start().starts_with(pid))
                .unwrap_or_else(|| panic!("no row {pid}: {text}"))
        };
        assert!(row("102").contains("93.8%") && row("102").ends_with("near lap"));
        assert!(row("103").ends_with("gone"));
        assert!(row("104").ends_with("corrupt: skipped 9 is more than the 0 messages it moved"));
        assert_eq!(
            blocks[1], "bad\\x1b[2Jname: not a shmbus segment",
            "the error without its path"
        );
    }

    #[test]
    fn a_stream_shows_its_fill_and_its_consumer_and_no_subscriber_table() {
        let mut stream = bus("pipe", vec![]);
        if let Ok(r) = &mut stream.state {
            r.kind = "stream".into();
            r.capacity = 4096;
            r.journal = None;
            r.stream = Some(StreamRow {
                fill: 1024,
                fill_fraction: 0.25,
                tail: 5120,
                head: 4096,
                consumer_pid: 77,
                consumer_alive: true,
                corrupt: false,
                consumer_proc: None,
                producer: SideRow::default(),
                consumer: SideRow::default(),
            });
        }
        let snap = Snapshot {
            at_ns: 1,
            interval_s: None,
            buses: vec![stream],
        };
        let mut view = View::new(Duration::from_millis(500));
        view.follow(&snap);
        let (lines, _) = screen(&view, &snap);
        let (_, row) = line_with(&lines, "> pipe");
        assert!(
            row.contains("fill 1.0 KiB (25.0%), consumer 77 alive"),
            "{row}"
        );
        line_with(&lines, "a stream has one consumer and no subscribers");
        line_with(&lines, "rates from the next sample");
        let text = plain(&snap);
        assert!(text.contains("fill:      1.0 KiB (25.0%)"), "{text}");
        assert!(text.contains("consumer:  pid 77 (alive)"), "{text}");
        assert!(text.contains("records: 0 since it attached"), "{text}");
        assert!(!text.contains("PID"), "{text}");
    }

    #[test]
    fn a_pool_bus_shows_its_census_and_a_held_column_and_no_byte_rate() {
        let mut holder = sub(0, 101, 0);
        holder.held = Some(2);
        let mut pool = bus("frames", vec![holder]);
        if let Ok(r) = &mut pool.state {
            r.journal = None;
            r.bytes_per_sec = None;
            r.pool = Some(super::super::model::PoolRow {
                block_size: 4096,
                blocks: 16,
                census: shmbus::pool::Census {
                    free: 13,
                    on_ring: 3,
                    ..Default::default()
                },
            });
        }
        let snap = Snapshot {
            at_ns: 1,
            interval_s: Some(0.5),
            buses: vec![pool],
        };
        let text = plain(&snap);
        assert!(
            text.contains("rate:        50.0 msgs/s, bytes/s n/a (pool bus)"),
            "{text}"
        );
        assert!(
            text.contains("pool:        16 × 4 KiB: 13 free · 3 on ring · 0 held ·"),
            "{text}"
        );
        assert!(
            text.contains("in use:      3 of 16 blocks (18.8%)\n"),
            "{text}"
        );
        let heading = text.lines().find(|l| l.contains("PID")).expect("a table");
        assert!(heading.trim_end().ends_with("HELD  STATE"), "{heading}");
        let row = text.lines().find(|l| l.contains(" 101 ")).expect("a row");
        assert!(row.trim_end().ends_with(" 2"), "{row}");
    }

    #[test]
    fn rates_and_sizes_read_well() {
        assert_eq!(count(1_234, 10), "1234");
        assert_eq!(count(12_708_812_345_678, 10), "12.7T");
        assert_eq!(count(u64::MAX, 10), "18.4E");
        assert_eq!(rate(None), "-");
        assert_eq!(rate(Some(2.25)), "2.2");
        assert_eq!(rate(Some(1234.0)), "1234");
        assert_eq!(rate(Some(123_456.0)), "123.5k");
        assert_eq!(rate(Some(2.5e6)), "2.5M");
        assert_eq!(bytes(512.0), "512 B");
        assert_eq!(bytes(1536.0), "1.5 KiB");
        assert_eq!(byte_rate(Some(3.0 * 1024.0 * 1024.0)), "3.0 MiB/s");
        assert_eq!(fit("abcdef", 4, Align::Left), "abc…");
        assert_eq!(fit("ab", 4, Align::Right), "  ab");
    }
}
