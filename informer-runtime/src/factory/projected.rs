//! [`Projected`]: the typed handle generated accessors return for a projection of their kind.

use std::fmt;
use std::sync::Arc;

use super::{Object, SharedInformerFactory};
use crate::informer::SharedIndexInformer;
use crate::lister::Lister;

/// The shared informer and lister of projection `P` (P4), as generated accessors hand it out:
/// `factory.core().v1().pods().projected::<PodView>().lister().namespaced("ns").get("x")`.
///
/// The informer lists and watches `P::Source`'s endpoint and caches `P`; it is shared like every
/// typed informer (F1) and is a different informer from the source kind's own.
pub struct Projected<P> {
    factory: SharedInformerFactory,
    _projection: std::marker::PhantomData<fn() -> P>,
}

impl<P: Object> Projected<P> {
    /// A handle on `factory`; creates nothing until [`informer`](Self::informer) or
    /// [`lister`](Self::lister) is called.
    pub fn new(factory: &SharedInformerFactory) -> Self {
        Projected {
            factory: factory.clone(),
            _projection: std::marker::PhantomData,
        }
    }

    /// The factory's shared informer for `P`, created on first use (with `P`'s declared indexes).
    pub fn informer(&self) -> Arc<SharedIndexInformer<P>> {
        self.factory.informer_for::<P>()
    }

    /// A typed lister over the projection's cache.
    pub fn lister(&self) -> Lister<P> {
        Lister::from_indexer(self.informer().indexer())
    }
}

impl<P> Clone for Projected<P> {
    fn clone(&self) -> Self {
        Projected {
            factory: self.factory.clone(),
            _projection: std::marker::PhantomData,
        }
    }
}

impl<P> fmt::Debug for Projected<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Projected")
            .field("projection", &std::any::type_name::<P>())
            .finish()
    }
}
