//! (filled in after the compute merge)
