//! Why protobuf bytes could not be read.

/// Why protobuf bytes could not be read or deserialized.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The body does not start with `k8s\0`.
    #[error("the body does not start with the Kubernetes protobuf prefix k8s\\0")]
    NoMagic,
    /// A length or varint runs past the end.
    #[error("truncated protobuf message")]
    Truncated,
    /// A varint longer than 10 bytes.
    #[error("malformed varint")]
    BadVarint,
    /// Field number 0 or above 2^32.
    #[error("invalid protobuf field number")]
    BadTag,
    /// Groups (wire types 3 and 4) or garbage.
    #[error("unsupported protobuf wire type {0}")]
    WireType(u8),
    /// A field number a special-shaped message's reader does not take (its fields are fixed).
    /// A field number the schema does not have at all is passed over, never this error
    /// ([`crate::Skipped`]).
    #[error("field number {tag} of {message} is not in the schema")]
    UnknownField {
        /// The message's full name.
        message: &'static str,
        /// The field number.
        tag: u32,
    },
    /// A field whose wire type is not its schema type's.
    #[error("field {field} (number {tag}) of {message} has the wrong wire type")]
    WrongWireType {
        /// The message's full name.
        message: &'static str,
        /// The field's JSON name.
        field: &'static str,
        /// The field number.
        tag: u32,
    },
    /// A field met again after other fields: gogo-protobuf writes each field (every element of a
    /// list or map) in one run, and reading a second run would lose or merge values silently.
    #[error("field {field} (number {tag}) of {message} appears twice, apart")]
    FieldAgain {
        /// The message's full name.
        message: &'static str,
        /// The field's JSON name.
        field: &'static str,
        /// The field number.
        tag: u32,
    },
    /// No message for the envelope's apiVersion and kind.
    #[error("no protobuf message is known for apiVersion {api_version:?} kind {kind:?}")]
    UnknownKind {
        /// `typeMeta.apiVersion`.
        api_version: String,
        /// `typeMeta.kind`.
        kind: String,
    },
    /// An envelope with a `contentEncoding` (none is defined; kube-apiserver sends none).
    #[error("the protobuf envelope has contentEncoding {0:?}, which is not supported")]
    ContentEncoding(String),
    /// A watch frame longer than the caller's limit.
    #[error("a watch frame of {len} bytes is larger than the limit of {max} bytes")]
    FrameTooLarge {
        /// The frame's length prefix.
        len: u64,
        /// The limit.
        max: usize,
    },
    /// Messages nested deeper than [`crate::MAX_DEPTH`].
    #[error("protobuf message nested too deeply")]
    TooDeep,
    /// A value that breaks its type (bad UTF-8, non-JSON raw bytes, a time out of range).
    #[error("{0}")]
    Invalid(String),
    /// The error of the type being deserialized (a missing field, a wrong type, a raw JSON
    /// value's own error).
    #[error("{0}")]
    Custom(String),
}

impl Error {
    /// Bytes that must be text and are not: `what` names them, the error the first bad byte.
    pub(crate) fn not_utf8(what: impl std::fmt::Display, e: std::str::Utf8Error) -> Self {
        Error::Invalid(format!(
            "{what} is not valid UTF-8 (byte {})",
            e.valid_up_to()
        ))
    }
}

impl serde::de::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Error::Custom(msg.to_string())
    }
}
