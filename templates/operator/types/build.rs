//! Generates the typed informers of informer-gen.toml into $OUT_DIR (see the README).

fn main() -> Result<(), informer_gen::Errors> {
    // Reads informer-gen.toml and writes $OUT_DIR/informers.rs for the k8s-openapi version
    // this crate enables (its `v1_*` feature).
    informer_gen::Builder::from_build_script()?.write()?;
    Ok(())
}
