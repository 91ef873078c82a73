//! The README's first screen quotes a run: the quote must be what the
//! command prints today, byte for byte, so text and numbers cannot drift.

use std::process::Command;

#[test]
fn the_readme_shows_exactly_what_run_boundary_prints() {
    let readme = include_str!("../../README.md");
    let start = readme
        .find("```text\nboundary — ")
        .expect("the README quotes `ratesim run boundary`")
        + "```text\n".len();
    let end = start + readme[start..].find("```").expect("the quote ends");
    let quoted = &readme[start..end];
    // Run as the README says, from a fresh directory: results go to
    // output/boundary there.
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ratesim"))
        .current_dir(tmp.path())
        .args(["run", "boundary"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let printed = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        quoted, printed,
        "README.md's quote of `ratesim run boundary` is out of date"
    );
    // "The first draws that chart (with five more …)": six PNGs.
    let dir = tmp.path().join("output/boundary");
    let charts = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "png")
        })
        .count();
    assert!(
        readme.contains("draws that chart (with five more"),
        "README"
    );
    assert_eq!(charts, 1 + 5, "charts of `ratesim run boundary`");
    assert!(readme.contains("a `summary.md` and a `report.html` to open in a browser"));
    assert!(dir.join("summary.md").is_file() && dir.join("report.html").is_file());
    // The chart's caption: the fixed window at 200, the interval bucket at
    // 101, every other limiter at the limit of 100 or under.
    assert!(readme.contains("the fixed window's bar reaches 200, twice the limit of 100; the others stay at the line, the interval bucket one over it at 101"));
    let summary = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    for row in summary.lines().skip(1) {
        let f: Vec<&str> = row.split(',').collect();
        let (name, peak, limit) = (f[0], f[6], f[7]);
        let expected = match name {
            "fixed_window" => "200",
            "interval_bucket" => "101",
            _ => limit,
        };
        assert!(
            peak == expected
                || (name != "fixed_window"
                    && name != "interval_bucket"
                    && peak.parse::<u64>().unwrap() <= 100),
            "{name}: {peak}"
        );
        assert_eq!(limit, "100");
    }
}

/// The README's table of built-in scenarios names every one of them.
#[test]
fn the_readme_lists_every_built_in_scenario() {
    let readme = include_str!("../../README.md");
    for name in crate::common::SHIPPED {
        assert!(
            readme.contains(&format!("\n| `{name}` | ")),
            "README.md's scenario table lacks {name}"
        );
    }
}

#[test]
fn the_readme_holds_no_merge_conflict_markers() {
    // A merge once committed the README with its conflict markers.
    let readme = include_str!("../../README.md");
    for (i, line) in readme.lines().enumerate() {
        let marker =
            ["<<<<<<< ", ">>>>>>> "].iter().any(|m| line.starts_with(m)) || line == "=======";
        assert!(!marker, "README.md line {}: {line}", i + 1);
    }
}

/// The "stated" columns of the README's peak-RSS table are what `validate`
/// says of each shape (its `memory: ≈N MiB`), so they cannot drift from
/// the estimate they quote.
#[test]
fn the_readme_states_validates_memory_estimates() {
    let readme = include_str!("../../README.md");
    let speed = include_str!("../../benches/speed.toml");
    let one = |algorithm: &str| {
        format!(
            "duration = \"10s\"\n[defaults]\nlimit = 5\nwindow = \"1s\"\n[[limiter]]\nalgorithm = \"{algorithm}\"\n[[traffic]]\npattern = \"poisson\"\nclients = 10000\nrate = \"1/1s\"\n"
        )
    };
    let shapes = [
        (1, one("token_bucket")),
        (3, speed.to_string()),
        (5, one("sliding_log")),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for (exp, keys) in [
        (4, 10_000u64),
        (5, 100_000),
        (6, 1_000_000),
        (7, 10_000_000),
    ] {
        let row = readme
            .lines()
            .find(|l| l.starts_with(&format!("| 10^{exp} | ")))
            .unwrap_or_else(|| panic!("the table's 10^{exp} row"));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        for (column, text) in &shapes {
            let stated = cells[1 + column];
            if stated.is_empty() {
                continue;
            }
            let scenario: String = text
                .lines()
                .map(|l| match l.starts_with("clients = ") {
                    true => format!("clients = {keys}\n"),
                    false => format!("{l}\n"),
                })
                .collect();
            let path = tmp.path().join(format!("s-{exp}-{column}.toml"));
            std::fs::write(&path, scenario).unwrap();
            let out = Command::new(env!("CARGO_BIN_EXE_ratesim"))
                .arg("validate")
                .arg(&path)
                .output()
                .unwrap();
            assert!(out.status.success());
            let text = String::from_utf8(out.stdout).unwrap();
            let said = text
                .split("memory: ≈")
                .nth(1)
                .and_then(|r| r.split(" MiB").next())
                .unwrap_or_else(|| panic!("no memory estimate in {text}"));
            assert_eq!(stated, said, "10^{exp} keys, column {column}: {row}");
            checked += 1;
        }
    }
    assert_eq!(checked, 10, "every stated cell");
}
