//! The engine's library: the parts of `tlab-engine` that tests and fuzz targets use
//! without starting a process.

pub mod config;
pub mod wire;
