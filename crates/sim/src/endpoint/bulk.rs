//! The agent's bulk transfer as both simulated TCP stacks run it (smoltcp's, `super::tcp`,
//! and the lab's own, `super::transportlab_tcp`): the request the client sends and the
//! server reads (`agent_proto::wire::request`), the series' 10 ms sampling grid, and the
//! summaries under the agent's tcp-client / tcp-server names. What differs between the two
//! is the stack under the application, not the application.

use std::path::Path;

use linkem::Nanos;
use serde::Serialize;

use agent_proto::transfer::{bps, secs};
use agent_proto::wire::request::{Mode, Request, Transport::Tcp as TCP};

use super::{write_summary, Delivered};

/// The agent's TCP request, the connection's first bytes.
pub const REQUEST_LEN: usize = TCP.request_len();

/// The request the client sends once connected, as the agent's client asks: the bytes
/// (`limit`, `u64::MAX` for none), or else the time left until `stop`.
pub fn client_request(upload: bool, limit: u64, now: Nanos, stop: Nanos) -> Vec<u8> {
    let bytes = (limit != u64::MAX).then_some(limit);
    let request = Request {
        bytes: bytes.unwrap_or(0),
        duration_ns: if bytes.is_none() { stop.saturating_sub(now) } else { 0 },
        ..Request::new(if upload { Mode::Upload } else { Mode::Download })
    };
    request.encode(TCP).expect("a TCP bulk request")
}

/// What the server makes of the request it read: whether the client sends (an upload)
/// and the byte count (`u64::MAX` for none), or the error its summary reports.
pub fn serve_request(request: &[u8]) -> Result<(bool, u64), String> {
    match Request::decode(TCP, request).and_then(|r| r.validate().map(|()| r)) {
        Ok(r) if matches!(r.mode, Mode::Upload | Mode::Download) => {
            Ok((r.client_sends(), if r.bytes == 0 { u64::MAX } else { r.bytes }))
        }
        Ok(r) => Err(format!("{} mode is not simulated", r.mode.name())),
        Err(e) => Err(format!("bad request: {e}")),
    }
}

fn mode(upload: bool) -> &'static str {
    if upload {
        "upload"
    } else {
        "download"
    }
}

fn sender(upload: bool) -> &'static str {
    if upload {
        "client"
    } else {
        "server"
    }
}

/// One end's account of the transfer, as its summary reports it.
#[derive(Default)]
pub struct Progress {
    /// The client sends.
    pub upload: bool,
    /// Payload this end wrote and read (the request excluded).
    pub sent: u64,
    pub received: u64,
    pub complete: bool,
    pub done_ns: Option<Nanos>,
    /// The server could not serve the request.
    pub error: Option<String>,
}

/// Who wrote a summary: the flow, its congestion control, the stack that played TCP, and
/// when the end started.
pub struct SummaryOf<'a> {
    pub name: &'a str,
    pub cc: &'a str,
    pub stack: &'static str,
    pub start: Nanos,
}

/// The agent's tcp-client `results`, the fields the simulator has, and the stack that
/// stood in for the kernel's.
#[derive(Serialize)]
struct ClientResults<'a> {
    mode: &'static str,
    sender: &'static str,
    cc: &'a str,
    stack: &'static str,
    /// Payload the receiving application read (the server's, in an upload).
    bytes: u64,
    /// Payload this end wrote and read.
    bytes_sent: u64,
    bytes_received: u64,
    complete: bool,
    completion_s: Option<f64>,
    goodput_bps: Option<f64>,
    /// Segments this end sent again, where the stack says.
    retransmits: Option<u64>,
}

/// A connection in the agent's tcp-server `results.connections`, the fields the simulator
/// has.
#[derive(Serialize)]
struct ServerConnection {
    mode: &'static str,
    sender: &'static str,
    bytes: u64,
    bytes_sent: u64,
    bytes_received: u64,
    complete: bool,
    error: Option<String>,
    retransmits: Option<u64>,
}

#[derive(Serialize)]
struct ServerResults<'a> {
    cc: &'a str,
    stack: &'static str,
    connections: Vec<ServerConnection>,
}

impl<'a> SummaryOf<'a> {
    pub fn new(name: &'a str, cc: &'a str, stack: &'static str, start: Nanos) -> SummaryOf<'a> {
        SummaryOf { name, cc, stack, start }
    }

    /// `<name>-client.json`: `delivered` is what the receiving application read,
    /// `connected_ns` when the connection was established (goodput's start).
    pub fn write_client(
        &self,
        raw: &Path,
        end: Nanos,
        p: &Progress,
        delivered: Delivered,
        connected_ns: Option<Nanos>,
        retransmits: Option<u64>,
    ) -> std::io::Result<()> {
        let span = delivered.last_ns.zip(connected_ns).map(|(l, c)| l.saturating_sub(c));
        let results = ClientResults {
            mode: mode(p.upload),
            sender: sender(p.upload),
            cc: self.cc,
            stack: self.stack,
            bytes: delivered.bytes,
            bytes_sent: p.sent,
            bytes_received: p.received,
            complete: p.complete,
            completion_s: p.done_ns.map(|d| secs(d - self.start)),
            goodput_bps: span.and_then(|s| bps(delivered.bytes, s)),
            retransmits,
        };
        let stopped_by = if p.complete { "bytes" } else { "duration" };
        let path = raw.join(format!("{}-client.json", self.name));
        write_summary(&path, "tcp-client", self.start, end, stopped_by, &results)
    }

    /// `<name>-server.json`, with its one connection once one was `accepted`.
    pub fn write_server(
        &self,
        raw: &Path,
        end: Nanos,
        accepted: bool,
        p: &Progress,
        retransmits: Option<u64>,
    ) -> std::io::Result<()> {
        let connection = ServerConnection {
            mode: mode(p.upload),
            sender: sender(p.upload),
            bytes: if p.upload { p.received } else { p.sent },
            bytes_sent: p.sent,
            bytes_received: p.received,
            complete: p.complete,
            error: p.error.clone(),
            retransmits,
        };
        let results = ServerResults {
            cc: self.cc,
            stack: self.stack,
            connections: if accepted { vec![connection] } else { vec![] },
        };
        let path = raw.join(format!("{}-server.json", self.name));
        write_summary(&path, "tcp-server", self.start, end, "once", &results)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_reads_what_the_client_asks() {
        let up = client_request(true, 5000, 0, 10);
        assert_eq!(up.len(), REQUEST_LEN);
        assert_eq!(serve_request(&up), Ok((true, 5000)));
        // No byte count: the time left, and the server sends until the client stops.
        assert_eq!(
            serve_request(&client_request(false, u64::MAX, 3, 10)),
            Ok((false, u64::MAX))
        );
        assert!(serve_request(&[0u8; REQUEST_LEN])
            .unwrap_err()
            .starts_with("bad request"));
    }
}
