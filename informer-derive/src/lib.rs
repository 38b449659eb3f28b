//! `#[derive(Informer)]`: typed informers and listers for kube CRD structs.
