//! TODO(owner): reflector
