//! udp-send and udp-recv: paced timestamped datagrams and their receive-side statistics.

use std::collections::BTreeMap;
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use agent_proto::wire::stamp::{self, Stamp};
use anyhow::Context;
use arrow_array::{ArrayRef, BooleanArray, Int64Array, UInt32Array, UInt64Array};
use serde::Serialize;

use crate::tcp::records::{RecordRow, Via};
use crate::{output, sys, usage, UdpRecvArgs, UdpSendArgs};
use agent_proto::stats::{self, Scaled};

/// Largest UDP payload over IPv4.
pub const MAX_PAYLOAD: u64 = 65507;
/// Sequence numbers above this are treated as malformed (bounds the duplicate bitmap).
const MAX_SEQ: u64 = 1 << 30;

pub fn unspecified_for(addr: &SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V4(_) => "0.0.0.0:0".parse().unwrap(),
        SocketAddr::V6(_) => "[::]:0".parse().unwrap(),
    }
}

#[derive(Serialize)]
struct SendParams<'a> {
    to: String,
    size: u64,
    rate_bps: Option<u64>,
    interval_ns: Option<u64>,
    duration_ns: Option<u64>,
    count: Option<u64>,
    burst: u64,
    summary: &'a Path,
}

#[derive(Serialize)]
struct SendResults {
    sent: u64,
    attempts: u64,
    send_errors: u64,
    send_errors_by_kind: BTreeMap<String, u64>,
    bytes: u64,
    first_send_ns: Option<u64>,
    last_send_ns: Option<u64>,
    duration_s: f64,
    rate_bps: Option<f64>,
    bursts: usize,
    lateness: Option<Scaled>,
    #[serde(flatten)]
    cpu: sys::Cpu,
}

pub fn send(a: UdpSendArgs) -> anyhow::Result<()> {
    if a.size < stamp::LEN as u64 || a.size > MAX_PAYLOAD {
        usage!(
            "--size {} out of range: must be {}..={MAX_PAYLOAD} bytes",
            a.size,
            stamp::LEN
        );
    }
    let params = SendParams {
        to: a.to.to_string(),
        size: a.size,
        rate_bps: a.rate,
        interval_ns: a.interval,
        duration_ns: a.duration,
        count: a.count,
        burst: a.burst,
        summary: &a.summary,
    };
    let sock = UdpSocket::bind(unspecified_for(&a.to)).context("cannot create UDP socket")?;
    sock.connect(a.to)
        .with_context(|| format!("cannot connect UDP socket to {}", a.to))?;
    let mut buf = vec![0u8; a.size as usize];
    let burst_bits = a.burst as u128 * a.size as u128 * 8;

    let start_ns = sys::now_ns();
    // Deadline of burst k, computed from the start so rounding never accumulates.
    let deadline = |k: u64| -> u64 {
        match (a.rate, a.interval) {
            (Some(r), _) => start_ns + (k as u128 * burst_bits * 1_000_000_000 / r as u128) as u64,
            (None, Some(i)) => start_ns + k * i,
            (None, None) => unreachable!("clap requires --rate or --interval"),
        }
    };
    let end = a.duration.map(|d| start_ns + d);
    let mut attempts = 0u64;
    let mut seq = 0u64;
    let mut bytes = 0u64;
    let mut errors = BTreeMap::<String, u64>::new();
    let mut lateness = Vec::new();
    let mut first_send_ns = None;
    let mut last_send_ns = None;
    let mut k = 0u64;
    let stopped_by = 'outer: loop {
        let dl = deadline(k);
        if end.is_some_and(|e| dl >= e) {
            break "duration";
        }
        sys::sleep_until(dl);
        if sys::stop_requested() {
            break "signal";
        }
        lateness.push((sys::now_ns().saturating_sub(dl)) as f64);
        for _ in 0..a.burst {
            if a.count.is_some_and(|c| attempts >= c) {
                break 'outer "count";
            }
            attempts += 1;
            let now = sys::now_ns();
            Stamp { seq, send_ns: now }.emit(&mut buf)?;
            match sock.send(&buf) {
                Ok(n) => {
                    seq += 1;
                    bytes += n as u64;
                    first_send_ns.get_or_insert(now);
                    last_send_ns = Some(now);
                }
                Err(e) => *errors.entry(e.kind().to_string()).or_default() += 1,
            }
        }
        if a.count.is_some_and(|c| attempts >= c) {
            break "count";
        }
        k += 1;
    };
    let end_ns = sys::now_ns();
    let span = match (first_send_ns, last_send_ns) {
        (Some(f), Some(l)) if l > f => l - f,
        _ => 0,
    };
    let results = SendResults {
        sent: seq,
        attempts,
        send_errors: attempts - seq,
        send_errors_by_kind: errors,
        bytes,
        first_send_ns,
        last_send_ns,
        duration_s: span as f64 / 1e9,
        // Rate over the span covers all but the last interval's datagrams.
        rate_bps: (span > 0 && seq > 1)
            .then(|| bytes as f64 * 8.0 * (seq - 1) as f64 / seq as f64 / (span as f64 / 1e9)),
        bursts: lateness.len(),
        lateness: stats::scaled(&lateness, 1e3, "us"),
        cpu: sys::Cpu::now(),
    };
    let summary = output::envelope("udp-send", params, start_ns, end_ns, stopped_by, results);
    output::write_summary(&a.summary, &summary)
}

/// Everything udp-recv records per datagram, as columns.
#[derive(Default)]
struct Packets {
    seq: Vec<u64>,
    send_ns: Vec<u64>,
    recv_ns: Vec<u64>,
    size: Vec<u32>,
    duplicate: Vec<bool>,
}

#[derive(Serialize)]
struct RecvParams<'a> {
    bind: String,
    duration_ns: Option<u64>,
    idle_timeout_ns: Option<u64>,
    rcvbuf: u64,
    summary: &'a Path,
    series: Option<&'a Path>,
}

#[derive(Serialize)]
struct RecvResults {
    port: u16,
    received: u64,
    unique: u64,
    duplicates: u64,
    reordered: u64,
    malformed: u64,
    socket_drops: Option<u64>,
    rcvbuf: u64,
    max_seq: Option<u64>,
    expected: u64,
    lost: u64,
    loss_rate: Option<f64>,
    bytes: u64,
    first_recv_ns: Option<u64>,
    last_recv_ns: Option<u64>,
    duration_s: f64,
    throughput_bps: Option<f64>,
    owd: Option<Scaled>,
    interarrival: Option<Scaled>,
    jitter_rfc3550_ms: Option<f64>,
    ipdv_rfc3393_ms: Option<f64>,
    ipdv_pairs: usize,
    #[serde(flatten)]
    cpu: sys::Cpu,
}

pub fn recv(a: UdpRecvArgs) -> anyhow::Result<()> {
    let params = RecvParams {
        bind: a.bind.to_string(),
        duration_ns: a.duration,
        idle_timeout_ns: a.idle_timeout,
        rcvbuf: a.rcvbuf,
        summary: &a.summary,
        series: a.series.as_deref(),
    };
    let sock = UdpSocket::bind(a.bind).with_context(|| format!("cannot bind {}", a.bind))?;
    let rcvbuf = sys::set_rcvbuf(&sock, a.rcvbuf).context("cannot set SO_RCVBUF")?;
    let poll_ns = a.idle_timeout.unwrap_or(u64::MAX).clamp(1_000_000, 100_000_000);
    sock.set_read_timeout(Some(Duration::from_nanos(poll_ns)))?;
    let port = sock.local_addr()?.port();
    let start_ns = sys::now_ns();
    output::announce_ready(port);

    let mut p = Packets::default();
    let mut seen: Vec<u64> = Vec::new();
    let mut malformed = 0u64;
    let mut max_seq: Option<u64> = None;
    let mut reordered = 0u64;
    let mut buf = vec![0u8; 65536];
    let deadline = a.duration.map(|d| start_ns + d);
    let stopped_by = loop {
        if sys::stop_requested() {
            break "signal";
        }
        let now = sys::now_ns();
        if deadline.is_some_and(|d| now >= d) {
            break "duration";
        }
        if let (Some(idle), Some(&last)) = (a.idle_timeout, p.recv_ns.last()) {
            if now.saturating_sub(last) >= idle {
                break "idle_timeout";
            }
        }
        let n = match sock.recv(&mut buf) {
            Ok(n) => n,
            Err(e) if sys::is_retry(&e) => continue,
            Err(e) => return Err(e).context("recv failed"),
        };
        let recv_ns = sys::now_ns();
        let Ok(Stamp { seq, send_ns }) = Stamp::decode(&buf[..n]) else {
            malformed += 1;
            continue;
        };
        if seq >= MAX_SEQ {
            malformed += 1;
            continue;
        }
        let (word, bit) = ((seq / 64) as usize, seq % 64);
        if word >= seen.len() {
            seen.resize((word + 1).next_power_of_two(), 0);
        }
        let dup = seen[word] & (1 << bit) != 0;
        seen[word] |= 1 << bit;
        if !dup {
            match max_seq {
                Some(m) if seq < m => reordered += 1,
                Some(m) if seq <= m => {}
                _ => max_seq = Some(seq),
            }
        }
        p.seq.push(seq);
        p.send_ns.push(send_ns);
        p.recv_ns.push(recv_ns);
        p.size.push(n as u32);
        p.duplicate.push(dup);
    };
    let end_ns = sys::now_ns();
    let socket_drops = sys::udp_socket_drops(&sock);

    let received = p.seq.len() as u64;
    let duplicates = p.duplicate.iter().filter(|&&d| d).count() as u64;
    let unique = received - duplicates;
    let bytes: u64 = p.size.iter().map(|&s| s as u64).sum();
    let expected = max_seq.map(|m| m + 1).unwrap_or(0);
    let uniq_idx: Vec<usize> = (0..p.seq.len()).filter(|&i| !p.duplicate[i]).collect();
    let owd: Vec<f64> = uniq_idx
        .iter()
        .map(|&i| p.recv_ns[i] as f64 - p.send_ns[i] as f64)
        .collect();
    let interarrival: Vec<f64> = uniq_idx
        .windows(2)
        .map(|w| (p.recv_ns[w[1]] - p.recv_ns[w[0]]) as f64)
        .collect();
    let arrivals: Vec<(i64, i64)> = uniq_idx
        .iter()
        .map(|&i| (p.send_ns[i] as i64, p.recv_ns[i] as i64))
        .collect();
    let by_seq: Vec<(u64, i64)> = uniq_idx
        .iter()
        .map(|&i| (p.seq[i], p.recv_ns[i] as i64 - p.send_ns[i] as i64))
        .collect();
    let ipdv = stats::rfc3393_ipdv(&by_seq);
    let first = p.recv_ns.first().copied();
    let last = p.recv_ns.last().copied();
    let span = match (first, last) {
        (Some(f), Some(l)) => l - f,
        _ => 0,
    };
    let results = RecvResults {
        port,
        received,
        unique,
        duplicates,
        reordered,
        malformed,
        socket_drops,
        rcvbuf,
        max_seq,
        expected,
        lost: expected - unique,
        loss_rate: (expected > 0).then(|| (expected - unique) as f64 / expected as f64),
        bytes,
        first_recv_ns: first,
        last_recv_ns: last,
        duration_s: span as f64 / 1e9,
        throughput_bps: (span > 0 && received > 1)
            .then(|| bytes as f64 * 8.0 * (received - 1) as f64 / received as f64 / (span as f64 / 1e9)),
        owd: stats::scaled(&owd, 1e6, "ms"),
        interarrival: stats::scaled(&interarrival, 1e6, "ms"),
        jitter_rfc3550_ms: (arrivals.len() > 1).then(|| stats::rfc3550_jitter(&arrivals) / 1e6),
        ipdv_rfc3393_ms: ipdv.map(|(m, _)| m / 1e6),
        ipdv_pairs: ipdv.map(|(_, n)| n).unwrap_or(0),
        cpu: sys::Cpu::now(),
    };
    if let Some(path) = &a.record_series {
        let mut rows: Vec<RecordRow> = uniq_idx
            .iter()
            .map(|&i| RecordRow {
                id: p.seq[i],
                size: u64::from(p.size[i]),
                offset: 0,
                send_ns: p.send_ns[i],
                deliver_ns: p.recv_ns[i],
                via: Via::Datagram,
                wire_ns: None,
                stream_ns: None,
            })
            .collect();
        rows.sort_by_key(|r| r.id);
        crate::tcp::records::write_series(path, &rows)?;
    }
    if let Some(path) = &a.series {
        let owd_col: Vec<i64> = (0..p.seq.len())
            .map(|i| p.recv_ns[i] as i64 - p.send_ns[i] as i64)
            .collect();
        output::write_series(
            path,
            vec![
                ("seq", Arc::new(UInt64Array::from(p.seq)) as ArrayRef),
                (
                    "send_ns",
                    Arc::new(Int64Array::from_iter_values(p.send_ns.iter().map(|&x| x as i64))),
                ),
                (
                    "recv_ns",
                    Arc::new(Int64Array::from_iter_values(p.recv_ns.iter().map(|&x| x as i64))),
                ),
                ("owd_ns", Arc::new(Int64Array::from(owd_col))),
                ("size", Arc::new(UInt32Array::from(p.size))),
                ("duplicate", Arc::new(BooleanArray::from(p.duplicate))),
            ],
        )?;
    }
    let summary = output::envelope("udp-recv", params, start_ns, end_ns, stopped_by, results);
    output::write_summary(&a.summary, &summary)
}
