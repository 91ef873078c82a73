//! The `boundary` pattern's fields (see [`crate::traffic::boundary`]), and its echo.

use serde_json::{json, Value};

use super::{cost_field, synthetic_clients, ParseCtx};
use crate::clock::Nanos;
use crate::error::InputError;
use crate::fields::Fields;
use crate::traffic::boundary::*;

pub fn parse(f: &mut Fields, ctx: &mut ParseCtx) -> Result<Boundary, InputError> {
    let count = f
        .opt_count_max("clients", 1, super::MAX_CLIENTS)?
        .unwrap_or(1);
    let burst = match f.opt_count("burst", 1)? {
        Some(b) => b,
        None => {
            ctx.reads_default_limit = true;
            ctx.defaults.limit
        }
    };
    let window = f
        .opt_duration("window", false)?
        .unwrap_or(ctx.defaults.window);
    let before = f
        .opt_duration("before", false)?
        .unwrap_or(Nanos::from_millis(1).min(window));
    if before > window {
        return Err(InputError::new(format!(
            "{}: \"{before}\" — must be at most the window ({window})",
            f.at("before")
        )));
    }
    let after = f.opt_duration("after", true)?.unwrap_or(Nanos::ZERO);
    if after >= window {
        return Err(InputError::new(format!(
            "{}: \"{after}\" — must be shorter than the window ({window})",
            f.at("after")
        )));
    }
    let every = f.opt_count("every", 1)?.unwrap_or(1);
    // The next boundary's first burst must not come before this one's
    // second: before + after ≤ every · window.
    let spacing = (every as u128) * window.0 as u128;
    if before.0 as u128 + after.0 as u128 > spacing {
        return Err(InputError::new(format!(
            "{}: \"{after}\" — before ({before}) + after must be at most the time between bursted boundaries ({every} × {window}), or the bursts of one boundary would come after the next boundary's",
            f.at("after")
        )));
    }
    let cost = cost_field(f)?;
    let clients = synthetic_clients(f, ctx, count, "clients")?;
    Ok(Boundary {
        burst,
        window,
        before,
        after,
        every,
        cost,
        clients,
    })
}

pub fn echo(p: &Boundary) -> Value {
    json!({
        "pattern": "boundary",
        "clients": p.clients.len(),
        "burst": p.burst,
        "window": p.window.to_string(),
        "before": p.before.to_string(),
        "after": p.after.to_string(),
        "every": p.every,
        "cost": p.cost,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_that_would_overlap_the_next_boundary_are_refused() {
        // Found by the fuzz suite: before = window with after > 0 sent the
        // next boundary's first burst before this one's second (time went
        // backwards; a debug build panicked).
        let parse = |before: &str, after: &str| {
            let table: toml::Table = format!("before = \"{before}\"\nafter = \"{after}\"")
                .parse()
                .unwrap();
            let mut f = Fields::new("traffic[0]", &table);
            let mut population = crate::population::Population::default();
            let mut ctx = ParseCtx {
                defaults: &crate::scenario::Defaults {
                    limit: 5,
                    window: Nanos::from_millis(100),
                },
                origin: &crate::Origin::File("b.toml".into()),
                population: &mut population,
                index: 0,
                name: "boundary",
                default_prefix: "boundary-".to_string(),
                reads_default_limit: false,
            };
            parse(&mut f, &mut ctx)
        };
        let err = parse("100ms", "1ns").unwrap_err();
        assert!(
            err.message().contains("traffic[0].after"),
            "{}",
            err.message()
        );
        assert!(parse("100ms", "0s").is_ok());
        assert!(parse("60ms", "40ms").is_ok());
        assert!(parse("60ms", "41ms").is_err());
    }
}
