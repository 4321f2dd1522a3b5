//! The web workload over kernel TCP (mode 6, `wire::page`): pages of one primary object
//! and N secondaries, loaded one after another on one connection for `--duration`. Per
//! page the client asks for the primary, and once it has the primary, for the
//! secondaries (a browser parses the page before it fetches what the page names).
//!
//! Two arms on the same kernel TCP:
//! - `ordered` (framing plain): the objects back to back on the byte stream, read from
//!   the socket: a lost segment holds up every byte behind it, whichever object it is;
//! - `unordered` (framing msTCP): each object on an msTCP sub-stream of its own
//!   (`records::mstcp`: COBS chunks with stream id and sequence), the secondaries'
//!   chunks interleaved one per object in turn, received through the packet tap and the
//!   socket as the records arm does: a lost segment holds up only its own object.
//!
//! For every object: when it was asked for, its first byte and its last byte were handed
//! to the application (time to first byte, completion); for every page: when it was
//! asked for and when its last object completed (page time).

use std::io::Write;
use std::net::TcpStream;
use std::path::Path;
use std::sync::{Arc, Mutex};

use agent_proto::wire::page::{Framing, PageRequest, Step, STEP_LEN};
use anyhow::Context;
use arrow_array::{ArrayRef, Int64Array, StringArray, UInt32Array, UInt64Array};
use records::mstcp;
use serde::Serialize;

use super::records::{Sink, TapCounts, Via};
use super::sampler::Progress;
use super::transfer::{read_full, write_all, Filled};
use crate::output;
use crate::sys;
use crate::tcpstream::Stream;
use agent_proto::stats::{self, Scaled};

/// Most data bytes in one msTCP chunk: a chunk frame (header and COBS included) stays
/// under a 1448-byte segment.
pub const CHUNK_PAYLOAD: usize = 1400;
/// Filler byte of the objects (not zero: COBS adds only its one byte per 254).
const FILL: u8 = b'w';

/// `--page-framing`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PageFraming {
    Plain,
    Mstcp,
}

impl PageFraming {
    pub fn wire(self) -> Framing {
        match self {
            PageFraming::Plain => Framing::Plain,
            PageFraming::Mstcp => Framing::Mstcp,
        }
    }
}

/// The msTCP sub-stream of object `k` (0 = primary) of page `page`.
pub fn sub_stream(page: u64, k: u64, secondaries: u64) -> u32 {
    (page * (secondaries + 1) + k) as u32
}

// ---------------------------------------------------------------------------------------
// Server

/// What the server reports (`page` of its connection).
#[derive(Serialize, Default)]
pub struct ServedPages {
    pub framing: &'static str,
    pub primaries_sent: u64,
    pub secondaries_sent: u64,
}

pub fn framing_name(f: Framing) -> &'static str {
    match f {
        Framing::Plain => "plain",
        Framing::Mstcp => "mstcp",
    }
}

/// Reads the page's shape, then answers each step until the client closes its side.
/// Returns what was served and whether a stop request cut it short.
pub fn serve_pages(
    s: &mut Stream,
    counter: &Progress,
    bytes_sent: &mut u64,
    bytes_received: &mut u64,
) -> anyhow::Result<(ServedPages, bool)> {
    let mut fixed = [0u8; agent_proto::wire::page::FIXED_LEN];
    match read_full(s, &mut fixed)? {
        Filled::Full => {}
        Filled::Stopped => return Ok((ServedPages::default(), true)),
        Filled::Eof(n) => anyhow::bail!("client closed the connection after {n} page request bytes"),
    }
    let n = PageRequest::count(&fixed).map_err(|e| anyhow::anyhow!("bad page request: {e}"))?;
    let mut all = fixed.to_vec();
    all.resize(fixed.len() + 8 * n as usize, 0);
    match read_full(s, &mut all[fixed.len()..])? {
        Filled::Full => {}
        Filled::Stopped => return Ok((ServedPages::default(), true)),
        Filled::Eof(_) => anyhow::bail!("client closed the connection inside the page request"),
    }
    *bytes_received += all.len() as u64;
    let req = PageRequest::decode(&all).map_err(|e| anyhow::anyhow!("bad page request: {e}"))?;
    req.validate().map_err(|e| anyhow::anyhow!("bad page request: {e}"))?;
    let mut served = ServedPages {
        framing: framing_name(req.framing),
        ..Default::default()
    };
    let mut tx = mstcp::Sender::new(CHUNK_PAYLOAD);
    let mut page = 0u64;
    loop {
        let mut step = [0u8; STEP_LEN];
        match read_full(s, &mut step)? {
            Filled::Full => {}
            Filled::Stopped => return Ok((served, true)),
            Filled::Eof(0) => return Ok((served, false)),
            Filled::Eof(n) => anyhow::bail!("client closed the connection inside a page step ({n} bytes)"),
        }
        *bytes_received += STEP_LEN as u64;
        let step = Step::decode(&step).map_err(|e| anyhow::anyhow!("bad page step: {e}"))?;
        let bytes = match step {
            Step::Primary => {
                served.primaries_sent += 1;
                objects(&req, &mut tx, page, &[(0, req.primary)])
            }
            Step::Secondaries => {
                served.secondaries_sent += req.secondaries.len() as u64;
                let objs: Vec<(u64, u64)> = (1u64..).zip(req.secondaries.iter().copied()).collect();
                let b = objects(&req, &mut tx, page, &objs);
                page += 1;
                b
            }
        };
        if !write_all(s, &bytes)? {
            return Ok((served, true));
        }
        *bytes_sent += bytes.len() as u64;
        counter.add(bytes.len());
        if step == Step::Primary && req.secondaries.is_empty() {
            page += 1;
        }
    }
}

/// The bytes of objects `(k, size)` of `page`: back to back, or their msTCP chunks
/// interleaved one per object in turn.
fn objects(req: &PageRequest, tx: &mut mstcp::Sender, page: u64, objs: &[(u64, u64)]) -> Vec<u8> {
    match req.framing {
        Framing::Plain => vec![FILL; objs.iter().map(|o| o.1 as usize).sum()],
        Framing::Mstcp => {
            let n = req.secondaries.len() as u64;
            let mut chunks: Vec<std::vec::IntoIter<Vec<u8>>> = objs
                .iter()
                .map(|&(k, size)| {
                    tx.write(sub_stream(page, k, n), &vec![FILL; size as usize], true)
                        .into_iter()
                })
                .collect();
            let mut out = Vec::new();
            loop {
                let mut any = false;
                for c in chunks.iter_mut() {
                    if let Some(f) = c.next() {
                        out.extend_from_slice(&f);
                        any = true;
                    }
                }
                if !any {
                    return out;
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Client

/// One object as the client got it.
#[derive(Clone, Copy, Debug, Default)]
struct ObjectRow {
    page: u64,
    object: u64,
    size: u64,
    request_ns: u64,
    first_byte_ns: Option<u64>,
    complete_ns: Option<u64>,
    got: u64,
    via: Option<Via>,
}

struct PageState {
    req: PageRequest,
    deadline_ns: u64,
    /// Asks the server for the next step (a duplicate of the connection's socket), from
    /// [`PageReceiver::start`] on.
    writer: Option<TcpStream>,
    rows: Vec<ObjectRow>,
    page_start: Vec<u64>,
    page_end: Vec<Option<u64>>,
    /// Plain: the next stream offset and the object it belongs to (row index).
    plain_offset: u64,
    plain_row: usize,
    ms: mstcp::Receiver,
    /// No further page will be asked for: the client may close.
    done: bool,
    error: Option<String>,
    steps_sent: u64,
}

/// The client's receiving side: fed by the socket's stream and, unordered, by the tap.
pub struct PageReceiver {
    state: Mutex<PageState>,
}

impl PageReceiver {
    pub fn new(req: PageRequest) -> PageReceiver {
        PageReceiver {
            state: Mutex::new(PageState {
                req,
                deadline_ns: 0,
                writer: None,
                rows: Vec::new(),
                page_start: Vec::new(),
                page_end: Vec::new(),
                plain_offset: 0,
                plain_row: 0,
                ms: mstcp::Receiver::new(),
                done: false,
                error: None,
                steps_sent: 0,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PageState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Asks for the first page's primary (after the request and the page's shape were
    /// written), and for further pages until `deadline_ns`; `writer` is the connection's
    /// socket (a duplicate), which the last page's completion shuts for writing.
    pub fn start(&self, writer: TcpStream, deadline_ns: u64) {
        let mut st = self.lock();
        st.writer = Some(writer);
        st.deadline_ns = deadline_ns;
        st.request(Step::Primary);
    }

    pub fn done(&self) -> bool {
        let st = self.lock();
        st.done || st.error.is_some()
    }

    pub fn error(&self) -> Option<String> {
        self.lock().error.clone()
    }
}

impl PageState {
    fn secondaries(&self) -> u64 {
        self.req.secondaries.len() as u64
    }

    /// Writes the step and opens the rows of the objects it asks for.
    fn request(&mut self, step: Step) {
        let now = sys::now_ns();
        let page = match step {
            Step::Primary => {
                self.page_start.push(now);
                self.page_end.push(None);
                self.page_start.len() as u64 - 1
            }
            Step::Secondaries => self.page_start.len() as u64 - 1,
        };
        let objs: Vec<(u64, u64)> = match step {
            Step::Primary => vec![(0, self.req.primary)],
            Step::Secondaries => (1u64..).zip(self.req.secondaries.iter().copied()).collect(),
        };
        for (object, size) in objs {
            self.rows.push(ObjectRow {
                page,
                object,
                size,
                request_ns: now,
                ..Default::default()
            });
        }
        let sent = match self.writer.as_mut() {
            Some(w) => w.write_all(&step.encode()),
            None => Err(std::io::Error::other("not started")),
        };
        if let Err(e) = sent {
            self.error = Some(format!("cannot ask for the next page step: {e}"));
        }
        self.steps_sent += 1;
    }

    fn row_index(&self, page: u64, object: u64) -> Option<usize> {
        let per_page = self.secondaries() + 1;
        let i = usize::try_from(page * per_page + object).ok()?;
        self.rows
            .get(i)
            .filter(|r| r.page == page && r.object == object)
            .map(|_| i)
    }

    /// Data of row `i` handed over now; moves the page on when an object completes.
    fn got(&mut self, i: usize, n: u64, fin: bool, via: Via) {
        let now = sys::now_ns();
        let r = &mut self.rows[i];
        r.first_byte_ns.get_or_insert(now);
        r.got += n;
        if !fin || r.complete_ns.is_some() {
            return;
        }
        r.complete_ns = Some(now);
        r.via = Some(via);
        let (page, object) = (r.page, r.object);
        let page_done = if object == 0 {
            if self.secondaries() > 0 {
                self.request(Step::Secondaries);
                false
            } else {
                true
            }
        } else {
            let first = i - object as usize + 1;
            self.rows.len() >= first + self.secondaries() as usize
                && self.rows[first..first + self.secondaries() as usize]
                    .iter()
                    .all(|r| r.complete_ns.is_some())
        };
        if page_done {
            self.page_end[page as usize] = Some(now);
            if now < self.deadline_ns && !sys::stop_requested() {
                self.request(Step::Primary);
            } else {
                // The last page: our FIN tells the server, which closes its side, and
                // the client's reading ends at that EOF.
                self.done = true;
                if let Some(w) = &self.writer {
                    let _ = w.shutdown(std::net::Shutdown::Write);
                }
            }
        }
    }
}

impl Sink for PageReceiver {
    fn feed(&self, offset: u64, bytes: &[u8], via: Via, _wire_ns: Option<u64>) {
        let mut st = self.lock();
        match st.req.framing {
            Framing::Plain => {
                // Plain pages come from the socket's stream only, in order.
                if via != Via::Stream || offset != st.plain_offset {
                    return;
                }
                let mut left = bytes.len() as u64;
                while left > 0 {
                    let i = st.plain_row;
                    let Some(&r) = st.rows.get(i) else {
                        st.error = Some(format!("server sent {left} bytes nobody asked for"));
                        return;
                    };
                    let take = (r.size - r.got).min(left);
                    left -= take;
                    st.plain_offset += take;
                    let complete = r.got + take == r.size;
                    st.got(i, take, complete, via);
                    if complete {
                        st.plain_row += 1;
                    }
                }
            }
            Framing::Mstcp => {
                let n = st.secondaries();
                for d in st.ms.insert(offset, bytes) {
                    let (page, object) = (d.stream as u64 / (n + 1), d.stream as u64 % (n + 1));
                    match st.row_index(page, object) {
                        Some(i) => st.got(i, d.data.len() as u64, d.fin, via),
                        None => {
                            st.error = Some(format!("server sent sub-stream {} nobody asked for", d.stream));
                            return;
                        }
                    }
                }
            }
        }
    }
}

/// The client's `results.page`.
#[derive(Serialize)]
pub struct PagesSummary {
    pub framing: &'static str,
    pub primary: u64,
    pub secondaries: Vec<u64>,
    /// Pages whose every object arrived.
    pub pages_completed: u64,
    pub pages_started: u64,
    /// Page time: its primary asked for → its last object complete (ms statistics).
    pub page_time: Option<Scaled>,
    /// Time to first byte of every object: asked for → first byte handed over (ms).
    pub object_ttfb: Option<Scaled>,
    /// Objects completed by the packet path (unordered) / the socket's stream.
    pub via_packet: u64,
    pub via_stream: u64,
    /// msTCP chunks that were no chunk, or frames that were no COBS encoding.
    pub malformed: u64,
    pub tap: Option<TapCounts>,
}

/// Summarises the pages and writes the per-object series.
pub fn finish_client(
    receiver: &PageReceiver,
    tap: Option<TapCounts>,
    series: Option<&Path>,
) -> anyhow::Result<PagesSummary> {
    let st = receiver.lock();
    let page_times: Vec<f64> = st
        .page_start
        .iter()
        .zip(&st.page_end)
        .filter_map(|(s, e)| e.map(|e| (e - s) as f64))
        .collect();
    let ttfb: Vec<f64> = st
        .rows
        .iter()
        .filter_map(|r| r.first_byte_ns.map(|f| (f - r.request_ns) as f64))
        .collect();
    let summary = PagesSummary {
        framing: framing_name(st.req.framing),
        primary: st.req.primary,
        secondaries: st.req.secondaries.clone(),
        pages_completed: page_times.len() as u64,
        pages_started: st.page_start.len() as u64,
        page_time: stats::scaled(&page_times, 1e6, "ms"),
        object_ttfb: stats::scaled(&ttfb, 1e6, "ms"),
        via_packet: st.rows.iter().filter(|r| r.via == Some(Via::Packet)).count() as u64,
        via_stream: st.rows.iter().filter(|r| r.via == Some(Via::Stream)).count() as u64,
        malformed: st.ms.malformed(),
        tap,
    };
    if let Some(p) = series {
        write_series(p, &st).context("page series")?;
    }
    Ok(summary)
}

/// `--page-series`: one row per object asked for, in request order.
fn write_series(path: &Path, st: &PageState) -> anyhow::Result<()> {
    let rows = &st.rows;
    let opt = |v: Option<u64>| v.map(|x| x as i64);
    output::write_series(
        path,
        vec![
            (
                "page",
                Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.page))) as ArrayRef,
            ),
            (
                "object",
                Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.object as u32))),
            ),
            (
                "size",
                Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.size))),
            ),
            (
                "request_ns",
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.request_ns as i64))),
            ),
            (
                "first_byte_ns",
                Arc::new(Int64Array::from_iter(rows.iter().map(|r| opt(r.first_byte_ns)))),
            ),
            (
                "complete_ns",
                Arc::new(Int64Array::from_iter(rows.iter().map(|r| opt(r.complete_ns)))),
            ),
            (
                "page_start_ns",
                Arc::new(Int64Array::from_iter_values(
                    rows.iter().map(|r| st.page_start[r.page as usize] as i64),
                )),
            ),
            (
                "page_end_ns",
                Arc::new(Int64Array::from_iter(
                    rows.iter().map(|r| opt(st.page_end[r.page as usize])),
                )),
            ),
            (
                "via",
                Arc::new(StringArray::from_iter(rows.iter().map(|r| r.via.map(|v| v.name())))),
            ),
        ],
    )
}
