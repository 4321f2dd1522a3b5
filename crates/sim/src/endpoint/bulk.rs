//! The agent's bulk transfer as both simulated TCP stacks run it (smoltcp's, `super::tcp`,
//! and the lab's own, `super::transportlab_tcp`): the flow's setup, the request the client
//! sends and the server reads (`agent_proto::wire::request`), each end's account of the
//! transfer (`Bulk`), the client's life (start, connection, request, stop), and the
//! summaries under the agent's tcp-client / tcp-server names. What differs between the two
//! is the stack under the application, not the application.

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use linkem::Nanos;
use serde::Serialize;

use agent_proto::summary::{ServedTransfer, TcpClientResults};
use agent_proto::transfer::{goodput_bps, secs};
use agent_proto::wire::request::{Mode, Request, Transport::Tcp as TCP};

use super::{write_summary, Delivered};

/// What both ends of a TCP flow are made from, whichever stack plays TCP.
pub struct TcpSetup {
    pub name: String,
    pub cc: String,
    pub seed: u64,
    /// The largest segment payload (like TCP_MAXSEG); default 1460 (a 1500-byte MTU).
    pub mss: Option<u16>,
    /// The receiving end's `tcp_rmem` (min, default, max) and the sending end's
    /// `tcp_wmem` maximum: the simulator's own TCP takes its windows from them; smoltcp
    /// has fixed rings (a scenario's `tcp_rmem` is refused for it before it runs).
    pub rmem: Option<[u64; 3]>,
    pub sndbuf: Option<u64>,
    pub delivered: Rc<Cell<Delivered>>,
    /// The run's raw directory: the ends' series go to `<name>-client.arrow` and
    /// `<name>-server.arrow` there.
    pub raw: PathBuf,
}

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

fn mode(upload: bool) -> Mode {
    if upload {
        Mode::Upload
    } else {
        Mode::Download
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

/// One end's application: its account of the transfer, the byte count it sends or reads
/// (`u64::MAX` for none), and the request as far as it has been read (the server's).
pub struct Bulk {
    pub p: Progress,
    pub limit: u64,
    pub request: Vec<u8>,
}

impl Bulk {
    /// Before the request is read: `upload` and `limit` as the end assumes them.
    pub fn new(upload: bool, limit: u64) -> Bulk {
        Bulk {
            p: Progress {
                upload,
                ..Progress::default()
            },
            limit,
            request: Vec::new(),
        }
    }

    /// The whole request has been read.
    pub fn request_read(&self) -> bool {
        self.request.len() == REQUEST_LEN
    }

    /// The request's bytes not read yet.
    pub fn request_missing(&self) -> usize {
        REQUEST_LEN - self.request.len()
    }

    /// Takes the request's bytes from the start of `data` (the stream's next bytes) and
    /// serves the request once it is whole: the direction and byte count it asks for, or
    /// the error the summary reports. Returns how many bytes it took.
    pub fn take_request(&mut self, data: &[u8]) -> usize {
        if self.request_read() {
            return 0;
        }
        let n = self.request_missing().min(data.len());
        self.request.extend_from_slice(&data[..n]);
        if self.request_read() {
            match serve_request(&self.request) {
                Ok((upload, limit)) => (self.p.upload, self.limit) = (upload, limit),
                Err(e) => self.p.error = Some(e),
            }
        }
        n
    }

    /// The series' `bytes` at this end: the payload it sent, if it is the sender, else
    /// what it read.
    pub fn series_bytes(&self, client: bool) -> u64 {
        if self.p.upload == client {
            self.p.sent
        } else {
            self.p.received
        }
    }

    /// The transfer is complete, `at` that time (once: a later call changes nothing).
    pub fn complete_at(&mut self, at: Option<Nanos>) {
        if !self.p.complete {
            self.p.complete = true;
            self.p.done_ns = at;
        }
    }
}

/// The client's life: when it starts and stops, whether it has started (its SYN is
/// out), when its connection was established (goodput's start), whether its request is
/// written, and whether it has closed.
pub struct ClientLife {
    pub start: Nanos,
    pub stop: Nanos,
    pub started: bool,
    pub connected_ns: Option<Nanos>,
    pub requested: bool,
    pub closed: bool,
}

impl ClientLife {
    pub fn new(start: Nanos, stop: Nanos) -> ClientLife {
        ClientLife {
            start,
            stop,
            started: false,
            connected_ns: None,
            requested: false,
            closed: false,
        }
    }

    /// The stack is established at `now` (the first time counts).
    pub fn established(&mut self, now: Nanos) {
        self.connected_ns.get_or_insert(now);
    }

    /// When the client must be polled next: at its start, then at the stack's next
    /// timeout but no later than its stop; never once closed.
    pub fn next_wakeup(&self, timeout: Option<Nanos>) -> Option<Nanos> {
        if self.closed {
            None
        } else if !self.started {
            Some(self.start)
        } else {
            Some(timeout.unwrap_or(self.stop).min(self.stop))
        }
    }
}

/// Whose summaries an end writes: the flow, its congestion control, the stack that
/// played TCP, when the end started, and what the receiving application read.
pub struct SummaryOf {
    name: String,
    cc: String,
    stack: &'static str,
    start: Nanos,
    pub delivered: Rc<Cell<Delivered>>,
}

/// The agent's tcp-client `results`, the fields the simulator has, and the stack that
/// stood in for the kernel's.
#[derive(Serialize)]
struct ClientResults<'a> {
    #[serde(flatten)]
    common: TcpClientResults<'a>,
    stack: &'static str,
}

/// A connection in the agent's tcp-server `results.connections`, the fields the simulator has.
#[derive(Serialize)]
struct ServerConnection {
    #[serde(flatten)]
    transfer: ServedTransfer,
    retransmits: Option<u64>,
}

#[derive(Serialize)]
struct ServerResults<'a> {
    cc: &'a str,
    stack: &'static str,
    connections: Vec<ServerConnection>,
}

impl SummaryOf {
    pub fn new(setup: &TcpSetup, stack: &'static str, start: Nanos) -> SummaryOf {
        SummaryOf {
            name: setup.name.clone(),
            cc: setup.cc.clone(),
            stack,
            start,
            delivered: setup.delivered.clone(),
        }
    }

    /// `<name>-client.json`.
    pub fn write_client(&self, raw: &Path, end: Nanos, p: &Progress, retransmits: Option<u64>) -> std::io::Result<()> {
        let delivered = self.delivered.get();
        let results = ClientResults {
            common: TcpClientResults {
                mode: mode(p.upload).name(),
                sender: sender(p.upload),
                cc: Some(&self.cc),
                complete: p.complete,
                bytes: delivered.bytes,
                bytes_sent: p.sent,
                bytes_received: p.received,
                completion_s: p.done_ns.map(|d| secs(d - self.start)),
                goodput_bps: delivered
                    .last_ns
                    .and_then(|l| goodput_bps(delivered.bytes, self.start, l)),
                retransmits,
            },
            stack: self.stack,
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
            // `stopped` stays false: no simulated end is signalled before its end.
            transfer: ServedTransfer {
                complete: p.complete,
                error: p.error.clone(),
                bytes: if p.upload { p.received } else { p.sent },
                bytes_sent: p.sent,
                bytes_received: p.received,
                ..ServedTransfer::requested(Some(mode(p.upload)), !p.upload)
            },
            retransmits,
        };
        let results = ServerResults {
            cc: &self.cc,
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

    #[test]
    fn a_request_read_in_pieces_is_served_once_whole() {
        let request = client_request(false, 7000, 0, 10);
        let mut b = Bulk::new(true, u64::MAX);
        // The request's first 10 bytes, then its rest with the data behind it.
        assert_eq!(b.take_request(&request[..10]), 10);
        assert!(!b.request_read() && b.p.upload && b.limit == u64::MAX);
        let mut rest = request[10..].to_vec();
        rest.extend_from_slice(&[0; 100]);
        assert_eq!(b.take_request(&rest), REQUEST_LEN - 10);
        assert!(b.request_read() && !b.p.upload && b.limit == 7000 && b.p.error.is_none());
        assert_eq!(b.take_request(&[0; 100]), 0);
        (b.p.sent, b.p.received) = (5, 9);
        assert_eq!((b.series_bytes(false), b.series_bytes(true)), (5, 9));
        b.complete_at(Some(3));
        b.complete_at(Some(4));
        assert_eq!((b.p.complete, b.p.done_ns), (true, Some(3)));
        let mut bad = Bulk::new(false, 0);
        bad.take_request(&[0; REQUEST_LEN]);
        assert!(bad.p.error.unwrap().starts_with("bad request"));
    }

    #[test]
    fn a_client_wakes_at_its_start_then_no_later_than_its_stop() {
        let mut life = ClientLife::new(5, 100);
        assert_eq!(life.next_wakeup(Some(1)), Some(5));
        life.started = true;
        assert_eq!(life.next_wakeup(Some(40)), Some(40));
        assert_eq!(life.next_wakeup(Some(400)), Some(100));
        assert_eq!(life.next_wakeup(None), Some(100));
        life.established(7);
        life.established(9);
        assert_eq!(life.connected_ns, Some(7));
        life.closed = true;
        assert_eq!(life.next_wakeup(Some(40)), None);
    }
}
