//! Helpers shared by the integration tests.

#[macro_use]
pub mod devices;
