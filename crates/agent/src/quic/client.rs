//! quic-client: one connection, one request (bulk upload/download on one stream or
//! several, objects on parallel streams, or paced messages), a summary shaped like
//! tcp-client's.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use agent_proto::summary::QuicClientResults;
use agent_proto::wire::object::UploadReply;
use agent_proto::wire::request::{self as wire_request, Mode, Request, Transport};
use agent_proto::wire::{code, stamp};
use anyhow::{bail, Context};
use quinn::crypto::rustls::QuicClientConfig;
use quinn::{Endpoint, EndpointConfig, TokioRuntime, VarInt};
use serde::Serialize;

use super::cc::Probe;
use super::records::{self, QuicDelivery};
use super::series::{self, Sampler, Sources};
use super::transfer::{self, RecvEnd, SendEnd, Transfer};
use super::{EndpointSocket, Options, OptionsParams, SocketSummary, Stop};
use crate::output::{self, bps, goodput_bps, secs, ObjectSummary, ObjectsSummary};
use crate::tcp::records::{ReceivedRecords, RecordReceiver};
use crate::{sys, tls, usage, Direction, QuicClientArgs};

pub fn client(a: QuicClientArgs) -> anyhow::Result<()> {
    let c = &a.common;
    let opts = Options::parse(c)?;
    let request = request(&a)?;
    if c.message_series.is_some() && request.mode != Mode::Messages {
        usage!("--message-series needs messages mode (--message-size)");
    }
    super::runtime()?.block_on(run(a, opts, request))
}

fn request(a: &QuicClientArgs) -> anyhow::Result<Request> {
    let mut r = Request {
        client_sends_messages: a.direction == Direction::Upload,
        bytes: a.bytes.unwrap_or(0),
        duration_ns: a.duration.unwrap_or(0),
        ..Request::new(match a.direction {
            Direction::Upload => Mode::Upload,
            Direction::Download => Mode::Download,
        })
    };
    // Bulk: the payload's streams; objects: the objects in flight (default all of them, as
    // many as the connection allows at once).
    r.streams = a.streams.unwrap_or(1);
    if let (Some(k), Some(s)) = (a.objects, a.object_size) {
        if a.streams.is_some_and(|p| p > k) {
            usage!("--streams {}: more than --objects {k}", a.streams.unwrap());
        }
        r.mode = Mode::Objects;
        r.object_count = k;
        r.object_size = s;
        r.streams = a.streams.unwrap_or(k.min(wire_request::MAX_STREAMS));
    }
    if let (Some(size), Some(interval)) = (a.record_size, a.record_interval) {
        r.mode = Mode::Records;
        r.client_sends_messages = false;
        r.message_size = size;
        r.message_interval_ns = interval;
        r.streams = a.delivery.request_streams();
        if let Err(e) = records::records_request(&r).validate() {
            usage!("--record-size {size}: {e}");
        }
    }
    if let (Some(size), Some(rate)) = (a.message_size, a.message_rate) {
        if size < stamp::LEN as u64 {
            usage!("--message-size {size}: must be at least 16 bytes (seq + send time)");
        }
        r.mode = Mode::Messages;
        r.message_size = size;
        r.message_interval_ns = ((1e9 / rate).round() as u64).max(1);
    }
    Ok(r)
}

#[derive(Serialize)]
struct Params<'a> {
    connect: String,
    mode: &'static str,
    direction: Option<&'static str>,
    duration_ns: Option<u64>,
    bytes: Option<u64>,
    objects: Option<u64>,
    object_size: Option<u64>,
    streams: Option<u64>,
    message_size: Option<u64>,
    message_rate: Option<f64>,
    message_interval_ns: Option<u64>,
    record_size: Option<u64>,
    record_interval_ns: Option<u64>,
    delivery: Option<&'static str>,
    record_series: Option<&'a Path>,
    connect_timeout_ns: u64,
    #[serde(flatten)]
    options: OptionsParams<'a>,
}

/// `results` when a stop came before the handshake completed.
#[derive(Serialize)]
struct NotConnected {
    mode: &'static str,
    complete: bool,
    connect_start_ns: u64,
    connected_ns: Option<u64>,
}

#[derive(Serialize)]
struct Results {
    #[serde(flatten)]
    common: QuicClientResults,
    local: Option<String>,
    remote: String,
    bytes_received_by_server: Option<u64>,
    ended_by_duration: bool,
    connect_start_ns: u64,
    connected_ns: u64,
    first_byte_ns: Option<u64>,
    end_ns: u64,
    connect_s: f64,
    duration_s: f64,
    throughput_bps: Option<f64>,
    samples: usize,
    #[serde(flatten)]
    socket: SocketSummary,
    /// Records mode: what the client handed over, as tcp-client reports it.
    records: Option<ReceivedRecords>,
    #[serde(flatten)]
    cpu: sys::Cpu,
}

/// The outcome of the transfer itself.
#[derive(Default)]
struct Outcome {
    /// The transfer ended normally (server's end of stream / last object read).
    end_ns: Option<u64>,
    /// Upload and messages upload: payload bytes the server application read.
    server_received: Option<u64>,
    /// The sender's `--duration` ended the transfer (stream reset).
    duration_over: bool,
}

async fn run(a: QuicClientArgs, opts: Options, req: Request) -> anyhow::Result<()> {
    let c = &a.common;
    let params = Params {
        connect: a.connect.to_string(),
        mode: req.mode.name(),
        direction: (req.mode != Mode::Objects).then(|| a.direction_name()),
        duration_ns: a.duration,
        bytes: a.bytes,
        objects: a.objects,
        object_size: a.object_size,
        streams: (req.mode != Mode::Messages).then_some(req.streams),
        message_size: a.message_size,
        message_rate: a.message_rate,
        message_interval_ns: (req.mode == Mode::Messages).then_some(req.message_interval_ns),
        record_size: a.record_size,
        record_interval_ns: a.record_interval,
        delivery: a.record_size.map(|_| a.delivery.name()),
        record_series: a.record_series.as_deref(),
        connect_timeout_ns: a.connect_timeout,
        options: opts.params(c),
    };
    let start_ns = sys::now_ns();
    let mut stop = super::spawn_stopper(None);
    let local: SocketAddr = if a.connect.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let (udp, sock) = EndpointSocket::bind(local, &opts)?;
    let endpoint = Endpoint::new(EndpointConfig::default(), None, udp, Arc::new(TokioRuntime))
        .context("cannot create the QUIC endpoint")?;
    let probe = Arc::new(Probe::new(&opts.cc));
    let mut cfg = quinn::ClientConfig::new(Arc::new(
        QuicClientConfig::try_from(tls::client_config()?).context("TLS config unusable for QUIC")?,
    ));
    let qlog = c.qlog.as_deref().map(|p| super::qlog_file(p, "client")).transpose()?;
    cfg.transport_config(Arc::new(opts.transport(probe.clone(), qlog)));

    let connect_start_ns = sys::now_ns();
    let connecting = endpoint
        .connect_with(cfg, a.connect, tls::SERVER_NAME)
        .with_context(|| format!("cannot connect to {}", a.connect))?;
    let conn = tokio::select! {
        r = tokio::time::timeout(Duration::from_nanos(a.connect_timeout), connecting) => match r {
            Err(_) => bail!("cannot connect to {}: no handshake within the connect timeout", a.connect),
            Ok(Err(e)) => bail!("cannot connect to {}: {e}", a.connect),
            Ok(Ok(conn)) => conn,
        },
        s = super::stopped(&mut stop) => {
            let results = NotConnected { mode: req.mode.name(), complete: false, connect_start_ns, connected_ns: None };
            let summary = output::envelope("quic-client", params, start_ns, sys::now_ns(), s.name(), results);
            return output::write_summary(&c.summary, &summary);
        }
    };
    let connected_ns = sys::now_ns();
    if probe.wants_one_way && req.client_sends() {
        probe.one_way.lock().unwrap().start_stamping();
    }
    let exchange = super::one_way::spawn(conn.clone(), probe.clone());
    let t = Arc::new(Transfer::default());
    if matches!(req.mode, Mode::Upload | Mode::Download) {
        t.track_streams(req.streams);
    }
    let sampler = Sampler::start(
        Sources {
            conn_index: 0,
            connection: conn.clone(),
            probe: probe.clone(),
            transfer: t.clone(),
        },
        c.sample_interval,
    );
    let receiver = Arc::new(RecordReceiver::default());
    let mut stopped_by_signal = false;
    let result = tokio::select! {
        r = transfer_for(&conn, &req, &t, connected_ns, (a.delivery, &receiver)) => r,
        _ = super::stopped(&mut stop) => { stopped_by_signal = true; Ok(Outcome::default()) }
    };
    let samples = sampler.finish();
    exchange.abort();
    let quic = super::quic_stats(&conn, &probe);
    let (outcome, error) = match result {
        Ok(o) => (o, None),
        Err(e) if t.bytes_sent.load(Relaxed) == 0 && t.bytes_received.load(Relaxed) == 0 => {
            return Err(e).context("transfer failed")
        }
        Err(e) => (Outcome::default(), Some(format!("transfer failed: {e:#}"))),
    };
    // A one-way controller that got no samples had no delay signal: not a valid run.
    let error = error.or_else(|| probe.one_way.lock().unwrap().failure());
    let close_code = if outcome.end_ns.is_some() {
        code::DONE
    } else {
        code::STOPPED
    };
    conn.close(VarInt::from_u32(close_code), b"");
    let _ = tokio::time::timeout(super::CLOSE_WAIT, endpoint.wait_idle()).await;
    let closed_ns = sys::now_ns();

    let sender_is_client = req.client_sends();
    let bytes = if sender_is_client {
        outcome.server_received.unwrap_or(t.bytes_sent.load(Relaxed))
    } else {
        t.bytes_received.load(Relaxed)
    };
    let delivered_known = !sender_is_client || outcome.server_received.is_some();
    let end_ns = outcome.end_ns.unwrap_or(closed_ns);
    let objects = t.objects.lock().unwrap().len() as u64;
    let complete = !stopped_by_signal
        && error.is_none()
        && outcome.end_ns.is_some()
        && match req.mode {
            Mode::Objects => objects == req.object_count,
            Mode::Upload | Mode::Download => req.bytes == 0 || bytes == req.bytes,
            Mode::Messages | Mode::Records => true,
            Mode::Page => false,
        };
    let stopped_by = if stopped_by_signal {
        Stop::Signal.name()
    } else {
        match req.mode {
            Mode::Objects => "objects",
            Mode::Messages | Mode::Records => "duration",
            _ if req.duration_ns > 0 => "duration",
            _ => "bytes",
        }
    };
    let transfer_ns = end_ns.saturating_sub(connected_ns);
    let completion_ns = end_ns.saturating_sub(connect_start_ns);
    let objects = (req.mode == Mode::Objects).then(|| {
        let mut objs = std::mem::take(&mut *t.objects.lock().unwrap());
        objs.sort_by_key(|o| o.index);
        ObjectsSummary::new(
            objs.iter()
                .map(|o| ObjectSummary::new(o.index, o.size, o.request_ns, o.first_byte_ns, o.complete_ns))
                .collect(),
        )
    });
    let results = Results {
        common: QuicClientResults {
            mode: req.mode.name(),
            sender: if sender_is_client { "client" } else { "server" },
            cc: opts.cc.name.clone(),
            complete,
            error: error.clone(),
            bytes,
            bytes_sent: t.bytes_sent.load(Relaxed),
            bytes_received: t.bytes_received.load(Relaxed),
            stream_bytes: t.stream_bytes(),
            completion_s: complete.then(|| secs(completion_ns)),
            // A sender's written bytes are not delivered bytes: without the server's count
            // (transfer failed or stopped) there is no rate to report.
            goodput_bps: goodput_bps(bytes, connect_start_ns, end_ns).filter(|_| delivered_known),
            quic: Some(quic),
            objects,
            messages: (req.mode == Mode::Messages).then(|| t.messages_summary()),
        },
        local: endpoint.local_addr().ok().map(|x| x.to_string()),
        remote: a.connect.to_string(),
        bytes_received_by_server: outcome.server_received,
        ended_by_duration: outcome.duration_over,
        connect_start_ns,
        connected_ns,
        first_byte_ns: t.first_byte(),
        end_ns,
        connect_s: secs(connected_ns - connect_start_ns),
        duration_s: secs(transfer_ns),
        throughput_bps: bps(bytes, transfer_ns).filter(|_| delivered_known),
        samples: samples.len(),
        socket: sock.summary(),
        records: match req.mode {
            Mode::Records => Some(crate::tcp::records::finish_receiver(
                &receiver,
                a.delivery.name(),
                records::records_request(&req),
                None,
                a.record_series.as_deref(),
            )?),
            _ => None,
        },
        // Last, so the CPU time includes closing and building the summary.
        cpu: sys::Cpu::now(),
    };
    let summary = output::envelope("quic-client", params, start_ns, sys::now_ns(), stopped_by, results);
    if let Some(p) = &c.series {
        series::write(p, &samples)?;
    }
    if let Some(p) = &c.message_series {
        let rows: Vec<_> = std::mem::take(&mut *t.messages.lock().unwrap())
            .into_iter()
            .map(|m| (0, m))
            .collect();
        series::write_messages(p, &rows)?;
    }
    output::write_summary(&c.summary, &summary)?;
    if let Some(e) = error {
        bail!("{e}");
    }
    Ok(())
}

async fn transfer_for(
    conn: &quinn::Connection,
    req: &Request,
    t: &Arc<Transfer>,
    connected_ns: u64,
    (delivery, receiver): (QuicDelivery, &Arc<RecordReceiver>),
) -> anyhow::Result<Outcome> {
    let mut o = Outcome::default();
    let (mut send, mut recv) = conn.open_bi().await.context("cannot open the control stream")?;
    send.write_all(&req.encode(Transport::Quic)?)
        .await
        .context("cannot send the request")?;
    match req.mode {
        Mode::Page => anyhow::bail!("page mode is TCP only"),
        Mode::Records => {
            let _ = send.finish();
            records::receive(conn, &mut recv, delivery, records::records_request(req), receiver, t).await?;
            o.end_ns = Some(sys::now_ns());
        }
        Mode::Upload => {
            let limit = (req.bytes > 0).then_some(req.bytes);
            let deadline = (req.duration_ns > 0).then(|| connected_ns + req.duration_ns);
            let end = transfer::send_bulk_streams(conn, &mut send, limit, req.streams, deadline, t).await?;
            o.duration_over = end == SendEnd::DurationOver;
            // The server replies with what it read once all our streams have ended.
            o.server_received = Some(UploadReply::decode(&transfer::recv_word(&mut recv).await?)?.bytes_read);
            o.end_ns = Some(sys::now_ns());
        }
        Mode::Download => {
            let _ = send.finish();
            o.duration_over =
                transfer::recv_bulk_streams(conn, &mut recv, req.streams, t).await? == RecvEnd::DurationOver;
            o.end_ns = Some(sys::now_ns());
        }
        Mode::Messages if req.client_sends_messages => {
            transfer::send_messages(&mut send, req.message_size, req.message_interval_ns, req.duration_ns, t).await?;
            o.server_received = Some(UploadReply::decode(&transfer::recv_word(&mut recv).await?)?.bytes_read);
            o.end_ns = Some(sys::now_ns());
        }
        Mode::Messages => {
            let _ = send.finish();
            transfer::recv_messages(&mut recv, req.message_size, t).await?;
            o.end_ns = Some(sys::now_ns());
        }
        Mode::Objects => {
            let _ = send.finish();
            let next = Arc::new(AtomicU64::new(0));
            let mut workers = tokio::task::JoinSet::new();
            for _ in 0..req.streams {
                let (conn, t, next) = (conn.clone(), t.clone(), next.clone());
                let (count, size) = (req.object_count, req.object_size);
                workers.spawn(async move {
                    loop {
                        let i = next.fetch_add(1, Relaxed);
                        if i >= count {
                            return Ok::<(), anyhow::Error>(());
                        }
                        transfer::fetch_object(&conn, i, size, &t).await?;
                    }
                });
            }
            while let Some(r) = workers.join_next().await {
                r.context("object task failed")??;
            }
            o.end_ns = t.objects.lock().unwrap().iter().map(|x| x.complete_ns).max();
        }
    }
    Ok(o)
}

impl QuicClientArgs {
    fn direction_name(&self) -> &'static str {
        match self.direction {
            Direction::Upload => "upload",
            Direction::Download => "download",
        }
    }
}
