//! Part of `cargo codegen`: generates informer-proto's `src/generated/`, the protobuf schema
//! table of the built-in kinds (decision record 15), and with `--check` fails when the checked-in
//! files are not what the generator makes.
//!
//! The table (tag, JSON name, type and presence of every field of every message) comes from:
//! - `k8s-pb`'s prost structs: field numbers, protobuf types and cardinality;
//! - `k8s-openapi`'s serde impls: the exact JSON names (`podIP`, `x-kubernetes-preserve-unknown-fields`, `$ref`);
//! - the Go struct tags of `k8s.io/api` and friends, read by reflection in `schema-gen/` (a Go
//!   program with its own `go.mod`): whether a zero on the wire means "absent" (`omit_zero`).
//!   Its output is checked in as `schema-gen/presence.tsv`.
//!
//! The Rust crates are read as source text, located through `cargo metadata`.
//!
//! Regenerated with everything else by `cargo codegen` after bumping any of them (it runs
//! `go run .` in `schema-gen/` when `go` is found, then rewrites `src/generated/`). Without Go
//! the presence table cannot be checked against the Go sources and codegen says so; the
//! generated Rust is still checked against the checked-in `presence.tsv`.
//!
//! Moved here from a test of informer-proto, which regenerated it under its own command; the
//! inputs are pinned crate sources and a checked-in table, so an input the parser does not
//! understand is a bug to fix here, reported by a panic that names the file and the item.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

mod go;

use go::{Report, presence, run_schema_gen};

/// The crate whose table this writes, relative to the workspace root.
const CRATE: &str = "informer-proto";
const GENERATED: &str = "src/generated";
/// The Go program that reads the Go struct tags, and its checked-in output.
const SCHEMA_GEN: &str = "schema-gen";
const PRESENCE: &str = "schema-gen/presence.tsv";
/// informer-proto's directory.
fn crate_dir() -> PathBuf {
    crate::project_root().join(CRATE)
}
/// k8s-pb's top-level modules whose messages the server may receive (metrics.k8s.io is not served).
const MODULE_ROOTS: &[&str] = &[
    "api",
    "apimachinery",
    "apiextensions_apiserver",
    "kube_aggregator",
];
/// The Kubernetes version module of k8s-openapi the workspace builds with.
const OPENAPI_VERSION: &str = "v1_37";

/// Messages whose JSON form is not an object of their fields (Go types with their own JSON
/// marshalling), by full name.
const SHAPES: &[(&str, &str)] = &[
    ("apimachinery.pkg.api.resource.Quantity", "Quantity"),
    ("apimachinery.pkg.api.resource.QuantityValue", "Quantity"),
    ("apimachinery.pkg.util.intstr.IntOrString", "IntOrString"),
    ("apimachinery.pkg.apis.meta.v1.Time", "Time"),
    ("apimachinery.pkg.apis.meta.v1.MicroTime", "MicroTime"),
    ("apimachinery.pkg.apis.meta.v1.Duration", "Duration"),
    ("apimachinery.pkg.apis.meta.v1.FieldsV1", "RawJson"),
    ("apimachinery.pkg.runtime.RawExtension", "RawJson"),
    ("apimachinery.pkg.apis.meta.v1.Verbs", "StringList"),
    ("api.authentication.v1.ExtraValue", "StringList"),
    ("api.authentication.v1beta1.ExtraValue", "StringList"),
    ("api.authorization.v1.ExtraValue", "StringList"),
    ("api.authorization.v1beta1.ExtraValue", "StringList"),
    ("api.certificates.v1.ExtraValue", "StringList"),
    ("api.certificates.v1beta1.ExtraValue", "StringList"),
    (
        "apiextensions_apiserver.pkg.apis.apiextensions.v1.Json",
        "RawJson",
    ),
    (
        "apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.Json",
        "RawJson",
    ),
    (
        "apiextensions_apiserver.pkg.apis.apiextensions.v1.JsonSchemaPropsOrArray",
        "SchemaOrArray",
    ),
    (
        "apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.JsonSchemaPropsOrArray",
        "SchemaOrArray",
    ),
    (
        "apiextensions_apiserver.pkg.apis.apiextensions.v1.JsonSchemaPropsOrBool",
        "SchemaOrBool",
    ),
    (
        "apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.JsonSchemaPropsOrBool",
        "SchemaOrBool",
    ),
    (
        "apiextensions_apiserver.pkg.apis.apiextensions.v1.JsonSchemaPropsOrStringArray",
        "SchemaOrStringArray",
    ),
    (
        "apiextensions_apiserver.pkg.apis.apiextensions.v1beta1.JsonSchemaPropsOrStringArray",
        "SchemaOrStringArray",
    ),
];

#[derive(Debug)]
struct Field {
    tag: u32,
    rust: String,
    json: String,
    /// `string`, `bytes`, `int32`, `int64`, `bool`, `double` or `message`.
    ty: String,
    /// Full name of the message type (`message` fields and map values).
    msg: Option<String>,
    /// `Single`, `Repeated`, `Map` or `Inline`.
    label: &'static str,
    /// A zero on the wire means absent (from the Go struct tags, see [`presence`]).
    omit_zero: bool,
}

#[derive(Debug)]
struct Message {
    name: String,
    fields: Vec<Field>,
}

fn metadata_dirs() -> (PathBuf, PathBuf) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = std::process::Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--offline"])
        .current_dir(crate_dir())
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let dir = |name: &str| {
        let p = meta["packages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("{name} is not in the dependency graph"));
        Path::new(p["manifest_path"].as_str().unwrap())
            .parent()
            .unwrap()
            .join("src")
    };
    (dir("k8s-pb"), dir("k8s-openapi"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// `super::super::x::Y` seen from module `module` (dotted) -> `x.Y` resolved.
fn resolve(module: &str, ty: &str) -> String {
    let mut base: Vec<&str> = module.split('.').collect();
    let mut rest = ty.trim();
    while let Some(r) = rest.strip_prefix("super::") {
        base.pop();
        rest = r;
    }
    let mut parts: Vec<String> = base.iter().map(|s| (*s).to_owned()).collect();
    parts.extend(rest.split("::").map(str::to_owned));
    parts.join(".")
}

/// The message path inside a field's Rust type.
fn inner_type(ty: &str) -> &str {
    let mut t = ty.trim().trim_end_matches(',').trim();
    for prefix in [
        "::core::option::Option<",
        "::prost::alloc::vec::Vec<",
        "::prost::alloc::boxed::Box<",
        "::prost::alloc::collections::BTreeMap<::prost::alloc::string::String,",
    ] {
        if let Some(r) = t.strip_prefix(prefix) {
            t = r
                .strip_suffix('>')
                .unwrap_or(r)
                .trim()
                .trim_end_matches(',')
                .trim();
        }
    }
    t
}

/// Parses one prost-generated module file of k8s-pb.
fn parse_k8s_pb(
    file: &Path,
    module: &str,
    messages: &mut Vec<Message>,
    kinds: &mut Vec<[String; 4]>,
) {
    let text = std::fs::read_to_string(file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    let mut is_message = false;
    while i < lines.len() {
        let line = lines[i].trim();
        if line.starts_with("#[derive(") {
            is_message = line.contains("::prost::Message");
        }
        if let Some(rest) = line.strip_prefix("pub struct ")
            && is_message
        {
            let name = rest
                .trim_end_matches(" {")
                .trim_end_matches(" {}")
                .to_owned();
            let mut msg = Message {
                name: format!("{module}.{name}"),
                fields: Vec::new(),
            };
            if !line.ends_with("{}") {
                i += 1;
                let mut attr: Option<String> = None;
                while lines[i].trim() != "}" {
                    let l = lines[i].trim();
                    if l.starts_with("#[prost(") {
                        attr = Some(l.to_owned());
                    } else if let Some(decl) = l.strip_prefix("pub ") {
                        // The type may continue on the next lines.
                        let mut decl = decl.to_owned();
                        let open = |d: &str| d.matches('<').count() > d.matches('>').count();
                        while !decl.ends_with(',') || open(&decl) {
                            i += 1;
                            decl.push_str(lines[i].trim());
                        }
                        let (field, ty) = decl.split_once(':').unwrap();
                        let a = attr.take().expect("prost attribute before a field");
                        msg.fields.push(field_of(module, field.trim(), ty, &a));
                    }
                    i += 1;
                }
            }
            is_message = false;
            messages.push(msg);
        }
        if let Some(rest) = line.strip_prefix("impl crate::Resource for ") {
            let name = rest.trim_end_matches(" {");
            let mut consts = HashMap::new();
            i += 1;
            while lines[i].trim() != "}" {
                if let Some(c) = lines[i].trim().strip_prefix("const ") {
                    let (k, v) = c.split_once(": &'static str = ").unwrap_or(("", ""));
                    consts.insert(
                        k.to_owned(),
                        v.trim_end_matches(';').trim_matches('"').to_owned(),
                    );
                }
                i += 1;
            }
            kinds.push([
                consts["GROUP"].clone(),
                consts["VERSION"].clone(),
                consts["KIND"].clone(),
                format!("{module}.{name}"),
            ]);
        }
        i += 1;
    }
}

fn field_of(module: &str, rust: &str, ty: &str, attr: &str) -> Field {
    let inner = attr.trim_start_matches("#[prost(").trim_end_matches(")]");
    let tag: u32 = inner
        .split("tag = \"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no tag in {attr}"));
    let first = inner.split(',').next().unwrap().trim();
    let (label, ty_name, msg) = if let Some(map) = first.strip_prefix("btree_map = \"") {
        let value = inner
            .split(", ")
            .nth(1)
            .unwrap()
            .trim_end_matches('"')
            .trim();
        assert!(
            map.starts_with("string"),
            "map keys other than string: {attr}"
        );
        let msg = (value == "message").then(|| resolve(module, inner_type(ty)));
        ("Map", value.to_owned(), msg)
    } else {
        let label = if inner.contains("repeated") {
            "Repeated"
        } else {
            "Single"
        };
        let ty_name = if first.starts_with("bytes") {
            "bytes"
        } else {
            first
        };
        let msg = (ty_name == "message").then(|| resolve(module, inner_type(ty)));
        (label, ty_name.to_owned(), msg)
    };
    assert!(
        [
            "string", "bytes", "int32", "int64", "bool", "double", "message"
        ]
        .contains(&ty_name.as_str()),
        "unsupported protobuf type in {attr}"
    );
    Field {
        tag,
        rust: rust.trim_start_matches("r#").to_owned(),
        json: String::new(),
        ty: ty_name,
        msg,
        label,
        omit_zero: false,
    }
}

fn norm(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// JSON names per k8s-openapi struct: (module, normalised struct name) -> normalised field -> JSON name.
fn openapi_names(root: &Path) -> HashMap<(String, String), HashMap<String, String>> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let mut out = HashMap::new();
    for f in files {
        let rel = f.parent().unwrap().strip_prefix(root).unwrap();
        let module = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(".");
        let text = std::fs::read_to_string(&f).unwrap();
        let Some(name) = text.lines().find_map(|l| l.strip_prefix("pub struct ")) else {
            continue;
        };
        let name = name.split([' ', '<', '(']).next().unwrap();
        let mut fields = HashMap::new();
        for l in text.lines() {
            let l = l.trim();
            if let Some((json, rest)) = l
                .strip_prefix('"')
                .and_then(|l| l.split_once("\" => Field::Key_"))
            {
                let _ = rest;
                fields.insert(norm(json), json.to_owned());
            }
        }
        out.insert((module, norm(name)), fields);
    }
    out
}

/// The JSON keys a message contributes to its object, through its inline fields too.
fn flat_names(messages: &[Message], index: &HashMap<String, usize>, idx: usize) -> Vec<String> {
    let mut out = Vec::new();
    for f in &messages[idx].fields {
        match (&f.msg, f.label) {
            (Some(sub), "Inline") => out.extend(flat_names(messages, index, index[sub])),
            _ => out.push(f.json.clone()),
        }
    }
    out
}

fn lower_camel(rust: &str) -> String {
    let mut out = String::new();
    for (i, part) in rust.split('_').enumerate() {
        if i == 0 {
            out.push_str(part);
        } else {
            let mut c = part.chars();
            if let Some(f) = c.next() {
                out.extend(f.to_uppercase());
                out.push_str(c.as_str());
            }
        }
    }
    out
}

/// The table's files; their header tells readers to run `command`.
fn generate(command: &str) -> (BTreeMap<String, String>, Vec<String>, Report) {
    let (pb_root, openapi_src) = metadata_dirs();
    let openapi = openapi_names(&openapi_src.join(OPENAPI_VERSION));
    let mut messages = Vec::new();
    let mut kinds = Vec::new();
    for root in MODULE_ROOTS {
        let mut files = Vec::new();
        rust_files(&pb_root.join(root), &mut files);
        for f in files {
            let rel = f.parent().unwrap().strip_prefix(&pb_root).unwrap();
            let module = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(".");
            if module.contains("testapigroup") {
                continue;
            }
            parse_k8s_pb(&f, &module, &mut messages, &mut kinds);
        }
    }
    messages.sort_by(|a, b| a.name.cmp(&b.name));
    let index: HashMap<String, usize> = messages
        .iter()
        .enumerate()
        .map(|(i, m)| (m.name.clone(), i))
        .collect();
    let key = |full: &str| {
        let (module, name) = full.rsplit_once('.').unwrap();
        (module.to_owned(), norm(name))
    };
    // Where k8s-openapi has no struct of a message, its JSON names come from, in order:
    // - the struct that embeds it (Go inlines `VolumeSource` into `Volume`, so k8s-openapi has
    //   only `Volume`, which has a field for every `VolumeSource` field);
    // - the same struct in another version of the group (`authorization.v1beta1` -> `v1`);
    // - else the camelCase of the Rust name (`admission.k8s.io`, which k8s-openapi lacks).
    let mut borrowed: HashMap<String, HashMap<String, String>> = HashMap::new();
    for m in &messages {
        let Some(names) = openapi.get(&key(&m.name)) else {
            continue;
        };
        for f in &m.fields {
            if let Some(sub) = &f.msg
                && f.label == "Single"
                && !names.contains_key(&norm(&f.rust))
                && !openapi.contains_key(&key(sub))
            {
                borrowed
                    .entry(sub.clone())
                    .or_default()
                    .extend(names.clone());
            }
        }
    }
    let mut sorted_keys: Vec<&(String, String)> = openapi.keys().collect();
    sorted_keys.sort();
    for m in &messages {
        if openapi.contains_key(&key(&m.name)) || borrowed.contains_key(&m.name) {
            continue;
        }
        let (module, name) = key(&m.name);
        let group = module.rsplit_once('.').map_or("", |(g, _)| g);
        if let Some(k) = sorted_keys
            .iter()
            .find(|(mo, n)| *n == name && mo.rsplit_once('.').map_or("", |(g, _)| g) == group)
        {
            borrowed.insert(m.name.clone(), openapi[*k].clone());
        }
    }
    let mut guessed = Vec::new();
    for m in &mut messages {
        let names = openapi.get(&key(&m.name)).or_else(|| borrowed.get(&m.name));
        for f in &mut m.fields {
            f.json = match names.and_then(|n| n.get(&norm(&f.rust))) {
                Some(j) => j.clone(),
                None => {
                    if names.is_some() {
                        guessed.push(format!("{}.{}", m.name, f.rust));
                    }
                    lower_camel(&f.rust)
                }
            };
        }
        m.fields.sort_by_key(|f| f.tag);
    }
    // Go structs embedded with `json:",inline"` (`LocalObjectReference` in `ConfigMapKeySelector`,
    // `VolumeSource` in `Volume`) are a nested message in protobuf but flat in JSON: the field is
    // missing from k8s-openapi's struct while every field of its message is there.
    // Repeated until nothing changes: an embedded struct may embed another (`RuleWithOperations`).
    loop {
        let mut inline = Vec::new();
        for (mi, m) in messages.iter().enumerate() {
            let (module, name) = m.name.rsplit_once('.').unwrap();
            let Some(names) = openapi.get(&(module.to_owned(), norm(name))) else {
                continue;
            };
            for (fi, f) in m.fields.iter().enumerate() {
                let Some(sub) = f.msg.as_ref().map(|n| index[n]) else {
                    continue;
                };
                let flat = flat_names(&messages, &index, sub);
                let embedded = f.label == "Single"
                    && !names.contains_key(&norm(&f.rust))
                    && !flat.is_empty()
                    && flat.iter().all(|j| names.contains_key(&norm(j)));
                if embedded {
                    inline.push((mi, fi));
                }
            }
        }
        if inline.is_empty() {
            break;
        }
        for (mi, fi) in inline {
            messages[mi].fields[fi].label = "Inline";
            let full = format!("{}.{}", messages[mi].name, messages[mi].fields[fi].rust);
            guessed.retain(|g| *g != full);
        }
    }
    let report = presence(&mut messages);
    let shapes: HashMap<&str, &str> = SHAPES.iter().copied().collect();
    for (name, _) in SHAPES {
        assert!(index.contains_key(*name), "k8s-pb has no message {name}");
    }
    let header = format!(
        "//! @generated by {command} (xtask/src/proto_schema/) from k8s-pb, k8s-openapi ({OPENAPI_VERSION}) and schema-gen/presence.tsv; do not edit, run `{command}`"
    );
    let field_ty = |f: &Field| -> String {
        match (&f.msg, f.ty.as_str()) {
            (Some(msg), _) => format!(
                "Message({})",
                index
                    .get(msg)
                    .unwrap_or_else(|| panic!("unknown message {msg}"))
            ),
            (None, t) => match t {
                "string" => "String".into(),
                "bytes" => "Bytes".into(),
                "int32" => "Int32".into(),
                "int64" => "Int64".into(),
                "bool" => "Bool".into(),
                "double" => "Double".into(),
                other => panic!("type {other}"),
            },
        }
    };
    // One file per API group and version (`api.apps.v1`), one line per message: the messages stay
    // in one global order (the indexes in `Message(n)`), the parts are consecutive runs of it.
    let mut parts: Vec<(String, Vec<String>)> = Vec::new();
    for m in &messages {
        let group = part_of(&m.name);
        let shape = shapes.get(m.name.as_str()).copied().unwrap_or("Object");
        let fields: Vec<String> = m
            .fields
            .iter()
            .map(|f| {
                format!(
                    "Field {{ tag: {}, json: {:?}, ty: {}, label: {}, omit_zero: {} }}",
                    f.tag,
                    f.json,
                    field_ty(f),
                    f.label,
                    f.omit_zero
                )
            })
            .collect();
        let line = format!(
            "    Message {{ name: {:?}, shape: Shape::{shape}, fields: &[{}] }},",
            m.name,
            fields.join(", ")
        );
        match parts.last_mut() {
            Some((g, lines)) if *g == group => lines.push(line),
            _ => parts.push((group, vec![line])),
        }
    }
    let mut files = BTreeMap::new();
    let mut root = String::new();
    writeln!(root, "{header}").unwrap();
    writeln!(root, "//!").unwrap();
    writeln!(
        root,
        "//! The protobuf schema of the built-in kinds: every message, one module per API group and"
    )
    .unwrap();
    writeln!(
        root,
        "//! version, in one global order by full name (`Ty::Message(n)` indexes it)."
    )
    .unwrap();
    writeln!(root).unwrap();
    writeln!(root, "use crate::schema::{{KindEntry, Message}};").unwrap();
    writeln!(root).unwrap();
    for (g, _) in &parts {
        writeln!(root, "mod {g};").unwrap();
    }
    writeln!(root).unwrap();
    writeln!(root, "/// The messages in order, as consecutive parts.").unwrap();
    writeln!(root, "pub(crate) static PARTS: &[&[Message]] = &[").unwrap();
    for (g, _) in &parts {
        writeln!(root, "    {g}::MESSAGES,").unwrap();
    }
    writeln!(root, "];").unwrap();
    writeln!(root).unwrap();
    kinds.sort();
    writeln!(
        root,
        "/// Top-level kinds: (group, version, kind) -> message, sorted."
    )
    .unwrap();
    writeln!(root, "pub(crate) static KINDS: &[KindEntry] = &[").unwrap();
    for [g, v, k, msg] in &kinds {
        writeln!(
            root,
            "    KindEntry {{ group: {g:?}, version: {v:?}, kind: {k:?}, message: {} }},",
            index[msg]
        )
        .unwrap();
    }
    writeln!(root, "];").unwrap();
    files.insert("mod.rs".to_owned(), root);
    for (g, lines) in parts {
        let mut f = String::new();
        writeln!(f, "{header}").unwrap();
        writeln!(f).unwrap();
        writeln!(
            f,
            "use crate::schema::{{Field, Label::*, Message, Shape, Ty::*}};"
        )
        .unwrap();
        writeln!(f).unwrap();
        writeln!(
            f,
            "/// The messages of this group and version, by full name."
        )
        .unwrap();
        writeln!(f, "pub(crate) static MESSAGES: &[Message] = &[").unwrap();
        for l in lines {
            writeln!(f, "{l}").unwrap();
        }
        writeln!(f, "];").unwrap();
        files.insert(format!("{g}.rs"), f);
    }
    (files, guessed, report)
}

/// The module of message `name`: its package (`api.apps.v1.Deployment` -> `api_apps_v1`).
fn part_of(name: &str) -> String {
    let package = name.rsplit_once('.').map_or(name, |(p, _)| p);
    package.replace('.', "_").to_ascii_lowercase()
}

/// Regenerates informer-proto's table (and, where Go is found, `schema-gen/presence.tsv`), with
/// headers naming `command`; with `check`, writes nothing and records every stale file in `stale`.
pub(crate) fn regenerate(command: &str, check: bool, stale: &mut Vec<PathBuf>) {
    let root = crate_dir();
    let presence_path = root.join(PRESENCE);
    match run_schema_gen() {
        Ok(text) => {
            if std::fs::read_to_string(&presence_path).unwrap_or_default() != text {
                if check {
                    stale.push(presence_path.clone());
                } else {
                    std::fs::write(&presence_path, &text).unwrap();
                    eprintln!("updated {CRATE}/{PRESENCE}");
                }
            }
        }
        Err(why) => eprintln!(
            "codegen: not checking {CRATE}/{PRESENCE} against the Go sources: {why}; the generated Rust is still checked against it"
        ),
    }
    let (files, guessed, report) = generate(command);
    eprintln!(
        "codegen: {CRATE}: {} omit-zero fields, {} from another version's Go struct, {} of messages with no Go struct, {} table fields with no Go field, {} JSON names from Go over the guess, {} inline from Go's embedding only, {} names guessed (not in k8s-openapi {OPENAPI_VERSION})",
        report.omit_zero,
        report.borrowed,
        report.no_go_struct.len(),
        report.no_go_field.len(),
        report.json_mismatch.len(),
        report.inline_from_go.len(),
        guessed.len()
    );
    // The inline flags are inferred from k8s-openapi (a field it lacks whose message's fields it
    // has); Go's embedded structs must agree.
    assert!(
        report.inline_mismatch.is_empty(),
        "inline fields that disagree with the Go struct tags: {:?}",
        report.inline_mismatch
    );
    let dir = root.join(GENERATED);
    for (name, text) in &files {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).unwrap_or_default() != *text {
            stale.push(path.clone());
            if !check {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, text).unwrap();
                eprintln!("updated {CRATE}/{GENERATED}/{name}");
            }
        }
    }
    // The generator owns the folder: a file it no longer writes is stale too.
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !files.contains_key(&name) {
            stale.push(entry.path());
            if !check {
                std::fs::remove_file(entry.path()).unwrap();
                eprintln!("removed {CRATE}/{GENERATED}/{name}");
            }
        }
    }
}
