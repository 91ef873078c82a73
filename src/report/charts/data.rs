//! What a chart is drawn from: a run directory's `summary.json` and
//! `timeseries.csv`, loaded back.
//!
//! `ratesim run` writes those two files, then renders every chart from this
//! loader, exactly as `ratesim plot RUN_DIR` does later — so the two produce
//! byte-identical PNGs, and the charts can only show what the run directory
//! holds. The reader is tolerant: keys and columns it does not know are
//! ignored (new metrics come and go), and optional metrics such as `gave_up`
//! are `None` when absent.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

use serde::Deserialize;

use crate::error::InputError;

/// One run, as its run directory records it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunData {
    /// The scenario's name (every chart's title starts with it).
    pub name: String,
    pub description: String,
    pub seed: u64,
    /// The policy: `limit` per `window_ns`.
    pub limit: u64,
    pub window_ns: u64,
    pub duration_ns: u64,
    /// Width of one time-series bucket.
    pub resolution_ns: u64,
    pub limiters: Vec<LimiterData>,
}

/// One limiter's metrics and time series. Its index in
/// [`RunData::limiters`] picks its colour in every chart.
#[derive(Debug, Clone, PartialEq)]
pub struct LimiterData {
    pub name: String,
    pub algorithm: String,
    pub key_by: String,
    pub attempts: u64,
    pub admitted: u64,
    pub delayed: u64,
    pub rejected: u64,
    /// Requests that exhausted their retries (only when clients retry).
    pub gave_up: Option<u64>,
    pub peak_in_window: u64,
    pub peak_window_end_ns: Option<u64>,
    pub peak_key: Option<String>,
    pub delay_p50_ms: Option<f64>,
    pub delay_p99_ms: Option<f64>,
    pub delay_max_ms: Option<f64>,
    pub state_mean: f64,
    pub state_peak: u64,
    pub keys: u64,
    /// One entry per `resolution_ns` bucket from t = 0.
    pub series: Vec<Bucket>,
}

impl LimiterData {
    pub fn passed(&self) -> u64 {
        self.admitted + self.delayed
    }
}

/// One row of `timeseries.csv`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bucket {
    pub start_ns: u64,
    pub attempts: u64,
    pub admitted: u64,
    pub delayed: u64,
    pub rejected: u64,
    /// Requests that passed in this bucket (a shaper's at their release).
    pub passed: u64,
}

#[derive(Deserialize)]
struct SummaryFile {
    scenario: ScenarioEcho,
    #[serde(default)]
    seed: u64,
    limit: u64,
    window_ns: u64,
    duration_ns: u64,
    resolution_ns: u64,
    limiters: Vec<LimiterJson>,
}

#[derive(Deserialize)]
struct ScenarioEcho {
    name: String,
    #[serde(default)]
    description: String,
}

#[derive(Deserialize)]
struct LimiterJson {
    limiter: String,
    algorithm: String,
    #[serde(default)]
    key_by: String,
    attempts: u64,
    admitted: u64,
    delayed: u64,
    rejected: u64,
    #[serde(default)]
    gave_up: Option<u64>,
    peak_in_window: u64,
    #[serde(default)]
    peak_window_end_ns: Option<u64>,
    #[serde(default)]
    peak_key: Option<String>,
    #[serde(default)]
    delay_p50_ms: Option<f64>,
    #[serde(default)]
    delay_p99_ms: Option<f64>,
    #[serde(default)]
    delay_max_ms: Option<f64>,
    #[serde(default)]
    state_bytes_per_key_mean: f64,
    #[serde(default)]
    state_bytes_per_key_peak: u64,
    #[serde(default)]
    keys: u64,
}

/// The `timeseries.csv` columns the charts read (others are ignored).
const SERIES_COLUMNS: [&str; 7] = [
    "limiter",
    "bucket_start_ns",
    "attempts",
    "admitted",
    "delayed",
    "rejected",
    "passed",
];

impl RunData {
    /// Loads `dir/summary.json` and `dir/timeseries.csv`. A directory that
    /// is not a run directory, or files that do not parse, are input errors
    /// naming the file.
    pub fn load(dir: &Path) -> Result<RunData, InputError> {
        let summary_path = dir.join("summary.json");
        if !dir.is_dir() {
            return Err(InputError::new(format!(
                "{}: no such directory; give the run directory that `ratesim run` wrote (e.g. output/boundary)",
                dir.display()
            )));
        }
        let text = fs::read_to_string(&summary_path).map_err(|e| {
            InputError::new(format!(
                "{}: {e} — is this a ratesim run directory? `ratesim run` writes summary.json and timeseries.csv into it",
                summary_path.display()
            ))
        })?;
        let mut data =
            RunData::from_summary_json(&text).map_err(|e| e.within(summary_path.display()))?;
        let series_path = dir.join("timeseries.csv");
        let csv = fs::read(&series_path).map_err(|e| {
            InputError::new(format!(
                "{}: {e} — the charts need the run's time series",
                series_path.display()
            ))
        })?;
        data.read_series(&csv)
            .map_err(|e| e.within(series_path.display()))?;
        Ok(data)
    }

    /// Parses `summary.json` text (time series left empty).
    pub fn from_summary_json(text: &str) -> Result<RunData, InputError> {
        let f: SummaryFile = serde_json::from_str(text)
            .map_err(|e| InputError::new(format!("not a ratesim summary: {e}")))?;
        if f.window_ns == 0 || f.resolution_ns == 0 {
            return Err(InputError::new(
                "window_ns and resolution_ns must be positive",
            ));
        }
        Ok(RunData {
            name: f.scenario.name,
            description: f.scenario.description,
            seed: f.seed,
            limit: f.limit,
            window_ns: f.window_ns,
            duration_ns: f.duration_ns,
            resolution_ns: f.resolution_ns,
            limiters: f
                .limiters
                .into_iter()
                .map(|l| LimiterData {
                    name: l.limiter,
                    algorithm: l.algorithm,
                    key_by: l.key_by,
                    attempts: l.attempts,
                    admitted: l.admitted,
                    delayed: l.delayed,
                    rejected: l.rejected,
                    gave_up: l.gave_up,
                    peak_in_window: l.peak_in_window,
                    peak_window_end_ns: l.peak_window_end_ns,
                    peak_key: l.peak_key,
                    delay_p50_ms: l.delay_p50_ms,
                    delay_p99_ms: l.delay_p99_ms,
                    delay_max_ms: l.delay_max_ms,
                    state_mean: l.state_bytes_per_key_mean,
                    state_peak: l.state_bytes_per_key_peak,
                    keys: l.keys,
                    series: Vec::new(),
                })
                .collect(),
        })
    }

    /// Fills every limiter's series from `timeseries.csv` bytes. Rows of a
    /// limiter the summary does not name are an error; so is a bucket that
    /// does not start at `index × resolution`.
    pub fn read_series(&mut self, csv: &[u8]) -> Result<(), InputError> {
        let mut rdr = csv::Reader::from_reader(csv);
        let headers = rdr
            .headers()
            .map_err(|e| InputError::new(format!("unreadable header: {e}")))?
            .clone();
        let mut col = [0usize; SERIES_COLUMNS.len()];
        for (c, name) in col.iter_mut().zip(SERIES_COLUMNS) {
            *c = headers.iter().position(|h| h == name).ok_or_else(|| {
                InputError::new(format!("line 1: no column {name:?} in the header"))
            })?;
        }
        let index: HashMap<String, usize> = self
            .limiters
            .iter()
            .enumerate()
            .map(|(i, l)| (l.name.clone(), i))
            .collect();
        for l in &mut self.limiters {
            l.series.clear();
        }
        let mut record = csv::StringRecord::new();
        let mut line = 1u64;
        loop {
            match rdr.read_record(&mut record) {
                Ok(false) => break,
                Ok(true) => {}
                Err(e) => return Err(InputError::new(format!("line {}: {e}", line + 1))),
            }
            line += 1;
            let field = |k: usize| record.get(col[k]).unwrap_or("");
            let number = |k: usize| -> Result<u64, InputError> {
                field(k).parse().map_err(|_| {
                    InputError::new(format!(
                        "line {line}: {} = {:?} is not a whole number",
                        SERIES_COLUMNS[k],
                        field(k)
                    ))
                })
            };
            let &i = index.get(field(0)).ok_or_else(|| {
                InputError::new(format!(
                    "line {line}: limiter {:?} is not in summary.json",
                    field(0)
                ))
            })?;
            let b = Bucket {
                start_ns: number(1)?,
                attempts: number(2)?,
                admitted: number(3)?,
                delayed: number(4)?,
                rejected: number(5)?,
                passed: number(6)?,
            };
            let series = &mut self.limiters[i].series;
            let expected = series.len() as u64 * self.resolution_ns;
            if b.start_ns != expected {
                return Err(InputError::new(format!(
                    "line {line}: bucket_start_ns = {} where {expected} was expected (buckets of {} ns, in order)",
                    b.start_ns, self.resolution_ns
                )));
            }
            series.push(b);
        }
        Ok(())
    }

    /// The end of the longest series (at least the run's duration).
    pub fn series_end_ns(&self) -> u64 {
        let buckets = self
            .limiters
            .iter()
            .map(|l| l.series.len() as u64)
            .max()
            .unwrap_or(0);
        (buckets * self.resolution_ns).max(self.duration_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUMMARY: &str = r#"{
      "ratesim_version": "0.1.0",
      "scenario": {"name": "t", "description": "d", "something_new": [1, 2]},
      "seed": 3, "limit": 10, "window_ns": 1000, "duration_ns": 2000,
      "resolution_ns": 500,
      "a_new_top_level_metric": 1.5,
      "limiters": [{
        "limiter": "fw", "algorithm": "fixed_window", "key_by": "client",
        "params": {"limit": 10}, "attempts": 30, "admitted": 20, "delayed": 0,
        "rejected": 10, "passed": 20, "peak_in_window": 20,
        "peak_window_end_ns": 1000, "peak_key": "c", "limit": 10,
        "delay_p50_ms": 0, "delay_p99_ms": 0, "delay_max_ms": null,
        "state_bytes_per_key_mean": 8, "state_bytes_per_key_peak": 8,
        "keys": 1, "retry_amplification": 1.0
      }]
    }"#;

    const SERIES: &str = "limiter,bucket_start_ns,bucket_end_ns,attempts,admitted,delayed,rejected,passed,passed_cost,new_column\n\
fw,0,500,10,10,0,0,10,10,x\n\
fw,500,1000,20,10,0,10,10,10,x\n";

    #[test]
    fn summary_json_with_unknown_keys_loads() {
        let mut d = RunData::from_summary_json(SUMMARY).unwrap();
        d.read_series(SERIES.as_bytes()).unwrap();
        let l = &d.limiters[0];
        assert_eq!((d.name.as_str(), d.limit, d.window_ns), ("t", 10, 1000));
        assert_eq!(l.gave_up, None);
        assert_eq!(l.delay_max_ms, None);
        assert_eq!(l.peak_window_end_ns, Some(1000));
        assert_eq!(l.series.len(), 2);
        assert_eq!(l.series[1].rejected, 10);
        assert_eq!(d.series_end_ns(), 2000);
    }

    #[test]
    fn gave_up_is_read_when_present() {
        let text = SUMMARY.replace("\"keys\": 1,", "\"keys\": 1, \"gave_up\": 4,");
        let d = RunData::from_summary_json(&text).unwrap();
        assert_eq!(d.limiters[0].gave_up, Some(4));
    }

    #[test]
    fn a_series_row_of_an_unknown_limiter_names_its_line() {
        let mut d = RunData::from_summary_json(SUMMARY).unwrap();
        let csv = format!("{SERIES}other,0,500,1,1,0,0,1,1,x\n");
        let e = d.read_series(csv.as_bytes()).unwrap_err();
        assert!(e.message().contains("line 4"), "{e}");
    }

    #[test]
    fn a_missing_column_is_named() {
        let mut d = RunData::from_summary_json(SUMMARY).unwrap();
        let e = d
            .read_series(b"limiter,bucket_start_ns,attempts\n")
            .unwrap_err();
        assert!(e.message().contains("admitted"), "{e}");
    }
}

/// Run data for the charts' unit tests: small synthetic runs, and the
/// built-in boundary scenario run once per test process.
#[cfg(test)]
pub mod tests_support {
    use std::sync::OnceLock;

    use super::*;

    /// A limiter with the given name and peak and no traffic.
    pub fn limiter(name: &str, peak: u64) -> LimiterData {
        LimiterData {
            name: name.to_string(),
            algorithm: name.to_string(),
            key_by: "client".into(),
            attempts: 0,
            admitted: 0,
            delayed: 0,
            rejected: 0,
            gave_up: None,
            peak_in_window: peak,
            peak_window_end_ns: None,
            peak_key: None,
            delay_p50_ms: None,
            delay_p99_ms: None,
            delay_max_ms: None,
            state_mean: 8.0,
            state_peak: 8,
            keys: 1,
            series: Vec::new(),
        }
    }

    /// A run of limiters `(name, peak)` under a policy of `limit` per 1s.
    pub fn run_data(limiters: &[(&str, u64)], limit: u64) -> RunData {
        RunData {
            name: "synthetic".into(),
            description: String::new(),
            seed: 0,
            limit,
            window_ns: 1_000_000_000,
            duration_ns: 10_000_000_000,
            resolution_ns: 100_000_000,
            limiters: limiters.iter().map(|&(n, p)| limiter(n, p)).collect(),
        }
    }

    /// The built-in `boundary` scenario, run (without charts) into a
    /// temporary directory and loaded back as the charts see it.
    pub fn boundary() -> RunData {
        static DATA: OnceLock<RunData> = OnceLock::new();
        DATA.get_or_init(|| {
            let scenario = crate::scenario::Scenario::load("boundary").expect("built-in");
            let tmp = tempfile::tempdir().expect("tempdir");
            let out = tmp.path().join("boundary");
            crate::app::run_scenario(
                &scenario,
                &out,
                &crate::app::RunOptions::default(),
                &|_, _, _| {},
            )
            .expect("the boundary scenario runs");
            RunData::load(&out).expect("its run directory loads")
        })
        .clone()
    }
}
