//! echo (UDP reflector) and probe (RTT measurement against an echo).

use std::net::UdpSocket;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use agent_proto::wire::stamp::{self, ProbeStamp};
use anyhow::Context;
use arrow_array::{ArrayRef, Int64Array, UInt64Array};
use serde::Serialize;

use crate::udp::{unspecified_for, MAX_PAYLOAD};
use crate::{output, sys, usage, EchoArgs, ProbeArgs};
use agent_proto::summary::{ProbeDelays, ProbeLoss};

const POLL: Duration = Duration::from_millis(100);

#[derive(Serialize)]
struct EchoParams<'a> {
    bind: String,
    duration_ns: Option<u64>,
    stamp: bool,
    rcvbuf: u64,
    summary: Option<&'a Path>,
}

#[derive(Serialize)]
struct EchoResults {
    port: u16,
    packets: u64,
    bytes: u64,
    send_errors: u64,
    socket_drops: Option<u64>,
    rcvbuf: u64,
}

pub fn echo(a: EchoArgs) -> anyhow::Result<()> {
    let sock = UdpSocket::bind(a.bind).with_context(|| format!("cannot bind {}", a.bind))?;
    let rcvbuf = sys::set_rcvbuf(&sock, a.rcvbuf).context("cannot set SO_RCVBUF")?;
    sock.set_read_timeout(Some(POLL))?;
    let port = sock.local_addr()?.port();
    let start_ns = sys::now_ns();
    let deadline = a.duration.map(|d| start_ns + d);
    output::announce_ready(port);

    let mut buf = [0u8; 65536];
    let mut packets = 0u64;
    let mut bytes = 0u64;
    let mut send_errors = 0u64;
    let stopped_by = loop {
        let (n, peer) = match sock.recv_from(&mut buf) {
            Ok(x) => x,
            Err(e) if sys::is_retry(&e) => {
                if sys::stop_requested() {
                    break "signal";
                }
                if deadline.is_some_and(|d| sys::now_ns() >= d) {
                    break "duration";
                }
                continue;
            }
            Err(e) => return Err(e).context("recv failed"),
        };
        if a.stamp {
            // A datagram too short for the echo time is reflected unchanged.
            let _ = stamp::set_echo_ns(&mut buf[..n], sys::now_ns());
        }
        match sock.send_to(&buf[..n], peer) {
            Ok(_) => {
                packets += 1;
                bytes += n as u64;
            }
            Err(_) => send_errors += 1,
        }
        // Checked after the reply so it never delays an echo.
        if sys::stop_requested() {
            break "signal";
        }
        if deadline.is_some_and(|d| sys::now_ns() >= d) {
            break "duration";
        }
    };
    if let Some(path) = &a.summary {
        let params = EchoParams {
            bind: a.bind.to_string(),
            duration_ns: a.duration,
            stamp: a.stamp,
            rcvbuf: a.rcvbuf,
            summary: a.summary.as_deref(),
        };
        let results = EchoResults {
            port,
            packets,
            bytes,
            send_errors,
            socket_drops: sys::udp_socket_drops(&sock),
            rcvbuf,
        };
        let summary = output::envelope("echo", params, start_ns, sys::now_ns(), stopped_by, results);
        output::write_summary(path, &summary)?;
    }
    Ok(())
}

/// One echo as seen by the probe's receive thread.
struct Reply {
    seq: u64,
    recv_ns: u64,
    echo_ns: u64,
}

#[derive(Serialize)]
struct ProbeParams<'a> {
    to: String,
    interval_ns: u64,
    count: Option<u64>,
    duration_ns: Option<u64>,
    size: u64,
    timeout_ns: u64,
    summary: &'a Path,
    series: Option<&'a Path>,
}

#[derive(Serialize)]
struct ProbeResults {
    #[serde(flatten)]
    loss: ProbeLoss,
    late: u64,
    duplicates: u64,
    unknown: u64,
    send_errors: u64,
    #[serde(flatten)]
    delays: ProbeDelays,
}

pub fn probe(a: ProbeArgs) -> anyhow::Result<()> {
    if a.size < stamp::PROBE_LEN as u64 || a.size > MAX_PAYLOAD {
        usage!(
            "--size {} out of range: must be {}..={MAX_PAYLOAD} bytes",
            a.size,
            stamp::PROBE_LEN
        );
    }
    let count = match (a.count, a.duration) {
        (Some(c), _) => c,
        (None, Some(d)) => d.div_ceil(a.interval),
        (None, None) => unreachable!("clap requires --count or --duration"),
    };
    if count > 100_000_000 {
        usage!("{count} probes is too many (interval too small for the duration?)");
    }
    let params = ProbeParams {
        to: a.to.to_string(),
        interval_ns: a.interval,
        count: a.count,
        duration_ns: a.duration,
        size: a.size,
        timeout_ns: a.timeout,
        summary: &a.summary,
        series: a.series.as_deref(),
    };
    let sock = UdpSocket::bind(unspecified_for(&a.to)).context("cannot create UDP socket")?;
    sock.connect(a.to)
        .with_context(|| format!("cannot connect UDP socket to {}", a.to))?;
    sock.set_read_timeout(Some(Duration::from_millis(10)))?;
    let rsock = sock.try_clone()?;

    let done = Arc::new(AtomicBool::new(false));
    let received = Arc::new(AtomicU64::new(0));
    let receiver = {
        let done = done.clone();
        let received = received.clone();
        let size = a.size as usize;
        thread::Builder::new()
            .name("probe-recv".into())
            .spawn(move || -> Vec<Reply> {
                let mut replies = Vec::with_capacity(count.min(1 << 20) as usize);
                let mut buf = vec![0u8; size.max(65536)];
                while !done.load(Ordering::Acquire) {
                    // Errors are timeouts, and ECONNREFUSED while the echo is not up.
                    if let Ok(n) = rsock.recv(&mut buf) {
                        let recv_ns = sys::now_ns();
                        // Too short to be one of ours: ignored.
                        if let Ok(p) = ProbeStamp::decode(&buf[..n]) {
                            replies.push(Reply {
                                seq: p.seq,
                                recv_ns,
                                echo_ns: p.echo_ns,
                            });
                            received.fetch_add(1, Ordering::Release);
                        }
                    }
                }
                replies
            })?
    };

    let mut buf = vec![0u8; a.size as usize];
    let mut send_ns = Vec::with_capacity(count.min(1 << 24) as usize);
    let mut send_errors = 0u64;
    let start_ns = sys::now_ns();
    let mut stopped_by = "count";
    for seq in 0..count {
        sys::sleep_until(start_ns + seq * a.interval);
        if sys::stop_requested() {
            stopped_by = "signal";
            break;
        }
        let now = sys::now_ns();
        ProbeStamp {
            seq,
            send_ns: now,
            echo_ns: 0,
        }
        .emit(&mut buf)?;
        if sock.send(&buf).is_err() {
            send_errors += 1;
        }
        send_ns.push(now);
    }
    if a.count.is_none() && stopped_by == "count" {
        stopped_by = "duration";
    }
    // Wait for outstanding echoes: up to `timeout` after the last send, or until all came.
    let sent = send_ns.len() as u64;
    let wait_until = send_ns.last().map(|&l| l + a.timeout).unwrap_or(0);
    while sys::now_ns() < wait_until && received.load(Ordering::Acquire) < sent && !sys::stop_requested() {
        thread::sleep(Duration::from_micros(500));
    }
    done.store(true, Ordering::Release);
    let replies = receiver
        .join()
        .map_err(|_| anyhow::anyhow!("receive thread panicked"))?;
    let end_ns = sys::now_ns();

    // Match echoes to probes by seq; the first echo counts, later copies are duplicates.
    let n = send_ns.len();
    let mut recv_ns: Vec<Option<u64>> = vec![None; n];
    let mut echo_ns: Vec<Option<u64>> = vec![None; n];
    let mut duplicates = 0u64;
    let mut late = 0u64;
    let mut unknown = 0u64;
    for r in &replies {
        let Some(i) = usize::try_from(r.seq).ok().filter(|&i| i < n) else {
            unknown += 1;
            continue;
        };
        if recv_ns[i].is_some() {
            duplicates += 1;
            continue;
        }
        if r.recv_ns.saturating_sub(send_ns[i]) > a.timeout {
            late += 1;
            continue;
        }
        recv_ns[i] = Some(r.recv_ns);
        echo_ns[i] = (r.echo_ns != 0).then_some(r.echo_ns);
    }
    let rtt: Vec<Option<i64>> = (0..n)
        .map(|i| recv_ns[i].map(|r| r as i64 - send_ns[i] as i64))
        .collect();
    let rtts: Vec<f64> = rtt.iter().flatten().map(|&r| r as f64).collect();
    let fwd: Vec<f64> = (0..n)
        .filter_map(|i| echo_ns[i].map(|e| e as f64 - send_ns[i] as f64))
        .collect();
    let rev: Vec<f64> = (0..n)
        .filter_map(|i| match (echo_ns[i], recv_ns[i]) {
            (Some(e), Some(r)) => Some(r as f64 - e as f64),
            _ => None,
        })
        .collect();
    let results = ProbeResults {
        loss: ProbeLoss::new(sent, rtts.len() as u64),
        late,
        duplicates,
        unknown,
        send_errors,
        delays: ProbeDelays::new(&rtts, &fwd, &rev),
    };
    if let Some(path) = &a.series {
        output::write_series(
            path,
            vec![
                ("seq", Arc::new(UInt64Array::from_iter_values(0..n as u64)) as ArrayRef),
                (
                    "send_ns",
                    Arc::new(Int64Array::from_iter_values(send_ns.iter().map(|&x| x as i64))),
                ),
                (
                    "recv_ns",
                    Arc::new(Int64Array::from_iter(recv_ns.iter().map(|x| x.map(|v| v as i64)))),
                ),
                ("rtt_ns", Arc::new(Int64Array::from(rtt))),
                (
                    "echo_ns",
                    Arc::new(Int64Array::from_iter(echo_ns.iter().map(|x| x.map(|v| v as i64)))),
                ),
            ],
        )?;
    }
    let summary = output::envelope("probe", params, start_ns, end_ns, stopped_by, results);
    output::write_summary(&a.summary, &summary)
}
