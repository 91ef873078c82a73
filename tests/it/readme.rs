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
