//! Readers that turn each kind of input into [`crate::model::Kind`] values, collecting every error.

pub mod crd;
pub mod fixups;
pub mod k8s_openapi;
pub mod rust_src;

use std::path::Path;

use crate::error::Error;

/// Reads a file, mapping failures to [`Error::Io`].
pub(crate) fn read(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })
}
