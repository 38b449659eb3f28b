//! Named, commented corrections for upstream quirks in the built-in resource list (G6).

/// Built-in kinds that implement `ListableResource` but cannot be watched, so an informer for them
/// would fail forever. `(group, version, kind)`.
pub(crate) const UNWATCHABLE: &[(&str, &str, &str)] = &[
    // componentstatuses supports list/get only (deprecated since 1.19); client-go generates no informer.
    ("", "v1", "ComponentStatus"),
];
