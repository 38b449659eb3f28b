//! TODO(owner): informer
