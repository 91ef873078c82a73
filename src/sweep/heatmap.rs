//! `sweep-heatmap-I.png` — one limiter's metric over two varied paths.
//!
//! Rows are the first varied path's values, columns the second's; each
//! cell is coloured by the metric (one colour scale for every limiter of
//! the sweep, so their heatmaps compare) and carries its value. Paths
//! after the second stay at their first value. When the sweep has
//! requirements, the cells that meet every one are framed in green and
//! the recommended point is outlined in black. Read it for the region that
//! meets the policy: the framed cells, and where they end.

use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::grid::Grid;
use super::line::limiter_colors;
use super::table::{Metric, SweepTable};
use crate::report::charts::style;

pub const SIZE: (u32, u32) = (1200, 800);

/// The colour scale, light (low) to dark (high): ColorBrewer OrRd.
const RAMP: [RGBColor; 5] = [
    RGBColor(0xFF, 0xF7, 0xEC),
    RGBColor(0xFD, 0xD4, 0x9E),
    RGBColor(0xFC, 0x8D, 0x59),
    RGBColor(0xD7, 0x30, 0x1F),
    RGBColor(0x7F, 0x00, 0x00),
];

#[derive(Debug, Clone, PartialEq)]
pub struct Heat {
    pub limiter: String,
    pub color: RGBColor,
    pub metric: String,
    /// The first path (rows, top to bottom) and the second (columns).
    pub rows_path: String,
    pub cols_path: String,
    pub row_values: Vec<String>,
    pub col_values: Vec<String>,
    /// `cells[row][col]`: the value and its text.
    pub cells: Vec<Vec<Option<(f64, String)>>>,
    /// The colour scale's ends, shared by every limiter.
    pub scale: (f64, f64),
    /// The recommended cell, if it is on this slice.
    pub chosen: Option<(usize, usize)>,
    /// `feasible[row][col]`: the cell meets every requirement; empty when
    /// the sweep has none.
    pub feasible: Vec<Vec<bool>>,
    /// Paths after the second, with the value they are fixed at.
    pub fixed: Vec<(String, String)>,
    /// Whether the rows' path, the columns' path, is another limiter's
    /// field, drawn as one row or column (`any`).
    pub not_own: [bool; 2],
}

/// The frame of a cell that meets every requirement.
pub(crate) const FEASIBLE: RGBColor = RGBColor(0x1B, 0x7F, 0x3B);

/// One heatmap per limiter; `chosen[l]` is limiter `l`'s recommended
/// point; `meets(row)` whether a row meets every requirement (`None`
/// without requirements).
pub(crate) fn heat_series(
    t: &SweepTable,
    grid: &Grid,
    metric: &Metric,
    chosen: &[Option<usize>],
    meets: Option<&dyn Fn(usize) -> bool>,
) -> Vec<Heat> {
    let (ra, ca) = (&grid.axes[0], &grid.axes[1]);
    let fixed: Vec<(String, String)> = grid.axes[2..]
        .iter()
        .map(|a| (a.path.clone(), a.values[0].clone()))
        .collect();
    let mut maps: Vec<Heat> = limiter_colors(t)
        .into_iter()
        .enumerate()
        .map(|(l, (name, color))| {
            // An axis that cannot change this limiter (another limiter's
            // field) is drawn as one row or column standing for every value.
            let own = super::recommend::axes_of(t, grid, &name);
            let (one_row, one_col) = (!own[0], !own[1]);
            let values = |a: &super::grid::Axis, one: bool| {
                if one {
                    vec!["any".to_string()]
                } else {
                    a.values.clone()
                }
            };
            let (row_values, col_values) = (values(ra, one_row), values(ca, one_col));
            let at = |c: &[usize]| {
                (
                    if one_row { 0 } else { c[0] },
                    if one_col { 0 } else { c[1] },
                )
            };
            let mut cells = vec![vec![None; col_values.len()]; row_values.len()];
            // A chain's member is not recommended apart from its chain.
            let meets = meets.filter(|_| t.chain_of(&name).is_none());
            let mut feasible = match meets {
                Some(_) => vec![vec![false; col_values.len()]; row_values.len()],
                None => Vec::new(),
            };
            let mut pick = None;
            for (p, r) in t.rows_of(&name) {
                let c = grid.coords(p);
                if c[2..].iter().any(|&v| v != 0) {
                    continue;
                }
                if chosen.get(l).copied().flatten() == Some(p) {
                    pick = Some(at(&c));
                }
                if (one_row && c[0] != 0) || (one_col && c[1] != 0) {
                    continue;
                }
                let (i, j) = at(&c);
                cells[i][j] = metric.value(t, r).map(|v| (v, metric.text(t, r)));
                if let Some(meets) = meets {
                    feasible[i][j] = meets(r);
                }
            }
            Heat {
                limiter: name,
                color,
                metric: metric.name().to_string(),
                rows_path: ra.path.clone(),
                cols_path: ca.path.clone(),
                row_values,
                col_values,
                cells,
                scale: (0.0, 0.0),
                chosen: pick,
                feasible,
                fixed: fixed.clone(),
                not_own: [one_row, one_col],
            }
        })
        .collect();
    let all = maps
        .iter()
        .flat_map(|m| m.cells.iter().flatten().flatten().map(|(v, _)| *v));
    let (lo, hi) = all.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
        (a.min(v), b.max(v))
    });
    let scale = if lo.is_finite() { (lo, hi) } else { (0.0, 0.0) };
    for m in &mut maps {
        m.scale = scale;
    }
    maps
}

/// The colour of `v` on the scale `(lo, hi)`.
pub(crate) fn color_of(v: f64, (lo, hi): (f64, f64)) -> RGBColor {
    let f = if hi > lo {
        ((v - lo) / (hi - lo)).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let x = f * (RAMP.len() - 1) as f64;
    let i = (x.floor() as usize).min(RAMP.len() - 2);
    let t = x - i as f64;
    let (a, b) = (RAMP[i], RAMP[i + 1]);
    let mix = |p: u8, q: u8| (p as f64 + (q as f64 - p as f64) * t).round() as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

fn text_on(c: RGBColor) -> RGBColor {
    let luma = 0.299 * c.0 as f64 + 0.587 * c.1 as f64 + 0.114 * c.2 as f64;
    if luma < 140.0 {
        WHITE
    } else {
        style::INK
    }
}

pub fn caption(h: &Heat, grid: &Grid) -> String {
    let fixed = if h.fixed.is_empty() {
        String::new()
    } else {
        format!(
            " ({} fixed at their first value: {})",
            if h.fixed.len() == 1 {
                "the later path is"
            } else {
                "later paths are"
            },
            h.fixed
                .iter()
                .map(|(p, v)| format!("`{p}={v}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let feasible = if h.feasible.is_empty() {
        String::new()
    } else {
        let n: usize = h.feasible.iter().flatten().filter(|&&f| f).count();
        let all: usize = h.feasible.iter().map(Vec::len).sum();
        format!(" {n} of its {all} cells meet every requirement (framed in green).")
    };
    let not_own: Vec<String> = [&h.rows_path, &h.cols_path]
        .iter()
        .zip(h.not_own)
        .filter(|(_, n)| *n)
        .map(|(p, _)| format!("`{p}`"))
        .collect();
    let not_own = if not_own.is_empty() {
        String::new()
    } else {
        format!(
            " {} is another limiter's and cannot change {}: one {} stands for every value (`any`).",
            not_own.join(" and "),
            h.limiter,
            match h.not_own {
                [true, true] => "cell",
                [true, false] => "row",
                _ => "column",
            }
        )
    };
    let shown = |values: &[String], i: usize, path: &str, not: bool| {
        if not {
            None
        } else {
            Some(format!("`{path}={}`", values[i]))
        }
    };
    let chosen = match h.chosen {
        Some((r, c)) => {
            let at: Vec<String> = [
                shown(&h.row_values, r, &h.rows_path, h.not_own[0]),
                shown(&h.col_values, c, &h.cols_path, h.not_own[1]),
            ]
            .into_iter()
            .flatten()
            .collect();
            format!(
                " The outlined cell is the recommendation: {}.",
                at.join(", ")
            )
        }
        None => String::new(),
    };
    let _ = grid;
    let colours = if h.scale.1 > h.scale.0 {
        format!(
            "colours from {} (lightest) to {} (darkest), the same scale for every limiter",
            super::table::trim(h.scale.0, 4),
            super::table::trim(h.scale.1, 4)
        )
    } else {
        format!(
            "every cell of every limiter is {}: one colour",
            super::table::trim(h.scale.0, 4)
        )
    };
    format!(
        "{}: `{}` over `{}` (rows) × `{}` (columns){fixed}; {colours}.{not_own}{feasible}{chosen}",
        h.limiter, h.metric, h.rows_path, h.cols_path,
    )
}

pub(crate) fn draw_heatmap(scenario: &str, h: &Heat, path: &Path) -> anyhow::Result<()> {
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let mut sub = vec![format!(
        "{} of limiter {} at each point: rows are {}, columns {}; darker is higher. Every limiter's heatmap shares this scale.",
        h.metric, h.limiter, h.rows_path, h.cols_path
    )];
    for (path, not) in [&h.rows_path, &h.cols_path].iter().zip(h.not_own) {
        if not {
            sub.push(format!(
                "{path} is another limiter's and cannot change {}: one line stands for every value (any).",
                h.limiter
            ));
        }
    }
    if !h.fixed.is_empty() {
        sub.push(format!(
            "Fixed at their first value: {}.",
            h.fixed
                .iter()
                .map(|(p, v)| format!("{p} = {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let mut legend = vec![(style::Mark::Swatch(h.color), style::drawable(&h.limiter))];
    if !h.feasible.is_empty() {
        legend.push((
            style::Mark::Outlined {
                fill: WHITE,
                line: FEASIBLE,
            },
            "meets every requirement".to_string(),
        ));
    }
    if h.chosen.is_some() {
        legend.push((
            style::Mark::Outlined {
                fill: WHITE,
                line: style::INK,
            },
            "recommended point".to_string(),
        ));
    }
    let body = style::header(
        &root,
        &style::drawable(&format!("{scenario} — {}: {}", h.limiter, h.metric)),
        &sub.iter().map(|s| style::drawable(s)).collect::<Vec<_>>(),
        &legend,
    )?;
    let (w, hgt) = body.dim_in_pixel();
    let (w, hgt) = (w as i32, hgt as i32);
    // Room: row labels and title on the left, column labels and title
    // below, the colour bar on the right.
    let (left, right, top, bottom) = (150, 170, 30, 80);
    let nr = h.row_values.len().max(1) as i32;
    let nc = h.col_values.len().max(1) as i32;
    let cw = ((w - left - right) / nc).max(1);
    let ch = ((hgt - top - bottom) / nr).max(1);
    let x0 = left;
    let y0 = top;
    let cell_text = style::anchored(style::text(14, style::INK), HPos::Center, VPos::Center);
    for (r, row) in h.cells.iter().enumerate() {
        for (c, cell) in row.iter().enumerate() {
            let (ax, ay) = (x0 + c as i32 * cw, y0 + r as i32 * ch);
            let rect = [(ax, ay), (ax + cw - 1, ay + ch - 1)];
            match cell {
                Some((v, text)) => {
                    let fill = color_of(*v, h.scale);
                    body.draw(&Rectangle::new(rect, fill.filled()))?;
                    let label = style::drawable(text);
                    let (tw, th) = body.estimate_text_size(&label, &cell_text)?;
                    if (tw as i32) < cw - 4 && (th as i32) < ch - 2 {
                        body.draw(&Text::new(
                            label,
                            (ax + cw / 2, ay + ch / 2),
                            cell_text.clone().color(&text_on(fill)),
                        ))?;
                    }
                }
                None => {
                    body.draw(&Rectangle::new(rect, style::GRID.filled()))?;
                }
            }
        }
    }
    for (r, row) in h.feasible.iter().enumerate() {
        for (c, _) in row.iter().enumerate().filter(|(_, &f)| f) {
            let (ax, ay) = (x0 + c as i32 * cw, y0 + r as i32 * ch);
            body.draw(&Rectangle::new(
                [(ax + 6, ay + 6), (ax + cw - 7, ay + ch - 7)],
                FEASIBLE.stroke_width(3),
            ))?;
        }
    }
    if let Some((r, c)) = h.chosen {
        let (ax, ay) = (x0 + c as i32 * cw, y0 + r as i32 * ch);
        body.draw(&Rectangle::new(
            [(ax + 1, ay + 1), (ax + cw - 2, ay + ch - 2)],
            style::INK.stroke_width(4),
        ))?;
    }
    // Axis labels.
    let label = style::text(14, style::INK);
    let left_label = style::anchored(label.clone(), HPos::Right, VPos::Center);
    for (r, v) in h.row_values.iter().enumerate() {
        body.draw(&Text::new(
            style::drawable(v),
            (x0 - 8, y0 + r as i32 * ch + ch / 2),
            left_label.clone(),
        ))?;
    }
    let below = style::anchored(label.clone(), HPos::Center, VPos::Top);
    let step = label_step(&body, &h.col_values, cw, &below)?;
    for (c, v) in h.col_values.iter().enumerate() {
        if c % step != 0 {
            continue;
        }
        body.draw(&Text::new(
            style::drawable(v),
            (x0 + c as i32 * cw + cw / 2, y0 + nr * ch + 6),
            below.clone(),
        ))?;
    }
    let title = style::anchored(style::text(16, style::INK), HPos::Center, VPos::Top);
    body.draw(&Text::new(
        style::drawable(&h.cols_path),
        (x0 + nc * cw / 2, y0 + nr * ch + 34),
        title.clone(),
    ))?;
    let vertical = style::anchored(style::text(16, style::INK), HPos::Center, VPos::Top)
        .transform(FontTransform::Rotate270);
    body.draw(&Text::new(
        style::drawable(&h.rows_path),
        (12, y0 + nr * ch / 2),
        vertical,
    ))?;
    // The colour bar.
    let bx = x0 + nc * cw + 40;
    let (by0, by1) = (y0, y0 + nr * ch);
    let steps = (by1 - by0).max(1);
    for k in 0..steps {
        let v = h.scale.1 - (h.scale.1 - h.scale.0) * k as f64 / steps as f64;
        body.draw(&Rectangle::new(
            [(bx, by0 + k), (bx + 24, by0 + k + 1)],
            color_of(v, h.scale).filled(),
        ))?;
    }
    body.draw(&Rectangle::new(
        [(bx, by0), (bx + 24, by1)],
        style::MUTED.stroke_width(1),
    ))?;
    let tick = style::anchored(label, HPos::Left, VPos::Center);
    for k in 0..=4 {
        let f = k as f64 / 4.0;
        let v = h.scale.0 + (h.scale.1 - h.scale.0) * f;
        let y = by1 - ((by1 - by0) as f64 * f).round() as i32;
        body.draw(&PathElement::new(
            vec![(bx + 24, y), (bx + 30, y)],
            style::MUTED,
        ))?;
        body.draw(&Text::new(
            super::table::trim(v, 4),
            (bx + 34, y),
            tick.clone(),
        ))?;
        if h.scale.1 <= h.scale.0 {
            break;
        }
    }
    body.draw(&Text::new(
        style::drawable(&h.metric),
        (w - 6, by0 - 12),
        style::anchored(style::text(13, style::MUTED), HPos::Right, VPos::Bottom),
    ))?;
    root.present()?;
    Ok(())
}

/// Every how many columns a label fits.
fn label_step(
    area: &style::Area,
    values: &[String],
    cw: i32,
    s: &TextStyle,
) -> anyhow::Result<usize> {
    let mut widest = 0;
    for v in values {
        widest = widest.max(area.estimate_text_size(v, s)?.0 as i32);
    }
    Ok(((widest + 10) / cw.max(1) + 1).max(1) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::grid::Axis;
    use crate::sweep::line::line_series;

    /// Two limiters over limit × capacity (capacity the token bucket's):
    /// `rejected` falls with the limit for both, and with the capacity for
    /// the bucket.
    fn sweep() -> (SweepTable, Grid) {
        let axis = |path: &str, values: &[&str]| Axis {
            path: path.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
            arg: String::new(),
        };
        let grid = Grid {
            axes: vec![
                axis("defaults.limit", &["1", "2", "4"]),
                axis("limiter[0].capacity", &["1", "8"]),
            ],
        };
        let columns = [
            "defaults.limit",
            "limiter[0].capacity",
            "limiter",
            "algorithm",
            "attempts",
            "rejected",
        ];
        let mut rows = Vec::new();
        let mut point_of = Vec::new();
        for p in 0..6 {
            let c = grid.coords(p);
            let (limit, cap) = (
                grid.axes[0].values[c[0]].clone(),
                grid.axes[1].values[c[1]].clone(),
            );
            let tb = 60 - 15 * c[0] - 10 * c[1];
            let sl = 60 - 15 * c[0];
            for (name, algo, rejected) in [("tb", "token_bucket", tb), ("sl", "sliding_log", sl)] {
                rows.push(
                    [
                        limit.clone(),
                        cap.clone(),
                        name.into(),
                        algo.into(),
                        "100".into(),
                        rejected.to_string(),
                    ]
                    .to_vec(),
                );
                point_of.push(p);
            }
        }
        let t = SweepTable {
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows,
            point_of,
        };
        (t, grid)
    }

    #[test]
    fn heatmaps_frame_what_meets_and_draw_anothers_axis_once() {
        let (t, grid) = sweep();
        let metric = Metric::Derived("rejected_share");
        let meets = |r: usize| metric.value(&t, r).is_some_and(|v| v <= 0.4);
        let maps = heat_series(&t, &grid, &metric, &[Some(3), Some(4)], Some(&meets));
        let (tb, sl) = (&maps[0], &maps[1]);
        // The bucket: 0.6 0.5 / 0.45 0.35 / 0.3 0.2 → the last three meet.
        assert_eq!(
            tb.feasible,
            vec![vec![false, false], vec![false, true], vec![true, true]]
        );
        assert_eq!(tb.chosen, Some((1, 1)));
        assert_eq!(tb.not_own, [false, false]);
        // The window: one column, `any`; point 4 is (limit 4, capacity 1).
        assert_eq!(sl.col_values, vec!["any"]);
        assert_eq!(sl.not_own, [false, true]);
        assert_eq!(sl.feasible, vec![vec![false], vec![false], vec![true]]);
        assert_eq!(sl.chosen, Some((2, 0)));
        let caption = caption(sl, &grid);
        assert!(
            caption.contains("1 of its 3 cells meet every requirement"),
            "{caption}"
        );
        assert!(
            caption.contains("The outlined cell is the recommendation: `defaults.limit=4`."),
            "{caption}"
        );
    }

    #[test]
    fn lines_carry_each_requirement_and_the_recommended_points() {
        let (t, mut grid) = sweep();
        // One path: the limit, at capacity 1 (points 0, 2, 4 of the table
        // become 0, 1, 2 of a one-path grid).
        grid.axes.truncate(1);
        let rows: Vec<usize> = (0..t.rows.len()).filter(|&r| t.rows[r][1] == "1").collect();
        let t = SweepTable {
            columns: t.columns.clone(),
            rows: rows.iter().map(|&r| t.rows[r].clone()).collect(),
            point_of: rows.iter().map(|&r| t.point_of[r] / 2).collect(),
        };
        let metric = Metric::Derived("rejected_share");
        let s = line_series(
            &t,
            &grid,
            &metric,
            "",
            vec![(0.4, "rejected_share<=0.4".into())],
            &[Some(2), None],
        )
        .expect("something to draw");
        assert_eq!(s.thresholds, vec![(0.4, "rejected_share<=0.4".to_string())]);
        assert_eq!(s.lines[0].chosen, Some(2));
        assert_eq!(s.lines[1].chosen, None);
        assert_eq!(s.lines[0].ys, vec![Some(0.6), Some(0.45), Some(0.3)]);
        let caption = crate::sweep::line::caption(&s);
        assert!(
            caption.contains("The dashed line is the requirement `rejected_share<=0.4`."),
            "{caption}"
        );
        assert!(
            caption.contains("Ringed: the recommended point, tb at 4."),
            "{caption}"
        );
        // A metric 0 everywhere is drawn only when something requires it.
        let zero = Metric::Column("attempts".into());
        let t0 = SweepTable {
            rows: t
                .rows
                .iter()
                .map(|r| {
                    let mut r = r.clone();
                    r[4] = "0".into();
                    r
                })
                .collect(),
            ..t.clone()
        };
        assert!(line_series(&t0, &grid, &zero, "", Vec::new(), &[]).is_none());
        assert!(line_series(
            &t0,
            &grid,
            &zero,
            "",
            vec![(1.0, "attempts<=1".into())],
            &[]
        )
        .is_some());
    }
}
