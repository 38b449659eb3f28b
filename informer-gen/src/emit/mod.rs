//! The one emitter: the model into token streams, accessors (`factory`, `version`, `kind`) and
//! types (`types`) alike, in one path style.
//!
//! Path style: every generated module that names the runtime starts with [`Paths::imports`],
//! `use <runtime crate>::__private as rt;`, plus `use <k8s-openapi crate> as k8s;` where it names
//! a k8s-openapi type (a version module with built-in kinds, every module of types), and names
//! everything through them (`rt::SharedInformerFactory`, `rt::IStr`, `k8s::api::core::v1::Pod`);
//! serde's string attributes say `rt::…` too. The configured crate paths
//! (`Builder::runtime_crate`, `Builder::k8s_openapi_crate`) appear once per module, in those
//! imports. Types of the generated tree are reached relatively (`super::super::…`), users' types
//! by their configured path. The generated root imports `rt` and holds `compact`, so those are
//! names no group or `crd-types` module may take ([`ROOT_NAMES`]).
//!
//! Why aliases rather than absolute paths everywhere (the workspace style's default): serde's
//! attributes on generated types take paths as strings (`deserialize_with = "rt::null_default"`),
//! which an alias keeps independent of the configured crate paths, and one style on both sides
//! keeps each configured path to one `use` per module (decision record 14). Output that names no
//! k8s-openapi type (accessors of CRDs and derived kinds only) does not import it, so it needs
//! no direct dependency on k8s-openapi.

mod docs;
mod factory;
mod kind;
pub(crate) mod types;
mod version;

use std::collections::BTreeSet;

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use crate::model::{Group, Model, TypeRef};
use crate::naming;

/// Names the generated root module holds besides the group and `crd-types` modules: the runtime
/// alias it imports, and the `compact` module.
pub(crate) const ROOT_NAMES: &[&str] = &["rt", "compact"];

/// How the emitted code names the runtime and k8s-openapi.
pub(crate) struct Paths {
    /// `rt`, the alias of the runtime's `__private` module.
    pub(crate) rt: TokenStream,
    /// `rt` as a string, for serde's string attributes.
    pub(crate) rt_str: &'static str,
    /// `k8s`, the alias of the k8s-openapi crate.
    pub(crate) k8s: TokenStream,
    /// The configured runtime crate (`::informer_runtime`).
    runtime: syn::Path,
    /// The configured k8s-openapi crate (`::k8s_openapi`).
    k8s_crate: syn::Path,
    /// The k8s-openapi crate as docs name it (`k8s_openapi`).
    pub(crate) k8s_name: String,
    /// `#[cfg(feature = "…")]` on the compact types and accessors (`Builder::compact_feature`),
    /// or nothing.
    pub(crate) compact_cfg: TokenStream,
    /// Every Kubernetes version read, oldest first ([`Paths::with_k8s_versions`]).
    k8s_versions: Vec<String>,
}

impl Paths {
    /// The aliases of the configured crate paths (checked by `validate::settings`).
    pub(crate) fn new(runtime_crate: &str, k8s_crate: &str) -> Self {
        let runtime: syn::Path =
            syn::parse_str(runtime_crate).expect("bug: runtime crate path validated by Builder");
        let k8s: syn::Path =
            syn::parse_str(k8s_crate).expect("bug: k8s-openapi crate path validated by Builder");
        let k8s_name = quote!(#k8s).to_string().replace(' ', "");
        Paths {
            rt: quote!(rt),
            rt_str: "rt",
            k8s: quote!(k8s),
            k8s_name: k8s_name.trim_start_matches("::").to_owned(),
            runtime,
            k8s_crate: k8s,
            compact_cfg: TokenStream::new(),
            k8s_versions: Vec::new(),
        }
    }

    /// Gates the compact types and accessors on the cargo feature `feature`, if any.
    pub(crate) fn with_compact_feature(mut self, feature: Option<&str>) -> Self {
        self.compact_cfg = feature
            .map(|f| quote!(#[cfg(feature = #f)]))
            .unwrap_or_default();
        self
    }

    /// The imports at the top of a generated module: `rt`, and `k8s` when the module names a
    /// k8s-openapi type.
    pub(crate) fn imports(&self, k8s: bool) -> TokenStream {
        let runtime = &self.runtime;
        let k8s = k8s.then(|| {
            let k8s = &self.k8s_crate;
            quote! {
                #[allow(unused_imports)]
                use #k8s as k8s;
            }
        });
        quote! {
            #[allow(unused_imports)]
            use #runtime::__private as rt;
            #k8s
        }
    }

    /// The k8s-openapi type at `path` from that crate's root (`k8s::api::core::v1::Pod`).
    pub(crate) fn k8s_type(&self, path: &str) -> TokenStream {
        let k8s = &self.k8s;
        let segs = path.split("::").map(naming::ident);
        quote!(#k8s #(::#segs)*)
    }

    /// `ty` as named from a module `depth` levels below the generated root.
    pub(crate) fn type_ref(&self, ty: &TypeRef, depth: usize) -> TokenStream {
        match ty {
            TypeRef::K8s(path) => self.k8s_type(path),
            TypeRef::User(path) => {
                let path: syn::Path =
                    syn::parse_str(path).expect("bug: user type path validated by Builder");
                quote!(#path)
            }
            TypeRef::Generated(path) => {
                let ups = (0..depth).map(|_| quote!(super));
                let segs = path.split("::").map(naming::ident);
                quote!(#(#ups::)* #(#segs)::*)
            }
        }
    }
}

impl Paths {
    /// Every Kubernetes version read (`K8sOpenApi::every_version`), oldest first: the range the
    /// version `cfg`s are written against.
    pub(crate) fn with_k8s_versions(mut self, versions: &[String]) -> Self {
        let mut versions = versions.to_vec();
        versions.sort_by_key(|v| crate::model::merge::version_key(v));
        self.k8s_versions = versions;
        self
    }

    /// `#[cfg(…)]` for an item that exists only in these Kubernetes versions
    /// (`K8sOpenApi::every_version`); nothing for an empty set (every version). One version is
    /// `k8s_openapi_enabled_version = "1.36"`, the cfg k8s-openapi sets for itself; a run of
    /// versions is `k8s_since = "1.34"` (that version or later), `k8s_until = "1.35"` (that
    /// version or earlier) or both, which stay one line where a list of versions would not.
    /// The crate compiling the output sets all three from `DEP_K8S_OPENAPI_*_VERSION` in its build
    /// script (informer-k8s's `build.rs`; decision records 16 and 19).
    pub(crate) fn k8s_cfg(&self, versions: &BTreeSet<String>) -> TokenStream {
        self.k8s_predicate(versions)
            .map(|p| quote!(#[cfg(#p)]))
            .unwrap_or_default()
    }

    /// [`Paths::k8s_cfg`] for an item inside a module gated on `enclosing`: nothing when the item
    /// exists wherever its module does.
    pub(crate) fn k8s_cfg_within(
        &self,
        versions: &BTreeSet<String>,
        enclosing: &BTreeSet<String>,
    ) -> TokenStream {
        if versions == enclosing {
            TokenStream::new()
        } else {
            self.k8s_cfg(versions)
        }
    }

    /// The same as an inner attribute, `#![cfg(…)]`, for the top of a module.
    fn k8s_inner_cfg(&self, versions: &BTreeSet<String>) -> TokenStream {
        self.k8s_predicate(versions)
            .map(|p| quote!(#![cfg(#p)]))
            .unwrap_or_default()
    }

    fn k8s_predicate(&self, versions: &BTreeSet<String>) -> Option<TokenStream> {
        if versions.is_empty() {
            return None;
        }
        let every = &self.k8s_versions;
        let at: Vec<usize> = versions
            .iter()
            .filter_map(|v| every.iter().position(|e| e == v))
            .collect();
        let (first, last) = (at.iter().min(), at.iter().max());
        if let (Some(&first), Some(&last)) = (first, last)
            && at.len() == versions.len()
            && last - first + 1 == at.len()
        {
            let (from, to) = (&every[first], &every[last]);
            return match (first == 0, last + 1 == every.len()) {
                _ if first == last => Some(quote!(k8s_openapi_enabled_version = #from)),
                (true, true) => None,
                (false, true) => Some(quote!(k8s_since = #from)),
                (true, false) => Some(quote!(k8s_until = #to)),
                (false, false) => Some(quote!(all(k8s_since = #from, k8s_until = #to))),
            };
        }
        let versions = versions.iter();
        Some(quote!(any(#(k8s_openapi_enabled_version = #versions),*)))
    }
}

/// `items` with `cfg` (from [`k8s_cfg`]) on each top-level item.
pub(crate) fn gate_items(items: TokenStream, cfg: &TokenStream) -> TokenStream {
    if cfg.is_empty() {
        return items;
    }
    let file: syn::File =
        syn::parse2(items).expect("bug: informer-gen emitted items that do not parse");
    let items = file.items.iter();
    quote!(#(#cfg #items)*)
}

/// The emitted code before rendering: root items and one module per group.
pub(crate) struct Emitted {
    /// The `InformerFactoryExt` trait and its impl.
    pub(crate) root: TokenStream,
    /// Group modules, then `crd-types` modules, in sorted and configuration order.
    pub(crate) groups: Vec<GroupModule>,
    /// The items of the `compact` module, when compact kinds are configured.
    pub(crate) compact: Option<TokenStream>,
    /// `#[cfg(feature = …)]` on the `compact` module's declaration, or nothing.
    pub(crate) compact_cfg: TokenStream,
}

/// One module of the generated root.
pub(crate) struct GroupModule {
    /// The module identifier (`apps`, `r#async`).
    pub(crate) ident: Ident,
    /// The module's file stem (`apps`, `async`).
    pub(crate) file_stem: String,
    /// Outer doc of the module declaration.
    pub(crate) doc: String,
    /// The module's items.
    pub(crate) body: TokenStream,
}

/// Emits everything in `model`.
pub(crate) fn emit(model: &Model, paths: &Paths) -> Emitted {
    let mut groups: Vec<GroupModule> = model
        .groups
        .values()
        .map(|g| group_module(g, paths))
        .collect();
    // A CRD kind's compact form holds the compact `ObjectMeta`: the root's own when it
    // generates one (compact built-in kinds), informer-k8s's otherwise (decision record 27).
    let meta = if model.compact.contains_key(crate::model::types::OBJECT_META) {
        types::CompactMeta::Local
    } else {
        types::CompactMeta::Crate(quote!(::informer_k8s::compact))
    };
    groups.extend(model.type_modules.iter().map(|t| {
        let ident = naming::ident(&t.module);
        GroupModule {
            file_stem: file_stem(&ident),
            ident,
            doc: format!(
                " Types generated from the CRD schemas in `{}` (`crd-types`).",
                t.source
            ),
            body: types::schema_module(&t.graph, paths, &t.source, &meta),
        }
    }));
    let compact = (!model.compact.is_empty()).then(|| types::compact_module(&model.compact, paths));
    let root = factory::extension_trait(model, paths);
    let imports = paths.imports(false);
    Emitted {
        root: quote!(#imports #root),
        groups,
        compact,
        compact_cfg: paths.compact_cfg.clone(),
    }
}

fn file_stem(ident: &Ident) -> String {
    ident.to_string().trim_start_matches("r#").to_owned()
}

fn group_module(group: &Group, paths: &Paths) -> GroupModule {
    let ident = naming::ident(&group.accessor);
    let group_ty = naming::group_type(&group.accessor);
    let rt = &paths.rt;
    let imports = paths.imports(false);
    let group_doc = docs::group_handle(group);
    let group_versions = group.k8s_versions();
    let accessors = group.versions.values().map(|v| {
        let v_ident = naming::ident(&v.name);
        let v_ty = naming::version_type(&group.accessor, &v.name);
        let doc = docs::version_accessor(group, v);
        let cfg = paths.k8s_cfg_within(&v.k8s_versions(), &group_versions);
        quote! {
            #[doc = #doc]
            #cfg
            pub fn #v_ident(&self) -> self::#v_ident::#v_ty {
                self::#v_ident::#v_ty::new(&self.factory)
            }
        }
    });
    let versions = group
        .versions
        .values()
        .map(|v| version::version_module(group, v, &group_versions, paths));
    // A group some Kubernetes versions lack is compiled out whole: an inner attribute, so the
    // `mod` declaration stays one line in every layout.
    let group_cfg = paths.k8s_inner_cfg(&group_versions);
    let body = quote! {
        #group_cfg
        #imports

        #[doc = #group_doc]
        #[derive(Clone)]
        pub struct #group_ty {
            factory: #rt::SharedInformerFactory,
        }

        impl #group_ty {
            /// A handle on `factory`; creates nothing until an informer is requested.
            pub fn new(factory: &#rt::SharedInformerFactory) -> Self {
                Self { factory: #rt::Clone::clone(factory) }
            }

            #(#accessors)*
        }

        #(#versions)*
    };
    GroupModule {
        file_stem: file_stem(&ident),
        ident,
        doc: docs::group_module(group),
        body,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::Paths;

    fn cfg(versions: &[&str]) -> String {
        let every = ["1.33", "1.34", "1.35", "1.36", "1.37"].map(String::from);
        let paths = Paths::new("::informer_runtime", "::k8s_openapi").with_k8s_versions(&every);
        let set: BTreeSet<String> = versions.iter().map(|v| (*v).to_owned()).collect();
        paths.k8s_cfg(&set).to_string().replace(' ', "")
    }

    /// Decision record 19: one version by name, a run by its ends, anything else by its members.
    #[test]
    fn version_gates_are_one_version_a_run_or_a_list() {
        assert_eq!(cfg(&[]), "");
        assert_eq!(cfg(&["1.33", "1.34", "1.35", "1.36", "1.37"]), "");
        assert_eq!(
            cfg(&["1.35"]),
            r#"#[cfg(k8s_openapi_enabled_version="1.35")]"#
        );
        assert_eq!(
            cfg(&["1.34", "1.35", "1.36", "1.37"]),
            r#"#[cfg(k8s_since="1.34")]"#
        );
        assert_eq!(cfg(&["1.33", "1.34"]), r#"#[cfg(k8s_until="1.34")]"#);
        assert_eq!(
            cfg(&["1.34", "1.35"]),
            r#"#[cfg(all(k8s_since="1.34",k8s_until="1.35"))]"#
        );
        assert_eq!(
            cfg(&["1.33", "1.37"]),
            r#"#[cfg(any(k8s_openapi_enabled_version="1.33",k8s_openapi_enabled_version="1.37"))]"#
        );
    }
}
