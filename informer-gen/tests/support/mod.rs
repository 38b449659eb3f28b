//! Shared by the tests that generate types from one CRD manifest and read them back.

use informer_gen::Builder;

/// The files `crd-types` generates from `manifest` (written as `file` in a temporary directory
/// of `test`'s own) into module `module`, each parsed by syn.
pub(crate) fn crd_types_parsed(
    test: &str,
    file: &str,
    manifest: &str,
    module: &str,
) -> Vec<syn::File> {
    let dir = std::env::temp_dir().join(format!("informer-gen-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join(file), manifest).expect("write the CRD");
    let generated = Builder::new()
        .root(&dir)
        .crd_types(file, module)
        .generate()
        .expect("generates");
    generated
        .files()
        .iter()
        .map(|(path, text)| {
            syn::parse_file(text).unwrap_or_else(|e| panic!("{path:?} does not parse: {e}\n{text}"))
        })
        .collect()
}
