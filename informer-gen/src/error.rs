//! Typed generator errors; every variant names the input file and the item it is about.

use std::fmt;
use std::path::PathBuf;

/// One problem found in the generator's inputs or configuration.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An input file could not be read.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A Rust source file does not parse.
    #[error("{path}:{line}:{column}: cannot parse Rust source: {message}")]
    RustSyntax {
        /// The file.
        path: PathBuf,
        /// 1-based line of the error.
        line: usize,
        /// 0-based column of the error.
        column: usize,
        /// The parser's message.
        message: String,
    },
    /// A `#[derive(Informer)]` item in a Rust source lacks a key or has a malformed one.
    #[error("{path}: `{item}`: {reason}")]
    DeriveAttr {
        /// The file.
        path: PathBuf,
        /// The struct carrying the derive.
        item: String,
        /// What is wrong.
        reason: String,
    },
    /// A k8s-openapi type that a compact type is generated from cannot be read or mapped.
    #[error("{path}: `{item}`: {reason}")]
    SourceType {
        /// The k8s-openapi source file.
        path: PathBuf,
        /// The type, or `Type.field`.
        item: String,
        /// What is wrong and what to do.
        reason: String,
    },
    /// The configuration file is malformed or names something wrongly.
    #[error("{path}:{line}:{column}: {message}")]
    Config {
        /// The configuration file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// A CRD manifest is not valid YAML or misses a field.
    #[error("{path}: {field}: {reason}")]
    InvalidCrd {
        /// The manifest.
        path: PathBuf,
        /// The offending field, as a dotted path (`spec.names.kind`), or `<document>` for syntax errors.
        field: String,
        /// What is wrong.
        reason: String,
    },
    /// A CRD version's `openAPIV3Schema` has a node informer-gen cannot turn into a Rust type.
    #[error("{path}: CRD `{crd}` version `{version}`: {json_path}: {reason}")]
    CrdSchema {
        /// The manifest.
        path: PathBuf,
        /// The CRD's `metadata.name` (or `<plural>.<group>` when it has none).
        crd: String,
        /// The version whose schema it is.
        version: String,
        /// The JSON path of the offending schema node (`.spec.properties.size`).
        json_path: String,
        /// What is wrong and what to do.
        reason: String,
    },
    /// The same group/version/kind is defined by two inputs.
    #[error("kind `{kind}` in `{group}/{version}` is defined twice: in {first} and in {second}")]
    DuplicateKind {
        /// API group.
        group: String,
        /// API version.
        version: String,
        /// Kind.
        kind: String,
        /// The first definition's input.
        first: String,
        /// The second definition's input.
        second: String,
    },
    /// A group named in the configuration is not defined by any input.
    #[error("unknown group `{group}` (named by `{setting}`)")]
    UnknownGroup {
        /// The group.
        group: String,
        /// The builder setting that names it.
        setting: &'static str,
    },
    /// A kind named by `exclude_kind` (`exclude-kinds`) is defined by no input: built-in kinds
    /// count when `include_group`/`include_kind` selects some (so k8s-openapi is read), and so
    /// do the kinds of every CRD manifest and derive source.
    #[error(
        "`exclude-kinds` names `{group}/{version}/{kind}`, which no input defines (built-in kinds \
         are known when `include-groups` or `include-kinds` selects some; CRD manifests and derive \
         sources always)"
    )]
    ExcludedKindUnknown {
        /// API group.
        group: String,
        /// API version.
        version: String,
        /// Kind.
        kind: String,
    },
    /// A kind selected by `include_kind` does not exist in the built-in types.
    #[error("unknown built-in kind `{kind}` in `{group}/{version}`")]
    UnknownKind {
        /// API group.
        group: String,
        /// API version.
        version: String,
        /// Kind.
        kind: String,
    },
    /// Two groups get the same accessor name (G1); configure one with `group_accessor`.
    #[error(
        "groups {groups:?} all map to the accessor `{accessor}()`; set `group_accessor` for one of them"
    )]
    GroupAccessorCollision {
        /// The accessor name.
        accessor: String,
        /// The colliding groups.
        groups: Vec<String>,
    },
    /// Two kinds of one group/version get the same accessor (G2); configure one with `kind_accessor`.
    #[error(
        "kinds {kinds:?} in `{group}/{version}` all map to the accessor `{accessor}()`; set `kind_accessor` for one of them"
    )]
    KindAccessorCollision {
        /// API group.
        group: String,
        /// API version.
        version: String,
        /// The accessor name.
        accessor: String,
        /// The colliding kinds.
        kinds: Vec<String>,
    },
    /// A configured name is not a valid Rust identifier or Kubernetes name.
    #[error("invalid {what} `{value}`: {reason}")]
    InvalidName {
        /// What the name is for (`group accessor`, `module path`, …).
        what: &'static str,
        /// The name.
        value: String,
        /// Why it is rejected.
        reason: String,
    },
    /// The k8s-openapi sources could not be located.
    #[error("cannot locate k8s-openapi sources: {reason}")]
    K8sOpenApi {
        /// Why.
        reason: String,
    },
    /// The environment lacks what the generator was asked to use (`OUT_DIR` outside a build script).
    #[error("`{variable}` is not set: {reason}")]
    Environment {
        /// The environment variable.
        variable: &'static str,
        /// What needed it and what to do instead.
        reason: String,
    },
    /// A Kubernetes version was set explicitly and differs from the one k8s-openapi is built for.
    #[error(
        "Kubernetes {requested} was asked for by {requested_by}, but k8s-openapi is built for \
         Kubernetes {enabled} ({enabled_by}); remove the explicit version or make them equal"
    )]
    K8sVersionMismatch {
        /// The explicit version (`1.36`).
        requested: String,
        /// Where it was set (`k8s-version` in informer-gen.toml, `Builder::k8s_version`, …).
        requested_by: String,
        /// The version k8s-openapi is compiled for (`1.37`).
        enabled: String,
        /// What enabled it (the `v1_37` feature, `K8S_OPENAPI_ENABLED_VERSION`).
        enabled_by: String,
    },
}

impl Error {
    /// A Rust source at `path` that syn cannot parse, at the error's position.
    pub(crate) fn rust_syntax(path: impl Into<PathBuf>, e: &syn::Error) -> Self {
        Error::RustSyntax {
            path: path.into(),
            line: e.span().start().line,
            column: e.span().start().column,
            message: e.to_string(),
        }
    }
}

/// Every problem found in one run, in input order; the generator reports them all together.
///
/// Its `Debug` is its `Display`, so that a build script's `fn main() -> Result<(), Errors>`
/// prints the list readably when it fails.
pub struct Errors(pub Vec<Error>);

impl fmt::Debug for Errors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Errors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.len();
        write!(
            f,
            "informer-gen found {n} problem{}",
            if n == 1 { "" } else { "s" }
        )?;
        for e in &self.0 {
            write!(f, "\n  - {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Errors {}

impl From<Error> for Errors {
    fn from(e: Error) -> Self {
        Errors(vec![e])
    }
}
