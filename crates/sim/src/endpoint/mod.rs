//! The simulated hosts' applications, sans-IO: each answers when it next wants to run,
//! takes the datagrams addressed to it, and hands out the datagrams it sends. They write
//! their summaries in the agent's formats (docs/agent.md), so the metrics stage reads a
//! simulated run like an emulated one.

pub mod bulk;
pub mod pacer;
pub mod probe;
pub mod quic;
pub mod tcp;
pub mod tcp_series;
pub mod transportlab_tcp;
pub mod udp;

use std::net::SocketAddrV4;
use std::path::Path;

use agent::series::SeriesWriter;
use arrow_array::ArrayRef;

use agent_proto::summary::Envelope;
use linkem::Nanos;
use serde::Serialize;

use crate::datagram::Datagram;

/// A UDP endpoint's address as `Endpoint::address` gives it.
pub fn udp(addr: SocketAddrV4) -> (u8, SocketAddrV4) {
    (wire::ipv4::protocol::UDP, addr)
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

/// How often each end samples its connection for the series, as the agent's default
/// (`--tcp-info-interval`, `--sample-interval`).
pub const SAMPLE_INTERVAL: Nanos = 10_000_000;

/// The series' grid: a row at the first poll at or after each `SAMPLE_INTERVAL` deadline
/// (from the first poll).
#[derive(Default)]
pub struct SampleGrid {
    next: Option<Nanos>,
}

impl SampleGrid {
    /// Whether a row is due at `now` (then the next deadline is the grid's next one).
    pub fn due(&mut self, now: Nanos) -> bool {
        let due = *self.next.get_or_insert(now);
        if now < due {
            return false;
        }
        self.next = Some(due + (now - due) / SAMPLE_INTERVAL * SAMPLE_INTERVAL + SAMPLE_INTERVAL);
        true
    }

    /// The next deadline, once sampling began and until it stopped.
    pub fn next(&self) -> Option<Nanos> {
        self.next
    }

    /// No more rows (the connection closed); the next `due` starts a new grid.
    pub fn stop(&mut self) {
        self.next = None;
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

/// The agent's summary file (`agent_proto::summary::Envelope`, `simulated: true`).
pub fn write_summary<R: Serialize>(
    path: &Path,
    subcommand: &str,
    start_ns: Nanos,
    end_ns: Nanos,
    stopped_by: &str,
    results: &R,
) -> std::io::Result<()> {
    let doc = Envelope::simulated(subcommand, start_ns, end_ns, stopped_by, results);
    std::fs::write(path, serde_json::to_vec_pretty(&doc)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_fall_on_the_10ms_grid_from_the_first_poll() {
        let mut grid = SampleGrid::default();
        let polls = [5, 6, 10_000_004, 10_000_005, 35_000_000, 40_000_004, 45_000_005];
        let due: Vec<bool> = polls.iter().map(|&t| grid.due(t)).collect();
        assert_eq!(due, [true, false, false, true, true, false, true]);
        assert_eq!(grid.next(), Some(50_000_005));
        grid.stop();
        assert!(grid.due(60_000_000) && grid.next() == Some(70_000_000));
    }
}
