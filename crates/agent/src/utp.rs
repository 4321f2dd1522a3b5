//! utp-server and utp-client: bulk transfers over uTP with BitTorrent's reference libutp
//! (the `libutp-rs2` crate compiles its C++ source and drives it from tokio).
//!
//! The client sends the TCP request (`wire::request`, `"TLAB"`, upload or download) on
//! the uTP stream. libutp-rs2 has no shutdown, so a transfer of N bytes ends by its
//! length: a downloading client reads exactly N bytes; an uploading client writes N and
//! waits for the server's reply, the count it read (u64 BE). A transfer for a duration
//! ends when the client closes its socket (libutp's FIN; the other end reads EOF).
//!
//! Per-flow parameters (`--cc-param target=MS`, `--cc-param gain=BYTES`,
//! `--datagram-size BYTES`) go to libutp's context before any socket exists, through the
//! patched copy of libutp-rs2 in crates/vendor (its README says what changed); each end's
//! summary reports the values libutp itself returns for them (`libutp`).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_proto::wire::request::{Mode, Request, Transport};
use anyhow::{bail, Context};
use arrow_array::{ArrayRef, Float64Array, Int64Array, UInt32Array, UInt64Array};
use libutp_rs2::{options, CcState, UtpCcProbe, UtpOpts, UtpUdpContext, UtpUdpStream};
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::output::ServedTransfer;
use crate::{output, sys, usage, Direction, UtpClientArgs, UtpServerArgs};

const CHUNK: usize = 16 * 1024;
/// How often the loops look at the stop flag and deadlines.
const POLL: Duration = Duration::from_millis(100);
/// How long a closing end keeps libutp running so its FIN goes out.
const LINGER: Duration = Duration::from_millis(300);

/// Payload bytes moved so far, the connection's libutp socket (once there is one) and the
/// series rows sampled from them.
struct Progress {
    bytes: AtomicU64,
    probe: Mutex<Option<UtpCcProbe>>,
    rows: Mutex<Vec<Row>>,
}

/// One series row: the time, the payload bytes so far and libutp's congestion-control
/// state (None without a connection, or once it is closed).
struct Row {
    t_ns: i64,
    bytes: u64,
    cc: Option<CcState>,
}

impl Progress {
    fn new() -> Arc<Progress> {
        Arc::new(Progress {
            bytes: AtomicU64::new(0),
            probe: Mutex::new(None),
            rows: Mutex::new(Vec::new()),
        })
    }

    /// From now on the rows carry `stream`'s congestion-control state.
    fn watch(&self, stream: &UtpUdpStream) {
        *self.probe.lock().unwrap() = Some(stream.cc_probe());
    }

    fn add(&self, n: usize) {
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
    }

    fn get(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    fn sample(&self) {
        let cc = self.probe.lock().unwrap().as_ref().and_then(|p| p.get());
        let row = Row {
            t_ns: sys::now_ns() as i64,
            bytes: self.get(),
            cc,
        };
        self.rows.lock().unwrap().push(row);
    }

    /// Samples every `interval_ns` on a grid of absolute deadlines until the task is dropped.
    fn spawn_sampler(self: &Arc<Self>, interval_ns: u64) -> tokio::task::JoinHandle<()> {
        let me = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_nanos(interval_ns));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tick.tick().await;
                me.sample();
            }
        })
    }

    /// The series (docs/agent.md, "uTP"): libutp's state under the names the QUIC and TCP
    /// series use for the same things (`cwnd_bytes`, `bytes_in_flight`, `ssthresh_bytes`,
    /// `srtt_us`, `rttvar_us`) and LEDBAT's view as controller diagnostics, as the QUIC LEDBAT's
    /// (`cc_queueing_delay_ms`, `cc_base_delay_ms`, `cc_slow_start`), plus `cc_target_ms`.
    fn write_series(&self, path: &std::path::Path) -> anyhow::Result<usize> {
        let rows = self.rows.lock().unwrap();
        let n = rows.len();
        let u64s = |f: fn(&CcState) -> u64| -> ArrayRef {
            Arc::new(UInt64Array::from_iter(rows.iter().map(|r| r.cc.as_ref().map(f))))
        };
        let f64s = |f: fn(&CcState) -> Option<f64>| -> ArrayRef {
            Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.cc.as_ref().and_then(f))))
        };
        output::write_series(
            path,
            vec![
                ("conn", Arc::new(UInt32Array::from(vec![0u32; n])) as ArrayRef),
                (
                    "t_ns",
                    Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.t_ns))),
                ),
                (
                    "bytes",
                    Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.bytes))),
                ),
                ("cwnd_bytes", u64s(|c| c.max_window.into())),
                ("bytes_in_flight", u64s(|c| c.cur_window.into())),
                ("ssthresh_bytes", u64s(|c| c.ssthresh.into())),
                ("peer_rwnd_bytes", u64s(|c| c.max_window_user.into())),
                // libutp keeps its RTT estimate in whole milliseconds.
                ("srtt_us", u64s(|c| u64::from(c.rtt_ms) * 1000)),
                ("rttvar_us", u64s(|c| u64::from(c.rtt_var_ms) * 1000)),
                ("rto_us", u64s(|c| u64::from(c.retransmit_timeout_ms) * 1000)),
                ("cc_slow_start", f64s(|c| Some(if c.slow_start { 1.0 } else { 0.0 }))),
                ("cc_target_ms", f64s(|c| Some(f64::from(c.target_delay_us) / 1e3))),
                (
                    "cc_queueing_delay_ms",
                    f64s(|c| c.our_delay_us.map(|d| f64::from(d) / 1e3)),
                ),
                (
                    "cc_base_delay_ms",
                    f64s(|c| c.our_delay_base_us.map(|d| f64::from(d) / 1e3)),
                ),
            ],
        )?;
        Ok(n)
    }
}

/// libutp's per-flow parameters (None: libutp's default).
#[derive(Serialize, Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Params {
    /// LEDBAT target delay, ms (UTP_TARGET_DELAY; default 100).
    pub target_ms: Option<u32>,
    /// Window growth per RTT at zero queueing delay, bytes (default 3000).
    pub gain: Option<u32>,
    /// The UDP MTU libutp is told: its largest datagram, uTP header included (default 1402).
    pub datagram_size: Option<u16>,
}

/// Ranges of the parameters (the flow kind checks the same: utp_agent/parameters.py).
pub const TARGET_MS: (u32, u32) = (1, 10_000);
pub const GAIN: (u32, u32) = (1, 1_000_000);
/// libutp's MTU search never goes below 576; 1472 fills a 1500-byte IPv4 packet.
pub const DATAGRAM_SIZE: (u64, u64) = (576, 1472);

impl Params {
    pub fn parse(cc_params: &[(String, String)], datagram_size: Option<u64>) -> anyhow::Result<Params> {
        let mut p = Params::default();
        for (key, value) in cc_params {
            let (slot, (lo, hi), unit) = match key.as_str() {
                "target" => (&mut p.target_ms, TARGET_MS, "ms"),
                "gain" => (&mut p.gain, GAIN, "bytes"),
                other => usage!("--cc-param {other}: libutp takes target and gain"),
            };
            match value.parse::<u32>() {
                Ok(v) if (lo..=hi).contains(&v) => *slot = Some(v),
                _ => usage!("--cc-param {key}={value}: libutp's {key} is {lo} to {hi} {unit}"),
            }
        }
        if let Some(d) = datagram_size {
            let (lo, hi) = DATAGRAM_SIZE;
            if !(lo..=hi).contains(&d) {
                usage!("--datagram-size {d}: libutp's datagram size is {lo} to {hi} bytes");
            }
            p.datagram_size = Some(d as u16);
        }
        Ok(p)
    }

    pub fn opts(&self) -> UtpOpts {
        UtpOpts {
            target_delay_us: self.target_ms.map(|ms| ms as i32 * 1000),
            max_cwnd_increase_bytes_per_rtt: self.gain.map(|g| g as i32),
            udp_mtu: self.datagram_size,
            ..Default::default()
        }
    }
}

/// What libutp reports for the parameters: its context's options and the connection's own
/// target (a socket copies the context's target when it is created).
#[derive(Serialize, Default, Debug)]
pub struct Applied {
    context_target_delay_us: i32,
    gain: i32,
    socket_target_delay_us: Option<i32>,
    datagram_size: Option<u16>,
}

fn applied(ctx: &UtpUdpContext, stream: Option<&UtpUdpStream>, p: &Params) -> Applied {
    Applied {
        context_target_delay_us: ctx.get_option(options::TARGET_DELAY),
        gain: ctx.get_option(options::MAX_CWND_INCREASE_BYTES_PER_RTT),
        socket_target_delay_us: stream.map(|s| s.target_delay_us()),
        datagram_size: p.datagram_size,
    }
}

/// A libutp context on a UDP socket bound to `addr`. libutp sends through tokio's
/// `try_send_to`, which fails while tokio has not yet seen the socket writable: the
/// socket's readiness is awaited first, or the first SYN (or SYN-ACK) would be dropped
/// and the connection would wait for libutp's 3 s retransmission.
async fn context(addr: SocketAddr, params: &Params) -> anyhow::Result<Arc<UtpUdpContext>> {
    let sock = tokio::net::UdpSocket::bind(addr)
        .await
        .with_context(|| format!("cannot bind a UDP socket to {addr}"))?;
    sock.writable().await.context("the UDP socket never became writable")?;
    UtpUdpContext::new(sock, params.opts()).context("cannot start libutp")
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the tokio runtime")
}

/// Waits for `fut`, giving up at the stop flag or at `deadline_ns` (None: no deadline).
async fn until_stopped<F: std::future::Future>(fut: F, deadline_ns: Option<u64>) -> Option<F::Output> {
    tokio::pin!(fut);
    loop {
        if sys::stop_requested() || deadline_ns.is_some_and(|d| sys::now_ns() >= d) {
            return None;
        }
        let wait = match deadline_ns {
            Some(d) => POLL.min(Duration::from_nanos(d.saturating_sub(sys::now_ns()))),
            None => POLL,
        };
        if let Ok(v) = tokio::time::timeout(wait, &mut fut).await {
            return Some(v);
        }
    }
}

/// Why a transfer loop ended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    /// Every requested byte moved.
    Done,
    /// The peer closed the connection (EOF).
    PeerClosed,
    /// The transfer's deadline passed.
    Deadline,
    /// SIGTERM/SIGINT.
    Signal,
}

async fn send(
    stream: &mut UtpUdpStream,
    bytes: Option<u64>,
    deadline_ns: Option<u64>,
    p: &Progress,
) -> anyhow::Result<End> {
    let zeros = [0u8; CHUNK];
    let mut probe = [0u8; 1];
    loop {
        let left = bytes.map(|b| b - p.get());
        if left == Some(0) {
            return Ok(End::Done);
        }
        // libutp goes on taking writes after the peer's FIN: only a read shows the close
        // (the receiving end sends nothing else, so a ready read is the EOF).
        if let Ok(r) = tokio::time::timeout(Duration::ZERO, stream.read(&mut probe)).await {
            match r {
                Ok(0) => return Ok(End::PeerClosed),
                Ok(_) => bail!("the receiving end sent data during the transfer"),
                Err(e) => return Err(e).context("uTP read failed"),
            }
        }
        let n = left.map_or(CHUNK, |l| l.min(CHUNK as u64) as usize);
        match until_stopped(stream.write(&zeros[..n]), deadline_ns).await {
            None if sys::stop_requested() => return Ok(End::Signal),
            None => return Ok(End::Deadline),
            Some(Ok(0)) => return Ok(End::PeerClosed),
            Some(Ok(w)) => p.add(w),
            Some(Err(e)) => return Err(e).context("uTP write failed"),
        }
    }
}

async fn receive(
    stream: &mut UtpUdpStream,
    bytes: Option<u64>,
    deadline_ns: Option<u64>,
    p: &Progress,
    first_byte_ns: &mut Option<u64>,
) -> anyhow::Result<End> {
    let mut buf = vec![0u8; CHUNK];
    loop {
        let left = bytes.map(|b| b - p.get());
        if left == Some(0) {
            return Ok(End::Done);
        }
        let n = left.map_or(CHUNK, |l| l.min(CHUNK as u64) as usize);
        match until_stopped(stream.read(&mut buf[..n]), deadline_ns).await {
            None if sys::stop_requested() => return Ok(End::Signal),
            None => return Ok(End::Deadline),
            Some(Ok(0)) => return Ok(End::PeerClosed),
            Some(Ok(r)) => {
                first_byte_ns.get_or_insert_with(sys::now_ns);
                p.add(r)
            }
            Some(Err(e)) => return Err(e).context("uTP read failed"),
        }
    }
}

fn end_name(end: End, bytes_mode: bool) -> &'static str {
    match end {
        End::Done if bytes_mode => "bytes",
        End::Done | End::Deadline => "duration",
        End::PeerClosed => "once",
        End::Signal => "signal",
    }
}

// --- client -----------------------------------------------------------------------------

#[derive(Serialize)]
struct ClientParams {
    connect: String,
    direction: &'static str,
    bytes: Option<u64>,
    duration_ns: Option<u64>,
    connect_timeout_ns: u64,
    sample_interval_ns: u64,
    libutp: Params,
}

#[derive(Serialize, Default)]
struct Transfer {
    mode: &'static str,
    sender: &'static str,
    implementation: &'static str,
    workload: &'static str,
    remote: String,
    complete: bool,
    error: Option<String>,
    bytes: u64,
    bytes_sent: u64,
    bytes_received: u64,
    connect_start_ns: Option<u64>,
    connected_ns: Option<u64>,
    first_byte_ns: Option<u64>,
    end_ns: Option<u64>,
    connect_s: Option<f64>,
    duration_s: Option<f64>,
    completion_s: Option<f64>,
    throughput_bps: Option<f64>,
    goodput_bps: Option<f64>,
    samples: usize,
    /// The parameters as libutp reports them.
    libutp: Option<Applied>,
}

impl Transfer {
    fn finish(&mut self) {
        let (Some(start), Some(end)) = (self.connect_start_ns, self.end_ns) else {
            return;
        };
        if let Some(connected) = self.connected_ns {
            self.connect_s = Some(output::secs(connected - start));
            self.duration_s = Some(output::secs(end.saturating_sub(connected)));
            self.throughput_bps = output::bps(self.bytes, end.saturating_sub(connected));
        }
        self.goodput_bps = output::bps(self.bytes, end.saturating_sub(start));
        if self.complete {
            self.completion_s = Some(output::secs(end.saturating_sub(start)));
        }
    }
}

pub fn client(a: UtpClientArgs) -> anyhow::Result<()> {
    if a.bytes.is_none() == a.duration.is_none() {
        usage!("give exactly one of --bytes and --duration");
    }
    let libutp = Params::parse(&a.libutp.cc_param, a.libutp.datagram_size)?;
    let params = ClientParams {
        connect: a.connect.to_string(),
        direction: if a.direction == Direction::Upload {
            "upload"
        } else {
            "download"
        },
        bytes: a.bytes,
        duration_ns: a.duration,
        connect_timeout_ns: a.connect_timeout,
        sample_interval_ns: a.libutp.sample_interval,
        libutp,
    };
    let start_ns = sys::now_ns();
    let p = Progress::new();
    let mut t = Transfer {
        mode: params.direction,
        sender: if a.direction == Direction::Upload {
            "client"
        } else {
            "server"
        },
        implementation: "libutp",
        workload: if a.bytes.is_some() { "download" } else { "bulk" },
        remote: a.connect.to_string(),
        ..Default::default()
    };
    let outcome = runtime()?.block_on(run_client(&a, &libutp, &p, &mut t));
    t.end_ns.get_or_insert_with(sys::now_ns);
    p.sample();
    let stopped_by = match &outcome {
        // A transfer for a duration ends when either end's time is up: the server's
        // close at the request's duration is that end.
        Ok(End::PeerClosed) if a.bytes.is_none() => "duration",
        Ok(end) => end_name(*end, a.bytes.is_some()),
        Err(e) => {
            t.error = Some(format!("{e:#}"));
            "error"
        }
    };
    t.bytes = p.get();
    if a.direction == Direction::Upload {
        t.bytes_sent = t.bytes;
    } else {
        t.bytes_received = t.bytes;
    }
    if let Some(path) = &a.libutp.series {
        t.samples = p.write_series(path)?;
    }
    t.finish();
    let summary = output::envelope("utp-client", &params, start_ns, sys::now_ns(), stopped_by, &t);
    output::write_summary(&a.libutp.summary, &summary)?;
    outcome.map(|_| ())
}

async fn run_client(a: &UtpClientArgs, params: &Params, p: &Arc<Progress>, t: &mut Transfer) -> anyhow::Result<End> {
    let ctx = context(crate::udp::unspecified_for(&a.connect), params).await?;
    let mut request = Request::new(if a.direction == Direction::Upload {
        Mode::Upload
    } else {
        Mode::Download
    });
    request.bytes = a.bytes.unwrap_or(0);
    request.duration_ns = a.duration.unwrap_or(0);
    let header = request
        .encode(Transport::Tcp)
        .map_err(|e| anyhow::anyhow!("cannot encode the request: {e}"))?;

    t.connect_start_ns = Some(sys::now_ns());
    let mut stream = ctx.connect(a.connect).await.context("utp_connect failed")?;
    t.libutp = Some(applied(&ctx, Some(&stream), params));
    p.watch(&stream);
    // libutp writes once the connection is set up: the request's write is the handshake.
    let connect_deadline = t.connect_start_ns.unwrap() + a.connect_timeout;
    match until_stopped(stream.write_all(&header), Some(connect_deadline)).await {
        None if sys::stop_requested() => return Ok(End::Signal),
        None => bail!(
            "no uTP connection to {} within {} s",
            a.connect,
            output::secs(a.connect_timeout)
        ),
        Some(r) => r.context("cannot send the request")?,
    }
    let connected = sys::now_ns();
    t.connected_ns = Some(connected);
    let deadline = a.duration.map(|d| connected + d);
    let sampler = p.spawn_sampler(a.libutp.sample_interval);
    let end = match a.direction {
        Direction::Download => receive(&mut stream, a.bytes, deadline, p, &mut t.first_byte_ns).await?,
        Direction::Upload => {
            let end = send(&mut stream, a.bytes, deadline, p).await?;
            if end == End::Done {
                // The server answers with the count it read: delivery, not just our writes.
                let mut reply = [0u8; 8];
                match until_stopped(stream.read_exact(&mut reply), None).await {
                    None => End::Signal,
                    Some(r) => {
                        r.context("the server closed before confirming the upload")?;
                        let got = u64::from_be_bytes(reply);
                        if got != p.get() {
                            bail!("the server read {got} bytes of {}", p.get());
                        }
                        End::Done
                    }
                }
            } else {
                end
            }
        }
    };
    sampler.abort();
    t.end_ns = Some(sys::now_ns());
    if let (Some(bytes), End::PeerClosed) = (a.bytes, end) {
        bail!("the server closed the connection after {} of {bytes} bytes", p.get());
    }
    t.complete = a.bytes.is_some() && end == End::Done;
    drop(stream);
    tokio::time::sleep(LINGER).await;
    Ok(end)
}

// --- server -----------------------------------------------------------------------------

#[derive(Serialize)]
struct ServerParams {
    bind: String,
    duration_ns: Option<u64>,
    sample_interval_ns: u64,
    libutp: Params,
}

#[derive(Serialize)]
struct ServerResults {
    port: u16,
    implementation: &'static str,
    bytes_sent: u64,
    bytes_received: u64,
    samples: usize,
    connections: Vec<Connection>,
}

#[derive(Serialize, Default)]
struct Connection {
    conn: u32,
    request: Option<RequestSummary>,
    #[serde(flatten)]
    transfer: ServedTransfer,
    accepted_ns: u64,
    header_ns: Option<u64>,
    first_byte_ns: Option<u64>,
    end_ns: u64,
    duration_s: Option<f64>,
    throughput_bps: Option<f64>,
    /// The parameters as libutp reports them.
    libutp: Option<Applied>,
}

#[derive(Serialize)]
struct RequestSummary {
    bytes: u64,
    duration_ns: u64,
}

pub fn server(a: UtpServerArgs) -> anyhow::Result<()> {
    if a.bind.port() == 0 {
        usage!("utp-server needs an explicit port in --bind (libutp-rs2 does not report an ephemeral one)");
    }
    let libutp = Params::parse(&a.libutp.cc_param, a.libutp.datagram_size)?;
    let params = ServerParams {
        bind: a.bind.to_string(),
        duration_ns: a.duration,
        sample_interval_ns: a.libutp.sample_interval,
        libutp,
    };
    let start_ns = sys::now_ns();
    let p = Progress::new();
    let mut conns = Vec::new();
    let outcome = runtime()?.block_on(run_server(&a, &libutp, start_ns, &p, &mut conns));
    p.sample();
    let samples = match &a.libutp.series {
        Some(path) => p.write_series(path)?,
        None => 0,
    };
    let (sent, received) = conns.iter().fold((0, 0), |(s, r), c: &Connection| {
        (s + c.transfer.bytes_sent, r + c.transfer.bytes_received)
    });
    let results = ServerResults {
        port: a.bind.port(),
        implementation: "libutp",
        bytes_sent: sent,
        bytes_received: received,
        samples,
        connections: conns,
    };
    let stopped_by = match &outcome {
        Ok(s) => s,
        Err(_) => "error",
    };
    let summary = output::envelope("utp-server", &params, start_ns, sys::now_ns(), stopped_by, &results);
    output::write_summary(&a.libutp.summary, &summary)?;
    outcome.map(|_| ())
}

async fn run_server(
    a: &UtpServerArgs,
    params: &Params,
    start_ns: u64,
    p: &Arc<Progress>,
    conns: &mut Vec<Connection>,
) -> anyhow::Result<&'static str> {
    let ctx = context(a.bind, params).await?;
    output::announce_ready(a.bind.port());
    let deadline = a.duration.map(|d| start_ns + d);
    // One connection (the runner's server serves one flow).
    let Some(accepted) = until_stopped(ctx.accept(), deadline).await else {
        return Ok(if sys::stop_requested() { "signal" } else { "duration" });
    };
    let mut stream = accepted.context("accepting a uTP connection")?;
    let mut c = Connection {
        accepted_ns: sys::now_ns(),
        libutp: Some(applied(&ctx, Some(&stream), params)),
        ..Default::default()
    };
    p.watch(&stream);
    let sampler = p.spawn_sampler(a.libutp.sample_interval);
    let result = serve(&mut stream, &mut c, deadline, p).await;
    sampler.abort();
    c.end_ns = sys::now_ns();
    let moved = p.get();
    c.transfer.bytes = moved;
    if c.transfer.mode == Some("upload") {
        c.transfer.bytes_received = moved;
    } else {
        c.transfer.bytes_sent = moved;
    }
    let span = c.end_ns - c.header_ns.unwrap_or(c.accepted_ns);
    c.duration_s = Some(output::secs(span));
    c.throughput_bps = output::bps(moved, span);
    let stopped_by = match result {
        Ok(End::Signal) => {
            c.transfer.stopped = true;
            "signal"
        }
        Ok(End::Deadline) => {
            c.transfer.stopped = deadline.is_some_and(|d| sys::now_ns() >= d);
            "duration"
        }
        Ok(_) => "once",
        Err(e) => {
            c.transfer.error = Some(format!("{e:#}"));
            conns.push(c);
            return Err(e);
        }
    };
    conns.push(c);
    drop(stream);
    tokio::time::sleep(LINGER).await;
    Ok(stopped_by)
}

async fn serve(
    stream: &mut UtpUdpStream,
    c: &mut Connection,
    deadline: Option<u64>,
    p: &Progress,
) -> anyhow::Result<End> {
    let mut header = vec![0u8; Transport::Tcp.request_len()];
    match until_stopped(stream.read_exact(&mut header), deadline).await {
        None if sys::stop_requested() => return Ok(End::Signal),
        None => return Ok(End::Deadline),
        Some(r) => r.context("the client closed before its request")?,
    };
    c.header_ns = Some(sys::now_ns());
    let request = Request::decode(Transport::Tcp, &header).map_err(|e| anyhow::anyhow!("bad request: {e}"))?;
    c.request = Some(RequestSummary {
        bytes: request.bytes,
        duration_ns: request.duration_ns,
    });
    let bytes = (request.bytes > 0).then_some(request.bytes);
    // A transfer for a duration ends at the request's duration from its arrival: what
    // the sender had not delivered by then is not counted (the sender's clock started
    // half a round trip earlier, at its connection).
    let own = (request.duration_ns > 0).then(|| c.header_ns.unwrap() + request.duration_ns);
    let deadline = match (deadline, own) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    match request.mode {
        Mode::Download => {
            c.transfer.mode = Some("download");
            c.transfer.sender = Some("server");
            if bytes.is_none() && request.duration_ns == 0 {
                bail!("a download request needs bytes or duration_ns");
            }
            // A duration transfer ends when the client closes; the request's duration
            // (plus the server's own stop) only bounds it.
            let end = send(stream, bytes, deadline, p).await?;
            c.first_byte_ns = c.header_ns;
            if end == End::Done {
                // Wait for the client to close: it has read every byte.
                let mut one = [0u8; 1];
                return Ok(match until_stopped(stream.read(&mut one), deadline).await {
                    None if sys::stop_requested() => End::Signal,
                    None => End::Deadline,
                    Some(_) => {
                        c.transfer.complete = true;
                        End::Done
                    }
                });
            }
            Ok(end)
        }
        Mode::Upload => {
            c.transfer.mode = Some("upload");
            c.transfer.sender = Some("client");
            let end = receive(stream, bytes, deadline, p, &mut c.first_byte_ns).await?;
            if end == End::Done {
                stream
                    .write_all(&p.get().to_be_bytes())
                    .await
                    .context("cannot confirm the upload")?;
                c.transfer.complete = true;
                let mut one = [0u8; 1];
                let _ = until_stopped(stream.read(&mut one), deadline).await;
            }
            Ok(end)
        }
        other => bail!("utp-server serves upload and download, not {}", other.name()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::task::{Context as TaskContext, Poll};

    use libutp_rs2::{Transport, UtpContext};
    use tokio::net::UdpSocket;

    /// A UDP socket that remembers the largest datagram libutp sent through it.
    struct Recorder {
        sock: UdpSocket,
        largest: Arc<AtomicUsize>,
    }

    impl Transport for Recorder {
        fn poll_recv_from(
            &self,
            cx: &mut TaskContext<'_>,
            buf: &mut [u8],
        ) -> Poll<std::io::Result<(usize, SocketAddr)>> {
            Transport::poll_recv_from(&self.sock, cx, buf)
        }
        fn try_send_to(&self, buf: &[u8], target: SocketAddr) -> std::io::Result<usize> {
            self.largest.fetch_max(buf.len(), Ordering::Relaxed);
            self.sock.try_send_to(buf, target)
        }
        fn poll_send_ready(&self, cx: &mut TaskContext<'_>) -> Poll<std::io::Result<()>> {
            self.sock.poll_send_ready(cx)
        }
    }

    async fn endpoint(p: &Params) -> (Arc<UtpContext<Recorder>>, SocketAddr, Arc<AtomicUsize>) {
        let sock = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        sock.writable().await.unwrap();
        let addr = sock.local_addr().unwrap();
        let largest = Arc::new(AtomicUsize::new(0));
        let t = Recorder {
            sock,
            largest: largest.clone(),
        };
        (UtpContext::new(t, p.opts()).unwrap(), addr, largest)
    }

    /// What libutp reports and sends when a client uploads 200 kB to a server over
    /// loopback, both ends with `p`: (the accepted socket's target µs, the connecting
    /// socket's target µs, the client context's gain, the largest datagram the client sent,
    /// the client socket's congestion-control state after the transfer, and what its probe
    /// reads once the stream is dropped).
    fn transfer(p: Params) -> (i32, i32, i32, usize, Option<CcState>, Option<CcState>) {
        runtime().unwrap().block_on(async {
            let (server, server_addr, _) = endpoint(&p).await;
            let (client, _, largest) = endpoint(&p).await;
            let accept = tokio::spawn(async move {
                let mut s = server.accept().await.unwrap();
                let target = s.target_delay_us();
                let mut buf = vec![0u8; 200_000];
                s.read_exact(&mut buf).await.unwrap();
                target
            });
            let mut c = client.connect(server_addr).await.unwrap();
            let work = async {
                c.write_all(&[7u8; 200_000]).await.unwrap();
                accept.await.unwrap()
            };
            let server_target = tokio::time::timeout(Duration::from_secs(20), work)
                .await
                .expect("transfer timed out");
            let probe = c.cc_probe();
            let cc = probe.get();
            let client_target = c.target_delay_us();
            drop(c);
            (
                server_target,
                client_target,
                client.get_option(options::MAX_CWND_INCREASE_BYTES_PER_RTT),
                largest.load(Ordering::Relaxed),
                cc,
                probe.get(),
            )
        })
    }

    #[test]
    fn defaults_are_libutps() {
        let (server_target, client_target, gain, largest, cc, closed) = transfer(Params::default());
        assert_eq!((server_target, client_target), (100_000, 100_000));
        assert_eq!(gain, 3000);
        assert_eq!(largest, 1402, "libutp's default UDP MTU over IPv4");
        // The patched getter reads the sending socket's state: a window, a delay measured
        // from the acks of 200 kB, the target; nothing once the stream is gone.
        let cc = cc.expect("the connected socket's state");
        assert_eq!(cc.target_delay_us, 100_000);
        assert!(cc.max_window >= 1402, "{cc:?}");
        assert!(cc.our_delay_us.is_some() && cc.our_delay_base_us.is_some(), "{cc:?}");
        assert!(cc.retransmit_timeout_ms >= 1000, "libutp's floor is 1 s: {cc:?}");
        assert_eq!(closed, None);
    }

    #[test]
    fn parameters_reach_libutp() {
        let p = Params::parse(
            &[("target".into(), "25".into()), ("gain".into(), "500".into())],
            Some(700),
        )
        .unwrap();
        let (server_target, client_target, gain, largest, cc, _) = transfer(p);
        // Both the accepted and the connecting socket took the context's target.
        assert_eq!((server_target, client_target), (25_000, 25_000));
        assert_eq!(gain, 500);
        assert_eq!(largest, 700, "full packets are the datagram size");
        assert_eq!(cc.map(|c| c.target_delay_us), Some(25_000));
    }

    #[test]
    fn bad_parameters_are_refused() {
        let err = |c: &[(&str, &str)], d: Option<u64>| {
            let c: Vec<_> = c.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            Params::parse(&c, d).unwrap_err().to_string()
        };
        assert!(err(&[("target", "0")], None).contains("target=0: libutp's target is 1 to 10000 ms"));
        assert!(err(&[("gain", "x")], None).contains("gain=x"));
        assert!(err(&[("loss_multiplier", "50")], None).contains("libutp takes target and gain"));
        assert!(err(&[], Some(575)).contains("576 to 1472"));
        assert!(err(&[], Some(1473)).contains("576 to 1472"));
        assert_eq!(Params::parse(&[], None).unwrap(), Params::default());
    }
}
