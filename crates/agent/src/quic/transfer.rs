//! Stream-level work shared by client and server: bulk send/receive (on one stream or
//! several), paced timestamped messages, and the record of what moved. The record lives
//! behind an `Arc` so a transfer cancelled by a stop request leaves its results so far for
//! the summary.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use bytes::Bytes;
use quinn::{ReadError, ReadExactError, RecvStream, SendStream, VarInt, WriteError};
use tokio::task::JoinSet;

use crate::sys;
pub use agent_proto::summary::MessagesSummary;
use agent_proto::transfer::share;
use agent_proto::wire::code;
use agent_proto::wire::object::{self, ObjectRequest, UploadReply};
use agent_proto::wire::stamp::Stamp;

/// Size of every bulk write (a shared zero buffer, sliced, never copied by the agent).
const CHUNK: usize = 128 * 1024;

/// What moved on one connection.
#[derive(Default)]
pub struct Transfer {
    /// Payload of the transfer direction at this end: written if this end sends the
    /// payload, read otherwise (the series' `bytes`, as for TCP).
    pub payload: AtomicU64,
    /// Application bytes written / read on all streams (object requests and upload
    /// replies counted where they are sent, the request itself not).
    pub bytes_sent: AtomicU64,
    pub bytes_received: AtomicU64,
    /// CLOCK_MONOTONIC of the first and last payload byte read (0 = none yet).
    pub first_byte_ns: AtomicU64,
    pub last_byte_ns: AtomicU64,
    /// Bulk: payload written or read per stream, the control stream first (see
    /// [`share`]); empty in the other modes.
    pub stream_bytes: Mutex<Vec<u64>>,
    pub objects: Mutex<Vec<ObjectRecord>>,
    pub messages_sent: AtomicU64,
    /// Sender: how late each message was written after its deadline.
    pub lateness_ns: Mutex<Vec<u64>>,
    /// Receiver: every message received.
    pub messages: Mutex<Vec<MessageRecord>>,
}

pub struct ObjectRecord {
    pub index: u64,
    pub size: u64,
    pub request_ns: u64,
    pub first_byte_ns: u64,
    pub complete_ns: u64,
}

pub struct MessageRecord {
    pub seq: u64,
    pub send_ns: u64,
    pub recv_ns: u64,
}

fn opt_ns(v: u64) -> Option<u64> {
    (v != 0).then_some(v)
}

impl Transfer {
    /// Makes this a bulk transfer on `streams` streams: each has its count from the start,
    /// so a stream that never moved a byte shows 0.
    pub fn track_streams(&self, streams: u64) {
        *self.stream_bytes.lock().unwrap() = vec![0; streams as usize];
    }

    fn sent(&self, n: usize, payload: bool) {
        self.bytes_sent.fetch_add(n as u64, Relaxed);
        if payload {
            self.payload.fetch_add(n as u64, Relaxed);
        }
    }

    /// Counts `n` payload bytes read now.
    pub fn received(&self, n: usize) {
        let now = sys::now_ns();
        self.bytes_received.fetch_add(n as u64, Relaxed);
        self.payload.fetch_add(n as u64, Relaxed);
        let _ = self.first_byte_ns.compare_exchange(0, now, Relaxed, Relaxed);
        self.last_byte_ns.store(now, Relaxed);
    }

    /// Counts `n` payload bytes on bulk stream `stream`.
    fn on_stream(&self, stream: usize, n: usize) {
        let mut v = self.stream_bytes.lock().unwrap();
        if v.len() <= stream {
            v.resize(stream + 1, 0);
        }
        v[stream] += n as u64;
    }

    /// Bulk: the payload per stream (None in the other modes).
    pub fn stream_bytes(&self) -> Option<Vec<u64>> {
        let v = self.stream_bytes.lock().unwrap();
        (!v.is_empty()).then(|| v.clone())
    }

    pub fn first_byte(&self) -> Option<u64> {
        opt_ns(self.first_byte_ns.load(Relaxed))
    }
    pub fn last_byte(&self) -> Option<u64> {
        opt_ns(self.last_byte_ns.load(Relaxed))
    }

    /// Summary fields of messages mode: the sender's lateness, the receiver's one-way
    /// delays (each end fills the half it saw).
    pub fn messages_summary(&self) -> MessagesSummary {
        let received: Vec<(u64, u64)> = self
            .messages
            .lock()
            .unwrap()
            .iter()
            .map(|m| (m.send_ns, m.recv_ns))
            .collect();
        MessagesSummary::new(
            self.messages_sent.load(Relaxed),
            &self.lateness_ns.lock().unwrap(),
            &received,
        )
    }
}

/// How a bulk send ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendEnd {
    /// All `limit` bytes written and the stream finished.
    Finished,
    /// The deadline passed: the stream was reset (unsent data discarded).
    DurationOver,
}

/// Sends zeros until `limit` bytes are written (then FIN) or `deadline_ns` passes (then
/// RESET_STREAM with DURATION_OVER, so the transfer ends on time even when the send window
/// holds far more than the path can carry in the remaining time).
pub async fn send_bulk(
    s: &mut SendStream,
    limit: Option<u64>,
    deadline_ns: Option<u64>,
    t: &Transfer,
) -> Result<SendEnd, WriteError> {
    send_zeros(&mut [s], &[limit], deadline_ns, t, false).await
}

/// [`send_bulk`] on several streams at once, writing to one after the other. Each stream
/// `k` sends `limits[k]` bytes (then FIN) or until `deadline_ns` (then every stream still
/// sending is reset). With `per_stream`, each stream's payload is counted as bulk stream `k`.
///
/// One writer taking turns, not a task per stream: quinn buffers up to the send window
/// (64 MiB, the whole connection's) ahead of the network and sends the buffered streams
/// in turn, so the streams share the path only if they share the buffer. A writer per
/// stream would not: the first to run fills the window alone, and each time acks free
/// some room the writer woken first takes it again.
async fn send_zeros(
    streams: &mut [&mut SendStream],
    limits: &[Option<u64>],
    deadline_ns: Option<u64>,
    t: &Transfer,
    per_stream: bool,
) -> Result<SendEnd, WriteError> {
    let zeros = Bytes::from(vec![0u8; CHUNK]);
    let deadline = deadline_ns.map(super::tokio_instant);
    let over = |streams: &mut [&mut SendStream], active: &[usize]| {
        for &k in active {
            let _ = streams[k].reset(VarInt::from_u32(code::DURATION_OVER));
        }
        SendEnd::DurationOver
    };
    let mut written = vec![0u64; streams.len()];
    let mut active: Vec<usize> = (0..streams.len()).collect();
    let mut turn = 0;
    while !active.is_empty() {
        turn %= active.len();
        let k = active[turn];
        let want = match limits[k] {
            Some(l) if written[k] >= l => {
                if deadline_ns.is_some_and(|d| sys::now_ns() >= d) {
                    return Ok(over(streams, &active));
                }
                let _ = streams[k].finish();
                active.remove(turn);
                continue;
            }
            Some(l) => (l - written[k]).min(CHUNK as u64) as usize,
            None => CHUNK,
        };
        // write_chunks is cancel-safe (it writes nothing unless it resolves), so a write cut
        // short by the deadline leaves the count exact.
        let mut chunk = [zeros.slice(..want)];
        let write = streams[k].write_chunks(&mut chunk);
        let n = match deadline {
            None => write.await?.bytes,
            Some(d) => {
                tokio::select! {
                    r = write => r?.bytes,
                    _ = tokio::time::sleep_until(d) => return Ok(over(streams, &active)),
                }
            }
        };
        written[k] += n as u64;
        t.sent(n, true);
        if per_stream {
            t.on_stream(k, n);
        }
        turn += 1;
    }
    Ok(SendEnd::Finished)
}

/// How a receive ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvEnd {
    /// The peer finished the stream and everything was read.
    Finished,
    /// The peer's `--duration` was over (stream reset with DURATION_OVER).
    DurationOver,
}

/// Reads and counts the payload of bulk stream `stream` until the stream ends.
pub async fn recv_bulk(s: &mut RecvStream, t: &Transfer, stream: usize) -> anyhow::Result<RecvEnd> {
    loop {
        match s.read_chunk(usize::MAX, true).await {
            Ok(Some(c)) => {
                t.received(c.bytes.len());
                t.on_stream(stream, c.bytes.len());
            }
            Ok(None) => return Ok(RecvEnd::Finished),
            Err(ReadError::Reset(c)) if c == VarInt::from_u32(code::DURATION_OVER) => return Ok(RecvEnd::DurationOver),
            Err(e) => return Err(e.into()),
        }
    }
}

/// A bulk send on `streams` streams: the control stream `control` (bulk stream 0) and
/// `streams − 1` unidirectional streams opened on `conn` (bulk streams 1, 2, … in the order
/// of their ids), written in turn. With `bytes`, each sends its [`share`] and finishes;
/// with `deadline_ns`, each sends until then and is reset.
pub async fn send_bulk_streams(
    conn: &quinn::Connection,
    control: &mut SendStream,
    bytes: Option<u64>,
    streams: u64,
    deadline_ns: Option<u64>,
    t: &Transfer,
) -> anyhow::Result<SendEnd> {
    let mut others = Vec::new();
    for _ in 1..streams {
        others.push(conn.open_uni().await.context("cannot open a payload stream")?);
    }
    let mut all: Vec<&mut SendStream> = std::iter::once(control).chain(others.iter_mut()).collect();
    let limits: Vec<Option<u64>> = (0..streams).map(|k| bytes.map(|b| share(b, streams, k))).collect();
    Ok(send_zeros(&mut all, &limits, deadline_ns, t, true).await?)
}

/// A bulk receive on `streams` streams: the control stream `control` (stream 0) and the
/// `streams − 1` unidirectional streams the peer opens on `conn`, read at once until every
/// one has ended. DurationOver if any was reset at the sender's deadline.
pub async fn recv_bulk_streams(
    conn: &quinn::Connection,
    control: &mut RecvStream,
    streams: u64,
    t: &Arc<Transfer>,
) -> anyhow::Result<RecvEnd> {
    let others = async {
        // Dropping the set (a stop cancelled the transfer) aborts the readers.
        let mut readers = JoinSet::new();
        for _ in 1..streams {
            let mut s = conn.accept_uni().await.context("no payload stream")?;
            let k = 1 + s.id().index();
            if k >= streams {
                anyhow::bail!("payload stream {k} beyond the {streams} of the request");
            }
            let t = t.clone();
            readers.spawn(async move { recv_bulk(&mut s, &t, k as usize).await });
        }
        let mut end = RecvEnd::Finished;
        while let Some(r) = readers.join_next().await {
            if r.context("payload stream task failed")?? == RecvEnd::DurationOver {
                end = RecvEnd::DurationOver;
            }
        }
        Ok(end)
    };
    let (first, rest) = tokio::try_join!(recv_bulk(control, t, 0), others)?;
    Ok(if first == RecvEnd::DurationOver { first } else { rest })
}

/// Sends one of the 8-byte messages (object request, upload reply) and counts it as sent.
pub async fn send_word(s: &mut SendStream, word: [u8; object::LEN], t: &Transfer) -> Result<(), WriteError> {
    s.write_all(&word).await?;
    t.sent(word.len(), false);
    Ok(())
}

/// The server's end of an upload (bulk or messages): the reply with the bytes it read,
/// then the end of the stream.
pub async fn reply_to_upload(s: &mut SendStream, t: &Transfer) -> Result<(), WriteError> {
    let reply = UploadReply {
        bytes_read: t.bytes_received.load(Relaxed),
    };
    send_word(s, reply.encode(), t).await?;
    let _ = s.finish();
    Ok(())
}

/// Reads one of the 8-byte messages (object request, upload reply).
pub async fn recv_word(s: &mut RecvStream) -> Result<[u8; object::LEN], ReadExactError> {
    let mut b = [0u8; object::LEN];
    s.read_exact(&mut b).await?;
    Ok(b)
}

/// Sequence numbers and their deadlines `start + k·interval` (start = now) before
/// `start + duration`, from a thread `name` sleeping to absolute times with
/// clock_nanosleep (tokio's timer has 1 ms granularity); the messages and records senders'
/// clock.
pub(super) fn pacer(
    name: &str,
    interval_ns: u64,
    duration_ns: u64,
) -> tokio::sync::mpsc::UnboundedReceiver<(u64, u64)> {
    let start = sys::now_ns();
    let end = start.saturating_add(duration_ns);
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            for seq in 0u64.. {
                let deadline = start.saturating_add(seq.saturating_mul(interval_ns));
                if deadline >= end {
                    break;
                }
                sys::sleep_until(deadline);
                if sys::stop_requested() || tx.send((seq, deadline)).is_err() {
                    break;
                }
            }
        })
        .unwrap_or_else(|e| panic!("cannot start the {name} thread: {e}"));
    rx
}

/// Writes one `size`-byte message every `interval_ns` from now for `duration_ns` (on
/// `pacer`'s deadlines), then finishes the stream; each message carries its sequence
/// number and the CLOCK_MONOTONIC time just before it was written.
pub async fn send_messages(
    s: &mut SendStream,
    size: u64,
    interval_ns: u64,
    duration_ns: u64,
    t: &Transfer,
) -> anyhow::Result<()> {
    let mut rx = pacer("message-pacer", interval_ns, duration_ns);
    let mut buf = vec![0u8; size as usize];
    while let Some((seq, deadline)) = rx.recv().await {
        let now = sys::now_ns();
        Stamp { seq, send_ns: now }.emit(&mut buf)?;
        s.write_all(&buf).await?;
        t.sent(buf.len(), true);
        t.messages_sent.fetch_add(1, Relaxed);
        t.lateness_ns.lock().unwrap().push(now.saturating_sub(deadline));
    }
    let _ = s.finish();
    Ok(())
}

/// Reads `size`-byte messages until the stream ends, recording each one's arrival.
pub async fn recv_messages(s: &mut RecvStream, size: u64, t: &Transfer) -> anyhow::Result<()> {
    let mut buf = vec![0u8; size as usize];
    loop {
        match s.read_exact(&mut buf).await {
            Ok(()) => {
                t.received(buf.len());
                let recv_ns = t.last_byte_ns.load(Relaxed);
                let Stamp { seq, send_ns } = Stamp::decode(&buf)?;
                t.messages.lock().unwrap().push(MessageRecord { seq, send_ns, recv_ns });
            }
            Err(ReadExactError::FinishedEarly(0)) => return Ok(()),
            Err(ReadExactError::FinishedEarly(n)) => {
                anyhow::bail!("stream ended inside a message ({n} of {size} bytes)")
            }
            Err(ReadExactError::ReadError(e)) => return Err(e.into()),
        }
    }
}

/// Serializes the request of an object (its size) on a new stream and reads the object.
pub async fn fetch_object(conn: &quinn::Connection, index: u64, size: u64, t: &Transfer) -> anyhow::Result<()> {
    let request_ns = sys::now_ns();
    let (mut send, mut recv) = conn.open_bi().await?;
    send_word(&mut send, ObjectRequest { size }.encode(), t).await?;
    let _ = send.finish();
    let mut got = 0u64;
    let mut first = 0u64;
    while let Some(c) = recv.read_chunk(usize::MAX, true).await? {
        if got == 0 {
            first = sys::now_ns();
        }
        got += c.bytes.len() as u64;
        t.received(c.bytes.len());
    }
    if got != size {
        anyhow::bail!("object {index}: server sent {got} of {size} bytes");
    }
    t.objects.lock().unwrap().push(ObjectRecord {
        index,
        size,
        request_ns,
        first_byte_ns: first,
        complete_ns: sys::now_ns(),
    });
    Ok(())
}

/// Answers one object request stream: reads the size, sends that many bytes, finishes.
pub async fn serve_object(mut send: SendStream, mut recv: RecvStream, t: &Transfer) -> anyhow::Result<()> {
    let size = ObjectRequest::decode(&recv_word(&mut recv).await?)?.size;
    t.bytes_received.fetch_add(object::LEN as u64, Relaxed);
    send_bulk(&mut send, Some(size), None, t).await?;
    // Keep the stream until the client has everything (else quinn may drop unsent data).
    let _ = send.stopped().await;
    Ok(())
}
