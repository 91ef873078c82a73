//! `timeline.png` — what passed, over time, one panel per limiter.
//!
//! Each panel plots the requests that passed in the last window — a rolling
//! sum over `W / resolution` time-series buckets, so the policy's limit is
//! one horizontal line at its own value, not a per-bucket fraction of it.
//! A delayed request counts when the shaper releases it. Dotted verticals
//! mark the window boundaries where a fixed window's counter resets: under
//! boundary traffic the fixed window's line jumps to twice the limit right
//! after one, while the sliding log's stays flat at the limit.
//!
//! With many keys the line is all keys together, held against
//! `limit × keys`; per-key excess shows in `peak.png`.
//!
//! A limiter behind a shared store may have store outages
//! (`scenario.limiters[i].deployment.outages`): its panel shades them, so
//! what the limiter did while the store was down (`on_store_failure`) lines
//! up with the band — failing open climbs over the limit, failing closed
//! drops to zero, a local fallback holds near it.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::data::RunData;
use super::style::{self, Mark};
use super::Chart;

pub const CHART: Chart = Chart {
    file: "timeline.png",
    size: (1200, 900),
    about: "requests passed in the last window (a rolling sum) over time, one panel per limiter, against the limit; dotted lines are window boundaries — a fixed window jumps to 2× right after one; shaded bands are store outages",
    render,
};

/// The most window boundaries drawn; past that they would grey the panel.
const MAX_BOUNDARIES: u64 = 40;

/// One limiter's line.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineLine {
    /// The limiter's index (its colour).
    pub index: usize,
    pub name: String,
    /// Requests passed in each bucket (`timeseries.csv`'s `passed`).
    pub passed: Vec<u64>,
    /// `(bucket end in ns, requests passed in the span before it)`.
    pub rolling: Vec<(u64, u64)>,
    /// The policy's limit over one span, for all this limiter's keys.
    pub limit: f64,
    pub keys: u64,
    /// Store outages `[start, end)` in ns, clipped to the chart's time
    /// span (empty ones dropped).
    pub outages: Vec<(u64, u64)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TimelineSeries {
    /// Buckets summed per point, and the span they cover (`k × resolution`).
    pub buckets_per_span: usize,
    pub span_ns: u64,
    pub end_ns: u64,
    /// Window boundaries `k·W` in `(0, end)`, empty when there are too many
    /// to draw.
    pub boundaries: Vec<u64>,
    pub lines: Vec<TimelineLine>,
}

/// The rolling per-window sums of every limiter's passed requests.
pub fn timeline_series(data: &RunData) -> TimelineSeries {
    let res = data.resolution_ns;
    let k = ((data.window_ns as f64 / res as f64).round() as usize).max(1);
    let span_ns = k as u64 * res;
    let end_ns = data.series_end_ns();
    let n_bounds = end_ns.saturating_sub(1) / data.window_ns;
    let boundaries = if n_bounds <= MAX_BOUNDARIES {
        (1..=n_bounds).map(|i| i * data.window_ns).collect()
    } else {
        Vec::new()
    };
    let lines = data
        .limiters
        .iter()
        .enumerate()
        .map(|(index, l)| {
            let passed: Vec<u64> = l.series.iter().map(|b| b.passed).collect();
            let mut rolling = Vec::with_capacity(passed.len());
            let mut sum = 0u64;
            for (i, &p) in passed.iter().enumerate() {
                sum += p;
                if i >= k {
                    sum -= passed[i - k];
                }
                rolling.push(((i as u64 + 1) * res, sum));
            }
            let keys = l.keys.max(1);
            let outages = l
                .deployment
                .outages
                .iter()
                .map(|o| (o.start_ns.min(end_ns), o.end_ns.min(end_ns)))
                .filter(|(s, e)| s < e)
                .collect();
            TimelineLine {
                index,
                name: l.name.clone(),
                passed,
                rolling,
                limit: data.limit as f64 * keys as f64 * span_ns as f64 / data.window_ns as f64,
                keys,
                outages,
            }
        })
        .collect();
    TimelineSeries {
        buckets_per_span: k,
        span_ns,
        end_ns,
        boundaries,
        lines,
    }
}

/// The top of the shared y axis: room for every line and, unless it
/// would flatten them (many keys, few active at once), every limit.
pub fn y_top(s: &TimelineSeries) -> f64 {
    let data = s
        .lines
        .iter()
        .flat_map(|l| l.rolling.iter().map(|p| p.1 as f64))
        .fold(1.0f64, f64::max);
    let limits = s
        .lines
        .iter()
        .map(|l| l.limit)
        .filter(|&l| l <= 2.0 * data)
        .fold(0.0f64, f64::max);
    data.max(limits) * 1.15
}

fn render(data: &RunData, path: &Path) -> anyhow::Result<bool> {
    let series = timeline_series(data);
    if series.lines.is_empty() {
        return Ok(false);
    }
    draw_timeline(data, &series, path)?;
    Ok(true)
}

/// The part of the line `points` over `[s, e]`, with the line's values at
/// `s` and `e` interpolated: what an outage band's blended fill covers.
fn clip(points: &[(f64, f64)], s: f64, e: f64) -> Vec<(f64, f64)> {
    let at = |t: f64| -> f64 {
        let i = points.partition_point(|p| p.0 < t);
        match (i.checked_sub(1).map(|j| points[j]), points.get(i)) {
            (Some(a), Some(b)) if b.0 > a.0 => a.1 + (b.1 - a.1) * (t - a.0) / (b.0 - a.0),
            (_, Some(b)) => b.1,
            (Some(a), None) => a.1,
            (None, None) => 0.0,
        }
    };
    let mut out = vec![(s, at(s))];
    out.extend(points.iter().copied().filter(|p| p.0 > s && p.0 < e));
    out.push((e, at(e)));
    out
}

/// The fill of a store outage band.
pub const OUTAGE: RGBColor = RGBColor(0xDE, 0xDA, 0xD8);
/// The label of a store outage band.
const OUTAGE_INK: RGBColor = RGBColor(0x8A, 0x2E, 0x26);

/// At most `2 × width` points: each chunk of the line keeps its lowest and
/// highest value, in time order, so no spike disappears.
fn thin(points: &[(u64, u64)], width: usize) -> Vec<(f64, f64)> {
    let chunk = points.len().div_ceil(width.max(1)).max(1);
    if chunk <= 2 {
        return points.iter().map(|&(t, v)| (t as f64, v as f64)).collect();
    }
    let mut out = Vec::with_capacity(2 * points.len() / chunk + 2);
    for c in points.chunks(chunk) {
        let lo = c.iter().min_by_key(|p| p.1).copied().unwrap_or_default();
        let hi = c.iter().max_by_key(|p| p.1).copied().unwrap_or_default();
        let (a, b) = if lo.0 <= hi.0 { (lo, hi) } else { (hi, lo) };
        out.push((a.0 as f64, a.1 as f64));
        if b != a {
            out.push((b.0 as f64, b.1 as f64));
        }
    }
    out
}

pub fn draw_timeline(data: &RunData, s: &TimelineSeries, path: &Path) -> anyhow::Result<()> {
    let window = style::duration(data.window_ns);
    let span = style::duration(s.span_ns);
    let res = style::duration(data.resolution_ns);
    let root = BitMapBackend::new(path, CHART.size).into_drawing_area();
    root.fill(&WHITE)?;

    let many_keys = s.lines.iter().any(|l| l.keys > 1);
    let span_note = if s.span_ns == data.window_ns {
        format!("the last {window}")
    } else {
        format!(
            "the last {span} ({} buckets; the window is {window})",
            s.buckets_per_span
        )
    };
    let mut subtitle = vec![format!(
        "Requests that passed in {span_note}, all keys together, sampled every {res}; a delayed request counts when it is released."
    )];
    subtitle.push(if many_keys {
        format!(
            "Dashed: the limit over that span for all keys ({} per {window} per key × the limiter's keys). Dotted: window boundaries.",
            data.limit
        )
    } else {
        format!(
            "Dashed: the limit, {} per {window}. Dotted: window boundaries, where a fixed window's counter resets.",
            data.limit
        )
    });
    let outages = s.lines.iter().any(|l| !l.outages.is_empty());
    if outages {
        subtitle.push(
            "Shaded: a store outage — the shared store unreachable, each decision taken by the limiter's on_store_failure."
                .to_string(),
        );
    }
    if s.boundaries.is_empty() && s.end_ns / data.window_ns > MAX_BOUNDARIES {
        subtitle.push(format!(
            "(More than {MAX_BOUNDARIES} windows: boundaries not drawn.)"
        ));
    }
    let mut legend = style::limiter_entries(s.lines.iter().map(|l| (l.index, l.name.as_str())));
    legend.push((Mark::Dashed(style::LIMIT), "limit".into()));
    if !s.boundaries.is_empty() {
        legend.push((Mark::Dotted(style::MUTED), "window boundary".into()));
    }
    if outages {
        legend.push((Mark::Swatch(OUTAGE), "store outage".into()));
    }
    let body = style::header(
        &root,
        &format!("{} — requests passed per {window}, over time", data.name),
        &subtitle,
        &legend,
    )?;

    let n = s.lines.len();
    let cols = if n > 4 { 2 } else { 1 };
    let rows = n.div_ceil(cols);
    let panels = body.margin(0, 10, 10, 10).split_evenly((rows, cols));
    let top = y_top(s);
    let end = s.end_ns.max(1) as f64;

    for (i, (line, panel)) in s.lines.iter().zip(&panels).enumerate() {
        let color = style::limiter_color(line.index);
        let bottom_row = i + cols >= n;
        let mut chart = ChartBuilder::on(panel)
            .caption(&line.name, style::bold(15, style::darken(color, 0.25)))
            .margin(4)
            .margin_right(16)
            .x_label_area_size(if bottom_row { 44 } else { 24 })
            .y_label_area_size(64)
            .build_cartesian_2d(0f64..end, 0f64..top)?;
        let x_fmt = |t: &f64| style::seconds(*t, end);
        let y_fmt = |v: &f64| style::count(*v);
        let mut mesh = chart.configure_mesh();
        mesh.disable_x_mesh()
            .x_labels(8)
            .y_labels(4)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .y_desc(format!("per {span}"))
            .axis_desc_style(style::text(14, style::INK))
            .label_style(style::text(13, style::INK))
            .bold_line_style(style::GRID)
            .light_line_style(WHITE);
        if bottom_row {
            mesh.x_desc("time (s)");
        }
        mesh.draw()?;

        let (_, ys) = chart.plotting_area().get_pixel_range();
        for &(o0, o1) in &line.outages {
            chart.draw_series([Rectangle::new(
                [(o0 as f64, 0.0), (o1 as f64, top)],
                OUTAGE.filled(),
            )])?;
        }
        for &b in &s.boundaries {
            let x = chart.backend_coord(&(b as f64, 0.0)).0;
            style::dotted_vline(
                &root,
                x,
                ys.start,
                ys.end,
                style::lighten(style::MUTED, 0.3),
                1,
            )?;
        }
        let (xs, _) = chart.plotting_area().get_pixel_range();
        let points = thin(&line.rolling, (xs.end - xs.start) as usize);
        let mut with_origin = Vec::with_capacity(points.len() + 1);
        with_origin.push((0.0, 0.0));
        with_origin.extend(points);
        let fill = style::lighten(color, 0.75);
        chart.draw_series(AreaSeries::new(
            with_origin.iter().copied(),
            0.0,
            fill.filled(),
        ))?;
        // Under the line, an outage shows through the fill: the two blend.
        for &(o0, o1) in &line.outages {
            chart.draw_series(AreaSeries::new(
                clip(&with_origin, o0 as f64, o1 as f64),
                0.0,
                style::multiply(fill, OUTAGE).filled(),
            ))?;
        }
        chart.draw_series(LineSeries::new(
            with_origin.iter().copied(),
            color.stroke_width(2),
        ))?;
        let band_label = style::anchored(style::bold(12, OUTAGE_INK), HPos::Center, VPos::Top);
        for &(o0, o1) in &line.outages {
            let x0 = chart.backend_coord(&(o0 as f64, 0.0)).0;
            let x1 = chart.backend_coord(&(o1 as f64, 0.0)).0;
            if root.estimate_text_size("store outage", &band_label)?.0 as i32 + 6 <= x1 - x0 {
                root.draw(&Text::new(
                    "store outage",
                    ((x0 + x1) / 2, ys.start + 4),
                    band_label.clone(),
                ))?;
            }
        }
        let label = style::anchored(style::text(13, style::INK), HPos::Right, VPos::Bottom);
        if line.limit <= top {
            let y = chart.backend_coord(&(0.0, line.limit)).1;
            style::dashed_hline(&root, xs.start, xs.end, y, style::LIMIT)?;
            let text = format!("limit {}", style::count(line.limit));
            style::boxed_label(&root, &text, (xs.end - 4, y - 3), label)?;
        } else {
            let text = format!(
                "limit {}: far above, off the scale ↑",
                style::count(line.limit)
            );
            style::boxed_label(&root, &text, (xs.end - 4, ys.start + 16), label)?;
        }
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::charts::data::tests_support;

    #[test]
    fn timeline_series_sums_to_the_passed_count() {
        let d = tests_support::boundary();
        let s = timeline_series(&d);
        for (line, l) in s.lines.iter().zip(&d.limiters) {
            assert_eq!(line.passed.iter().sum::<u64>(), l.passed(), "{}", l.name);
        }
    }

    #[test]
    fn rolling_sum_covers_exactly_one_window_of_buckets() {
        let d = tests_support::boundary();
        let s = timeline_series(&d);
        assert_eq!(s.span_ns, d.window_ns);
        assert_eq!(s.buckets_per_span as u64 * d.resolution_ns, d.window_ns);
        for line in &s.lines {
            for (i, &(_, v)) in line.rolling.iter().enumerate() {
                let from = (i + 1).saturating_sub(s.buckets_per_span);
                assert_eq!(v, line.passed[from..=i].iter().sum::<u64>());
            }
        }
    }

    #[test]
    fn the_fixed_window_line_reaches_twice_the_limit_and_the_sliding_log_stays_at_it() {
        let d = tests_support::boundary();
        let s = timeline_series(&d);
        let max = |name: &str| {
            let line = s.lines.iter().find(|l| l.name == name).unwrap();
            line.rolling.iter().map(|p| p.1).max().unwrap()
        };
        assert_eq!(max("fixed_window"), 2 * d.limit);
        assert_eq!(max("sliding_log"), d.limit);
        assert_eq!(s.lines[0].limit, d.limit as f64);
        // Ten 1s windows over 10s: boundaries at 1s … 9s (and past 10s
        // only if a shaper released late).
        assert_eq!(s.boundaries[0], d.window_ns);
    }

    #[test]
    fn a_limit_far_above_every_line_does_not_flatten_them() {
        let mut d = tests_support::boundary();
        let s = timeline_series(&d);
        assert_eq!(y_top(&s), 2.0 * d.limit as f64 * 1.15);
        for l in &mut d.limiters {
            l.keys = 100_000;
        }
        let s = timeline_series(&d);
        assert!(s.lines[0].limit > 1e6);
        assert_eq!(y_top(&s), 2.0 * d.limit as f64 * 1.15);
    }

    #[test]
    fn outages_are_carried_in_ns_and_clipped_to_the_chart() {
        use crate::report::charts::data::Outage;
        let mut d = tests_support::boundary();
        d.limiters[1].deployment.outages = vec![
            Outage {
                start_ns: 4_000_000_000,
                end_ns: 6_000_000_000,
            },
            Outage {
                start_ns: 9_500_000_000,
                end_ns: 400_000_000_000,
            },
            Outage {
                start_ns: 500_000_000_000,
                end_ns: 600_000_000_000,
            },
        ];
        let s = timeline_series(&d);
        assert!(s.lines[0].outages.is_empty());
        assert_eq!(
            s.lines[1].outages,
            [(4_000_000_000, 6_000_000_000), (9_500_000_000, s.end_ns)],
            "past the end: clipped, or dropped when it starts after it"
        );
    }

    #[test]
    fn an_outage_clips_the_line_with_its_values_at_the_edges() {
        let points = [(0.0, 0.0), (10.0, 100.0), (20.0, 0.0)];
        assert_eq!(
            clip(&points, 5.0, 15.0),
            [(5.0, 50.0), (10.0, 100.0), (15.0, 50.0)]
        );
        assert_eq!(clip(&points, 20.0, 30.0), [(20.0, 0.0), (30.0, 0.0)]);
    }

    #[test]
    fn thinning_keeps_every_spike() {
        let points: Vec<(u64, u64)> = (0..10_000)
            .map(|i| (i, u64::from(i == 7_777) * 50))
            .collect();
        let thinned = thin(&points, 100);
        assert!(thinned.len() <= 200);
        assert!(thinned.iter().any(|p| p.1 == 50.0));
    }
}
