//! G12's merge: the equal nested types of one kind's version become one type.

use std::collections::BTreeMap;

use crate::model::types::{Ty, TypeGraph};

/// G12: the nested types of one kind's version (`nested`: their keys, each with the JSON name of
/// the field it is the type of) that are equal are one type: the same field name, the same
/// fields (names, docs, presence, and types compared the same way) or enum values. The one with
/// the shortest name (then the first in name order) is kept and every field that held another
/// holds it. A schema that repeats a subtree (Kyverno's `status.autogen.rules` repeats
/// `spec.rules`, 184 types) gets each type once. Type docs are not compared: the kept type keeps
/// its own. The types of two different fields (`owner` and `target`, each `{name}`) stay apart,
/// so no field holds a type named after another.
pub(super) fn merge_equal_types(graph: &mut TypeGraph, nested: &BTreeMap<String, String>) {
    let mut shapes = Shapes {
        graph,
        nested,
        ids: BTreeMap::new(),
        table: BTreeMap::new(),
    };
    for key in nested.keys() {
        shapes.id_of(key);
    }
    let ids = shapes.ids;
    // Each structure's kept type: the shortest name, then the first.
    let mut kept: BTreeMap<usize, &String> = BTreeMap::new();
    for (key, id) in &ids {
        kept.entry(*id)
            .and_modify(|k| {
                if (key.len(), key) < (k.len(), *k) {
                    *k = key;
                }
            })
            .or_insert(key);
    }
    let merged: BTreeMap<String, String> = ids
        .iter()
        .filter_map(|(key, id)| {
            let keep = kept.get(id)?;
            (*keep != key).then(|| (key.clone(), (*keep).clone()))
        })
        .collect();
    if merged.is_empty() {
        return;
    }
    graph.retain(|k, _| !merged.contains_key(k));
    for def in graph.values_mut() {
        for f in &mut def.fields {
            rename(&mut f.ty, &merged);
        }
    }
}

/// The structures of the nested types, each numbered: two types with one number are equal.
struct Shapes<'a> {
    graph: &'a TypeGraph,
    nested: &'a BTreeMap<String, String>,
    /// Each nested type's structure number.
    ids: BTreeMap<String, usize>,
    /// Each structure (as text) to its number.
    table: BTreeMap<String, usize>,
}

impl Shapes<'_> {
    /// The structure number of `key`, the types it holds compared by their own; `None` for a
    /// type that is not a nested type of this kind's version (a kind, a shared leaf).
    fn id_of(&mut self, key: &str) -> Option<usize> {
        if let Some(id) = self.ids.get(key) {
            return Some(*id);
        }
        let field = self.nested.get(key)?;
        let mut shape = self.graph.get(key).filter(|d| !d.resource)?.clone();
        shape.name.clear();
        shape.doc.clear();
        for f in &mut shape.fields {
            f.ty = self.by_id(&f.ty);
        }
        let next = self.table.len();
        let id = *self
            .table
            .entry(format!("{field}: {shape:?}"))
            .or_insert(next);
        self.ids.insert(key.to_owned(), id);
        Some(id)
    }

    /// `ty` with each nested type named by its structure number.
    fn by_id(&mut self, ty: &Ty) -> Ty {
        let mut id = |k: &String| {
            self.id_of(k)
                .map_or_else(|| k.clone(), |id| format!("#{id}"))
        };
        match ty {
            Ty::Struct(k) => Ty::Struct(id(k)),
            Ty::Enum(k) => Ty::Enum(id(k)),
            Ty::List(t) => Ty::List(Box::new(self.by_id(t))),
            Ty::Map(t) => Ty::Map(Box::new(self.by_id(t))),
            Ty::Option(t) => Ty::Option(Box::new(self.by_id(t))),
            Ty::Boxed(t) => Ty::Boxed(Box::new(self.by_id(t))),
            other => other.clone(),
        }
    }
}

/// Points every type `ty` holds that was merged at the type kept in its place.
fn rename(ty: &mut Ty, merged: &BTreeMap<String, String>) {
    match ty {
        Ty::Struct(k) | Ty::Enum(k) => {
            if let Some(to) = merged.get(k) {
                k.clone_from(to);
            }
        }
        Ty::List(t) | Ty::Map(t) | Ty::Option(t) | Ty::Boxed(t) => rename(t, merged),
        _ => {}
    }
}
