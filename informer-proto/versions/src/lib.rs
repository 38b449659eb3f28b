//! Tests of informer-proto's schema table under each supported Kubernetes version (decision
//! record 22); the tests are in `tests/`. A crate of its own because informer-proto's tests
//! enable k8s-openapi's `v1_37` and so cannot be built for another version.
