//! `peak.png` — the boundary-burst chart.
//!
//! One bar per limiter: `peak_in_window`, the largest total cost that
//! passed for a single key within any interval `(s − W, s]` (W the policy
//! window), against a dashed line at its limit — one line across the chart
//! when every limiter is held to one limit, else a dashed line over each
//! bar at that limiter's own (docs/semantics.md §3). Every algorithm
//! enforces "limit per window", yet under traffic that straddles a window
//! boundary the fixed window's bar reaches 2× the line: its counter resets
//! at the boundary and forgets the burst just before it. A bar at the line
//! means the limiter never let one key exceed the policy in any window.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::data::RunData;
use super::style::{self, Mark};
use super::Chart;

pub(crate) const CHART: Chart = Chart {
    file: crate::rundir::PEAK_PNG,
    size: (1200, 700),
    about: "the most one key got through in any window, per limiter, against the limit line: a bar above the line broke the policy (the fixed window's boundary burst reaches 2×)",
    caption,
    render,
};

/// One limiter's bar.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PeakBar {
    /// The limiter's index (its colour).
    pub index: usize,
    pub name: String,
    pub peak: u64,
    /// The limiter's own limit.
    pub limit: u64,
    /// `peak / limit`.
    pub ratio: f64,
}

impl PeakBar {
    pub fn over(&self) -> bool {
        self.peak > self.limit
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PeakSeries {
    /// The limit every limiter is held to, when they share one.
    pub shared: Option<u64>,
    pub bars: Vec<PeakBar>,
}

pub(crate) fn peak_series(data: &RunData) -> PeakSeries {
    PeakSeries {
        shared: data.shared_limit(),
        bars: data
            .limiters
            .iter()
            .enumerate()
            .map(|(index, l)| PeakBar {
                index,
                name: l.name.clone(),
                peak: l.peak_in_window,
                limit: l.limit,
                ratio: l.peak_in_window as f64 / l.limit.max(1) as f64,
            })
            .collect(),
    }
}

/// What `summary.md` says under the chart: which limiters let one key
/// through more than the limit, and how much.
fn caption(data: &RunData) -> String {
    let s = peak_series(data);
    let window = style::duration(data.window_ns);
    let over: Vec<String> = s
        .bars
        .iter()
        .filter(|b| b.over())
        .map(|b| match s.shared {
            Some(_) => format!("{} {} ({}×)", b.name, b.peak, style::trim(b.ratio, 2)),
            None => format!(
                "{} {} of {} ({}×)",
                b.name,
                b.peak,
                b.limit,
                style::trim(b.ratio, 2)
            ),
        })
        .collect();
    match s.shared {
        Some(limit) => {
            let verdict = if over.is_empty() {
                format!("every limiter held every key to at most {limit}")
            } else {
                format!("above it: {}", over.join(", "))
            };
            format!(
                "The most one key got through in any {window} window, per limiter, against the limit of {limit}: {verdict}"
            )
        }
        None => {
            let verdict = if over.is_empty() {
                "every limiter held every key to at most its own limit".to_string()
            } else {
                format!("above its own: {}", over.join(", "))
            };
            format!(
                "The most one key got through in any {window} window, per limiter, against each limiter's own limit: {verdict}"
            )
        }
    }
}

fn render(data: &RunData, path: &Path) -> anyhow::Result<bool> {
    let series = peak_series(data);
    if series.bars.is_empty() {
        return Ok(false);
    }
    draw_peak(data, &series, path)?;
    Ok(true)
}

pub(crate) fn draw_peak(data: &RunData, s: &PeakSeries, path: &Path) -> anyhow::Result<()> {
    let window = style::duration(data.window_ns);
    let root = BitMapBackend::new(path, CHART.size).into_drawing_area();
    root.fill(&WHITE)?;

    let over: Vec<&PeakBar> = s.bars.iter().filter(|b| b.over()).collect();
    let verdict = match over.iter().max_by(|a, b| a.ratio.total_cmp(&b.ratio)) {
        None => match s.shared {
            Some(limit) => format!("Every limiter held every key to at most {limit} per {window}."),
            None => format!("Every limiter held every key to at most its own limit per {window}."),
        },
        Some(worst) => format!(
            "Above the dashed line, {} let one key through more than the policy allows; the most was {}: {} ({}× {}).",
            if over.len() == 1 {
                "one limiter".to_string()
            } else {
                format!("{} limiters", over.len())
            },
            worst.name,
            worst.peak,
            style::trim(worst.ratio, 2),
            if s.shared.is_some() {
                "the limit"
            } else {
                "its own limit"
            }
        ),
    };
    let mut legend =
        style::limiter_entries(data, s.bars.iter().map(|b| (b.index, b.name.as_str())));
    legend.push((
        Mark::Dashed(style::LIMIT),
        match s.shared {
            Some(limit) => format!("limit: {limit} per {window}"),
            None => format!("limit: each limiter's own per {window}"),
        },
    ));
    let body = style::header(
        &root,
        &format!("{} — the most one key got through in any {window} window", data.name),
        &[
            format!(
                "peak_in_window: the largest total cost that passed for one key within any interval (s − {window}, s]. {verdict}"
            ),
        ],
        &legend,
    )?;

    let top = s
        .bars
        .iter()
        .map(|b| b.peak)
        .max()
        .unwrap_or(0)
        .max(s.bars.iter().map(|b| b.limit).max().unwrap_or(0)) as f64
        * 1.18;
    let mut chart = style::category_chart(&body, s.bars.len(), 0f64..top.max(1.0))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(8)
        .y_label_formatter(&|v| style::count(*v))
        .y_desc(format!("passed for one key in one {window} window (cost)"))
        .x_desc("limiter")
        .axis_desc_style(style::text(16, style::INK))
        .label_style(style::text(14, style::INK))
        .bold_line_style(style::GRID)
        .light_line_style(WHITE)
        .draw()?;

    chart.draw_series(s.bars.iter().enumerate().map(|(i, b)| {
        let x = i as f64;
        Rectangle::new(
            [(x + 0.2, 0.0), (x + 0.8, b.peak as f64)],
            style::limiter_color(data, b.index).filled(),
        )
    }))?;

    match s.shared {
        Some(limit) => {
            let (xs, _) = chart.plotting_area().get_pixel_range();
            let y_limit = chart.backend_coord(&(0.0, limit as f64)).1;
            style::dashed_hline(&root, xs.start, xs.end, y_limit, style::LIMIT)?;
            root.draw(&Text::new(
                format!("limit {limit}"),
                (xs.end + 6, y_limit),
                style::anchored(style::bold(14, style::LIMIT), HPos::Left, VPos::Center),
            ))?;
        }
        // Each limiter's own limit, over its own bar.
        None => {
            for (i, b) in s.bars.iter().enumerate() {
                let (x0, y) = chart.backend_coord(&(i as f64 + 0.1, b.limit as f64));
                let (x1, _) = chart.backend_coord(&(i as f64 + 0.9, b.limit as f64));
                style::dashed_hline(&root, x0, x1, y, style::LIMIT)?;
            }
        }
    }

    for (i, b) in s.bars.iter().enumerate() {
        let (cx, y) = chart.backend_coord(&(i as f64 + 0.5, b.peak as f64));
        let label = match s.shared {
            Some(_) if b.peak == b.limit => b.peak.to_string(),
            Some(_) => format!("{} ({}×)", b.peak, style::trim(b.ratio, 2)),
            None if b.peak <= b.limit => format!("{} / {}", b.peak, b.limit),
            None => format!("{} / {} ({}×)", b.peak, b.limit, style::trim(b.ratio, 2)),
        };
        // Under its own line, the label sits above the line, not on it.
        let y = match s.shared {
            None if b.peak < b.limit => chart.backend_coord(&(0.0, b.limit as f64)).1,
            _ => y,
        };
        let strong = if b.over() {
            style::bold(16, style::INK)
        } else {
            style::text(15, style::INK)
        };
        root.draw(&Text::new(
            label,
            (cx, y - 6),
            style::anchored(strong, HPos::Center, VPos::Bottom),
        ))?;
    }
    let names: Vec<(String, RGBColor)> = s
        .bars
        .iter()
        .map(|b| (b.name.clone(), style::limiter_color(data, b.index)))
        .collect();
    style::category_names(&root, &chart, &names, 8)?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::data::tests_support::run_data;

    #[test]
    fn peak_series_holds_each_limiter_against_the_limit() {
        let d = run_data(&[("fixed_window", 200), ("sliding_log", 100)], 100);
        let s = peak_series(&d);
        assert_eq!(s.shared, Some(100));
        assert_eq!(s.bars[0].peak, 200);
        assert_eq!(s.bars[0].ratio, 2.0);
        assert_eq!(s.bars[1].ratio, 1.0);
        assert_eq!(s.bars[1].index, 1);
    }

    // Issue 23 item 5: a 5r/s zone was drawn against the first zone's 20.
    #[test]
    fn each_bar_is_held_to_its_own_limit_when_the_limiters_differ() {
        let mut d = run_data(&[("api-perip", 20), ("key-perkey", 5)], 20);
        d.limiters[1].limit = 5;
        let s = peak_series(&d);
        assert_eq!(s.shared, None);
        assert_eq!((s.bars[0].limit, s.bars[1].limit), (20, 5));
        assert_eq!((s.bars[0].ratio, s.bars[1].ratio), (1.0, 1.0));
        let c = caption(&d);
        assert!(c.contains("each limiter's own limit"), "{c}");
        assert!(c.contains("at most its own limit"), "{c}");
        d.limiters[1].peak_in_window = 10;
        let c = caption(&d);
        assert!(c.contains("key-perkey 10 of 5 (2×)"), "{c}");
    }
}
