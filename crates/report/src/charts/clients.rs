//! `clients.png` — what the clients experienced, per limiter.
//!
//! A limiter's own counts hide two things a client feels. **Retry
//! amplification** is attempts per logical request (`attempts /
//! logical_requests`): every retry of a rejected request is another attempt,
//! so retries multiply the load a limiter sees — 3× means the clients sent
//! three attempts for every request they meant to send, and `gave_up` counts
//! the requests that still never got through. **Fairness** is the spread over
//! clients of the share of their own requests that passed: keyed by IP
//! address (or globally), clients behind one address share one limit, so a
//! quiet client can be turned away for a noisy neighbour. The box spans the
//! 10th to the 90th percentile client, the whiskers the least and best served
//! client, the tick the median; Jain's index `(Σx)² / (n·Σx²)` is 1 when
//! every client got the same share and 1/n when one got everything.
//!
//! Drawn only when some limiter saw retries or keys by `ip` or `global`:
//! otherwise every bar would sit at 1× and every client at its own limit.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::data::{RunData, Spread};
use super::style::{self, Mark, RowName};
use super::Chart;

pub(crate) const CHART: Chart = Chart {
    file: crate::rundir::CLIENTS_PNG,
    size: (1400, 760),
    about: "only when clients retry or share a key (by ip, global): attempts per request per limiter against 1× (no retries), with the requests that gave up; and the spread of the share of its requests each client got through (box p10–p90, whiskers min–max, tick median), with Jain's fairness index",
    caption,
    render,
};

/// One limiter's row.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientsRow {
    /// The limiter's index (its colour).
    pub index: usize,
    pub name: String,
    pub key_by: String,
    pub attempts: u64,
    pub logical: Option<u64>,
    /// Attempts per logical request; `None` when the summary has neither
    /// the counts nor the metric.
    pub amplification: Option<f64>,
    /// Some client retried: more attempts than logical requests.
    pub retried: bool,
    pub gave_up: Option<u64>,
    /// Clients' pass ratios, each in `[0, 1]`.
    pub spread: Option<Spread>,
    pub fairness: Option<f64>,
}

impl ClientsRow {
    /// Clients behind one address (or all clients) share this limiter's key.
    pub fn shares_keys(&self) -> bool {
        matches!(self.key_by.as_str(), "ip" | "global")
    }

    /// `gave_up` as a share of the logical requests.
    pub fn gave_up_share(&self) -> Option<f64> {
        match (self.gave_up, self.logical) {
            (Some(g), Some(n)) if n > 0 => Some(g as f64 / n as f64),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ClientsSeries {
    /// Some limiter saw retries.
    pub retries: bool,
    /// Some limiter keys by `ip` or `global`.
    pub shared_keys: bool,
    /// The scenario has a single client.
    pub one_client: bool,
    pub rows: Vec<ClientsRow>,
}

impl ClientsSeries {
    /// Whether the chart says anything: retries or shared keys.
    pub fn shown(&self) -> bool {
        !self.rows.is_empty() && (self.retries || self.shared_keys)
    }
}

pub fn clients_series(data: &RunData) -> ClientsSeries {
    // A chain's members answer no client (docs/semantics.md §13): the
    // chain's row is what its clients met.
    let rows: Vec<ClientsRow> = data
        .limiters
        .iter()
        .enumerate()
        .filter(|(_, l)| l.chain.is_empty())
        .map(|(index, l)| {
            let logical = l.clients.logical_requests;
            let amplification = match logical {
                Some(n) if n > 0 => Some(l.attempts as f64 / n as f64),
                _ => l.clients.retry_amplification,
            };
            let retried = match logical {
                Some(n) => l.attempts > n,
                None => amplification.is_some_and(|a| a > 1.0),
            };
            ClientsRow {
                index,
                name: l.name.clone(),
                key_by: l.key_by.clone(),
                attempts: l.attempts,
                logical,
                amplification,
                retried,
                gave_up: l.gave_up,
                spread: l.clients.pass_ratio_spread,
                fairness: l.clients.fairness_jain,
            }
        })
        .collect();
    ClientsSeries {
        retries: rows.iter().any(|r| r.retried),
        shared_keys: rows.iter().any(ClientsRow::shares_keys),
        one_client: data.clients == 1,
        rows,
    }
}

/// What `summary.md` says under the chart.
fn caption(data: &RunData) -> String {
    let s = clients_series(data);
    let mut what = Vec::new();
    if s.retries {
        what.push("attempts per logical request (retries)");
    }
    if s.shared_keys {
        what.push("how evenly clients sharing a key were served");
    }
    what.push("the spread of the share of its requests each client got through");
    format!("Per limiter: {}. {}", what.join("; "), verdict(&s))
}

fn render(data: &RunData, path: &Path) -> anyhow::Result<bool> {
    let series = clients_series(data);
    if !series.shown() {
        return Ok(false);
    }
    draw_clients(data, &series, path)?;
    Ok(true)
}

/// A share in `[0, 1]` as a percentage for a label: `35%`, `4%`, `0.3%`.
fn percent(v: f64) -> String {
    let p = 100.0 * v;
    if p > 0.0 && p < 1.0 {
        format!("{}%", style::trim(p, 1))
    } else {
        format!("{}%", style::trim(p, 0))
    }
}

/// One sentence on the worst amplification and one on the least even
/// limiter, for the subtitle.
fn verdict(s: &ClientsSeries) -> String {
    let mut out = Vec::new();
    let worst = s
        .rows
        .iter()
        .filter(|r| r.retried)
        .filter_map(|r| r.amplification.map(|a| (r, a)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((r, a)) = worst {
        let mut text = format!(
            "Most retried: {}, {} attempts per request",
            r.name,
            style::trim(a, 2)
        );
        if let (Some(g), Some(n)) = (r.gave_up, r.logical) {
            text.push_str(&format!(
                ", and still {} of {} requests ({}) gave up",
                style::count(g as f64),
                style::count(n as f64),
                percent(g as f64 / n.max(1) as f64)
            ));
        }
        out.push(text + ".");
    } else {
        out.push("No client retried: every bar is at 1×.".to_string());
    }
    let least = s
        .rows
        .iter()
        .filter_map(|r| r.fairness.map(|f| (r, f)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    match least {
        Some((r, f)) if f < 0.95 => {
            let mut text = format!("Least even: {} (Jain {f:.3})", r.name);
            if let Some(q) = r.spread {
                text.push_str(&format!(
                    " — a tenth of its clients got at most {} of their requests through; the median client got {}",
                    percent(q.p10),
                    percent(q.p50)
                ));
            }
            out.push(text + ".");
        }
        // With one client there is no one to be fair to.
        Some(_) if s.one_client => {
            out.push("One client: no fairness between clients to measure.".to_string())
        }
        Some(_) => out.push(
            "Every limiter served its clients about evenly (Jain's index ≥ 0.95).".to_string(),
        ),
        None => {}
    }
    out.join(" ")
}

pub(crate) fn draw_clients(data: &RunData, s: &ClientsSeries, path: &Path) -> anyhow::Result<()> {
    let root = BitMapBackend::new(path, CHART.size).into_drawing_area();
    root.fill(&WHITE)?;

    let mut legend =
        style::limiter_entries(data, s.rows.iter().map(|r| (r.index, r.name.as_str())));
    legend.push((Mark::Dashed(style::LIMIT), "1× = no retries".into()));
    legend.push((
        Mark::Outlined {
            fill: style::lighten(style::MUTED, 0.7),
            line: style::MUTED,
        },
        "middle 80% of clients (p10–p90)".into(),
    ));
    legend.push((
        Mark::Line(style::darken(style::MUTED, 0.45)),
        "median client".into(),
    ));
    let body = style::header(
        &root,
        &format!("{} — what clients experienced", data.name),
        &[
            "Left: attempts per logical request — a retry is one more attempt of the same request. \
             Right: the share of its own requests each client got through; whiskers reach the least \
             and the best served client, and Jain's index is 1 when every client got the same share."
                .to_string(),
            verdict(s),
        ],
        &legend,
    )?;

    let n = s.rows.len();
    let notes = s.shared_keys;
    let names: Vec<RowName> = s
        .rows
        .iter()
        .map(|r| RowName {
            name: r.name.clone(),
            color: style::limiter_color(data, r.index),
            note: notes.then(|| format!("keyed by {}", r.key_by)),
        })
        .collect();
    let names_w = style::row_names_width(&root, &names)?;
    let (width, _) = body.dim_in_pixel();
    let split = names_w + (width - names_w) / 2;
    let (left, right) = body.split_horizontally(split);

    // Left: amplification bars, with room right of the longest for its label.
    let labels: Vec<(String, String)> = s
        .rows
        .iter()
        .map(|r| {
            let value = r
                .amplification
                .map(|a| format!("{}×", style::trim(a, 2)))
                .unwrap_or_else(|| "no data".into());
            // Without retries a request gives up at its first rejection.
            let when = if r.retried { "" } else { " at once" };
            let gave = match (r.gave_up, r.gave_up_share()) {
                (Some(g), Some(share)) => format!(
                    "  {} gave up{when} ({})",
                    style::count(g as f64),
                    percent(share)
                ),
                (Some(g), None) => format!("  {} gave up{when}", style::count(g as f64)),
                _ => String::new(),
            };
            (value, gave)
        })
        .collect();
    let value_style = style::anchored(style::bold(15, style::INK), HPos::Left, VPos::Center);
    let note_style = style::anchored(style::text(14, style::MUTED), HPos::Left, VPos::Center);
    let mut label_w = 0u32;
    for (value, gave) in &labels {
        let w = root.estimate_text_size(value, &value_style)?.0
            + if gave.is_empty() {
                0
            } else {
                root.estimate_text_size(gave, &note_style)?.0
            };
        label_w = label_w.max(w);
    }
    let most = s
        .rows
        .iter()
        .filter_map(|r| r.amplification)
        .fold(1.0f64, f64::max);
    let plot_w = (split - names_w).saturating_sub(16 + 24);
    let top = style::room_for_labels(most, label_w, plot_w);
    let caption = style::bold(16, style::INK);
    let mut chart = ChartBuilder::on(&left)
        .caption("retry amplification", caption.clone())
        .margin_left(16)
        .margin_right(24)
        .margin_top(4)
        .margin_bottom(8)
        .x_label_area_size(56)
        .y_label_area_size(names_w)
        .build_cartesian_2d(0f64..top, 0f64..n as f64)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_labels(6)
        .x_label_formatter(&|v| format!("{}×", style::trim(*v, 1)))
        .x_desc("attempts per logical request (×)")
        .axis_desc_style(style::text(15, style::INK))
        .label_style(style::text(13, style::INK))
        .bold_line_style(style::GRID)
        .light_line_style(WHITE)
        .draw()?;
    for (i, (r, (value, gave))) in s.rows.iter().zip(&labels).enumerate() {
        let y = style::row(n, i);
        let color = style::limiter_color(data, r.index);
        if let Some(a) = r.amplification {
            chart.draw_series([Rectangle::new(
                [(0.0, y + 0.28), (a, y + 0.72)],
                color.filled(),
            )])?;
        }
        let (px, py) = chart.backend_coord(&(r.amplification.unwrap_or(0.0), y + 0.5));
        root.draw(&Text::new(value.clone(), (px + 8, py), value_style.clone()))?;
        if !gave.is_empty() {
            let w = root.estimate_text_size(value, &value_style)?.0 as i32;
            root.draw(&Text::new(
                gave.clone(),
                (px + 8 + w, py),
                note_style.clone(),
            ))?;
        }
    }
    let (_, ys) = chart.plotting_area().get_pixel_range();
    let x1 = chart.backend_coord(&(1.0, 0.0)).0;
    style::dashed_vline(&root, x1, ys.start, ys.end, style::LIMIT)?;
    style::row_names(&root, &chart, &names)?;

    // Right: the spread of clients' pass ratios, 0–100%.
    let mut chart = ChartBuilder::on(&right)
        .caption("share of its requests each client got through", caption)
        .margin_left(24)
        .margin_right(112)
        .margin_top(4)
        .margin_bottom(8)
        .x_label_area_size(56)
        .y_label_area_size(0)
        .build_cartesian_2d(0f64..1.0, 0f64..n as f64)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_labels(6)
        .x_label_formatter(&|v| percent(*v))
        .x_desc("requests passed, per client (%)")
        .axis_desc_style(style::text(15, style::INK))
        .label_style(style::text(13, style::INK))
        .bold_line_style(style::GRID)
        .light_line_style(WHITE)
        .draw()?;
    let (xs, ys) = chart.plotting_area().get_pixel_range();
    root.draw(&Text::new(
        "Jain's index",
        (xs.end + 16, ys.start - 4),
        style::anchored(style::bold(14, style::INK), HPos::Left, VPos::Bottom),
    ))?;
    for (i, r) in s.rows.iter().enumerate() {
        let y = style::row(n, i);
        let color = style::limiter_color(data, r.index);
        let mid = y + 0.5;
        match r.spread {
            Some(q) => {
                let line = color.stroke_width(2);
                chart.draw_series([
                    PathElement::new(vec![(q.min, mid), (q.p10, mid)], line),
                    PathElement::new(vec![(q.p90, mid), (q.max, mid)], line),
                    PathElement::new(vec![(q.min, y + 0.38), (q.min, y + 0.62)], line),
                    PathElement::new(vec![(q.max, y + 0.38), (q.max, y + 0.62)], line),
                ])?;
                chart.draw_series([
                    Rectangle::new(
                        [(q.p10, y + 0.3), (q.p90, y + 0.7)],
                        style::lighten(color, 0.6).filled(),
                    ),
                    Rectangle::new([(q.p10, y + 0.3), (q.p90, y + 0.7)], line),
                ])?;
                chart.draw_series([PathElement::new(
                    vec![(q.p50, y + 0.22), (q.p50, y + 0.78)],
                    style::darken(color, 0.45).stroke_width(3),
                )])?;
                let (px, py) = chart.backend_coord(&(q.p50, y + 0.78));
                root.draw(&Text::new(
                    percent(q.p50),
                    (px, py - 2),
                    style::anchored(style::text(13, style::INK), HPos::Center, VPos::Bottom),
                ))?;
            }
            None => {
                let (px, py) = chart.backend_coord(&(0.0, mid));
                root.draw(&Text::new(
                    "no clients recorded",
                    (px + 8, py),
                    style::anchored(style::text(14, style::MUTED), HPos::Left, VPos::Center),
                ))?;
            }
        }
        let (_, py) = chart.backend_coord(&(1.0, mid));
        let jain = r
            .fairness
            .map(|f| format!("{f:.3}"))
            .unwrap_or_else(|| "—".into());
        let strong = r.fairness.is_some_and(|f| f < 0.95);
        let font = if strong {
            style::bold(15, style::INK)
        } else {
            style::text(15, style::INK)
        };
        root.draw(&Text::new(
            jain,
            (xs.end + 16, py),
            style::anchored(font, HPos::Left, VPos::Center),
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
    fn amplification_is_attempts_per_logical_request() {
        let mut d = run_data(&[("immediate", 10), ("none", 10)], 10);
        (
            d.limiters[0].attempts,
            d.limiters[0].clients.logical_requests,
        ) = (36_000, Some(12_000));
        (
            d.limiters[1].attempts,
            d.limiters[1].clients.logical_requests,
        ) = (500, Some(500));
        d.limiters[0].gave_up = Some(6_000);
        let s = clients_series(&d);
        assert_eq!(s.rows[0].amplification, Some(3.0));
        assert!(s.rows[0].retried);
        assert_eq!(s.rows[0].gave_up_share(), Some(0.5));
        assert_eq!(s.rows[1].amplification, Some(1.0));
        assert!(!s.rows[1].retried);
        assert!(s.retries && s.shown());
    }

    #[test]
    fn a_summary_without_logical_requests_falls_back_to_its_printed_amplification() {
        let mut d = run_data(&[("a", 10)], 10);
        d.limiters[0].attempts = 100;
        d.limiters[0].clients.retry_amplification = Some(2.5);
        let s = clients_series(&d);
        assert_eq!(s.rows[0].amplification, Some(2.5));
        assert!(s.rows[0].retried);
        assert_eq!(s.rows[0].gave_up_share(), None);
    }

    #[test]
    fn drawn_only_when_clients_retry_or_share_a_key() {
        let mut d = run_data(&[("a", 10), ("b", 10)], 10);
        for l in &mut d.limiters {
            (l.attempts, l.clients.logical_requests) = (100, Some(100));
        }
        assert!(!clients_series(&d).shown(), "no retries, keyed by client");
        d.limiters[1].key_by = "ip".into();
        let s = clients_series(&d);
        assert!(s.shared_keys && !s.retries && s.shown());
        d.limiters[1].key_by = "global".into();
        assert!(clients_series(&d).shown());
        d.limiters[1].key_by = "client".into();
        d.limiters[0].attempts = 101;
        assert!(clients_series(&d).shown(), "one retry is enough");
        assert!(!clients_series(&run_data(&[], 10)).shown());
    }

    #[test]
    fn the_spread_box_is_read_as_recorded() {
        let mut d = run_data(&[("by-ip", 10)], 10);
        d.limiters[0].key_by = "ip".into();
        d.limiters[0].clients.pass_ratio_spread = Some(Spread {
            min: 0.0,
            p10: 0.0385,
            p50: 0.3478,
            p90: 1.0,
            max: 1.0,
        });
        d.limiters[0].clients.fairness_jain = Some(0.6068);
        let s = clients_series(&d);
        let q = s.rows[0].spread.unwrap();
        assert!(q.min <= q.p10 && q.p10 <= q.p50 && q.p50 <= q.p90 && q.p90 <= q.max);
        assert_eq!((q.p10, q.p90), (0.0385, 1.0));
        let v = verdict(&s);
        assert!(v.contains("Least even: by-ip (Jain 0.607)"), "{v}");
        assert!(v.contains("at most 4% of their requests"), "{v}");
    }

    #[test]
    fn the_boundary_clients_retry_so_the_chart_is_drawn() {
        let d = tests_support::boundary();
        let s = clients_series(&d);
        assert!(s.retries && s.shown());
        for (r, l) in s.rows.iter().zip(&d.limiters) {
            let logical = l.clients.logical_requests.unwrap();
            let amp = r.amplification.unwrap();
            assert_eq!(amp, l.attempts as f64 / logical as f64, "{}", r.name);
            // summary.json prints it to 4 decimals.
            assert!((amp - l.clients.retry_amplification.unwrap()).abs() < 5e-5);
        }
    }

    // Issue 25: a one-client run was said to serve "its clients about
    // evenly".
    #[test]
    fn one_client_is_no_one_to_be_fair_to() {
        let mut d = tests_support::boundary();
        assert_eq!(d.clients, 1, "the boundary scenario has one client");
        let one = caption(&d);
        assert!(
            one.contains("One client: no fairness between clients to measure."),
            "{one}"
        );
        assert!(!one.contains("about evenly"), "{one}");
        d.clients = 2;
        assert!(caption(&d).contains("about evenly"));
    }

    #[test]
    fn percentages_keep_small_shares_visible() {
        assert_eq!(percent(0.3478), "35%");
        assert_eq!(percent(0.003), "0.3%");
        assert_eq!(percent(0.0), "0%");
        assert_eq!(percent(1.0), "100%");
    }
}
