//! quic-server: accepts connections, each with its own controller and probe, and serves
//! the request on its control stream; a summary shaped like tcp-server's.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use agent_proto::wire::code;
use agent_proto::wire::request::{self, Mode, Request, Transport};
use agent_proto::wire::Error;
use anyhow::{anyhow, bail, Context};
use quinn::crypto::rustls::QuicServerConfig;
use quinn::{ConnectionError, Endpoint, EndpointConfig, ReadExactError, ServerConfig, TokioRuntime, VarInt};
use serde::Serialize;

use super::cc::Probe;
use super::records;
use super::series::{self, Sample, Sampler, Sources};
use super::transfer::{self, MessageRecord, MessagesSummary, RecvEnd, SendEnd, Transfer};
use super::{EndpointSocket, Options, OptionsParams, QuicStats, SocketSummary, Stop};
use crate::output::{self, bps, secs, RequestSummary, ServedTransfer};
use crate::{sys, tls, QuicServerArgs};

pub fn server(a: QuicServerArgs) -> anyhow::Result<()> {
    let opts = Options::parse(&a.common)?;
    super::runtime()?.block_on(run(a, opts))
}

#[derive(Serialize)]
struct Params<'a> {
    bind: String,
    once: bool,
    duration_ns: Option<u64>,
    #[serde(flatten)]
    options: OptionsParams<'a>,
}

#[derive(Serialize)]
struct Results {
    port: u16,
    cc: String,
    bytes_received: u64,
    bytes_sent: u64,
    samples: usize,
    #[serde(flatten)]
    socket: SocketSummary,
    connections: Vec<ConnSummary>,
    #[serde(flatten)]
    cpu: sys::Cpu,
}

/// One connection in the server's `results.connections`.
#[derive(Serialize)]
#[serde(untagged)]
enum ConnSummary {
    Served(Box<ServedConn>),
    HandshakeFailed(FailedConn),
}

impl ConnSummary {
    fn bytes_sent(&self) -> u64 {
        match self {
            ConnSummary::Served(c) => c.transfer.bytes_sent,
            ConnSummary::HandshakeFailed(c) => c.bytes_sent,
        }
    }

    fn bytes_received(&self) -> u64 {
        match self {
            ConnSummary::Served(c) => c.transfer.bytes_received,
            ConnSummary::HandshakeFailed(c) => c.bytes_received,
        }
    }
}

#[derive(Serialize)]
struct ServedConn {
    conn: u32,
    peer: String,
    request: Option<RequestSummary>,
    #[serde(flatten)]
    transfer: ServedTransfer,
    ended_by_duration: bool,
    stream_bytes: Option<Vec<u64>>,
    objects_served: u64,
    accepted_ns: u64,
    connected_ns: u64,
    header_ns: Option<u64>,
    first_byte_ns: Option<u64>,
    last_byte_ns: Option<u64>,
    end_ns: u64,
    duration_s: f64,
    throughput_bps: Option<f64>,
    quic: QuicStats,
    samples: usize,
    #[serde(flatten)]
    messages: Option<MessagesSummary>,
    /// Records mode: what was sent, as tcp-server reports it.
    records: Option<records::SentRecords>,
}

/// A connection whose handshake failed: what is known of it.
#[derive(Serialize)]
struct FailedConn {
    conn: u32,
    peer: String,
    complete: bool,
    stopped: bool,
    error: String,
    accepted_ns: u64,
    bytes_sent: u64,
    bytes_received: u64,
}

struct ConnOutcome {
    summary: ConnSummary,
    samples: Vec<Sample>,
    messages: Vec<MessageRecord>,
    error: Option<String>,
}

async fn run(a: QuicServerArgs, opts: Options) -> anyhow::Result<()> {
    let c = &a.common;
    let params = Params {
        bind: a.bind.to_string(),
        once: a.once,
        duration_ns: a.duration,
        options: opts.params(c),
    };
    let crypto = Arc::new(QuicServerConfig::try_from(tls::server_config()?).context("TLS config unusable for QUIC")?);
    let (udp, sock) = EndpointSocket::bind(a.bind, &opts)?;
    let port = sock.port();
    // Connections get their own configuration (controller factory and probe) when
    // accepted; the endpoint's default is never used for them.
    let endpoint = Endpoint::new(
        EndpointConfig::default(),
        Some(ServerConfig::with_crypto(crypto.clone())),
        udp,
        Arc::new(TokioRuntime),
    )
    .context("cannot create the QUIC endpoint")?;
    let start_ns = sys::now_ns();
    let mut stop = super::spawn_stopper(a.duration.map(|d| start_ns + d));
    output::announce_ready(port);

    let mut handles = Vec::new();
    let mut stopped_by = None;
    loop {
        let incoming = tokio::select! {
            i = endpoint.accept() => i,
            s = super::stopped(&mut stop) => { stopped_by = Some(s); break; }
        };
        let Some(incoming) = incoming else { break };
        let conn_index = handles.len() as u32;
        let probe = Arc::new(Probe::new(&opts.cc));
        let mut cfg = ServerConfig::with_crypto(crypto.clone());
        let qlog = match c.qlog.as_deref() {
            Some(p) => Some(super::qlog_file(&agent::transport::qlog_path(p, conn_index), "server")?),
            None => None,
        };
        cfg.transport_config(Arc::new(opts.transport(probe.clone(), qlog)));
        let peer = incoming.remote_address();
        let accepted_ns = sys::now_ns();
        let connecting = match incoming.accept_with(Arc::new(cfg)) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("agent quic-server: connection from {peer} refused: {e}");
                continue;
            }
        };
        let stop_rx = stop.clone();
        let interval = c.sample_interval;
        handles.push(tokio::spawn(async move {
            let conn = match connecting.await {
                Ok(conn) => conn,
                Err(e) => return failed_handshake(conn_index, peer, accepted_ns, e),
            };
            serve_connection(conn_index, peer, accepted_ns, conn, probe, interval, stop_rx).await
        }));
        if a.once {
            break;
        }
    }
    let mut outcomes = Vec::new();
    for h in handles {
        outcomes.push(h.await.map_err(|e| anyhow!("connection task failed: {e}"))?);
    }
    if stopped_by.is_none() {
        // --once: the connection ended by itself unless a stop arrived meanwhile.
        stopped_by = stop.borrow().map(|s| s);
    }
    let stopped_by = stopped_by.map_or("once", Stop::name);
    endpoint.close(VarInt::from_u32(code::STOPPED), b"");
    let _ = tokio::time::timeout(super::CLOSE_WAIT, endpoint.wait_idle()).await;

    let first_error = outcomes.iter().find_map(|o| o.error.clone());
    let bytes_received = outcomes.iter().map(|o| o.summary.bytes_received()).sum();
    let bytes_sent = outcomes.iter().map(|o| o.summary.bytes_sent()).sum();
    let samples: Vec<Sample> = outcomes
        .iter_mut()
        .flat_map(|o| std::mem::take(&mut o.samples))
        .collect();
    let messages: Vec<(u32, MessageRecord)> = outcomes
        .iter_mut()
        .enumerate()
        .flat_map(|(i, o)| std::mem::take(&mut o.messages).into_iter().map(move |m| (i as u32, m)))
        .collect();
    let results = Results {
        port,
        cc: opts.cc.name.clone(),
        bytes_received,
        bytes_sent,
        samples: samples.len(),
        socket: sock.summary(),
        connections: outcomes.into_iter().map(|o| o.summary).collect(),
        cpu: sys::Cpu::now(),
    };
    let summary = output::envelope("quic-server", params, start_ns, sys::now_ns(), stopped_by, results);
    if let Some(p) = &c.series {
        series::write(p, &samples)?;
    }
    if let Some(p) = &c.message_series {
        series::write_messages(p, &messages)?;
    }
    output::write_server_summary(&c.summary, &summary, a.once, first_error)
}

fn failed_handshake(conn: u32, peer: SocketAddr, accepted_ns: u64, e: ConnectionError) -> ConnOutcome {
    let error = format!("connection {conn} from {peer}: handshake failed: {e}");
    ConnOutcome {
        summary: ConnSummary::HandshakeFailed(FailedConn {
            conn,
            peer: peer.to_string(),
            complete: false,
            stopped: false,
            error: error.clone(),
            accepted_ns,
            bytes_sent: 0,
            bytes_received: 0,
        }),
        samples: Vec::new(),
        messages: Vec::new(),
        error: Some(error),
    }
}

/// What the request's work reported.
#[derive(Default)]
struct Served {
    request: Option<Request>,
    header_ns: Option<u64>,
    /// The sender finished normally (or its `--duration` ended it).
    transfer_done: bool,
    duration_over: bool,
    objects_served: u64,
}

async fn serve_connection(
    conn_index: u32,
    peer: SocketAddr,
    accepted_ns: u64,
    conn: quinn::Connection,
    probe: Arc<Probe>,
    interval_ns: u64,
    mut stop: tokio::sync::watch::Receiver<Option<Stop>>,
) -> ConnOutcome {
    let connected_ns = sys::now_ns();
    let exchange = super::one_way::spawn(conn.clone(), probe.clone());
    let t = Arc::new(Transfer::default());
    let sampler = Sampler::start(
        Sources {
            conn_index,
            connection: conn.clone(),
            probe: probe.clone(),
            transfer: t.clone(),
        },
        interval_ns,
    );
    let mut served = Served::default();
    let objects_served = Arc::new(AtomicU64::new(0));
    let mut stopped = false;
    let result = tokio::select! {
        r = serve_request(&conn, &t, &mut served, &objects_served, &probe) => r,
        _ = super::stopped(&mut stop) => { stopped = true; Ok(()) }
    };
    served.objects_served = objects_served.load(Relaxed);
    // The client closes the connection once it has everything (code DONE).
    let closed_by_client = match conn.close_reason() {
        Some(ConnectionError::ApplicationClosed(c)) => c.error_code == VarInt::from_u32(code::DONE),
        _ => false,
    };
    let samples = sampler.finish();
    exchange.abort();
    let quic = super::quic_stats(&conn, &probe);
    if conn.close_reason().is_none() {
        conn.close(VarInt::from_u32(code::STOPPED), b"");
    }
    let end_ns = sys::now_ns();
    // A one-way controller that got no samples had no delay signal: not a valid run.
    let error = result
        .err()
        .map(|e| format!("{e:#}"))
        .or_else(|| probe.one_way.lock().unwrap().failure())
        .map(|e| format!("connection {conn_index} from {peer}: {e}"));

    let req = served.request;
    let mode = req.map(|r| r.mode);
    let sender_is_server = req.is_some_and(|r| !r.client_sends());
    let bytes = if sender_is_server {
        t.bytes_sent.load(Relaxed)
    } else {
        t.bytes_received.load(Relaxed)
    };
    let header_ns = served.header_ns.unwrap_or(connected_ns);
    let (transfer_start, transfer_end) = if sender_is_server {
        (header_ns, end_ns)
    } else {
        (t.first_byte().unwrap_or(header_ns), t.last_byte().unwrap_or(end_ns))
    };
    let transfer_ns = transfer_end.saturating_sub(transfer_start);
    let complete = !stopped
        && error.is_none()
        && closed_by_client
        && served.transfer_done
        && match req {
            Some(r) if r.mode == Mode::Objects => served.objects_served == r.object_count,
            Some(r) if matches!(r.mode, Mode::Upload | Mode::Download) && !served.duration_over => {
                r.bytes == 0 || bytes == r.bytes
            }
            Some(_) => true,
            None => false,
        };
    let summary = ServedConn {
        conn: conn_index,
        peer: peer.to_string(),
        request: req.map(|r| RequestSummary::of(&r, Transport::Quic)),
        transfer: ServedTransfer {
            complete,
            stopped,
            error: error.clone(),
            bytes,
            bytes_sent: t.bytes_sent.load(Relaxed),
            bytes_received: t.bytes_received.load(Relaxed),
            ..ServedTransfer::requested(mode, sender_is_server)
        },
        ended_by_duration: served.duration_over,
        stream_bytes: t.stream_bytes(),
        objects_served: served.objects_served,
        accepted_ns,
        connected_ns,
        header_ns: served.header_ns,
        first_byte_ns: if sender_is_server {
            served.header_ns
        } else {
            t.first_byte()
        },
        last_byte_ns: if sender_is_server { Some(end_ns) } else { t.last_byte() },
        end_ns,
        duration_s: secs(transfer_ns),
        throughput_bps: bps(bytes, transfer_ns),
        quic,
        samples: samples.len(),
        messages: (mode == Some(Mode::Messages)).then(|| t.messages_summary()),
        records: req
            .filter(|r| r.mode == Mode::Records)
            .map(|r| records::SentRecords::from_transfer(records::records_request(&r), &t)),
    };
    let messages = std::mem::take(&mut *t.messages.lock().unwrap());
    ConnOutcome {
        summary: ConnSummary::Served(Box::new(summary)),
        samples,
        messages,
        error,
    }
}

/// Reads the request from the control stream and does the work; returns when the client
/// has closed the connection (or on error). If the controller steers by one-way delay
/// and this end sends the payload, it stamps it (through `probe`).
async fn serve_request(
    conn: &quinn::Connection,
    t: &Arc<Transfer>,
    served: &mut Served,
    objects_served: &Arc<AtomicU64>,
    probe: &Probe,
) -> anyhow::Result<()> {
    let (mut send, mut recv) = conn.accept_bi().await.context("no control stream")?;
    let mut hdr = [0u8; request::QUIC_LEN];
    let got = match recv.read_exact(&mut hdr).await {
        Ok(()) => hdr.len(),
        Err(ReadExactError::FinishedEarly(n)) => n,
        Err(e) => return Err(e).context("cannot read the request"),
    };
    let decoded = Request::decode(Transport::Quic, &hdr)
        .and_then(|r| r.validate().map(|()| r))
        .and_then(|r| match r.mode {
            Mode::Records => records::records_request(&r).validate().map(|()| r),
            _ => Ok(r),
        });
    let decoded = match decoded {
        _ if got == hdr.len() => decoded,
        // A client that ended its control stream inside the request (a version-1 client
        // asking for a download sends 56 bytes) is refused for its magic or version when
        // it sent those and they are wrong, else for the truncation.
        Err(e @ (Error::BadMagic { .. } | Error::UnsupportedVersion { .. })) if got > request::field::VERSION => Err(e),
        _ => Err(Error::Truncated { needed: hdr.len(), got }),
    };
    let req = match decoded {
        Ok(r) => r,
        Err(e) => {
            conn.close(VarInt::from_u32(code::BAD_REQUEST), e.to_string().as_bytes());
            bail!("bad request: {e}");
        }
    };
    let header_ns = sys::now_ns();
    if probe.wants_one_way && !req.client_sends() {
        probe.one_way.lock().unwrap().start_stamping();
    }
    served.request = Some(req);
    served.header_ns = Some(header_ns);
    if matches!(req.mode, Mode::Upload | Mode::Download) {
        t.track_streams(req.streams);
    }
    match req.mode {
        // The QUIC request's decoder refuses mode 6.
        Mode::Page => anyhow::bail!("page mode is TCP only"),
        Mode::Records => {
            let r = records::records_request(&req);
            // Zero request streams asks for one stream per record.
            records::send(conn, &mut send, r, req.duration_ns, req.streams == 0, t).await?;
            served.transfer_done = true;
        }
        Mode::Upload => {
            served.duration_over =
                transfer::recv_bulk_streams(conn, &mut recv, req.streams, t).await? == RecvEnd::DurationOver;
            // The reply counts what arrived on every stream.
            transfer::reply_to_upload(&mut send, t).await?;
            served.transfer_done = true;
        }
        Mode::Download => {
            let limit = (req.bytes > 0).then_some(req.bytes);
            let deadline = (req.duration_ns > 0).then(|| header_ns + req.duration_ns);
            let end = transfer::send_bulk_streams(conn, &mut send, limit, req.streams, deadline, t).await?;
            served.duration_over = end == SendEnd::DurationOver;
            served.transfer_done = true;
        }
        Mode::Messages if req.client_sends_messages => {
            transfer::recv_messages(&mut recv, req.message_size, t).await?;
            transfer::reply_to_upload(&mut send, t).await?;
            served.transfer_done = true;
        }
        Mode::Messages => {
            transfer::send_messages(&mut send, req.message_size, req.message_interval_ns, req.duration_ns, t).await?;
            served.transfer_done = true;
        }
        Mode::Objects => {
            // Every further bidirectional stream carries one object request, until the
            // client closes the connection.
            let mut tasks = tokio::task::JoinSet::new();
            loop {
                let (s, r) = tokio::select! {
                    x = conn.accept_bi() => match x {
                        Ok(x) => x,
                        Err(e) => { closed_ok(e)?; break; }
                    },
                    Some(done) = tasks.join_next(), if !tasks.is_empty() => {
                        done.context("object task failed")??;
                        objects_served.fetch_add(1, Relaxed);
                        continue;
                    }
                };
                let t = t.clone();
                tasks.spawn(async move { transfer::serve_object(s, r, &t).await });
            }
            // The close ends the remaining tasks at once; those whose object was
            // delivered in full still count.
            while let Some(r) = tasks.join_next().await {
                if matches!(r, Ok(Ok(()))) {
                    objects_served.fetch_add(1, Relaxed);
                }
            }
            served.transfer_done = true;
            return Ok(());
        }
    }
    closed_ok(conn.closed().await)
}

/// A connection closed by the client with code DONE is the normal end.
fn closed_ok(e: ConnectionError) -> anyhow::Result<()> {
    match &e {
        ConnectionError::ApplicationClosed(c) if c.error_code == VarInt::from_u32(code::DONE) => Ok(()),
        _ => Err(anyhow!("connection ended: {e}")),
    }
}
