//! An in-memory Kubernetes API server that speaks the real HTTP protocol.
