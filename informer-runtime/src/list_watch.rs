//! TODO(owner): list_watch
