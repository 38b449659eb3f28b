//! informer-gen: emits typed informer factories, accessors and listers for Kubernetes resources.
