//! The engine's library: everything of `tlab-engine` but its I/O — the configuration,
//! the forwarder (routes packets through the link model, logs and captures them) with
//! the hosts and the clock behind the `forwarder::Hosts` trait, the packet log, the
//! statistics, the wire views. The real-time binary and the simulator (`tlab-sim`) drive
//! the same forwarder; tests and fuzz targets use it without starting a process.

mod background_file;
pub mod capture;
pub mod cli;
pub mod config;
pub mod control;
pub mod forwarder;
pub mod log;
pub mod spin;
pub mod stats;
