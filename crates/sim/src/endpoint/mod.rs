//! The simulated hosts' applications, sans-IO: each answers when it next wants to run,
//! takes the datagrams addressed to it, and hands out the datagrams it sends. They write
//! their summaries in the agent's formats (docs/agent.md), so the metrics stage reads a
//! simulated run like an emulated one.

pub mod pacer;
pub mod probe;
pub mod quic;
pub mod tcp;
pub mod transportlab_tcp;
pub mod udp;

use std::net::SocketAddrV4;
use std::path::Path;

use agent::series::SeriesWriter;
use arrow_array::ArrayRef;

use linkem::Nanos;
use serde::Serialize;

use crate::datagram::Datagram;

/// A UDP endpoint's address as `Endpoint::address` gives it.
pub fn udp(addr: SocketAddrV4) -> (u8, SocketAddrV4) {
    (engine::wire::ipv4::protocol::UDP, addr)
}

/// The IPv4 packets carrying `datagrams` (IP identification 0: DF is set, as Linux sends
/// UDP with path MTU discovery on).
pub fn packets(datagrams: impl IntoIterator<Item = Datagram>, out: &mut Vec<Vec<u8>>) {
    out.extend(datagrams.into_iter().map(|d| d.to_packet(0)));
}

pub trait Endpoint {
    /// The transport protocol (IP protocol number) and address its packets come from and
    /// are delivered to.
    fn address(&self) -> (u8, SocketAddrV4);
    /// An IPv4 packet for it arrived at `now`.
    fn receive(&mut self, now: Nanos, packet: &[u8]);
    /// Runs what is due at `now` and appends the IPv4 packets it sends now to `out`.
    fn poll(&mut self, now: Nanos, out: &mut Vec<Vec<u8>>);
    /// When it next has something to do, if ever (it is also polled after every receive).
    fn next_wakeup(&self) -> Option<Nanos>;
    /// A flow's client that has done its job (the run may end when all have).
    fn finished(&self) -> bool;
    /// Writes its summary into `raw` and ends its series file; `end` is when the run ended.
    fn write_summary(&mut self, raw: &Path, end: Nanos) -> std::io::Result<()>;
}

/// Rows a series holds before it writes them to its file as one record batch: 10 s of a
/// 10 ms series, so an end's memory does not grow with the run's duration.
pub const SERIES_BATCH: usize = 1000;

/// One row of an endpoint's time series, as its Arrow columns.
pub trait Row: Sized {
    /// The columns of `schema` (the file's, fixed when the series is made: a column that
    /// may hold a null is nullable) for `rows`, in order.
    fn columns(rows: &[Self], schema: &arrow_schema::Schema) -> Vec<ArrayRef>;
}

/// The two columns every series of the agent's format starts with: the connection (0: a
/// simulated flow has one) and the sample's time.
pub fn series_key_fields() -> [arrow_schema::Field; 2] {
    use arrow_schema::{DataType, Field};
    [
        Field::new("conn", DataType::UInt32, false),
        Field::new("t_ns", DataType::Int64, false),
    ]
}

/// `series_key_fields`' columns for rows sampled at `t_ns`.
pub fn series_key_columns(t_ns: impl ExactSizeIterator<Item = Nanos>) -> [ArrayRef; 2] {
    use arrow_array::{Int64Array, UInt32Array};
    let n = t_ns.len();
    [
        std::sync::Arc::new(UInt32Array::from_iter_values(std::iter::repeat_n(0, n))),
        std::sync::Arc::new(Int64Array::from_iter_values(t_ns.map(|t| t as i64))),
    ]
}

/// An endpoint's time series (the agent's series format, `docs/agent.md`), written to its
/// Arrow IPC file as the run goes, `SERIES_BATCH` rows per record batch; the file is
/// created at the first batch and ended by `finish` (the run's end). A write error is
/// kept and reported by `finish` (the run goes on, as it does not depend on the series).
pub struct Series<R: Row> {
    rows: Vec<R>,
    writer: Option<SeriesWriter>,
    error: Option<String>,
}

impl<R: Row> Series<R> {
    pub fn new(path: &Path, schema: arrow_schema::Schema) -> Series<R> {
        Series {
            rows: Vec::new(),
            writer: Some(SeriesWriter::new(path, std::sync::Arc::new(schema))),
            error: None,
        }
    }

    pub fn push(&mut self, row: R) {
        self.rows.push(row);
        if self.rows.len() >= SERIES_BATCH {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if let (Some(w), None) = (&mut self.writer, &self.error) {
            let schema = w.schema().clone();
            if let Err(e) = w.write(R::columns(&self.rows, &schema)) {
                self.error = Some(format!("{e:#}"));
            }
        }
        self.rows.clear();
    }

    /// Writes the rows not yet written and ends the file (once; later calls do nothing).
    pub fn finish(&mut self) -> std::io::Result<()> {
        if !self.rows.is_empty() {
            self.flush();
        }
        let Some(w) = self.writer.take() else { return Ok(()) };
        if let Some(e) = self.error.take() {
            return Err(std::io::Error::other(e));
        }
        w.finish().map_err(|e| std::io::Error::other(format!("{e:#}")))
    }

    /// The rows not yet written to the file.
    #[cfg(test)]
    pub fn pending(&self) -> &[R] {
        &self.rows
    }
}

/// Payload the receiving application of a flow has read, and when it read the first and
/// the last of it; shared by the flow's two ends, so the client's summary reports what
/// arrived, as the agent's does from the server's final report.
#[derive(Clone, Copy, Default)]
pub struct Delivered {
    pub bytes: u64,
    pub first_ns: Option<Nanos>,
    pub last_ns: Option<Nanos>,
}

impl Delivered {
    pub fn add(cell: &std::cell::Cell<Delivered>, bytes: u64, now: Nanos) {
        if bytes == 0 {
            return;
        }
        let mut d = cell.get();
        d.bytes += bytes;
        d.first_ns.get_or_insert(now);
        d.last_ns = Some(now);
        cell.set(d);
    }
}

/// What a simulated client asks for first: the direction, the byte count (`u64::MAX`:
/// until the end), the bulk transfer's streams, and for constant-rate messages their size,
/// interval and how long they last; or N objects of one size, `streams` in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub upload: bool,
    pub limit: u64,
    /// (bytes per message, ns between messages); `None`: a bulk transfer or objects.
    pub messages: Option<(u32, Nanos)>,
    /// Messages: how long the sender sends them from when it starts (ns).
    pub duration_ns: Nanos,
    /// Bulk: the payload's streams (the request's stream and `streams − 1` unidirectional
    /// ones the sender opens); objects: the objects in flight at once.
    pub streams: u32,
    /// (count, bytes each): objects mode, each object on its own bidirectional stream.
    pub objects: Option<(u64, u64)>,
}

impl Default for Request {
    fn default() -> Request {
        Request {
            upload: true,
            limit: u64::MAX,
            messages: None,
            duration_ns: 0,
            streams: 1,
            objects: None,
        }
    }
}

/// The request's length on the wire: direction (0 upload, 1 download), byte count, message
/// size (0: bulk) and interval, messages' duration, streams, object count and size (count
/// 0: not objects), big-endian.
pub const REQUEST_LEN: usize = 49;

impl Request {
    pub fn encode(&self) -> [u8; REQUEST_LEN] {
        let mut r = [0u8; REQUEST_LEN];
        r[0] = u8::from(!self.upload);
        r[1..9].copy_from_slice(&self.limit.to_be_bytes());
        let (size, interval) = self.messages.unwrap_or((0, 0));
        r[9..13].copy_from_slice(&size.to_be_bytes());
        r[13..21].copy_from_slice(&interval.to_be_bytes());
        r[21..29].copy_from_slice(&self.duration_ns.to_be_bytes());
        r[29..33].copy_from_slice(&self.streams.to_be_bytes());
        let (count, each) = self.objects.unwrap_or((0, 0));
        r[33..41].copy_from_slice(&count.to_be_bytes());
        r[41..49].copy_from_slice(&each.to_be_bytes());
        r
    }

    /// A whole request (`REQUEST_LEN` bytes).
    pub fn decode(r: &[u8]) -> Request {
        let u32_at = |at: usize| u32::from_be_bytes(r[at..at + 4].try_into().expect("4 bytes"));
        let u64_at = |at: usize| u64::from_be_bytes(r[at..at + 8].try_into().expect("8 bytes"));
        let (size, count) = (u32_at(9), u64_at(33));
        Request {
            upload: r[0] == 0,
            limit: u64_at(1),
            messages: (size > 0).then_some((size, u64_at(13))),
            duration_ns: u64_at(21),
            streams: u32_at(29).max(1),
            objects: (count > 0).then_some((count, u64_at(41))),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_round_trip() {
        let r = Request {
            upload: false,
            limit: 123_456,
            messages: Some((1200, 1_666_667)),
            duration_ns: 60_000_000_000,
            streams: 7,
            objects: Some((40, 100_000)),
        };
        assert_eq!(Request::decode(&r.encode()), r);
        assert_eq!(Request::decode(&Request::default().encode()), Request::default());
    }
}
