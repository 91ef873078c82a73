//! The PNG charts, `summary.md`, `ratesim plot`, `ratesim explain` and the
//! progress bar, end to end through the binary.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use ratesim::report::charts::{clients, deployment, zoom, RunData, CHARTS};

fn ratesim() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ratesim"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

/// Runs `cmd` with stdout and stderr piped and asserts it succeeded with
/// nothing on stderr but plain progress lines — in particular no progress
/// bar, since stderr is not a terminal. (A run longer than five seconds
/// prints a `ratesim: … simulated …` line every five seconds.)
fn succeeds_quietly(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("ratesim runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{cmd:?} failed:\n{stderr}");
    assert!(
        stderr
            .lines()
            .all(|l| l.starts_with("ratesim: ") && l.contains(" simulated · ")),
        "{cmd:?} wrote more than progress lines to a stderr that is not a terminal:\n{stderr}"
    );
    assert!(
        !stderr.contains('\r') && !stderr.contains('\x1b'),
        "{cmd:?} drew a bar on a stderr that is not a terminal:\n{stderr}"
    );
    out
}

/// A temporary directory, removed when the test ends. (Not a fixed path
/// under `target/`: two test runs at once must not clear each other's.)
fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// Every scenario shipped in `scenarios/`.
fn shipped() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut all: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    all.sort();
    assert!(all.len() >= 4, "expected the shipped scenarios in {dir:?}");
    all
}

/// The built-in boundary scenario, run with charts into `dir`.
fn run_boundary(dir: &Path) {
    succeeds_quietly(
        ratesim()
            .args(["run", "boundary", "--quiet", "--out"])
            .arg(dir),
    );
}

/// A decoded PNG: width, height and its pixels' luminance.
struct Image {
    width: u32,
    height: u32,
    luma: Vec<f64>,
}

fn decode(path: &Path) -> Image {
    let file = fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .unwrap_or_else(|e| panic!("{} is not a PNG: {e}", path.display()));
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader
        .next_frame(&mut buf)
        .unwrap_or_else(|e| panic!("{} does not decode: {e}", path.display()));
    assert_eq!(info.bit_depth, png::BitDepth::Eight, "{}", path.display());
    let channels = info.color_type.samples();
    let luma = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|p| match p {
            [r, g, b, ..] => 0.299 * *r as f64 + 0.587 * *g as f64 + 0.114 * *b as f64,
            [v, ..] => *v as f64,
            [] => 0.0,
        })
        .collect();
    Image {
        width: info.width,
        height: info.height,
        luma,
    }
}

/// Asserts `path` is a PNG of `size` that shows something: its luminance
/// varies, and more than a sliver of it is not background.
fn assert_chart(path: &Path, size: (u32, u32)) {
    let img = decode(path);
    assert_eq!((img.width, img.height), size, "{}", path.display());
    let n = img.luma.len() as f64;
    let mean = img.luma.iter().sum::<f64>() / n;
    let variance = img.luma.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    let inked = img.luma.iter().filter(|&&v| v < 250.0).count() as f64 / n;
    assert!(
        variance > 300.0,
        "{} looks blank: luminance variance {variance:.1}",
        path.display()
    );
    assert!(
        inked > 0.03,
        "{} looks blank: only {:.1}% of it is not background",
        path.display(),
        100.0 * inked
    );
}

/// The image links of a `summary.md`.
fn links(md: &str) -> Vec<String> {
    md.split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .map(str::to_string)
        .collect()
}

/// Copies the run directory's data files (no charts, no summary.md).
fn copy_data(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for f in ["summary.json", "summary.csv", "timeseries.csv"] {
        fs::copy(from.join(f), to.join(f)).unwrap();
    }
    // summary.md reads these too (who would be limited, the agreement),
    // and report.html the sources and how the run was asked for.
    for f in [
        "top_keys.csv",
        "agreement.csv",
        "disagreements.csv",
        "sources.csv",
        "run.json",
    ] {
        if from.join(f).is_file() {
            fs::copy(from.join(f), to.join(f)).unwrap();
        }
    }
}

fn assert_same_bytes(a: &Path, b: &Path) {
    let (x, y) = (fs::read(a).unwrap(), fs::read(b).unwrap());
    assert!(
        x == y,
        "{} and {} differ ({} and {} bytes)",
        a.display(),
        b.display(),
        x.len(),
        y.len()
    );
}

/// Whether `file` has something to show for `data`: the conditional charts
/// are drawn only then (`delay.png` when something was delayed,
/// `clients.png` when clients retried or share a key, `deployment.png` when
/// a limiter is deployed, `backend.png` with a `[backend]`); every other
/// chart always.
fn expected(file: &str, data: &RunData) -> bool {
    match file {
        "delay.png" => data.limiters.iter().any(|l| l.delayed > 0),
        "clients.png" => clients::clients_series(data).shown(),
        "deployment.png" => deployment::deployment_series(data).shown(),
        "backend.png" => data
            .limiters
            .iter()
            .any(|l| l.series.iter().any(|b| b.in_flight_max.is_some())),
        _ => true,
    }
}

/// Every chart of one run directory: written at its size and not blank
/// when it has something to show, and not written at all otherwise.
/// Returns the files written.
fn assert_charts(name: &str, dir: &Path) -> Vec<&'static str> {
    let data = RunData::load(dir).unwrap();
    let mut written = Vec::new();
    for chart in CHARTS {
        let path = dir.join(chart.file);
        if !expected(chart.file, &data) {
            assert!(
                !path.exists(),
                "{name}: {} has nothing to show, yet it was written",
                chart.file
            );
            continue;
        }
        assert!(path.is_file(), "{name}: no {}", chart.file);
        assert_chart(&path, chart.size);
        written.push(chart.file);
    }
    written
}

/// `summary.md` holds the table and links exactly the charts present,
/// beside it.
fn assert_summary_md(name: &str, dir: &Path) {
    let md = fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.starts_with(&format!("# {name}")), "{name}:\n{md}");
    assert!(md.contains("| limiter | algorithm |"), "{name}:\n{md}");
    let linked = links(&md);
    for chart in CHARTS {
        assert_eq!(
            linked.iter().any(|l| l == chart.file),
            dir.join(chart.file).exists(),
            "{name}: summary.md and the files disagree about {}",
            chart.file
        );
    }
    for l in &linked {
        assert!(
            !l.contains('/'),
            "{name}: link {l} is not beside summary.md"
        );
        assert!(
            dir.join(l).is_file(),
            "{name}: summary.md links a missing {l}"
        );
    }
}

/// `ratesim plot` on a copy of the run's data files draws the same bytes.
fn assert_plot_reproduces(name: &str, dir: &Path, copy: &Path) {
    copy_data(dir, copy);
    let out = succeeds_quietly(ratesim().arg("plot").arg(copy));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("peak.png"), "{stdout}");
    for chart in CHARTS {
        let (a, b) = (dir.join(chart.file), copy.join(chart.file));
        assert_eq!(a.exists(), b.exists(), "{name}: {}", chart.file);
        if a.exists() {
            assert_same_bytes(&a, &b);
        }
    }
    assert_same_bytes(&dir.join("summary.md"), &copy.join("summary.md"));
    assert_same_bytes(&dir.join("report.html"), &copy.join("report.html"));
    let page = fs::read_to_string(copy.join("report.html")).unwrap();
    crate::report::assert_self_contained(&page);
    crate::report::assert_every_png_inline(copy, &page);
}

/// One test for all shipped scenarios (in parallel), so each is simulated
/// once: every chart is written at its stated size and is not blank,
/// `summary.md` links them, and `ratesim plot` redraws them byte for byte.
/// Every run's stderr is piped and must stay empty (no progress bar off a
/// terminal).
#[test]
fn every_shipped_scenario_gets_every_chart_and_plot_redraws_them_byte_for_byte() {
    let tmp = scratch();
    let root = tmp.path();
    let drawn = std::sync::Mutex::new(Vec::new());
    let outages = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for path in shipped() {
            let (drawn, outages) = (&drawn, &outages);
            s.spawn(move || {
                let name = path.file_stem().unwrap().to_string_lossy().into_owned();
                let dir = root.join("runs").join(&name);
                succeeds_quietly(ratesim().arg("run").arg(&path).arg("--out").arg(&dir));
                let written = assert_charts(&name, &dir);
                assert_summary_md(&name, &dir);
                assert_plot_reproduces(&name, &dir, &root.join("plot").join(&name));
                drawn.lock().unwrap().extend(written);
                let data = RunData::load(&dir).unwrap();
                if data
                    .limiters
                    .iter()
                    .any(|l| !l.deployment.outages.is_empty())
                {
                    outages.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            });
        }
    });
    let drawn = drawn.into_inner().unwrap();
    for chart in CHARTS {
        assert!(
            drawn.contains(&chart.file),
            "no shipped scenario draws {}: it is untested",
            chart.file
        );
    }
    assert!(
        outages.into_inner() > 0,
        "no shipped scenario has a store outage: timeline.png's shading untested"
    );
}

#[test]
fn a_run_without_plots_draws_none_and_plot_then_draws_what_run_would_have() {
    let tmp = scratch();
    let with_plots = tmp.path().join("with-plots");
    run_boundary(&with_plots);
    let dir = tmp.path().join("no-plots");
    succeeds_quietly(
        ratesim()
            .args([
                "run",
                "scenarios/boundary.toml",
                "--no-plots",
                "--quiet",
                "--out",
            ])
            .arg(&dir),
    );
    for chart in CHARTS {
        assert!(
            !dir.join(chart.file).exists(),
            "--no-plots drew {}",
            chart.file
        );
    }
    let md = fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(links(&md).is_empty(), "no charts, no links:\n{md}");

    succeeds_quietly(ratesim().args(["plot", "--quiet"]).arg(&dir));
    for chart in CHARTS {
        let a = with_plots.join(chart.file);
        if a.exists() {
            assert_same_bytes(&a, &dir.join(chart.file));
        }
    }
    assert_same_bytes(&with_plots.join("summary.md"), &dir.join("summary.md"));
}

fn assert_bad_input(cmd: &mut Command, needles: &[&str]) {
    let out = cmd.output().expect("ratesim runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "expected exit 2; stderr:\n{stderr}"
    );
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    for n in needles {
        assert!(
            stderr.contains(n),
            "stderr does not mention {n:?}:\n{stderr}"
        );
    }
}

#[test]
fn plot_on_something_that_is_not_a_run_directory_is_bad_input() {
    let tmp = scratch();
    let empty = tmp.path();
    assert_bad_input(ratesim().arg("plot").arg(empty), &["summary.json"]);
    assert!(
        fs::read_dir(empty).unwrap().next().is_none(),
        "plot wrote into a directory it rejected"
    );
    assert_bad_input(
        ratesim().arg("plot").arg(empty.join("missing")),
        &["no such directory"],
    );
    fs::write(empty.join("summary.json"), "{\"limiters\": 3}").unwrap();
    assert_bad_input(ratesim().arg("plot").arg(empty), &["summary.json"]);
}

#[test]
fn plot_reads_a_summary_with_fields_it_does_not_know() {
    let tmp = scratch();
    let boundary = tmp.path().join("boundary");
    run_boundary(&boundary);
    let copy = tmp.path().join("copy");
    copy_data(&boundary, &copy);
    let mut json: serde_json::Value =
        serde_json::from_slice(&fs::read(copy.join("summary.json")).unwrap()).unwrap();
    json["a_metric_from_the_future"] = serde_json::json!({"x": 1});
    for l in json["limiters"].as_array_mut().unwrap() {
        l["another_new_metric"] = serde_json::json!(0.5);
        // A summary from before the client metrics.
        for old in [
            "gave_up",
            "logical_requests",
            "retry_amplification",
            "client_pass_ratio_spread",
            "fairness_jain",
        ] {
            l.as_object_mut().unwrap().remove(old);
        }
    }
    fs::write(copy.join("summary.json"), json.to_string()).unwrap();
    succeeds_quietly(ratesim().args(["plot", "--quiet"]).arg(&copy));
    assert!(copy.join("outcomes.png").is_file());
    assert!(
        !copy.join("clients.png").exists(),
        "no client metrics, nothing to show"
    );
}

#[test]
fn no_progress_bar_is_drawn_when_stderr_is_not_a_terminal() {
    // Long enough (several million events) that a terminal would show the
    // bar, which appears after a second.
    let tmp = scratch();
    let dir = tmp.path();
    let scenario = dir.join("long.toml");
    fs::write(
        &scenario,
        "name = \"long\"\nduration = \"60s\"\n[defaults]\nlimit = 10\nwindow = \"1s\"\n\
         [[limiter]]\nalgorithm = \"token_bucket\"\n\
         [[traffic]]\npattern = \"steady\"\nclients = 5000\nrate = \"20/1s\"\n",
    )
    .unwrap();
    let start = Instant::now();
    let out = succeeds_quietly(
        ratesim()
            .arg("run")
            .arg(&scenario)
            .arg("--no-plots")
            .arg("--out")
            .arg(dir.join("out")),
    );
    let took = start.elapsed();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("token_bucket"),
        "the table still prints"
    );
    eprintln!("the piped run took {took:?}");
}

#[test]
fn explain_boundary_names_the_worst_window_and_draws_its_close_up() {
    let tmp = scratch();
    let dir = tmp.path().join("boundary");
    let out = succeeds_quietly(ratesim().args(["explain", "boundary", "--out"]).arg(&dir));
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "(0s, 1s]",
        "200 requests passed",
        "0.999s",
        "2× the limit",
        "fixed_window",
        "sliding_log",
        "token_bucket",
        "reset",
        "burst capacity",
        "remembers",
    ] {
        assert!(text.contains(needle), "no {needle:?} in:\n{text}");
    }
    assert_chart(&dir.join(zoom::FILE), zoom::SIZE);
    for chart in ["timeline.png", "peak.png", "outcomes.png", "state.png"] {
        assert!(dir.join(chart).is_file(), "no {chart} beside the close-up");
    }
    let md = fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(links(&md).iter().any(|l| l == zoom::FILE), "{md}");
}

#[test]
fn explain_gcra_shows_every_decision_is_the_token_buckets() {
    let tmp = scratch();
    let dir = tmp.path().join("gcra");
    let out = succeeds_quietly(ratesim().args(["explain", "gcra", "--out"]).arg(&dir));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("decisions are identical"), "{text}");
    assert!(
        text.contains("16 bytes") && text.contains("8 bytes"),
        "{text}"
    );
    // In Redis: GCRA's one integer against the token bucket's hash.
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("millions of keys in Redis")
            && flat.contains("stores as an integer in 72 bytes")
            && flat.contains("128 bytes a key against 160"),
        "{text}"
    );
    assert!(dir.join("outcomes.png").is_file());
}

/// `explain plans` says which layer rejects whom with the run's own
/// numbers: each of its counts is a cell of the run's sources.csv.
#[test]
fn explain_plans_names_the_layer_behind_each_sources_rejections() {
    let tmp = scratch();
    let dir = tmp.path().join("plans");
    let out = succeeds_quietly(ratesim().args(["explain", "plans", "--out"]).arg(&dir));
    let text = String::from_utf8_lossy(&out.stdout).replace('\n', " ");
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let sources = fs::read_to_string(dir.join("sources.csv")).unwrap();
    let cell = |limiter: &str, source: &str, col: usize| -> String {
        sources
            .lines()
            .find(|l| l.starts_with(&format!("{limiter},{source},")))
            .unwrap()
            .split(',')
            .nth(col)
            .unwrap()
            .to_string()
    };
    // columns: 2 clients, 3 attempts, 7 rejected, 10 clients_limited
    let with_commas = |n: String| {
        let n: u64 = n.parse().unwrap();
        if n >= 1000 {
            format!("{},{:03}", n / 1000, n % 1000)
        } else {
            n.to_string()
        }
    };
    let free_scrapers = format!(
        "free rejects requests of free-scrapers: {} of {} attempts",
        with_commas(cell("free", "free-scrapers", 7)),
        with_commas(cell("plans", "free-scrapers", 3))
    );
    assert!(text.contains(&free_scrapers), "{free_scrapers}\n{text}");
    let global_free = format!(
        "global rejects requests of free: {} of {} attempts ({} of {} clients)",
        with_commas(cell("global", "free", 7)),
        with_commas(cell("plans", "free", 3)),
        cell("global", "free", 10),
        cell("plans", "free", 2)
    );
    assert!(text.contains(&global_free), "{global_free}\n{text}");
    assert!(text.contains("pro rejects nobody"), "{text}");
    assert!(
        text.contains(&format!(
            "global was asked about only {} of the {} attempts of free-scrapers",
            with_commas(cell("global", "free-scrapers", 3)),
            with_commas(cell("plans", "free-scrapers", 3))
        )),
        "{text}"
    );
    assert!(dir.join("outcomes.png").is_file());
}

#[test]
fn explain_an_unknown_topic_is_bad_input_naming_the_topics() {
    let tmp = scratch();
    let dir = tmp.path();
    assert_bad_input(
        ratesim()
            .args(["explain", "herds", "--out"])
            .arg(dir.join("out")),
        &["herds", "boundary", "gcra"],
    );
    assert!(!dir.join("out").exists());
}

/// A scenario of seven limiters (every algorithm but the shaper's twin)
/// replaying `trace.csv` beside it.
const SEVEN_LIMITERS: &str = r#"name = "long"
[defaults]
limit = 10
window = "1s"
[[limiter]]
algorithm = "token_bucket"
[[limiter]]
algorithm = "fixed_window"
[[limiter]]
algorithm = "sliding_log"
[[limiter]]
algorithm = "sliding_counter"
[[limiter]]
algorithm = "gcra"
[[limiter]]
algorithm = "leaky_bucket"
[[limiter]]
algorithm = "interval_bucket"
[[traffic]]
pattern = "trace"
path = "trace.csv"
"#;

// Regression (robustness issue item 8): the time series grew with duration
// ÷ resolution × limiters, not with traffic — a 4-row trace over 10^9 s with
// 7 limiters either failed ("gives 10000000000 time-series buckets") or,
// with a coarser window, took 1.8 GB. The default resolution now keeps every
// series at most `DEFAULT_BUCKETS` buckets, and an explicit resolution is
// capped at `MAX_BUCKETS`.
#[test]
fn a_four_row_trace_over_a_billion_seconds_runs_quickly_in_a_bounded_series() {
    use ratesim::scenario::{DEFAULT_BUCKETS, MAX_BUCKETS};
    let tmp = scratch();
    let dir = tmp.path();
    fs::write(
        dir.join("trace.csv"),
        "time,client\n0,a\n0.5,b\n1,a\n1000000000,a\n",
    )
    .unwrap();
    fs::write(dir.join("long.toml"), SEVEN_LIMITERS).unwrap();
    let out = dir.join("out");
    let start = Instant::now();
    succeeds_quietly(
        ratesim()
            .arg("run")
            .arg(dir.join("long.toml"))
            .args(["--quiet", "--out"])
            .arg(&out),
    );
    let took = start.elapsed();
    assert!(took.as_secs() < 30, "the run took {took:?}");
    let csv = fs::read_to_string(out.join("timeseries.csv")).unwrap();
    let rows = csv.lines().count() - 1;
    assert!(
        rows as u64 <= 7 * DEFAULT_BUCKETS,
        "{rows} rows for 7 limiters: more than {DEFAULT_BUCKETS} each"
    );
    let data = RunData::load(&out).unwrap();
    assert!(
        data.resolution_ns >= 100_000_000_000_000,
        "{}",
        data.resolution_ns
    );
    assert!(out.join("timeline.png").is_file());

    // An explicit resolution that would plan a million buckets is refused.
    fs::write(
        dir.join("fine.toml"),
        format!("{SEVEN_LIMITERS}[output]\nresolution = \"1000s\"\n"),
    )
    .unwrap();
    assert_bad_input(
        ratesim()
            .arg("run")
            .arg(dir.join("fine.toml"))
            .args(["--quiet", "--out"])
            .arg(dir.join("fine")),
        &["output.resolution", &MAX_BUCKETS.to_string()],
    );
}

// Regression (robustness issue item 9): `ratesim plot` on a crafted
// summary.json (a state size of 1e308 bytes per key: the log axis reached
// infinity) hung for over ten minutes, after it had already overwritten
// timeline.png and others — half the run directory redrawn, half not.
// Values read back are now checked like any input, and charts are drawn
// beside the run directory and moved into place only when all succeeded.
#[test]
fn plot_on_a_crafted_summary_fails_fast_as_bad_input_and_leaves_the_charts_alone() {
    let tmp = scratch();
    let dir = tmp.path().join("boundary");
    run_boundary(&dir);
    let before: Vec<(PathBuf, Vec<u8>)> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "png" || x == "md"))
        .map(|p| (p.clone(), fs::read(&p).unwrap()))
        .collect();
    assert!(before.len() >= 5);
    let original = fs::read(dir.join("summary.json")).unwrap();
    let mut json: serde_json::Value = serde_json::from_slice(&original).unwrap();
    let crafted = [
        ("state_bytes_per_key_mean", serde_json::json!(1e308)),
        ("delay_p99_ms", serde_json::json!(-1.0)),
        ("attempts", serde_json::json!(u64::MAX)),
    ];
    for (field, value) in crafted {
        let mut j = json.clone();
        j["limiters"][2][field] = value;
        fs::write(dir.join("summary.json"), j.to_string()).unwrap();
        let start = Instant::now();
        assert_bad_input(
            ratesim().args(["plot", "--quiet"]).arg(&dir),
            &["summary.json", &format!("limiters[2].{field}")],
        );
        assert!(
            start.elapsed().as_secs() < 10,
            "{field}: {:?}",
            start.elapsed()
        );
    }
    // A resolution of 1 ns over the run: ten billion buckets.
    json["resolution_ns"] = serde_json::json!(1);
    fs::write(dir.join("summary.json"), json.to_string()).unwrap();
    assert_bad_input(
        ratesim().args(["plot", "--quiet"]).arg(&dir),
        &["summary.json", "resolution_ns"],
    );
    for (path, bytes) in &before {
        assert!(
            fs::read(path).unwrap() == *bytes,
            "{} changed",
            path.display()
        );
    }
    let leftovers: Vec<_> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "boundary")
        .collect();
    assert!(leftovers.is_empty(), "left behind: {leftovers:?}");
    // The original summary plots again.
    fs::write(dir.join("summary.json"), &original).unwrap();
    succeeds_quietly(ratesim().args(["plot", "--quiet"]).arg(&dir));
}

// Regression (chart details issue item 6): summary.md's captions were fixed
// text — the `trace` scenario's mentioned a fixed window and store outages
// it does not have. They are now written from the run's own data.
#[test]
fn summary_md_captions_say_only_what_the_run_holds_and_quote_its_numbers() {
    let tmp = scratch();
    let trace = tmp.path().join("trace");
    succeeds_quietly(
        ratesim()
            .args(["run", "trace", "--quiet", "--out"])
            .arg(&trace),
    );
    let md = fs::read_to_string(trace.join("summary.md")).unwrap();
    let charts = &md[md.find("## Charts").expect("a Charts section")..];
    for absent in ["fixed window", "fixed_window", "outage", "(2×", "boundar"] {
        assert!(!charts.contains(absent), "{absent:?} in:\n{charts}");
    }
    let data = RunData::load(&trace).unwrap();
    let over = data
        .limiters
        .iter()
        .find(|l| l.peak_in_window > data.limit)
        .unwrap();
    assert!(
        charts.contains(&format!("{} {}", over.name, over.peak_in_window)),
        "{charts}"
    );

    let boundary = tmp.path().join("boundary");
    run_boundary(&boundary);
    let md = fs::read_to_string(boundary.join("summary.md")).unwrap();
    assert!(md.contains("fixed_window 200 (2×)"), "{md}");
}

// Regression (chart details issue item 6): CJK and emoji in names were
// drawn as empty boxes. The charts draw them as `?` and summary.md says so.
#[test]
fn names_the_font_cannot_draw_fall_back_visibly() {
    let tmp = scratch();
    let dir = tmp.path();
    fs::write(
        dir.join("s.toml"),
        "name = \"限流 🚀\"\nduration = \"2s\"\n[defaults]\nlimit = 5\nwindow = \"1s\"\n\
         [[limiter]]\nname = \"令牌桶\"\nalgorithm = \"token_bucket\"\n\
         [[traffic]]\npattern = \"steady\"\nrate = \"10/1s\"\n",
    )
    .unwrap();
    let out = dir.join("out");
    succeeds_quietly(
        ratesim()
            .arg("run")
            .arg(dir.join("s.toml"))
            .args(["--quiet", "--out"])
            .arg(&out),
    );
    let md = fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.starts_with("# 限流 🚀"),
        "summary.md keeps the names:\n{md}"
    );
    assert!(md.contains("no glyph for 6 characters"), "{md}");
    assert!(md.contains("as `?`"), "{md}");
    assert_chart(&out.join("peak.png"), (1200, 700));
}

/// A run directory written before `worst_key_in_window` and `overshoot`
/// (and the backend's columns after them) existed still plots: its
/// timeline shows throughput, labelled so.
#[test]
fn a_time_series_without_the_per_key_columns_still_plots() {
    let tmp = scratch();
    let dir = tmp.path().join("distributed");
    succeeds_quietly(
        ratesim()
            .args(["run", "distributed", "--quiet", "--no-plots", "--out"])
            .arg(&dir),
    );
    let csv = fs::read_to_string(dir.join("timeseries.csv")).unwrap();
    let old: String = csv
        .lines()
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            format!("{}\n", cells[..cells.len() - 8].join(","))
        })
        .collect();
    assert!(old.starts_with("limiter,bucket_start_ns,") && !old.contains("worst_key"));
    fs::write(dir.join("timeseries.csv"), old).unwrap();
    succeeds_quietly(ratesim().args(["plot", "--quiet"]).arg(&dir));
    assert_chart(&dir.join("timeline.png"), (1200, 900));
    let md = fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("throughput"), "{md}");
}

/// The report crate's unit tests (and `explain`'s) draw from
/// `crates/report/fixtures/boundary`: it must be what `ratesim run
/// boundary` writes today, byte for byte.
#[test]
fn the_report_crates_boundary_fixture_is_what_run_boundary_writes() {
    let tmp = scratch();
    let out = tmp.path().join("boundary");
    succeeds_quietly(
        ratesim()
            .args(["run", "boundary", "--no-plots", "--quiet", "--out"])
            .arg(&out),
    );
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/report/fixtures/boundary");
    for file in ["summary.json", "timeseries.csv"] {
        assert!(
            fs::read(out.join(file)).unwrap() == fs::read(fixture.join(file)).unwrap(),
            "{file} differs from {}: copy the new one there",
            fixture.join(file).display()
        );
    }
}
