//! The `bursty` pattern's fields (see [`crate::traffic::bursty`]), and its echo.

use serde_json::{json, Value};

use super::poisson::opt_poisson_rate;
use super::{cost_field, synthetic_clients, ParseCtx};
use crate::clock::Nanos;
use crate::error::InputError;
use crate::fields::Fields;
use crate::traffic::bursty::*;
use crate::traffic::poisson::MIN_MEAN_GAP_NS;

pub fn parse(f: &mut Fields, ctx: &mut ParseCtx) -> Result<Bursty, InputError> {
    let count = f
        .opt_count_max("clients", 1, super::MAX_CLIENTS)?
        .unwrap_or(1);
    let form = match f.opt_str("form")? {
        None | Some("on_off") => Form::OnOff {
            rate: opt_poisson_rate(f, "rate")?
                .ok_or_else(|| f.missing("rate", "the rate while on, e.g. \"100/1s\""))?,
            rate_off: opt_poisson_rate(f, "rate_off")?,
            on: mean_period(f, "on")?
                .ok_or_else(|| f.missing("on", "the mean on period, e.g. \"2s\""))?,
            off: mean_period(f, "off")?
                .ok_or_else(|| f.missing("off", "the mean off period, e.g. \"8s\""))?,
        },
        Some("periodic") => {
            let burst = f
                .opt_count("burst", 1)?
                .ok_or_else(|| f.missing("burst", "requests per burst, e.g. 50"))?;
            let period = f
                .opt_duration("period", false)?
                .ok_or_else(|| f.missing("period", "time between bursts, e.g. \"5s\""))?;
            let spread = f.opt_duration("spread", true)?.unwrap_or(Nanos::ZERO);
            if spread > period {
                return Err(InputError::new(format!(
                    "{}: \"{spread}\" — must be at most the period ({period})",
                    f.at("spread")
                )));
            }
            let phase = super::steady::parse_phase(f)?;
            Form::Periodic {
                burst,
                period,
                spread,
                phase,
            }
        }
        Some(other) => {
            return Err(InputError::new(format!(
                "{}: {other_q} — accepted: \"on_off\", \"periodic\"",
                f.at("form"),
                other_q = crate::error::quoted(other)
            )))
        }
    };
    let cost = cost_field(f)?;
    let clients = synthetic_clients(f, ctx, count, "clients")?;
    Ok(Bursty {
        form,
        cost,
        clients,
    })
}

pub fn echo(p: &Bursty) -> Value {
    let mut v = match p.form {
        Form::OnOff {
            rate,
            rate_off,
            on,
            off,
        } => json!({
            "form": "on_off",
            "rate": rate.to_string(),
            "rate_off": rate_off.map(|r| r.to_string()),
            "on": on.to_string(),
            "off": off.to_string(),
        }),
        Form::Periodic {
            burst,
            period,
            spread,
            phase,
        } => json!({
            "form": "periodic",
            "burst": burst,
            "period": period.to_string(),
            "spread": spread.to_string(),
            "phase": super::steady::phase_text(phase),
        }),
    };
    v["pattern"] = json!("bursty");
    v["clients"] = json!(p.clients.len());
    v["cost"] = json!(p.cost);
    v
}

/// `on` or `off`: a mean period, drawn from an exponential distribution and
/// rounded to whole ns like a Poisson gap, so at least
/// [`MIN_MEAN_GAP_NS`] long.
fn mean_period(f: &mut Fields, key: &str) -> Result<Option<Nanos>, InputError> {
    let Some(d) = f.opt_duration(key, false)? else {
        return Ok(None);
    };
    if (d.0 as u128) < MIN_MEAN_GAP_NS {
        let value = f.peek(key).expect("the duration was just read");
        return Err(f.error(
            key,
            value,
            format_args!(
                "periods are drawn in whole nanoseconds, so a mean period must be at least {}",
                Nanos(MIN_MEAN_GAP_NS as u64)
            ),
        ));
    }
    Ok(Some(d))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::StreamCtx;

    #[test]
    fn on_off_periods_and_rates_below_the_clock_resolution_are_refused() {
        let parse = |text: &str| {
            let table: toml::Table = text.parse().unwrap();
            let mut f = Fields::new("traffic[0]", &table);
            let mut population = crate::population::Population::default();
            let mut ctx = ParseCtx {
                defaults: &crate::scenario::Defaults {
                    limit: 10,
                    window: Nanos::from_secs(1),
                },
                origin: &crate::Origin::File("s.toml".into()),
                population: &mut population,
                index: 0,
                name: "bursty",
                default_prefix: "c".to_string(),
                reads_default_limit: false,
            };
            parse(&mut f, &mut ctx).map_err(|e| e.message().to_string())
        };
        let e = parse("rate = \"7/3ns\"\non = \"1s\"\noff = \"1s\"").unwrap_err();
        assert!(
            e.starts_with("traffic[0].rate: \"7/3ns\" — a mean gap of"),
            "{e}"
        );
        let e =
            parse("rate = \"1/1s\"\non = \"1s\"\noff = \"1s\"\nrate_off = \"2/1us\"").unwrap_err();
        assert!(e.starts_with("traffic[0].rate_off: \"2/1us\""), "{e}");
        let e = parse("rate = \"1/1s\"\non = \"999ns\"\noff = \"1s\"").unwrap_err();
        assert_eq!(
            e,
            "traffic[0].on: \"999ns\" — periods are drawn in whole nanoseconds, so a mean period must be at least 1us"
        );
        assert!(parse("rate = \"1/1us\"\non = \"1us\"\noff = \"1us\"").is_ok());
        // A periodic burst every nanosecond is not below the resolution:
        // it ends, with exactly one burst per period.
        let b = parse("form = \"periodic\"\nburst = 3\nperiod = \"1ns\"").unwrap();
        let ctx = StreamCtx {
            seed: 5,
            end: Nanos(1_000),
        };
        let mut s = b.streams(0, ctx).pop().unwrap();
        assert_eq!(std::iter::from_fn(|| s.next().unwrap()).count(), 3_000);
    }
}
