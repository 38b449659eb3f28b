//! The version-ranged schema: schema-gen's rows of every Kubernetes version merged into one list
//! in which each row records the versions it holds in (`schema-gen/schema.tsv`), the way
//! informer-gen merges the compact types (docs/decisions/19-one-version-ranged-schema-model.md).
//!
//! A row is a kind (`K`), a message (`M`) or a field (`F`). Field numbers are stable across
//! versions, so a field whose type, JSON name or presence changed is two rows with the same
//! number and disjoint versions; in each version exactly one holds.
//!
//! Beside what informer-proto's table needs, a kind row carries its client (plural, scope and
//! verbs, from its Go sources' comment tags) and a field row whether it is required (its
//! +required/+optional marker, else its JSON tag); the table ignores both ([`Model::table_rows`]).
//! schema-gen's doc rows (`D`, each message's and field's first sentence) are kept apart
//! ([`Docs`], `schema-gen/docs.tsv`), from the newest version that has the item, so that a doc
//! rewritten in one release does not split the item's row.

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
        /// What client-gen makes of it; `None` for a kind without `+genclient`.
        client: Option<Client>,
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
    /// Required by kube-openapi's rule: `+required`, else not `+optional` and no
    /// `omitempty`/`omitzero` in its JSON tag.
    pub(super) required: bool,
}

/// A kind's client, as client-gen reads its comment tags (`+genclient`,
/// `+genclient:nonNamespaced`, `+genclient:onlyVerbs`/`skipVerbs`, `+resourceName`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Client {
    /// The resource name (`pods`).
    pub(super) plural: String,
    pub(super) namespaced: bool,
    /// Sorted (`create`, `get`, `list`, `watch`, …).
    pub(super) verbs: Vec<String>,
}

/// The first sentence of each message (`(message, None)`) and field (`(message, Some(number))`)
/// comment, from the newest version that has it.
pub(super) type Docs = BTreeMap<(String, Option<u32>), String>;

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
            (&"K", 8) => Row::Kind {
                group: s(1)?,
                version: s(2)?,
                kind: s(3)?,
                message: s(4)?,
                client: Client::parse(cols[5], cols[6], cols[7])?,
            },
            (&"M", 2) => Row::Message { name: s(1)? },
            (&"F", 9) => Row::Field(Field {
                message: s(1)?,
                tag: cols[2].parse().ok()?,
                json: s(3)?,
                ty: s(4)?,
                label: s(5)?,
                msg: (cols[6] != "-").then(|| cols[6].to_owned()),
                omit_zero: cols[7].parse().ok()?,
                required: cols[8].parse().ok()?,
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
                client,
            } => format!(
                "K\t{group}\t{version}\t{kind}\t{message}\t{}",
                Client::columns(client.as_ref())
            ),
            Row::Message { name } => format!("M\t{name}"),
            Row::Field(f) => format!(
                "F\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
                f.message,
                f.tag,
                f.json,
                f.ty,
                f.label,
                f.msg.as_deref().unwrap_or("-"),
                f.omit_zero,
                f.required
            ),
        }
    }

    /// The row informer-proto's table is made of: without the client and `required` columns.
    fn table_row(&self) -> Row {
        let mut row = self.clone();
        match &mut row {
            Row::Kind { client, .. } => *client = None,
            Row::Field(f) => f.required = false,
            Row::Message { .. } => {}
        }
        row
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

impl Client {
    /// The `<plural> <namespaced> <verbs>` columns; `None` is `-` in each.
    fn parse(plural: &str, namespaced: &str, verbs: &str) -> Option<Option<Client>> {
        if plural == "-" {
            return (namespaced == "-" && verbs == "-").then_some(None);
        }
        let verbs: Vec<String> = match verbs {
            "-" => Vec::new(),
            list => list.split(',').map(str::to_owned).collect(),
        };
        if plural.is_empty() || verbs.iter().any(String::is_empty) || !verbs.is_sorted() {
            return None;
        }
        Some(Some(Client {
            plural: plural.to_owned(),
            namespaced: namespaced.parse().ok()?,
            verbs,
        }))
    }

    fn columns(client: Option<&Client>) -> String {
        match client {
            None => "-\t-\t-".to_owned(),
            Some(c) if c.verbs.is_empty() => format!("{}\t{}\t-", c.plural, c.namespaced),
            Some(c) => format!("{}\t{}\t{}", c.plural, c.namespaced, c.verbs.join(",")),
        }
    }
}

impl Model {
    /// Merges schema-gen's output of each version (`(minor, output)`, oldest first), and its
    /// docs, each from the newest version that has it.
    pub(super) fn merge(outputs: &[(u32, String)]) -> anyhow::Result<(Model, Docs)> {
        let mut model = Model {
            every: outputs.iter().map(|(v, _)| *v).collect(),
            rows: BTreeMap::new(),
        };
        let mut docs = Docs::new();
        for (version, text) in outputs {
            for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.is_empty()) {
                let at = || {
                    format!(
                        "schema-gen for Kubernetes 1.{version}, line {}: {line:?}",
                        i + 1
                    )
                };
                let cols: Vec<&str> = line.split('\t').collect();
                if cols[0] == "D" {
                    let (key, doc) = parse_doc(&cols[1..]).with_context(at)?;
                    docs.insert(key, doc);
                    continue;
                }
                let row = Row::parse(&cols).with_context(at)?;
                model.rows.entry(row).or_default().insert(*version);
            }
        }
        model.check()?;
        Ok((model, docs))
    }

    /// The rows informer-proto's table is made of: each without the client and `required`
    /// columns, which the table does not use, with the versions of the rows that differ only
    /// in those.
    pub(super) fn table_rows(&self) -> BTreeMap<Row, Versions> {
        let mut rows: BTreeMap<Row, Versions> = BTreeMap::new();
        for (row, versions) in &self.rows {
            rows.entry(row.table_row())
                .or_default()
                .extend(versions.iter().copied());
        }
        rows
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
             #   <versions>  K <group> <version> <kind> <message> <plural> <namespaced> <verbs>\n\
             #   <versions>  M <message>\n\
             #   <versions>  F <message> <number> <json> <type> <label> <message type> <omit zero> <required>\n\
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

/// The key and text of a doc row's columns (after `D`): `<message> <number or -> <text>`.
fn parse_doc(cols: &[&str]) -> Option<((String, Option<u32>), String)> {
    let [message, number, text] = cols else {
        return None;
    };
    let number = match *number {
        "-" => None,
        n => Some(n.parse().ok()?),
    };
    (!message.is_empty() && !text.is_empty())
        .then(|| (((*message).to_owned(), number), (*text).to_owned()))
}

/// `docs.tsv`, with a header naming `command`.
pub(super) fn docs_to_tsv(docs: &Docs, command: &str) -> String {
    let mut out = format!(
        "# @generated by {command} (xtask/src/proto_schema/) from schema-gen run on the Go modules schema-gen/k8s-1.MM/ of every Kubernetes version; do not edit, run `{command}`\n\
         # The first sentence of each message's and field's comment in generated.proto, from the newest version that has it.\n\
         #   <message> <number or -> <first sentence>\n"
    );
    for ((message, number), text) in docs {
        let number = number.map_or_else(|| "-".to_owned(), |n| n.to_string());
        let _ = writeln!(out, "{message}\t{number}\t{text}");
    }
    out
}

/// Reads `docs.tsv` (`path` names it in errors).
pub(super) fn parse_docs(text: &str, path: &str) -> anyhow::Result<Docs> {
    let mut docs = Docs::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split('\t').collect();
        let (key, doc) = parse_doc(&cols).with_context(|| format!("{path}:{}: {line:?}", i + 1))?;
        docs.insert(key, doc);
    }
    Ok(docs)
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
            format!("F\tapi.core.v1.Pod\t{tag}\t{json}\tstring\tSingle\t-\tfalse\tfalse")
        };
        let old = format!("M\tapi.core.v1.Pod\n{}\n", field(1, "a"));
        let new = format!("M\tapi.core.v1.Pod\n{}\n{}\n", field(1, "a"), field(2, "b"));
        let (model, _) = Model::merge(&[(33, old), (34, new.clone()), (35, new)]).unwrap();
        let b = Row::parse(&field(2, "b").split('\t').collect::<Vec<_>>()).unwrap();
        assert_eq!(model.rows[&b], set(&[34, 35]));
        let tsv = model.to_tsv("cargo codegen");
        assert!(tsv.contains("1.34-1.35\tF\tapi.core.v1.Pod\t2\tb"), "{tsv}");
        assert_eq!(Model::parse(&tsv, "schema.tsv").unwrap(), model);
    }

    /// The kinds' client columns, the fields' `required` and the docs survive schema.tsv and
    /// docs.tsv; a doc is the newest version's, and the table sees one row where only the new
    /// columns differ.
    #[test]
    fn client_required_and_docs_round_trip() {
        let out = |required: &str, verbs: &str, doc: &str| {
            format!(
                "K\t\tv1\tPod\tapi.core.v1.Pod\tpods\ttrue\t{verbs}\n\
                 K\t\tv1\tBinding\tapi.core.v1.Binding\t-\t-\t-\n\
                 K\timagepolicy.k8s.io\tv1alpha1\tImageReview\tapi.core.v1.Pod\timagereviews\tfalse\t-\n\
                 M\tapi.core.v1.Binding\nM\tapi.core.v1.Pod\n\
                 D\tapi.core.v1.Pod\t-\t{doc}\n\
                 F\tapi.core.v1.Pod\t1\tname\tstring\tSingle\t-\ttrue\t{required}\n\
                 D\tapi.core.v1.Pod\t1\tThe name.\n"
            )
        };
        let (model, docs) = Model::merge(&[
            (33, out("false", "get,list", "Old words.")),
            (34, out("true", "get,list,watch", "New words.")),
        ])
        .unwrap();
        let tsv = model.to_tsv("cargo codegen");
        assert!(
            tsv.contains("1.33\tK\t\tv1\tPod\tapi.core.v1.Pod\tpods\ttrue\tget,list\n"),
            "{tsv}"
        );
        assert!(
            tsv.contains("*\tK\t\tv1\tBinding\tapi.core.v1.Binding\t-\t-\t-\n"),
            "{tsv}"
        );
        assert!(tsv.contains("\timagereviews\tfalse\t-\n"), "{tsv}");
        assert!(
            tsv.contains("1.34\tF\tapi.core.v1.Pod\t1\tname\tstring\tSingle\t-\ttrue\ttrue\n"),
            "{tsv}"
        );
        assert_eq!(Model::parse(&tsv, "schema.tsv").unwrap(), model);
        let pod = |n| docs[&("api.core.v1.Pod".to_owned(), n)].as_str();
        assert_eq!((pod(None), pod(Some(1))), ("New words.", "The name."));
        let text = docs_to_tsv(&docs, "cargo codegen");
        assert_eq!(parse_docs(&text, "docs.tsv").unwrap(), docs);

        // The table: one row per kind, message and field, in both versions.
        let table = model.table_rows();
        assert_eq!(table.len(), 6, "{table:?}");
        assert!(table.values().all(|v| *v == set(&[33, 34])), "{table:?}");
        assert!(table.keys().all(|r| !matches!(
            r,
            Row::Kind {
                client: Some(_),
                ..
            }
        )));
    }

    #[test]
    fn malformed_client_columns_and_docs_are_refused() {
        for k in [
            "K\t\tv1\tPod\tapi.core.v1.Pod\tpods\ttrue\tlist,get",
            "K\t\tv1\tPod\tapi.core.v1.Pod\tpods\tyes\tget",
            "K\t\tv1\tPod\tapi.core.v1.Pod\t-\ttrue\t-",
            "K\t\tv1\tPod\tapi.core.v1.Pod\tpods\ttrue\tget,,list",
            "K\t\tv1\tPod\tapi.core.v1.Pod",
            "F\tapi.core.v1.Pod\t1\tname\tstring\tSingle\t-\tfalse",
        ] {
            assert_eq!(
                Row::parse(&k.split('\t').collect::<Vec<_>>()),
                None,
                "{k:?}"
            );
        }
        let err = parse_docs("# header\napi.core.v1.Pod\tone\tWords.\n", "docs.tsv").unwrap_err();
        assert!(err.to_string().starts_with("docs.tsv:2: "), "{err}");
    }

    /// Sample rows of the checked-in schema: core/v1 Pod (namespaced, every verb with status) and
    /// ComponentStatus (cluster-scoped; client-gen makes every verb although the API serves only
    /// get and list, which is why informer-gen's fixups keep it unwatchable).
    #[test]
    fn pod_and_component_status_rows() {
        use crate::proto_schema::{CRATE, DOCS, SCHEMA};
        let root = crate::project_root().join(CRATE);
        let read =
            |p: &str| std::fs::read_to_string(root.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
        let model = Model::parse(&read(SCHEMA), SCHEMA).unwrap();
        let docs = parse_docs(&read(DOCS), DOCS).unwrap();
        let client = |kind: &str| {
            model
                .rows
                .iter()
                .find_map(|(row, versions)| match row {
                    Row::Kind {
                        group,
                        version,
                        kind: k,
                        client,
                        ..
                    } if group.is_empty() && version == "v1" && k == kind => {
                        assert_eq!(*versions, model.every, "{kind}");
                        client.clone()
                    }
                    _ => None,
                })
                .unwrap_or_else(|| panic!("no client for {kind}"))
        };
        let verbs = |v: &str| v.split(',').map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            client("Pod"),
            Client {
                plural: "pods".into(),
                namespaced: true,
                verbs: verbs(
                    "apply,applyStatus,create,delete,deleteCollection,get,list,patch,update,updateStatus,watch"
                ),
            }
        );
        assert_eq!(
            client("ComponentStatus"),
            Client {
                plural: "componentstatuses".into(),
                namespaced: false,
                verbs: verbs("apply,create,delete,deleteCollection,get,list,patch,update,watch"),
            }
        );
        let field = |message: &str, json: &str| {
            model
                .rows
                .keys()
                .find_map(|row| match row {
                    Row::Field(f) if f.message == message && f.json == json => Some(f.clone()),
                    _ => None,
                })
                .unwrap_or_else(|| panic!("no field {message}.{json}"))
        };
        // `+optional` on both, and `containers` has neither a marker nor omitempty.
        assert!(!field("api.core.v1.Pod", "spec").required);
        assert!(!field("api.core.v1.ComponentStatus", "conditions").required);
        assert!(field("api.core.v1.PodSpec", "containers").required);
        let doc = |message: &str, n| docs.get(&(message.to_owned(), n)).map(String::as_str);
        assert_eq!(
            doc("api.core.v1.Pod", None),
            Some("Pod is a collection of containers that can run on a host.")
        );
        assert_eq!(
            doc("api.core.v1.Pod", Some(1)),
            Some("Standard object's metadata.")
        );
        assert_eq!(
            doc("api.core.v1.ComponentStatus", None),
            Some("ComponentStatus (and ComponentStatusList) holds the cluster validation info.")
        );
    }

    #[test]
    fn a_field_needs_its_message_in_each_version() {
        let old = "M\tapi.core.v1.Pod\n".to_owned();
        let new = "M\tapi.core.v1.Pod\nM\tapi.core.v1.New\nF\tapi.core.v1.Pod\t1\tnew\tmessage\tSingle\tapi.core.v1.New\tfalse\tfalse\n";
        assert!(Model::merge(&[(33, old.clone()), (34, new.to_owned())]).is_ok());
        let broken = "M\tapi.core.v1.Pod\nF\tapi.core.v1.Pod\t1\tnew\tmessage\tSingle\tapi.core.v1.New\tfalse\tfalse\n";
        let err = Model::merge(&[(33, broken.to_owned())]).unwrap_err();
        assert!(
            err.to_string().contains("needs message api.core.v1.New"),
            "{err}"
        );
    }
}
