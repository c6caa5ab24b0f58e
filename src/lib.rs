//! namedtensor
