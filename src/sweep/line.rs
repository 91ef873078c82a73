//! `sweep-METRIC.png` — one metric as the one varied path changes, one
//! line per limiter.
//!
//! x is the varied value (a numeric axis when every value is a number,
//! sharing one unit; else the values in order, evenly spaced); y is the
//! metric at that point. Read it for the knee: where rejections stop
//! falling, where the peak crosses the limit, where state starts to grow.
//! A requirement on the metric is a dashed line at its bound, and each
//! limiter's recommended point a ring on its line.

use std::path::Path;

use plotters::prelude::*;

use super::grid::Grid;
use super::table::{number, trim, Metric, SweepTable};
use crate::report::charts::style::{self, Mark};

pub const SIZE: (u32, u32) = (1200, 700);

/// One limiter's line.
#[derive(Debug, Clone, PartialEq)]
pub struct LimiterLine {
    pub name: String,
    pub color: RGBColor,
    /// The metric at each x, `None` where the cell is not a number.
    pub ys: Vec<Option<f64>>,
    /// The x index of the limiter's recommended point.
    pub chosen: Option<usize>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Lines {
    pub metric: String,
    pub about: String,
    /// The varied path (the x axis).
    pub path: String,
    pub xs: Vec<f64>,
    pub labels: Vec<String>,
    /// Whether `xs` are the values themselves (else their positions).
    pub numeric: bool,
    pub lines: Vec<LimiterLine>,
    /// The requirements on this metric: their bounds and their text.
    pub thresholds: Vec<(f64, String)>,
}

/// The x positions of an axis' values: the numbers when all are numbers
/// with one unit, else 0, 1, 2, ….
pub fn positions(values: &[String]) -> (Vec<f64>, bool) {
    let unit = |v: &str| {
        v.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-')
            .to_string()
    };
    let first_unit = values.first().map(|v| unit(v)).unwrap_or_default();
    let nums: Option<Vec<f64>> = values
        .iter()
        .map(|v| {
            (unit(v) == first_unit && !v.trim().is_empty())
                .then(|| number(v))
                .flatten()
        })
        .collect();
    match nums {
        Some(n) if n.windows(2).all(|w| w[0] < w[1]) => (n, true),
        _ => ((0..values.len()).map(|i| i as f64).collect(), false),
    }
}

/// Colours for the limiters named in `t`, by algorithm as in every chart.
pub(crate) fn limiter_colors(t: &SweepTable) -> Vec<(String, RGBColor)> {
    let names = t.limiters();
    let algo = |name: &str| -> String {
        let c = t.column("algorithm");
        t.rows_of(name)
            .first()
            .and_then(|&(_, r)| c.map(|c| t.rows[r][c].clone()))
            .unwrap_or_default()
    };
    let algos: Vec<String> = names.iter().map(|n| algo(n)).collect();
    names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let k = algos[..i].iter().filter(|a| **a == algos[i]).count();
            let all = algos.iter().filter(|a| **a == algos[i]).count();
            (
                n.clone(),
                style::shade(style::algorithm_color(&algos[i]), k, all),
            )
        })
        .collect()
}

/// The series of `metric` over a one-path grid, with the requirements on
/// it (`thresholds`) and each limiter's recommended point (`chosen[l]`,
/// a point index); `None` when the metric is 0 (or empty) everywhere and
/// nothing requires it: nothing to draw.
pub(crate) fn line_series(
    t: &SweepTable,
    grid: &Grid,
    metric: &Metric,
    about: &str,
    thresholds: Vec<(f64, String)>,
    chosen: &[Option<usize>],
) -> Option<Lines> {
    let axis = grid.axes.first()?;
    let (xs, numeric) = positions(&axis.values);
    let lines: Vec<LimiterLine> = limiter_colors(t)
        .into_iter()
        .enumerate()
        .map(|(l, (name, color))| {
            let mut ys = vec![None; xs.len()];
            for (p, r) in t.rows_of(&name) {
                if let Some(slot) = ys.get_mut(p) {
                    *slot = metric.value(t, r);
                }
            }
            let chosen = chosen.get(l).copied().flatten();
            LimiterLine {
                name,
                color,
                ys,
                chosen,
            }
        })
        .collect();
    let any = lines
        .iter()
        .flat_map(|l| &l.ys)
        .any(|y| y.is_some_and(|y| y != 0.0));
    (any || !thresholds.is_empty()).then(|| Lines {
        metric: metric.name().to_string(),
        about: about.to_string(),
        path: axis.path.clone(),
        xs,
        labels: axis.values.clone(),
        numeric,
        lines,
        thresholds,
    })
}

/// What `summary.md` says under the chart: each limiter's range.
pub fn caption(s: &Lines) -> String {
    let parts: Vec<String> = s
        .lines
        .iter()
        .filter_map(|l| {
            let first = l.ys.iter().position(Option::is_some)?;
            let last = l.ys.iter().rposition(Option::is_some)?;
            Some(format!(
                "{} {} at {} → {} at {}",
                l.name,
                trim(l.ys[first]?, 4),
                s.labels[first],
                trim(l.ys[last]?, 4),
                s.labels[last]
            ))
        })
        .collect();
    let mut text = format!(
        "`{}` ({}) as `{}` varies: {}.",
        s.metric,
        s.about,
        s.path,
        parts.join("; ")
    );
    for (_, q) in &s.thresholds {
        text.push_str(&format!(" The dashed line is the requirement `{q}`."));
    }
    let chosen: Vec<String> = s
        .lines
        .iter()
        .filter_map(|l| Some(format!("{} at {}", l.name, s.labels[l.chosen?])))
        .collect();
    if !chosen.is_empty() {
        text.push_str(&format!(
            " Ringed: the recommended point, {}.",
            chosen.join("; ")
        ));
    }
    text
}

pub(crate) fn draw_line(scenario: &str, s: &Lines, path: &Path) -> anyhow::Result<()> {
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let mut legend: Vec<(Mark, String)> = s
        .lines
        .iter()
        .map(|l| (Mark::Line(l.color), style::drawable(&l.name)))
        .collect();
    for (_, q) in &s.thresholds {
        legend.push((
            Mark::Dashed(style::INK),
            format!("required: {}", style::drawable(q)),
        ));
    }
    if s.lines.iter().any(|l| l.chosen.is_some()) {
        legend.push((
            Mark::Outlined {
                fill: WHITE,
                line: style::INK,
            },
            "ring: recommended point".to_string(),
        ));
    }
    let body = style::header(
        &root,
        &style::drawable(&format!("{scenario} — {} as {} varies", s.metric, s.path)),
        &[format!("{}: {}.", s.metric, s.about)],
        &legend,
    )?;
    let top = s
        .lines
        .iter()
        .flat_map(|l| l.ys.iter().flatten())
        .chain(s.thresholds.iter().map(|(b, _)| b))
        .fold(0f64, |a, &b| a.max(b));
    let top = if top <= 0.0 { 1.0 } else { top * 1.12 };
    let (x0, x1) = match (s.xs.first(), s.xs.last()) {
        (Some(&a), Some(&b)) if b > a => {
            let pad = (b - a) * 0.04;
            (a - pad, b + pad)
        }
        (Some(&a), _) => (a - 1.0, a + 1.0),
        _ => (0.0, 1.0),
    };
    let mut chart = ChartBuilder::on(&body)
        .margin_left(16)
        .margin_right(40)
        .margin_top(12)
        .margin_bottom(12)
        .x_label_area_size(56)
        .y_label_area_size(90)
        .build_cartesian_2d(x0..x1, 0f64..top)?;
    let labels = s.labels.clone();
    let xs = s.xs.clone();
    let numeric = s.numeric;
    let x_fmt = move |v: &f64| -> String {
        if numeric {
            style::count(*v)
        } else {
            xs.iter()
                .position(|x| (x - v).abs() < 1e-9)
                .map(|i| labels[i].clone())
                .unwrap_or_default()
        }
    };
    let mut mesh = chart.configure_mesh();
    mesh.light_line_style(TRANSPARENT)
        .bold_line_style(style::GRID)
        .y_labels(8)
        .y_label_formatter(&|v| trim(*v, 4))
        .x_label_formatter(&x_fmt)
        .x_desc(style::drawable(&s.path))
        .y_desc(s.metric.clone())
        .axis_desc_style(style::text(16, style::INK))
        .label_style(style::text(14, style::INK));
    if !s.numeric {
        mesh.x_labels(s.xs.len().min(20));
    }
    mesh.draw()?;
    for l in &s.lines {
        let points: Vec<(f64, f64)> =
            s.xs.iter()
                .zip(&l.ys)
                .filter_map(|(&x, y)| y.map(|y| (x, y)))
                .collect();
        chart.draw_series(LineSeries::new(points.clone(), l.color.stroke_width(3)))?;
        chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, l.color.filled())))?;
        if let Some(p) = l.chosen.and_then(|i| Some((s.xs[i], l.ys[i]?))) {
            chart.draw_series(std::iter::once(Circle::new(p, 11, l.color.stroke_width(3))))?;
        }
    }
    for (bound, _) in &s.thresholds {
        chart.draw_series(DashedLineSeries::new(
            vec![(x0, *bound), (x1, *bound)],
            10,
            6,
            style::INK.stroke_width(2),
        ))?;
    }
    root.present()?;
    Ok(())
}
