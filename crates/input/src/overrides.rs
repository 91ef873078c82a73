//! `--set PATH=VALUE` and `--vary PATH=LIST`: scenario fields named the way
//! error messages name them (docs/semantics.md §7).
//!
//! A path is `key`, `table.key` or `array[i].key`, indices from 0:
//! `defaults.limit`, `limiter[2].capacity`, `traffic[0].clients`,
//! `deployment.instances`, `traffic[1].retry.max_attempts`. A limiter may
//! be named instead of numbered, `limiter[api-perip].rate` (its `name`, or
//! the default name: its `implementation`, else its `algorithm`). An
//! override replaces the value in the scenario's TOML table before it is
//! validated, so the value is checked exactly as if the file said it — an
//! unknown field is refused by the same "unknown field, set to … — accepted here: …"
//! check. Every error an override causes names it as typed (`--set
//! nosuch=1: nosuch: unknown field …`; see
//! [`crate::scenario::text::ScenarioFile::with`]).
//!
//! A value is read as the field's own type: as a string when the file
//! already holds a string there (`--set limiter[0].window=2s`), else as a
//! TOML value when it is one (`100`, `2.5`, `true`, `"a b"`), else as a
//! string (`gcra`, `100/1s`, `250ms`).

use toml::{Table, Value};

use crate::error::{quoted, InputError};

/// One `PATH=VALUE`.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    pub path: String,
    pub value: String,
    /// The argument as typed, for messages: `--set nosuch=1`, `--vary
    /// defaults.limit=10..=50:10: value "20"`.
    pub arg: String,
}

impl Override {
    /// Parses `PATH=VALUE` as given to `flag` (for messages).
    pub fn parse(text: &str, flag: &str) -> Result<Override, InputError> {
        let at = split_outside_brackets(text, '=')[0].len();
        let (path, value) = match text.get(at..) {
            Some(rest) if !rest.is_empty() => (&text[..at], &rest[1..]),
            _ => {
                return Err(InputError::new(format!(
                    "{flag} {}: expected PATH=VALUE, e.g. defaults.limit=100",
                    quoted(text)
                )))
            }
        };
        let path = path.trim();
        segments(path).map_err(|why| {
            InputError::new(format!(
                "{flag} {}: {why}",
                crate::error::quote(text.trim())
            ))
        })?;
        Ok(Override {
            path: path.to_string(),
            value: value.trim().to_string(),
            arg: format!("{flag} {}", crate::error::quote(text.trim())),
        })
    }
}

/// `text` cut at every `sep` outside `[…]`, so a limiter's name may hold
/// a `.` or an `=`.
fn split_outside_brackets(text: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in text.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            c if c == sep && depth == 0 => {
                parts.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// Parses every `PATH=VALUE` of `texts`, as given to `flag`.
pub fn parse_all(texts: &[String], flag: &str) -> Result<Vec<Override>, InputError> {
    texts.iter().map(|t| Override::parse(t, flag)).collect()
}

/// The most values one `--vary` range may give.
pub(crate) const MAX_RANGE_VALUES: usize = 100_000;

/// The values of a `--vary` LIST: comma-separated (`10,20,50`,
/// `"100/1s",200/1s`), or a range `FROM..=TO:STEP` of non-negative numbers
/// sharing a unit, if any (`10..=100:10`, `0.5..=2:0.5`,
/// `100ms..=1s:100ms` is refused: one unit for all three). Values come out
/// as written: numbers with the fewest decimals that hold them exactly.
pub fn values(list: &str, flag: &str) -> Result<Vec<String>, InputError> {
    let bad = |why: String| InputError::new(format!("{flag} {}: {why}", quoted(list)));
    let Some((from, rest)) = list.split_once("..=") else {
        let items: Vec<String> = list.split(',').map(|v| v.trim().to_string()).collect();
        if items.iter().any(String::is_empty) {
            return Err(bad("an empty value; give values separated by commas, e.g. 10,20,50, or a range FROM..=TO:STEP".into()));
        }
        return Ok(items);
    };
    let (to, step) = rest
        .split_once(':')
        .ok_or_else(|| bad("a range needs a step: FROM..=TO:STEP, e.g. 10..=100:10".into()))?;
    let split = |v: &str| -> Result<((u128, u128), String), InputError> {
        let v = v.trim();
        let cut = v
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(v.len());
        let (num, unit) = v.split_at(cut);
        let n = crate::clock::parse_decimal(num).map_err(|_| {
            bad(format!(
                "{} is not a non-negative number (with an optional unit, e.g. 250ms)",
                quoted(v)
            ))
        })?;
        Ok((n, unit.to_string()))
    };
    let ((f, unit), (t, unit_to), (st, unit_step)) = (split(from)?, split(to)?, split(step)?);
    if unit != unit_to || unit != unit_step {
        return Err(bad(format!(
            "FROM, TO and STEP must share one unit (here {}, {}, {})",
            quoted(&unit),
            quoted(&unit_to),
            quoted(&unit_step)
        )));
    }
    // All three over one denominator.
    let den = f.1.max(t.1).max(st.1);
    let scale = |(n, d): (u128, u128)| n * (den / d);
    let (f, t, st) = (scale(f), scale(t), scale(st));
    if st == 0 {
        return Err(bad("the step is 0; give a positive step".into()));
    }
    if t < f {
        return Err(bad("TO is below FROM; ranges run upward".into()));
    }
    let count = (t - f) / st + 1;
    if count > MAX_RANGE_VALUES as u128 {
        return Err(bad(format!(
            "{count} values; at most {MAX_RANGE_VALUES} in one range"
        )));
    }
    Ok((0..count)
        .map(|i| format!("{}{unit}", crate::clock::decimal(f + i * st, den)))
        .collect())
}

/// One step of a path: a key, and an index into the array under it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Segment<'a> {
    key: &'a str,
    index: Option<Index<'a>>,
}

/// Which element of an array: by position, or (a limiter) by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Index<'a> {
    At(usize),
    Named(&'a str),
}

/// The arrays whose elements may be named: `limiter[NAME]`, `chain[NAME]`.
const NAMED: &[&str] = &["limiter", "chain"];

fn segments(path: &str) -> Result<Vec<Segment<'_>>, String> {
    if path.is_empty() {
        return Err("empty path; e.g. defaults.limit or limiter[0].capacity".into());
    }
    split_outside_brackets(path, '.')
        .into_iter()
        .map(|part| {
            let (key, index) = match part.split_once('[') {
                None => (part, None),
                Some((key, rest)) => {
                    let inside = rest.strip_suffix(']').ok_or("a [ without its ]")?;
                    let index = if !inside.is_empty() && inside.bytes().all(|b| b.is_ascii_digit()) {
                        Index::At(
                            inside
                                .parse::<usize>()
                                .map_err(|_| format!("index [{inside}] is too large"))?,
                        )
                    } else if NAMED.contains(&key) && !inside.is_empty() {
                        Index::Named(inside)
                    } else if NAMED.contains(&key) {
                        return Err(format!("{key}[] names no {key}: give its index from 0 or its name, e.g. {key}[0] or {key}[api]"));
                    } else {
                        return Err(format!(
                            "index [{inside}] is not a whole number from 0 (only limiter[...] and chain[...] take a name)"
                        ));
                    };
                    (key, Some(index))
                }
            };
            let valid = !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !valid {
                return Err(format!("{} is not a field name", quoted(key)));
            }
            Ok(Segment { key, index })
        })
        .collect()
}

/// Applies `overrides` to `table` in order. Returns each one's path as
/// validation names it (`limiter[api].rate` → `limiter[0].rate`); an error
/// names the override as typed.
pub fn apply(table: &mut Table, overrides: &[Override]) -> Result<Vec<String>, InputError> {
    overrides
        .iter()
        .map(|o| set(table, o).map_err(|why| InputError::new(format!("{}: {why}", o.arg))))
        .collect()
}

/// `path` as validation names it, against `table`: a limiter's name
/// replaced by its index (`limiter[api].rate` → `limiter[0].rate`).
pub fn resolve(table: &Table, path: &str) -> Result<String, String> {
    let mut copy = table.clone();
    set(
        &mut copy,
        &Override {
            path: path.to_string(),
            value: "0".to_string(),
            arg: String::new(),
        },
    )
}

fn set(table: &mut Table, o: &Override) -> Result<String, String> {
    let segs = segments(&o.path)?;
    let (last, parents) = segs.split_last().ok_or("empty path")?;
    let mut here = table;
    let mut walked = String::new();
    for seg in parents {
        let i = position(here, seg, &walked)?;
        walked = join(&walked, seg.key, i);
        here = step(here, seg.key, i, &walked)?;
    }
    let i = position(here, last, &walked)?;
    let name = join(&walked, last.key, i);
    let slot = match i {
        None => here.get_mut(last.key),
        Some(i) => match here.get_mut(last.key) {
            Some(Value::Array(items)) => {
                let len = items.len();
                Some(items.get_mut(i).ok_or_else(|| out_of_range(&name, len))?)
            }
            Some(_) => return Err(format!("{} is not a list", last.key)),
            None => return Err(format!("the scenario has no {}", last.key)),
        },
    };
    let value = read_value(&o.value, slot.as_deref());
    match slot {
        Some(v) => *v = value,
        None => {
            here.insert(last.key.to_string(), value);
        }
    }
    Ok(name)
}

/// The position `seg` names in the array under `here`: its index, or the
/// index of the one limiter called by its name.
fn position(here: &Table, seg: &Segment, walked: &str) -> Result<Option<usize>, String> {
    let name = match seg.index {
        None => return Ok(None),
        Some(Index::At(i)) => return Ok(Some(i)),
        Some(Index::Named(name)) => name,
    };
    let shown = join(walked, seg.key, None);
    let items = match here.get(seg.key) {
        Some(Value::Array(items)) => items,
        Some(_) => return Err(format!("{shown} is not a list of tables")),
        None => return Err(format!("the scenario has no [[{}]]", seg.key)),
    };
    let names: Vec<String> = items.iter().map(limiter_name).collect();
    let found: Vec<usize> = (0..names.len()).filter(|&i| names[i] == name).collect();
    match found[..] {
        [i] => Ok(Some(i)),
        [] => Err(format!(
            "{shown}[{name}]: no {} is called {} — names: {}",
            seg.key,
            quoted(name),
            names.join(", ")
        )),
        _ => Err(format!(
            "{shown}[{name}]: {} {}s are called {}; give the index instead ({})",
            found.len(),
            seg.key,
            quoted(name),
            found
                .iter()
                .map(|i| format!("{shown}[{i}]"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// A `[[limiter]]` table's name as validation gives it: its `name`, else
/// its `implementation`, else its `algorithm` (docs/semantics.md §3).
fn limiter_name(item: &Value) -> String {
    ["name", "implementation", "algorithm"]
        .iter()
        .find_map(|k| item.get(k).and_then(Value::as_str))
        .unwrap_or("")
        .to_string()
}

/// `array[i]` or `table` under `here`, created if it is a table that is
/// not there yet.
fn step<'t>(
    here: &'t mut Table,
    key: &str,
    index: Option<usize>,
    name: &str,
) -> Result<&'t mut Table, String> {
    match index {
        None => {
            let v = here
                .entry(key.to_string())
                .or_insert_with(|| Value::Table(Table::new()));
            match v {
                Value::Table(t) => Ok(t),
                _ => Err(format!("{name} is not a table")),
            }
        }
        Some(i) => match here.get_mut(key) {
            Some(Value::Array(items)) => {
                let len = items.len();
                match items.get_mut(i) {
                    Some(Value::Table(t)) => Ok(t),
                    Some(_) => Err(format!("{name} is not a table")),
                    None => Err(out_of_range(name, len)),
                }
            }
            Some(_) => Err(format!("{key} is not a list of tables")),
            None => Err(format!("the scenario has no [[{key}]]")),
        },
    }
}

fn out_of_range(name: &str, len: usize) -> String {
    let valid = if len == 0 {
        "there are none".to_string()
    } else {
        format!("indices run from 0 to {}", len - 1)
    };
    format!("{name} does not exist: {valid}")
}

fn join(path: &str, key: &str, index: Option<usize>) -> String {
    let step = match index {
        Some(i) => format!("{key}[{i}]"),
        None => key.to_string(),
    };
    if path.is_empty() {
        step
    } else {
        format!("{path}.{step}")
    }
}

/// `text` as the value of a field that holds `current`.
fn read_value(text: &str, current: Option<&Value>) -> Value {
    if let Some(Value::String(_)) = current {
        let unquoted = text
            .strip_prefix('"')
            .and_then(|t| t.strip_suffix('"'))
            .unwrap_or(text);
        return Value::String(unquoted.to_string());
    }
    match format!("v = {text}").parse::<Table>() {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| Value::String(text.to_string())),
        Err(_) => Value::String(text.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENARIO: &str = r#"
[defaults]
limit = 10
window = "1s"
[[limiter]]
algorithm = "token_bucket"
[[limiter]]
algorithm = "sliding_log"
window = "2s"
[[traffic]]
pattern = "poisson"
rate = "5/1s"
"#;

    fn set_all(sets: &[&str]) -> Result<Table, InputError> {
        let mut t: Table = SCENARIO.parse().unwrap();
        let o: Vec<Override> = sets
            .iter()
            .map(|s| Override::parse(s, "--set"))
            .collect::<Result<_, _>>()?;
        apply(&mut t, &o)?;
        Ok(t)
    }

    fn at<'a>(t: &'a Table, path: &[&str]) -> &'a Value {
        let mut v = &t[path[0]];
        for p in &path[1..] {
            v = match p.parse::<usize>() {
                Ok(i) => &v[i],
                Err(_) => &v[*p],
            };
        }
        v
    }

    #[test]
    fn a_value_is_read_as_the_type_the_field_holds() {
        let t = set_all(&[
            "defaults.limit=100",
            "limiter[1].window=250ms",
            "limiter[0].capacity=20",
            "traffic[0].rate=100/1s",
            "seed=7",
            "deployment.instances=4",
        ])
        .unwrap();
        assert_eq!(at(&t, &["defaults", "limit"]), &Value::Integer(100));
        assert_eq!(
            at(&t, &["limiter", "1", "window"]),
            &Value::String("250ms".into())
        );
        assert_eq!(at(&t, &["limiter", "0", "capacity"]), &Value::Integer(20));
        assert_eq!(
            at(&t, &["traffic", "0", "rate"]),
            &Value::String("100/1s".into())
        );
        assert_eq!(at(&t, &["seed"]), &Value::Integer(7));
        assert_eq!(at(&t, &["deployment", "instances"]), &Value::Integer(4));
    }

    #[test]
    fn a_string_field_keeps_a_string_even_when_it_looks_like_a_number() {
        let t = set_all(&["limiter[0].algorithm=\"gcra\"", "defaults.window=2"]).unwrap();
        assert_eq!(
            at(&t, &["limiter", "0", "algorithm"]),
            &Value::String("gcra".into())
        );
        assert_eq!(at(&t, &["defaults", "window"]), &Value::String("2".into()));
    }

    #[test]
    fn lists_and_ranges_give_their_values_as_written() {
        assert_eq!(values("10,20, 50", "--vary").unwrap(), ["10", "20", "50"]);
        assert_eq!(values("10..=50:20", "--vary").unwrap(), ["10", "30", "50"]);
        assert_eq!(
            values("0.5..=2:0.5", "--vary").unwrap(),
            ["0.5", "1", "1.5", "2"]
        );
        assert_eq!(
            values("100ms..=300ms:100ms", "--vary").unwrap(),
            ["100ms", "200ms", "300ms"]
        );
        assert_eq!(values("5..=5:1", "--vary").unwrap(), ["5"]);
        for bad in [
            "1..=10:0",
            "10..=1:1",
            "1..=10",
            "1ms..=10s:1ms",
            "a..=b:1",
            "1,,2",
            "0..=1000000:1",
        ] {
            assert!(values(bad, "--vary").is_err(), "{bad}");
        }
    }

    #[test]
    fn paths_that_do_not_exist_are_refused_naming_them() {
        let e = set_all(&["limiter[5].capacity=3"]).unwrap_err();
        assert!(
            e.message().contains("limiter[5]") && e.message().contains("0 to 1"),
            "{}",
            e.message()
        );
        let e = set_all(&["defaults.limit.x=3"]).unwrap_err();
        assert!(
            e.message().contains("defaults.limit is not a table"),
            "{}",
            e.message()
        );
        let e = set_all(&["limitr[0].capacity=3"]).unwrap_err();
        assert!(e.message().contains("no [[limitr]]"), "{}", e.message());
        for bad in [
            "=3",
            "traffic[x].a=1",
            "limiter[].a=1",
            "limiter[0.a=1",
            "a b=1",
            "nothing",
        ] {
            assert!(Override::parse(bad, "--set").is_err(), "{bad}");
        }
    }

    const NAMED: &str = r#"
[defaults]
limit = 10
window = "1s"
[[limiter]]
name = "api.v1"
algorithm = "token_bucket"
[[limiter]]
implementation = "nginx"
[[limiter]]
algorithm = "sliding_log"
[[traffic]]
pattern = "poisson"
"#;

    // Issue 23 item 6: `limiter[NAME]` wherever `limiter[INDEX]` is.
    #[test]
    fn a_limiter_is_found_by_its_name_or_its_default_name() {
        let mut t: Table = NAMED.parse().unwrap();
        let o: Vec<Override> = [
            "limiter[api.v1].capacity=20",
            "limiter[nginx].rate=5/1s",
            "limiter[sliding_log].limit=3",
        ]
        .iter()
        .map(|s| Override::parse(s, "--set").unwrap())
        .collect();
        assert_eq!(o[0].path, "limiter[api.v1].capacity");
        let paths = apply(&mut t, &o).unwrap();
        assert_eq!(
            paths,
            ["limiter[0].capacity", "limiter[1].rate", "limiter[2].limit"]
        );
        assert_eq!(at(&t, &["limiter", "0", "capacity"]), &Value::Integer(20));
        assert_eq!(
            at(&t, &["limiter", "1", "rate"]),
            &Value::String("5/1s".into())
        );
        assert_eq!(at(&t, &["limiter", "2", "limit"]), &Value::Integer(3));
        assert_eq!(
            resolve(&t, "limiter[sliding_log].window").unwrap(),
            "limiter[2].window"
        );
        // A name may hold `=`: the value starts after the first `=` outside
        // the brackets.
        let o = Override::parse("limiter[a=b].limit=4", "--set").unwrap();
        assert_eq!(
            (o.path.as_str(), o.value.as_str()),
            ("limiter[a=b].limit", "4")
        );
    }

    #[test]
    fn an_unknown_or_shared_name_is_refused_listing_the_names() {
        let mut t: Table = NAMED.parse().unwrap();
        let o = Override::parse("limiter[api].capacity=2", "--set").unwrap();
        let e = apply(&mut t, &[o]).unwrap_err();
        assert_eq!(
            e.message(),
            "--set limiter[api].capacity=2: limiter[api]: no limiter is called \"api\" — names: api.v1, nginx, sliding_log"
        );
        let mut t: Table = format!("{NAMED}[[limiter]]\nalgorithm = \"sliding_log\"\n")
            .parse()
            .unwrap();
        let o = Override::parse("limiter[sliding_log].limit=2", "--vary").unwrap();
        let e = apply(&mut t, &[o]).unwrap_err();
        assert!(
            e.message()
                .contains("2 limiters are called \"sliding_log\"; give the index instead (limiter[2], limiter[3])"),
            "{}",
            e.message()
        );
    }
}
