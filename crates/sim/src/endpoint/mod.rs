//! The simulated hosts' applications, sans-IO: each answers when it next wants to run,
//! takes the datagrams addressed to it, and hands out the datagrams it sends. They write
//! their summaries in the agent's formats (docs/agent.md), so the metrics stage reads a
//! simulated run like an emulated one.

pub mod probe;
pub mod quic;
pub mod udp;

use std::net::SocketAddrV4;
use std::path::Path;

use linkem::Nanos;
use serde::Serialize;

use crate::datagram::Datagram;

pub trait Endpoint {
    /// The address its datagrams come from and are delivered to.
    fn address(&self) -> SocketAddrV4;
    /// A datagram for it arrived at `now`.
    fn receive(&mut self, now: Nanos, datagram: Datagram);
    /// Runs what is due at `now` and appends the datagrams it sends now to `out`.
    fn poll(&mut self, now: Nanos, out: &mut Vec<Datagram>);
    /// When it next has something to do, if ever (it is also polled after every receive).
    fn next_wakeup(&self) -> Option<Nanos>;
    /// A flow's client that has done its job (the run may end when all have).
    fn finished(&self) -> bool;
    /// Writes its summary into `raw`; `end` is when the run ended.
    fn write_summary(&self, raw: &Path, end: Nanos) -> std::io::Result<()>;
}

/// The agent's summary file: `{"subcommand", "agent_version", "simulated": true,
/// "start_ns", "end_ns", "stopped_by", "results"}`.
pub fn write_summary<R: Serialize>(
    path: &Path,
    subcommand: &str,
    start_ns: Nanos,
    end_ns: Nanos,
    stopped_by: &str,
    results: &R,
) -> std::io::Result<()> {
    let doc = serde_json::json!({
        "subcommand": subcommand,
        "agent_version": env!("CARGO_PKG_VERSION"),
        "simulated": true,
        "start_ns": start_ns,
        "end_ns": end_ns,
        "stopped_by": stopped_by,
        "results": results,
    });
    std::fs::write(path, serde_json::to_vec_pretty(&doc)?)
}
