//! quic-client: one connection, one request (bulk upload/download, objects on parallel
//! streams, or paced messages), a summary shaped like tcp-client's.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use agent::wire::object::UploadReply;
use agent::wire::request::{Mode, Request, Transport};
use agent::wire::{code, stamp};
use anyhow::{bail, Context};
use quinn::crypto::rustls::QuicClientConfig;
use quinn::{Endpoint, EndpointConfig, TokioRuntime, VarInt};
use serde_json::{json, Value};

use super::cc::Probe;
use super::series::{self, Sampler, Sources};
use super::transfer::{self, RecvEnd, SendEnd, Transfer};
use super::{EndpointSocket, Options, Stop};
use crate::output::{self, bps, secs};
use crate::{stats, sys, tls, usage, Direction, QuicClientArgs};

pub fn client(a: QuicClientArgs) -> anyhow::Result<()> {
    let c = &a.common;
    let opts = Options::parse(&c.cc, &c.cc_param, c.datagram_size, c.rcvbuf, c.sndbuf)?;
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
    if let (Some(k), Some(s)) = (a.objects, a.object_size) {
        if a.streams.is_some_and(|p| p > k) {
            usage!("--streams {}: more than --objects {k}", a.streams.unwrap());
        }
        r.mode = Mode::Objects;
        r.object_count = k;
        r.object_size = s;
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
    let params = {
        let mut p = json!({
            "connect": a.connect.to_string(),
            "mode": req.mode.name(),
            "direction": if req.mode == Mode::Objects { Value::Null } else { json!(a.direction_name()) },
            "duration_ns": a.duration,
            "bytes": a.bytes,
            "objects": a.objects,
            "object_size": a.object_size,
            "streams": a.objects.map(|k| a.streams.unwrap_or(k)),
            "message_size": a.message_size,
            "message_rate": a.message_rate,
            "message_interval_ns": (req.mode == Mode::Messages).then_some(req.message_interval_ns),
            "sample_interval_ns": c.sample_interval,
            "connect_timeout_ns": a.connect_timeout,
            "summary": c.summary,
            "series": c.series,
            "message_series": c.message_series,
        });
        super::merge(&mut p, opts.params_json());
        p
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
    let probe = Arc::new(Probe::default());
    let mut cfg = quinn::ClientConfig::new(Arc::new(
        QuicClientConfig::try_from(tls::client_config()?).context("TLS config unusable for QUIC")?,
    ));
    cfg.transport_config(Arc::new(opts.transport(probe.clone())));

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
            let results = json!({ "mode": req.mode.name(), "complete": false, "connect_start_ns": connect_start_ns, "connected_ns": null });
            let summary = output::envelope("quic-client", params, start_ns, sys::now_ns(), s.name(), results);
            return output::write_summary(&c.summary, &summary);
        }
    };
    let connected_ns = sys::now_ns();
    let t = Arc::new(Transfer::default());
    let sampler = Sampler::start(
        Sources { conn_index: 0, connection: conn.clone(), probe: probe.clone(), transfer: t.clone() },
        c.sample_interval,
    );
    let mut stopped_by_signal = false;
    let result = tokio::select! {
        r = transfer_for(&conn, &req, &t, connected_ns, a.objects.map(|k| a.streams.unwrap_or(k))) => r,
        _ = super::stopped(&mut stop) => { stopped_by_signal = true; Ok(Outcome::default()) }
    };
    let samples = sampler.finish();
    let quic = super::quic_stats_json(&conn, &probe);
    let (outcome, error) = match result {
        Ok(o) => (o, None),
        Err(e) if t.bytes_sent.load(Relaxed) == 0 && t.bytes_received.load(Relaxed) == 0 => {
            return Err(e).context("transfer failed")
        }
        Err(e) => (Outcome::default(), Some(format!("transfer failed: {e:#}"))),
    };
    let close_code = if outcome.end_ns.is_some() { code::DONE } else { code::STOPPED };
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
            Mode::Messages => true,
        };
    let stopped_by = if stopped_by_signal {
        Stop::Signal.name()
    } else {
        match req.mode {
            Mode::Objects => "objects",
            Mode::Messages => "duration",
            _ if req.duration_ns > 0 => "duration",
            _ => "bytes",
        }
    };
    let transfer_ns = end_ns.saturating_sub(connected_ns);
    let completion_ns = end_ns.saturating_sub(connect_start_ns);
    let mut results = json!({
        "mode": req.mode.name(),
        "sender": if sender_is_client { "client" } else { "server" },
        "local": endpoint.local_addr().ok().map(|x| x.to_string()),
        "remote": a.connect.to_string(),
        "cc": opts.cc.name,
        "complete": complete,
        "error": error,
        "bytes": bytes,
        "bytes_sent": t.bytes_sent.load(Relaxed),
        "bytes_received": t.bytes_received.load(Relaxed),
        "bytes_received_by_server": outcome.server_received,
        "ended_by_duration": outcome.duration_over,
        "connect_start_ns": connect_start_ns,
        "connected_ns": connected_ns,
        "first_byte_ns": t.first_byte(),
        "end_ns": end_ns,
        "connect_s": secs(connected_ns - connect_start_ns),
        "duration_s": secs(transfer_ns),
        "completion_s": if complete { json!(secs(completion_ns)) } else { Value::Null },
        // A sender's written bytes are not delivered bytes: without the server's count
        // (transfer failed or stopped) there is no rate to report.
        "throughput_bps": if delivered_known { bps(bytes, transfer_ns) } else { Value::Null },
        "goodput_bps": if delivered_known { bps(bytes, completion_ns) } else { Value::Null },
        "quic": quic,
        "samples": samples.len(),
    });
    super::merge(&mut results, sock.json());
    if req.mode == Mode::Objects {
        let mut objs = std::mem::take(&mut *t.objects.lock().unwrap());
        objs.sort_by_key(|o| o.index);
        let ttfb: Vec<f64> = objs.iter().map(|o| (o.first_byte_ns - o.request_ns) as f64).collect();
        let compl: Vec<f64> = objs.iter().map(|o| (o.complete_ns - o.request_ns) as f64).collect();
        results["objects"] = objs
            .iter()
            .map(|o| {
                json!({
                    "index": o.index, "size": o.size, "request_ns": o.request_ns,
                    "first_byte_ns": o.first_byte_ns, "complete_ns": o.complete_ns,
                    "ttfb_s": secs(o.first_byte_ns - o.request_ns),
                    "completion_s": secs(o.complete_ns - o.request_ns),
                })
            })
            .collect();
        results["objects_completed"] = json!(objs.len());
        results["ttfb"] = stats::describe_json(&ttfb, 1e6, "ms");
        results["object_completion"] = stats::describe_json(&compl, 1e6, "ms");
    }
    if req.mode == Mode::Messages {
        super::merge(&mut results, t.messages_json());
    }
    // Last, so the CPU time includes closing and building the summary.
    super::merge(&mut results, super::cpu_json());
    let summary = output::envelope("quic-client", params, start_ns, sys::now_ns(), stopped_by, results);
    if let Some(p) = &c.series {
        series::write(p, &samples)?;
    }
    if let Some(p) = &c.message_series {
        let rows: Vec<_> = std::mem::take(&mut *t.messages.lock().unwrap()).into_iter().map(|m| (0, m)).collect();
        series::write_messages(p, &rows)?;
    }
    output::write_summary(&c.summary, &summary)?;
    if let Some(e) = summary["results"]["error"].as_str() {
        bail!("{e}");
    }
    Ok(())
}

async fn transfer_for(
    conn: &quinn::Connection,
    req: &Request,
    t: &Arc<Transfer>,
    connected_ns: u64,
    streams: Option<u64>,
) -> anyhow::Result<Outcome> {
    let mut o = Outcome::default();
    let (mut send, mut recv) = conn.open_bi().await.context("cannot open the control stream")?;
    send.write_all(&req.encode(Transport::Quic)?).await.context("cannot send the request")?;
    match req.mode {
        Mode::Upload => {
            let limit = (req.bytes > 0).then_some(req.bytes);
            let deadline = (req.duration_ns > 0).then(|| connected_ns + req.duration_ns);
            o.duration_over = transfer::send_bulk(&mut send, limit, deadline, t).await? == SendEnd::DurationOver;
            // The server replies with what it read once our stream has ended.
            o.server_received = Some(UploadReply::decode(&transfer::recv_word(&mut recv).await?)?.bytes_read);
            o.end_ns = Some(sys::now_ns());
        }
        Mode::Download => {
            let _ = send.finish();
            o.duration_over = transfer::recv_bulk(&mut recv, t).await? == RecvEnd::DurationOver;
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
            for _ in 0..streams.unwrap_or(req.object_count) {
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

