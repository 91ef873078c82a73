//! The shipped scenarios, embedded in the binary so `ratesim run boundary`
//! works from any directory. Each is the file under `scenarios/` verbatim,
//! with any trace it names.

/// One built-in scenario and the files its paths refer to.
#[derive(Debug)]
pub struct Builtin {
    pub name: &'static str,
    pub toml: &'static str,
    /// `(path relative to the scenario, contents)`.
    pub files: &'static [(&'static str, &'static [u8])],
}

pub static SCENARIOS: &[Builtin] = &[
    Builtin {
        name: "boundary",
        toml: include_str!("../../../scenarios/boundary.toml"),
        files: &[],
    },
    Builtin {
        name: "steady",
        toml: include_str!("../../../scenarios/steady.toml"),
        files: &[],
    },
    Builtin {
        name: "poisson",
        toml: include_str!("../../../scenarios/poisson.toml"),
        files: &[],
    },
    Builtin {
        name: "bursty",
        toml: include_str!("../../../scenarios/bursty.toml"),
        files: &[],
    },
    Builtin {
        name: "nat",
        toml: include_str!("../../../scenarios/nat.toml"),
        files: &[],
    },
    Builtin {
        name: "retry-storm",
        toml: include_str!("../../../scenarios/retry-storm.toml"),
        files: &[],
    },
    Builtin {
        name: "many-keys",
        toml: include_str!("../../../scenarios/many-keys.toml"),
        files: &[],
    },
    Builtin {
        name: "distributed",
        toml: include_str!("../../../scenarios/distributed.toml"),
        files: &[],
    },
    Builtin {
        name: "outage",
        toml: include_str!("../../../scenarios/outage.toml"),
        files: &[],
    },
    Builtin {
        name: "race",
        toml: include_str!("../../../scenarios/race.toml"),
        files: &[],
    },
    Builtin {
        name: "pick-a-limit",
        toml: include_str!("../../../scenarios/pick-a-limit.toml"),
        files: &[],
    },
    Builtin {
        name: "plans",
        toml: include_str!("../../../scenarios/plans.toml"),
        files: &[],
    },
    Builtin {
        name: "protect-backend",
        toml: include_str!("../../../scenarios/protect-backend.toml"),
        files: &[],
    },
    Builtin {
        name: "libraries",
        toml: include_str!("../../../scenarios/libraries.toml"),
        files: &[
            (
                "traces/libraries.csv",
                include_bytes!("../../../scenarios/traces/libraries.csv"),
            ),
            (
                "traces/libraries-whale.csv",
                include_bytes!("../../../scenarios/traces/libraries-whale.csv"),
            ),
        ],
    },
    Builtin {
        name: "trace",
        toml: include_str!("../../../scenarios/trace.toml"),
        files: &[(
            "traces/sample.csv",
            include_bytes!("../../../scenarios/traces/sample.csv"),
        )],
    },
    Builtin {
        name: "access-log",
        toml: include_str!("../../../scenarios/access-log.toml"),
        files: &[(
            "traces/access.log",
            include_bytes!("../../../scenarios/traces/access.log"),
        )],
    },
];

/// The built-in scenario called `name` (with or without `.toml`).
pub fn find(name: &str) -> Option<&'static Builtin> {
    let name = name.strip_suffix(".toml").unwrap_or(name);
    SCENARIOS.iter().find(|b| b.name == name)
}

/// A file shipped with a built-in scenario.
pub fn file(b: &Builtin, rel: &str) -> Option<&'static [u8]> {
    let rel = rel.strip_prefix("./").unwrap_or(rel);
    b.files
        .iter()
        .find(|(p, _)| *p == rel)
        .map(|(_, data)| *data)
}
