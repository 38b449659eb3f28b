//! trybuild UI tests: every mistake in `#[derive(Informer)]` is a spanned compile error (one file per mistake),
//! plus pass cases that compile the derive's output against informer-runtime.
//!
//! Bless changed `.stderr` files with `TRYBUILD=overwrite cargo test -p informer-derive --test compiletest`.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/pass/*.rs");
}
