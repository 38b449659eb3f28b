//! The per-kind handles (`XInformer`, `XLister`, `XNamespaceLister`, G3) as tokens, emitted from this
//! one place for both `#[derive(Informer)]` (informer-derive) and informer-gen, and the Kubernetes
//! naming rule both of them check ([`is_api_version`]).
//!
//! Both callers describe a kind with [`Kind`] and get the same items back; what differs between
//! them (visibility, doc subject, declared indexes, the cached form and its `full()` and `compact()` accessors) is data in [`Kind`],
//! never a second copy of the item shapes. The impls are inherent, so they carry no
//! `#[automatically_derived]` (rustc accepts it on trait impls only). Every method is
//! `#[inline]`: rustc then compiles a method, and the runtime's generic informer it instantiates,
//! only in a crate that calls it, so a crate of a hundred kinds (informer-k8s) costs its users
//! the kinds they use, not every kind it defines.
//!
//! ```
//! use quote::quote;
//! let tokens = informer_handles::handles(&informer_handles::Kind {
//!     vis: quote!(pub),
//!     rt: quote!(::informer_runtime::__private),
//!     resource: quote!(crate::Foo),
//!     source: None,
//!     prefix: "Foo".into(),
//!     namespaced: true,
//!     subject: "`example.com/v1` kind `Foo`".into(),
//!     get_informer: None,
//!     informer_methods: quote!(),
//!     lister_methods: quote!(),
//! });
//! assert!(tokens.to_string().contains("FooNamespaceLister"));
//! ```

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

/// What the handles of one kind are made from.
pub struct Kind {
    /// The visibility of the emitted items and methods (`pub`, or the derive input's).
    pub vis: TokenStream,
    /// The path of the runtime's `__private` module (`::informer_runtime::__private`).
    pub rt: TokenStream,
    /// The cached type (`crate::Foo`, `::k8s_openapi::api::core::v1::Pod`, or a compact form).
    pub resource: TokenStream,
    /// The kind whose endpoint is listed and watched, when the cached type is another form of it
    /// (a compact kind caches `Pod`'s compact form, its source is `Pod`); `None`: `resource`.
    /// `projected::<P>()` asks for `P: Object<Source = source>`.
    pub source: Option<TokenStream>,
    /// The prefix of the handle names (`Foo` → `FooInformer`, `FooLister`, `FooNamespaceLister`).
    pub prefix: String,
    /// Namespaced (a `namespaced(ns)` lister and `XNamespaceLister`) or cluster-scoped (`get`), L4.
    pub namespaced: bool,
    /// The kind as the docs name it (`` `apps/v1` kind `Deployment` ``).
    pub subject: String,
    /// The body of `informer()`, when it is not `self.factory.informer_for::<R>()` (the derive's
    /// declared indexes register through `informer_for_with_indexers`).
    pub get_informer: Option<TokenStream>,
    /// Extra methods of `XInformer` (informer-gen's `full()` and `compact()`).
    pub informer_methods: TokenStream,
    /// Extra methods of `XLister` (the derive's `by_<index>` lookups).
    pub lister_methods: TokenStream,
}

/// The three handle types of `kind`.
pub fn handles(kind: &Kind) -> TokenStream {
    let informer = informer(kind);
    let lister = lister(kind);
    let ns_lister = if kind.namespaced {
        namespace_lister(kind)
    } else {
        TokenStream::new()
    };
    quote! {
        #informer
        #lister
        #ns_lister
    }
}

fn name(kind: &Kind, suffix: &str) -> Ident {
    Ident::new(&format!("{}{suffix}", kind.prefix), Span::call_site())
}

fn informer(kind: &Kind) -> TokenStream {
    let (vis, p, res) = (&kind.vis, &kind.rt, &kind.resource);
    let (informer, lister) = (name(kind, "Informer"), name(kind, "Lister"));
    let doc = format!(" Typed handle to the shared informer for {}.", kind.subject);
    let get_informer = kind
        .get_informer
        .clone()
        .unwrap_or_else(|| quote!(self.factory.informer_for::<#res>()));
    let source = kind.source.as_ref().unwrap_or(res);
    let extra = &kind.informer_methods;
    quote! {
        #[doc = #doc]
        #[derive(Clone)]
        #vis struct #informer {
            factory: #p::SharedInformerFactory,
        }

        impl #informer {
            /// A handle on `factory`; the informer itself is created on the first [`Self::informer`] call (F1).
            #[inline]
            #vis fn new(factory: &#p::SharedInformerFactory) -> Self {
                Self { factory: #p::Clone::clone(factory) }
            }

            /// The factory's shared informer for this type, created on first use; every call returns the same `Arc`.
            #[inline]
            #vis fn informer(&self) -> #p::Arc<#p::SharedIndexInformer<#res>> {
                #get_informer
            }

            /// A typed lister over this informer's cache.
            #[inline]
            #vis fn lister(&self) -> #lister {
                #lister::new(self.informer().indexer())
            }

            /// The shared informer and lister of a projection `P` of this kind (P4): it lists and
            /// watches this kind's endpoint and caches only `P`'s fields.
            #vis fn projected<P>(&self) -> #p::Projected<P>
            where
                P: #p::Object<Source = #source>,
            {
                #p::Projected::new(&self.factory)
            }

            #extra
        }
    }
}

fn lister(kind: &Kind) -> TokenStream {
    let (vis, p, res) = (&kind.vis, &kind.rt, &kind.resource);
    let (lister, ns_lister) = (name(kind, "Lister"), name(kind, "NamespaceLister"));
    let doc = format!(" Typed lister over the informer cache of {}.", kind.subject);
    let scoped = if kind.namespaced {
        quote! {
            /// A lister restricted to one namespace (L2, L3).
            #[inline]
            #vis fn namespaced(&self, namespace: &str) -> #ns_lister {
                #ns_lister { inner: self.inner.namespaced(namespace) }
            }
        }
    } else {
        quote! {
            /// The object called `name`; a miss is `NotFound` (L3, L4).
            #[inline]
            #vis fn get(&self, name: &str) -> #p::Result<#p::Arc<#res>, #p::ListerError> {
                self.inner.get(name)
            }
        }
    };
    let extra = &kind.lister_methods;
    quote! {
        #[doc = #doc]
        #[derive(Clone)]
        #vis struct #lister {
            inner: #p::Lister<#res>,
        }

        impl #lister {
            /// A lister over `indexer` (usually `informer.indexer()`).
            #[inline]
            #vis fn new(indexer: #p::Arc<#p::Indexer<#res>>) -> Self {
                Self { inner: #p::Lister::from_indexer(indexer) }
            }

            /// Every cached object matching `selector` (L1).
            #[inline]
            #vis fn list(&self, selector: &#p::Selector) -> #p::Vec<#p::Arc<#res>> {
                self.inner.list(selector)
            }

            #scoped

            #extra

            /// The untyped runtime lister this wraps.
            #[inline]
            #vis fn as_lister(&self) -> &#p::Lister<#res> {
                &self.inner
            }
        }
    }
}

fn namespace_lister(kind: &Kind) -> TokenStream {
    let (vis, p, res) = (&kind.vis, &kind.rt, &kind.resource);
    let ns_lister = name(kind, "NamespaceLister");
    let doc = format!(" Typed lister for one namespace of {}.", kind.subject);
    quote! {
        #[doc = #doc]
        #[derive(Clone)]
        #vis struct #ns_lister {
            inner: #p::NamespacedLister<#res>,
        }

        impl #ns_lister {
            /// The object called `name` in this namespace; a miss is `NotFound` (L3).
            #[inline]
            #vis fn get(&self, name: &str) -> #p::Result<#p::Arc<#res>, #p::ListerError> {
                self.inner.get(name)
            }

            /// Every object in this namespace matching `selector` (L2).
            #[inline]
            #vis fn list(&self, selector: &#p::Selector) -> #p::Vec<#p::Arc<#res>> {
                self.inner.list(selector)
            }
        }
    }
}

/// Whether `v` is a Kubernetes API version name: `v<N>` optionally followed by `alpha<N>` or
/// `beta<N>`, numbers without a leading zero (`v1`, `v1beta1`, `v2alpha3`). The derive rejects
/// any other `version`, informer-gen any other CRD version name.
pub fn is_api_version(v: &str) -> bool {
    fn number(s: &str) -> bool {
        !s.is_empty() && !s.starts_with('0') && s.bytes().all(|b| b.is_ascii_digit())
    }
    let Some(rest) = v.strip_prefix('v') else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (major, suffix) = rest.split_at(digits);
    number(major)
        && (suffix.is_empty()
            || suffix
                .strip_prefix("alpha")
                .or_else(|| suffix.strip_prefix("beta"))
                .is_some_and(number))
}

#[cfg(test)]
mod tests {
    use super::is_api_version;

    #[test]
    fn versions() {
        for ok in ["v1", "v2", "v1beta1", "v2alpha3", "v10"] {
            assert!(is_api_version(ok), "{ok}");
        }
        for bad in ["1", "v", "v0", "v1beta", "v1gamma1", "V1", "v01", "v1beta0"] {
            assert!(!is_api_version(bad), "{bad}");
        }
    }
}
