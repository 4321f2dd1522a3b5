//! The agent's library: the parts of the `agent` binary that tests and fuzz targets use
//! without starting a process.

pub mod wire;
