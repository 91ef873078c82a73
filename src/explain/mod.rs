//! `ratesim explain TOPIC`: guided walkthroughs that run a scenario and
//! explain, in plain words and with that run's numbers, one thing rate
//! limiting gets wrong or right.
//!
//! A topic is one file here with a [`Topic`] constant listed in [`TOPICS`]:
//! the scenario it runs, and a function that reads the run (and may
//! re-simulate to look closer, which is what this command is for) and
//! returns the text to print. The run directory gets the usual results and
//! charts, any close-up the topic draws, and a `summary.md` linking them.

pub mod backend;
pub mod boundary;
pub mod gcra;
pub mod libraries;
pub mod plans;

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::error::InputError;
use crate::progress::Progress;
use crate::report::charts::{self, RunData};
use crate::run::{self, RunOptions};
use crate::scenario::Scenario;

/// One walkthrough.
pub struct Topic {
    pub name: &'static str,
    /// One line for `ratesim list` and `--help`.
    pub about: &'static str,
    /// The scenario it runs.
    pub scenario: fn() -> Result<Scenario, InputError>,
    /// That scenario's TOML, for `run.json` (and so `report.html`).
    pub text: &'static str,
    /// Reads the finished run and returns the text to print.
    pub explain: fn(&Context) -> anyhow::Result<String>,
}

/// What a topic gets to work with.
pub struct Context<'a> {
    pub scenario: &'a Scenario,
    /// The run directory, already written (charts included).
    pub dir: &'a Path,
    /// The run, as the run directory records it.
    pub data: &'a RunData,
}

pub(crate) const TOPICS: &[Topic] = &[
    boundary::TOPIC,
    gcra::TOPIC,
    libraries::TOPIC,
    plans::TOPIC,
    backend::TOPIC,
];

pub fn find(name: &str) -> Result<&'static Topic, InputError> {
    TOPICS.iter().find(|t| t.name == name).ok_or_else(|| {
        let names: Vec<&str> = TOPICS.iter().map(|t| t.name).collect();
        InputError::new(format!(
            "explain: no topic {name:?}; topics are {}",
            names.join(", ")
        ))
    })
}

/// Runs topic `name` into `out` (default `output/<name>`) and returns its
/// walkthrough.
pub fn run(name: &str, out: Option<&Path>) -> anyhow::Result<String> {
    let topic = find(name)?;
    let scenario = (topic.scenario)()?;
    let dir: PathBuf = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| Path::new("output").join(topic.name));
    let bar = Progress::new(scenario.limiters.len(), scenario.duration, false);
    let options = RunOptions {
        plots: true,
        html: true,
        // The command line, version and scenario text for report.html.
        invocation: Some(crate::rundir::invocation::Invocation::of_process(
            topic.text.to_string(),
        )),
        ..RunOptions::default()
    };
    let result = run::run_scenario(&scenario, &dir, &options, &|i, t, n| bar.report(i, t, n));
    bar.finish();
    result?;
    let data = RunData::load(&dir)?;
    let text = (topic.explain)(&Context {
        scenario: &scenario,
        dir: &dir,
        data: &data,
    })?;
    // What the topic added beside the charts is ratesim's too (the run's
    // marker lists it), and linked from the report.
    crate::rundir::marker::restamp(&dir, &[crate::rundir::BOUNDARY_ZOOM_PNG])
        .with_context(|| format!("cannot write {}", dir.join(crate::rundir::MARKER).display()))?;
    crate::report::render::render_dir(&dir, false, true)?;
    Ok(text)
}

/// `table`'s rows as aligned columns, indented two spaces: the first
/// column to the left, the others (numbers) to the right.
pub fn columns(table: &[Vec<String>]) -> String {
    let widths: Vec<usize> = (0..table.first().map_or(0, Vec::len))
        .map(|c| {
            table
                .iter()
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in table {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, v)| match c {
                0 => format!("{v:<w$}", w = widths[c]),
                _ => format!("{v:>w$}", w = widths[c]),
            })
            .collect();
        out.push_str("  ");
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// Wraps `text` into lines of at most `width` characters (a longer word
/// gets a line of its own); every line after the first starts with
/// `indent` spaces, so the caller indents the first.
pub fn wrap(text: &str, width: usize, indent: usize) -> String {
    let mut out = String::new();
    let mut line = 0usize;
    for word in text.split_whitespace() {
        let len = word.chars().count();
        if line > 0 && line + 1 + len > width {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(word);
        line += len;
    }
    out
}

/// A rate as people say it over the policy window: `100 per 1s`.
pub fn per_window(rate: &str, window_ns: u64) -> String {
    match crate::clock::parse_rate(rate) {
        Ok(r) => {
            let n = r.tokens() * window_ns as u128;
            if n % r.per_ns() == 0 {
                format!(
                    "{} per {}",
                    n / r.per_ns(),
                    charts::style::duration(window_ns)
                )
            } else {
                rate.to_string()
            }
        }
        Err(_) => rate.to_string(),
    }
}

/// A time in seconds, exact to the ns, as people say it: `0.999s`, `1s`.
pub fn at(ns: u64) -> String {
    format!("{}s", crate::clock::decimal(ns as u128, 1_000_000_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_topic_names_the_known_ones() {
        let e = find("nope").map(|_| ()).unwrap_err();
        assert!(e.message().contains("boundary"), "{e}");
        assert!(e.message().contains("gcra"), "{e}");
    }

    /// `ratesim explain --help` and the README's command table name every
    /// topic there is.
    #[test]
    fn the_help_and_the_readme_name_every_topic() {
        use clap::CommandFactory;
        let mut cli = crate::cli::Cli::command();
        let explain = cli.find_subcommand_mut("explain").expect("explain");
        let help = explain.render_long_help().to_string();
        let readme = include_str!("../../README.md");
        let row = readme
            .lines()
            .find(|l| l.starts_with("| `ratesim explain TOPIC` |"))
            .expect("the README's row of explain");
        for t in TOPICS {
            assert!(
                help.contains(&format!("\n  {} ", t.name)),
                "help lacks {}",
                t.name
            );
            assert!(
                row.contains(&format!("`{}`", t.name)),
                "README lacks {}",
                t.name
            );
        }
    }

    #[test]
    fn wrapping_keeps_words_whole_and_indents() {
        assert_eq!(wrap("aa bb cc", 5, 2), "aa bb\n  cc");
        assert_eq!(at(999_000_000), "0.999s");
        assert_eq!(at(1_000_000_000), "1s");
    }
}
