//! CRD manifests' `openAPIV3Schema`s → the type IR: one module per served version, the
//! kind at its top, nested objects named `Parent` + `FieldName`, deep ones shortened and equal
//! ones merged (G12).
//!
//! The mapping (documented for users in docs/decisions/07-types-from-crd-schemas.md):
//!
//! | schema                                              | IR                                   |
//! |-----------------------------------------------------|--------------------------------------|
//! | `string`                                            | `Str` (an interned `IStr`)           |
//! | `string` + `enum`                                   | `Enum` (unknown values kept)         |
//! | `string` + `format: date-time` / `byte`             | `Time` / `ByteString`                |
//! | `integer` (+ `format: int32`)                       | `I64` (`I32`)                        |
//! | `number`, `boolean`                                 | `Number` (as written), `Bool`        |
//! | `array`                                             | `List`                               |
//! | `object` + `properties`                             | a struct                             |
//! | `object` + `additionalProperties`                   | `Map`                                |
//! | `x-kubernetes-int-or-string`                        | `IntOrString`                        |
//! | `x-kubernetes-preserve-unknown-fields`, free-form   | `Json` (`RawJson`); next to `properties`: the struct keeps unknown fields |
//! | `x-kubernetes-embedded-resource`                    | a struct with `apiVersion`, `kind`, `metadata: ObjectMeta` |
//!
//! `required` and `nullable` decide [`Presence`]; `default`s are documented, not applied: the API
//! server applies them before it stores an object, so every object a client reads already has
//! them, and applying them again on decode would change what re-encoding writes.
//! A structural schema has no `$ref`, so objects nest but never recurse.

use heck::{ToSnakeCase, ToUpperCamelCase};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

use super::crd::Crd;

mod merge;
use crate::error::Error;
use crate::model::types::{
    self, CrdResource, FieldDef, OBJECT_META, Presence, Shape, Ty, TypeDef, TypeGraph, TypeOrigin,
    Variant,
};

const TIME: &str = "apimachinery::pkg::apis::meta::v1::Time";
const INT_OR_STRING: &str = "apimachinery::pkg::util::intstr::IntOrString";
const BYTE_STRING: &str = "ByteString";

/// A nested type's name longer than this is shortened (G12).
const LONG_NAME: usize = 40;

/// The Rust name of the map that keeps unknown fields of a struct that preserves them.
const UNKNOWN_FIELDS: &str = "unknown_fields";

/// Reads the types of every served version of every CRD of one manifest (`display` names it in
/// errors and docs). Keys are `<version>::<Type>`.
pub(crate) fn read_types(crds: &[Crd<'_>], display: &str, errors: &mut Vec<Error>) -> TypeGraph {
    let mut graph = TypeGraph::new();
    // Every kind's name is taken first, so a nested type of one CRD never takes another's kind.
    let mut names: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for crd in crds {
        for (version, _) in &crd.versions {
            names
                .entry((*version).to_owned())
                .or_default()
                .insert(crd.kind.to_owned());
        }
    }
    for crd in crds {
        read_crd(crd, display, &mut names, &mut graph, errors);
    }
    mark_defaults(&mut graph);
    graph
}

/// Sets [`TypeDef::default`] on every struct whose fields all have a default value (so the
/// struct can derive `Default`): enums and `Time` have none.
fn mark_defaults(graph: &mut TypeGraph) {
    fn of_struct(key: &str, graph: &TypeGraph, memo: &mut BTreeMap<String, bool>) -> bool {
        if let Some(d) = memo.get(key) {
            return *d;
        }
        let Some(def) = graph.get(key) else {
            return false;
        };
        let d = def.shape == Shape::Struct
            && def
                .fields
                .iter()
                .all(|f| f.presence != Presence::Required || of(&f.ty, graph, memo));
        memo.insert(key.to_owned(), d);
        d
    }
    fn of(ty: &Ty, graph: &TypeGraph, memo: &mut BTreeMap<String, bool>) -> bool {
        match ty {
            Ty::Bool
            | Ty::I32
            | Ty::I64
            | Ty::F64
            | Ty::Number
            | Ty::Str
            | Ty::Quantity
            | Ty::List(_)
            | Ty::Map(_)
            | Ty::Option(_)
            | Ty::Json(_) => true,
            Ty::Boxed(t) => of(t, graph, memo),
            Ty::Struct(k) => of_struct(k, graph, memo),
            Ty::Enum(_) => false,
            Ty::Leaf(k) => [OBJECT_META, BYTE_STRING, INT_OR_STRING].contains(&k.as_str()),
        }
    }
    let mut memo = BTreeMap::new();
    let keys: Vec<String> = graph.keys().cloned().collect();
    for key in &keys {
        of_struct(key, graph, &mut memo);
    }
    for (key, d) in memo {
        if let Some(def) = graph.get_mut(&key) {
            def.default = d;
        }
    }
}

fn read_crd(
    crd: &Crd<'_>,
    display: &str,
    names: &mut BTreeMap<String, BTreeSet<String>>,
    graph: &mut TypeGraph,
    errors: &mut Vec<Error>,
) {
    for &(version, v) in &crd.versions {
        let mut reader = Reader {
            version,
            display,
            crd: &crd.name,
            kind: crd.kind,
            trail: Vec::new(),
            nested: BTreeMap::new(),
            names: names.entry(version.to_owned()).or_default(),
            graph,
            errors,
        };
        let Some(schema) = v.pointer("/schema/openAPIV3Schema") else {
            reader.error(
                "",
                "this version has no `schema.openAPIV3Schema`; add one, or list the manifest \
                 with `crd` (accessors only) and write the type yourself"
                    .into(),
            );
            continue;
        };
        let scale = v.pointer("/subresources/scale").map(|s| {
            let p = |k: &str| s.get(k).and_then(Value::as_str).map(str::to_owned);
            (
                p("specReplicasPath").unwrap_or_default(),
                p("statusReplicasPath").unwrap_or_default(),
                p("labelSelectorPath"),
            )
        });
        let resource = CrdResource {
            group: crd.group.to_owned(),
            version: version.to_owned(),
            kind: crd.kind.to_owned(),
            plural: crd.plural.to_owned(),
            list_kind: crd.list_kind.clone(),
            namespaced: crd.namespaced,
            status_subresource: v.pointer("/subresources/status").is_some(),
            scale,
        };
        reader.root(crd.kind, schema, resource);
        let nested = std::mem::take(&mut reader.nested);
        merge::merge_equal_types(graph, &nested);
    }
}

struct Reader<'a> {
    version: &'a str,
    display: &'a str,
    crd: &'a str,
    /// The kind being read: the first word of a shortened name (G12).
    kind: &'a str,
    /// The JSON names of the fields from the kind down to the node being read (an array's
    /// items and a map's values are their field's).
    trail: Vec<String>,
    /// The nested types read, each with the JSON name of its field (G12's merge).
    nested: BTreeMap<String, String>,
    /// Type names taken in this version's module.
    names: &'a mut BTreeSet<String>,
    graph: &'a mut TypeGraph,
    errors: &'a mut Vec<Error>,
}

impl Reader<'_> {
    fn error(&mut self, json_path: &str, reason: String) {
        self.errors.push(Error::CrdSchema {
            path: self.display.into(),
            crd: self.crd.to_owned(),
            version: self.version.to_owned(),
            json_path: if json_path.is_empty() {
                ".".to_owned()
            } else {
                json_path.to_owned()
            },
            reason,
        });
    }

    /// A struct `name` of this version's module with no fields, the base the readers complete.
    fn def(&self, name: String, doc: String) -> TypeDef {
        TypeDef {
            k8s_versions: Default::default(),
            module: vec![self.version.to_owned()],
            name,
            doc,
            fields: Vec::new(),
            default: false,
            resource: false,
            shape: Shape::Struct,
            origin: TypeOrigin::Schema(None),
            unknown_fields: None,
        }
    }

    /// Adds `def` to the graph; its key (`<version>::<Type>`).
    fn insert(&mut self, def: TypeDef) -> String {
        let key = format!("{}::{}", self.version, def.name);
        self.graph.insert(key.clone(), def);
        key
    }

    /// G12: the name of the type of field `field` of type `parent`, fresh in this version's
    /// module: `Parent` + `Field`. Where that passes [`LONG_NAME`] characters, the kind's name
    /// followed by the last field names of the path from the kind, as few as make a name not
    /// taken yet, at least two (`ClusterPolicy` + `ContextImageRegistry` for
    /// `spec.rules.validate.foreach.context.imageRegistry`). A name that is taken gets `2`,
    /// `3`, … as the last resort.
    fn nested_name(&mut self, parent: &str, field: &str) -> String {
        let long = rust_name(
            &format!("{parent}{}", field.to_upper_camel_case()),
            Case::Type,
        );
        if long.len() > LONG_NAME {
            let trail = &self.trail;
            let short = (2..trail.len())
                .map(|n| {
                    let tail: String = trail[trail.len() - n..]
                        .iter()
                        .map(|f| f.to_upper_camel_case())
                        .collect();
                    rust_name(&format!("{}{tail}", self.kind), Case::Type)
                })
                .find(|name| name.len() < long.len() && !self.names.contains(name));
            if let Some(name) = short {
                self.names.insert(name.clone());
                return name;
            }
        }
        unique(long, "", self.names)
    }

    fn root(&mut self, kind: &str, schema: &Value, resource: CrdResource) {
        let doc = description(schema).unwrap_or_else(|| {
            format!(
                "`{kind}` ({}/{}), generated from `{}`.",
                resource.group, resource.version, self.display
            )
        });
        let skip = ["apiVersion", "kind", "metadata"];
        let mut fields = vec![FieldDef {
            k8s_versions: Default::default(),
            rust: "metadata".into(),
            json: "metadata".into(),
            doc: "Standard object metadata.".into(),
            presence: Presence::DefaultIfMissing,
            ty: Ty::Leaf(OBJECT_META.into()),
        }];
        let mut taken: BTreeSet<String> = ["api_version", "kind", "metadata"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        self.properties(schema, kind, "", &skip, &mut taken, &mut fields);
        let unknown_fields = preserves(schema).then(|| field_name(UNKNOWN_FIELDS, &mut taken));
        self.insert(TypeDef {
            k8s_versions: Default::default(),
            fields,
            resource: true,
            origin: TypeOrigin::Schema(Some(resource)),
            unknown_fields,
            ..self.def(kind.to_owned(), doc)
        });
    }

    /// The fields of an object schema's `properties` (sorted by JSON name), minus `skip`.
    fn properties(
        &mut self,
        schema: &Value,
        parent: &str,
        path: &str,
        skip: &[&str],
        taken: &mut BTreeSet<String>,
        fields: &mut Vec<FieldDef>,
    ) {
        let required = required(schema);
        let Some(props) = schema.get("properties") else {
            return;
        };
        let Some(props) = props.as_object() else {
            self.error(
                &format!("{path}.properties"),
                "expected a map of property schemas".into(),
            );
            return;
        };
        for (json, prop) in props {
            if skip.contains(&json.as_str()) {
                continue;
            }
            let fpath = format!("{path}.properties.{json}");
            self.trail.push(json.clone());
            let ty = self.ty(prop, parent, json, &fpath);
            self.trail.pop();
            let Some(ty) = ty else {
                continue;
            };
            let nullable = prop.get("nullable").and_then(Value::as_bool) == Some(true);
            let (presence, ty) = match (required.contains(json.as_str()), nullable) {
                (true, false) => (Presence::Required, ty),
                (true, true) => (Presence::Required, Ty::Option(Box::new(ty))),
                (false, false) => (Presence::Optional, Ty::Option(Box::new(ty))),
                (false, true) => (
                    Presence::Nullable,
                    Ty::Option(Box::new(Ty::Option(Box::new(ty)))),
                ),
            };
            let mut doc = field_doc(prop);
            if doc.is_empty() {
                doc = format!("`{json}` (no description in the schema).");
            }
            fields.push(FieldDef {
                k8s_versions: Default::default(),
                rust: field_name(json, taken),
                json: json.clone(),
                doc,
                presence,
                ty,
            });
        }
    }

    /// The shape of schema `s`, the value of field `field` of type `parent`, at `path`.
    fn ty(&mut self, s: &Value, parent: &str, field: &str, path: &str) -> Option<Ty> {
        if !s.is_object() {
            self.error(path, "expected a schema object".into());
            return None;
        }
        if flag(s, "x-kubernetes-int-or-string") {
            return Some(Ty::Leaf(INT_OR_STRING.into()));
        }
        let ty = s.get("type").and_then(Value::as_str);
        let format = s.get("format").and_then(Value::as_str);
        Some(match ty {
            Some("string") => match format {
                Some("date-time") => Ty::Leaf(TIME.into()),
                Some("byte") => Ty::Leaf(BYTE_STRING.into()),
                _ => match s.get("enum").and_then(Value::as_array) {
                    Some(values) if values.iter().any(Value::is_string) => {
                        self.string_enum(values, parent, field, path)
                    }
                    _ => Ty::Str,
                },
            },
            Some("integer") => match format {
                Some("int32") => Ty::I32,
                _ => Ty::I64,
            },
            Some("number") => Ty::Number,
            Some("boolean") => Ty::Bool,
            Some("array") => {
                let Some(items) = s.get("items") else {
                    self.error(
                        path,
                        "an `array` without `items`; give it an `items` schema (a structural \
                         schema needs one)"
                            .into(),
                    );
                    return None;
                };
                Ty::List(Box::new(self.ty(
                    items,
                    parent,
                    field,
                    &format!("{path}.items"),
                )?))
            }
            Some("object") => return self.object(s, parent, field, path),
            None if preserves(s) => Ty::Json(None),
            None => {
                self.error(
                    path,
                    "no `type`; give it one, or mark it `x-kubernetes-preserve-unknown-fields: \
                     true` (kept as raw JSON) or `x-kubernetes-int-or-string: true`"
                        .into(),
                );
                return None;
            }
            Some(other) => {
                self.error(
                    path,
                    format!(
                        "unsupported `type: {other}`; use one of object, array, string, \
                         integer, number, boolean"
                    ),
                );
                return None;
            }
        })
    }

    fn object(&mut self, s: &Value, parent: &str, field: &str, path: &str) -> Option<Ty> {
        let embedded = flag(s, "x-kubernetes-embedded-resource");
        let has_props = s
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty());
        match s.get("additionalProperties") {
            Some(_) if has_props => {
                self.error(
                    path,
                    "both `properties` and `additionalProperties`; a structural schema allows \
                     only one of them, remove one"
                        .into(),
                );
                return None;
            }
            Some(Value::Bool(true)) => return Some(Ty::Map(Box::new(Ty::Json(None)))),
            Some(ap @ Value::Object(_)) => {
                let value = self.ty(ap, parent, field, &format!("{path}.additionalProperties"))?;
                return Some(Ty::Map(Box::new(value)));
            }
            _ => {}
        }
        if !has_props && !embedded {
            // Free-form (`x-kubernetes-preserve-unknown-fields`) or an object without declared
            // fields: either way the value is kept as it came.
            return Some(Ty::Json(None));
        }
        if !has_props && preserves(s) {
            return Some(Ty::Json(None));
        }
        let name = self.nested_name(parent, field);
        let mut fields = Vec::new();
        let mut taken = BTreeSet::new();
        if embedded {
            self.embedded_fields(s, &mut taken, &mut fields);
        }
        let skip: &[&str] = if embedded {
            &["apiVersion", "kind", "metadata"]
        } else {
            &[]
        };
        self.properties(s, &name, path, skip, &mut taken, &mut fields);
        let unknown_fields = preserves(s).then(|| field_name(UNKNOWN_FIELDS, &mut taken));
        let doc = description(s).unwrap_or_else(|| format!("`{field}` of `{parent}`."));
        let key = self.insert(TypeDef {
            k8s_versions: Default::default(),
            fields,
            unknown_fields,
            ..self.def(name, doc)
        });
        self.nested.insert(key.clone(), field.to_owned());
        Some(Ty::Struct(key))
    }

    /// `apiVersion`, `kind` and `metadata` of an embedded resource, whatever its schema lists.
    fn embedded_fields(
        &mut self,
        s: &Value,
        taken: &mut BTreeSet<String>,
        out: &mut Vec<FieldDef>,
    ) {
        let required = required(s);
        for (json, ty, doc) in [
            ("apiVersion", Ty::Str, "The embedded object's `apiVersion`."),
            ("kind", Ty::Str, "The embedded object's `kind`."),
            (
                "metadata",
                Ty::Leaf(OBJECT_META.into()),
                "The embedded object's metadata.",
            ),
        ] {
            let (presence, ty) = if required.contains(json) {
                (Presence::Required, ty)
            } else {
                (Presence::Optional, Ty::Option(Box::new(ty)))
            };
            out.push(FieldDef {
                k8s_versions: Default::default(),
                rust: field_name(json, taken),
                json: json.into(),
                doc: doc.into(),
                presence,
                ty,
            });
        }
    }

    fn string_enum(&mut self, values: &[Value], parent: &str, field: &str, path: &str) -> Ty {
        let name = self.nested_name(parent, field);
        let mut values: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
        let mut seen = BTreeSet::new();
        values.retain(|json| seen.insert(*json));
        let mut taken = BTreeSet::new();
        let variants = variant_names(&values, &mut taken)
            .into_iter()
            .zip(&values)
            .map(|(rust, json)| Variant {
                rust,
                json: (*json).to_owned(),
            })
            .collect();
        let other = variant_name("Other", &mut taken);
        let doc = format!("The values of `{field}` of `{parent}` (`{path}`).");
        let key = self.insert(TypeDef {
            k8s_versions: Default::default(),
            shape: Shape::StrEnum { variants, other },
            ..self.def(name, doc)
        });
        self.nested.insert(key.clone(), field.to_owned());
        Ty::Enum(key)
    }
}

/// The names an object schema lists as `required`.
fn required(s: &Value) -> BTreeSet<&str> {
    s.get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn flag(s: &Value, name: &str) -> bool {
    s.get(name).and_then(Value::as_bool) == Some(true)
}

fn preserves(s: &Value) -> bool {
    flag(s, "x-kubernetes-preserve-unknown-fields")
}

fn description(s: &Value) -> Option<String> {
    s.get("description")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(types::doc_text)
}

/// The description, plus the `default` and any non-string `enum` as sentences.
fn field_doc(s: &Value) -> String {
    let mut doc = description(s).unwrap_or_default();
    let mut add = |line: String| {
        if !doc.is_empty() {
            doc.push_str("\n\n");
        }
        doc.push_str(&line);
    };
    if let Some(d) = s.get("default") {
        add(format!("Default (applied by the API server): `{d}`."));
    }
    if let Some(values) = s.get("enum").and_then(Value::as_array)
        && !values.iter().any(Value::is_string)
    {
        let list: Vec<String> = values.iter().map(|v| format!("`{v}`")).collect();
        add(format!("One of {}.", list.join(", ")));
    }
    doc
}

/// The case of a name made by [`rust_name`].
#[derive(Clone, Copy)]
enum Case {
    /// UpperCamelCase; empty is `Type`, a leading digit gets a `T` in front.
    Type,
    /// snake_case; empty is `field`, a leading digit gets a `_` in front.
    Field,
}

/// A Rust name from any text: characters that cannot be in an identifier split words. Keywords
/// are made raw by `naming::ident` when emitted.
fn rust_name(text: &str, case: Case) -> String {
    let words: String = text
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { ' ' })
        .collect();
    let (mut name, empty, lead) = match case {
        Case::Type => (words.to_upper_camel_case(), "Type", 'T'),
        Case::Field => (words.to_snake_case(), "field", '_'),
    };
    if name.is_empty() {
        name = empty.into();
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, lead);
    }
    name
}

/// A snake_case field name for JSON name `json`, unique within `taken` (`_2`, `_3`, … on a
/// collision after case conversion: `fooBar` and `foo_bar`).
fn field_name(json: &str, taken: &mut BTreeSet<String>) -> String {
    unique(rust_name(json, Case::Field), "_", taken)
}

/// A variant name for enum value `json`, unique within `taken`.
fn variant_name(json: &str, taken: &mut BTreeSet<String>) -> String {
    unique(camel_name(json), "", taken)
}

/// The UpperCamelCase name of enum value `json`; empty is `Empty`.
fn camel_name(json: &str) -> String {
    if json.is_empty() {
        "Empty".to_owned()
    } else {
        rust_name(json, Case::Type)
    }
}

/// The variant names of an enum's distinct `values`, in order (G11): a value whose
/// UpperCamelCase name no other value shares gets that name (`enforce` → `Enforce`); values that
/// share one (`audit`, `Audit`) each keep their own spelling ([`spelling_name`]: `audit`,
/// `Audit`), so no variant gets a numeric suffix unless two spellings are one identifier
/// (`a-b`, `a_b`), the last resort.
fn variant_names(values: &[&str], taken: &mut BTreeSet<String>) -> Vec<String> {
    let names: Vec<String> = values.iter().map(|json| camel_name(json)).collect();
    let shared = |name: &String| names.iter().filter(|n| *n == name).count() > 1;
    // Spellings first: a non-colliding name never displaces a value's own spelling.
    let spellings: Vec<Option<String>> = values
        .iter()
        .zip(&names)
        .map(|(json, name)| shared(name).then(|| unique(spelling_name(json), "", taken)))
        .collect();
    spellings
        .into_iter()
        .zip(names)
        .map(|(spelling, name)| spelling.unwrap_or_else(|| unique(name, "", taken)))
        .collect()
}

/// A value's own spelling as an identifier (G11): characters that cannot be in one become `_`,
/// a leading digit gets a `_` in front, a keyword (`type`, `Self`) a `_` behind; empty is `Empty`.
fn spelling_name(json: &str) -> String {
    let mut name: String = json
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if name.is_empty() {
        return "Empty".to_owned();
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, '_');
    }
    if crate::naming::ident(&name) != name {
        name.push('_');
    }
    name
}

fn unique(base: String, sep: &str, taken: &mut BTreeSet<String>) -> String {
    let mut name = base.clone();
    let mut n = 1;
    while taken.contains(&name) {
        n += 1;
        name = format!("{base}{sep}{n}");
    }
    taken.insert(name.clone());
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_rust_and_collision_free() {
        let mut taken = BTreeSet::new();
        assert_eq!(field_name("fooBar", &mut taken), "foo_bar");
        assert_eq!(field_name("foo_bar", &mut taken), "foo_bar_2");
        assert_eq!(
            field_name("x-kubernetes-thing", &mut taken),
            "x_kubernetes_thing"
        );
        assert_eq!(field_name("$ref", &mut taken), "ref");
        assert_eq!(field_name("8080", &mut taken), "_8080");
        assert_eq!(field_name("", &mut taken), "field");
        let mut taken = BTreeSet::new();
        assert_eq!(variant_name("Running", &mut taken), "Running");
        assert_eq!(variant_name("", &mut taken), "Empty");
        assert_eq!(variant_name("3d", &mut taken), "T3d");
        assert_eq!(rust_name("my-kind.v2", Case::Type), "MyKindV2");
        assert_eq!(rust_name("", Case::Type), "Type");
    }

    /// G11: colliding values keep their spelling, the others their UpperCamelCase name.
    #[test]
    fn colliding_enum_values_keep_their_spelling() {
        let names = |values: &[&str]| variant_names(values, &mut BTreeSet::new());
        assert_eq!(
            names(&["audit", "Audit", "Enforce", "enforce", "warn"]),
            ["audit", "Audit", "Enforce", "enforce", "Warn"]
        );
        assert_eq!(names(&["a", "A", "b"]), ["a", "A", "B"]);
        assert_eq!(names(&["type", "Type", "x-y"]), ["type_", "Type", "XY"]);
        assert_eq!(
            names(&["9a", "9A", "self", "Self"]),
            ["_9a", "_9A", "self_", "Self_"]
        );
        // Two spellings that are one identifier: the numeric suffix is the last resort.
        assert_eq!(names(&["a-b", "a_b", "AB"]), ["a_b", "a_b2", "Ab"]);
    }

    /// G11: values made only of punctuation spell to `_`, which cannot name a variant; it becomes
    /// `__` (`naming::ident`'s rule for `_`), and a second such value, one identifier with it,
    /// takes the numeric suffix. Every name is an identifier syn accepts.
    #[test]
    fn punctuation_only_values_get_identifiers() {
        let names = |values: &[&str]| variant_names(values, &mut BTreeSet::new());
        assert_eq!(names(&["-", "+"]), ["__", "__2"]);
        assert_eq!(names(&["_", "-", "", "x"]), ["__", "__2", "Empty", "X"]);
        assert_eq!(names(&["-", "+", "Type"]), ["__", "__2", "Type"]);
        for values in [&["-", "+"][..], &["a-b", "a_b"], &["_", "__", "-_-"]] {
            for name in names(values) {
                assert!(
                    syn::parse_str::<syn::Ident>(&name).is_ok(),
                    "`{name}` of {values:?}"
                );
            }
        }
    }
}
