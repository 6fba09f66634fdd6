//! What the user of the live view chose (the selected bus, the
//! subscribers' order) and the keys that change it.

use std::cmp::Reverse;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::super::model::{Snapshot, SubRow};

/// What a key does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Key {
    Quit,
    Up,
    Down,
    Next,
    Previous,
    Sort,
}

impl Key {
    pub(super) fn of(key: KeyEvent) -> Option<Key> {
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
pub(super) struct View {
    pub(super) interval: Duration,
    /// The selected bus's name: a bus that appears or goes before it in a
    /// later sample does not move the selection to another bus.
    pub(super) selected: Option<String>,
    /// Its index in the latest sample.
    pub(super) index: usize,
    /// Subscribers by lag, most behind first (else in registry order).
    pub(super) by_lag: bool,
}

impl View {
    pub(super) fn new(interval: Duration) -> View {
        View {
            interval,
            selected: None,
            index: 0,
            by_lag: false,
        }
    }

    /// Finds the selected bus in a new sample; if it has gone, selects the
    /// one now at its place.
    pub(super) fn follow(&mut self, snap: &Snapshot) {
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

    pub(super) fn press(&mut self, key: Key, snap: &Snapshot) {
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

    pub(super) fn order(&self) -> &'static str {
        if self.by_lag {
            "by lag"
        } else {
            "in registry order"
        }
    }
}

/// The subscribers in registry order, or by lag, most behind first; gone
/// and corrupt ones stay last, since their lag no longer moves.
pub(super) fn ordered(subs: &[SubRow], by_lag: bool) -> Vec<&SubRow> {
    let mut out: Vec<&SubRow> = subs.iter().collect();
    if by_lag {
        out.sort_by_key(|s| (s.gone, s.corrupt.is_some(), Reverse(s.line.lag)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{bus, line_with, sample, screen};
    use super::*;

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
        assert!(
            line_with(&lines, "> bad")
                .1
                .contains("not a shmbus segment")
        );
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
}
