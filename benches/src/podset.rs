//! The benchmark's Pods as a set: `n` Pods over some namespaces, from one of the three corpora
//! (all distinct, [`pods`](crate::pods); realistic owner groups, [`corpus`](crate::corpus); or
//! copies of upstream's exemplar Pod, [`exemplar`]).
//! Its own module so that neither corpus module needs the other's chooser.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use serde_json::Value;

use crate::corpus::{CORPUS_SEED, Corpus, Layout, exemplar};
use crate::pods::{mix, namespace_name, pod_json, suffix};

/// How the benchmark Pods are spread: `n` Pods over `namespaces` namespaces, from one corpus:
/// all distinct (round-robin over the namespaces, the worst case for sharing), realistic (owner
/// groups sharing their template, see [`corpus`](crate::corpus)) or exemplar (upstream's Pod,
/// round-robin over the namespaces).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodSet {
    /// Number of Pods.
    pub n: usize,
    /// Number of namespaces (`bench-000` …); scenario 5 queries them one by one.
    pub namespaces: usize,
    /// Which corpus.
    corpus: Corpus,
    /// The realistic corpus's groups; `None` for the others.
    layout: Option<Arc<Layout>>,
}

impl PodSet {
    /// `n` Pods of `corpus` over `namespaces` namespaces (at least one).
    pub fn new(n: usize, namespaces: usize, corpus: Corpus) -> Self {
        let namespaces = namespaces.max(1);
        let layout = match corpus {
            Corpus::Distinct | Corpus::Exemplar => None,
            Corpus::Realistic => Some(Arc::new(Layout::new(n, namespaces, CORPUS_SEED))),
        };
        PodSet {
            n,
            namespaces,
            corpus,
            layout,
        }
    }

    /// `n` all-distinct Pods over `namespaces` namespaces (the only corpus of the earliest runs).
    pub fn distinct(n: usize, namespaces: usize) -> Self {
        PodSet::new(n, namespaces, Corpus::Distinct)
    }

    /// Which corpus the Pods come from.
    pub fn corpus(&self) -> Corpus {
        self.corpus
    }

    /// The realistic corpus's owner groups (`None` for the others).
    pub fn layout(&self) -> Option<&Layout> {
        self.layout.as_deref()
    }

    /// How many Pods match [`SUBSET_SELECTOR`](crate::pods::SUBSET_SELECTOR).
    pub fn subset_len(&self) -> usize {
        (self.n / 10) * 2 + (self.n % 10).min(2)
    }

    /// The indices of the Pods that match [`SUBSET_SELECTOR`](crate::pods::SUBSET_SELECTOR)
    /// (every corpus labels Pod `i` with shard `i % 10`).
    pub fn subset(&self) -> impl Iterator<Item = usize> + use<> {
        (0..self.n).filter(|i| i % 10 < 2)
    }

    /// The namespace of Pod `i`.
    pub fn namespace_of(&self, i: usize) -> String {
        match &self.layout {
            None => namespace_name(i % self.namespaces.max(1)),
            Some(layout) => namespace_name(layout.group_of(i).namespace),
        }
    }

    /// The name of Pod `i`.
    pub fn name_of(&self, i: usize) -> String {
        match (&self.layout, self.corpus) {
            (Some(layout), _) => layout.name_of(i),
            (None, Corpus::Exemplar) => exemplar::name_of(i),
            (None, _) => {
                let h = mix(i as u64);
                format!("web-{:08x}-{}", (h >> 32) as u32, suffix(h))
            }
        }
    }

    /// The Pod with index `i`, as JSON (what the server stores and serves).
    pub fn pod_json(&self, i: usize) -> Value {
        match (&self.layout, self.corpus) {
            (Some(layout), _) => layout.pod_json(i),
            (None, Corpus::Exemplar) => exemplar::pod_json(i, self.namespaces),
            (None, _) => pod_json(&self.namespace_of(i), &self.name_of(i), i as u64, 0),
        }
    }

    /// The Pod with index `i`, typed.
    pub fn pod(&self, i: usize) -> Result<Pod, serde_json::Error> {
        serde_json::from_value(self.pod_json(i))
    }
}
