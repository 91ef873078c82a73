//! `backend.png` — what each limiter's backend went through, over time.
//!
//! With a `[backend]` (docs/semantics.md §10) only: two panels over the
//! run, one line per limiter. Above, the mean latency of the requests that
//! entered the backend in each bucket (arrival at the gateway to
//! response), on a logarithmic axis; below, the most requests inside the
//! backend at once (waiting or served). A slowdown window is shaded in
//! both: a rate limit's line climbs through it, a limit that reads the
//! backend holds.

use std::path::Path;

use plotters::prelude::*;

use super::data::RunData;
use super::style::{self, Mark};
use super::Chart;

pub(crate) const CHART: Chart = Chart {
    file: crate::rundir::BACKEND_PNG,
    size: (1200, 900),
    about: "with a [backend] only: per limiter, the mean latency of the requests entering the backend per bucket (log axis) and the most requests inside it at once, the slowdown shaded — whether the limit kept the backend healthy",
    caption,
    render,
};

/// About how many points a line has: buckets are taken together past it.
const POINTS: usize = 200;

/// The slowdown's shade.
const SLOWDOWN: RGBColor = RGBColor(0xEE, 0xE4, 0xD4);

/// One limiter's lines: `(bucket start ns, value)`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BackendLine {
    pub index: usize,
    pub name: String,
    /// Mean latency (ms) of the buckets where a request was served.
    pub latency_ms: Vec<(u64, f64)>,
    pub in_flight: Vec<(u64, u64)>,
    /// The most of any bucket's mean latency, and where.
    pub worst: Option<(u64, f64)>,
    pub peak_in_flight: u64,
    /// The time each point stands for: some buckets taken together.
    pub group_ns: u64,
}

/// The lines of the limiters that have a backend; empty without one.
pub(crate) fn backend_series(data: &RunData) -> Vec<BackendLine> {
    let res = data.resolution_ns;
    data.limiters
        .iter()
        .enumerate()
        .filter(|(_, l)| l.series.iter().any(|b| b.in_flight_max.is_some()))
        .map(|(index, l)| {
            // Buckets taken together so about POINTS remain: the mean
            // latency weighted by the requests served, the most inside.
            let k = l.series.len().div_ceil(POINTS).max(1);
            let mut latency_ms = Vec::new();
            let mut in_flight = Vec::new();
            for (g, group) in l.series.chunks(k).enumerate() {
                let t = (g * k) as u64 * res;
                let (sum, served) = group.iter().fold((0f64, 0u64), |(s, n), b| {
                    let m = b.backend_served.unwrap_or(0);
                    (s + b.latency_mean_ns.unwrap_or(0) as f64 * m as f64, n + m)
                });
                if served > 0 {
                    latency_ms.push((t, sum / served as f64 / 1e6));
                }
                if let Some(most) = group.iter().filter_map(|b| b.in_flight_max).max() {
                    in_flight.push((t, most));
                }
            }
            // The worst bucket as timeseries.csv has it.
            let worst = l
                .series
                .iter()
                .enumerate()
                .filter_map(|(i, b)| {
                    b.latency_mean_ns
                        .map(|ns| (i as u64 * res, ns as f64 / 1e6))
                })
                .fold(None, |w: Option<(u64, f64)>, p| match w {
                    Some(w) if w.1 >= p.1 => Some(w),
                    _ => Some(p),
                });
            BackendLine {
                group_ns: k as u64 * res,
                index,
                name: l.name.clone(),
                peak_in_flight: in_flight.iter().map(|p| p.1).max().unwrap_or(0),
                latency_ms,
                in_flight,
                worst,
            }
        })
        .collect()
}

/// What `summary.md` says under the chart: each limiter's worst bucket and
/// the most inside, from the run's own series.
fn caption(data: &RunData) -> String {
    let res = style::duration(data.resolution_ns);
    let lines: Vec<String> = backend_series(data)
        .iter()
        .map(|l| {
            let worst = match l.worst {
                Some((t, ms)) => format!(
                    "worst mean latency {} ms (the {res} from {} s)",
                    style::millis(ms),
                    style::seconds(t as f64, data.duration_ns as f64)
                ),
                None => "nothing served".to_string(),
            };
            format!("{}: {worst}, at most {} inside", l.name, l.peak_in_flight)
        })
        .collect();
    let slow = if data.slowdowns.is_empty() {
        String::new()
    } else {
        "; shaded: the backend's slowdown".to_string()
    };
    format!(
        "The backend per {res}: mean latency of the requests entering it (log axis) and the most inside at once{slow}. {}.",
        lines.join("; ")
    )
}

fn render(data: &RunData, path: &Path) -> anyhow::Result<bool> {
    let lines = backend_series(data);
    if lines.is_empty() {
        return Ok(false);
    }
    draw_backend(data, &lines, path)?;
    Ok(true)
}

pub(crate) fn draw_backend(
    data: &RunData,
    lines: &[BackendLine],
    path: &Path,
) -> anyhow::Result<()> {
    let root = BitMapBackend::new(path, CHART.size).into_drawing_area();
    root.fill(&WHITE)?;
    let res = style::duration(data.resolution_ns);
    let group = lines.first().map_or(data.resolution_ns, |l| l.group_ns);
    let per = if group == data.resolution_ns {
        res
    } else {
        format!("{} ({res} buckets taken together)", style::duration(group))
    };
    let mut legend = style::limiter_entries(data, lines.iter().map(|l| (l.index, l.name.as_str())));
    if !data.slowdowns.is_empty() {
        legend.push((Mark::Swatch(SLOWDOWN), "backend slowdown".into()));
    }
    let body = style::header(
        &root,
        &format!("{} — the backend behind each limiter, over time", data.name),
        &[format!(
            "Above: mean latency (arrival at the gateway to response) of the requests entering the backend, per {per}, logarithmic axis. Below: the most requests inside the backend at once (waiting or served). Each limiter has a backend of its own, fed what it passes."
        )],
        &legend,
    )?;
    let (top, bottom) = body.split_vertically(body.dim_in_pixel().1 / 2);
    let end = data
        .limiters
        .iter()
        .map(|l| l.series.len() as u64 * data.resolution_ns)
        .max()
        .unwrap_or(data.duration_ns)
        .max(data.duration_ns)
        .max(1) as f64;
    let secs = |ns: f64| ns / 1e9;

    // Latency, log axis.
    let lo = lines
        .iter()
        .flat_map(|l| l.latency_ms.iter().map(|p| p.1))
        .filter(|&v| v > 0.0)
        .fold(f64::INFINITY, f64::min);
    let hi = lines
        .iter()
        .flat_map(|l| l.latency_ms.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let (lo, hi) = if lo.is_finite() {
        (lo / 2.0, hi * 2.0)
    } else {
        (0.1, 10.0)
    };
    let mut chart = ChartBuilder::on(&top)
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..secs(end), (lo..hi).log_scale())?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("mean latency (ms)")
        .y_label_formatter(&|v| style::millis(*v))
        .axis_desc_style(style::text(16, style::INK))
        .label_style(style::text(14, style::INK))
        .bold_line_style(style::GRID)
        .light_line_style(WHITE)
        .draw()?;
    for w in &data.slowdowns {
        chart.draw_series([Rectangle::new(
            [(secs(w.start_ns as f64), lo), (secs(w.end_ns as f64), hi)],
            SLOWDOWN.filled(),
        )])?;
    }
    for l in lines {
        let color = style::limiter_color(data, l.index);
        chart.draw_series(LineSeries::new(
            l.latency_ms
                .iter()
                .map(|&(t, ms)| (secs(t as f64), ms.max(lo))),
            color.stroke_width(2),
        ))?;
    }

    // In flight.
    let most = lines
        .iter()
        .map(|l| l.peak_in_flight)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let mut chart = ChartBuilder::on(&bottom)
        .margin(16)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0f64..secs(end), 0f64..most * 1.08)?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("requests inside")
        .y_label_formatter(&|v| style::count(*v))
        .axis_desc_style(style::text(16, style::INK))
        .label_style(style::text(14, style::INK))
        .bold_line_style(style::GRID)
        .light_line_style(WHITE)
        .draw()?;
    for w in &data.slowdowns {
        chart.draw_series([Rectangle::new(
            [
                (secs(w.start_ns as f64), 0.0),
                (secs(w.end_ns as f64), most * 1.08),
            ],
            SLOWDOWN.filled(),
        )])?;
    }
    for l in lines {
        let color = style::limiter_color(data, l.index);
        chart.draw_series(LineSeries::new(
            l.in_flight.iter().map(|&(t, n)| (secs(t as f64), n as f64)),
            color.stroke_width(2),
        ))?;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::data::tests_support::run_data;
    use crate::charts::data::SeriesRow;

    #[test]
    fn points_weigh_buckets_by_the_requests_served_and_take_the_most_inside() {
        let mut data = run_data(&[("a", 1), ("b", 1)], 10);
        // 600 buckets of 100 ms: three to a point.
        data.limiters[0].series = vec![SeriesRow::default(); 600];
        data.limiters[1].series = vec![SeriesRow::default(); 600];
        for (i, b) in data.limiters[0].series.iter_mut().enumerate() {
            b.backend_served = Some(if i % 3 == 0 { 3 } else { 1 });
            b.latency_mean_ns = Some(if i % 3 == 0 { 10_000_000 } else { 50_000_000 });
            b.in_flight_max = Some(i as u64 % 3);
        }
        data.limiters[0].series[7].latency_mean_ns = Some(900_000_000);
        let lines = backend_series(&data);
        assert_eq!(lines.len(), 1, "only the limiter with a backend");
        let l = &lines[0];
        assert_eq!(l.group_ns, 300_000_000);
        assert_eq!(l.latency_ms.len(), 200);
        // (3·10 + 50 + 50) / 5 = 26 ms.
        assert!((l.latency_ms[0].1 - 26.0).abs() < 1e-9);
        assert_eq!(l.in_flight[0], (0, 2));
        // The caption's worst is the bucket's own, as timeseries.csv has it.
        assert_eq!(l.worst, Some((700_000_000, 900.0)));
    }
}
