//! The Go side of the schema: `schema-gen/`'s presence table (which zeros on the wire mean
//! "absent", from the Go struct tags) read and folded into the generated messages.

use std::collections::HashMap;

use super::{Message, PRESENCE, SCHEMA_GEN, crate_dir};

/// One field of a Go struct, as `schema-gen` prints it.
#[derive(Debug)]
pub(super) struct GoField {
    pub(super) tag: u32,
    pub(super) json: String,
    /// reflect's kind, `*` first for pointers (`*int32`, `string`, `struct`, `slice`).
    pub(super) kind: String,
    pub(super) omitempty: bool,
    pub(super) omitzero: bool,
    /// `json:",inline"`.
    pub(super) inline: bool,
}

/// What [`presence`] found, for the test's output.
#[derive(Debug, Default)]
pub(super) struct Report {
    /// Fields whose zero means absent.
    pub(super) omit_zero: usize,
    /// Fields of messages with no Go struct (k8s-pb has versions k8s.io/api no longer has).
    pub(super) no_go_struct: Vec<String>,
    /// Fields found only in another version of the group's Go struct.
    pub(super) borrowed: usize,
    /// Fields whose Go JSON name differs from k8s-openapi's or the guess (Go's wins).
    pub(super) json_mismatch: Vec<String>,
    /// Table fields with no Go field of that number.
    pub(super) no_go_field: Vec<String>,
    /// Fields the table and Go disagree on being `json:",inline"`.
    pub(super) inline_mismatch: Vec<String>,
    /// Fields marked inline from Go's embedding alone.
    pub(super) inline_from_go: Vec<String>,
}

/// `schema-gen/presence.tsv`, by lower-cased message name.
pub(super) fn read_presence() -> HashMap<String, Vec<GoField>> {
    let path = crate_dir().join(PRESENCE);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut out: HashMap<String, Vec<GoField>> = HashMap::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let cols: Vec<&str> = line.split('\t').collect();
        assert_eq!(cols.len(), 5, "bad line in {}: {line}", path.display());
        let opts: Vec<&str> = cols[4].split(',').collect();
        out.entry(cols[0].to_ascii_lowercase())
            .or_default()
            .push(GoField {
                tag: cols[1].parse().unwrap(),
                json: cols[2].to_owned(),
                kind: cols[3].to_owned(),
                omitempty: opts.contains(&"omitempty"),
                omitzero: opts.contains(&"omitzero"),
                inline: opts.contains(&"inline"),
            });
    }
    out
}

/// Sets `omit_zero` on every field from the Go struct tags.
///
/// gogo-protobuf writes every non-pointer field, zero or not; Go's JSON leaves a zero out only
/// for `omitempty`/`omitzero` fields. So a zero on the wire is "absent" exactly for a single
/// non-pointer scalar (string, number, bool, `[]byte`) with one of those options, or a non-pointer
/// struct with `omitzero` (`ObjectMeta.creationTimestamp`). Lists and maps put nothing on the wire
/// when empty, and pointers are on the wire only when set, so neither ever has the flag.
pub(super) fn presence(messages: &mut [Message]) -> Report {
    let go = read_presence();
    let mut report = Report::default();
    for m in messages.iter_mut() {
        // The deserializer keeps a 256-bit set of the fields it has seen.
        assert!(m.fields.len() <= 256, "{} has more than 256 fields", m.name);
        let lower = m.name.to_ascii_lowercase();
        let own = go.get(&lower);
        // Another version of the same group (`autoscaling.v2beta2` -> `v2`), matched by JSON name.
        let (package, short) = lower.rsplit_once('.').unwrap();
        let group = package.rsplit_once('.').map_or("", |(g, _)| g);
        let mut others: Vec<(&String, &Vec<GoField>)> = go
            .iter()
            .filter(|(name, _)| {
                let (p, s) = name.rsplit_once('.').unwrap();
                s == short && p != package && p.rsplit_once('.').map_or("", |(g, _)| g) == group
            })
            .collect();
        others.sort_by(|a, b| b.0.cmp(a.0));
        for f in &mut m.fields {
            let found = match own {
                Some(fields) => fields.iter().find(|g| g.tag == f.tag),
                None => {
                    let hit = others
                        .iter()
                        .find_map(|(_, fields)| fields.iter().find(|g| g.json == f.json));
                    if hit.is_some() {
                        report.borrowed += 1;
                    }
                    hit
                }
            };
            let Some(g) = found else {
                let what = format!("{}.{}", m.name, f.json);
                if own.is_some() {
                    report.no_go_field.push(what);
                } else {
                    report.no_go_struct.push(what);
                }
                continue;
            };
            // Go's tag is the truth where k8s-openapi had no name and the table guessed one.
            if g.json != f.json && g.json != "-" && !g.inline {
                report
                    .json_mismatch
                    .push(format!("{}.{} -> {}", m.name, f.json, g.json));
                f.json.clone_from(&g.json);
            }
            // Go's embedding is the truth where k8s-openapi had no struct to infer it from
            // (`IngressRule.ingressRuleValue` of the v1beta1 groups).
            if g.inline && f.label == "Single" {
                f.label = "Inline";
                report.inline_from_go.push(format!("{}.{}", m.name, f.json));
            } else if g.inline != (f.label == "Inline") {
                report
                    .inline_mismatch
                    .push(format!("{}.{} ({})", m.name, f.json, f.label));
            }
            let pointer = g.kind.starts_with('*');
            let scalar = matches!(
                g.kind.as_str(),
                "string" | "bool" | "int32" | "int64" | "float64" | "slice"
            );
            f.omit_zero = f.label == "Single"
                && !pointer
                && ((scalar && (g.omitempty || g.omitzero)) || (g.kind == "struct" && g.omitzero));
            report.omit_zero += usize::from(f.omit_zero);
        }
    }
    report
}

/// `go run .` in `schema-gen/`, or why it could not run. Go as `cargo xtask bench` finds it:
/// `$GO`, `go` on the path, or /usr/local/go.
pub(super) fn run_schema_gen() -> Result<String, String> {
    let dir = crate_dir().join(SCHEMA_GEN);
    let go = crate::bench::go_tool()
        .ok_or("no Go toolchain found (`go`, `$GO`, /usr/local/go/bin/go)")?;
    let out = std::process::Command::new(go)
        .args(["run", "."])
        .current_dir(&dir)
        .output()
        .map_err(|e| format!("`go` is not runnable ({e})"))?;
    if !out.status.success() {
        panic!(
            "`go run .` in {} failed:\n{}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8(out.stdout).unwrap())
}
