//! TODO(owner): indexer
