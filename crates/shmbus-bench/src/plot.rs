//! The SVG plot: latency percentiles per mechanism, throughput by size.
//!
//! Two panels side by side and one legend beside them, shared because a
//! mechanism has the same color in both panels. Below them, when it ran,
//! the many-publishers table as bars (ns per message, linear). Text is written as SVG
//! `<text>` elements, so no font is needed here; label widths are estimated.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::case::Pattern;
use crate::error::BenchError;
use crate::figures::Figures;
use crate::many_publishers::Row;

const WIDTH: u32 = 1200;
/// The panels' height; the legend strip below them adds a row per
/// `LEGEND_COLUMNS` mechanisms.
const PANEL_HEIGHT: u32 = 450;
const LATENCY_WIDTH: u32 = 610;
const LEGEND_COLUMNS: usize = 4;
const LEGEND_ROW: u32 = 28;
/// The many-publishers strip: title, then a row per bar.
const MPMC_TITLE: u32 = 44;
const MPMC_ROW: u32 = 26;
/// Width of the strip's labels, left of the bars.
const MPMC_LABEL: i32 = 470;
const FONT: &str = "sans-serif";
// Font sizes as plotters takes them: it writes 1/1.24 of these to the SVG.
const TITLE: f64 = 24.0;
const LABEL: f64 = 17.0;
const DESC: f64 = 18.0;

/// `shmbus` itself: the one line to look at.
const SHMBUS: RGBColor = RGBColor(214, 39, 40);
/// `floor`, the bound below which nothing goes: a neutral reference.
const FLOOR: RGBColor = RGBColor(100, 100, 100);
/// Its variants (`floor-2line`): a lighter gray.
const FLOOR_VARIANT: RGBColor = RGBColor(165, 165, 165);
/// Everything else, in order of appearance (no red, no gray).
const PALETTE: [RGBColor; 12] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 128),
    RGBColor(128, 128, 0),
    RGBColor(0, 0, 0),
    RGBColor(0, 128, 128),
];
const GRID_LIGHT: RGBColor = RGBColor(236, 236, 236);
const GRID_BOLD: RGBColor = RGBColor(200, 200, 200);
const NOTE: RGBColor = RGBColor(90, 90, 90);

/// Percentiles on the latency panel's x axis, `None` for the maximum.
const PERCENTILES: [(&str, Option<f64>); 5] = [
    ("p50", Some(0.5)),
    ("p90", Some(0.9)),
    ("p99", Some(0.99)),
    ("p99.9", Some(0.999)),
    ("max", None),
];
/// Slots between the first points of two latency groups: the percentiles
/// and a gap. The x axis counts half slots, so that it can be padded by
/// half a slot with integer coordinates (plotters formats integer axes).
const GROUP_STRIDE: i32 = 6;

/// The latency panel's x coordinate of percentile `i` in group `k`.
fn slot(k: usize, i: usize) -> i32 {
    2 * (k as i32 * GROUP_STRIDE + i as i32)
}

/// How one mechanism is drawn.
struct Look {
    name: &'static str,
    label: String,
    color: RGBColor,
}

impl Look {
    fn prominent(&self) -> bool {
        self.name == "shmbus"
    }

    fn line(&self) -> ShapeStyle {
        self.color
            .stroke_width(if self.prominent() { 4 } else { 2 })
    }

    fn marker(&self) -> u32 {
        if self.prominent() { 5 } else { 3 }
    }
}

/// One line: a mechanism and its points.
struct Line<'a, X> {
    look: &'a Look,
    points: Vec<(X, f64)>,
}

/// A group of the latency panel: one pattern at one size.
struct Group<'a> {
    caption: &'static str,
    size: usize,
    figures: Vec<&'a Figures>,
}

/// Writes the plot to `path`.
pub fn write(
    results: &[Figures],
    mpmc: &[Row],
    ticks_per_ns: f64,
    path: &Path,
) -> Result<(), BenchError> {
    draw(results, mpmc, ticks_per_ns, path).map_err(|why| BenchError::Plot {
        path: path.to_owned(),
        why,
    })
}

/// Draws the plot; the error is plotters' own, as text (its type is
/// generic over the backend).
fn draw(results: &[Figures], mpmc: &[Row], t: f64, path: &Path) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<_>| e.to_string();
    let groups = latency_groups(results, t);
    let rates = throughput_figures(results);
    let looks = looks(
        groups
            .iter()
            .flat_map(|g| g.figures.iter().copied())
            .chain(rates.iter().copied()),
    );

    let rows = looks.len().div_ceil(LEGEND_COLUMNS).max(1) as u32;
    let legend_height = 16 + rows * LEGEND_ROW;
    let mpmc_height = if mpmc.is_empty() {
        0
    } else {
        MPMC_TITLE + mpmc.len() as u32 * MPMC_ROW + 12
    };
    let height = PANEL_HEIGHT + legend_height + mpmc_height;
    let root = SVGBackend::new(path, (WIDTH, height)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let (panels, rest) = root.split_vertically(PANEL_HEIGHT);
    let (legend, strip) = rest.split_vertically(legend_height);
    if !mpmc.is_empty() {
        mpmc_strip(&strip, mpmc).map_err(err)?;
    }
    let (left, right) = panels.split_horizontally(LATENCY_WIDTH);
    latency_panel(&root, &left, &groups, &looks, t).map_err(err)?;
    throughput_panel(&right, &rates, &looks).map_err(err)?;
    legend_panel(&legend, &looks).map_err(err)?;
    root.present().map_err(err)
}

/// The pingpong and oneway figures that have latencies, grouped.
fn latency_groups(results: &[Figures], t: f64) -> Vec<Group<'_>> {
    let usable = |f: &&Figures| f.ran() && f.ns(0.5, t).is_some();
    [
        (Pattern::Pingpong, "pingpong round trip"),
        (Pattern::Oneway, "oneway, paced"),
    ]
    .into_iter()
    .filter_map(|(pattern, caption)| {
        let size = results
            .iter()
            .filter(usable)
            .find(|f| f.case.pattern == pattern)?
            .case
            .msg_size;
        let figures = results
            .iter()
            .filter(usable)
            .filter(|f| f.case.pattern == pattern && f.case.msg_size == size)
            .collect();
        Some(Group {
            caption,
            size,
            figures,
        })
    })
    .collect()
}

/// The throughput figures that have a rate.
fn throughput_figures(results: &[Figures]) -> Vec<&Figures> {
    results
        .iter()
        .filter(|f| f.case.pattern == Pattern::Throughput && f.ran())
        .filter(|f| f.msgs_per_sec().is_some_and(|r| r > 0.0))
        .collect()
}

/// One look per mechanism, in order of first appearance.
fn looks<'a>(figures: impl Iterator<Item = &'a Figures>) -> Vec<Look> {
    let mut out: Vec<Look> = Vec::new();
    let mut next = 0;
    for f in figures {
        if out.iter().any(|l| l.name == f.mechanism) {
            continue;
        }
        let color = match f.mechanism {
            "shmbus" => SHMBUS,
            "floor" => FLOOR,
            name if name.starts_with("floor") => FLOOR_VARIANT,
            _ => {
                next += 1;
                PALETTE[(next - 1) % PALETTE.len()]
            }
        };
        let label = if f.in_process {
            format!("{} (in-process)", f.mechanism)
        } else {
            f.mechanism.to_owned()
        };
        out.push(Look {
            name: f.mechanism,
            label,
            color,
        });
    }
    out
}

fn look<'a>(looks: &'a [Look], name: &str) -> &'a Look {
    looks
        .iter()
        .find(|l| l.name == name)
        .expect("every plotted mechanism has a look")
}

/// Draws lines, `shmbus` last so that it is on top.
fn draw_lines<DB, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    lines: &[Line<'_, X::ValueType>],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend,
    X: Ranged,
    X::ValueType: Copy + 'static,
    Y: Ranged<ValueType = f64>,
{
    let (loud, quiet): (Vec<&Line<_>>, Vec<&Line<_>>) =
        lines.iter().partition(|l| l.look.prominent());
    for line in quiet.into_iter().chain(loud) {
        let style = line.look.line();
        chart.draw_series(LineSeries::new(line.points.iter().copied(), style))?;
        chart.draw_series(
            line.points
                .iter()
                .map(|&p| Circle::new(p, line.look.marker(), style.filled())),
        )?;
    }
    Ok(())
}

fn latency_panel<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    area: &DrawingArea<DB, Shift>,
    groups: &[Group<'_>],
    looks: &[Look],
    t: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let title = match groups {
        [] => "latency by percentile".to_owned(),
        [g] => format!("{}, {}", g.caption, bytes(g.size as f64)),
        [a, b, ..] if a.size == b.size => {
            format!("latency by percentile, {}", bytes(a.size as f64))
        }
        _ => "latency by percentile".to_owned(),
    };
    let mut lines = Vec::new();
    for (k, g) in groups.iter().enumerate() {
        for f in &g.figures {
            let points = PERCENTILES
                .iter()
                .enumerate()
                .filter_map(|(i, (_, q))| {
                    let v = match q {
                        Some(q) => f.ns(*q, t),
                        None => f.max_ns(t),
                    }?;
                    Some((slot(k, i), v.max(1.0)))
                })
                .collect();
            lines.push(Line {
                look: look(looks, f.mechanism),
                points,
            });
        }
    }
    let Some((lo, hi)) = extent(lines.iter().flat_map(|l| l.points.iter().map(|p| p.1))) else {
        return no_data(area, &title);
    };
    let (ylo, yhi, bold, light) = log_ticks(lo, hi);
    let xs: Vec<i32> = (0..groups.len())
        .flat_map(|k| (0..PERCENTILES.len()).map(move |i| slot(k, i)))
        .collect();
    let xhi = slot(groups.len() - 1, PERCENTILES.len() - 1) + 1;
    let several = groups.len() > 1;
    let mut chart = ChartBuilder::on(area)
        .caption(&title, (FONT, TITLE))
        .margin(12)
        .margin_right(20)
        .x_label_area_size(if several { 52 } else { 44 })
        .y_label_area_size(72)
        .build_cartesian_2d(
            (-1..xhi).with_key_points(xs),
            (ylo..yhi)
                .log_scale()
                .with_key_points(bold)
                .with_light_points(light),
        )?;
    let x_fmt = |x: &i32| {
        let i = (x / 2).rem_euclid(GROUP_STRIDE) as usize;
        PERCENTILES.get(i).map_or(String::new(), |p| p.0.to_owned())
    };
    let y_fmt = |v: &f64| nanos(*v);
    let ylabel = match groups {
        [g] if g.caption.starts_with("pingpong") => "round-trip time",
        [_] => "one-way latency",
        _ => "latency",
    };
    let mut mesh = chart.configure_mesh();
    mesh.x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style((FONT, LABEL))
        .axis_desc_style((FONT, DESC))
        .y_desc(ylabel)
        .light_line_style(GRID_LIGHT)
        .bold_line_style(GRID_BOLD);
    if !several {
        mesh.x_desc("percentile");
    }
    mesh.draw()?;
    draw_lines(&mut chart, &lines)?;
    if several {
        // Each group's name under its tick labels, a rule between groups.
        for (k, g) in groups.iter().enumerate() {
            let mid = (slot(k, 0) + slot(k, PERCENTILES.len() - 1)) / 2;
            let (px, py) = chart.backend_coord(&(mid, ylo));
            root.draw(&Text::new(
                format!("{}, {}", g.caption, bytes(g.size as f64)),
                (px, py + 28),
                (FONT, DESC)
                    .into_font()
                    .color(&BLACK)
                    .pos(Pos::new(HPos::Center, VPos::Top)),
            ))?;
            if k > 0 {
                let x = (slot(k - 1, PERCENTILES.len() - 1) + slot(k, 0)) / 2;
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(x, ylo), (x, yhi)],
                    GRID_BOLD.stroke_width(2),
                )))?;
            }
        }
    }
    Ok(())
}

fn throughput_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    figures: &[&Figures],
    looks: &[Look],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let mut lines: Vec<Line<f64>> = Vec::new();
    for f in figures {
        let Some(rate) = f.msgs_per_sec() else {
            continue;
        };
        let point = (f.case.msg_size as f64, rate);
        match lines.iter_mut().find(|l| l.look.name == f.mechanism) {
            Some(l) => l.points.push(point),
            None => lines.push(Line {
                look: look(looks, f.mechanism),
                points: vec![point],
            }),
        }
    }
    for l in &mut lines {
        l.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let sizes = extent(lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)));
    let title = match sizes {
        Some((a, b)) if a < b => {
            format!("throughput by message size, {} to {}", bytes(a), bytes(b))
        }
        Some((a, _)) => format!("throughput, {} messages", bytes(a)),
        None => "throughput by message size".to_owned(),
    };
    let (Some((xlo, xhi)), Some((lo, hi))) = (
        sizes,
        extent(lines.iter().flat_map(|l| l.points.iter().map(|p| p.1))),
    ) else {
        return no_data(area, &title);
    };
    // Half an octave either side; labels on powers of 4, grid on powers of 2.
    let (xlo, xhi) = (xlo / 1.5, xhi * 1.5);
    let pow2 = |step: usize| {
        (0..64)
            .step_by(step)
            .map(|e| 2f64.powi(e))
            .filter(|&v| v >= xlo && v <= xhi)
            .collect::<Vec<_>>()
    };
    let (ylo, yhi, bold, light) = log_ticks(lo, hi);
    let mut chart = ChartBuilder::on(area)
        .caption(&title, (FONT, TITLE))
        .margin(12)
        .margin_right(20)
        .x_label_area_size(44)
        .y_label_area_size(72)
        .build_cartesian_2d(
            (xlo..xhi)
                .log_scale()
                .with_key_points(pow2(2))
                .with_light_points(pow2(1)),
            (ylo..yhi)
                .log_scale()
                .with_key_points(bold)
                .with_light_points(light),
        )?;
    let x_fmt = |v: &f64| bytes(*v);
    let y_fmt = |v: &f64| rate(*v);
    chart
        .configure_mesh()
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style((FONT, LABEL))
        .axis_desc_style((FONT, DESC))
        .x_desc("message size")
        .y_desc("messages per second")
        .light_line_style(GRID_LIGHT)
        .bold_line_style(GRID_BOLD)
        .draw()?;
    draw_lines(&mut chart, &lines)
}

fn legend_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    looks: &[Look],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (w, _) = area.dim_in_pixel();
    let left = 40;
    let column = (w as i32 - 2 * left) / LEGEND_COLUMNS as i32;
    let text = |s: &str, x, y, color: &RGBColor| {
        Text::new(
            s.to_owned(),
            (x, y),
            (FONT, DESC)
                .into_font()
                .color(color)
                .pos(Pos::new(HPos::Left, VPos::Center)),
        )
    };
    if looks.is_empty() {
        return area.draw(&text(
            "no mechanism ran",
            left,
            LEGEND_ROW as i32 / 2,
            &NOTE,
        ));
    }
    for (i, l) in looks.iter().enumerate() {
        let x = left + (i % LEGEND_COLUMNS) as i32 * column;
        let y = (i / LEGEND_COLUMNS) as i32 * LEGEND_ROW as i32 + LEGEND_ROW as i32 / 2;
        area.draw(&PathElement::new(vec![(x, y), (x + 32, y)], l.line()))?;
        area.draw(&Circle::new((x + 16, y), l.marker(), l.line().filled()))?;
        area.draw(&text(&l.label, x + 42, y, &BLACK))?;
    }
    Ok(())
}

/// The many-publishers table as horizontal bars, one per row, with figures.
fn mpmc_strip<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    rows: &[Row],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let (w, _) = area.dim_in_pixel();
    let text = |s: String, x, y, pos| {
        Text::new(s, (x, y), (FONT, DESC).into_font().color(&BLACK).pos(pos))
    };
    let left = Pos::new(HPos::Left, VPos::Center);
    area.draw(&Text::new(
        "many publishers and subscriber groups, 64 B messages: ns per message \
         (receive: per consumer)",
        (40, MPMC_TITLE as i32 / 2),
        (FONT, DESC * 1.1).into_font().color(&BLACK).pos(left),
    ))?;
    let max = rows
        .iter()
        .map(|r| r.ns)
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
        .max(1e-9);
    let x0 = 40 + MPMC_LABEL;
    let span = f64::from(w as i32 - x0 - 120);
    for (i, r) in rows.iter().enumerate() {
        let y = MPMC_TITLE as i32 + i as i32 * MPMC_ROW as i32 + MPMC_ROW as i32 / 2;
        let color = if r.mechanism == "shmbus" {
            SHMBUS
        } else {
            PALETTE[0]
        };
        area.draw(&text(r.what.clone(), 40, y, left))?;
        let len = if r.ns.is_finite() {
            (r.ns / max * span).round() as i32
        } else {
            0
        };
        area.draw(&Rectangle::new(
            [(x0, y - 8), (x0 + len.max(1), y + 8)],
            color.filled(),
        ))?;
        area.draw(&text(nanos(r.ns), x0 + len + 8, y, left))?;
    }
    Ok(())
}

/// A panel with its title and a note that there is nothing to show.
fn no_data<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let inner = area.margin(12, 56, 84, 20).titled(title, (FONT, TITLE))?;
    let (w, h) = inner.dim_in_pixel();
    inner.draw(&Rectangle::new(
        [(0, 0), (w as i32 - 1, h as i32 - 1)],
        GRID_BOLD.stroke_width(1),
    ))?;
    inner.draw(&Text::new(
        "no data",
        (w as i32 / 2, h as i32 / 2),
        (FONT, DESC)
            .into_font()
            .color(&NOTE)
            .pos(Pos::new(HPos::Center, VPos::Center)),
    ))
}

/// The smallest and largest of some positive, finite values.
fn extent(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((a, b)) => Some((v.min(a), v.max(b))),
        })
}

/// A log axis around `lo..=hi`: its ends, labeled ticks, grid lines.
///
/// Decades when the data spans more than two; else the 1-2-5 steps.
fn log_ticks(lo: f64, hi: f64) -> (f64, f64, Vec<f64>, Vec<f64>) {
    let d0 = lo.log10().floor() as i32;
    let d1 = (hi.log10().ceil() as i32).max(d0 + 1);
    let steps: Vec<f64> = (d0..=d1)
        .flat_map(|d| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(d)))
        .collect();
    let (bold, axis_lo, axis_hi) = if d1 - d0 > 2 {
        let decades: Vec<f64> = (d0..=d1).map(|d| 10f64.powi(d)).collect();
        (decades, 10f64.powi(d0), 10f64.powi(d1))
    } else {
        let a = steps
            .iter()
            .copied()
            .filter(|&s| s <= lo)
            .fold(steps[0], f64::max);
        let b = steps
            .iter()
            .copied()
            .find(|&s| s >= hi && s > a)
            .unwrap_or(10f64.powi(d1 + 1));
        let bold = steps
            .iter()
            .copied()
            .filter(|&s| s >= a && s <= b)
            .collect();
        (bold, a, b)
    };
    // Every multiple over a few decades; past that, fewer, or it is a smear.
    let multiples: &[u8] = if d1 - d0 > 3 {
        &[1, 2, 5]
    } else {
        &[1, 2, 3, 4, 5, 6, 7, 8, 9]
    };
    let light = (d0..=d1)
        .flat_map(|d| multiples.iter().map(move |&m| f64::from(m) * 10f64.powi(d)))
        .filter(|&v| v >= axis_lo && v <= axis_hi)
        .collect();
    (axis_lo, axis_hi, bold, light)
}

/// A tick value without needless decimals: 1, 2.5, 0.5.
fn short(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn nanos(v: f64) -> String {
    match v {
        v if v >= 1e9 => format!("{} s", short(v / 1e9)),
        v if v >= 1e6 => format!("{} ms", short(v / 1e6)),
        v if v >= 1e3 => format!("{} µs", short(v / 1e3)),
        v => format!("{} ns", short(v)),
    }
}

fn rate(v: f64) -> String {
    match v {
        v if v >= 1e9 => format!("{} G/s", short(v / 1e9)),
        v if v >= 1e6 => format!("{} M/s", short(v / 1e6)),
        v if v >= 1e3 => format!("{} k/s", short(v / 1e3)),
        v => format!("{} /s", short(v)),
    }
}

fn bytes(v: f64) -> String {
    match v {
        v if v >= 1024.0 * 1024.0 => format!("{} MiB", short(v / 1024.0 / 1024.0)),
        v if v >= 1024.0 => format!("{} KiB", short(v / 1024.0)),
        v => format!("{} B", short(v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_cover_the_data() {
        for (lo, hi) in [
            (180.0, 45_000.0),
            (300.0, 800.0),
            (1000.0, 1000.0),
            (2e5, 3e7),
        ] {
            let (a, b, bold, light) = log_ticks(lo, hi);
            assert!(a <= lo && b >= hi && a < b, "{lo}..{hi} -> {a}..{b}");
            assert!(bold.len() >= 2, "{lo}..{hi}: {bold:?}");
            assert!(bold.iter().chain(&light).all(|&v| v >= a && v <= b));
        }
    }

    #[test]
    fn labels() {
        assert_eq!(nanos(100.0), "100 ns");
        assert_eq!(nanos(1000.0), "1 µs");
        assert_eq!(nanos(20_000.0), "20 µs");
        assert_eq!(rate(1e6), "1 M/s");
        assert_eq!(rate(5e5), "500 k/s");
        assert_eq!(bytes(16.0), "16 B");
        assert_eq!(bytes(65536.0), "64 KiB");
    }

    #[test]
    fn empty_results_still_draw() {
        let path = std::env::temp_dir().join(format!("shmbus-plot-{}.svg", std::process::id()));
        write(&[], &[], 1.0, &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(svg.contains("no data"));
        assert!(!svg.contains("many publishers"));
    }

    #[test]
    fn the_many_publishers_table_is_drawn_as_bars_with_its_figures() {
        let path = std::env::temp_dir().join(format!("shmbus-plot-mp-{}.svg", std::process::id()));
        let rows = [
            Row {
                what: "shmbus ManyPublisher, 2 processes".into(),
                mechanism: "shmbus",
                measure: "publish",
                ns: 42.5,
                detail: serde_json::Value::Null,
            },
            Row {
                what: "photon-ring MpPublisher, 2 threads".into(),
                mechanism: "photon-ring",
                measure: "publish",
                ns: 30.0,
                detail: serde_json::Value::Null,
            },
        ];
        write(&[], &rows, 1.0, &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(svg.contains("many publishers and subscriber groups"));
        assert!(svg.contains("shmbus ManyPublisher, 2 processes"));
        assert!(
            svg.contains("42.5 ns") && svg.contains("30 ns"),
            "figures on the bars"
        );
    }
}
