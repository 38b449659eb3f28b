//! TODO(owner): lister
