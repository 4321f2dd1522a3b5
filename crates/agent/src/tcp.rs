//! tcp-server and tcp-client: bulk upload/download and sequential objects over kernel TCP,
//! with TCP_INFO sampled in a background thread.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use anyhow::{bail, Context};
use arrow_array::{ArrayRef, BooleanArray, Int64Array, UInt32Array, UInt64Array};
use serde_json::{json, Value};
use socket2::{Domain, Protocol, Socket, Type};

use crate::proto::{self, Header, Mode};
use crate::tcpinfo::{self, TcpInfo};
use crate::tcpstream::{Stopped, Stream};
use crate::output::{self, bps, secs};
use crate::{stats, sys, usage, Direction, TcpClientArgs, TcpServerArgs};

/// Size of every read and write on bulk paths.
const BUF_LEN: usize = 128 * 1024;
/// Blocking calls time out this often to check the stop flag.
const POLL: Duration = Duration::from_millis(100);

// ---------------------------------------------------------------------------------------
// TCP_INFO sampling

/// One TCP_INFO reading with the application byte count at that instant.
pub struct Sample {
    pub conn: u32,
    pub t_ns: u64,
    /// Cumulative payload bytes written (sender) or read (receiver) by the application.
    pub bytes: u64,
    pub info: TcpInfo,
}

/// Byte counter plus TCP_INFO sampling on a grid of absolute deadlines. Samples are taken
/// by whoever notices a deadline has passed first: the I/O loop after each read or write
/// (so a busy CPU cannot starve sampling) or a background thread (so a blocked I/O loop
/// does not stop it).
pub struct Progress {
    bytes: AtomicU64,
    next_ns: AtomicU64,
    interval_ns: u64,
    conn: u32,
    sock: TcpStream,
    samples: Mutex<Vec<Sample>>,
}

impl Progress {
    fn new(stream: &TcpStream, conn: u32, interval_ns: u64) -> io::Result<Progress> {
        Ok(Progress {
            bytes: AtomicU64::new(0),
            next_ns: AtomicU64::new(sys::now_ns()),
            interval_ns,
            conn,
            sock: stream.try_clone()?,
            samples: Mutex::new(Vec::with_capacity(4096)),
        })
    }

    /// Counts `n` application bytes and samples if a deadline has passed.
    #[inline]
    fn add(&self, n: usize) {
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
        self.maybe_sample();
    }

    #[inline]
    fn maybe_sample(&self) {
        let now = sys::now_ns();
        let due = self.next_ns.load(Ordering::Relaxed);
        if now < due {
            return;
        }
        let next = due + ((now - due) / self.interval_ns + 1) * self.interval_ns;
        if self
            .next_ns
            .compare_exchange(due, next, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            self.sample(now);
        }
    }

    fn sample(&self, t_ns: u64) {
        if let Ok(info) = tcpinfo::read(&self.sock) {
            let s = Sample {
                conn: self.conn,
                t_ns,
                bytes: self.bytes.load(Ordering::Relaxed),
                info,
            };
            self.samples.lock().unwrap().push(s);
        }
    }
}

/// Background thread that keeps sampling while the I/O loop is blocked.
struct Sampler {
    progress: Arc<Progress>,
    done: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

impl Sampler {
    fn start(progress: Arc<Progress>) -> io::Result<Sampler> {
        let done = Arc::new(AtomicBool::new(false));
        let (p, d) = (progress.clone(), done.clone());
        let handle = thread::Builder::new()
            .name(format!("tcpinfo-{}", progress.conn))
            .spawn(move || {
                while !d.load(Ordering::Acquire) && !sys::stop_requested() {
                    p.maybe_sample();
                    let now = sys::now_ns();
                    let next = p.next_ns.load(Ordering::Relaxed);
                    if next > now {
                        thread::park_timeout(Duration::from_nanos((next - now).min(100_000_000)));
                    }
                }
            })?;
        Ok(Sampler {
            progress,
            done,
            handle,
        })
    }

    /// Stops the thread, takes a last sample now and returns all samples.
    fn finish(self) -> Vec<Sample> {
        self.done.store(true, Ordering::Release);
        self.handle.thread().unpark();
        let _ = self.handle.join();
        self.progress.sample(sys::now_ns());
        std::mem::take(&mut *self.progress.samples.lock().unwrap())
    }
}

fn write_tcp_series(path: &std::path::Path, samples: &[Sample]) -> anyhow::Result<()> {
    fn u32s(samples: &[Sample], f: impl Fn(&Sample) -> u32) -> ArrayRef {
        Arc::new(UInt32Array::from_iter_values(samples.iter().map(f)))
    }
    fn u64s(samples: &[Sample], f: impl Fn(&Sample) -> u64) -> ArrayRef {
        Arc::new(UInt64Array::from_iter_values(samples.iter().map(f)))
    }
    fn opt_u64s(samples: &[Sample], end: usize, f: impl Fn(&Sample) -> u64) -> ArrayRef {
        Arc::new(UInt64Array::from_iter(
            samples.iter().map(|s| s.info.has(end).then(|| f(s))),
        ))
    }
    use tcpinfo::{END_BYTES_RETRANS, END_SNDBUF_LIMITED, END_SND_WND};
    let s = samples;
    output::write_series(
        path,
        vec![
            ("conn", u32s(s, |x| x.conn)),
            (
                "t_ns",
                Arc::new(Int64Array::from_iter_values(
                    s.iter().map(|x| x.t_ns as i64),
                )) as ArrayRef,
            ),
            ("bytes", u64s(s, |x| x.bytes)),
            ("state", u32s(s, |x| x.info.raw.state as u32)),
            ("ca_state", u32s(s, |x| x.info.raw.ca_state as u32)),
            ("cwnd", u32s(s, |x| x.info.raw.snd_cwnd)),
            ("cwnd_bytes", u64s(s, |x| x.info.cwnd_bytes())),
            ("ssthresh", u32s(s, |x| x.info.raw.snd_ssthresh)),
            ("snd_mss", u32s(s, |x| x.info.raw.snd_mss)),
            ("srtt_us", u32s(s, |x| x.info.raw.rtt)),
            ("rttvar_us", u32s(s, |x| x.info.raw.rttvar)),
            ("min_rtt_us", u32s(s, |x| x.info.raw.min_rtt)),
            ("rcv_rtt_us", u32s(s, |x| x.info.raw.rcv_rtt)),
            ("unacked", u32s(s, |x| x.info.raw.unacked)),
            ("lost", u32s(s, |x| x.info.raw.lost)),
            ("retrans", u32s(s, |x| x.info.raw.retrans)),
            ("total_retrans", u32s(s, |x| x.info.raw.total_retrans)),
            ("pacing_rate_Bps", u64s(s, |x| x.info.raw.pacing_rate)),
            ("delivery_rate_Bps", u64s(s, |x| x.info.raw.delivery_rate)),
            (
                "delivery_rate_app_limited",
                Arc::new(BooleanArray::from_iter(
                    s.iter().map(|x| Some(x.info.app_limited())),
                )) as ArrayRef,
            ),
            ("bytes_acked", u64s(s, |x| x.info.raw.bytes_acked)),
            ("bytes_received", u64s(s, |x| x.info.raw.bytes_received)),
            ("notsent_bytes", u32s(s, |x| x.info.raw.notsent_bytes)),
            (
                "busy_time_us",
                opt_u64s(s, END_SNDBUF_LIMITED, |x| x.info.raw.busy_time),
            ),
            (
                "rwnd_limited_us",
                opt_u64s(s, END_SNDBUF_LIMITED, |x| x.info.raw.rwnd_limited),
            ),
            (
                "sndbuf_limited_us",
                opt_u64s(s, END_SNDBUF_LIMITED, |x| x.info.raw.sndbuf_limited),
            ),
            (
                "bytes_retrans",
                opt_u64s(s, END_BYTES_RETRANS, |x| x.info.raw.bytes_retrans),
            ),
            (
                "snd_wnd",
                opt_u64s(s, END_SND_WND, |x| x.info.raw.snd_wnd as u64),
            ),
        ],
    )
}

// ---------------------------------------------------------------------------------------
// I/O helpers that time out every POLL to honour the stop flag

/// Writes some bytes; None if a stop was requested while blocked.
fn write_some(s: &mut Stream, buf: &[u8]) -> io::Result<Option<usize>> {
    loop {
        if sys::stop_requested() {
            return Ok(None);
        }
        match s.write(buf) {
            Ok(n) => return Ok(Some(n)),
            Err(e) if sys::is_retry(&e) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Writes all of `buf`; false if a stop was requested first.
fn write_all(s: &mut Stream, mut buf: &[u8]) -> io::Result<bool> {
    while !buf.is_empty() {
        match write_some(s, buf)? {
            None => return Ok(false),
            Some(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "connection closed",
                ))
            }
            Some(n) => buf = &buf[n..],
        }
    }
    Ok(true)
}

/// Reads some bytes (Some(0) = EOF); None if a stop was requested while blocked.
fn read_some(s: &mut Stream, buf: &mut [u8]) -> io::Result<Option<usize>> {
    loop {
        if sys::stop_requested() {
            return Ok(None);
        }
        match s.read(buf) {
            Ok(n) => return Ok(Some(n)),
            Err(e) if sys::is_retry(&e) => continue,
            Err(e) => return Err(e),
        }
    }
}

enum Filled {
    Full,
    /// EOF after this many bytes.
    Eof(usize),
    Stopped,
}

fn read_full(s: &mut Stream, buf: &mut [u8]) -> io::Result<Filled> {
    let mut got = 0;
    while got < buf.len() {
        match read_some(s, &mut buf[got..])? {
            None => return Ok(Filled::Stopped),
            Some(0) => return Ok(Filled::Eof(got)),
            Some(n) => got += n,
        }
    }
    Ok(Filled::Full)
}

/// Reads and discards until EOF; returns (bytes read, EOF time) or None if stopped.
fn drain_to_eof(
    s: &mut Stream,
    buf: &mut [u8],
    counter: Option<&Progress>,
) -> io::Result<Option<(u64, u64)>> {
    let mut total = 0u64;
    loop {
        match read_some(s, buf)? {
            None => return Ok(None),
            Some(0) => return Ok(Some((total, sys::now_ns()))),
            Some(n) => {
                total += n as u64;
                if let Some(c) = counter {
                    c.add(n);
                }
            }
        }
    }
}

fn prepare(stream: &TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(POLL))?;
    stream.set_write_timeout(Some(POLL))?;
    Ok(())
}


/// Sends bulk data until `limit` bytes or the `deadline`. Returns bytes sent and whether
/// it was interrupted by a stop request.
/// `total` is increased as bytes go out, so it is right even when an error is returned.
fn send_bulk(
    s: &mut Stream,
    buf: &[u8],
    limit: Option<u64>,
    deadline: Option<u64>,
    counter: &Progress,
    total: &mut u64,
) -> io::Result<(u64, bool)> {
    let mut sent = 0u64;
    loop {
        let want = match limit {
            Some(l) if sent >= l => break,
            Some(l) => (l - sent).min(buf.len() as u64) as usize,
            None => buf.len(),
        };
        if let Some(d) = deadline {
            if sys::now_ns() >= d {
                break;
            }
        }
        match write_some(s, &buf[..want])? {
            None => return Ok((sent, true)),
            Some(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "connection closed",
                ))
            }
            Some(n) => {
                sent += n as u64;
                *total += n as u64;
                counter.add(n);
            }
        }
    }
    Ok((sent, false))
}

// ---------------------------------------------------------------------------------------
// Client

pub fn client(a: TcpClientArgs) -> anyhow::Result<()> {
    if a.cc.as_deref() == Some("") {
        usage!("--cc must not be empty");
    }
    let header = match (a.objects, a.object_size) {
        (Some(count), Some(size)) => Header {
            mode: Mode::Objects,
            bytes: 0,
            duration_ns: 0,
            object_size: size,
            object_count: count,
        },
        _ => Header {
            mode: if a.direction == Direction::Upload {
                Mode::Upload
            } else {
                Mode::Download
            },
            bytes: a.bytes.unwrap_or(0),
            duration_ns: a.duration.unwrap_or(0),
            object_size: 0,
            object_count: 0,
        },
    };
    let params = json!({
        "connect": a.connect.to_string(),
        "cc": a.cc,
        "mode": header.mode.name(),
        "direction": if header.mode == Mode::Objects { Value::Null } else { json!(header.mode.name()) },
        "duration_ns": a.duration,
        "bytes": a.bytes,
        "objects": a.objects,
        "object_size": a.object_size,
        "tcp_info_interval_ns": a.tcp_info_interval,
        "mss": a.mss,
        "tls": a.tls,
        "connect_timeout_ns": a.connect_timeout,
        "summary": a.summary,
        "series": a.series,
    });

    let start_ns = sys::now_ns();
    let sock = Socket::new(
        Domain::for_address(a.connect),
        Type::STREAM,
        Some(Protocol::TCP),
    )
    .context("cannot create TCP socket")?;
    if let Some(cc) = &a.cc {
        sys::set_congestion(&sock, cc)?;
    }
    if let Some(mss) = a.mss {
        sys::set_mss(&sock, mss).with_context(|| format!("cannot set TCP_MAXSEG to {mss}"))?;
    }
    let connect_start_ns = sys::now_ns();
    sock.connect_timeout(&a.connect.into(), Duration::from_nanos(a.connect_timeout))
        .with_context(|| format!("cannot connect to {}", a.connect))?;
    let connected_ns = sys::now_ns();
    let tcp: TcpStream = sock.into();
    prepare(&tcp)?;
    let cc_name = sys::get_congestion(&tcp);
    let local = tcp.local_addr().ok().map(|x| x.to_string());

    let sampler = Sampler::start(Arc::new(Progress::new(&tcp, 0, a.tcp_info_interval)?))?;
    let mut tls_done_ns = None;
    let outcome = match open_stream(&tcp, a.tls) {
        Err(e) => Err(e),
        Ok(Err(Stopped)) => Ok(ClientTransfer {
            stopped: true,
            ..Default::default()
        }),
        Ok(Ok(mut stream)) => {
            if stream.is_tls() {
                tls_done_ns = Some(sys::now_ns());
            }
            run_client_transfer(&mut stream, &header, connected_ns, &sampler.progress)
        }
    };
    let samples = sampler.finish();
    let final_info = tcpinfo::read(&tcp).ok();
    drop(tcp);
    let closed_ns = sys::now_ns();
    let t = outcome?;

    let end_ns = t.eof_ns.unwrap_or(closed_ns);
    let sender_is_client = header.mode == Mode::Upload;
    let bytes = if sender_is_client {
        t.bytes_sent
    } else {
        t.bytes_received
    };
    let transfer_ns = end_ns.saturating_sub(connected_ns);
    let completion_ns = end_ns.saturating_sub(connect_start_ns);
    let stopped_by = if t.stopped {
        "signal"
    } else if header.mode == Mode::Objects {
        "objects"
    } else if header.duration_ns > 0 {
        "duration"
    } else {
        "bytes"
    };
    let complete = !t.stopped
        && t.eof_ns.is_some()
        && match header.mode {
            Mode::Objects => t.objects.len() as u64 == header.object_count,
            _ => header.bytes == 0 || bytes == header.bytes,
        };
    let objects_json: Vec<Value> = t
        .objects
        .iter()
        .enumerate()
        .map(|(i, o)| {
            json!({
                "index": i,
                "size": o.size,
                "request_ns": o.request_ns,
                "first_byte_ns": o.first_byte_ns,
                "complete_ns": o.complete_ns,
                "ttfb_s": secs(o.first_byte_ns - o.request_ns),
                "completion_s": secs(o.complete_ns - o.request_ns),
            })
        })
        .collect();
    let ttfb: Vec<f64> = t
        .objects
        .iter()
        .map(|o| (o.first_byte_ns - o.request_ns) as f64)
        .collect();
    let obj_completion: Vec<f64> = t
        .objects
        .iter()
        .map(|o| (o.complete_ns - o.request_ns) as f64)
        .collect();

    let mut results = json!({
        "mode": header.mode.name(),
        "sender": if sender_is_client { "client" } else { "server" },
        "local": local,
        "remote": a.connect.to_string(),
        "cc": cc_name,
        "complete": complete,
        "bytes": bytes,
        "bytes_sent": t.bytes_sent,
        "bytes_received": t.bytes_received,
        "connect_start_ns": connect_start_ns,
        "connected_ns": connected_ns,
        "first_byte_ns": t.first_byte_ns,
        "end_ns": end_ns,
        "connect_s": secs(connected_ns - connect_start_ns),
        "tls": a.tls,
        "tls_handshake_s": tls_done_ns.map(|t| secs(t - connected_ns)),
        "duration_s": secs(transfer_ns),
        "completion_s": if complete { json!(secs(completion_ns)) } else { Value::Null },
        "throughput_bps": bps(bytes, transfer_ns),
        "goodput_bps": bps(bytes, completion_ns),
        "retransmits": if sender_is_client { json!(final_info.map(|i| i.raw.total_retrans)) } else { Value::Null },
        "tcp_info": final_info.map(|i| i.to_json()),
        "samples": samples.len(),
    });
    if header.mode == Mode::Objects {
        results["objects"] = json!(objects_json);
        results["objects_completed"] = json!(t.objects.len());
        results["ttfb"] = stats::describe_json(&ttfb, 1e6, "ms");
        results["object_completion"] = stats::describe_json(&obj_completion, 1e6, "ms");
    }
    let summary = output::envelope(
        "tcp-client",
        params,
        start_ns,
        sys::now_ns(),
        stopped_by,
        results,
    );
    if let Some(p) = &a.series {
        write_tcp_series(p, &samples)?;
    }
    output::write_summary(&a.summary, &summary)?;
    if let Some(e) = t.error {
        bail!("{e}");
    }
    Ok(())
}

/// The client's byte stream over the connected socket (a duplicate of it, so the socket
/// stays readable for TCP_INFO): plain, or TLS after a handshake.
fn open_stream(tcp: &TcpStream, tls: bool) -> anyhow::Result<Result<Stream, Stopped>> {
    let dup = tcp.try_clone().context("cannot duplicate the socket")?;
    if tls {
        Stream::tls_client(dup).context("TLS handshake failed")
    } else {
        Ok(Ok(Stream::Plain(dup)))
    }
}

struct ObjectRecord {
    size: u64,
    request_ns: u64,
    first_byte_ns: u64,
    complete_ns: u64,
}

#[derive(Default)]
struct ClientTransfer {
    bytes_sent: u64,
    bytes_received: u64,
    first_byte_ns: Option<u64>,
    /// When the server's FIN arrived (end of the transfer).
    eof_ns: Option<u64>,
    stopped: bool,
    objects: Vec<ObjectRecord>,
    /// A failure after some data moved: the summary is still written, then exit 1.
    error: Option<String>,
}

fn run_client_transfer(
    s: &mut Stream,
    h: &Header,
    connected_ns: u64,
    counter: &Progress,
) -> anyhow::Result<ClientTransfer> {
    let mut t = ClientTransfer::default();
    let mut buf = vec![0u8; BUF_LEN];
    if !write_all(s, &h.encode()).context("cannot send request header")? {
        t.stopped = true;
        return Ok(t);
    }
    let r: io::Result<()> = (|| {
        match h.mode {
            Mode::Upload => {
                let limit = (h.bytes > 0).then_some(h.bytes);
                let deadline = (h.duration_ns > 0).then(|| connected_ns + h.duration_ns);
                let (_, stopped) = send_bulk(s, &buf, limit, deadline, counter, &mut t.bytes_sent)?;
                if stopped {
                    t.stopped = true;
                    return Ok(());
                }
                s.shutdown_write()?;
                // The server closes its side only after reading everything.
                match drain_to_eof(s, &mut buf, None)? {
                    None => t.stopped = true,
                    Some((n, at)) => {
                        t.bytes_received = n;
                        t.eof_ns = Some(at);
                    }
                }
            }
            Mode::Download => loop {
                match read_some(s, &mut buf)? {
                    None => {
                        t.stopped = true;
                        break;
                    }
                    Some(0) => {
                        t.eof_ns = Some(sys::now_ns());
                        // The server waits for our end (with TLS: a close_notify).
                        s.shutdown_write()?;
                        break;
                    }
                    Some(n) => {
                        if t.first_byte_ns.is_none() {
                            t.first_byte_ns = Some(sys::now_ns());
                        }
                        t.bytes_received += n as u64;
                        counter.add(n);
                    }
                }
            },
            Mode::Objects => {
                for i in 0..h.object_count {
                    let mut req = [0u8; proto::OBJECT_REQUEST_LEN];
                    proto::put_u64(&mut req, 0, h.object_size);
                    let request_ns = sys::now_ns();
                    if !write_all(s, &req)? {
                        t.stopped = true;
                        return Ok(());
                    }
                    t.bytes_sent += req.len() as u64;
                    let mut got = 0u64;
                    let mut first = 0u64;
                    while got < h.object_size {
                        let want = (h.object_size - got).min(BUF_LEN as u64) as usize;
                        match read_some(s, &mut buf[..want])? {
                            None => {
                                t.stopped = true;
                                return Ok(());
                            }
                            Some(0) => {
                                return Err(io::Error::new(
                                    io::ErrorKind::UnexpectedEof,
                                    format!("server closed the connection during object {i} after {got} bytes"),
                                ))
                            }
                            Some(n) => {
                                if got == 0 {
                                    first = sys::now_ns();
                                    t.first_byte_ns.get_or_insert(first);
                                }
                                got += n as u64;
                                t.bytes_received += n as u64;
                                counter.add(n);
                            }
                        }
                    }
                    t.objects.push(ObjectRecord {
                        size: h.object_size,
                        request_ns,
                        first_byte_ns: first,
                        complete_ns: sys::now_ns(),
                    });
                }
                s.shutdown_write()?;
                match drain_to_eof(s, &mut buf, None)? {
                    None => t.stopped = true,
                    Some((_, at)) => t.eof_ns = Some(at),
                }
            }
        }
        Ok(())
    })();
    if let Err(e) = r {
        if t.bytes_sent == 0 && t.bytes_received == 0 {
            return Err(e).context("transfer failed");
        }
        t.error = Some(format!("transfer failed: {e}"));
    }
    Ok(t)
}

// ---------------------------------------------------------------------------------------
// Server

pub fn server(a: TcpServerArgs) -> anyhow::Result<()> {
    if a.cc.as_deref() == Some("") {
        usage!("--cc must not be empty");
    }
    let params = json!({
        "bind": a.bind.to_string(),
        "cc": a.cc,
        "tcp_info_interval_ns": a.tcp_info_interval,
        "once": a.once,
        "tls": a.tls,
        "duration_ns": a.duration,
        "summary": a.summary,
        "series": a.series,
    });
    let sock = Socket::new(
        Domain::for_address(a.bind),
        Type::STREAM,
        Some(Protocol::TCP),
    )
    .context("cannot create TCP socket")?;
    sock.set_reuse_address(true)?;
    if let Some(cc) = &a.cc {
        // Accepted sockets inherit the listener's congestion control.
        sys::set_congestion(&sock, cc)?;
    }
    sock.bind(&a.bind.into())
        .with_context(|| format!("cannot bind {}", a.bind))?;
    sock.listen(1024).context("listen failed")?;
    sock.set_read_timeout(Some(POLL))?; // makes accept() time out
    let listener: TcpListener = sock.into();
    let tls = match a.tls {
        true => Some(Arc::new(crate::tls::server_config()?)),
        false => None,
    };
    let port = listener.local_addr()?.port();
    let start_ns = sys::now_ns();
    let deadline = a.duration.map(|d| start_ns + d);
    output::announce_ready(port);

    let mut handles: Vec<JoinHandle<ConnOutcome>> = Vec::new();
    let mut next_conn = 0u32;
    let past_deadline = || deadline.is_some_and(|d| sys::now_ns() >= d);
    let stopped_by = loop {
        if sys::stop_requested() {
            break "signal";
        }
        if past_deadline() {
            sys::request_stop();
            break "duration";
        }
        match listener.accept() {
            Ok((stream, peer)) => {
                let conn = next_conn;
                next_conn += 1;
                let interval = a.tcp_info_interval;
                let tls = tls.clone();
                let h = thread::Builder::new()
                    .name(format!("conn-{conn}"))
                    .spawn(move || serve_connection(stream, peer, conn, interval, tls))?;
                if a.once {
                    while !h.is_finished() {
                        if past_deadline() {
                            sys::request_stop();
                        }
                        thread::sleep(Duration::from_millis(5));
                    }
                    handles.push(h);
                    break if sys::stop_requested() {
                        "signal"
                    } else {
                        "once"
                    };
                }
                handles.push(h);
            }
            Err(e) if sys::is_retry(&e) => continue,
            Err(e) => return Err(e).context("accept failed"),
        }
    };
    drop(listener);

    let mut conns = Vec::new();
    let mut samples = Vec::new();
    let mut first_error = None;
    for h in handles {
        let o = h
            .join()
            .map_err(|_| anyhow::anyhow!("connection thread panicked"))?;
        if first_error.is_none() {
            first_error = o.error.clone();
        }
        conns.push(o.json);
        samples.extend(o.samples);
    }
    let total_recv: u64 = conns
        .iter()
        .filter_map(|c| c["bytes_received"].as_u64())
        .sum();
    let total_sent: u64 = conns.iter().filter_map(|c| c["bytes_sent"].as_u64()).sum();
    let results = json!({
        "port": port,
        "connections": conns,
        "bytes_received": total_recv,
        "bytes_sent": total_sent,
        "samples": samples.len(),
    });
    let summary = output::envelope(
        "tcp-server",
        params,
        start_ns,
        sys::now_ns(),
        stopped_by,
        results,
    );
    if let Some(p) = &a.series {
        write_tcp_series(p, &samples)?;
    }
    output::write_summary(&a.summary, &summary)?;
    if a.once {
        if let Some(e) = first_error {
            bail!("{e}");
        }
    }
    Ok(())
}

struct ConnOutcome {
    json: Value,
    samples: Vec<Sample>,
    error: Option<String>,
}

#[derive(Default)]
struct ServerTransfer {
    header: Option<Header>,
    header_ns: u64,
    bytes_sent: u64,
    bytes_received: u64,
    first_byte_ns: Option<u64>,
    last_byte_ns: Option<u64>,
    objects_served: u64,
    complete: bool,
    stopped: bool,
}

fn serve_connection(
    tcp: TcpStream,
    peer: SocketAddr,
    conn: u32,
    interval_ns: u64,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> ConnOutcome {
    let accepted_ns = sys::now_ns();
    let mut t = ServerTransfer::default();
    let mut sampler = None;
    let mut tls_done_ns = None;
    let r = (|| -> anyhow::Result<()> {
        prepare(&tcp)?;
        let s = sampler.insert(Sampler::start(Arc::new(Progress::new(
            &tcp,
            conn,
            interval_ns,
        )?))?);
        // A duplicate of the socket, so `tcp` stays readable for TCP_INFO.
        let dup = tcp.try_clone()?;
        let mut stream = match tls {
            None => Stream::Plain(dup),
            Some(cfg) => match Stream::tls_server(dup, cfg).context("TLS handshake failed")? {
                Ok(s) => {
                    tls_done_ns = Some(sys::now_ns());
                    s
                }
                Err(Stopped) => {
                    t.stopped = true;
                    return Ok(());
                }
            },
        };
        serve_transfer(&mut stream, &mut t, &s.progress)
    })();
    let samples = sampler.map(|s| s.finish()).unwrap_or_default();
    let final_info = tcpinfo::read(&tcp).ok();
    let cc = sys::get_congestion(&tcp);
    drop(tcp);
    let end_ns = sys::now_ns();
    let error = r
        .err()
        .map(|e| format!("connection {conn} from {peer}: {e:#}"));

    let mode = t.header.map(|h| h.mode);
    let sender_is_server = matches!(mode, Some(Mode::Download) | Some(Mode::Objects));
    let bytes = if sender_is_server {
        t.bytes_sent
    } else {
        t.bytes_received
    };
    let (transfer_start, transfer_end) = match mode {
        Some(Mode::Upload) => (
            t.first_byte_ns.unwrap_or(t.header_ns),
            t.last_byte_ns.unwrap_or(end_ns),
        ),
        _ => (t.header_ns, end_ns),
    };
    let transfer_ns = transfer_end.saturating_sub(transfer_start);
    let json = json!({
        "conn": conn,
        "peer": peer.to_string(),
        "cc": cc,
        "tls": tls_done_ns.is_some(),
        "mode": mode.map(|m| m.name()),
        "request": t.header.map(|h| json!({
            "bytes": h.bytes, "duration_ns": h.duration_ns,
            "object_size": h.object_size, "object_count": h.object_count,
        })),
        "sender": match mode { None => Value::Null, Some(_) if sender_is_server => json!("server"), Some(_) => json!("client") },
        "complete": t.complete,
        "stopped": t.stopped,
        "error": error,
        "bytes": bytes,
        "bytes_sent": t.bytes_sent,
        "bytes_received": t.bytes_received,
        "objects_served": t.objects_served,
        "accepted_ns": accepted_ns,
        "tls_handshake_s": tls_done_ns.map(|d| secs(d - accepted_ns)),
        "header_ns": t.header_ns,
        "first_byte_ns": t.first_byte_ns,
        "last_byte_ns": t.last_byte_ns,
        "end_ns": end_ns,
        "duration_s": secs(transfer_ns),
        "throughput_bps": bps(bytes, transfer_ns),
        "retransmits": if sender_is_server { json!(final_info.map(|i| i.raw.total_retrans)) } else { Value::Null },
        "tcp_info": final_info.map(|i| i.to_json()),
        "samples": samples.len(),
    });
    ConnOutcome {
        json,
        samples,
        error,
    }
}

fn serve_transfer(
    s: &mut Stream,
    t: &mut ServerTransfer,
    counter: &Progress,
) -> anyhow::Result<()> {
    let mut hdr = [0u8; proto::HEADER_LEN];
    match read_full(s, &mut hdr)? {
        Filled::Full => {}
        Filled::Stopped => {
            t.stopped = true;
            return Ok(());
        }
        Filled::Eof(n) => bail!(
            "client closed the connection after {n} of {} header bytes",
            proto::HEADER_LEN
        ),
    }
    let h = Header::decode(&hdr).map_err(|e| anyhow::anyhow!("bad request header: {e}"))?;
    t.header = Some(h);
    t.header_ns = sys::now_ns();
    let mut buf = vec![0u8; BUF_LEN];
    match h.mode {
        Mode::Upload => {
            loop {
                match read_some(s, &mut buf)? {
                    None => {
                        t.stopped = true;
                        return Ok(());
                    }
                    Some(0) => break,
                    Some(n) => {
                        let now = sys::now_ns();
                        t.first_byte_ns.get_or_insert(now);
                        t.last_byte_ns = Some(now);
                        t.bytes_received += n as u64;
                        counter.add(n);
                    }
                }
            }
            // Everything is read: our FIN tells the client all bytes were delivered.
            s.shutdown_write()?;
            t.complete = h.bytes == 0 || t.bytes_received == h.bytes;
        }
        Mode::Download => {
            if h.bytes == 0 && h.duration_ns == 0 {
                bail!("download request has neither bytes nor duration");
            }
            let limit = (h.bytes > 0).then_some(h.bytes);
            let deadline = (h.duration_ns > 0).then(|| t.header_ns + h.duration_ns);
            t.first_byte_ns = Some(t.header_ns);
            let (_, stopped) = send_bulk(s, &buf, limit, deadline, counter, &mut t.bytes_sent)?;
            t.last_byte_ns = Some(sys::now_ns());
            if stopped {
                t.stopped = true;
                return Ok(());
            }
            s.shutdown_write()?;
            // Wait for the client to close after it has read everything.
            match drain_to_eof(s, &mut buf, None)? {
                None => t.stopped = true,
                Some(_) => t.complete = true,
            }
        }
        Mode::Objects => loop {
            let mut req = [0u8; proto::OBJECT_REQUEST_LEN];
            match read_full(s, &mut req)? {
                Filled::Full => {}
                Filled::Stopped => {
                    t.stopped = true;
                    return Ok(());
                }
                Filled::Eof(0) => {
                    s.shutdown_write()?;
                    t.complete = h.object_count == 0 || t.objects_served == h.object_count;
                    break;
                }
                Filled::Eof(n) => {
                    bail!("client closed the connection inside an object request ({n} bytes)")
                }
            }
            t.bytes_received += req.len() as u64;
            let size = proto::get_u64(&req, 0);
            let now = sys::now_ns();
            t.first_byte_ns.get_or_insert(now);
            let (_, stopped) = send_bulk(s, &buf, Some(size), None, counter, &mut t.bytes_sent)?;
            t.last_byte_ns = Some(sys::now_ns());
            if stopped {
                t.stopped = true;
                return Ok(());
            }
            t.objects_served += 1;
        },
    }
    Ok(())
}
