//! `outcomes.png` — what became of every attempt, per limiter.
//!
//! One horizontal bar per limiter, stacked: admitted (passed at once),
//! delayed (queued by a shaper, passed later), rejected. When clients
//! retry, a rejection is either followed by another attempt or is the last
//! one of a request that gave up, and the bar splits the two; every bar is
//! then all attempts, retries included, so a longer bar is retry
//! amplification. A chain's member (docs/semantics.md §13) adds, in grey,
//! the attempts it would have passed that another member rejected, so the
//! chain's bar and its members' side by side show which layer does the
//! work. Segment colours mean the outcome; the limiter's own colour marks
//! its name.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::data::RunData;
use super::style::{self, Mark};
use super::Chart;

pub(crate) const CHART: Chart = Chart {
    file: crate::rundir::OUTCOMES_PNG,
    size: (1200, 700),
    about: "admitted / delayed / rejected (and gave up, where clients retry) per limiter, stacked: who passes at once, who waits, who is turned away",
    caption,
    render,
};

/// The outcome colours, the same in every run.
pub use super::style::{ADMITTED, DELAYED, GAVE_UP, OVERRULED, REJECTED};

/// One outcome's share of a bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Admitted,
    Delayed,
    /// Rejected (and, where clients retry, tried again).
    Rejected,
    /// The final rejection of a request that gave up.
    GaveUp,
    /// A chain member's pass that another member's rejection overruled.
    Overruled,
}

impl Outcome {
    pub fn color(self) -> RGBColor {
        match self {
            Outcome::Admitted => ADMITTED,
            Outcome::Delayed => DELAYED,
            Outcome::Rejected => REJECTED,
            Outcome::GaveUp => GAVE_UP,
            Outcome::Overruled => OVERRULED,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OutcomeBar {
    pub index: usize,
    pub name: String,
    pub attempts: u64,
    /// Segments in drawing order, left to right; they sum to `attempts`.
    pub segments: Vec<(Outcome, u64)>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OutcomeSeries {
    /// True when clients retried and some request gave up: the rejected
    /// segment then splits into retried and gave up.
    pub gave_up: bool,
    pub bars: Vec<OutcomeBar>,
}

pub(crate) fn outcomes_series(data: &RunData) -> OutcomeSeries {
    // Without retries every rejection "gives up"; the split only says
    // something when some rejections were followed by another attempt.
    let gave_up = data
        .limiters
        .iter()
        .any(|l| l.gave_up.is_some_and(|g| g > 0 && g < l.rejected));
    let bars = data
        .limiters
        .iter()
        .enumerate()
        .map(|(index, l)| {
            let g = if gave_up {
                l.gave_up.unwrap_or(0).min(l.rejected)
            } else {
                0
            };
            let mut segments = vec![
                (Outcome::Admitted, l.admitted),
                (Outcome::Delayed, l.delayed),
                (Outcome::Rejected, l.rejected - g),
            ];
            if gave_up {
                segments.push((Outcome::GaveUp, g));
            }
            if l.overruled > 0 {
                segments.push((Outcome::Overruled, l.overruled));
            }
            OutcomeBar {
                index,
                name: l.name.clone(),
                attempts: l.attempts,
                segments,
            }
        })
        .collect();
    OutcomeSeries { gave_up, bars }
}

/// What `summary.md` says under the chart: each limiter's outcomes, naming
/// only those that happened.
fn caption(data: &RunData) -> String {
    let s = outcomes_series(data);
    let rows: Vec<String> = s
        .bars
        .iter()
        .map(|b| {
            let parts: Vec<String> = b
                .segments
                .iter()
                .filter(|(_, n)| *n > 0)
                .map(|&(o, n)| {
                    let what = match o {
                        Outcome::Admitted => "admitted",
                        Outcome::Delayed => "delayed",
                        Outcome::Rejected if s.gave_up => "rejected then retried",
                        Outcome::Rejected => "rejected",
                        Outcome::GaveUp => "rejected, then gave up",
                        Outcome::Overruled => "would have passed, rejected by another member",
                    };
                    format!("{n} {what}")
                })
                .collect();
            let parts = if parts.is_empty() {
                "no attempts".to_string()
            } else {
                parts.join(", ")
            };
            format!("{} {} ({parts})", b.name, b.attempts)
        })
        .collect();
    format!(
        "What happened to every attempt, per limiter, stacked: {}",
        rows.join("; ")
    )
}

fn render(data: &RunData, path: &Path) -> anyhow::Result<bool> {
    let series = outcomes_series(data);
    if series.bars.is_empty() {
        return Ok(false);
    }
    draw_outcomes(data, &series, path)?;
    Ok(true)
}

pub(crate) fn draw_outcomes(data: &RunData, s: &OutcomeSeries, path: &Path) -> anyhow::Result<()> {
    let root = BitMapBackend::new(path, CHART.size).into_drawing_area();
    root.fill(&WHITE)?;
    let mut legend = vec![
        (
            Mark::Swatch(ADMITTED),
            "admitted (passed at once)".to_string(),
        ),
        (
            Mark::Swatch(DELAYED),
            "delayed (queued, passed later)".to_string(),
        ),
    ];
    if s.gave_up {
        legend.push((Mark::Swatch(REJECTED), "rejected, then retried".into()));
        legend.push((Mark::Swatch(GAVE_UP), "rejected, then gave up".into()));
    } else {
        legend.push((Mark::Swatch(REJECTED), "rejected".into()));
    }
    if s.bars
        .iter()
        .any(|b| b.segments.iter().any(|x| x.0 == Outcome::Overruled))
    {
        legend.push((
            Mark::Swatch(OVERRULED),
            "chain member: would pass, another member rejected".into(),
        ));
    }
    let subtitle = if s.gave_up {
        "Every attempt of every request, retries included: a longer bar means clients came back more often. Square: the limiter's colour."
    } else {
        "Every attempt of every request. The square before a name is the limiter's colour in the other charts."
    };
    let body = style::header(
        &root,
        &format!("{} — what happened to each attempt", data.name),
        &[subtitle.to_string()],
        &legend,
    )?;

    let n = s.bars.len();
    let most = s.bars.iter().map(|b| b.attempts).max().unwrap_or(0).max(1) as f64;
    let names_width = s
        .bars
        .iter()
        .map(|b| root.estimate_text_size(&b.name, &style::text(15, style::INK)))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .map(|(w, _)| w)
        .max()
        .unwrap_or(0)
        .clamp(60, 360);
    let mut chart = ChartBuilder::on(&body)
        .margin_left(16)
        .margin_right(40)
        .margin_top(12)
        .margin_bottom(8)
        .x_label_area_size(56)
        .y_label_area_size(names_width + 34)
        .build_cartesian_2d(0f64..most * 1.02, 0f64..n as f64)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_labels(8)
        .x_label_formatter(&|v| style::count(*v))
        .x_desc(if s.gave_up {
            "attempts (requests, retries counted again)"
        } else {
            "attempts (requests)"
        })
        .axis_desc_style(style::text(16, style::INK))
        .label_style(style::text(14, style::INK))
        .bold_line_style(style::GRID)
        .light_line_style(WHITE)
        .draw()?;

    // Limiter 0 on top: category i spans y ∈ [n − i − 1, n − i).
    let row = |i: usize| (n - i - 1) as f64;
    for (i, b) in s.bars.iter().enumerate() {
        let mut x = 0.0;
        for &(outcome, count) in &b.segments {
            if count == 0 {
                continue;
            }
            let x1 = x + count as f64;
            chart.draw_series([Rectangle::new(
                [(x, row(i) + 0.18), (x1, row(i) + 0.82)],
                outcome.color().filled(),
            )])?;
            let (px0, py) = chart.backend_coord(&(x, row(i) + 0.5));
            let (px1, _) = chart.backend_coord(&(x1, row(i) + 0.5));
            let share = 100.0 * count as f64 / b.attempts.max(1) as f64;
            let label = format!(
                "{} ({}%)",
                style::count(count as f64),
                style::trim(share, 1)
            );
            let short = style::count(count as f64);
            let white = style::anchored(style::text(14, WHITE), HPos::Center, VPos::Center);
            let fits = |t: &str| -> anyhow::Result<bool> {
                Ok(root.estimate_text_size(t, &white)?.0 as i32 + 10 <= px1 - px0)
            };
            let text = if fits(&label)? {
                Some(label)
            } else if fits(&short)? {
                Some(short)
            } else {
                None
            };
            if let Some(t) = text {
                root.draw(&Text::new(t, ((px0 + px1) / 2, py), white))?;
            }
            x = x1;
        }
        let (px, py) = chart.backend_coord(&(0.0, row(i) + 0.5));
        let color = style::limiter_color(data, b.index);
        root.draw(&Rectangle::new(
            [(px - 22, py - 7), (px - 8, py + 7)],
            color.filled(),
        ))?;
        root.draw(&Text::new(
            b.name.clone(),
            (px - 30, py),
            style::anchored(style::text(15, style::INK), HPos::Right, VPos::Center),
        ))?;
    }
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::data::tests_support::{self, run_data};

    #[test]
    fn segments_sum_to_the_attempts() {
        let d = tests_support::boundary();
        let s = outcomes_series(&d);
        for b in &s.bars {
            let total: u64 = b.segments.iter().map(|x| x.1).sum();
            assert_eq!(total, b.attempts, "{}", b.name);
        }
    }

    #[test]
    fn gave_up_splits_the_rejections_only_when_someone_gave_up() {
        let mut d = run_data(&[("a", 1)], 1);
        let l = &mut d.limiters[0];
        (l.attempts, l.admitted, l.rejected) = (10, 6, 4);
        assert!(!outcomes_series(&d).gave_up);
        d.limiters[0].gave_up = Some(0);
        assert!(
            !outcomes_series(&d).gave_up,
            "a zero gave_up adds no segment"
        );
        d.limiters[0].gave_up = Some(4);
        assert!(
            !outcomes_series(&d).gave_up,
            "without retries every rejection gives up: nothing to split"
        );
        d.limiters[0].gave_up = Some(3);
        let s = outcomes_series(&d);
        assert!(s.gave_up);
        assert_eq!(
            s.bars[0].segments,
            [
                (Outcome::Admitted, 6),
                (Outcome::Delayed, 0),
                (Outcome::Rejected, 1),
                (Outcome::GaveUp, 3)
            ]
        );
    }
}
