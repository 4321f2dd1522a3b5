//! The paced-records workload over kernel TCP: the server writes one COBS-framed record
//! (`records` crate) every interval; the client receives them `ordered` (from the socket's
//! byte stream only) or `unordered` (also from its own connection's segments as they reach
//! the namespace, through a packet tap; the socket still supplies what the tap lacks, such
//! as bytes lost on the wire and retransmitted). Either way every record is handed over
//! once, by the path that completed it first, and its delivery time is taken then.
//!
//! The receiver also keeps a second assembler fed by the socket's stream alone, so each
//! record has the time the in-order stream gave it too (`stream_ns`): in the unordered
//! arm that is what the ordered receiver would have got in the same run, from the same
//! packets.

use std::collections::HashMap;
use std::net::SocketAddrV4;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{self, JoinHandle};

use agent_proto::wire::records::RecordsRequest;
use anyhow::Context;
use arrow_array::{ArrayRef, Int64Array, StringArray, UInt32Array, UInt64Array};
use records::{Assembler, RecordHeader};
use serde::Serialize;

use super::sampler::Progress;
use super::segment::{self, Direction, SeqMap, Skip};
use super::tap::PacketTap;
use super::transfer::write_all;
use crate::output;
use crate::sys;
use crate::tcpstream::Stream;
use agent_proto::stats::{self, Scaled};

/// How the receiver gets records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Delivery {
    /// From the socket's in-order byte stream only.
    Ordered,
    /// Also from the connection's segments as they arrive (packet tap).
    Unordered,
}

impl Delivery {
    pub fn name(self) -> &'static str {
        match self {
            Delivery::Ordered => "ordered",
            Delivery::Unordered => "unordered",
        }
    }
}

/// Which path handed a record over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// TCP: a segment seen by the packet tap.
    Packet,
    /// An in-order byte stream: TCP's socket, a QUIC stream read in order (one stream, or
    /// the record's own stream).
    Stream,
    /// QUIC: a stream chunk read unordered.
    Chunk,
    /// UDP: the record's own datagram.
    Datagram,
}

impl Via {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Via::Packet => "packet",
            Via::Stream => "stream",
            Via::Chunk => "chunk",
            Via::Datagram => "datagram",
        }
    }
}

// ---------------------------------------------------------------------------------------
// Sender

/// What the sending end reports.
#[derive(Serialize, Default)]
pub struct SentRecords {
    pub record_size: u64,
    pub interval_ns: u64,
    pub records_sent: u64,
    /// Write start − the record's deadline (µs statistics).
    pub lateness: Option<Scaled>,
}

/// Writes one record of `req.record_size` bytes at each deadline `start + k·interval`
/// before `end_ns`. Returns what was sent and whether a stop request cut it short.
/// `bytes_sent` grows as records go out, so it is right even when an error is returned.
pub fn send_records(
    s: &mut Stream,
    req: RecordsRequest,
    start_ns: u64,
    end_ns: u64,
    counter: &Progress,
    bytes_sent: &mut u64,
) -> anyhow::Result<(SentRecords, bool)> {
    let size = usize::try_from(req.record_size).context("record size")?;
    let mut late = Vec::new();
    let mut sent = SentRecords {
        record_size: req.record_size,
        interval_ns: req.interval_ns,
        ..Default::default()
    };
    let mut stopped = false;
    for id in 0u64.. {
        let deadline = start_ns.saturating_add(id.saturating_mul(req.interval_ns));
        if deadline >= end_ns {
            break;
        }
        sys::sleep_until(deadline);
        if sys::stop_requested() {
            stopped = true;
            break;
        }
        let send_ns = sys::now_ns();
        let frame = RecordHeader { id, send_ns }.framed(size)?;
        late.push(send_ns.saturating_sub(deadline) as f64);
        if !write_all(s, &frame)? {
            stopped = true;
            break;
        }
        *bytes_sent += frame.len() as u64;
        counter.add(frame.len());
        sent.records_sent += 1;
    }
    sent.lateness = stats::scaled(&late, 1e3, "us");
    Ok((sent, stopped))
}

// ---------------------------------------------------------------------------------------
// Receiver

/// One record as it was handed over.
#[derive(Clone, Copy, Debug)]
pub struct RecordRow {
    pub id: u64,
    /// Bytes in the stream, framing included.
    pub size: u64,
    /// Stream offset of its opening delimiter.
    pub offset: u64,
    pub send_ns: u64,
    pub deliver_ns: u64,
    pub via: Via,
    /// Packet path: the kernel's receive time of the segment that completed the record.
    pub wire_ns: Option<u64>,
    /// When the socket's in-order stream completed it (None if it never did: the
    /// connection ended first).
    pub stream_ns: Option<u64>,
}

#[derive(Default)]
struct ReceiverState {
    assembler: Assembler,
    /// The same records from the socket's stream alone.
    stream_only: Assembler,
    /// Record id → when the stream alone completed it.
    stream_ns: HashMap<u64, u64>,
    rows: Vec<RecordRow>,
    /// Decoded records shorter than a header.
    short_records: u64,
}

/// What takes the bytes of the connection's stream at their offsets, from the socket's
/// stream or the packet tap: the records receiver, the web pages' receiver.
pub trait Sink: Send + Sync {
    fn feed(&self, offset: u64, bytes: &[u8], via: Via, wire_ns: Option<u64>);
}

impl Sink for RecordReceiver {
    fn feed(&self, offset: u64, bytes: &[u8], via: Via, wire_ns: Option<u64>) {
        RecordReceiver::feed(self, offset, bytes, via, wire_ns)
    }
}

/// Where both paths hand their bytes; the assembler makes each record come out once.
#[derive(Default)]
pub struct RecordReceiver {
    state: Mutex<ReceiverState>,
}

impl RecordReceiver {
    /// Gives the bytes at stream `offset` to the assembler and keeps the records they
    /// complete, stamped with the time they were handed over.
    pub fn feed(&self, offset: u64, bytes: &[u8], via: Via, wire_ns: Option<u64>) {
        let mut st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let done = st.assembler.insert(offset, bytes);
        if via == Via::Stream {
            let stream_done = st.stream_only.insert(offset, bytes);
            let now = sys::now_ns();
            for d in stream_done {
                if let Ok(h) = RecordHeader::parse(&d.record) {
                    st.stream_ns.entry(h.id).or_insert(now);
                }
            }
        }
        if done.is_empty() {
            return;
        }
        let deliver_ns = sys::now_ns();
        for d in done {
            match RecordHeader::parse(&d.record) {
                Ok(h) => st.rows.push(RecordRow {
                    id: h.id,
                    size: d.wire_len(),
                    offset: d.start,
                    send_ns: h.send_ns,
                    deliver_ns,
                    via,
                    wire_ns: wire_ns.filter(|_| via == Via::Packet),
                    stream_ns: None,
                }),
                Err(_) => st.short_records += 1,
            }
        }
    }

    fn take(&self) -> ReceiverState {
        std::mem::take(&mut *self.state.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// What the packet path saw.
#[derive(Serialize, Default, Clone, Copy)]
pub struct TapCounts {
    /// Packets the filter passed (incoming copies).
    pub packets: u64,
    /// Segments with payload given to the assembler.
    pub segments: u64,
    pub payload_bytes: u64,
    /// The SYN-ACK (the server's initial sequence number) was seen.
    pub isn_seen: bool,
    /// Segments with payload before the SYN-ACK was seen (no offset known): not used.
    pub before_isn: u64,
    /// Packets that were not a whole IPv4 TCP segment, or of another flow.
    pub skipped: u64,
    /// Packets larger than the capture buffer (their captured part was used).
    pub truncated: u64,
    /// Packets without a kernel receive time.
    pub unstamped: u64,
    /// Packets the kernel dropped on the tap socket (buffer full).
    pub drops: u64,
}

/// The packet path: a thread reading the tap until told to stop.
pub struct TapReader {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<anyhow::Result<TapCounts>>,
}

/// Capture buffer: a GRO super-packet of up to 64 KiB fits.
const CAPTURE_LEN: usize = 256 * 1024;

impl TapReader {
    /// Opens the tap for segments from `server` to local port `local_port` (before
    /// connect(), so the SYN-ACK is seen) and starts reading it. `local_ip` is filled in
    /// once connect() has chosen it; until then any destination address matches.
    pub fn start(
        server: SocketAddrV4,
        local_port: u16,
        local_ip: Arc<OnceLock<std::net::Ipv4Addr>>,
        receiver: Arc<dyn Sink>,
    ) -> anyhow::Result<TapReader> {
        let mut dir = Direction {
            from: server,
            to: SocketAddrV4::new(std::net::Ipv4Addr::UNSPECIFIED, local_port),
        };
        let tap = PacketTap::open(&dir).context("unordered delivery")?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let handle = thread::Builder::new().name("tap".into()).spawn(move || {
            let mut c = TapCounts::default();
            let mut buf = vec![0u8; CAPTURE_LEN];
            let mut map: Option<SeqMap> = None;
            while !stop2.load(Ordering::Relaxed) && !sys::stop_requested() {
                let Some(cap) = tap.recv(&mut buf).context("reading the packet tap")? else {
                    continue;
                };
                c.packets += 1;
                if let Some(ip) = local_ip.get() {
                    dir.to = SocketAddrV4::new(*ip, local_port);
                }
                let seg = match segment::parse(&buf[..cap.len], &dir) {
                    Ok(s) => s,
                    Err(Skip::NotTcp | Skip::OtherFlow) => {
                        c.skipped += 1;
                        continue;
                    }
                };
                if seg.syn_ack {
                    map.get_or_insert(SeqMap::new(seg.seq));
                    c.isn_seen = true;
                    continue;
                }
                if seg.payload.is_empty() {
                    continue;
                }
                let Some(m) = map.as_mut() else {
                    c.before_isn += 1;
                    continue;
                };
                let Some(offset) = m.offset(seg.seq) else {
                    continue;
                };
                c.truncated += u64::from(cap.truncated);
                c.unstamped += u64::from(cap.stamp_ns.is_none());
                c.segments += 1;
                c.payload_bytes += seg.payload.len() as u64;
                receiver.feed(offset, seg.payload, Via::Packet, cap.stamp_ns);
            }
            c.drops = tap.drops().context("reading the packet tap's drop count")?;
            Ok(c)
        })?;
        Ok(TapReader { stop, handle })
    }

    pub fn finish(self) -> anyhow::Result<TapCounts> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .join()
            .map_err(|_| anyhow::anyhow!("packet tap thread panicked"))?
    }
}

/// The receiving client's `results.records`.
#[derive(Serialize)]
pub struct ReceivedRecords {
    /// `ordered` or `unordered` (TCP, QUIC), `streams` (QUIC, a stream per record).
    pub delivery: &'static str,
    pub record_size: u64,
    pub interval_ns: u64,
    /// Distinct records handed over.
    pub delivered: u64,
    pub via_packet: u64,
    pub via_stream: u64,
    pub via_chunk: u64,
    /// Records below the highest id received that never arrived (ids are 0, 1, 2, …).
    pub missing: u64,
    /// Ids handed over more than once (a correct receiver has 0).
    pub duplicate_ids: u64,
    /// Frames that were no COBS encoding, or records shorter than their header.
    pub malformed: u64,
    /// Latency = deliver_ns − send_ns (ms statistics).
    pub latency: Option<Scaled>,
    /// Latency had the records come from the socket's stream only: stream_ns − send_ns
    /// (ms statistics; the same as `latency` when ordered).
    pub stream_latency: Option<Scaled>,
    /// Packet path counters (unordered only).
    pub tap: Option<TapCounts>,
}

/// Summarises what the receiver handed over and writes the per-record series.
pub fn finish_receiver(
    receiver: &RecordReceiver,
    delivery: &'static str,
    req: RecordsRequest,
    tap: Option<TapCounts>,
    series: Option<&Path>,
) -> anyhow::Result<ReceivedRecords> {
    let mut st = receiver.take();
    for r in st.rows.iter_mut() {
        r.stream_ns = st.stream_ns.get(&r.id).copied();
    }
    st.rows.sort_by_key(|r| (r.id, r.deliver_ns));
    let total = st.rows.len() as u64;
    st.rows.dedup_by_key(|r| r.id);
    let delivered = st.rows.len() as u64;
    let latencies: Vec<f64> = st.rows.iter().map(|r| r.deliver_ns as f64 - r.send_ns as f64).collect();
    let stream_latencies: Vec<f64> = st
        .rows
        .iter()
        .filter_map(|r| r.stream_ns.map(|t| t as f64 - r.send_ns as f64))
        .collect();
    let summary = ReceivedRecords {
        delivery,
        record_size: req.record_size,
        interval_ns: req.interval_ns,
        delivered,
        via_packet: st.rows.iter().filter(|r| r.via == Via::Packet).count() as u64,
        via_stream: st.rows.iter().filter(|r| r.via == Via::Stream).count() as u64,
        via_chunk: st.rows.iter().filter(|r| r.via == Via::Chunk).count() as u64,
        missing: st.rows.last().map_or(0, |r| r.id + 1 - delivered),
        duplicate_ids: total - delivered,
        malformed: st.assembler.malformed() + st.short_records,
        latency: stats::scaled(&latencies, 1e6, "ms"),
        stream_latency: stats::scaled(&stream_latencies, 1e6, "ms"),
        tap,
    };
    if let Some(p) = series {
        write_series(p, &st.rows)?;
    }
    Ok(summary)
}

/// The per-record series (`--record-series`), one row per record in id order.
/// A nullable column with no null is written as such (`output::write_series` marks a
/// column nullable only when it holds a null).
pub(crate) fn write_series(path: &Path, rows: &[RecordRow]) -> anyhow::Result<()> {
    let i64s = |f: fn(&RecordRow) -> u64| -> ArrayRef {
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| f(r) as i64)))
    };
    output::write_series(
        path,
        vec![
            (
                "id",
                Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.id))) as ArrayRef,
            ),
            (
                "size",
                Arc::new(UInt32Array::from_iter_values(
                    rows.iter().map(|r| r.size.min(u32::MAX as u64) as u32),
                )),
            ),
            (
                "offset",
                Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.offset))),
            ),
            ("send_ns", i64s(|r| r.send_ns)),
            ("deliver_ns", i64s(|r| r.deliver_ns)),
            (
                "latency_ns",
                Arc::new(Int64Array::from_iter_values(
                    rows.iter().map(|r| r.deliver_ns as i64 - r.send_ns as i64),
                )),
            ),
            (
                "via",
                Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.via.name()))),
            ),
            (
                "wire_ns",
                Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.wire_ns.map(|w| w as i64)))),
            ),
            (
                "stream_ns",
                Arc::new(Int64Array::from_iter(
                    rows.iter().map(|r| r.stream_ns.map(|w| w as i64)),
                )),
            ),
        ],
    )
}
