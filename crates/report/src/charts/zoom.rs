//! `boundary-zoom.png` — a close-up of the fixed window's worst window.
//!
//! For each limiter, the line is exactly what it let one key through in the
//! window before each instant, `(t − W, t]` — `peak_in_window`'s own
//! measure, stepped at every pass and every expiry — over a few
//! milliseconds around the window boundary where the fixed window's
//! counter reset. The shaded span is the fixed window's worst window; the
//! solid vertical is the boundary. Under boundary traffic the fixed
//! window's line climbs to 100 just before the boundary and to 200 at it.
//!
//! Unlike the charts in [`super::CHARTS`], this one needs the time of every
//! pass, which no run-directory file holds, so `ratesim explain boundary`
//! draws it from a re-run; `ratesim plot` does not redraw it.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::data::RunData;
use super::style::{self, Mark};

pub const FILE: &str = crate::rundir::BOUNDARY_ZOOM_PNG;

/// What to read from it, for `summary.md` and the README.
pub(crate) const ABOUT: &str = "a close-up of the fixed window's worst window (drawn by `ratesim explain boundary`): what each limiter let one key through in the window before each instant, around the boundary where the fixed window's counter reset";
pub const SIZE: (u32, u32) = (1200, 720);

/// The length in pixels of one dash where lines coincide.
const DASH: i32 = 12;

/// One limiter's passes for one key: `(time passed, cost)`, in time order.
#[derive(Debug, Clone, PartialEq)]
pub struct Passes {
    pub index: usize,
    pub name: String,
    pub passes: Vec<(u64, u64)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ZoomLine {
    pub index: usize,
    pub name: String,
    /// Cost passed within the worst window `(end − W, end]`.
    pub in_window: u64,
    /// `(t, cost passed in (t − W, t])` at every change within the view,
    /// as a step function (each change appears twice: before and after).
    pub steps: Vec<(u64, u64)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ZoomSeries {
    pub window_ns: u64,
    pub limit: u64,
    /// The worst window is `(end − W, end]`.
    pub window_end: u64,
    /// The window boundary `k·W` inside it where a fixed window resets.
    pub boundary: u64,
    /// The close-up's time span.
    pub view: (u64, u64),
    /// Index into `lines` of the limiter whose worst window this is.
    pub fixed: usize,
    pub lines: Vec<ZoomLine>,
}

impl ZoomSeries {
    pub fn window_start(&self) -> u64 {
        self.window_end.saturating_sub(self.window_ns)
    }
}

/// The close-up of the worst window `(window_end − W, window_end]` of
/// `lines[fixed]`: it spans that limiter's passes within the window and the
/// boundary, with as much again on either side (at least W/1000). `lines`
/// must hold every pass in `(window_end − 3W, window_end + W]`.
pub fn zoom_series(
    window_ns: u64,
    limit: u64,
    window_end: u64,
    fixed: usize,
    lines: &[Passes],
) -> ZoomSeries {
    let w = window_ns;
    let start = window_end.saturating_sub(w);
    let boundary = window_end / w * w;
    let inside = |t: u64| t > start && t <= window_end;
    let fixed_passes: Vec<u64> = lines
        .get(fixed)
        .map(|l| {
            l.passes
                .iter()
                .map(|p| p.0)
                .filter(|&t| inside(t))
                .collect()
        })
        .unwrap_or_default();
    let first = fixed_passes
        .iter()
        .copied()
        .min()
        .unwrap_or(boundary)
        .min(boundary);
    let last = fixed_passes
        .iter()
        .copied()
        .max()
        .unwrap_or(boundary)
        .max(boundary);
    let pad = ((last - first) / 2).max(w / 1000).max(1);
    let view = (first.saturating_sub(pad), last + pad);

    let lines = lines
        .iter()
        .map(|l| ZoomLine {
            index: l.index,
            name: l.name.clone(),
            in_window: l.passes.iter().filter(|p| inside(p.0)).map(|p| p.1).sum(),
            steps: rolling_steps(&l.passes, w, view),
        })
        .collect();
    ZoomSeries {
        window_ns: w,
        limit,
        window_end,
        boundary,
        view,
        fixed,
        lines,
    }
}

/// The cost passed in `(t − w, t]` for `t` across `view`, as steps.
fn rolling_steps(passes: &[(u64, u64)], w: u64, (lo, hi): (u64, u64)) -> Vec<(u64, u64)> {
    let in_span = |t: u64| t > lo.saturating_sub(w) && t <= lo;
    let mut level: u64 = passes.iter().filter(|p| in_span(p.0)).map(|p| p.1).sum();
    // Changes within (lo, hi]: +cost at each pass, −cost when it expires.
    let mut changes: Vec<(u64, i128)> = Vec::new();
    for &(t, c) in passes {
        if t > lo && t <= hi {
            changes.push((t, c as i128));
        }
        let expiry = t + w;
        if expiry > lo && expiry <= hi {
            changes.push((expiry, -(c as i128)));
        }
    }
    changes.sort_unstable();
    let mut steps = vec![(lo, level)];
    let mut i = 0;
    while i < changes.len() {
        let t = changes[i].0;
        let mut delta = 0i128;
        while i < changes.len() && changes[i].0 == t {
            delta += changes[i].1;
            i += 1;
        }
        let next = (level as i128 + delta).max(0) as u64;
        if next != level {
            steps.push((t, level));
            steps.push((t, next));
            level = next;
        }
    }
    steps.push((hi, level));
    steps
}

/// Milliseconds for the x axis, with the decimals the span needs.
fn ms_label(ns: f64, span: f64) -> String {
    let places = if span >= 50e6 {
        0
    } else if span >= 2e6 {
        1
    } else if span >= 2e5 {
        2
    } else {
        4
    };
    format!("{:.places$}", ns / 1e6)
}

/// The colour of each line: its limiter's, from the `summary.json` of the
/// run directory the close-up is drawn into (its algorithm's colour, as in
/// every other chart), else the colour of the algorithm its name is.
fn line_colors(s: &ZoomSeries, path: &Path) -> Vec<RGBColor> {
    let run = path
        .parent()
        .and_then(|d| std::fs::read_to_string(d.join(crate::rundir::SUMMARY_JSON)).ok())
        .and_then(|t| RunData::from_summary_json(&t).ok());
    s.lines
        .iter()
        .enumerate()
        .map(|(k, l)| match &run {
            Some(run) if run.limiters.get(l.index).is_some_and(|r| r.name == l.name) => {
                style::limiter_color(run, l.index)
            }
            _ => style::shade(style::algorithm_color(&l.name), k, s.lines.len()),
        })
        .collect()
}

/// The pieces of the axis-aligned path `points` (pixels) in dash slot
/// `slot` of `n`: a horizontal piece by its x, a vertical one by its y, in
/// runs of [`DASH`] pixels. Lines that coincide share those positions, so
/// each shows its own colour in its own slots.
pub(crate) fn dash_slots(points: &[(i32, i32)], slot: usize, n: usize) -> Vec<[(i32, i32); 2]> {
    let n = n.max(1) as i32;
    let mut out = Vec::new();
    for w in points.windows(2) {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        let horizontal = y0 == y1;
        let (a, b) = if horizontal { (x0, x1) } else { (y0, y1) };
        let (lo, hi) = (a.min(b), a.max(b));
        let mut d = lo.div_euclid(DASH);
        while d * DASH < hi {
            if d.rem_euclid(n) == slot as i32 {
                let (p, q) = ((d * DASH).max(lo), ((d + 1) * DASH).min(hi));
                out.push(if horizontal {
                    [(p, y0), (q, y0)]
                } else {
                    [(x0, p), (x0, q)]
                });
            }
            d += 1;
        }
    }
    out
}

pub fn draw_zoom(scenario: &str, s: &ZoomSeries, path: &Path) -> anyhow::Result<()> {
    style::ensure_fonts()?;
    let colors = line_colors(s, path);
    let scenario = style::drawable(scenario);
    let mut s = s.clone();
    for l in &mut s.lines {
        l.name = style::drawable(&l.name);
    }
    let s = &s;
    let window = style::duration(s.window_ns);
    let fixed = s
        .lines
        .get(s.fixed)
        .ok_or_else(|| anyhow::anyhow!("the close-up has no line {}", s.fixed))?;
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let shade = RGBColor(0xFF, 0xF3, 0xC4);
    let mut legend: Vec<(Mark, String)> = s
        .lines
        .iter()
        .zip(&colors)
        .map(|(l, &c)| (Mark::Line(c), format!("{}: {}", l.name, l.in_window)))
        .collect();
    legend.push((Mark::Dashed(style::LIMIT), format!("limit {}", s.limit)));
    legend.push((Mark::Swatch(shade), "the worst window".into()));
    legend.push((Mark::Dotted(style::INK), "window boundary".into()));
    let body = style::header(
        &root,
        &format!(
            "{scenario} — close-up of the worst window: {} let {} through in ({}, {}]",
            fixed.name,
            fixed.in_window,
            style::duration(s.window_start()),
            style::duration(s.window_end)
        ),
        &[
            format!(
                "Each line: what the limiter let one key through in the {window} before each instant, exactly (re-simulated, every pass)."
            ),
            format!(
                "Legend: the count in the shaded worst window. At the boundary ({}) a fixed window's counter resets; the others remember. Lines are drawn at their exact values; where they coincide, in alternating dashes of each colour.",
                style::duration(s.boundary)
            ),
        ],
        &legend,
    )?;

    let (lo, hi) = (s.view.0 as f64, s.view.1 as f64);
    let top = s
        .lines
        .iter()
        .flat_map(|l| l.steps.iter().map(|p| p.1))
        .max()
        .unwrap_or(0)
        .max(s.limit) as f64
        * 1.2;
    let mut chart = ChartBuilder::on(&body)
        .margin_left(16)
        .margin_right(30)
        .margin_top(12)
        .margin_bottom(8)
        .x_label_area_size(56)
        .y_label_area_size(90)
        .build_cartesian_2d(lo..hi, 0f64..top.max(1.0))?;
    let span = hi - lo;
    chart
        .configure_mesh()
        .x_labels(9)
        .y_labels(8)
        .x_label_formatter(&|t| ms_label(*t, span))
        .y_label_formatter(&|v| style::count(*v))
        .x_desc("time since the start of the run (ms)")
        .y_desc(format!("passed for one key in the last {window}"))
        .axis_desc_style(style::text(16, style::INK))
        .label_style(style::text(14, style::INK))
        .bold_line_style(style::GRID)
        .light_line_style(WHITE)
        .draw()?;

    let w0 = (s.window_start() as f64).max(lo);
    let w1 = (s.window_end as f64).min(hi);
    if w1 > w0 {
        chart.draw_series([Rectangle::new([(w0, 0.0), (w1, top)], shade.filled())])?;
    }
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    let bx = chart.backend_coord(&(s.boundary as f64, 0.0)).0;
    style::dotted_vline(&root, bx, ys.start, ys.end, style::INK, 2)?;
    root.draw(&Text::new(
        format!("boundary {}", style::duration(s.boundary)),
        (bx + 6, ys.start + 6),
        style::anchored(style::bold(14, style::INK), HPos::Left, VPos::Top),
    ))?;
    let ly = chart.backend_coord(&(lo, s.limit as f64)).1;
    style::dashed_hline(&root, xs.start, xs.end, ly, style::LIMIT)?;

    // Every line at its exact value: first each one solid, then each one's
    // own dash slots on top, so where lines coincide every colour shows.
    let paths: Vec<Vec<(i32, i32)>> = s
        .lines
        .iter()
        .map(|l| {
            l.steps
                .iter()
                .map(|&(t, v)| chart.backend_coord(&(t as f64, v as f64)))
                .collect()
        })
        .collect();
    for (points, &c) in paths.iter().zip(&colors) {
        root.draw(&PathElement::new(points.clone(), c.stroke_width(3)))?;
    }
    for (slot, (points, &c)) in paths.iter().zip(&colors).enumerate() {
        for piece in dash_slots(points, slot, paths.len()) {
            root.draw(&PathElement::new(piece.to_vec(), c.stroke_width(3)))?;
        }
    }
    // Where the fixed window ends up, said on the chart.
    let after = fixed
        .steps
        .iter()
        .filter(|p| p.0 >= s.boundary)
        .map(|p| p.1)
        .max();
    if let Some(v) = after {
        let (x, y) = chart.backend_coord(&(s.boundary as f64, v as f64));
        root.draw(&Text::new(
            format!(
                "{}: {} = {}× the limit",
                fixed.name,
                fixed.in_window,
                style::trim(fixed.in_window as f64 / s.limit.max(1) as f64, 2)
            ),
            (x + 10, y - 12),
            style::anchored(
                style::bold(15, style::label_color(colors[s.fixed])),
                HPos::Left,
                VPos::Bottom,
            ),
        ))?;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;
    const MS: u64 = 1_000_000;

    fn line(index: usize, passes: &[(u64, u64)]) -> Passes {
        Passes {
            index,
            name: format!("l{index}"),
            passes: passes.to_vec(),
        }
    }

    #[test]
    fn the_view_spans_the_burst_either_side_of_the_boundary() {
        let fixed = line(0, &[(999 * MS, 100), (S, 100)]);
        let exact = line(1, &[(999 * MS, 100), (1999 * MS, 100)]);
        let z = zoom_series(S, 100, S, 0, &[fixed, exact]);
        assert_eq!(z.boundary, S);
        assert!(z.view.0 < 999 * MS && z.view.1 > S, "{:?}", z.view);
        assert_eq!(z.lines[0].in_window, 200);
        assert_eq!(z.lines[1].in_window, 100);
        let top = |l: &ZoomLine| l.steps.iter().map(|p| p.1).max().unwrap();
        assert_eq!(top(&z.lines[0]), 200);
        assert_eq!(top(&z.lines[1]), 100);
    }

    // Regression (chart details issue item 6): lines that coincided were
    // offset by a few pixels each, so the interval bucket's 101 was drawn
    // at about 97. Each line is now drawn at its value, and coinciding
    // lines share dash positions, one slot each.
    #[test]
    fn coinciding_lines_take_turns_in_dash_slots_at_the_same_pixels() {
        let path = [(0, 50), (60, 50), (60, 10)];
        let a = dash_slots(&path, 0, 2);
        let b = dash_slots(&path, 1, 2);
        assert_eq!(a[0], [(0, 50), (12, 50)]);
        assert_eq!(b[0], [(12, 50), (24, 50)]);
        // Together the slots cover the whole path, at its own pixels.
        let len = |v: &[[(i32, i32); 2]]| -> i32 {
            v.iter()
                .map(|[p, q]| (q.0 - p.0).abs() + (q.1 - p.1).abs())
                .sum()
        };
        assert_eq!(len(&a) + len(&b), 60 + 40);
        assert!(a.iter().chain(&b).all(|[p, q]| p.1 == q.1 || p.0 == 60));
    }

    #[test]
    fn passes_expire_one_window_later() {
        // Seen from (1.5s, 2.5s]: the pass at 1s is live until 2s.
        let steps = rolling_steps(&[(S, 3), (2 * S, 1)], S, (S + S / 2, 2 * S + S / 2));
        assert_eq!(
            steps,
            [(S + S / 2, 3), (2 * S, 3), (2 * S, 1), (2 * S + S / 2, 1)]
        );
    }
}
