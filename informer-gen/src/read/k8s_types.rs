//! Reads the graph of k8s-openapi struct definitions reachable from chosen kinds (P1).
//!
//! Each type is found through its module's `pub use self::<file>::<Type>;` line, parsed with syn,
//! and its JSON names and required-field rules are read from k8s-openapi's own `Deserialize` impl
//! (`"podIP" => Field::Key_pod_ip`, `name: value_name.unwrap_or_default()`), so the compact type
//! decodes and encodes exactly what the k8s-openapi type does.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use syn::{Fields, GenericArgument, Item, PathArguments, Type};

use super::k8s_openapi::Sources;
use crate::error::Error;
use crate::model::types::{self, FieldDef, Presence, Shape, Ty, TypeDef, TypeGraph, TypeOrigin};

/// Newtypes that stay as they are in compact types: no strings worth interning inside.
const LEAVES: &[&str] = &[
    "apimachinery::pkg::apis::meta::v1::Time",
    "apimachinery::pkg::apis::meta::v1::MicroTime",
    "apimachinery::pkg::util::intstr::IntOrString",
    "ByteString",
];

const QUANTITY: &str = "apimachinery::pkg::api::resource::Quantity";

/// Reads every struct reachable from `roots` (paths from the crate root, `api::core::v1::Pod`),
/// marking the roots as resources. Files come from `sources`, which the built-in scan filled.
pub(crate) fn read_graph(
    sources: &mut Sources,
    roots: &[String],
    errors: &mut Vec<Error>,
) -> TypeGraph {
    let mut reader = Reader {
        sources,
        mods: BTreeMap::new(),
        located: BTreeMap::new(),
    };
    let mut graph = TypeGraph::new();
    let mut queue: VecDeque<String> = roots.iter().cloned().collect();
    while let Some(key) = queue.pop_front() {
        if graph.contains_key(&key) {
            continue;
        }
        let Some(found) = reader.definition(&key, errors) else {
            continue;
        };
        let Found::Struct(def) = found else {
            errors.push(Error::SourceType {
                path: reader.sources.dir.clone(),
                item: key.clone(),
                reason: "a compact type can only be generated for a struct with named fields"
                    .into(),
            });
            continue;
        };
        let mut def = *def;
        def.resource = roots.contains(&key);
        for f in &def.fields {
            collect_structs(&f.ty, &mut queue);
        }
        graph.insert(key, def);
    }
    graph
}

fn collect_structs(ty: &Ty, out: &mut VecDeque<String>) {
    match ty {
        Ty::Struct(k) => out.push_back(k.clone()),
        Ty::List(t) | Ty::Map(t) | Ty::Option(t) | Ty::Boxed(t) => collect_structs(t, out),
        _ => {}
    }
}

enum Found {
    Struct(Box<TypeDef>),
    /// A tuple struct around `serde_json::Value`.
    JsonNewtype,
    /// Anything else (an enum, another newtype).
    Other,
}

/// Where a type is defined: its file and the index of its item there.
#[derive(Clone)]
struct Located {
    path: PathBuf,
    text: Rc<str>,
    ast: Rc<syn::File>,
    item: usize,
}

struct Reader<'s> {
    sources: &'s mut Sources,
    /// `mod.rs` re-exports per module directory: type name → file stem.
    mods: BTreeMap<PathBuf, BTreeMap<String, String>>,
    /// Where each type was found; `None` once its failure was reported, so that a type named by
    /// several fields is looked up, and reported, once.
    located: BTreeMap<String, Option<Located>>,
}

/// What a field's type is, before its definition is read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Struct,
    JsonNewtype,
    Other,
}

impl Reader<'_> {
    /// The file defining `key`, through the `pub use self::<file>::<Type>;` of its module.
    fn file_of(&mut self, key: &str, errors: &mut Vec<Error>) -> Option<PathBuf> {
        let mut parts: Vec<&str> = key.split("::").collect();
        let name = parts.pop().unwrap_or_default();
        let module_dir = parts
            .iter()
            .fold(self.sources.dir.clone(), |d, p| d.join(p));
        let mod_rs = module_dir.join("mod.rs");
        if !self.mods.contains_key(&module_dir) {
            let text = self.sources.text(&mod_rs, errors)?;
            self.mods.insert(module_dir.clone(), reexports(&text));
        }
        let stem = self.mods.get(&module_dir).and_then(|m| m.get(name));
        let Some(stem) = stem else {
            errors.push(Error::SourceType {
                path: mod_rs,
                item: key.to_owned(),
                reason: "no `pub use self::<file>::<Type>;` for this type in its module".into(),
            });
            return None;
        };
        Some(module_dir.join(format!("{stem}.rs")))
    }

    /// Where `key` is defined; every failure is reported on the first lookup only.
    fn locate(&mut self, key: &str, errors: &mut Vec<Error>) -> Option<Located> {
        if let Some(found) = self.located.get(key) {
            return found.clone();
        }
        let found = self.find(key, errors);
        self.located.insert(key.to_owned(), found.clone());
        found
    }

    fn find(&mut self, key: &str, errors: &mut Vec<Error>) -> Option<Located> {
        let path = self.file_of(key, errors)?;
        let (text, ast) = self.sources.parsed(&path, errors)?;
        let name = key.rsplit("::").next().unwrap_or(key);
        let item = ast.items.iter().position(|item| match item {
            Item::Struct(s) => s.ident == name,
            Item::Enum(e) => e.ident == name,
            _ => false,
        });
        let Some(item) = item else {
            errors.push(Error::SourceType {
                path,
                item: key.to_owned(),
                reason: "the file does not define this type".into(),
            });
            return None;
        };
        Some(Located {
            path,
            text,
            ast,
            item,
        })
    }

    /// The definition of `key`, with its fields for a struct.
    fn definition(&mut self, key: &str, errors: &mut Vec<Error>) -> Option<Found> {
        let at = self.locate(key, errors)?;
        Some(match &at.ast.items[at.item] {
            Item::Struct(s) => self.read_struct(key, s, &at.text, &at.path, errors),
            _ => Found::Other,
        })
    }

    fn read_struct(
        &mut self,
        key: &str,
        s: &syn::ItemStruct,
        text: &str,
        path: &Path,
        errors: &mut Vec<Error>,
    ) -> Found {
        let named = match &s.fields {
            Fields::Named(n) => n,
            Fields::Unnamed(u) if json_newtype(u) => return Found::JsonNewtype,
            Fields::Unnamed(_) => return Found::Other,
            Fields::Unit => return Found::Other,
        };
        let json_names = json_names(text);
        let mut fields = Vec::new();
        for f in &named.named {
            let Some(ident) = &f.ident else { continue };
            let rust = ident.to_string();
            let item = format!("{}.{rust}", s.ident);
            let Some(json) = json_names.get(&rust).cloned() else {
                errors.push(Error::SourceType {
                    path: path.to_owned(),
                    item,
                    reason: "no JSON name found in the type's `Deserialize` impl".into(),
                });
                continue;
            };
            let ty = match self.ty(&f.ty, errors) {
                Ok(t) => t,
                Err(reason) => {
                    errors.push(Error::SourceType {
                        path: path.to_owned(),
                        item,
                        reason,
                    });
                    continue;
                }
            };
            let presence = if matches!(ty, Ty::Option(_)) {
                Presence::Optional
            } else if text.contains(&format!("{rust}: value_{rust}.unwrap_or_default()")) {
                Presence::DefaultIfMissing
            } else {
                Presence::Required
            };
            fields.push(FieldDef {
                k8s_versions: Default::default(),
                rust,
                json,
                doc: types::doc_text(&first_sentence(&doc_of(&f.attrs))),
                presence,
                ty,
            });
        }
        let (module, name) = match key.rsplit_once("::") {
            Some((m, n)) => (m.split("::").map(str::to_owned).collect(), n.to_owned()),
            None => (Vec::new(), key.to_owned()),
        };
        Found::Struct(Box::new(TypeDef {
            k8s_versions: Default::default(),
            module,
            name,
            doc: types::doc_text(&first_sentence(&doc_of(&s.attrs))),
            fields,
            default: derives(&s.attrs, "Default"),
            resource: false,
            shape: Shape::Struct,
            origin: TypeOrigin::K8sOpenApi,
            unknown_fields: None,
        }))
    }

    /// The shape of a field type as k8s-openapi writes it.
    fn ty(&mut self, ty: &Type, errors: &mut Vec<Error>) -> Result<Ty, String> {
        let Type::Path(tp) = ty else {
            return Err(format!("unsupported type `{}`", quote::quote!(#ty)));
        };
        let full = path_string(&tp.path);
        let last = tp.path.segments.last().ok_or("empty type path")?;
        let args: Vec<&Type> = match &last.arguments {
            PathArguments::AngleBracketed(a) => a
                .args
                .iter()
                .filter_map(|g| match g {
                    GenericArgument::Type(t) => Some(t),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        let one = |errors: &mut Vec<Error>, this: &mut Self| -> Result<Ty, String> {
            let t = args
                .last()
                .ok_or_else(|| format!("`{full}` without a type argument"))?;
            this.ty(t, errors)
        };
        Ok(match last.ident.to_string().as_str() {
            "bool" => Ty::Bool,
            "i32" => Ty::I32,
            "i64" => Ty::I64,
            "f64" => Ty::F64,
            "String" => Ty::Str,
            "Option" => Ty::Option(Box::new(one(errors, self)?)),
            "Vec" => Ty::List(Box::new(one(errors, self)?)),
            "Box" => Ty::Boxed(Box::new(one(errors, self)?)),
            "BTreeMap" => {
                let key = args.first().map(|t| quote::quote!(#t).to_string());
                if key.as_deref().map(|k| k.replace(' ', "")) != Some("std::string::String".into())
                {
                    return Err(format!("map with non-string keys `{full}`"));
                }
                Ty::Map(Box::new(one(errors, self)?))
            }
            _ => {
                let Some(rel) = full.strip_prefix("crate::") else {
                    return Err(format!(
                        "unsupported type `{full}`: add a mapping for it in informer-gen's `types::k8s`"
                    ));
                };
                if rel == "serde_json::Value" {
                    Ty::Json(None)
                } else if rel == QUANTITY {
                    Ty::Quantity
                } else if LEAVES.contains(&rel) {
                    Ty::Leaf(rel.to_owned())
                } else {
                    match self.kind_of(rel, errors) {
                        Kind::Struct => Ty::Struct(rel.to_owned()),
                        Kind::JsonNewtype => Ty::Json(Some(rel.to_owned())),
                        Kind::Other => Ty::Leaf(rel.to_owned()),
                    }
                }
            }
        })
    }

    /// What `key` is, from its declaration alone (its fields are read when the graph walk
    /// reaches it); a type that cannot be found was reported and is kept as it is.
    fn kind_of(&mut self, key: &str, errors: &mut Vec<Error>) -> Kind {
        let Some(at) = self.locate(key, errors) else {
            return Kind::Other;
        };
        match &at.ast.items[at.item] {
            Item::Struct(s) => match &s.fields {
                Fields::Named(_) => Kind::Struct,
                Fields::Unnamed(u) if json_newtype(u) => Kind::JsonNewtype,
                _ => Kind::Other,
            },
            _ => Kind::Other,
        }
    }
}

/// A tuple struct around `serde_json::Value` (k8s-openapi's `FieldsV1`, `JSON`).
fn json_newtype(fields: &syn::FieldsUnnamed) -> bool {
    fields.unnamed.len() == 1
        && matches!(&fields.unnamed[0].ty, Type::Path(p) if path_string(&p.path) == "crate::serde_json::Value")
}

/// `Type → file stem` from a module's `pub use self::<file>::<Type>;` lines.
fn reexports(mod_rs: &str) -> BTreeMap<String, String> {
    mod_rs
        .lines()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix("pub use self::")?.strip_suffix(';')?;
            let (file, ty) = rest.split_once("::")?;
            Some((ty.to_owned(), file.to_owned()))
        })
        .collect()
}

/// Rust field name → JSON name, from `"podIP" => Field::Key_pod_ip,` lines of the Deserialize impl.
fn json_names(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| {
            let (json, rest) = l
                .trim()
                .strip_prefix('"')?
                .split_once("\" => Field::Key_")?;
            let rust = rest.strip_suffix(',')?;
            Some((rust.to_owned(), json.to_owned()))
        })
        .collect()
}

fn path_string(p: &syn::Path) -> String {
    p.segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect::<Vec<_>>()
        .join("::")
}

fn doc_of(attrs: &[syn::Attribute]) -> String {
    attrs
        .iter()
        .filter_map(|a| match &a.meta {
            syn::Meta::NameValue(nv) if nv.path.is_ident("doc") => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value().trim().to_owned()),
                _ => None,
            },
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn derives(attrs: &[syn::Attribute], what: &str) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("derive")
            && quote::quote!(#a)
                .to_string()
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| w == what)
    })
}

/// The first sentence (up to `. `), so that generated docs stay short; links to the full text
/// live on the k8s-openapi type.
fn first_sentence(doc: &str) -> String {
    let doc = doc.trim();
    // A sentence ends at `. ` followed by a capital letter (not at "e.g. the").
    let end = doc
        .match_indices(". ")
        .map(|(i, _)| i)
        .find(|&i| doc[i + 2..].chars().next().is_some_and(char::is_uppercase));
    match end {
        Some(i) => doc[..=i].to_owned(),
        None => doc.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_json_names_and_reexports() {
        let names =
            json_names("    \"podIP\" => Field::Key_pod_ip,\n    \"type\" => Field::Key_type_,\n");
        assert_eq!(names.get("pod_ip").map(String::as_str), Some("podIP"));
        assert_eq!(names.get("type_").map(String::as_str), Some("type"));
        let re = reexports("mod pod;\npub use self::pod::Pod;\n");
        assert_eq!(re.get("Pod").map(String::as_str), Some("pod"));
    }

    #[test]
    fn first_sentence_cuts_at_the_first_period() {
        assert_eq!(first_sentence("A b. C d."), "A b.");
        assert_eq!(first_sentence("No period"), "No period");
        assert_eq!(first_sentence("Use e.g. this. Then"), "Use e.g. this.");
    }
}
