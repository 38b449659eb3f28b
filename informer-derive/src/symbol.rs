//! Attribute names, kept as constants so parsing and messages never disagree on spelling.

use std::fmt;

use syn::{Ident, Path};

/// One attribute key such as `group` in `#[informer(group = "…")]`.
#[derive(Copy, Clone)]
pub(crate) struct Symbol(pub(crate) &'static str);

pub(crate) const INFORMER: Symbol = Symbol("informer");
pub(crate) const KUBE: Symbol = Symbol("kube");
pub(crate) const GROUP: Symbol = Symbol("group");
pub(crate) const VERSION: Symbol = Symbol("version");
pub(crate) const KIND: Symbol = Symbol("kind");
pub(crate) const PLURAL: Symbol = Symbol("plural");
pub(crate) const SINGULAR: Symbol = Symbol("singular");
pub(crate) const NAMESPACED: Symbol = Symbol("namespaced");
pub(crate) const ROOT: Symbol = Symbol("root");
pub(crate) const CRATE: Symbol = Symbol("crate");
pub(crate) const INDEX: Symbol = Symbol("index");
pub(crate) const NAME: Symbol = Symbol("name");
pub(crate) const PATH: Symbol = Symbol("path");
pub(crate) const OWNER: Symbol = Symbol("owner");
pub(crate) const FUNCTION: Symbol = Symbol("function");
pub(crate) const PROJECTION: Symbol = Symbol("projection");
pub(crate) const OF: Symbol = Symbol("of");
pub(crate) const NESTED: Symbol = Symbol("nested");

impl PartialEq<Symbol> for Ident {
    fn eq(&self, word: &Symbol) -> bool {
        self == word.0
    }
}

impl PartialEq<Symbol> for &Ident {
    fn eq(&self, word: &Symbol) -> bool {
        *self == word.0
    }
}

impl PartialEq<Symbol> for Path {
    fn eq(&self, word: &Symbol) -> bool {
        self.is_ident(word.0)
    }
}

impl PartialEq<Symbol> for &Path {
    fn eq(&self, word: &Symbol) -> bool {
        self.is_ident(word.0)
    }
}

impl fmt::Display for Symbol {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.0)
    }
}
