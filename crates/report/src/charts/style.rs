//! The look shared by every chart: the embedded font, one colour per
//! limiter, the title block with its legend, category labels under bars,
//! and number formats.
//!
//! A limiter's colour is its algorithm's ([`ALGORITHM_COLORS`]), the same
//! in every chart of every run and never an outcome colour; limiters that
//! share an algorithm get shades of it. Text is drawn with DejaVu
//! Sans compiled into the binary (the `dejavu` crate) through plotters'
//! `ab_glyph` renderer: charts render identically on a machine with no
//! system fonts at all.

use std::sync::OnceLock;

use plotters::coord::ranged1d::{AsRangedCoord, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::FontStyle;

use super::data::RunData;
pub use crate::format::duration;

/// The family name every chart asks plotters for.
pub(crate) const FONT: &str = "sans-serif";

/// Registers the embedded font once per process.
pub fn ensure_fonts() -> anyhow::Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular()).is_ok()
            && plotters::style::register_font(FONT, FontStyle::Bold, dejavu::sans::bold()).is_ok()
    });
    anyhow::ensure!(ok, "the embedded DejaVu Sans font could not be loaded");
    Ok(())
}

/// Whether the embedded font (regular and bold) has a glyph for `c`.
pub(crate) fn has_glyph(c: char) -> bool {
    use ab_glyph::Font;
    static FONTS: OnceLock<Option<[ab_glyph::FontRef<'static>; 2]>> = OnceLock::new();
    let fonts = FONTS.get_or_init(|| {
        Some([
            ab_glyph::FontRef::try_from_slice(dejavu::sans::regular()).ok()?,
            ab_glyph::FontRef::try_from_slice(dejavu::sans::bold()).ok()?,
        ])
    });
    c.is_whitespace()
        || fonts
            .as_ref()
            .is_some_and(|f| f.iter().all(|f| f.glyph_id(c).0 != 0))
}

/// The characters of `text` the embedded font cannot draw, each once, in
/// order.
pub(crate) fn missing_glyphs(text: &str) -> Vec<char> {
    let mut out = Vec::new();
    for c in text.chars() {
        if !has_glyph(c) && !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// `text` with every character the embedded font cannot draw replaced by
/// `?`, so a chart shows that something is there instead of an empty box.
pub fn drawable(text: &str) -> String {
    text.chars()
        .map(|c| if has_glyph(c) { c } else { '?' })
        .collect()
}

/// What happened to an attempt: the outcome colours of every chart. No
/// algorithm's colour is near one of them.
pub const ADMITTED: RGBColor = RGBColor(0x59, 0xA1, 0x4F);
pub const DELAYED: RGBColor = RGBColor(0xED, 0xA2, 0x47);
pub const REJECTED: RGBColor = RGBColor(0xE1, 0x57, 0x59);
pub const GAVE_UP: RGBColor = RGBColor(0x8C, 0x2D, 0x2F);
/// A chain member's attempt that it would have passed and another member's
/// rejection overruled (docs/semantics.md §13).
pub const OVERRULED: RGBColor = RGBColor(0xBD, 0xBD, 0xBD);

/// One colour per algorithm, the same in every chart of every run, and
/// none of them green, orange or red (those mean admitted, delayed,
/// rejected).
pub(crate) const ALGORITHM_COLORS: [(&str, RGBColor); 15] = [
    ("fixed_window", RGBColor(0x2F, 0x5C, 0x9E)),
    ("sliding_log", RGBColor(0x8A, 0x5B, 0xC0)),
    ("sliding_counter", RGBColor(0xD0, 0x4F, 0xB0)),
    ("token_bucket", RGBColor(0x17, 0xA5, 0xB5)),
    ("gcra", RGBColor(0x1F, 0x2F, 0x4F)),
    ("interval_bucket", RGBColor(0xC9, 0xB3, 0xE6)),
    ("leaky_bucket", RGBColor(0x86, 0xC5, 0xF0)),
    ("smooth_bursty", RGBColor(0xA6, 0xA6, 0xA6)),
    ("quota", RGBColor(0x77, 0x11, 0xCC)),
    ("concurrency", RGBColor(0x66, 0x33, 0x88)),
    ("queue_length", RGBColor(0x55, 0xCC, 0xBB)),
    ("aimd", RGBColor(0x22, 0x22, 0xCC)),
    ("gradient2", RGBColor(0xAA, 0x11, 0x88)),
    ("vegas", RGBColor(0x99, 0x88, 0x11)),
    ("envoy_gradient", RGBColor(0x55, 0x88, 0xDD)),
];

/// The colour of an algorithm this table does not know.
pub(crate) const OTHER_ALGORITHM: RGBColor = RGBColor(0x55, 0x55, 0x55);

pub fn algorithm_color(algorithm: &str) -> RGBColor {
    ALGORITHM_COLORS
        .iter()
        .find(|(a, _)| *a == algorithm)
        .map_or(OTHER_ALGORITHM, |(_, c)| *c)
}

/// The colour of the `k`-th (from 0) of `n` limiters sharing a colour: the
/// colour itself for the first, then alternately darker and lighter
/// shades (only darker for a light colour), spread so all `n` differ.
pub fn shade(base: RGBColor, k: usize, n: usize) -> RGBColor {
    if k == 0 {
        return base;
    }
    let luma = 0.299 * base.0 as f64 + 0.587 * base.1 as f64 + 0.114 * base.2 as f64;
    if luma > 150.0 {
        // A light colour has no room to lighten: only darker shades.
        return darken(base, 0.55 * k as f64 / (n.max(2) - 1) as f64);
    }
    let steps = (n.saturating_sub(1)).div_ceil(2).max(1) as f64;
    let f = k.div_ceil(2) as f64 / steps;
    if k % 2 == 1 {
        darken(base, 0.45 * f)
    } else {
        lighten(base, 0.45 * f)
    }
}

/// The colour of limiter `index` of `data` in every chart: its algorithm's
/// colour, shaded when several limiters of the run share the algorithm.
pub(crate) fn limiter_color(data: &RunData, index: usize) -> RGBColor {
    let Some(l) = data.limiters.get(index) else {
        return OTHER_ALGORITHM;
    };
    let same = |m: &&super::data::LimiterData| m.algorithm == l.algorithm;
    let k = data.limiters[..index].iter().filter(same).count();
    let n = data.limiters.iter().filter(same).count();
    shade(algorithm_color(&l.algorithm), k, n)
}

/// `c` blended towards white by `f` (0 = unchanged, 1 = white), exactly,
/// so no alpha blending depends on what was drawn before.
pub(crate) fn lighten(c: RGBColor, f: f64) -> RGBColor {
    let mix = |v: u8| (v as f64 + (255.0 - v as f64) * f).round() as u8;
    RGBColor(mix(c.0), mix(c.1), mix(c.2))
}

/// `a` seen through `b` (multiply blend), exactly: a tinted band over a
/// fill, without alpha blending.
pub fn multiply(a: RGBColor, b: RGBColor) -> RGBColor {
    let mix = |x: u8, y: u8| ((x as u16 * y as u16 + 127) / 255) as u8;
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// `c` for text on white: darkened by a quarter, and further when it is a
/// light colour, so a label in a limiter's colour stays readable.
pub(crate) fn label_color(c: RGBColor) -> RGBColor {
    let luma = |c: RGBColor| 0.299 * c.0 as f64 + 0.587 * c.1 as f64 + 0.114 * c.2 as f64;
    let mut f = 0.25;
    while luma(darken(c, f)) > 115.0 && f < 0.8 {
        f += 0.05;
    }
    darken(c, f)
}

pub(crate) fn darken(c: RGBColor, f: f64) -> RGBColor {
    let mix = |v: u8| (v as f64 * (1.0 - f)).round() as u8;
    RGBColor(mix(c.0), mix(c.1), mix(c.2))
}

pub const INK: RGBColor = RGBColor(0x22, 0x22, 0x22);
pub const MUTED: RGBColor = RGBColor(0x5F, 0x5F, 0x5F);
pub const GRID: RGBColor = RGBColor(0xE4, 0xE4, 0xE4);
pub(crate) const LIMIT: RGBColor = RGBColor(0x22, 0x22, 0x22);

pub fn text(size: u32, color: RGBColor) -> TextStyle<'static> {
    TextStyle {
        font: (FONT, size).into_font(),
        color: color.to_backend_color(),
        pos: Pos::default(),
    }
}

pub(crate) fn bold(size: u32, color: RGBColor) -> TextStyle<'static> {
    TextStyle {
        font: (FONT, size, FontStyle::Bold).into_font(),
        color: color.to_backend_color(),
        pos: Pos::default(),
    }
}

pub fn anchored(style: TextStyle<'static>, h: HPos, v: VPos) -> TextStyle<'static> {
    style.pos(Pos::new(h, v))
}

/// A chart's drawing area.
pub type Area<'a> = DrawingArea<BitMapBackend<'a>, Shift>;

/// How an entry of a legend is marked.
#[derive(Debug, Clone, Copy)]
pub enum Mark {
    /// A filled square.
    Swatch(RGBColor),
    /// A filled square with an outline (a lighter fill).
    Outlined { fill: RGBColor, line: RGBColor },
    /// A solid line.
    Line(RGBColor),
    /// A dashed line (the limit).
    Dashed(RGBColor),
    /// A dotted vertical tick (window boundaries).
    Dotted(RGBColor),
}

/// The legend of one limiter: its colour and name.
pub(crate) fn limiter_entries<'a>(
    data: &RunData,
    limiters: impl IntoIterator<Item = (usize, &'a str)>,
) -> Vec<(Mark, String)> {
    limiters
        .into_iter()
        .map(|(i, name)| (Mark::Swatch(limiter_color(data, i)), name.to_string()))
        .collect()
}

/// Draws the title, a subtitle (one or more lines) and a legend on top of
/// `area`, and returns what is left below them for the chart.
pub fn header<'a>(
    area: &Area<'a>,
    title: &str,
    subtitle: &[String],
    legend: &[(Mark, String)],
) -> anyhow::Result<Area<'a>> {
    let (width, _) = area.dim_in_pixel();
    let left = 20i32;
    let mut y = 14i32;
    area.draw(&Text::new(
        title.to_string(),
        (left, y),
        anchored(bold(24, INK), HPos::Left, VPos::Top),
    ))?;
    y += 34;
    let sub = anchored(text(15, MUTED), HPos::Left, VPos::Top);
    for paragraph in subtitle {
        for line in wrap_to(area, paragraph, &sub, width.saturating_sub(2 * left as u32))? {
            area.draw(&Text::new(line, (left, y), sub.clone()))?;
            y += 21;
        }
    }
    y += 8;
    // Legend entries flow left to right and wrap.
    let style = anchored(text(15, INK), HPos::Left, VPos::Center);
    let mut x = left;
    let row = 24;
    let mut cy = y + row / 2;
    for (mark, label) in legend {
        let (tw, _) = area.estimate_text_size(label, &style)?;
        let need = 30 + tw as i32 + 22;
        if x > left && x + need > width as i32 - left {
            x = left;
            cy += row;
        }
        draw_mark(area, *mark, (x, cy))?;
        area.draw(&Text::new(label.clone(), (x + 30, cy), style.clone()))?;
        x += need;
    }
    let used = cy + row / 2 + 6;
    let (_, rest) = area.split_vertically(used);
    Ok(rest)
}

/// `text` broken into lines no wider than `width` pixels in `style`.
pub(crate) fn wrap_to(
    area: &Area,
    text: &str,
    style: &TextStyle,
    width: u32,
) -> anyhow::Result<Vec<String>> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let candidate = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if !line.is_empty() && area.estimate_text_size(&candidate, style)?.0 > width {
            lines.push(std::mem::replace(&mut line, word.to_string()));
        } else {
            line = candidate;
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    Ok(lines)
}

fn draw_mark(area: &Area, mark: Mark, (x, y): (i32, i32)) -> anyhow::Result<()> {
    match mark {
        Mark::Swatch(c) => {
            area.draw(&Rectangle::new(
                [(x + 4, y - 8), (x + 20, y + 8)],
                c.filled(),
            ))?;
        }
        Mark::Outlined { fill, line } => {
            area.draw(&Rectangle::new(
                [(x + 4, y - 8), (x + 20, y + 8)],
                fill.filled(),
            ))?;
            area.draw(&Rectangle::new(
                [(x + 4, y - 8), (x + 20, y + 8)],
                line.stroke_width(2),
            ))?;
        }
        Mark::Line(c) => {
            area.draw(&PathElement::new(
                vec![(x, y), (x + 24, y)],
                c.stroke_width(3),
            ))?;
        }
        Mark::Dashed(c) => {
            for k in 0..3 {
                let x0 = x + k * 9;
                area.draw(&PathElement::new(
                    vec![(x0, y), (x0 + 5, y)],
                    c.stroke_width(2),
                ))?;
            }
        }
        Mark::Dotted(c) => {
            for k in 0..4 {
                let y0 = y - 9 + k * 5;
                area.draw(&PathElement::new(
                    vec![(x + 12, y0), (x + 12, y0 + 2)],
                    c.stroke_width(2),
                ))?;
            }
        }
    }
    Ok(())
}

/// `label` at `pos` on a white box, so lines behind it do not cross it.
pub(crate) fn boxed_label(
    area: &Area,
    label: &str,
    pos: (i32, i32),
    style: TextStyle<'static>,
) -> anyhow::Result<()> {
    let (w, h) = area.estimate_text_size(label, &style)?;
    let (w, h) = (w as i32, h as i32);
    let x0 = match style.pos.h_pos {
        HPos::Left => pos.0,
        HPos::Center => pos.0 - w / 2,
        HPos::Right => pos.0 - w,
    };
    let y0 = match style.pos.v_pos {
        VPos::Top => pos.1,
        VPos::Center => pos.1 - h / 2,
        VPos::Bottom => pos.1 - h,
    };
    area.draw(&Rectangle::new(
        [(x0 - 3, y0 - 2), (x0 + w + 3, y0 + h + 2)],
        WHITE.filled(),
    ))?;
    area.draw(&Text::new(label.to_string(), pos, style))?;
    Ok(())
}

/// Pixel coordinates a dashed or dotted line is clipped to: no chart is
/// larger, and a coordinate far off the canvas (from an absurd value) must
/// not make a loop of a billion dashes.
fn on_canvas(v: i32) -> i32 {
    v.clamp(-16, 16_384)
}

/// A horizontal dashed line from `x0` to `x1` at `y`, in pixels.
pub(crate) fn dashed_hline(
    area: &Area,
    x0: i32,
    x1: i32,
    y: i32,
    c: RGBColor,
) -> anyhow::Result<()> {
    let (x0, x1) = (on_canvas(x0), on_canvas(x1));
    let mut x = x0;
    while x < x1 {
        area.draw(&PathElement::new(
            vec![(x, y), ((x + 8).min(x1), y)],
            c.stroke_width(2),
        ))?;
        x += 13;
    }
    Ok(())
}

/// A vertical dotted line from `y0` to `y1` at `x`, in pixels.
pub(crate) fn dotted_vline(
    area: &Area,
    x: i32,
    y0: i32,
    y1: i32,
    c: RGBColor,
    width: u32,
) -> anyhow::Result<()> {
    let (y0, y1) = (on_canvas(y0), on_canvas(y1));
    let mut y = y0;
    while y < y1 {
        area.draw(&PathElement::new(
            vec![(x, y), (x, (y + 3).min(y1))],
            c.stroke_width(width),
        ))?;
        y += 7;
    }
    Ok(())
}

/// A vertical dashed line from `y0` to `y1` at `x`, in pixels.
pub(crate) fn dashed_vline(
    area: &Area,
    x: i32,
    y0: i32,
    y1: i32,
    c: RGBColor,
) -> anyhow::Result<()> {
    let (y0, y1) = (on_canvas(y0), on_canvas(y1));
    let mut y = y0;
    while y < y1 {
        area.draw(&PathElement::new(
            vec![(x, y), (x, (y + 8).min(y1))],
            c.stroke_width(2),
        ))?;
        y += 13;
    }
    Ok(())
}

/// A chart with one row per limiter, limiter 0 on top: row `i` spans
/// `y ∈ [n − i − 1, n − i)`, x is the value.
pub type Rows<'a, 'b> =
    ChartContext<'b, BitMapBackend<'a>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// The bottom of row `i` of `n` in a [`Rows`] chart.
pub fn row(n: usize, i: usize) -> f64 {
    (n - i - 1) as f64
}

/// One row's label left of a [`Rows`] chart: the limiter's name after a
/// square of its colour, and an optional muted note under the name.
pub(crate) struct RowName {
    pub name: String,
    pub color: RGBColor,
    pub note: Option<String>,
}

/// The width the row names (and notes) need, for `y_label_area_size`.
pub(crate) fn row_names_width(area: &Area, names: &[RowName]) -> anyhow::Result<u32> {
    let mut widest = 60;
    for r in names {
        widest = widest.max(area.estimate_text_size(&r.name, &text(15, INK))?.0);
        if let Some(note) = &r.note {
            widest = widest.max(area.estimate_text_size(note, &text(13, MUTED))?.0);
        }
    }
    Ok(widest.min(360) + 40)
}

/// The end of a value axis whose longest bar, `most`, leaves `label_w`
/// pixels of a `plot_w`-pixel plot free right of it for its label (but
/// takes at least 40% of the plot).
pub(crate) fn room_for_labels(most: f64, label_w: u32, plot_w: u32) -> f64 {
    let most = if most > 0.0 { most } else { 1.0 };
    let room = ((label_w + 16) as f64 / plot_w.max(1) as f64).min(0.6);
    (most / (1.0 - room)).max(most * 1.1)
}

/// Writes every row's name (and note) left of `chart`'s plot area.
pub(crate) fn row_names(root: &Area, chart: &Rows, names: &[RowName]) -> anyhow::Result<()> {
    let n = names.len();
    for (i, r) in names.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(chart.x_range().start, row(n, i) + 0.5));
        let py = if r.note.is_some() { py - 8 } else { py };
        root.draw(&Rectangle::new(
            [(px - 22, py - 7), (px - 8, py + 7)],
            r.color.filled(),
        ))?;
        root.draw(&Text::new(
            r.name.clone(),
            (px - 30, py),
            anchored(text(15, INK), HPos::Right, VPos::Center),
        ))?;
        if let Some(note) = &r.note {
            root.draw(&Text::new(
                note.clone(),
                (px - 30, py + 17),
                anchored(text(13, MUTED), HPos::Right, VPos::Center),
            ))?;
        }
    }
    Ok(())
}

/// Writes `label` centred at `(cx, y)` (top), shrinking or wrapping it on
/// `-`/`_` so it fits in `max_width` pixels. Returns the height used.
pub(crate) fn fitted_label(
    area: &Area,
    label: &str,
    (cx, y): (i32, i32),
    max_width: u32,
    color: RGBColor,
) -> anyhow::Result<i32> {
    for size in [15, 13, 12] {
        let style = anchored(text(size, color), HPos::Center, VPos::Top);
        if area.estimate_text_size(label, &style)?.0 <= max_width {
            area.draw(&Text::new(label.to_string(), (cx, y), style))?;
            return Ok(size as i32 + 4);
        }
    }
    let style = anchored(text(12, color), HPos::Center, VPos::Top);
    let cut = label
        .char_indices()
        .filter(|&(_, c)| c == '-' || c == '_')
        .map(|(i, _)| i)
        .min_by_key(|&i| (i as i64 - label.len() as i64 / 2).abs());
    match cut {
        Some(i) => {
            area.draw(&Text::new(label[..=i].to_string(), (cx, y), style.clone()))?;
            area.draw(&Text::new(label[i + 1..].to_string(), (cx, y + 15), style))?;
            Ok(32)
        }
        None => {
            area.draw(&Text::new(label.to_string(), (cx, y), style))?;
            Ok(16)
        }
    }
}

/// A chart whose x axis holds one category (a limiter) per unit: category
/// `i` spans `[i, i + 1)`. With fewer than [`MIN_SLOTS`] categories the axis
/// is padded on both sides, so one bar is not the width of the chart.
pub(crate) type Categories<'a, 'b, Y> =
    ChartContext<'b, BitMapBackend<'a>, Cartesian2d<RangedCoordf64, Y>>;

/// Builds a category chart on `body` with `n` categories and the y axis
/// `y`, leaving room below the axis for two rows of labels.
pub(crate) fn category_chart<'a, 'b, Y: AsRangedCoord>(
    body: &'b Area<'a>,
    n: usize,
    y: Y,
) -> anyhow::Result<Categories<'a, 'b, Y::CoordDescType>>
where
    Y::CoordDescType: Ranged<ValueType = Y::Value>,
{
    let pad = MIN_SLOTS.saturating_sub(n) as f64 / 2.0;
    Ok(ChartBuilder::on(body)
        .margin_left(16)
        .margin_right(RIGHT_MARGIN)
        .margin_top(16)
        .margin_bottom(8)
        .x_label_area_size(78)
        .y_label_area_size(90)
        .build_cartesian_2d(-pad..n as f64 + pad, y)?)
}

/// Room right of a category chart's plot, for a label at a line's end.
pub(crate) const RIGHT_MARGIN: u32 = 84;

/// The fewest category slots a category chart spans.
pub(crate) const MIN_SLOTS: usize = 4;

/// Writes each category's name under the x axis, in its colour, and
/// returns the y pixel below the names.
pub(crate) fn category_names<Y: Ranged>(
    root: &Area,
    chart: &Categories<'_, '_, Y>,
    names: &[(String, RGBColor)],
    y_offset: i32,
) -> anyhow::Result<i32>
where
    Y::ValueType: Clone,
{
    let (_, ys) = chart.plotting_area().get_pixel_range();
    let y0 = chart.y_range().start;
    let slot = (chart.backend_coord(&(1.0, y0.clone())).0
        - chart.backend_coord(&(0.0, y0.clone())).0) as f64;
    let mut bottom = ys.end;
    for (i, (name, color)) in names.iter().enumerate() {
        let cx = chart.backend_coord(&(i as f64 + 0.5, y0.clone())).0;
        let y = ys.end + y_offset;
        let h = fitted_label(
            root,
            name,
            (cx, y),
            (slot - 8.0).max(20.0) as u32,
            label_color(*color),
        )?;
        bottom = bottom.max(y + h);
    }
    Ok(bottom)
}

/// A count for an axis or a label: `950`, `12.5k`, `3.1M`.
pub fn count(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{}G", trim(v / 1e9, 1))
    } else if a >= 1e6 {
        format!("{}M", trim(v / 1e6, 1))
    } else if a >= 1e4 {
        format!("{}k", trim(v / 1e3, 1))
    } else {
        trim(v, 1)
    }
}

/// `v` with at most `places` decimals, trailing zeros dropped.
pub fn trim(v: f64, places: usize) -> String {
    let s = format!("{v:.places$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// A time in seconds for an axis label, with as many decimals as the span
/// being shown needs.
pub fn seconds(ns: f64, span_ns: f64) -> String {
    let places = if span_ns >= 10e9 {
        0
    } else if span_ns >= 1e9 {
        1
    } else if span_ns >= 1e8 {
        2
    } else if span_ns >= 1e7 {
        3
    } else if span_ns >= 1e6 {
        4
    } else {
        6
    };
    format!("{:.places$}", ns / 1e9)
}

/// A delay in ms with three significant digits: `0`, `4.25`, `12.5`, `990`.
pub fn millis(ms: f64) -> String {
    if ms == 0.0 {
        "0".into()
    } else if ms >= 100.0 {
        trim(ms, 0)
    } else if ms >= 10.0 {
        trim(ms, 1)
    } else if ms >= 1.0 {
        trim(ms, 2)
    } else {
        trim(ms, 3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::charts::data::tests_support::run_data;

    /// A run of limiters with the given algorithms.
    fn run_of(algorithms: &[&str]) -> RunData {
        let names: Vec<String> = (0..algorithms.len()).map(|i| format!("l{i}")).collect();
        let limiters: Vec<(&str, u64)> = names.iter().map(|n| (n.as_str(), 1)).collect();
        let mut d = run_data(&limiters, 1);
        for (l, a) in d.limiters.iter_mut().zip(algorithms) {
            l.algorithm = a.to_string();
        }
        d
    }

    #[test]
    fn every_limiter_of_a_large_scenario_gets_a_distinct_colour() {
        let algorithms: Vec<&str> = ALGORITHM_COLORS.iter().map(|(a, _)| *a).collect();
        for run in [
            run_of(&["token_bucket"; 40]),
            run_of(&["leaky_bucket"; 40]),
            run_of(
                &algorithms
                    .iter()
                    .cycle()
                    .take(40)
                    .copied()
                    .collect::<Vec<_>>(),
            ),
        ] {
            let colours: std::collections::HashSet<_> =
                (0..40).map(|i| limiter_color(&run, i).rgb()).collect();
            assert_eq!(colours.len(), 40);
        }
    }

    // Regression (chart details issue item 6): a limiter's colour was its
    // index in the scenario's palette — the same algorithm changed colour
    // between scenarios, and limiters wore the green, orange and red that
    // mean admitted, delayed and rejected.
    #[test]
    fn an_algorithm_has_one_colour_everywhere_and_none_is_an_outcome_colour() {
        let a = run_of(&["fixed_window", "gcra"]);
        let b = run_of(&["gcra", "sliding_log", "fixed_window"]);
        assert_eq!(limiter_color(&a, 1), limiter_color(&b, 0));
        assert_eq!(limiter_color(&a, 0), limiter_color(&b, 2));
        assert_eq!(limiter_color(&a, 1), algorithm_color("gcra"));
        let far = |x: RGBColor, y: RGBColor| {
            let d = |p: u8, q: u8| (p as f64 - q as f64).powi(2);
            (d(x.0, y.0) + d(x.1, y.1) + d(x.2, y.2)).sqrt()
        };
        for (name, c) in ALGORITHM_COLORS {
            for o in [ADMITTED, DELAYED, REJECTED, GAVE_UP] {
                assert!(far(c, o) > 85.0, "{name} is too near an outcome colour");
            }
            for (other, d) in ALGORITHM_COLORS {
                assert!(name == other || far(c, d) > 70.0, "{name} ≈ {other}");
            }
        }
        // Two limiters of one algorithm: its colour and a shade of it.
        let two = run_of(&["token_bucket", "token_bucket"]);
        assert_eq!(limiter_color(&two, 0), algorithm_color("token_bucket"));
        assert_ne!(limiter_color(&two, 1), limiter_color(&two, 0));
    }

    #[test]
    fn a_bar_axis_leaves_room_for_the_longest_label() {
        // A 184 + 16 px label on a 600 px plot: the bar takes 2/3 of it.
        assert!((room_for_labels(100.0, 184, 600) - 150.0).abs() < 1e-9);
        // A label wider than the plot: the bar still gets 40%.
        assert!((room_for_labels(100.0, 2_000, 600) - 250.0).abs() < 1e-9);
        // Nothing to show still makes a positive axis.
        assert!(room_for_labels(0.0, 10, 600) > 0.0);
    }

    // Regression (chart details issue item 6): CJK text and emoji in names
    // were drawn as empty boxes, silently.
    #[test]
    fn characters_the_font_lacks_become_question_marks() {
        assert_eq!(drawable("api-限流 🚀 ok — 2×"), "api-?? ? ok — 2×");
        assert_eq!(missing_glyphs("限流限 🚀"), ['限', '流', '🚀']);
        assert!(missing_glyphs("fixed_window … ↑ é").is_empty());
    }

    #[test]
    fn counts_and_delays_print_short() {
        assert_eq!(count(950.0), "950");
        assert_eq!(count(12_500.0), "12.5k");
        assert_eq!(count(3_100_000.0), "3.1M");
        assert_eq!(millis(990.0), "990");
        assert_eq!(millis(4.25), "4.25");
        assert_eq!(millis(0.0), "0");
        assert_eq!(seconds(999_000_000.0, 4e6), "0.9990");
    }
}
