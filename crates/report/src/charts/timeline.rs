//! `timeline.png` — what the policy is about, over time: the worst key.
//!
//! The policy says "`limit` per `W` for each key", so each panel plots, for
//! every time-series bucket, the most any one key had passed within the
//! window before a pass in that bucket — `(t − W, t]`, the measure
//! `peak_in_window` maximises, recorded per bucket by the run
//! (`timeseries.csv`'s `worst_key_in_window`) — against one dashed line at
//! the per-key limit. A delayed request counts when the shaper releases it;
//! a bucket where nothing passed is empty. Under boundary traffic the fixed
//! window's bar reaches twice the limit right after a boundary; on four
//! instances with local state a key gets about four times the limit.
//!
//! A deployed limiter (several instances, or a shared store) also has its
//! overshoot per bucket drawn — the cost passed beyond the limit per key
//! per aligned window, all keys together — so *when* a deployment let
//! traffic through, and how much, lines up with the rest. Store outages
//! (`scenario.limiters[i].deployment.outages`) are shaded: failing open
//! climbs over the limit, failing closed drops to nothing.
//!
//! A run directory written before the per-key columns still plots: its
//! panels show throughput (all keys together, passed per window) and say
//! so, with no limit line — a per-key limit cannot be held against a sum
//! over keys.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::data::RunData;
use super::style::{self, Mark};
use super::Chart;

pub(crate) const CHART: Chart = Chart {
    file: crate::rundir::TIMELINE_PNG,
    size: (1200, 900),
    about: "one panel per limiter: over time, the most any one key had passed within the policy window (what the policy limits), against the per-key limit; dotted lines are window boundaries; for deployed limiters, the overshoot per bucket; shaded bands are store outages",
    caption,
    render,
};

/// The most window boundaries drawn; past that they would grey the panel.
const MAX_BOUNDARIES: u64 = 40;

/// What a panel's bars measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Measure {
    /// The worst key's passes within the window (the per-key columns).
    WorstKey,
    /// All keys' passes within the last window (older run directories).
    Throughput,
}

/// One limiter's panel.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TimelineLine {
    /// The limiter's index (its colour).
    pub index: usize,
    pub name: String,
    /// One value per bucket: the worst key's passes in the window
    /// (`WorstKey`), or every key's passes in the last span (`Throughput`).
    pub values: Vec<u64>,
    /// Overshoot per bucket, for a deployed limiter with per-key columns.
    pub overshoot: Option<Vec<u64>>,
    /// Store outages `[start, end)` in ns, clipped to the chart's time
    /// span (empty ones dropped).
    pub outages: Vec<(u64, u64)>,
    /// The largest value, and how it compares with the limit.
    pub most: u64,
    /// Its per-key limit line, the limiter's own (`WorstKey` only).
    pub limit: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TimelineSeries {
    pub measure: Measure,
    pub resolution_ns: u64,
    /// Throughput only: buckets summed per value, and the span they cover
    /// (`k × resolution`).
    pub buckets_per_span: usize,
    pub span_ns: u64,
    pub end_ns: u64,
    /// The per-key limit every panel shares (`WorstKey` only, and only when
    /// every limiter is held to one limit; else each line has its own).
    pub limit: Option<u64>,
    /// The limiters that count in aligned windows (fixed window, sliding
    /// counter): the window boundaries are theirs.
    pub windowed: Vec<String>,
    /// Window boundaries `k·W` in `(0, end)`: empty when no limiter counts
    /// in aligned windows, or when there are too many to draw.
    pub boundaries: Vec<u64>,
    pub lines: Vec<TimelineLine>,
}

/// Every limiter's worst-key series (or, from an older run directory, its
/// rolling throughput).
pub(crate) fn timeline_series(data: &RunData) -> TimelineSeries {
    let res = data.resolution_ns.max(1);
    let window = data.window_ns.max(1);
    let measure = if data.per_key_series {
        Measure::WorstKey
    } else {
        Measure::Throughput
    };
    let k = match measure {
        Measure::WorstKey => 1,
        Measure::Throughput => ((window as f64 / res as f64).round() as usize).max(1),
    };
    let end_ns = data.series_end_ns();
    let n_bounds = end_ns.saturating_sub(1) / window;
    let windowed: Vec<String> = data
        .limiters
        .iter()
        .filter(|l| matches!(l.algorithm.as_str(), "fixed_window" | "sliding_counter"))
        .map(|l| l.name.clone())
        .collect();
    let boundaries = if n_bounds <= MAX_BOUNDARIES && !windowed.is_empty() {
        (1..=n_bounds).map(|i| i * window).collect()
    } else {
        Vec::new()
    };
    let lines = data
        .limiters
        .iter()
        .enumerate()
        .map(|(index, l)| {
            let values: Vec<u64> = match measure {
                Measure::WorstKey => l.series.iter().map(|b| b.worst_key_in_window).collect(),
                Measure::Throughput => {
                    let passed: Vec<u64> = l.series.iter().map(|b| b.passed).collect();
                    let mut sum = 0u64;
                    passed
                        .iter()
                        .enumerate()
                        .map(|(i, &p)| {
                            sum = sum.saturating_add(p);
                            if i >= k {
                                sum = sum.saturating_sub(passed[i - k]);
                            }
                            sum
                        })
                        .collect()
                }
            };
            let overshoot = (measure == Measure::WorstKey && l.deployment.is_deployed())
                .then(|| l.series.iter().map(|b| b.overshoot).collect());
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
                limit: (measure == Measure::WorstKey).then_some(l.limit),
                most: values.iter().copied().max().unwrap_or(0),
                values,
                overshoot,
                outages,
            }
        })
        .collect();
    TimelineSeries {
        measure,
        resolution_ns: res,
        buckets_per_span: k,
        span_ns: k as u64 * res,
        end_ns,
        limit: data.shared_limit().filter(|_| measure == Measure::WorstKey),
        windowed,
        boundaries,
        lines,
    }
}

/// The top of the shared y axis: room for every bar and the limit.
pub(crate) fn y_top(s: &TimelineSeries) -> f64 {
    let most = s
        .lines
        .iter()
        .map(|l| l.most)
        .max()
        .unwrap_or(0)
        .max(s.lines.iter().filter_map(|l| l.limit).max().unwrap_or(0))
        .max(1);
    most as f64 * 1.15
}

/// The top of the overshoot strips' shared axis (they have their own: a
/// sum over keys is not on the per-key scale).
pub(crate) fn overshoot_top(s: &TimelineSeries) -> f64 {
    let most = s
        .lines
        .iter()
        .filter_map(|l| l.overshoot.as_ref()?.iter().max().copied())
        .max()
        .unwrap_or(0)
        .max(1);
    most as f64 * 1.15
}

/// What `summary.md` says under the chart: only what this run holds.
fn caption(data: &RunData) -> String {
    let s = timeline_series(data);
    let window = style::duration(data.window_ns);
    if s.measure == Measure::Throughput {
        return format!(
            "Requests passed in the last {window}, all keys together (throughput), one panel per limiter; \
             this run directory predates the per-key columns of timeseries.csv, so no per-key limit is drawn"
        );
    }
    let mut text = match s.limit {
        Some(limit) => format!(
            "One panel per limiter: the most any one key had passed within {window} at each moment, against the limit of {limit} per key"
        ),
        None => format!(
            "One panel per limiter: the most any one key had passed within {window} at each moment, against that limiter's own limit per key ({})",
            s.lines
                .iter()
                .map(|l| format!("{} {}", l.name, l.limit.unwrap_or(0)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let over: Vec<String> = s
        .lines
        .iter()
        .filter_map(|l| {
            let limit = l.limit?;
            (l.most > limit)
                .then(|| format!("{} reaches {} ({}×)", l.name, l.most, ratio(l.most, limit)))
        })
        .collect();
    if over.is_empty() {
        text.push_str("; every limiter holds every key at or under it");
    } else {
        text.push_str(&format!("; above it: {}", over.join(", ")));
    }
    let deployed: Vec<String> = s
        .lines
        .iter()
        .filter_map(|l| {
            let total: u64 = l.overshoot.as_ref()?.iter().sum();
            Some(format!("{} {}", l.name, total))
        })
        .collect();
    if !deployed.is_empty() {
        text.push_str(&format!(
            "; the deployed limiters' overshoot per {} is drawn too (total: {})",
            style::duration(s.resolution_ns),
            deployed.join(", ")
        ));
    }
    let outages: Vec<String> = s
        .lines
        .iter()
        .filter(|l| !l.outages.is_empty())
        .map(|l| format!("{} ({})", l.name, l.outages.len()))
        .collect();
    if !outages.is_empty() {
        text.push_str(&format!(
            "; shaded bands are store outages: {}",
            outages.join(", ")
        ));
    }
    if !s.boundaries.is_empty() {
        text.push_str(&format!(
            "; dotted lines are the window boundaries where {} start{} counting afresh",
            s.windowed.join(", "),
            if s.windowed.len() == 1 { "s" } else { "" }
        ));
    }
    text
}

/// `a / b` for a label: `2`, `6.1`, `1.01`.
fn ratio(a: u64, b: u64) -> String {
    style::trim(a as f64 / b.max(1) as f64, 2)
}

fn render(data: &RunData, path: &Path) -> anyhow::Result<bool> {
    let series = timeline_series(data);
    if series.lines.is_empty() {
        return Ok(false);
    }
    draw_timeline(data, &series, path)?;
    Ok(true)
}

/// The part of the step outline `points` over `[s, e]`, with the outline's
/// values at `s` and `e`: what an outage band's blended fill covers.
fn clip(points: &[(f64, f64)], s: f64, e: f64) -> Vec<(f64, f64)> {
    let at = |t: f64| -> f64 {
        let i = points.partition_point(|p| p.0 <= t);
        match i.checked_sub(1).map(|j| points[j]) {
            Some(a) => a.1,
            None => points.first().map_or(0.0, |p| p.1),
        }
    };
    let mut out = vec![(s, at(s))];
    out.extend(points.iter().copied().filter(|p| p.0 > s && p.0 < e));
    out.push((e, at(e)));
    out
}

/// The fill of a store outage band.
pub(crate) const OUTAGE: RGBColor = RGBColor(0xDE, 0xDA, 0xD8);
/// The label of a store outage band.
const OUTAGE_INK: RGBColor = RGBColor(0x8A, 0x2E, 0x26);
/// The overshoot strip.
const OVERSHOOT: RGBColor = RGBColor(0x33, 0x33, 0x33);

/// The outline of bars, one per bucket of `res` ns from 0, merged into at
/// most `width` columns that each keep their largest value — so no spike
/// disappears however many buckets there are. Each column is a flat top
/// from its start to its end.
pub fn steps(values: &[u64], res: u64, width: usize) -> Vec<(f64, f64)> {
    let chunk = values.len().div_ceil(width.max(1)).max(1);
    let mut out = Vec::with_capacity(2 * values.len().div_ceil(chunk) + 2);
    out.push((0.0, 0.0));
    for (i, c) in values.chunks(chunk).enumerate() {
        let v = c.iter().copied().max().unwrap_or(0) as f64;
        let t0 = (i * chunk) as f64 * res as f64;
        let t1 = t0 + c.len() as f64 * res as f64;
        out.push((t0, v));
        out.push((t1, v));
    }
    if let Some(&(t, _)) = out.last() {
        out.push((t, 0.0));
    }
    out
}

pub(crate) fn draw_timeline(data: &RunData, s: &TimelineSeries, path: &Path) -> anyhow::Result<()> {
    let window = style::duration(data.window_ns);
    let res = style::duration(s.resolution_ns);
    let root = BitMapBackend::new(path, CHART.size).into_drawing_area();
    root.fill(&WHITE)?;

    let mut subtitle = Vec::new();
    let title = match s.measure {
        Measure::WorstKey => {
            subtitle.push(format!(
                "Each bar: the most any one key had passed within the {window} before a pass in that {res} — the policy's own measure; empty where nothing passed. A delayed request counts when it is released."
            ));
            subtitle.push(format!(
                "Dashed: the limit, {}.{}",
                match s.limit {
                    Some(limit) => format!("{limit} per {window} per key"),
                    None => format!("each limiter's own per {window} per key"),
                },
                if s.boundaries.is_empty() {
                    String::new()
                } else {
                    format!(
                        " Dotted: window boundaries, where {} start{} counting afresh.",
                        s.windowed.join(", "),
                        if s.windowed.len() == 1 { "s" } else { "" }
                    )
                }
            ));
            format!(
                "{} — the worst key's passes per {window}, over time",
                data.name
            )
        }
        Measure::Throughput => {
            let span = if s.span_ns == data.window_ns {
                format!("the last {window}")
            } else {
                format!(
                    "the last {} ({} buckets; the window is {window})",
                    style::duration(s.span_ns),
                    s.buckets_per_span
                )
            };
            subtitle.push(format!(
                "Throughput: requests passed in {span}, all keys together, sampled every {res}. This run directory predates the per-key series (timeseries.csv has no worst_key_in_window), so no per-key limit can be drawn against it."
            ));
            format!("{} — throughput, all keys, over time", data.name)
        }
    };
    let deployed = s.lines.iter().any(|l| l.overshoot.is_some());
    if deployed {
        subtitle.push(format!(
            "Grey strip under a deployed limiter: its overshoot per {res} — cost passed beyond the limit per key per aligned window, all keys together (its own axis)."
        ));
    }
    let outages = s.lines.iter().any(|l| !l.outages.is_empty());
    if outages {
        subtitle.push(
            "Shaded: a store outage — the shared store unreachable, each decision taken by the limiter's on_store_failure."
                .to_string(),
        );
    }
    if !s.windowed.is_empty() && s.end_ns / data.window_ns.max(1) > MAX_BOUNDARIES {
        subtitle.push(format!(
            "(More than {MAX_BOUNDARIES} windows: boundaries not drawn.)"
        ));
    }
    let mut legend =
        style::limiter_entries(data, s.lines.iter().map(|l| (l.index, l.name.as_str())));
    if s.lines.iter().any(|l| l.limit.is_some()) {
        legend.push((Mark::Dashed(style::LIMIT), "limit per key".into()));
    }
    if deployed {
        legend.push((Mark::Swatch(OVERSHOOT), format!("overshoot per {res}")));
    }
    if !s.boundaries.is_empty() {
        legend.push((Mark::Dotted(style::MUTED), "window boundary".into()));
    }
    if outages {
        legend.push((Mark::Swatch(OUTAGE), "store outage".into()));
    }
    let body = style::header(&root, &title, &subtitle, &legend)?;

    let n = s.lines.len();
    let cols = if n > 4 { 2 } else { 1 };
    let rows = n.div_ceil(cols);
    let panels = body.margin(0, 10, 10, 10).split_evenly((rows, cols));
    let top = y_top(s);
    let over_top = overshoot_top(s);
    let end = s.end_ns.max(1) as f64;

    for (i, (line, panel)) in s.lines.iter().zip(&panels).enumerate() {
        let color = style::limiter_color(data, line.index);
        let bottom_row = i + cols >= n;
        let (_, panel_h) = panel.dim_in_pixel();
        let (panel, strip) = match &line.overshoot {
            Some(_) => {
                // The bottom row's strip also holds the time axis.
                let share = if bottom_row { 54 } else { 64 };
                let (a, b) = panel.split_vertically(panel_h * share / 100);
                (a, Some(b))
            }
            None => (panel.clone(), None),
        };
        let axis_here = bottom_row && strip.is_none();
        let caption = match line.limit {
            Some(limit) if line.most > limit => format!(
                "{} — worst key {} ({}× the limit)",
                line.name,
                line.most,
                ratio(line.most, limit)
            ),
            Some(_) => format!("{} — worst key {}", line.name, line.most),
            None => line.name.clone(),
        };
        let mut chart = ChartBuilder::on(&panel)
            .caption(caption, style::bold(15, style::label_color(color)))
            .margin(4)
            .margin_right(16)
            .x_label_area_size(if axis_here {
                44
            } else if strip.is_some() {
                4
            } else {
                24
            })
            .y_label_area_size(64)
            .build_cartesian_2d(0f64..end, 0f64..top)?;
        let x_fmt = |t: &f64| style::seconds(*t, end);
        let y_fmt = |v: &f64| style::count(*v);
        let mut mesh = chart.configure_mesh();
        mesh.disable_x_mesh()
            .x_labels(if strip.is_some() { 0 } else { 8 })
            .y_labels(4)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .y_desc(match s.measure {
                Measure::WorstKey => format!("one key per {window}"),
                Measure::Throughput => format!("all keys, per {}", style::duration(s.span_ns)),
            })
            .axis_desc_style(style::text(14, style::INK))
            .label_style(style::text(13, style::INK))
            .bold_line_style(style::GRID)
            .light_line_style(WHITE);
        if axis_here {
            mesh.x_desc("time (s)");
        }
        mesh.draw()?;

        let (xs, ys) = chart.plotting_area().get_pixel_range();
        let width = (xs.end - xs.start).max(1) as usize;
        if let (Some(strip), Some(over)) = (&strip, &line.overshoot) {
            draw_overshoot(&root, strip, line, over, s, (end, over_top), bottom_row)?;
        }
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
        let outline = match s.measure {
            Measure::WorstKey => steps(&line.values, s.resolution_ns, width),
            // A rolling sum is a line through the bucket ends.
            Measure::Throughput => {
                let chunk = line.values.len().div_ceil(width).max(1);
                let mut points = vec![(0.0, 0.0)];
                for (j, c) in line.values.chunks(chunk).enumerate() {
                    let v = c.iter().copied().max().unwrap_or(0) as f64;
                    let t = ((j * chunk + c.len()) as u64 * s.resolution_ns) as f64;
                    points.push((t, v));
                }
                points
            }
        };
        let fill = style::lighten(color, 0.6);
        chart.draw_series(AreaSeries::new(outline.iter().copied(), 0.0, fill.filled()))?;
        // Under the bars, an outage shows through the fill: the two blend.
        if s.measure == Measure::WorstKey {
            for &(o0, o1) in &line.outages {
                chart.draw_series(AreaSeries::new(
                    clip(&outline, o0 as f64, o1 as f64),
                    0.0,
                    style::multiply(fill, OUTAGE).filled(),
                ))?;
            }
        }
        chart.draw_series(LineSeries::new(
            outline.iter().copied(),
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
        if let Some(limit) = line.limit {
            let label = style::anchored(style::text(13, style::INK), HPos::Right, VPos::Bottom);
            let y = chart.backend_coord(&(0.0, limit as f64)).1;
            style::dashed_hline(&root, xs.start, xs.end, y, style::LIMIT)?;
            style::boxed_label(&root, &format!("limit {limit}"), (xs.end - 4, y - 3), label)?;
        }
    }
    root.present()?;
    Ok(())
}

/// A deployed limiter's overshoot per bucket, in the strip under its panel.
fn draw_overshoot(
    root: &style::Area,
    strip: &style::Area,
    line: &TimelineLine,
    over: &[u64],
    s: &TimelineSeries,
    (end, top): (f64, f64),
    bottom_row: bool,
) -> anyhow::Result<()> {
    let mut chart = ChartBuilder::on(strip)
        .margin_left(4)
        .margin_right(16)
        .margin_bottom(4)
        .x_label_area_size(if bottom_row { 40 } else { 20 })
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..end, 0f64..top)?;
    let x_fmt = |t: &f64| style::seconds(*t, end);
    let y_fmt = |v: &f64| style::count(*v);
    let mut mesh = chart.configure_mesh();
    mesh.disable_x_mesh()
        .x_labels(8)
        .y_labels(2)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .axis_desc_style(style::text(14, style::INK))
        .label_style(style::text(12, style::INK))
        .bold_line_style(style::GRID)
        .light_line_style(WHITE);
    if bottom_row {
        mesh.x_desc("time (s)");
    }
    mesh.draw()?;
    for &(o0, o1) in &line.outages {
        chart.draw_series([Rectangle::new(
            [(o0 as f64, 0.0), (o1 as f64, top)],
            OUTAGE.filled(),
        )])?;
    }
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    let outline = steps(over, s.resolution_ns, (xs.end - xs.start).max(1) as usize);
    chart.draw_series(AreaSeries::new(
        outline.iter().copied(),
        0.0,
        style::lighten(OVERSHOOT, 0.55).filled(),
    ))?;
    chart.draw_series(LineSeries::new(outline, OVERSHOOT.stroke_width(1)))?;
    let total: u64 = over.iter().sum();
    style::boxed_label(
        root,
        &format!(
            "overshoot per {}, all keys: at most {}, {} in all",
            style::duration(s.resolution_ns),
            over.iter().max().copied().unwrap_or(0),
            total
        ),
        (xs.end - 4, ys.start + 2),
        style::anchored(style::text(12, style::INK), HPos::Right, VPos::Top),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::data::{tests_support, SeriesRow};

    #[test]
    fn each_panel_peaks_at_its_limiters_peak_in_window() {
        let d = tests_support::boundary();
        let s = timeline_series(&d);
        assert_eq!(s.measure, Measure::WorstKey);
        for (line, l) in s.lines.iter().zip(&d.limiters) {
            assert_eq!(line.most, l.peak_in_window, "{}", l.name);
            assert_eq!(line.values.len(), l.series.len());
        }
    }

    #[test]
    fn the_fixed_window_reaches_twice_the_limit_and_the_sliding_log_stays_at_it() {
        let d = tests_support::boundary();
        let s = timeline_series(&d);
        let most = |name: &str| s.lines.iter().find(|l| l.name == name).unwrap().most;
        assert_eq!(most("fixed_window"), 2 * d.limit);
        assert_eq!(most("sliding_log"), d.limit);
        assert_eq!(s.limit, Some(d.limit));
        // Ten 1s windows over 10s: boundaries at 1s … 9s (and past 10s
        // only if a shaper released late).
        assert_eq!(s.boundaries[0], d.window_ns);
    }

    // Regression (truthful-outputs issue item 3): the panel summed every
    // key and held the sum against `limit × keys` (every instance's copy of
    // a key counted again), so four local instances passing ~4× the policy
    // per key sat under their "limit 800" line. The line is now the worst
    // key's, against the per-key limit, whatever the key count.
    #[test]
    fn the_line_is_one_keys_against_the_per_key_limit_whatever_the_keys() {
        let mut d = tests_support::run_data(&[("local", 41)], 10);
        let l = &mut d.limiters[0];
        l.keys = 80;
        l.deployment.instances = 4;
        l.series = (0..20)
            .map(|i| SeriesRow {
                start_ns: i * d.resolution_ns,
                passed: 80,
                worst_key_in_window: 41,
                overshoot: 31,
                ..SeriesRow::default()
            })
            .collect();
        let s = timeline_series(&d);
        assert_eq!(s.limit, Some(10), "per key, not 10 × 80 keys");
        assert_eq!(s.lines[0].limit, Some(10));
        assert_eq!(s.lines[0].most, 41);
        assert_eq!(s.lines[0].overshoot.as_ref().map(|o| o[3]), Some(31));
        assert!(y_top(&s) >= 41.0);
        assert!(
            caption(&d).contains("local reaches 41 (4.1×)"),
            "{}",
            caption(&d)
        );
    }

    // Issue 23 item 5: every panel drew the first zone's limit of 20,
    // the 5r/s zone's too.
    #[test]
    fn each_panel_draws_its_own_limiters_limit() {
        let mut d = tests_support::run_data(&[("api-perip", 0), ("key-perkey", 0)], 20);
        d.limiters[1].limit = 5;
        for l in &mut d.limiters {
            l.series = vec![SeriesRow {
                passed: 8,
                worst_key_in_window: 8,
                ..SeriesRow::default()
            }];
        }
        let s = timeline_series(&d);
        assert_eq!(s.limit, None);
        assert_eq!(s.lines[0].limit, Some(20));
        assert_eq!(s.lines[1].limit, Some(5));
        let c = caption(&d);
        assert!(c.contains("api-perip 20, key-perkey 5"), "{c}");
        assert!(c.contains("above it: key-perkey reaches 8 (1.6×)"), "{c}");
    }

    #[test]
    fn an_older_run_directory_plots_throughput_without_a_per_key_limit() {
        let mut d = tests_support::boundary();
        d.per_key_series = false;
        let s = timeline_series(&d);
        assert_eq!(s.measure, Measure::Throughput);
        assert_eq!(s.limit, None);
        assert!(s.lines.iter().all(|l| l.limit.is_none()));
        assert_eq!(s.span_ns, d.window_ns);
        for (line, l) in s.lines.iter().zip(&d.limiters) {
            let passed: Vec<u64> = l.series.iter().map(|b| b.passed).collect();
            for (i, &v) in line.values.iter().enumerate() {
                let from = (i + 1).saturating_sub(s.buckets_per_span);
                assert_eq!(v, passed[from..=i].iter().sum::<u64>());
            }
        }
        assert!(caption(&d).contains("throughput"));
    }

    #[test]
    fn outages_are_carried_in_ns_and_clipped_to_the_chart() {
        use crate::charts::data::Outage;
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
    fn an_outage_clips_the_steps_with_their_values_at_the_edges() {
        let points = steps(&[0, 100, 0], 10, 100);
        assert_eq!(
            clip(&points, 5.0, 15.0),
            [(5.0, 0.0), (10.0, 0.0), (10.0, 100.0), (15.0, 100.0)]
        );
    }

    #[test]
    fn steps_keep_every_spike() {
        let values: Vec<u64> = (0..10_000).map(|i| u64::from(i == 7_777) * 50).collect();
        let outline = steps(&values, 1, 100);
        assert!(outline.len() <= 2 * 100 + 3);
        assert!(outline.iter().any(|p| p.1 == 50.0));
        assert_eq!(outline.last().unwrap().0, 10_000.0);
    }
}
