//! One frame of the live view, drawn with ratatui: the title, the bus
//! list, the selected bus's figures and subscribers (a blackboard's
//! hottest keys), the keys. The words
//! and numbers come from `figures`; this file places and colours them.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Style, Stylize};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, List, ListItem, ListState, Paragraph};

use super::super::model::{BusRow, BusView, Snapshot, SubRow};
use super::super::pool;
use super::figures::{
    Align, all_sub_columns, byte_rate, bytes, error_text, facts, fill_text, fit, rate, role_text,
    sub_cells, sub_headings, sub_state,
};
use super::view::{View, ordered};
use super::{board, calls};
use crate::cmd::inspect::escaped;

/// One frame of the view: title, buses, the selected bus, keys.
pub(super) fn draw(frame: &mut Frame, view: &View, snap: &Snapshot) {
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
    ("KIND", 10, Align::Left),
    ("MSGS/S", 9, Align::Right),
    ("BYTES/S", 12, Align::Right),
    ("HEAD", 12, Align::Right),
    ("EPOCH", 5, Align::Right),
    ("PUBLISHER", 14, Align::Left),
    ("SUBS", 4, Align::Right),
];

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
        columns("NAME", width, &names, "JOURNAL / STREAM / POOL / KEYS")
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
    if let Some(svc) = &r.service {
        // Its responses are its messages; its live clients its subscribers.
        return [
            r.kind.clone(),
            rate(r.msgs_per_sec),
            "-".into(),
            r.published.to_string(),
            "-".into(),
            format!("{} servers", svc.live_servers()),
            svc.live_clients().to_string(),
        ];
    }
    if let Some(b) = &r.blackboard {
        // Its updates are its messages: no bytes, epoch or subscribers.
        return [
            r.kind.clone(),
            rate(b.updates_per_sec),
            "-".into(),
            b.updates.to_string(),
            "-".into(),
            role_text(r.publisher_pid, r.publisher_alive, " "),
            "-".into(),
        ];
    }
    let stream = r.stream.is_some();
    [
        r.kind.clone(),
        // A stream counts bytes, not records: its rate is in BYTES/S.
        if stream {
            "-".into()
        } else {
            rate(r.msgs_per_sec)
        },
        byte_rate_cell(r),
        r.head.to_string(),
        r.epoch.map_or_else(|| "-".into(), |e| e.to_string()),
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
    if let Some(b) = &r.blackboard {
        return board::bus_extra(b);
    }
    if let Some(svc) = &r.service {
        return calls::bus_extra(svc);
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
        Ok(r) if r.blackboard.is_some() => format!(" {name}, hottest keys "),
        Ok(r) if r.service.is_some() => format!(" servers and clients of {name} "),
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
    if let Some(b) = &r.blackboard {
        let mut hot = board::hot_lines(b).into_iter();
        if let Some(heading) = hot.next() {
            lines.push(if b.hottest.is_empty() {
                Line::from(heading).dim()
            } else {
                Line::from(heading).bold()
            });
        }
        lines.extend(hot.map(Line::from));
    } else if let Some(svc) = &r.service {
        let rows = calls::lines(svc);
        // What does not fit is counted rather than cut off unseen.
        let room = usize::from(inner.height).saturating_sub(lines.len());
        let shown = if rows.len() > room {
            room.saturating_sub(1)
        } else {
            rows.len()
        };
        for (heading, row) in &rows[..shown] {
            lines.push(if *heading {
                Line::from(row.clone()).bold()
            } else {
                Line::from(row.clone())
            });
        }
        if shown < rows.len() {
            lines.push(Line::from(format!("… and {} more lines", rows.len() - shown)).dim());
        }
    } else if r.stream.is_some() {
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

/// Where LAG% is in [`SUB_COLUMNS`](super::figures::SUB_COLUMNS): the cell
/// that is highlighted.
const LAG_PERCENT: usize = 4;

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
    if s.gone { line.dim() } else { line }
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use ratatui::style::{Color, Modifier};

    use super::super::fixtures::{line_with, sample, screen};
    use super::super::view::View;

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
}
