//! TODO(owner): workqueue
