//! What the arm reads from its environment besides spate's own pipeline
//! file: the transform's parameters, which are the workload's, not spate's.
//!
//! Every variable the arm reads is a row of [`SETTINGS`]: the parser reads
//! them through it, and `spate-arm --settings-json` prints it as the arm's
//! option registry (options/spate/registry.json in spatec), so that what a
//! plan may set is what the arm reads. A variable under [`PREFIX`] that the
//! table does not hold is refused, since a misspelt name would otherwise
//! be ignored without a word.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::rows::Transform;

/// The prefix of the variables that are the arm's own. The others (the
/// `${VAR}` references of the pipeline file, the runtime's) are not.
pub const PREFIX: &str = "SPATEC_";
/// The variable naming the unit whose readings are dropped.
pub const DROP_UNIT: &str = "SPATEC_DROP_UNIT";
/// The variable holding the quality floor.
pub const QUALITY_FLOOR: &str = "SPATEC_QUALITY_FLOOR";

/// How a setting's value is parsed, named as the registry names its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Any text.
    String,
    /// A finite number.
    Float,
}

/// One environment variable the arm reads.
#[derive(Debug, Serialize)]
pub struct Setting {
    /// The variable's name.
    #[serde(rename = "key")]
    pub name: &'static str,
    /// How its value is parsed.
    #[serde(rename = "type")]
    pub kind: Kind,
    /// What the arm reads when it is unset; `None`: it has no default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<&'static str>,
    /// The arm refuses to start without it.
    #[serde(skip_serializing_if = "is_false")]
    pub required: bool,
    /// What it sets, one line.
    pub doc: &'static str,
}

fn is_false(b: &bool) -> bool {
    !b
}

/// Every variable the arm reads, sorted by name. Both are required: a
/// default here would be a second copy of the workload's definition, free
/// to drift from it.
pub const SETTINGS: &[Setting] = &[
    Setting {
        name: DROP_UNIT,
        kind: Kind::String,
        default: None,
        required: true,
        doc: "the unit whose readings the transform drops",
    },
    Setting {
        name: QUALITY_FLOOR,
        kind: Kind::Float,
        default: None,
        required: true,
        doc: "the transform drops a reading whose quality is known and below it",
    },
];

/// The settings table as an option registry, the shape spatec's
/// `options.Registry` decodes.
#[derive(Serialize)]
pub struct Registry {
    system: &'static str,
    version: &'static str,
    source: &'static str,
    options: &'static [Setting],
}

/// The arm's option registry: [`SETTINGS`], under the arm's name and
/// version.
pub fn registry() -> Registry {
    Registry {
        system: "spate-arm",
        version: env!("CARGO_PKG_VERSION"),
        source: "the SETTINGS table of entrants/spate/arm (src/settings.rs), through which the arm reads its environment; printed by spate-arm --settings-json",
        options: SETTINGS,
    }
}

/// Reads the transform's parameters from `vars` (the process environment,
/// or a test's), through [`SETTINGS`]. Every problem is reported at once,
/// a line each: a variable under [`PREFIX`] that is not a setting (with
/// the setting nearest to it), a required one unset, a value that does not
/// parse.
pub fn transform<I, K, V>(vars: I) -> Result<Transform, String>
where
    I: IntoIterator<Item = (K, V)>,
    K: Into<String>,
    V: Into<String>,
{
    let vars: BTreeMap<String, String> = vars
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    let known: Vec<&str> = SETTINGS.iter().map(|s| s.name).collect();
    let mut errs: Vec<String> = vars
        .keys()
        .filter(|k| k.starts_with(PREFIX) && !known.contains(&k.as_str()))
        .map(|k| match close(k, &known) {
            Some(near) => format!("{k} is not a setting of this arm; did you mean {near}?"),
            None => format!(
                "{k} is not a setting of this arm; it reads {}",
                known.join(", ")
            ),
        })
        .collect();

    let mut values = BTreeMap::new();
    for s in SETTINGS {
        let Some(text) = vars
            .get(s.name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
            .or(s.default)
        else {
            if s.required {
                errs.push(format!(
                    "{} is not set; the plan sets it from the workload's transform",
                    s.name
                ));
            }
            continue;
        };
        match s.kind {
            Kind::String => {}
            Kind::Float => {
                if !text.parse::<f64>().is_ok_and(f64::is_finite) {
                    errs.push(format!("{}={text:?} is not a number, such as 0.2", s.name));
                    continue;
                }
            }
        }
        values.insert(s.name, text.to_owned());
    }
    if !errs.is_empty() {
        return Err(errs.join("\n"));
    }
    Ok(Transform {
        drop_unit: values[DROP_UNIT].clone(),
        // Parsed above, as its kind says.
        quality_floor: values[QUALITY_FLOOR].parse().unwrap_or_default(),
    })
}

/// The name nearest to `name` when it is close enough to be what was meant
/// (at most a third of its letters differ), as spatec's own messages
/// choose it (internal/nearest).
fn close<'a>(name: &str, names: &[&'a str]) -> Option<&'a str> {
    let best = names
        .iter()
        .min_by_key(|n| (distance(name, n), **n))
        .copied()?;
    let d = distance(name, best);
    (d > 0 && 3 * d <= name.len().max(best.len())).then_some(best)
}

/// The optimal-string-alignment distance between `a` and `b`: edits, with
/// two neighbouring letters swapped counted as one.
fn distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut d = vec![vec![0; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    #[test]
    fn both_parameters_are_required() {
        let err = transform(env(&[(DROP_UNIT, "drop")])).unwrap_err();
        assert_eq!(
            err,
            "SPATEC_QUALITY_FLOOR is not set; the plan sets it from the workload's transform"
        );
        let err = transform(env(&[(DROP_UNIT, "drop"), (QUALITY_FLOOR, "low")])).unwrap_err();
        assert_eq!(
            err,
            "SPATEC_QUALITY_FLOOR=\"low\" is not a number, such as 0.2"
        );
        let t = transform(env(&[(DROP_UNIT, "drop"), (QUALITY_FLOOR, "0.2")])).unwrap();
        assert_eq!(t.drop_unit, "drop");
        assert_eq!(t.quality_floor, 0.2);
    }

    #[test]
    fn an_unknown_setting_is_refused_with_the_nearest() {
        let good = [(DROP_UNIT, "drop"), (QUALITY_FLOOR, "0.2")];
        for (name, want) in [
            (
                "SPATEC_DROP_UNITS",
                "SPATEC_DROP_UNITS is not a setting of this arm; did you mean SPATEC_DROP_UNIT?",
            ),
            (
                "SPATEC_QUALTIY_FLOOR",
                "SPATEC_QUALTIY_FLOOR is not a setting of this arm; did you mean SPATEC_QUALITY_FLOOR?",
            ),
            (
                "SPATEC_BATCH_ROWS",
                "SPATEC_BATCH_ROWS is not a setting of this arm; it reads SPATEC_DROP_UNIT, SPATEC_QUALITY_FLOOR",
            ),
        ] {
            let mut vars = env(&good);
            vars.push((name.into(), "1".into()));
            assert_eq!(transform(vars).unwrap_err(), want);
        }
    }

    #[test]
    fn only_the_prefix_is_the_arms() {
        let vars = env(&[
            (DROP_UNIT, "drop"),
            (QUALITY_FLOOR, "0.2"),
            ("CLICKHOUSE_USER", "default"),
            ("PATH", "/bin"),
            ("SPATECX", "1"),
        ]);
        assert!(transform(vars).is_ok());
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let err = transform(env(&[("SPATEC_DROP_UNTI", "drop")])).unwrap_err();
        assert_eq!(
            err.lines().collect::<Vec<_>>(),
            [
                "SPATEC_DROP_UNTI is not a setting of this arm; did you mean SPATEC_DROP_UNIT?",
                "SPATEC_DROP_UNIT is not set; the plan sets it from the workload's transform",
                "SPATEC_QUALITY_FLOOR is not set; the plan sets it from the workload's transform",
            ]
        );
    }

    #[test]
    fn the_table_is_sorted_and_under_the_prefix() {
        let names: Vec<_> = SETTINGS.iter().map(|s| s.name).collect();
        assert!(names.is_sorted(), "{names:?} is not sorted");
        assert!(names.iter().all(|n| n.starts_with(PREFIX)), "{names:?}");
        names.windows(2).for_each(|w| assert_ne!(w[0], w[1]));
    }

    #[test]
    fn distance_counts_a_swap_as_one() {
        assert_eq!(distance("SPATEC_QUALTIY_FLOOR", QUALITY_FLOOR), 1);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(close("SPATEC_XYZ", &[DROP_UNIT]), None);
    }
}
