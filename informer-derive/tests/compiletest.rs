//! trybuild UI tests: every mistake in `#[derive(Informer)]` is a spanned compile error (one file per mistake).
//!
//! Bless changed `.stderr` files with `TRYBUILD=overwrite cargo test -p informer-derive --test compiletest`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
