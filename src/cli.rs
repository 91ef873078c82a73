//! Command-line definitions (clap) and nothing else.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "ratesim",
    version,
    about = "Simulate rate-limiting algorithms exactly, on a virtual clock, side by side",
    long_about = "ratesim drives traffic through token bucket, interval bucket, GCRA, leaky bucket, \
fixed window, sliding log and sliding counter limiters on a virtual nanosecond clock, and shows what \
each admits, delays and rejects, and how much state it keeps.",
    after_help = "Examples:\n  ratesim run boundary                 the flagship: a fixed window passes 2x its limit\n  ratesim run my.toml --out runs/a --decisions\n  ratesim plot output/boundary         re-render a run directory's charts\n  ratesim explain boundary             a walkthrough of the boundary burst, with its numbers\n  ratesim validate my.toml\n  ratesim list\n  ratesim init boundary                write boundary.toml to edit, then: ratesim run boundary.toml"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a scenario and write its results to a run directory
    #[command(
        after_help = "Examples:\n  ratesim run boundary\n  ratesim run steady.toml --seed 42 --out /tmp/steady   (after `ratesim init steady`)\n  ratesim run poisson --decisions --quiet\n  ratesim run boundary --format json | jq '.limiters[].peak_in_window'\n\nSCENARIO is a path to a .toml file or the name of a built-in scenario (see `ratesim list`).\nThe run directory gets summary.csv, summary.json, timeseries.csv, summary.md, the PNG charts\n(timeline, peak, outcomes, state; delay when something was delayed; clients when clients retried\nor shared a key; deployment when a limiter is deployed; backend with a [backend]), report.html (one self-contained page\nof all of it, unless --no-html), run.json (the command line and the scenario's text) and,\nwith --decisions, decisions.csv.\nA progress bar shows on stderr for runs longer than a second (a progress line every 5 s when\nstderr is not a terminal), unless --quiet. An existing DIR is replaced only if it is empty or\na run directory holding nothing ratesim did not write, and never when it holds the scenario\nor a file the scenario reads: no flag deletes or overwrites a file ratesim did not write.\n\nPaths: a trace's `path` is relative to the scenario file (so a scenario and its trace move\ntogether); `[output] dir` and --out are relative to the current directory, like every path\ngiven on the command line (so results land where you run ratesim).\n\nratesim refuses a run of more than 10^10 decisions, or of more memory than the machine has\navailable (see `ratesim validate`), unless --no-budget."
    )]
    Run(RunArgs),
    /// Check a scenario file without running it
    #[command(
        after_help = "Examples:\n  ratesim validate my.toml\n  ratesim validate boundary\n\nPrints the work the scenario is (attempts, decisions, the most memory its limiters' state\ncan take, and the memory of the whole run) and whether `ratesim run` would refuse it without\n--no-budget: more than 10^10 decisions, or more memory than this machine has available.\nExit status 0 when the scenario is valid, 2 with a message naming the field when not."
    )]
    Validate {
        /// Path to a scenario .toml, or a built-in scenario name
        scenario: String,
    },
    /// List built-in scenarios, algorithms and traffic patterns
    #[command(after_help = "Examples:\n  ratesim list\n  ratesim list | grep bucket")]
    List,
    /// Re-render the charts, summary.md and report.html of a run directory, without re-simulating
    #[command(
        after_help = "Examples:\n  ratesim plot output/boundary\n  ratesim run poisson --no-plots --quiet && ratesim plot output/poisson\n\nReads RUN_DIR/summary.json and RUN_DIR/timeseries.csv and writes the same PNG files\n`ratesim run` writes, byte for byte; summary.md and report.html too, from the directory's\nother files (report.html also after `run --no-html`)."
    )]
    Plot {
        /// A run directory written by `ratesim run`
        run_dir: PathBuf,
        /// Print nothing on success
        #[arg(long, short)]
        quiet: bool,
    },
    /// Walk through one idea with a run of its built-in scenario and its numbers
    #[command(
        after_help = "Topics:\n  boundary          why a fixed window lets through twice its limit (writes boundary-zoom.png)\n  gcra              GCRA decides exactly as a token bucket, in half the state\n  libraries         what Python limits, Redis INCR+EXPIRE, Guava and nginx change in the rules\n  plans             a free plan, a pro plan and a global cap on one request: which layer rejects\n  protect-backend   a spike and a slowdown behind six limiters: which keep the backend's latency down\n\nExamples:\n  ratesim explain boundary\n  ratesim explain gcra --out /tmp/gcra\n\nThe run directory (default output/<topic>) gets the usual results and charts too."
    )]
    Explain(ExplainArgs),
    /// Print a built-in scenario's TOML exactly as shipped
    #[command(
        after_help = "Examples:\n  ratesim show boundary\n  ratesim show trace > trace.toml\n\nNAME is a built-in scenario (see `ratesim list`). The TOML goes to stdout byte for byte as\nshipped. When the scenario reads other files (the `trace` scenario reads traces/sample.csv,\nrelative to the scenario file), a note on stderr says so: `ratesim init NAME` writes them too.\nExit status 2 for an unknown NAME, with the list of built-ins."
    )]
    Show {
        /// A built-in scenario name
        name: String,
    },
    /// Compare two run directories limiter by limiter
    #[command(
        after_help = "Examples:\n  ratesim run boundary --out a && ratesim run boundary --set defaults.limit=50 --out b\n  ratesim diff a b\n  ratesim diff a b --out a-vs-b        also writes a-vs-b/diff.html\n\nLimiters are matched by name. Prints every column of summary.csv that differs for a limiter in\nboth (limiter, column, A, B, change = B - A and its ratio to A), after the scenario's fields that\ndiffer (limiter \"(scenario)\"), then the limiters only one run has. Exit status 0 whatever\ndiffers; 2 when A or B is not a run directory. With --out, DIR gets diff.html (the same table\nand the two runs' charts side by side); DIR is replaced only when it is empty or holds nothing\nbut ratesim's files, and never when it is or holds A or B."
    )]
    Diff(DiffArgs),
    /// Write a built-in scenario to a file to edit, with any trace it reads
    #[command(
        after_help = "Examples:\n  ratesim init boundary                writes boundary.toml\n  ratesim init trace replay/t.toml     writes replay/t.toml and replay/traces/sample.csv\n  ratesim init steady experiments/     writes experiments/steady.toml\n\nFILE defaults to NAME.toml in the current directory; when it is a directory (existing, or\nending in /) the scenario goes inside it as NAME.toml. Files the scenario reads are written at their path\nrelative to FILE, so it runs unchanged: `ratesim run FILE` from any directory. Nothing is\nwritten when any of the files exists (exit status 2 naming the file); --force overwrites a\nfile only where it holds exactly what `ratesim init` writes, never a file you edited or wrote."
    )]
    Init(InitArgs),
    /// Join the key partitions of one run (`run --keys K/N`) into the whole run's directory
    #[command(
        after_help = "Examples:\n  for k in 1 2 3 4; do ratesim run replay.toml --keys $k/4 --out part-$k --quiet; done\n  ratesim merge part-1 part-2 part-3 part-4 --out replay\n\nEvery partition 1/N .. N/N of one run (same scenario text, seed, --set and flags; --keys\nand --out aside) must be given once, in any order; anything else is refused naming the\ndirectory or the partition. Every CSV and JSON of the result is byte for byte what\n`ratesim run` without --keys writes (run.json: its command line with --out DIR); the charts,\nsummary.md and report.html are drawn from them as the partitions' run asked. The partitions'\nown files (partition.json, partition.bin, partition-journal-*.bin) are not in the result.\nDIR is replaced only when it is empty or holds nothing but ratesim's files."
    )]
    Merge(MergeArgs),
    /// Run a scenario over a grid of values, compare and recommend
    #[command(
        args_conflicts_with_subcommands = true,
        subcommand_negates_reqs = true,
        after_help = SWEEP_HELP
    )]
    Sweep(SweepArgs),
    /// Print or write ratesim's algorithms for production use
    #[command(
        subcommand,
        after_help = "Examples:\n  ratesim export redis gcra > gcra.lua\n  ratesim export redis --all scripts/\n  ratesim export nginx replay.toml > limits.conf\n  ratesim export envoy replay.toml > envoy.yaml\n  ratesim export nginx-lua s.toml --limiter api\n\n`ratesim export COMMAND --help` says what each writes and what it refuses."
    )]
    Export(ExportCommand),
    /// Turn a gateway's rate-limit config into a commented scenario (stdout)
    #[command(
        after_help = "Examples:\n  ratesim import nginx.conf --trace access.log > replay.toml\n  ratesim import nginx.conf --trace access.log --log-format main > replay.toml\n  ratesim import envoy.yaml --envoy-timer\n  ratesim import ratelimit-config.yaml\n\nReads nginx limit_req_zone/limit_req (implementation \"nginx\"), Envoy's local_ratelimit filter\n(\"envoy\", or \"envoy-timer\" with --envoy-timer) and envoyproxy/ratelimit YAML (\"envoy-ratelimit\").\nEach limiter names the directive it came from; what ratesim does not model is listed in a comment.\nWith --trace LOG the scenario replays that access log (its path as given, relative to the\nscenario file), read with the config's access_log format or --log-format; a zone key the format\ndoes not record is an error naming the variable to add, and so is a log whose first line does\nnot read in the format. Exit status 2 naming file:line for a config ratesim cannot read."
    )]
    Import(ImportArgs),
}

/// `ratesim merge`'s arguments.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// The partitions' run directories (`ratesim run S --keys K/N`, every
    /// K of 1..N once, in any order)
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Where to write the whole run's directory
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Do not draw the PNG charts (even when the partitions' run did)
    #[arg(long)]
    pub no_plots: bool,
    /// Do not write report.html (even when the partitions' run did)
    #[arg(long)]
    pub no_html: bool,
    /// Print nothing on success
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// nginx .conf, Envoy YAML/JSON, or envoyproxy/ratelimit YAML files
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Replay this access log (written into the scenario as given)
    #[arg(long, value_name = "LOG")]
    pub trace: Option<String>,
    /// The log's format, when the config does not hold it: `combined`, a
    /// log_format name of the config, or the format string itself
    #[arg(long, value_name = "NAME|'FORMAT'", requires = "trace")]
    pub log_format: Option<String>,
    /// Envoy's earlier timer-refilled bucket (interval_bucket) instead of
    /// today's lazy token bucket
    #[arg(long)]
    pub envoy_timer: bool,
}

#[derive(Debug, Subcommand)]
pub enum ExportCommand {
    /// The Redis Lua scripts: one algorithm's on stdout, all into a directory, or a limiter's call
    #[command(
        after_help = "Examples:\n  ratesim export redis gcra > gcra.lua\n  ratesim export redis --all scripts/\n  ratesim export redis s.toml --limiter api     the EVALSHA call of limiter api\n\nWith --limiter NAME the positional is a scenario, and the output is that limiter's call,\nEVALSHA <sha> 1 {KEY} {now_us} {cost} <limit> <window_us> [extra ...], after comment lines\nnaming its script; {KEY}, {now_us} and {cost} are the caller's to fill in. A limiter no script\nruns exactly (interval_bucket, nginx arithmetic, a window of no whole us, parameters outside\nthe script's exact range, a deployment of several instances, a chain) is exit 2 naming why.\n\nAlgorithms: token_bucket, gcra, leaky_bucket, fixed_window, sliding_log, sliding_counter,\nsmooth_bursty. Call a script as EVALSHA sha 1 KEY now_us cost limit window_us [extra ...]\n(its header says which extras, in which order, and the ranges it is exact in); it replies\n{outcome, wait_us, remaining, reset_us}: 1 admitted, 2 delayed by wait_us, 0 rejected with\nretry-after wait_us (-1: never); then the RateLimit fields after the decision: the largest\ncost that passes at once now (-1: any), and the us until the key is as new.\nEach decides exactly as `ratesim run` does at microsecond timestamps.\nArguments are checked first: numbers in plain ASCII digits within the header's range,\nwords from its list; anything else (1.5, 1e3, 0x10, -1, too large) is an error reply\n\"ERR ALGORITHM: ARGUMENT ...\" and the key is untouched. A caller whose now_us is behind\nthe key's stored time (another gateway's clock ahead) is answered on its own clock: its\nwait adds the difference (each header says how)."
    )]
    Redis(ExportRedisArgs),
    /// A scenario's leaky-bucket limiters as nginx limit_req_zone / limit_req lines
    #[command(
        after_help = "Examples:\n  ratesim export nginx replay.toml\n  ratesim export nginx s.toml --limiter api --key '$binary_remote_addr'\n\nEach leaky_bucket limiter of nginx's arithmetic (implementation = \"nginx\"; every one, or each\n--limiter NAME) becomes a limit_req_zone (rate as whole r/s or r/m) and a limit_req (burst = queue; nodelay when delay = queue,\nelse delay=); a chain's members are the limit_req lines of one location, in order. The key\nis the variable the limiter was imported with (its nginx log source's client or ip), else\n--key VAR; key_by = \"global\" is $server_name. A limiter nginx cannot run exactly (another\nalgorithm, ratesim's exact leaky-bucket arithmetic, a rate nginx cannot write) is exit 2\nnaming it and why. `ratesim import` of the output gives back limiters that decide the same."
    )]
    Nginx(ExportNginxArgs),
    /// A scenario's token-bucket limiters as Envoy local_ratelimit filters
    #[command(
        after_help = "Examples:\n  ratesim export envoy replay.toml\n  ratesim export envoy s.toml --limiter edge > envoy.yaml\n\nEach token_bucket or interval_bucket limiter with key_by = \"global\" (every one, or each\n--limiter NAME) becomes an envoy.filters.http.local_ratelimit filter (stat_prefix = its name,\nenabled and enforced at 100%) in a listener of its own: max_tokens = capacity, and the rate as\nthe smallest exact tokens_per_fill per fill_interval of whole milliseconds, at least 50 ms\n(100/1s: 5 per 0.05s); an interval_bucket keeps its own three. A limiter Envoy cannot run\nexactly (another algorithm, a key per client or address, an interval under 50 ms or of no whole\nms, a deployment, a chain) is exit 2 naming it and why. `ratesim import` of the output (with\n--envoy-timer for interval buckets) gives back limiters that decide the same."
    )]
    Envoy(ExportEnvoyArgs),
    /// A limiter as an nginx Lua fragment that decides by its Redis script
    #[command(
        name = "nginx-lua",
        after_help = "Examples:\n  ratesim export nginx-lua s.toml --limiter api > api.conf\n  ratesim export nginx-lua s.toml --limiter api --redis 10.0.0.5:6379 --key '$http_x_api_key'\n\nPrints an nginx fragment for nginx with Debian's libnginx-mod-http-lua (no other Lua\nlibrary): in the location it guards, each request calls the limiter's Redis script (the\ncall of `ratesim export redis S --limiter NAME`) with EVALSHA over a cosocket, loading the\nscript on NOSCRIPT; now_us is the request's start in whole ms. A rejection is 429 with\nRetry-After; a delay sleeps; every counted response carries RateLimit and RateLimit-Policy.\nA Redis that does not answer within the deployment's timeout (100 ms when none) is the\nscenario's on_store_failure: fail_open passes, fail_closed is 503, local_fallback runs the\nfallback's script on an ngx.shared dict. The key is the variable the limiter was imported\nwith, else --key VAR; key_by = \"ip\" is $binary_remote_addr, \"global\" one key. Exit 2\nnaming the limiter and why for what no script runs (see `ratesim export redis`), chains,\nand a key that is no nginx variable. The fragment's comments say where each part goes."
    )]
    NginxLua(ExportNginxLuaArgs),
}

#[derive(Debug, clap::Args)]
pub struct ExportNginxLuaArgs {
    /// The scenario: a path or a built-in name
    pub scenario: String,
    /// The limiter to export
    #[arg(long, value_name = "NAME")]
    pub limiter: String,
    /// The Redis server the fragment calls
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:6379")]
    pub redis: String,
    /// The key variable of a limiter that reads no nginx log
    #[arg(long, value_name = "VAR")]
    pub key: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct ExportEnvoyArgs {
    /// The scenario: a path or a built-in name
    pub scenario: String,
    /// Export only this limiter (repeatable)
    #[arg(long, value_name = "NAME")]
    pub limiter: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct ExportNginxArgs {
    /// The scenario: a path or a built-in name
    pub scenario: String,
    /// Export only this limiter or chain (repeatable)
    #[arg(long, value_name = "NAME")]
    pub limiter: Vec<String>,
    /// The key variable of limiters that read no nginx log
    #[arg(long, value_name = "VAR")]
    pub key: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct ExportRedisArgs {
    /// The algorithm whose script to print; with --limiter, the scenario
    /// (a path or a built-in name)
    #[arg(
        required_unless_present = "all",
        conflicts_with = "all",
        value_name = "ALGORITHM|SCENARIO"
    )]
    pub target: Option<String>,
    /// Print the EVALSHA call of this limiter of SCENARIO instead
    #[arg(long, value_name = "NAME", conflicts_with = "all")]
    pub limiter: Option<String>,
    /// Write every script into DIR as ALGORITHM.lua instead
    #[arg(long, value_name = "DIR")]
    pub all: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// The first run directory
    pub a: PathBuf,
    /// The second run directory
    pub b: PathBuf,
    /// Also write DIR/diff.html
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// A built-in scenario name (see `ratesim list`)
    pub name: String,
    /// Where to write the scenario (default: NAME.toml)
    pub file: Option<PathBuf>,
    /// Overwrite a file only where it holds exactly what `ratesim init`
    /// writes (a built-in scenario or one of its files, unedited)
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// What to explain: boundary, gcra, libraries, plans, protect-backend
    pub topic: String,
    /// Run directory (default: output/<topic>)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Path to a scenario .toml, or a built-in scenario name
    pub scenario: String,
    /// Run directory (default: [output] dir, else output/<name>; both
    /// relative to the current directory)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Seed for random traffic, overriding the scenario's: 0 to
    /// 9223372036854775807 (2^63 - 1), as a scenario's `seed`, so that the
    /// run can be written down as a scenario
    #[arg(long, value_parser = clap::value_parser!(u64).range(..=i64::MAX as u64))]
    pub seed: Option<u64>,
    /// Simulate only partition K of N of the keys: those whose FNV-1a 64
    /// hash of the key's text, mod N, is K - 1 (`ratesim merge` joins the
    /// N partitions into the whole run's directory); `auto`: K/N of the
    /// Slurm array task or Kubernetes Indexed Job it runs in
    #[arg(long, value_name = "K/N|auto")]
    pub keys: Option<String>,
    /// Replace one scenario field before validation, named as error
    /// messages name it (defaults.limit=50, limiter[1].capacity=20,
    /// 'limiter[api-perip].rate=10/1s', traffic[0].clients=10,
    /// deployment.instances=4); repeatable
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Also write decisions.csv, one row per attempt per limiter;
    /// --decisions=headers adds the RateLimit header columns
    /// (retry_after_s, ratelimit, ratelimit_policy)
    #[arg(
        long,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "plain",
        value_name = "headers"
    )]
    pub decisions: Option<DecisionsMode>,
    /// Print nothing on success (and no progress bar)
    #[arg(long, short)]
    pub quiet: bool,
    /// Do not draw the PNG charts (`ratesim plot` can draw them later)
    #[arg(long)]
    pub no_plots: bool,
    /// Do not write report.html (`ratesim plot` writes it later)
    #[arg(long)]
    pub no_html: bool,
    /// Run past the work budget (10^10 decisions) and the machine's
    /// available memory (see `ratesim validate`)
    #[arg(long)]
    pub no_budget: bool,
    /// No longer does anything, kept so older scripts still parse: DIR is
    /// replaced only when it holds nothing but ratesim's files, whatever
    /// the flags; --no-budget lifts the work budget
    #[arg(long, hide = true)]
    pub force: bool,
    /// What to print on stdout
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    pub format: OutputFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// An aligned table, one row per limiter
    Table,
    /// summary.json
    Json,
}

#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    #[command(subcommand)]
    pub command: Option<SweepCommand>,
    /// Path to a scenario .toml, or a built-in scenario name
    #[arg(required = true)]
    pub scenario: Option<String>,
    /// A field and its values: PATH=V1,V2,... or PATH=FROM..=TO:STEP;
    /// repeatable (the last changes fastest); replaces the scenario's
    /// [sweep] vary
    #[arg(long = "vary", value_name = "PATH=LIST")]
    pub vary: Vec<String>,
    /// Replace one scenario field at every point (as `run --set`)
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// Sweep directory (default: output/<name>-sweep)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Run only the points i with i mod N = K - 1 (join with `sweep
    /// merge`); `auto`: K/N of the Slurm array task or Kubernetes Indexed
    /// Job it runs in
    #[arg(long, value_name = "K/N|auto")]
    pub shard: Option<String>,
    /// A requirement every recommended point meets: COLUMN<=X or
    /// COLUMN>=X; repeatable
    #[arg(long = "require", value_name = "COLUMN<=X")]
    pub require: Vec<String>,
    /// Recommend, per limiter, the qualifying point with the least COLUMN
    #[arg(long, value_name = "COLUMN", conflicts_with = "maximize")]
    pub minimize: Option<String>,
    /// Recommend, per limiter, the qualifying point with the most COLUMN
    #[arg(long, value_name = "COLUMN")]
    pub maximize: Option<String>,
    /// The column the heatmaps colour (default: the first --require's, else rejected_share)
    #[arg(long, value_name = "COLUMN")]
    pub metric: Option<String>,
    /// Do not draw the PNG charts
    #[arg(long)]
    pub no_plots: bool,
    /// Do not write report.html
    #[arg(long)]
    pub no_html: bool,
    /// Print nothing on success (and no progress bar)
    #[arg(long, short)]
    pub quiet: bool,
    /// Run more than 10000 points, or past the work budget
    #[arg(long)]
    pub no_budget: bool,
    /// No longer does anything (see `ratesim run --help`)
    #[arg(long, hide = true)]
    pub force: bool,
}

#[derive(Debug, Subcommand)]
pub enum SweepCommand {
    /// Join the directories of `sweep --shard K/N` into the unsharded result
    #[command(
        after_help = "Examples:\n  ratesim sweep merge shard-1 shard-2 shard-3 --out sweep\n\nEvery shard 1/N .. N/N of one sweep (same scenario text, --set, grid and recommendation\nflags) must be given once; the result is byte for byte the unsharded sweep's."
    )]
    Merge(SweepMergeArgs),
}

#[derive(Debug, clap::Args)]
pub struct SweepMergeArgs {
    /// The shard directories
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Where to write the joined sweep
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Do not draw the PNG charts
    #[arg(long)]
    pub no_plots: bool,
    /// Do not write report.html
    #[arg(long)]
    pub no_html: bool,
    /// Print nothing on success
    #[arg(long, short)]
    pub quiet: bool,
    /// No longer does anything (see `ratesim run --help`)
    #[arg(long, hide = true)]
    pub force: bool,
}

/// `ratesim sweep --help`.
const SWEEP_HELP: &str = "Examples:
  ratesim sweep poisson --vary defaults.limit=5,10,20,50 --out /tmp/limits
  ratesim sweep nat.toml --vary defaults.limit=10..=50:10 --vary limiter[0].capacity=10,30 \\
      --require rejected_share<=0.01 --minimize defaults.limit --out /tmp/nat
  ratesim sweep pick-a-limit --out /tmp/pick          (its [sweep] table holds the grid)
  ratesim sweep pick-a-limit --shard 2/4 --out shard-2 && ratesim sweep merge shard-* --out all

PATH names a scenario field as error messages do: defaults.limit, limiter[2].capacity,
traffic[0].clients, deployment.instances (indices from 0); a limiter also by its name,
'limiter[api-perip].rate' (quote it for the shell). LIST is V1,V2,... or FROM..=TO:STEP.
An axis nothing reads (defaults.limit when every limiter sets its own rate or limit) is refused,
and so is a name (limiter[0].name, traffic[0].name): it labels the rows and decides nothing.
DIR gets sweep.csv (one row per point and limiter: the varied values, then the columns of
summary.csv), sweep.json (the grid and flags), and unless sharded: line charts of the deciding
metrics (one varied path), a heatmap per limiter of --metric (two or more; the third and later
paths fixed at their first value), summary.md, and with --require/--minimize/--maximize,
recommendation.md (also printed). COLUMN is a column of sweep.csv, or rejected_share,
passed_share, peak_over_limit. An empty cell reads as 0.

A [sweep] table in the scenario may hold vary = [\"PATH=LIST\", ...], require = [...], minimize,
maximize and metric; flags replace it. `ratesim run` and `validate` check [sweep] as sweep does
and run the file as written.
At most 10000 points without --no-budget. DIR is replaced only when it is empty or holds\nnothing but ratesim's files, whatever the flags.";

/// What `--decisions` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DecisionsMode {
    /// The decision log's own columns (`--decisions` alone).
    #[value(hide = true)]
    Plain,
    /// With the RateLimit header columns too (retry_after_s, ratelimit,
    /// ratelimit_policy).
    Headers,
}
