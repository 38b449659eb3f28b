//! TODO(owner): delta_fifo
