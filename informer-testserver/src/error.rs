//! The error type of the [`TestServer`](crate::TestServer) handle.

use std::path::PathBuf;

use crate::status::ApiError;

/// Errors of starting the server and of the handle's seeding helpers.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Binding the listening socket failed.
    #[error("binding the test server: {0}")]
    Bind(#[source] std::io::Error),
    /// Building the `kube::Client` failed.
    #[error("building the kube client: {0}")]
    Client(#[source] kube::Error),
    /// The server refused the operation; carries the Status it would answer over HTTP.
    #[error("the server answered {0}")]
    Api(#[from] ApiError),
    /// An object could not be converted to or from JSON.
    #[error("converting an object: {0}")]
    Json(#[from] serde_json::Error),
    /// An object lacks `apiVersion` or `kind`.
    #[error("the object has no apiVersion or kind")]
    MissingTypeMeta,
    /// Reading a seed file or writing a kubeconfig failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A [`TestServer::wait_until`](crate::TestServer::wait_until) condition did not hold in time.
    #[error("timed out after {after:?} waiting until {what}")]
    Timeout {
        /// What was awaited (`the condition on configmaps default/w1`).
        what: String,
        /// The timeout.
        after: std::time::Duration,
    },
    /// A seed file is not valid YAML.
    #[error("parsing YAML in {path}: {message}")]
    Yaml {
        /// The file (empty for in-memory text).
        path: PathBuf,
        /// The parser's message.
        message: String,
    },
}

impl Error {
    /// The HTTP status code for [`Error::Api`] errors.
    pub fn code(&self) -> Option<u16> {
        match self {
            Error::Api(e) => Some(e.code),
            _ => None,
        }
    }
}
