//! `summary.json`: the scenario as validated, the seed, the version and every
//! metric of every limiter — what `ratesim run --format json` prints too.

use serde_json::{json, Value};

use super::{opt_ms, Report};
use crate::clock::decimal_places;

pub fn summary(report: &Report) -> Value {
    json!({
        "ratesim_version": report.version,
        "scenario": report.scenario,
        "seed": report.seed,
        "limit": report.limit,
        "window_ns": report.window.0,
        "duration_ns": report.duration.0,
        "resolution_ns": report.resolution.0,
        "limiters": report.limiters.iter().map(|l| json!({
            "limiter": l.name,
            "algorithm": l.algorithm,
            "key_by": l.key_by,
            "params": l.params,
            "attempts": l.attempts,
            "admitted": l.admitted,
            "delayed": l.delayed,
            "rejected": l.rejected,
            "passed": l.passed(),
            "peak_in_window": l.peak_in_window,
            "peak_window_end_ns": l.peak_at.as_ref().map(|(t, _)| t.0),
            "peak_key": l.peak_at.as_ref().map(|(_, k)| k.clone()),
            "limit": report.limit,
            "delay_p50_ms": ms_number(opt_ms(l.delay_p50)),
            "delay_p99_ms": ms_number(opt_ms(l.delay_p99)),
            "delay_max_ms": ms_number(opt_ms(l.delay_max)),
            "state_bytes_per_key_mean": ms_number(l.state_mean_text()),
            "state_bytes_per_key_peak": l.state_peak,
            "keys": l.keys,
        })).zip(report.limiters.iter().map(|l| json!({
            "logical_requests": l.logical,
            "retry_amplification": ms_number(l.amplification_text()),
            "gave_up": l.gave_up,
            "pending_at_end": l.pending_at_end,
            "time_to_success_p50_ms": ms_number(opt_ms(l.time_to_success_p50)),
            "time_to_success_p99_ms": ms_number(opt_ms(l.time_to_success_p99)),
            "client_pass_ratio_min": ms_number(l.pass_ratio_min_text()),
            "client_pass_ratio_spread": l.pass_ratio_spread.map(|q| {
                let [min, p10, p50, p90, max] = q.map(|(p, n)| {
                    ms_number(decimal_places(p as u128, n.max(1) as u128, 4))
                });
                json!({ "min": min, "p10": p10, "p50": p50, "p90": p90, "max": max })
            }),
            "fairness_jain": ms_number(l.fairness_text()),
            "collateral_share": ms_number(l.collateral_text()),
            "collateral_rejections": l.collateral.map(|(c, _)| c),
            "collateral_cost_share": ms_number(l.collateral_cost_text()),
        }))).zip(report.limiters.iter().map(|l| json!({
            "instances": l.instances,
            "scope": l.scope,
            "added_latency_p50_ms": ms_number(opt_ms(l.added_latency_p50)),
            "added_latency_p99_ms": ms_number(opt_ms(l.added_latency_p99)),
            "store_ops": l.store_ops,
            "store_ops_per_s": ms_number(l.store_ops_per_s_text(report.duration)),
            "fault_decisions": l.fault_decisions(),
            "unprotected_passes": l.fault_open,
            "fault_rejections": l.fault_closed,
            "fallback_decisions": l.fault_fallback,
            "cache_rejections": l.cache_rejections,
            "overshoot": l.overshoot,
            "overshoot_max": l.overshoot_max,
            "state_bytes_total_mean": ms_number(l.state_total_mean_text()),
            "state_bytes_total_peak": l.state_total_peak,
            "state_bytes_redis_per_key_mean": ms_number(l.redis_mean_text()),
            "state_bytes_redis_total_peak": l.redis_total_peak,
        }))).map(|((core, clients), deployment)| merge([core, clients, deployment])).collect::<Vec<_>>(),
    })
}

/// One object with the fields of all of `parts`, in order.
fn merge(parts: [Value; 3]) -> Value {
    let mut all = serde_json::Map::new();
    for part in parts {
        if let Value::Object(fields) = part {
            all.extend(fields);
        }
    }
    Value::Object(all)
}

/// A decimal string as a JSON number (exactly as printed in the CSV), or null.
fn ms_number(text: String) -> Value {
    if text.is_empty() {
        return Value::Null;
    }
    serde_json::from_str(&text).unwrap_or(Value::String(text))
}

pub fn to_string(report: &Report) -> String {
    let mut s = serde_json::to_string_pretty(&summary(report)).expect("JSON values serialize");
    s.push('\n');
    s
}
