//! `delay.png` — how long a shaper makes requests wait.
//!
//! Only limiters that delayed something appear (a leaky bucket, nginx's
//! `limit_req`): for each, the median, 99th percentile and largest delay of
//! its passed requests (admitted ones count as 0 ms), from `summary.json`.
//! A shaper trades rejections for waiting; this is the wait. When nothing
//! was delayed the chart is skipped and no file is written.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::data::RunData;
use super::style::{self, Mark};
use super::Chart;

pub(crate) const CHART: Chart = Chart {
    file: crate::rundir::DELAY_PNG,
    size: (1200, 700),
    about: "for shaping limiters only (skipped when nothing was delayed): median, 99th percentile and largest delay of passed requests — what smoothing instead of rejecting costs in waiting",
    caption,
    render,
};

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DelayBar {
    pub index: usize,
    pub name: String,
    pub delayed: u64,
    pub passed: u64,
    /// `(label, delay in ms)`: p50, p99, max.
    pub stats: [(&'static str, f64); 3],
}

/// The shaping limiters' delays; empty when nothing was delayed.
pub(crate) fn delay_series(data: &RunData) -> Vec<DelayBar> {
    data.limiters
        .iter()
        .enumerate()
        .filter(|(_, l)| l.delayed > 0)
        .map(|(index, l)| DelayBar {
            index,
            name: l.name.clone(),
            delayed: l.delayed,
            passed: l.passed(),
            stats: [
                ("p50", l.delay_p50_ms.unwrap_or(0.0)),
                ("p99", l.delay_p99_ms.unwrap_or(0.0)),
                ("max", l.delay_max_ms.unwrap_or(0.0)),
            ],
        })
        .collect()
}

/// What `summary.md` says under the chart: each shaper's waits.
fn caption(data: &RunData) -> String {
    let rows: Vec<String> = delay_series(data)
        .iter()
        .map(|b| {
            let [p50, p99, max] = b.stats.map(|(_, ms)| style::millis(ms));
            format!(
                "{} delayed {} of {} passed requests — p50 {p50} ms, p99 {p99} ms, largest {max} ms",
                b.name, b.delayed, b.passed
            )
        })
        .collect();
    format!(
        "How long shaping limiters made requests wait (admitted ones count as 0 ms): {}",
        rows.join("; ")
    )
}

fn render(data: &RunData, path: &Path) -> anyhow::Result<bool> {
    let series = delay_series(data);
    if series.is_empty() {
        return Ok(false);
    }
    draw_delay(data, &series, path)?;
    Ok(true)
}

/// How much lighter each of p50, p99, max is than the limiter's colour.
const SHADES: [f64; 3] = [0.6, 0.3, 0.0];

pub(crate) fn draw_delay(data: &RunData, bars: &[DelayBar], path: &Path) -> anyhow::Result<()> {
    anyhow::ensure!(!bars.is_empty(), "no delayed requests to draw");
    let root = BitMapBackend::new(path, CHART.size).into_drawing_area();
    root.fill(&WHITE)?;
    let mut legend = style::limiter_entries(data, bars.iter().map(|b| (b.index, b.name.as_str())));
    // The shades of p50, p99 and max, in the colour of the bars they
    // stand for: with one limiter, its own; with several, each group's
    // labels say which bar is which.
    if let [only] = bars {
        for ((what, _), shade) in only.stats.iter().zip(SHADES) {
            let name = match *what {
                "p50" => "median (p50)",
                "p99" => "99th percentile",
                _ => "largest",
            };
            legend.push((
                Mark::Swatch(style::lighten(
                    style::limiter_color(data, only.index),
                    shade,
                )),
                name.to_string(),
            ));
        }
    }
    let shares: Vec<String> = bars
        .iter()
        .map(|b| {
            format!(
                "{} delayed {} of {} passed ({}%)",
                b.name,
                style::count(b.delayed as f64),
                style::count(b.passed as f64),
                style::trim(100.0 * b.delayed as f64 / b.passed.max(1) as f64, 1)
            )
        })
        .collect();
    let body = style::header(
        &root,
        &format!("{} — how long shaping limiters made requests wait", data.name),
        &[
            "Delay of passed requests, admitted ones counting as 0 ms (nearest-rank percentiles): per limiter, p50, p99 and the largest, light to full colour. Only limiters that delayed something are shown.".to_string(),
            format!("{}.", shares.join("; ")),
        ],
        &legend,
    )?;
    let hi = bars
        .iter()
        .flat_map(|b| b.stats.iter().map(|s| s.1))
        .fold(0.0, f64::max)
        .max(0.001);
    let mut chart = style::category_chart(&body, bars.len(), 0f64..hi * 1.18)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_labels(8)
        .y_label_formatter(&|v| style::millis(*v))
        .y_desc("delay (ms)")
        .x_desc("limiter")
        .axis_desc_style(style::text(16, style::INK))
        .label_style(style::text(14, style::INK))
        .bold_line_style(style::GRID)
        .light_line_style(WHITE)
        .draw()?;
    let label = style::anchored(style::text(14, style::INK), HPos::Center, VPos::Bottom);
    let small = style::anchored(style::text(13, style::INK), HPos::Center, VPos::Top);
    let (_, ys) = chart.plotting_area().get_pixel_range();
    // Narrow groups when there are few: three bars of a sensible width.
    let width = (0.8 / 3.0f64).min(0.24);
    for (i, b) in bars.iter().enumerate() {
        let color = style::limiter_color(data, b.index);
        let left = i as f64 + 0.5 - 1.5 * width;
        for (k, ((what, ms), shade)) in b.stats.iter().zip(SHADES).enumerate() {
            let x0 = left + k as f64 * width + 0.01;
            let x1 = x0 + width - 0.02;
            chart.draw_series([Rectangle::new(
                [(x0, 0.0), (x1, *ms)],
                style::lighten(color, shade).filled(),
            )])?;
            let (cx, y) = chart.backend_coord(&(0.5 * (x0 + x1), *ms));
            root.draw(&Text::new(
                format!("{} ms", style::millis(*ms)),
                (cx, y - 4),
                label.clone(),
            ))?;
            root.draw(&Text::new(*what, (cx, ys.end + 4), small.clone()))?;
        }
    }
    let names: Vec<(String, RGBColor)> = bars
        .iter()
        .map(|b| (b.name.clone(), style::limiter_color(data, b.index)))
        .collect();
    style::category_names(&root, &chart, &names, 22)?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::data::tests_support::{self, run_data};

    #[test]
    fn only_limiters_that_delayed_appear() {
        let d = tests_support::boundary();
        let s = delay_series(&d);
        let names: Vec<&str> = s.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(names, ["leaky_bucket"]);
        assert_eq!(s[0].index, 6, "keeps the limiter's index, so its colour");
        assert!(s[0].stats[2].1 >= s[0].stats[1].1);
    }

    // Regression (chart details issue item 6): the legend's p50/p99/max
    // swatches were grey while the bars were the limiter's colour.
    #[test]
    fn the_legend_swatches_are_the_bars_colours() {
        let d = tests_support::boundary();
        let bars = delay_series(&d);
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("delay.png");
        crate::charts::style::ensure_fonts().unwrap();
        draw_delay(&d, &bars, &path).unwrap();
        let img = image_rgb(&path);
        let color = style::limiter_color(&d, bars[0].index);
        let grey = style::lighten(style::MUTED, 0.6);
        let count = |c: RGBColor| img.iter().filter(|p| **p == [c.0, c.1, c.2]).count();
        // The legend sits in the top 140 pixels; the median's swatch is
        // the lightest shade of the bars' colour, not grey.
        let top: Vec<[u8; 3]> = img[..1200 * 140].to_vec();
        let in_top = |c: RGBColor| top.iter().filter(|p| **p == [c.0, c.1, c.2]).count();
        assert!(in_top(style::lighten(color, SHADES[0])) >= 100);
        // (A 16 × 16 grey swatch would be 256 pixels; text edges have a few.)
        assert!(in_top(grey) < 100, "{} grey pixels", in_top(grey));
        assert!(count(style::lighten(color, SHADES[0])) > in_top(style::lighten(color, SHADES[0])));
    }

    /// The RGB pixels of a PNG the charts wrote, row by row.
    fn image_rgb(path: &std::path::Path) -> Vec<[u8; 3]> {
        let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        let n = info.color_type.samples();
        buf[..info.buffer_size()]
            .chunks(n)
            .map(|p| [p[0], p[1], p[2]])
            .collect()
    }

    #[test]
    fn nothing_delayed_means_no_chart() {
        let d = run_data(&[("fixed_window", 2)], 1);
        assert!(delay_series(&d).is_empty());
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("delay.png");
        assert!(!render(&d, &path).unwrap());
        assert!(!path.exists());
    }
}
