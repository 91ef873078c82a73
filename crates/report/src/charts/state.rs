//! `state.png` — the memory each algorithm pays per key.
//!
//! Two bars per limiter: the state bytes per key averaged over keys and
//! time (solid), and the most one key ever held (light). Counters and
//! buckets keep a fixed 8 to 16 bytes; the sliding log keeps 8 bytes per
//! request in the window, so its bars grow with the limit — the price of
//! its exactness. When the largest value is more than 20× the smallest the
//! axis is logarithmic, so the small bars stay readable.

use std::path::Path;

use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::data::RunData;
use super::style::{self, Categories, Mark};
use super::Chart;

pub(crate) const CHART: Chart = Chart {
    file: crate::rundir::STATE_PNG,
    size: (1200, 700),
    about: "state bytes per key, mean (solid) and peak (light), per limiter — what each algorithm's memory costs per client (log axis when the spread is wide)",
    caption,
    render,
};

/// The spread past which the axis turns logarithmic.
const LOG_SPREAD: f64 = 20.0;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StateBar {
    pub index: usize,
    pub name: String,
    pub mean: f64,
    pub peak: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StateSeries {
    pub log: bool,
    pub bars: Vec<StateBar>,
}

pub(crate) fn state_series(data: &RunData) -> StateSeries {
    let bars: Vec<StateBar> = data
        .limiters
        .iter()
        .enumerate()
        .map(|(index, l)| StateBar {
            index,
            name: l.name.clone(),
            mean: l.state_mean,
            peak: l.state_peak,
        })
        .collect();
    let values = || {
        bars.iter()
            .flat_map(|b| [b.mean, b.peak as f64])
            .filter(|&v| v > 0.0)
    };
    let hi = values().fold(0.0, f64::max);
    let lo = values().fold(f64::INFINITY, f64::min);
    StateSeries {
        log: lo.is_finite() && hi / lo > LOG_SPREAD,
        bars,
    }
}

/// What `summary.md` says under the chart: the smallest and the largest.
fn caption(data: &RunData) -> String {
    let s = state_series(data);
    let bytes = |b: &StateBar| {
        let mean = style::trim(b.mean, 2);
        if mean == b.peak.to_string() {
            format!("{mean} B")
        } else {
            format!("{mean} B mean, {} B peak", b.peak)
        }
    };
    let most = |b: &&StateBar| b.mean.max(b.peak as f64);
    let lo = s.bars.iter().min_by(|a, b| most(a).total_cmp(&most(b)));
    let hi = s.bars.iter().max_by(|a, b| most(a).total_cmp(&most(b)));
    let range = match (lo, hi) {
        (Some(lo), Some(hi)) if lo.name != hi.name => format!(
            ": least {} ({}), most {} ({})",
            lo.name,
            bytes(lo),
            hi.name,
            bytes(hi)
        ),
        (Some(only), _) => format!(": {} ({})", only.name, bytes(only)),
        _ => String::new(),
    };
    format!(
        "State bytes per key, mean (solid) and peak (light), per limiter{range}{}",
        if s.log { "; logarithmic axis" } else { "" }
    )
}

fn render(data: &RunData, path: &Path) -> anyhow::Result<bool> {
    let series = state_series(data);
    if series.bars.is_empty() {
        return Ok(false);
    }
    draw_state(data, &series, path)?;
    Ok(true)
}

pub(crate) fn draw_state(data: &RunData, s: &StateSeries, path: &Path) -> anyhow::Result<()> {
    let root = BitMapBackend::new(path, CHART.size).into_drawing_area();
    root.fill(&WHITE)?;
    let mut legend =
        style::limiter_entries(data, s.bars.iter().map(|b| (b.index, b.name.as_str())));
    // Which bar is the mean and which the peak is written under each pair,
    // in the limiter's own colours (a grey legend swatch matched no bar).
    if let [only] = &s.bars[..] {
        let color = style::limiter_color(data, only.index);
        legend.push((Mark::Swatch(color), "mean".into()));
        legend.push((
            Mark::Outlined {
                fill: style::lighten(color, 0.6),
                line: color,
            },
            "peak".into(),
        ));
    }
    let body = style::header(
        &root,
        &format!("{} — state bytes per key", data.name),
        &[format!(
            "Solid: bytes per key averaged over keys and time. Light: the most one key held at any moment.{}",
            if s.log { " Logarithmic axis." } else { "" }
        )],
        &legend,
    )?;
    let hi = s
        .bars
        .iter()
        .map(|b| b.mean.max(b.peak as f64))
        .fold(1.0, f64::max);
    if s.log {
        let lo = s
            .bars
            .iter()
            .flat_map(|b| [b.mean, b.peak as f64])
            .filter(|&v| v > 0.0)
            .fold(f64::INFINITY, f64::min);
        let base = 10f64.powf((lo / 2.0).log10().floor()).min(1.0);
        let chart = style::category_chart(&body, s.bars.len(), (base..hi * 4.0).log_scale())?;
        draw_bars(data, &root, chart, s, base)?;
    } else {
        let chart = style::category_chart(&body, s.bars.len(), 0f64..hi * 1.18)?;
        draw_bars(data, &root, chart, s, 0.0)?;
    }
    root.present()?;
    Ok(())
}

fn draw_bars<Y>(
    data: &RunData,
    root: &style::Area,
    mut chart: Categories<'_, '_, Y>,
    s: &StateSeries,
    base: f64,
) -> anyhow::Result<()>
where
    Y: Ranged<ValueType = f64> + ValueFormatter<f64> + AsRangedCoord<Value = f64>,
{
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(8)
        .y_label_formatter(&|v| style::count(*v))
        .y_desc("bytes of state per key")
        .x_desc("limiter")
        .axis_desc_style(style::text(16, style::INK))
        .label_style(style::text(14, style::INK))
        .bold_line_style(style::GRID)
        .light_line_style(WHITE)
        .draw()?;
    let label = style::anchored(style::text(14, style::INK), HPos::Center, VPos::Bottom);
    let small = style::anchored(style::text(13, style::INK), HPos::Center, VPos::Top);
    let (_, ys) = chart.plotting_area().get_pixel_range();
    for (i, b) in s.bars.iter().enumerate() {
        let color = style::limiter_color(data, b.index);
        let x = i as f64;
        let bars = [
            (x + 0.14, x + 0.48, b.mean, color, "mean"),
            (
                x + 0.52,
                x + 0.86,
                b.peak as f64,
                style::lighten(color, 0.6),
                "peak",
            ),
        ];
        for (x0, x1, v, fill, what) in bars {
            if v > 0.0 {
                chart.draw_series([Rectangle::new([(x0, base), (x1, v)], fill.filled())])?;
                if what == "peak" {
                    chart.draw_series([Rectangle::new(
                        [(x0, base), (x1, v)],
                        color.stroke_width(2),
                    )])?;
                }
            }
            let (cx, y) = chart.backend_coord(&(0.5 * (x0 + x1), v.max(base)));
            root.draw(&Text::new(style::count(v), (cx, y - 4), label.clone()))?;
            root.draw(&Text::new(what, (cx, ys.end + 4), small.clone()))?;
        }
    }
    let names: Vec<(String, RGBColor)> = s
        .bars
        .iter()
        .map(|b| (b.name.clone(), style::limiter_color(data, b.index)))
        .collect();
    style::category_names(root, &chart, &names, 22)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::data::tests_support::{self, run_data};

    #[test]
    fn the_sliding_logs_800_bytes_against_8_turn_the_axis_logarithmic() {
        let d = tests_support::boundary();
        let s = state_series(&d);
        let log = s.bars.iter().find(|b| b.name == "sliding_log").unwrap();
        assert!(log.peak >= 800, "{log:?}");
        assert!(s.log);
    }

    #[test]
    fn similar_sizes_keep_a_linear_axis() {
        let mut d = run_data(&[("a", 1), ("b", 1)], 1);
        d.limiters[1].state_mean = 16.0;
        d.limiters[1].state_peak = 16;
        let s = state_series(&d);
        assert!(!s.log);
        assert_eq!(s.bars[1].peak, 16);
    }
}
