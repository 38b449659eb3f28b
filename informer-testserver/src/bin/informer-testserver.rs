//! Standalone informer-testserver for demos and benchmarks.

fn main() {}
