//! Estimated compact sizes, the input of the boxing rule (an optional struct above [`BOX_ABOVE`]
//! estimated bytes is boxed).

use std::collections::BTreeMap;

use super::share::Sharing;
use crate::model::types::{Ty, TypeGraph};

/// Optional structs estimated larger than this are boxed.
pub(crate) const BOX_ABOVE: usize = 8;

/// Estimated compact sizes in bytes (the boxing rule's input; not a layout guarantee, P7 tests
/// assert the real `size_of`).
pub(super) struct Sizes<'s> {
    structs: BTreeMap<String, usize>,
    /// Shared structs are one pointer wherever they appear, and never boxed.
    sharing: &'s Sharing,
}

impl<'s> Sizes<'s> {
    pub(super) fn new(graph: &TypeGraph, sharing: &'s Sharing) -> Self {
        let mut sizes = Sizes {
            structs: BTreeMap::new(),
            sharing,
        };
        for key in graph.keys() {
            sizes.of_struct(key, graph, 0);
        }
        sizes
    }

    pub(super) fn of_struct(&mut self, key: &str, graph: &TypeGraph, depth: usize) -> usize {
        if let Some(s) = self.structs.get(key) {
            return *s;
        }
        // A struct can only contain itself through a `Box`, `Vec` or map, which stop the walk;
        // the depth guard only protects against a malformed graph.
        let Some(def) = graph.get(key).filter(|_| depth < 64) else {
            return 8;
        };
        let sum: usize = def
            .fields
            .iter()
            .map(|f| self.of(&f.ty, graph, depth + 1))
            .sum::<usize>()
            + if def.unknown_fields.is_some() { 16 } else { 0 };
        let size = sum.div_ceil(8) * 8;
        self.structs.insert(key.to_owned(), size);
        size
    }

    pub(super) fn of(&mut self, ty: &Ty, graph: &TypeGraph, depth: usize) -> usize {
        if self.sharing.shared(ty) {
            return 8;
        }
        if let Ty::Option(t) = ty
            && self.sharing.shared(t)
        {
            return 8;
        }
        match ty {
            Ty::Bool => 1,
            Ty::I32 => 4,
            Ty::I64 | Ty::F64 | Ty::Boxed(_) | Ty::Str | Ty::Quantity | Ty::Json(_) => 8,
            Ty::Number | Ty::List(_) | Ty::Map(_) | Ty::Enum(_) => 16,
            Ty::Leaf(k) if k.ends_with("Time") => 16,
            Ty::Leaf(_) => 32,
            Ty::Struct(k) => self.of_struct(k, graph, depth),
            Ty::Option(t) => match &**t {
                Ty::Bool => 1,
                Ty::I32 => 8,
                Ty::I64 | Ty::F64 | Ty::Number | Ty::Enum(_) => 16,
                Ty::Struct(k) => {
                    let inner = self.of_struct(k, graph, depth);
                    if inner > BOX_ABOVE { 8 } else { inner + 8 }
                }
                Ty::Leaf(_) => self.of(t, graph, depth) + 8,
                other => self.of(other, graph, depth),
            },
        }
    }

    pub(super) fn boxed(&self, t: &Ty) -> bool {
        !self.sharing.shared(t)
            && matches!(t, Ty::Struct(k) if self.structs.get(k).is_some_and(|s| *s > BOX_ABOVE))
    }
}
