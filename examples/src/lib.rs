//! Example operators built on informer-rs generated code.
