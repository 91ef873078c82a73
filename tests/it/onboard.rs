//! End-to-end tests of onboarding (truthful-outputs issue, item 7):
//! `ratesim show`, `ratesim init`, what `explain`, `list` and `--help` tell
//! a user who has the binary but not the repository, and ramps of one step.

use std::fs;
use std::path::Path;

use crate::common::*;
use assert_cmd::Command;

/// `ratesim` run from `dir`, as a user with only the binary would.
fn ratesim_in(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ratesim"));
    cmd.current_dir(dir);
    cmd
}

fn stdout(cmd: &mut Command) -> String {
    let out = cmd.output().expect("ratesim runs");
    assert!(
        out.status.success(),
        "exit {:?}; stderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("stdout is UTF-8")
}

// Item 7.1: `show NAME` prints every built-in's TOML byte for byte as shipped.
#[test]
fn show_prints_every_built_in_exactly_as_shipped() {
    let tmp = tempfile::tempdir().unwrap();
    for name in SHIPPED {
        let out = ratesim_in(tmp.path())
            .args(["show", name])
            .output()
            .unwrap();
        assert!(out.status.success(), "show {name}");
        let shipped = read(&manifest_dir().join(format!("scenarios/{name}.toml")));
        assert!(out.stdout == shipped, "show {name} differs from the file");
    }
}

// Item 7.1: the trace scenario's extra file is named, on stderr so that
// stdout stays the exact TOML.
#[test]
fn show_names_the_trace_the_trace_scenario_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let out = ratesim_in(tmp.path())
        .args(["show", "trace"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("traces/sample.csv"), "{stderr}");
    assert!(stderr.contains("ratesim init trace"), "{stderr}");
    let out = ratesim_in(tmp.path())
        .args(["show", "boundary"])
        .output()
        .unwrap();
    assert!(
        out.stderr.is_empty(),
        "a scenario without files needs no note"
    );
}

// Item 7.1: an unknown name is bad input that lists the built-ins.
#[test]
fn show_and_init_of_an_unknown_name_list_the_built_ins() {
    let tmp = tempfile::tempdir().unwrap();
    for cmd in ["show", "init"] {
        assert_input_error(
            ratesim_in(tmp.path()).args([cmd, "nope"]),
            &["\"nope\"", "boundary", "retry-storm", "trace"],
        );
    }
    assert!(entries(tmp.path()).is_empty(), "nothing is written");
}

// Item 7.2: init writes NAME.toml in the current directory, says so, and
// names the command to run next.
#[test]
fn init_writes_the_scenario_and_names_the_next_command() {
    let tmp = tempfile::tempdir().unwrap();
    let text = stdout(ratesim_in(tmp.path()).args(["init", "boundary"]));
    assert_same_file(
        &tmp.path().join("boundary.toml"),
        &manifest_dir().join("scenarios/boundary.toml"),
    );
    assert!(text.contains("wrote boundary.toml"), "{text}");
    assert!(text.contains("ratesim run boundary.toml"), "{text}");
    assert!(text.contains("output/boundary"), "{text}");
    assert_eq!(
        entries(tmp.path()),
        ["boundary.toml".to_string()].into_iter().collect()
    );
}

// Item 7.2: the trace scenario's CSV is written beside it, at the relative
// path its `path` names, wherever FILE is.
#[test]
fn init_writes_the_trace_beside_the_scenario() {
    let tmp = tempfile::tempdir().unwrap();
    let text = stdout(ratesim_in(tmp.path()).args(["init", "trace", "replay/t.toml"]));
    let dir = tmp.path().join("replay");
    assert_same_file(
        &dir.join("t.toml"),
        &manifest_dir().join("scenarios/trace.toml"),
    );
    assert_same_file(
        &dir.join("traces/sample.csv"),
        &manifest_dir().join("scenarios/traces/sample.csv"),
    );
    assert!(text.contains("wrote replay/t.toml"), "{text}");
    assert!(text.contains("wrote replay/traces/sample.csv"), "{text}");
    assert!(text.contains("ratesim run replay/t.toml"), "{text}");
}

// Item 7.2: FILE may be a directory: NAME.toml goes inside it.
#[test]
fn init_into_a_directory_writes_name_toml_inside_it() {
    let tmp = tempfile::tempdir().unwrap();
    fs::create_dir(tmp.path().join("exp")).unwrap();
    stdout(ratesim_in(tmp.path()).args(["init", "steady", "exp"]));
    assert_same_file(
        &tmp.path().join("exp/steady.toml"),
        &manifest_dir().join("scenarios/steady.toml"),
    );
    // A FILE ending in / is a directory too, created if need be.
    stdout(ratesim_in(tmp.path()).args(["init", "trace", "new/"]));
    assert!(tmp.path().join("new/trace.toml").is_file());
    assert!(tmp.path().join("new/traces/sample.csv").is_file());
}

// Item 7.2: never overwrite an existing file — exit 2 naming the file, and
// nothing written (not even the files that did not exist yet).
#[test]
fn init_refuses_to_overwrite_without_force() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("boundary.toml"), "mine").unwrap();
    assert_input_error(
        ratesim_in(tmp.path()).args(["init", "boundary"]),
        &["boundary.toml", "already exists"],
    );
    assert_eq!(read_text(&tmp.path().join("boundary.toml")), "mine");

    // The scenario is new but its trace is not: nothing at all is written.
    fs::create_dir(tmp.path().join("traces")).unwrap();
    fs::write(tmp.path().join("traces/sample.csv"), "mine").unwrap();
    assert_input_error(
        ratesim_in(tmp.path()).args(["init", "trace"]),
        &["traces/sample.csv", "already exists"],
    );
    assert!(!tmp.path().join("trace.toml").exists());
    assert_eq!(read_text(&tmp.path().join("traces/sample.csv")), "mine");
}

// Issue 21: --force overwrites only a file that holds exactly what init
// writes — never a file the user wrote or edited, never a directory.
#[test]
fn init_force_overwrites_only_what_init_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("boundary.toml"), "mine").unwrap();
    assert_input_error(
        ratesim_in(tmp.path()).args(["init", "boundary", "--force"]),
        &["boundary.toml", "not a file ratesim init wrote"],
    );
    assert_eq!(read_text(&tmp.path().join("boundary.toml")), "mine");
    // A built-in written by init, unedited, may be replaced by another.
    fs::remove_file(tmp.path().join("boundary.toml")).unwrap();
    stdout(ratesim_in(tmp.path()).args(["init", "steady", "boundary.toml"]));
    stdout(ratesim_in(tmp.path()).args(["init", "boundary", "--force"]));
    assert_same_file(
        &tmp.path().join("boundary.toml"),
        &manifest_dir().join("scenarios/boundary.toml"),
    );
    fs::create_dir_all(tmp.path().join("traces/sample.csv")).unwrap();
    assert_input_error(
        ratesim_in(tmp.path()).args(["init", "trace", "--force"]),
        &["traces/sample.csv", "directory"],
    );
    assert!(!tmp.path().join("trace.toml").exists());
}

// Items 7.2 and 7.4: the written scenarios run with `ratesim run FILE` from
// another directory — the trace resolves against the scenario file, the
// results land under the current directory — and give the built-in's
// results exactly.
#[test]
fn initialised_scenarios_run_from_another_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, work) = (tmp.path().join("home"), tmp.path().join("work"));
    fs::create_dir_all(&home).unwrap();
    fs::create_dir_all(&work).unwrap();
    for name in ["trace", "boundary"] {
        stdout(ratesim_in(&home).args(["init", name]));
        let file = home.join(format!("{name}.toml"));
        ratesim_in(&work)
            .arg("run")
            .arg(&file)
            .args(["--quiet", "--no-plots"])
            .assert()
            .success();
        let out = work.join("output").join(name);
        assert_run_dir(&out);
        assert!(
            !home.join("output").exists(),
            "results go under the current directory, not the scenario's"
        );
        let builtin = tmp.path().join(format!("builtin-{name}"));
        ratesim_in(&work)
            .args(["run", name, "--quiet", "--no-plots", "--out"])
            .arg(&builtin)
            .assert()
            .success();
        assert_same_file(&out.join("summary.csv"), &builtin.join("summary.csv"));
    }
}

// Item 7.4: `[output] dir` is relative to the current directory, not to
// the scenario file.
#[test]
fn output_dir_is_relative_to_the_current_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, work) = (tmp.path().join("home"), tmp.path().join("work"));
    fs::create_dir_all(&home).unwrap();
    fs::create_dir_all(&work).unwrap();
    fs::write(
        home.join("s.toml"),
        format!("{BASE}\n[output]\ndir = \"runs/s\"\n"),
    )
    .unwrap();
    ratesim_in(&work)
        .args(["run", "../home/s.toml", "--quiet", "--no-plots"])
        .assert()
        .success();
    assert_run_dir(&work.join("runs/s"));
    assert!(!home.join("runs").exists());
}

// Item 7.5: a ramp of one step is refused (exit 2) naming the field, saying
// it is steady traffic and suggesting pattern = "steady"; two steps run.
#[test]
fn a_ramp_of_one_step_is_refused_in_favour_of_steady() {
    let tmp = tempfile::tempdir().unwrap();
    let ramp = |steps: u32| {
        base_replacing(
            "pattern = \"steady\"\nrate = \"5/1s\"",
            &format!("pattern = \"ramp\"\nfrom = \"2/1s\"\nto = \"8/1s\"\nsteps = {steps}"),
        )
    };
    fs::write(tmp.path().join("one.toml"), ramp(1)).unwrap();
    let stderr = assert_input_error(
        ratesim_in(tmp.path()).args(["run", "one.toml", "--quiet"]),
        &["traffic[0].steps", "steady", "pattern = \"steady\"", "2/1s"],
    );
    assert!(stderr.contains("rate = \"2/1s\""), "{stderr}");
    assert!(!tmp.path().join("output").exists(), "nothing is written");
    fs::write(tmp.path().join("two.toml"), ramp(2)).unwrap();
    ratesim_in(tmp.path())
        .args(["validate", "two.toml"])
        .assert()
        .success();
}

/// Text that names a file only the repository has.
fn repository_paths(text: &str) -> Vec<&str> {
    [
        "scenarios/",
        "src/",
        "benches/",
        "tests/",
        "conformance/",
        "docs/",
    ]
    .into_iter()
    .filter(|p| text.contains(p))
    .collect()
}

// Item 7.3: the walkthroughs point at `ratesim init`, not at a path in the
// repository.
#[test]
fn explain_texts_name_no_repository_path() {
    let tmp = tempfile::tempdir().unwrap();
    for topic in ["boundary", "gcra", "plans"] {
        let text = stdout(
            ratesim_in(tmp.path())
                .args(["explain", topic, "--out"])
                .arg(tmp.path().join(topic)),
        );
        assert!(
            repository_paths(&text).is_empty(),
            "explain {topic} names {:?}:\n{text}",
            repository_paths(&text)
        );
        if topic == "boundary" {
            assert!(text.contains("ratesim init boundary"), "{text}");
        }
    }
}

// Item 7.3: neither `list` nor any command's --help names a repository
// path, and they mention show and init.
#[test]
fn list_and_help_name_no_repository_path() {
    let tmp = tempfile::tempdir().unwrap();
    let mut texts = vec![(
        "list".to_string(),
        stdout(ratesim_in(tmp.path()).arg("list")),
    )];
    for cmd in [
        None,
        Some("run"),
        Some("validate"),
        Some("list"),
        Some("plot"),
        Some("explain"),
        Some("show"),
        Some("init"),
    ] {
        let mut c = ratesim_in(tmp.path());
        c.args(cmd).arg("--help");
        texts.push((format!("{cmd:?} --help"), stdout(&mut c)));
    }
    for (what, text) in &texts {
        assert!(
            repository_paths(text).is_empty(),
            "{what} names {:?}:\n{text}",
            repository_paths(text)
        );
    }
    assert!(texts[0].1.contains("ratesim init NAME"), "{}", texts[0].1);
    let top = &texts[1].1;
    assert!(top.contains("show") && top.contains("init"), "{top}");
    let run = &texts[2].1;
    assert!(
        run.contains("relative to the scenario file") && run.contains("current directory"),
        "run --help explains both kinds of path:\n{run}"
    );
}

#[test]
fn run_help_names_every_chart_a_run_can_draw() {
    // Truthful-outputs issue 6: `run --help` omitted clients.png and
    // deployment.png.
    let out = ratesim().args(["run", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout).replace('\n', " ");
    for chart in ratesim::report::charts::CHARTS {
        let stem = chart.file.trim_end_matches(".png");
        assert!(
            help.contains(stem),
            "run --help does not name {}:\n{help}",
            chart.file
        );
    }
}
