//! Reads the graph of k8s-openapi struct definitions reachable from chosen kinds (P1).
//!
//! Each type is found through its module's `pub use self::<file>::<Type>;` line, parsed with syn,
//! and its JSON names and required-field rules are read from k8s-openapi's own `Deserialize` impl
//! (`"podIP" => Field::Key_pod_ip`, `name: value_name.unwrap_or_default()`), so the compact type
//! decodes and encodes exactly what the k8s-openapi type does.

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};

use syn::{Fields, GenericArgument, Item, PathArguments, Type};

use super::{FieldDef, Presence, Ty, TypeDef, TypeGraph};
use crate::K8sOpenApi;
use crate::error::Error;

/// Newtypes that stay as they are in compact types: no strings worth interning inside.
const LEAVES: &[&str] = &[
    "apimachinery::pkg::apis::meta::v1::Time",
    "apimachinery::pkg::apis::meta::v1::MicroTime",
    "apimachinery::pkg::util::intstr::IntOrString",
    "ByteString",
];

const QUANTITY: &str = "apimachinery::pkg::api::resource::Quantity";

/// Reads every struct reachable from `roots` (paths from the crate root, `api::core::v1::Pod`),
/// marking the roots as resources.
pub(crate) fn read_graph(k8s: &K8sOpenApi, roots: &[String], errors: &mut Vec<Error>) -> TypeGraph {
    let mut reader = Reader {
        dir: k8s.version_dir(),
        mods: BTreeMap::new(),
        items: BTreeMap::new(),
    };
    let mut graph = TypeGraph::new();
    let mut queue: VecDeque<String> = roots.iter().cloned().collect();
    while let Some(key) = queue.pop_front() {
        if graph.contains_key(&key) {
            continue;
        }
        let Some(found) = reader.find(&key, errors) else {
            continue;
        };
        let Found::Struct(def) = found else {
            errors.push(Error::SourceType {
                path: reader.dir.clone(),
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

struct Reader {
    dir: PathBuf,
    /// `mod.rs` re-exports per module directory: type name → file stem.
    mods: BTreeMap<PathBuf, BTreeMap<String, String>>,
    /// What each path resolved to (shapes only), so every file is parsed once.
    items: BTreeMap<String, Kind>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Struct,
    JsonNewtype,
    Other,
}

impl Reader {
    /// The file defining `key`, through the `pub use self::<file>::<Type>;` of its module.
    fn file_of(&mut self, key: &str) -> Result<PathBuf, Error> {
        let mut parts: Vec<&str> = key.split("::").collect();
        let name = parts.pop().unwrap_or_default();
        let module_dir = parts.iter().fold(self.dir.clone(), |d, p| d.join(p));
        if !self.mods.contains_key(&module_dir) {
            let mod_rs = module_dir.join("mod.rs");
            let text = std::fs::read_to_string(&mod_rs).map_err(|source| Error::Io {
                path: mod_rs.clone(),
                source,
            })?;
            self.mods.insert(module_dir.clone(), reexports(&text));
        }
        let stem = self
            .mods
            .get(&module_dir)
            .and_then(|m| m.get(name))
            .ok_or_else(|| Error::SourceType {
                path: module_dir.join("mod.rs"),
                item: key.to_owned(),
                reason: "no `pub use self::<file>::<Type>;` for this type in its module".into(),
            })?;
        Ok(module_dir.join(format!("{stem}.rs")))
    }

    fn find(&mut self, key: &str, errors: &mut Vec<Error>) -> Option<Found> {
        let path = match self.file_of(key) {
            Ok(p) => p,
            Err(e) => {
                errors.push(e);
                return None;
            }
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(source) => {
                errors.push(Error::Io { path, source });
                return None;
            }
        };
        let ast = match syn::parse_file(&text) {
            Ok(a) => a,
            Err(e) => {
                errors.push(Error::RustSyntax {
                    path,
                    line: e.span().start().line,
                    column: e.span().start().column,
                    message: e.to_string(),
                });
                return None;
            }
        };
        let name = key.rsplit("::").next().unwrap_or(key);
        for item in &ast.items {
            match item {
                Item::Struct(s) if s.ident == name => {
                    return Some(self.read_struct(key, s, &text, &path, errors));
                }
                Item::Enum(e) if e.ident == name => return Some(Found::Other),
                _ => {}
            }
        }
        errors.push(Error::SourceType {
            path,
            item: key.to_owned(),
            reason: "the file does not define this type".into(),
        });
        None
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
            Fields::Unnamed(u) => {
                let json = u.unnamed.len() == 1
                    && matches!(&u.unnamed[0].ty, Type::Path(p) if path_string(&p.path) == "crate::serde_json::Value");
                return if json {
                    Found::JsonNewtype
                } else {
                    Found::Other
                };
            }
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
                rust,
                json,
                doc: super::doc_text(&first_sentence(&doc_of(&f.attrs))),
                presence,
                ty,
            });
        }
        let (module, name) = match key.rsplit_once("::") {
            Some((m, n)) => (m.split("::").map(str::to_owned).collect(), n.to_owned()),
            None => (Vec::new(), key.to_owned()),
        };
        Found::Struct(Box::new(TypeDef {
            module,
            name,
            doc: super::doc_text(&first_sentence(&doc_of(&s.attrs))),
            fields,
            default: derives(&s.attrs, "Default"),
            resource: false,
            shape: super::Shape::Struct,
            origin: super::TypeOrigin::K8sOpenApi,
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

    fn kind_of(&mut self, key: &str, errors: &mut Vec<Error>) -> Kind {
        if let Some(k) = self.items.get(key) {
            return *k;
        }
        // Structs are read again (with their fields) when the graph walk reaches them; here only
        // the shape matters. Errors surface then, so they are not reported twice.
        let mut scratch = Vec::new();
        let kind = match self.find(key, &mut scratch) {
            Some(Found::Struct(_)) => Kind::Struct,
            Some(Found::JsonNewtype) => Kind::JsonNewtype,
            Some(Found::Other) => Kind::Other,
            None => {
                errors.append(&mut scratch);
                Kind::Other
            }
        };
        self.items.insert(key.to_owned(), kind);
        kind
    }
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
pub(crate) fn first_sentence(doc: &str) -> String {
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
