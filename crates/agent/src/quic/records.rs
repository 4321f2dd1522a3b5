//! The paced-records workload over QUIC, the same records as over TCP (`records` crate:
//! `0x00 ‖ COBS(header ‖ zeros) ‖ 0x00`, `size` bytes each, one every interval), so the
//! head-of-line experiment compares the transports record for record. The server sends;
//! the client receives them as its `--delivery` says:
//!
//! - `ordered`: every record on the control stream, read in order (quinn's
//!   `read_chunk(.., ordered = true)`): a record behind a lost packet waits for its repair.
//! - `unordered`: the same single stream, its chunks read unordered
//!   (`read_chunk(.., ordered = false)`: quinn hands over data as it arrives, with its
//!   stream offset) and fed to the same [`records::Assembler`] as TCP's packet tap.
//! - `streams`: each record on a unidirectional stream of its own, read to its end: a
//!   record waits only for its own lost packets. The control stream then carries, once
//!   the last record stream is open, the number of records sent (8 bytes, big-endian), so
//!   the client knows when it has them all.
//!
//! Every arm writes the same per-record series and summary as TCP's
//! ([`crate::tcp::records`]): `via` is `stream` (read in order) or `chunk` (unordered).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use agent_proto::wire::records::RecordsRequest;
use anyhow::Context;
use quinn::{RecvStream, SendStream};
use records::RecordHeader;
use serde::Serialize;
use tokio::task::JoinSet;

use super::transfer::{pacer, Transfer};
use crate::sys;
use crate::tcp::records::{RecordReceiver, Via};
use agent_proto::stats::{self, Scaled};

/// How the client receives records over QUIC (`--delivery`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum QuicDelivery {
    /// One stream, read in order.
    Ordered,
    /// One stream, its chunks read unordered into the record assembler.
    Unordered,
    /// A stream per record.
    Streams,
}

impl QuicDelivery {
    pub fn name(self) -> &'static str {
        match self {
            QuicDelivery::Ordered => "ordered",
            QuicDelivery::Unordered => "unordered",
            QuicDelivery::Streams => "streams",
        }
    }

    /// The request's `streams`: 1 = one stream, 0 = a stream per record.
    pub fn request_streams(self) -> u64 {
        match self {
            QuicDelivery::Streams => 0,
            _ => 1,
        }
    }
}

/// The record size and interval a QUIC records request carries in its message fields.
pub fn records_request(req: &agent_proto::wire::request::Request) -> RecordsRequest {
    RecordsRequest {
        record_size: req.message_size,
        interval_ns: req.message_interval_ns,
    }
}

/// What the sending end reports (`records` of the server's connection), as over TCP.
#[derive(Serialize)]
pub struct SentRecords {
    pub record_size: u64,
    pub interval_ns: u64,
    pub records_sent: u64,
    /// Write start − the record's deadline (µs statistics).
    pub lateness: Option<Scaled>,
}

impl SentRecords {
    pub fn from_transfer(req: RecordsRequest, t: &Transfer) -> SentRecords {
        let late: Vec<f64> = t.lateness_ns.lock().unwrap().iter().map(|&v| v as f64).collect();
        SentRecords {
            record_size: req.record_size,
            interval_ns: req.interval_ns,
            records_sent: t.messages_sent.load(Relaxed),
            lateness: stats::scaled(&late, 1e3, "us"),
        }
    }
}

/// The framed record `id`, stamped now; counts it as sent.
fn next_record(req: RecordsRequest, id: u64, deadline: u64, t: &Transfer) -> anyhow::Result<Vec<u8>> {
    let send_ns = sys::now_ns();
    let size = usize::try_from(req.record_size).context("record size")?;
    let frame = RecordHeader { id, send_ns }.framed(size)?;
    t.lateness_ns.lock().unwrap().push(send_ns.saturating_sub(deadline));
    Ok(frame)
}

fn counted(t: &Transfer, n: usize) {
    t.bytes_sent.fetch_add(n as u64, Relaxed);
    t.payload.fetch_add(n as u64, Relaxed);
    t.messages_sent.fetch_add(1, Relaxed);
}

/// Sends the records for `duration_ns`, then finishes `control`: on `control` itself
/// (ordered and unordered delivery), or each on a new unidirectional stream finished after
/// it, and then their number on `control` (per-stream delivery).
pub async fn send(
    conn: &quinn::Connection,
    control: &mut SendStream,
    req: RecordsRequest,
    duration_ns: u64,
    per_stream: bool,
    t: &Transfer,
) -> anyhow::Result<()> {
    let mut ticks = pacer("record-pacer", req.interval_ns, duration_ns);
    let mut sent = 0u64;
    while let Some((id, deadline)) = ticks.recv().await {
        // A record's own stream is opened before the record is stamped: a wait for the
        // peer's stream credit counts as the sender's lateness, not as network latency.
        let own = if per_stream {
            Some(conn.open_uni().await.context("cannot open a record stream")?)
        } else {
            None
        };
        let frame = next_record(req, id, deadline, t)?;
        match own {
            Some(mut s) => {
                s.write_all(&frame).await?;
                // Finished, not reset: quinn keeps sending (and repairing) its data after
                // the handle is dropped.
                let _ = s.finish();
            }
            None => control.write_all(&frame).await?,
        }
        counted(t, frame.len());
        sent += 1;
    }
    if per_stream {
        control.write_all(&sent.to_be_bytes()).await?;
        t.bytes_sent.fetch_add(8, Relaxed);
    }
    let _ = control.finish();
    Ok(())
}

/// Receives records as `delivery` says until the server has sent them all, handing each
/// one to `receiver` (which stamps its delivery time) as soon as it is complete.
pub async fn receive(
    conn: &quinn::Connection,
    control: &mut RecvStream,
    delivery: QuicDelivery,
    req: RecordsRequest,
    receiver: &Arc<RecordReceiver>,
    t: &Arc<Transfer>,
) -> anyhow::Result<()> {
    match delivery {
        QuicDelivery::Ordered | QuicDelivery::Unordered => {
            let ordered = delivery == QuicDelivery::Ordered;
            let via = if ordered { Via::Stream } else { Via::Chunk };
            while let Some(c) = control.read_chunk(usize::MAX, ordered).await? {
                t.received(c.bytes.len());
                receiver.feed(c.offset, &c.bytes, via, None);
            }
            Ok(())
        }
        QuicDelivery::Streams => receive_per_stream(conn, control, req, receiver, t).await,
    }
}

/// A stream per record: each stream read to its end and handed over at once; stream `k`
/// (the server's `k`-th unidirectional stream, record `k`) is placed at offset
/// `k × record size` of the assembler, so the series' `offset` is that.
async fn receive_per_stream(
    conn: &quinn::Connection,
    control: &mut RecvStream,
    req: RecordsRequest,
    receiver: &Arc<RecordReceiver>,
    t: &Arc<Transfer>,
) -> anyhow::Result<()> {
    let max = usize::try_from(req.record_size).context("record size")?;
    let mut readers = JoinSet::new();
    let mut accepted = 0u64;
    let mut finished = 0u64;
    let mut total: Option<u64> = None;
    // Pinned once, polled until done: read_exact is not cancel-safe.
    let count = async {
        let mut b = [0u8; 8];
        control.read_exact(&mut b).await.map(|()| u64::from_be_bytes(b))
    };
    tokio::pin!(count);
    while total.is_none_or(|n| finished < n) {
        tokio::select! {
            s = conn.accept_uni(), if total.is_none_or(|n| accepted < n) => {
                let mut s = s.context("no record stream")?;
                accepted += 1;
                let (receiver, t) = (receiver.clone(), t.clone());
                readers.spawn(async move {
                    let index = s.id().index();
                    let bytes = s.read_to_end(max).await?;
                    t.received(bytes.len());
                    receiver.feed(index.saturating_mul(max as u64), &bytes, Via::Stream, None);
                    Ok::<(), anyhow::Error>(())
                });
            }
            Some(r) = readers.join_next(), if !readers.is_empty() => {
                r.context("record stream task failed")??;
                finished += 1;
            }
            r = &mut count, if total.is_none() => {
                total = Some(r.context("the server's record count")?);
            }
        }
    }
    Ok(())
}
