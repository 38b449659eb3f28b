//! The version-ranged schema: schema-gen's rows of every Kubernetes version merged into one list
//! in which each row records the versions it holds in (`schema-gen/schema.tsv`), the way
//! informer-gen merges the compact types (docs/decisions/19-one-version-ranged-schema-model.md).
//!
//! A row is a kind (`K`), a message (`M`) or a field (`F`). Field numbers are stable across
//! versions, so a field whose type, JSON name or presence changed is two rows with the same
//! number and disjoint versions; in each version exactly one holds.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use anyhow::{Context, bail};

/// One line of schema-gen's output, without its versions.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Row {
    /// A top-level kind and its message.
    Kind {
        group: String,
        version: String,
        kind: String,
        message: String,
    },
    /// A message, by full name (`api.core.v1.Pod`).
    Message { name: String },
    /// A field of a message.
    Field(Field),
}

/// One field of a message.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Field {
    pub(super) message: String,
    pub(super) tag: u32,
    pub(super) json: String,
    /// `string`, `bytes`, `int32`, `int64`, `bool`, `double` or `message`.
    pub(super) ty: String,
    /// `Single`, `Repeated`, `Map` or `Inline`.
    pub(super) label: String,
    /// The message type of a `message` field (or map value).
    pub(super) msg: Option<String>,
    pub(super) omit_zero: bool,
}

/// Kubernetes minor versions (`33` for 1.33).
pub(super) type Versions = BTreeSet<u32>;

/// Every row with the versions it holds in, and every version read.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Model {
    pub(super) every: Versions,
    pub(super) rows: BTreeMap<Row, Versions>,
}

/// `1.MM` -> `MM`.
pub(super) fn minor(version: &str) -> anyhow::Result<u32> {
    version
        .strip_prefix("1.")
        .and_then(|m| m.parse().ok())
        .with_context(|| format!("{version:?} is not a Kubernetes version 1.MM"))
}

impl Row {
    /// Parses the tab-separated columns of one row (after the versions column).
    fn parse(cols: &[&str]) -> Option<Row> {
        let s = |i: usize| cols.get(i).map(|c| (*c).to_owned());
        Some(match (cols.first()?, cols.len()) {
            (&"K", 5) => Row::Kind {
                group: s(1)?,
                version: s(2)?,
                kind: s(3)?,
                message: s(4)?,
            },
            (&"M", 2) => Row::Message { name: s(1)? },
            (&"F", 8) => Row::Field(Field {
                message: s(1)?,
                tag: cols[2].parse().ok()?,
                json: s(3)?,
                ty: s(4)?,
                label: s(5)?,
                msg: (cols[6] != "-").then(|| cols[6].to_owned()),
                omit_zero: cols[7].parse().ok()?,
            }),
            _ => return None,
        })
    }

    fn columns(&self) -> String {
        match self {
            Row::Kind {
                group,
                version,
                kind,
                message,
            } => format!("K\t{group}\t{version}\t{kind}\t{message}"),
            Row::Message { name } => format!("M\t{name}"),
            Row::Field(f) => format!(
                "F\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                f.message,
                f.tag,
                f.json,
                f.ty,
                f.label,
                f.msg.as_deref().unwrap_or("-"),
                f.omit_zero
            ),
        }
    }

    /// The order of schema.tsv: kinds, then each message followed by its fields by number.
    fn order(&self) -> (u8, &str, u8, u32) {
        match self {
            Row::Kind { group, .. } => (0, group, 0, 0),
            Row::Message { name } => (1, name, 0, 0),
            Row::Field(f) => (1, &f.message, 1, f.tag),
        }
    }
}

impl Model {
    /// Merges schema-gen's output of each version (`(minor, output)`).
    pub(super) fn merge(outputs: &[(u32, String)]) -> anyhow::Result<Model> {
        let mut model = Model {
            every: outputs.iter().map(|(v, _)| *v).collect(),
            rows: BTreeMap::new(),
        };
        for (version, text) in outputs {
            for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.is_empty()) {
                let cols: Vec<&str> = line.split('\t').collect();
                let row = Row::parse(&cols).with_context(|| {
                    format!(
                        "schema-gen for Kubernetes 1.{version}, line {}: {line:?}",
                        i + 1
                    )
                })?;
                model.rows.entry(row).or_default().insert(*version);
            }
        }
        model.check()?;
        Ok(model)
    }

    /// Reads `schema.tsv` (`path` names it in errors).
    pub(super) fn parse(text: &str, path: &str) -> anyhow::Result<Model> {
        let mut model = Model {
            every: Versions::new(),
            rows: BTreeMap::new(),
        };
        for (i, line) in text.lines().enumerate() {
            let at = || format!("{path}:{}: {line:?}", i + 1);
            if let Some(list) = line.strip_prefix("# versions:") {
                for v in list.split_whitespace() {
                    model.every.insert(minor(v).with_context(at)?);
                }
                continue;
            }
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            let cols: Vec<&str> = line.split('\t').collect();
            let versions = parse_versions(cols[0], &model.every).with_context(at)?;
            let row = Row::parse(&cols[1..]).with_context(at)?;
            model.rows.insert(row, versions);
        }
        if model.every.is_empty() {
            bail!("{path} has no `# versions:` line");
        }
        model.check().with_context(|| format!("in {path}"))?;
        Ok(model)
    }

    /// `schema.tsv`, with a header naming `command`.
    pub(super) fn to_tsv(&self, command: &str) -> String {
        let every: Vec<String> = self.every.iter().map(|m| format!("1.{m}")).collect();
        let mut out = format!(
            "# @generated by {command} (xtask/src/proto_schema/) from schema-gen run on the Go modules schema-gen/k8s-1.MM/ of every Kubernetes version; do not edit, run `{command}`\n\
             # The protobuf schema of the built-in kinds (docs/decisions/22-one-protobuf-table-for-every-kubernetes-version.md),\n\
             # one row per kind (K), message (M) and field (F), each with the versions it holds in (`*`: all).\n\
             #   <versions>  K <group> <version> <kind> <message>\n\
             #   <versions>  M <message>\n\
             #   <versions>  F <message> <number> <json> <type> <label> <message type> <omit zero>\n\
             # versions: {}\n",
            every.join(" ")
        );
        let mut rows: Vec<(&Row, &Versions)> = self.rows.iter().collect();
        rows.sort_by(|a, b| (a.0.order(), a.1.first(), a.0).cmp(&(b.0.order(), b.1.first(), b.0)));
        for (row, versions) in rows {
            let _ = writeln!(
                out,
                "{}\t{}",
                format_versions(versions, &self.every),
                row.columns()
            );
        }
        out
    }

    /// That every version's schema is whole: each field and kind in a version refers to messages
    /// of that version, and no message has two fields with one number or more than 256 fields
    /// (the deserializer keeps a 256-bit set of the fields it has seen).
    fn check(&self) -> anyhow::Result<()> {
        for &v in &self.every {
            let holds = |row: &Row| self.rows.get(row).is_some_and(|vs| vs.contains(&v));
            let exists = |name: &str| {
                holds(&Row::Message {
                    name: name.to_owned(),
                })
            };
            let mut tags: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
            for (row, versions) in &self.rows {
                if !versions.contains(&v) {
                    continue;
                }
                match row {
                    Row::Kind { kind, message, .. } if !exists(message) => {
                        bail!(
                            "Kubernetes 1.{v}: kind {kind} is message {message}, which 1.{v} lacks"
                        )
                    }
                    Row::Field(f) => {
                        let missing = std::iter::once(&f.message)
                            .chain(&f.msg)
                            .find(|m| !exists(m));
                        if let Some(m) = missing {
                            bail!(
                                "Kubernetes 1.{v}: field {}.{} needs message {m}, which 1.{v} lacks",
                                f.message,
                                f.json
                            );
                        }
                        let seen = tags.entry(&f.message).or_default();
                        if !seen.insert(f.tag) {
                            bail!(
                                "Kubernetes 1.{v}: {} has two fields numbered {}",
                                f.message,
                                f.tag
                            );
                        }
                        if seen.len() > 256 {
                            bail!("Kubernetes 1.{v}: {} has more than 256 fields", f.message);
                        }
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

/// `*` for every version, else runs of versions (`1.33-1.35,1.37`).
fn format_versions(versions: &Versions, every: &Versions) -> String {
    if versions == every {
        return "*".to_owned();
    }
    runs(versions, every)
        .iter()
        .map(|(a, b)| {
            if a == b {
                format!("1.{a}")
            } else {
                format!("1.{a}-1.{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn parse_versions(text: &str, every: &Versions) -> anyhow::Result<Versions> {
    if text == "*" {
        return Ok(every.clone());
    }
    let mut out = Versions::new();
    for run in text.split(',') {
        let (a, b) = run.split_once('-').unwrap_or((run, run));
        let (a, b) = (minor(a)?, minor(b)?);
        out.extend(every.iter().filter(|v| (a..=b).contains(*v)));
    }
    if out.is_empty() || !out.is_subset(every) {
        bail!("versions {text:?} are not among {every:?}");
    }
    Ok(out)
}

/// `versions` as runs of consecutive members of `every` (first, last).
pub(super) fn runs(versions: &Versions, every: &Versions) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = Vec::new();
    let mut previous_in = false;
    for v in every {
        let is_in = versions.contains(v);
        match (previous_in, is_in, out.last_mut()) {
            (true, true, Some(run)) => run.1 = *v,
            (_, true, _) => out.push((*v, *v)),
            _ => {}
        }
        previous_in = is_in;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(v: &[u32]) -> Versions {
        v.iter().copied().collect()
    }

    #[test]
    fn versions_round_trip() {
        let every = set(&[33, 34, 35, 36, 37]);
        for (vs, text) in [
            (set(&[33, 34, 35, 36, 37]), "*"),
            (set(&[34, 35, 36, 37]), "1.34-1.37"),
            (set(&[33]), "1.33"),
            (set(&[33, 34, 36]), "1.33-1.34,1.36"),
        ] {
            assert_eq!(format_versions(&vs, &every), text);
            assert_eq!(parse_versions(text, &every).unwrap(), vs);
        }
        assert!(parse_versions("1.32", &every).is_err());
    }

    #[test]
    fn merge_records_the_versions_of_each_row() {
        let field = |tag: u32, json: &str| {
            format!("F\tapi.core.v1.Pod\t{tag}\t{json}\tstring\tSingle\t-\tfalse")
        };
        let old = format!("M\tapi.core.v1.Pod\n{}\n", field(1, "a"));
        let new = format!("M\tapi.core.v1.Pod\n{}\n{}\n", field(1, "a"), field(2, "b"));
        let model = Model::merge(&[(33, old), (34, new.clone()), (35, new)]).unwrap();
        let b = Row::parse(&field(2, "b").split('\t').collect::<Vec<_>>()).unwrap();
        assert_eq!(model.rows[&b], set(&[34, 35]));
        let tsv = model.to_tsv("cargo codegen");
        assert!(tsv.contains("1.34-1.35\tF\tapi.core.v1.Pod\t2\tb"), "{tsv}");
        assert_eq!(Model::parse(&tsv, "schema.tsv").unwrap(), model);
    }

    #[test]
    fn a_field_needs_its_message_in_each_version() {
        let old = "M\tapi.core.v1.Pod\n".to_owned();
        let new = "M\tapi.core.v1.Pod\nM\tapi.core.v1.New\nF\tapi.core.v1.Pod\t1\tnew\tmessage\tSingle\tapi.core.v1.New\tfalse\n";
        assert!(Model::merge(&[(33, old.clone()), (34, new.to_owned())]).is_ok());
        let broken = "M\tapi.core.v1.Pod\nF\tapi.core.v1.Pod\t1\tnew\tmessage\tSingle\tapi.core.v1.New\tfalse\n";
        let err = Model::merge(&[(33, broken.to_owned())]).unwrap_err();
        assert!(
            err.to_string().contains("needs message api.core.v1.New"),
            "{err}"
        );
    }
}
