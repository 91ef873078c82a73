//! `[backend]`: the servers behind the limiters (docs/semantics.md §10).
//!
//! ```toml
//! [backend]
//! workers = 8
//! service = "exp(20ms)"   # "const(20ms)", "uniform(5ms, 35ms)", "lognormal(20ms, 1.0)"
//! queue = 200             # default: unbounded
//! [[backend.slowdown]]
//! at = "30s"
//! for = "10s"
//! factor = 3
//! ```

use ratesim_core::backend::{BackendSpec, Service, Slowdown};
use ratesim_core::scenario::LimiterSpec;

use crate::clock::{parse_duration, Nanos};
use crate::error::InputError;
use crate::fields::Fields;

pub(crate) const SERVICES: &str =
    "\"exp(MEAN)\", \"const(D)\", \"uniform(LOW, HIGH)\" or \"lognormal(MEDIAN, SIGMA)\", e.g. \"exp(20ms)\"";

/// `[backend]`, the table at `f`.
pub fn parse(f: &mut Fields) -> Result<BackendSpec, InputError> {
    let workers = f
        .opt_count("workers", 1)?
        .ok_or_else(|| f.missing("workers", "how many requests are served at once, e.g. 8"))?;
    let workers = u32::try_from(workers)
        .ok()
        .filter(|&w| w <= 1_000_000)
        .ok_or_else(|| {
            InputError::new(format!(
                "{}: {workers} — at most 1000000 workers",
                f.at("workers")
            ))
        })?;
    let text = f.opt_str("service")?.ok_or_else(|| {
        f.missing(
            "service",
            &format!("how long a request is served: {SERVICES}"),
        )
    })?;
    let service = service(text)
        .map_err(|what| InputError::new(format!("{}: \"{text}\" — {what}", f.at("service"))))?;
    let queue = f.opt_count("queue", 0)?;
    let mut slowdowns = Vec::new();
    for (path, table) in f.opt_tables("slowdown")? {
        let mut g = Fields::new(path, table);
        let at = g
            .opt_duration("at", true)?
            .ok_or_else(|| g.missing("at", "when the slowdown starts, e.g. \"30s\""))?;
        let span = g
            .opt_duration("for", false)?
            .ok_or_else(|| g.missing("for", "how long it lasts, e.g. \"10s\""))?;
        let (num, den) = g
            .opt_decimal("factor")?
            .ok_or_else(|| g.missing("factor", "what service times are multiplied by, e.g. 3"))?;
        let fits = |x: u128| u64::try_from(x).ok();
        let (Some(num), Some(den)) = (fits(num), fits(den)) else {
            return Err(InputError::new(format!(
                "{}: too precise or too large — a factor like 3 or 1.5",
                g.at("factor")
            )));
        };
        if num == 0 {
            return Err(InputError::new(format!(
                "{}: 0 — a factor above zero, e.g. 3",
                g.at("factor")
            )));
        }
        g.finish()?;
        slowdowns.push(Slowdown {
            from: at,
            until: Nanos(at.0.saturating_add(span.0)),
            num,
            den,
        });
    }
    f.finish()?;
    Ok(BackendSpec {
        workers,
        service,
        queue,
        slowdowns,
    })
}

/// The limiters that read the backend (docs/semantics.md §10) need one,
/// keep their state locally, and answer the client themselves.
pub fn check_limiters(
    limiters: &[LimiterSpec],
    paths: &[String],
    has_backend: bool,
) -> Result<(), InputError> {
    for (l, path) in limiters.iter().zip(paths) {
        if l.chain.is_some() || !l.algorithm.needs_backend() {
            continue;
        }
        let name = l.algorithm.name();
        let why = if !has_backend {
            "it reads the backend's responses: add a [backend] table (workers, service)"
        } else if l.deployment.is_global() {
            "it counts the requests its own instance has in flight: a shared store cannot hold that (use scope = \"local\")"
        } else if l.member_of.is_some() {
            "a chain's member cannot be one yet: give it its own run, outside the chain"
        } else {
            continue;
        };
        return Err(InputError::new(format!(
            "{path}.algorithm: \"{name}\" — {why}"
        )));
    }
    Ok(())
}

/// A service distribution's text; the error says what is wrong.
pub(crate) fn service(text: &str) -> Result<Service, String> {
    let t = text.trim();
    let (name, args) = t
        .strip_suffix(')')
        .and_then(|t| t.split_once('('))
        .ok_or_else(|| format!("expected {SERVICES}"))?;
    let args: Vec<&str> = args.split(',').map(str::trim).collect();
    let duration =
        |s: &str, what: &str| parse_duration(s).map_err(|e| format!("{what} \"{s}\": {e}"));
    let want = |n: usize| {
        if args.len() == n {
            Ok(())
        } else {
            Err(format!(
                "{name}( takes {n} argument(s); expected {SERVICES}"
            ))
        }
    };
    match name.trim() {
        "exp" => {
            want(1)?;
            let mean = duration(args[0], "the mean")?;
            if mean.0 == 0 {
                return Err("the mean must be above zero".into());
            }
            Ok(Service::Exp(mean))
        }
        "const" => {
            want(1)?;
            Ok(Service::Const(duration(args[0], "the duration")?))
        }
        "uniform" => {
            want(2)?;
            let (low, high) = (
                duration(args[0], "the low end")?,
                duration(args[1], "the high end")?,
            );
            if low > high {
                return Err("the low end is above the high end".into());
            }
            Ok(Service::Uniform(low, high))
        }
        "lognormal" => {
            want(2)?;
            let median = duration(args[0], "the median")?;
            let sigma: f64 = args[1]
                .parse()
                .ok()
                .filter(|s: &f64| s.is_finite() && (0.0..=10.0).contains(s))
                .ok_or_else(|| format!("sigma \"{}\": expected a number from 0 to 10", args[1]))?;
            if median.0 == 0 {
                return Err("the median must be above zero".into());
            }
            Ok(Service::LogNormal(median, sigma))
        }
        other => Err(format!(
            "unknown distribution \"{other}\"; expected {SERVICES}"
        )),
    }
}

/// A distribution as written (`exp(20ms)`).
pub(crate) fn service_text(s: &Service) -> String {
    match *s {
        Service::Exp(mean) => format!("exp({mean})"),
        Service::Const(d) => format!("const({d})"),
        Service::Uniform(low, high) => format!("uniform({low}, {high})"),
        Service::LogNormal(median, sigma) => format!("lognormal({median}, {sigma})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn the_four_services_parse() {
        assert_eq!(service("exp(20ms)"), Ok(Service::Exp(Nanos(20 * MS))));
        assert_eq!(service(" const(1s) "), Ok(Service::Const(Nanos(1000 * MS))));
        assert_eq!(
            service("uniform(5ms, 35ms)"),
            Ok(Service::Uniform(Nanos(5 * MS), Nanos(35 * MS)))
        );
        assert_eq!(
            service("lognormal(20ms, 1.0)"),
            Ok(Service::LogNormal(Nanos(20 * MS), 1.0))
        );
    }

    #[test]
    fn a_bad_service_says_what_is_accepted() {
        for bad in [
            "exp(0ms)",
            "exp(20)",
            "gamma(1s)",
            "uniform(9ms, 1ms)",
            "exp(1s, 2s)",
            "20ms",
        ] {
            let e = service(bad).unwrap_err();
            assert!(!e.is_empty(), "{bad}");
        }
        assert!(service("gamma(1s)").unwrap_err().contains("exp(MEAN)"));
    }
}
