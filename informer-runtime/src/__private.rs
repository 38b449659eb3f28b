//! Re-exports for derived and generated code only; not covered by semver.
