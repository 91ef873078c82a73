//! `deployment.png` — what a deployment costs, per limiter.
//!
//! A limiter on several gateway instances, or behind a shared store, is no
//! longer the algorithm alone. **Overshoot** is the cost that passed beyond
//! the limit, per key per aligned window `[k·W, (k+1)·W)`, summed over keys
//! and windows: local state on N instances lets a key through up to N times
//! (each instance enforces the whole policy), a read-then-write store lets
//! racing instances both pass on the same stale count, and `fail_open`
//! passes everything while the store is down. **Added latency** is what a
//! decision waited on the store before the client heard it (p99, the bar;
//! p50 beside it): the price of exactness. Store operations per second and
//! the decisions taken because the store failed are written beside the
//! bars where they are not zero.
//!
//! Drawn only when some limiter is deployed (`instances > 1` or a global
//! store); a single process with its own state has neither cost.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::data::RunData;
use super::style::{self, RowName};
use super::Chart;

pub(crate) const CHART: Chart = Chart {
    file: crate::rundir::DEPLOYMENT_PNG,
    size: (1400, 760),
    about: "only when a limiter runs on several instances or a shared store: overshoot (cost passed beyond the limit per key per window, summed) and the p99 latency the store added per decision, per limiter, with store operations per second and the decisions taken while the store failed",
    caption,
    render,
};

/// One limiter's row.
#[derive(Debug, Clone, PartialEq)]
pub struct DeploymentRow {
    /// The limiter's index (its colour).
    pub index: usize,
    pub name: String,
    pub instances: u64,
    pub scope: String,
    pub deployed: bool,
    pub overshoot: u64,
    pub overshoot_max: u64,
    pub latency_p50_ms: f64,
    pub latency_p99_ms: f64,
    pub store_ops_per_s: f64,
    /// Decisions taken because the store failed, by kind.
    pub unprotected_passes: u64,
    pub fault_rejections: u64,
    pub fallback_decisions: u64,
}

impl DeploymentRow {
    /// The store-failure decisions that happened, as short phrases:
    /// `1.2k passed unchecked`.
    pub fn fault_notes(&self) -> Vec<String> {
        [
            (self.unprotected_passes, "passed unchecked"),
            (self.fault_rejections, "rejected"),
            (self.fallback_decisions, "decided by the local fallback"),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{} {what}", style::count(n as f64)))
        .collect()
    }

    /// How the limiter runs, under its name: `4 instances, shared store`.
    pub fn shape(&self) -> String {
        let instances = if self.instances == 1 {
            "1 instance".to_string()
        } else {
            format!("{} instances", self.instances)
        };
        let state = if self.scope == "global" {
            "shared store"
        } else {
            "local state"
        };
        format!("{instances}, {state}")
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct DeploymentSeries {
    pub rows: Vec<DeploymentRow>,
}

impl DeploymentSeries {
    /// Whether the chart says anything: some limiter is deployed.
    pub fn shown(&self) -> bool {
        self.rows.iter().any(|r| r.deployed)
    }
}

pub fn deployment_series(data: &RunData) -> DeploymentSeries {
    DeploymentSeries {
        rows: data
            .limiters
            .iter()
            .enumerate()
            .map(|(index, l)| {
                let d = &l.deployment;
                DeploymentRow {
                    index,
                    name: l.name.clone(),
                    instances: d.instances,
                    scope: d.scope.clone(),
                    deployed: d.is_deployed(),
                    overshoot: d.overshoot.unwrap_or(0),
                    overshoot_max: d.overshoot_max.unwrap_or(0),
                    latency_p50_ms: d.added_latency_p50_ms.unwrap_or(0.0),
                    latency_p99_ms: d.added_latency_p99_ms.unwrap_or(0.0),
                    store_ops_per_s: d.store_ops_per_s.unwrap_or(0.0),
                    unprotected_passes: d.unprotected_passes,
                    fault_rejections: d.fault_rejections,
                    fallback_decisions: d.fallback_decisions,
                }
            })
            .collect(),
    }
}

/// What `summary.md` says under the chart.
fn caption(data: &RunData) -> String {
    let s = deployment_series(data);
    let rows: Vec<String> = s
        .rows
        .iter()
        .filter(|r| r.deployed)
        .map(|r| {
            let mut t = format!(
                "{} ({}): overshoot {}",
                r.name,
                r.shape(),
                style::count(r.overshoot as f64)
            );
            if r.latency_p99_ms > 0.0 {
                t.push_str(&format!(
                    ", store latency p99 {} ms",
                    style::millis(r.latency_p99_ms)
                ));
            }
            for note in r.fault_notes() {
                t.push_str(&format!(", {note}"));
            }
            t
        })
        .collect();
    format!(
        "What each deployment cost — overshoot (cost passed beyond the limit per key per window, summed) and the latency a shared store added: {}. {}",
        rows.join("; "),
        verdict(&s)
    )
}

fn render(data: &RunData, path: &Path) -> anyhow::Result<bool> {
    let series = deployment_series(data);
    if !series.shown() {
        return Ok(false);
    }
    draw_deployment(data, &series, path)?;
    Ok(true)
}

/// The subtitle's last line: the worst overshoot and the slowest store.
fn verdict(s: &DeploymentSeries) -> String {
    let mut out = Vec::new();
    match s.rows.iter().max_by_key(|r| r.overshoot) {
        Some(r) if r.overshoot > 0 => out.push(format!(
            "Most overshoot: {}, {} over the limit in all ({} in its worst key-window).",
            r.name,
            style::count(r.overshoot as f64),
            style::count(r.overshoot_max as f64)
        )),
        _ => out.push("No limiter let a key through beyond the limit in any window.".to_string()),
    }
    let stores: Vec<&DeploymentRow> = s.rows.iter().filter(|r| r.latency_p99_ms > 0.0).collect();
    let slowest = stores
        .iter()
        .max_by(|a, b| a.latency_p99_ms.total_cmp(&b.latency_p99_ms));
    match slowest {
        None => out.push("No decision waited on a store.".to_string()),
        Some(r) if stores.iter().all(|o| o.latency_p99_ms == r.latency_p99_ms) => {
            out.push(format!(
                "Every decision through a store waited {} ms at the 99th percentile.",
                style::millis(r.latency_p99_ms)
            ))
        }
        Some(r) => out.push(format!(
            "Slowest store: {}, {} ms at the 99th percentile (median {} ms).",
            r.name,
            style::millis(r.latency_p99_ms),
            style::millis(r.latency_p50_ms)
        )),
    }
    out.join(" ")
}

/// Store operations per second, to three significant digits or so.
fn ops_per_s(v: f64) -> String {
    if v >= 1e4 {
        style::count(v)
    } else if v >= 10.0 {
        style::trim(v, 0)
    } else {
        style::trim(v, 2)
    }
}

/// A row's label right of its bar: a bold value, a muted remark after it,
/// and an optional second line under both.
struct BarLabel {
    value: String,
    remark: String,
    below: Option<String>,
}

const VALUE_SIZE: u32 = 15;
const REMARK_SIZE: u32 = 14;

fn label_width(root: &style::Area, l: &BarLabel) -> anyhow::Result<u32> {
    let value = root.estimate_text_size(&l.value, &style::bold(VALUE_SIZE, style::INK))?;
    let remark = root.estimate_text_size(&l.remark, &style::text(REMARK_SIZE, style::MUTED))?;
    let below = match &l.below {
        Some(b) => {
            root.estimate_text_size(b, &style::text(REMARK_SIZE, style::INK))?
                .0
        }
        None => 0,
    };
    Ok((value.0 + remark.0).max(below))
}

/// One panel of horizontal bars, one per limiter, limiter 0 on top.
struct BarPanel<'a> {
    caption: &'static str,
    x_desc: &'static str,
    x_fmt: fn(&f64) -> String,
    /// The row names, written left of this panel (the left one only).
    names: Option<&'a [RowName]>,
    y_label_w: u32,
    /// Each row's colour, value and label.
    bars: Vec<(RGBColor, f64, BarLabel)>,
}

fn draw_bar_panel(root: &style::Area, panel: &style::Area, p: &BarPanel) -> anyhow::Result<()> {
    let n = p.bars.len();
    let mut label_w = 0;
    for (_, _, l) in &p.bars {
        label_w = label_w.max(label_width(root, l)?);
    }
    let (panel_w, _) = panel.dim_in_pixel();
    let (margin_left, margin_right) = (16, 24);
    let plot_w = panel_w.saturating_sub(p.y_label_w + margin_left + margin_right);
    let most = p.bars.iter().map(|b| b.1).fold(0.0f64, f64::max);
    let top = style::room_for_labels(most, label_w, plot_w);
    let mut chart = ChartBuilder::on(panel)
        .caption(p.caption, style::bold(16, style::INK))
        .margin_left(margin_left)
        .margin_right(margin_right)
        .margin_top(4)
        .margin_bottom(8)
        .x_label_area_size(56)
        .y_label_area_size(p.y_label_w)
        .build_cartesian_2d(0f64..top, 0f64..n as f64)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_labels(6)
        .x_label_formatter(&p.x_fmt)
        .x_desc(p.x_desc)
        .axis_desc_style(style::text(15, style::INK))
        .label_style(style::text(13, style::INK))
        .bold_line_style(style::GRID)
        .light_line_style(WHITE)
        .draw()?;
    let value_style = style::anchored(
        style::bold(VALUE_SIZE, style::INK),
        HPos::Left,
        VPos::Center,
    );
    let remark_style = style::anchored(
        style::text(REMARK_SIZE, style::MUTED),
        HPos::Left,
        VPos::Center,
    );
    let below_style = style::anchored(
        style::text(REMARK_SIZE, style::darken(FAULT, 0.2)),
        HPos::Left,
        VPos::Center,
    );
    for (i, (color, v, l)) in p.bars.iter().enumerate() {
        let y = style::row(n, i);
        if *v > 0.0 {
            chart.draw_series([Rectangle::new(
                [(0.0, y + 0.3), (*v, y + 0.7)],
                color.filled(),
            )])?;
        }
        let (px, py) = chart.backend_coord(&(*v, y + 0.5));
        let (px, py) = (px + 8, if l.below.is_some() { py - 9 } else { py });
        root.draw(&Text::new(l.value.clone(), (px, py), value_style.clone()))?;
        let w = root.estimate_text_size(&l.value, &value_style)?.0 as i32;
        root.draw(&Text::new(
            l.remark.clone(),
            (px + w, py),
            remark_style.clone(),
        ))?;
        if let Some(b) = &l.below {
            root.draw(&Text::new(b.clone(), (px, py + 19), below_style.clone()))?;
        }
    }
    if let Some(names) = p.names {
        style::row_names(root, &chart, names)?;
    }
    Ok(())
}

/// The colour of a note on decisions taken while the store failed.
const FAULT: RGBColor = RGBColor(0xB0, 0x3A, 0x2E);

pub(crate) fn draw_deployment(
    data: &RunData,
    s: &DeploymentSeries,
    path: &Path,
) -> anyhow::Result<()> {
    let window = style::duration(data.window_ns);
    let root = BitMapBackend::new(path, CHART.size).into_drawing_area();
    root.fill(&WHITE)?;
    let legend = style::limiter_entries(data, s.rows.iter().map(|r| (r.index, r.name.as_str())));
    let body = style::header(
        &root,
        &format!("{} — what the deployment costs", data.name),
        &[
            format!(
                "Left: overshoot, the cost that passed beyond {} per {window} for one key, in aligned windows, \
                 summed over keys and windows — what local state, read-then-write races and failing open let through. \
                 Right: what each decision waited on the shared store before the client heard it (0 for local state).",
                match data.shared_limit() {
                    Some(limit) => limit.to_string(),
                    None => "its limiter's own limit".to_string(),
                }
            ),
            verdict(s),
        ],
        &legend,
    )?;

    let names: Vec<RowName> = s
        .rows
        .iter()
        .map(|r| RowName {
            name: r.name.clone(),
            color: style::limiter_color(data, r.index),
            note: Some(r.shape()),
        })
        .collect();
    let names_w = style::row_names_width(&root, &names)?;
    let (width, _) = body.dim_in_pixel();
    let (left, right) = body.split_horizontally(names_w + (width - names_w) / 2);

    let color = |r: &DeploymentRow| style::limiter_color(data, r.index);
    let overshoot = BarPanel {
        caption: "overshoot",
        x_desc: "passed beyond the limit, all keys and windows (cost)",
        x_fmt: |v| style::count(*v),
        names: Some(&names),
        y_label_w: names_w,
        bars: s
            .rows
            .iter()
            .map(|r| {
                let notes = r.fault_notes();
                let label = BarLabel {
                    value: style::count(r.overshoot as f64),
                    remark: if r.overshoot > 0 {
                        format!(
                            "  worst key-window +{}",
                            style::count(r.overshoot_max as f64)
                        )
                    } else {
                        "  never over the limit".to_string()
                    },
                    below: (!notes.is_empty())
                        .then(|| format!("store failed: {}", notes.join(", "))),
                };
                (color(r), r.overshoot as f64, label)
            })
            .collect(),
    };
    draw_bar_panel(&root, &left, &overshoot)?;

    let latency = BarPanel {
        caption: "added latency, p99",
        x_desc: "waited on the store per decision, 99th percentile (ms)",
        x_fmt: |v| style::millis(*v),
        names: None,
        y_label_w: 8,
        bars: s
            .rows
            .iter()
            .map(|r| {
                let label = if r.latency_p99_ms == 0.0 && r.store_ops_per_s == 0.0 {
                    BarLabel {
                        value: "0 ms".into(),
                        remark: "  no store".into(),
                        below: None,
                    }
                } else {
                    let mut remark = format!("  p50 {} ms", style::millis(r.latency_p50_ms));
                    if r.store_ops_per_s > 0.0 {
                        remark.push_str(&format!(", {} store ops/s", ops_per_s(r.store_ops_per_s)));
                    }
                    BarLabel {
                        value: format!("{} ms", style::millis(r.latency_p99_ms)),
                        remark,
                        below: None,
                    }
                };
                (color(r), r.latency_p99_ms, label)
            })
            .collect(),
    };
    draw_bar_panel(&root, &right, &latency)?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::charts::data::tests_support::{self, run_data};

    #[test]
    fn drawn_only_when_some_limiter_is_deployed() {
        let mut d = run_data(&[("a", 10), ("b", 10)], 10);
        assert!(!deployment_series(&d).shown(), "one process, its own state");
        d.limiters[1].deployment.instances = 4;
        d.limiters[1].deployment.scope = "local".into();
        assert!(deployment_series(&d).shown(), "four instances");
        d.limiters[1].deployment.instances = 1;
        d.limiters[1].deployment.scope = "global".into();
        let s = deployment_series(&d);
        assert!(s.shown(), "one instance behind a shared store");
        assert!(!s.rows[0].deployed && s.rows[1].deployed);
        assert!(!tests_support::boundary()
            .limiters
            .iter()
            .any(|l| l.deployment.is_deployed()));
    }

    #[test]
    fn a_row_carries_the_costs_and_names_only_the_faults_that_happened() {
        let mut d = run_data(&[("fail_open", 10)], 10);
        let dep = &mut d.limiters[0].deployment;
        (dep.instances, dep.scope) = (4, "global".into());
        (dep.overshoot, dep.overshoot_max) = (Some(398), Some(190));
        (dep.added_latency_p50_ms, dep.added_latency_p99_ms) = (Some(1.0), Some(4.992));
        dep.store_ops_per_s = Some(600.0);
        dep.unprotected_passes = 1200;
        let s = deployment_series(&d);
        let r = &s.rows[0];
        assert_eq!((r.overshoot, r.overshoot_max), (398, 190));
        assert_eq!(r.latency_p99_ms, 4.992);
        assert_eq!(r.fault_notes(), ["1200 passed unchecked"]);
        assert_eq!(r.shape(), "4 instances, shared store");
        let v = verdict(&s);
        assert!(v.contains("Most overshoot: fail_open, 398"), "{v}");
        assert!(
            v.contains("Every decision through a store waited 4.99 ms"),
            "{v}"
        );
        d.limiters.push(tests_support::limiter("slow", 10));
        d.limiters[1].deployment.added_latency_p99_ms = Some(40.0);
        d.limiters[1].deployment.added_latency_p50_ms = Some(10.0);
        let v = verdict(&deployment_series(&d));
        assert!(
            v.contains("Slowest store: slow, 40 ms at the 99th percentile (median 10 ms)"),
            "{v}"
        );
        assert_eq!(ops_per_s(806.55), "807");
    }

    #[test]
    fn a_summary_without_deployment_metrics_has_zero_costs() {
        let d = run_data(&[("a", 10)], 10);
        let r = &deployment_series(&d).rows[0];
        assert_eq!((r.overshoot, r.latency_p99_ms, r.instances), (0, 0.0, 1));
        assert!(r.fault_notes().is_empty());
        assert_eq!(r.shape(), "1 instance, local state");
    }
}
