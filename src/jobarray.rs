//! `--keys auto` and `--shard auto`: K/N from the job array the process
//! runs in (docs/semantics.md §12).
//!
//! - Slurm (`sbatch --array`): K = `SLURM_ARRAY_TASK_ID` −
//!   `SLURM_ARRAY_TASK_MIN` + 1, N = `SLURM_ARRAY_TASK_COUNT`;
//! - else a Kubernetes Indexed Job: K = `JOB_COMPLETION_INDEX` + 1,
//!   N = `RATESIM_SHARD_COUNT` (the Job's `completions`, which Kubernetes
//!   does not pass to the pod: the manifest sets it).
//!
//! Neither is bad input naming the variables.

use crate::error::InputError;
use crate::partition::parse_k_of_n;

/// K/N of `flag` given `text`: `auto` from the job array of `env`, else
/// `K/N` as written. The second value says where an `auto` came from.
pub fn k_of_n(
    flag: &str,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<((u64, u64), Option<&'static str>), InputError> {
    if text.trim() != "auto" {
        return Ok((parse_k_of_n(flag, text)?, None));
    }
    let var = |name: &str| -> Result<u64, InputError> {
        let value =
            env(name).ok_or_else(|| InputError::new(format!("{flag} auto: {name} is not set")))?;
        value.trim().parse().map_err(|_| {
            InputError::new(format!(
                "{flag} auto: {name}={} is not a whole number",
                crate::error::quoted(&value)
            ))
        })
    };
    let (k, n, from) = if env("SLURM_ARRAY_TASK_ID").is_some() {
        let id = var("SLURM_ARRAY_TASK_ID")?;
        let min = var("SLURM_ARRAY_TASK_MIN")?;
        let count = var("SLURM_ARRAY_TASK_COUNT")?;
        let k = id.checked_sub(min).ok_or_else(|| {
            InputError::new(format!(
                "{flag} auto: SLURM_ARRAY_TASK_ID={id} is below SLURM_ARRAY_TASK_MIN={min}"
            ))
        })? + 1;
        (k, count, "the Slurm array task")
    } else if env("JOB_COMPLETION_INDEX").is_some() {
        let index = var("JOB_COMPLETION_INDEX")?;
        let count = var("RATESIM_SHARD_COUNT")?;
        (index.saturating_add(1), count, "the Kubernetes Indexed Job")
    } else {
        return Err(InputError::new(format!(
            "{flag} auto: not in a job array — set SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_COUNT (sbatch --array sets them), or JOB_COMPLETION_INDEX (a Kubernetes Indexed Job sets it) and RATESIM_SHARD_COUNT; or give K/N"
        )));
    };
    if n == 0 || k > n {
        return Err(InputError::new(format!(
            "{flag} auto: {from} gives {k}/{n}, but K must be from 1 to N (a Slurm array must be contiguous, step 1: --array=0-{})",
            n.max(k).saturating_sub(1)
        )));
    }
    Ok(((k, n), Some(from)))
}

/// [`k_of_n`] from this process's environment.
pub fn k_of_n_here(
    flag: &str,
    text: &str,
) -> Result<((u64, u64), Option<&'static str>), InputError> {
    k_of_n(flag, text, &|name| std::env::var(name).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn a_slurm_array_task_is_its_offset_from_the_first_plus_one() {
        let env = with(&[
            ("SLURM_ARRAY_TASK_ID", "7"),
            ("SLURM_ARRAY_TASK_MIN", "5"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
            ("JOB_COMPLETION_INDEX", "0"),
        ]);
        let (kn, from) = k_of_n("--keys", "auto", &env).unwrap();
        assert_eq!(kn, (3, 4));
        assert_eq!(from, Some("the Slurm array task"));
    }

    #[test]
    fn a_kubernetes_indexed_job_counts_from_zero() {
        let env = with(&[("JOB_COMPLETION_INDEX", "0"), ("RATESIM_SHARD_COUNT", "3")]);
        assert_eq!(k_of_n("--shard", "auto", &env).unwrap().0, (1, 3));
        let env = with(&[("JOB_COMPLETION_INDEX", "2"), ("RATESIM_SHARD_COUNT", "3")]);
        assert_eq!(k_of_n("--shard", "auto", &env).unwrap().0, (3, 3));
    }

    #[test]
    fn no_job_array_names_the_variables() {
        let e = k_of_n("--keys", "auto", &with(&[]))
            .unwrap_err()
            .to_string();
        for v in [
            "SLURM_ARRAY_TASK_ID",
            "SLURM_ARRAY_TASK_MIN",
            "SLURM_ARRAY_TASK_COUNT",
            "JOB_COMPLETION_INDEX",
            "RATESIM_SHARD_COUNT",
        ] {
            assert!(e.contains(v), "{e}");
        }
    }

    #[test]
    fn missing_or_bad_variables_and_tasks_past_the_count_are_named() {
        let e = k_of_n("--keys", "auto", &with(&[("JOB_COMPLETION_INDEX", "1")]));
        assert!(e
            .unwrap_err()
            .to_string()
            .contains("RATESIM_SHARD_COUNT is not set"));
        let e = k_of_n(
            "--shard",
            "auto",
            &with(&[
                ("SLURM_ARRAY_TASK_ID", "x"),
                ("SLURM_ARRAY_TASK_MIN", "0"),
                ("SLURM_ARRAY_TASK_COUNT", "2"),
            ]),
        );
        assert!(e
            .unwrap_err()
            .to_string()
            .contains("SLURM_ARRAY_TASK_ID=\"x\" is not a whole number"));
        // --array=0-6:2 has 4 tasks, the last of id 6.
        let e = k_of_n(
            "--shard",
            "auto",
            &with(&[
                ("SLURM_ARRAY_TASK_ID", "6"),
                ("SLURM_ARRAY_TASK_MIN", "0"),
                ("SLURM_ARRAY_TASK_COUNT", "4"),
            ]),
        );
        assert!(e.unwrap_err().to_string().contains("gives 7/4"));
    }

    #[test]
    fn k_of_n_as_written_ignores_the_environment() {
        let env = with(&[("JOB_COMPLETION_INDEX", "0"), ("RATESIM_SHARD_COUNT", "3")]);
        assert_eq!(k_of_n("--keys", "2/5", &env).unwrap(), ((2, 5), None));
    }
}
