//! Constant-rate UDP (`agent udp-send` / `udp-recv`): a datagram of `size` bytes every
//! `interval`, each stamped with its sequence number and send time; the receiver's
//! statistics are the agent's (loss, one-way delay, RFC 3550 jitter, RFC 3393 ipdv).

use std::net::SocketAddrV4;
use std::path::Path;

use agent_proto::stats;
use agent_proto::wire::stamp::{Stamp, LEN};
use linkem::Nanos;
use serde::Serialize;

use super::pacer::{Pacer, Schedule};
use super::{udp, write_summary, Endpoint};
use crate::datagram::Datagram;

pub struct UdpSender {
    name: String,
    addr: SocketAddrV4,
    to: SocketAddrV4,
    size: usize,
    start: Nanos,
    pacer: Pacer,
}

impl UdpSender {
    pub fn new(name: &str, addr: SocketAddrV4, to: SocketAddrV4, s: Schedule, start: Nanos, end: Nanos) -> Self {
        UdpSender {
            name: name.to_string(),
            addr,
            to,
            size: (s.size as usize).max(LEN),
            start,
            pacer: Pacer::new(&s, start, end),
        }
    }
}

#[derive(Serialize)]
struct SendResults {
    sent: u64,
    bytes: u64,
    rate_bps: Option<f64>,
}

impl Endpoint for UdpSender {
    fn address(&self) -> (u8, SocketAddrV4) {
        udp(self.addr)
    }

    fn receive(&mut self, _now: Nanos, _packet: &[u8]) {}

    fn poll(&mut self, now: Nanos, out: &mut Vec<Vec<u8>>) {
        let stamp = |seq, send_ns, payload: &mut [u8]| {
            Stamp { seq, send_ns }.emit(payload).expect("payload holds a stamp");
        };
        self.pacer.send_due(now, (self.addr, self.to), self.size, stamp, out);
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        self.pacer.next_wakeup()
    }

    fn finished(&self) -> bool {
        self.pacer.done()
    }

    fn write_summary(&mut self, raw: &Path, end: Nanos) -> std::io::Result<()> {
        let sent = self.pacer.sent();
        let (span, burst) = self.pacer.span();
        let bytes = sent * self.size as u64;
        let results = SendResults {
            sent,
            bytes,
            rate_bps: (span > 0).then(|| (bytes - burst * self.size as u64) as f64 * 8.0 / (span as f64 / 1e9)),
        };
        let stopped_by = if self.pacer.counted_out() { "count" } else { "duration" };
        write_summary(
            &raw.join(format!("{}-client.json", self.name)),
            "udp-send",
            self.start,
            end,
            stopped_by,
            &results,
        )
    }
}

pub struct UdpReceiver {
    name: String,
    addr: SocketAddrV4,
    start: Nanos,
    /// (seq, send_ns, recv_ns, size) of every datagram, in arrival order.
    got: Vec<(u64, u64, u64, usize)>,
}

impl UdpReceiver {
    pub fn new(name: &str, addr: SocketAddrV4, start: Nanos) -> Self {
        UdpReceiver {
            name: name.to_string(),
            addr,
            start,
            got: Vec::new(),
        }
    }
}

#[derive(Serialize)]
struct RecvResults {
    received: u64,
    unique: u64,
    duplicates: u64,
    expected: u64,
    lost: u64,
    loss_rate: Option<f64>,
    bytes: u64,
    owd: Option<stats::Scaled>,
    jitter_rfc3550_ms: Option<f64>,
    ipdv_rfc3393_ms: Option<f64>,
}

impl Endpoint for UdpReceiver {
    fn address(&self) -> (u8, SocketAddrV4) {
        udp(self.addr)
    }

    fn receive(&mut self, now: Nanos, packet: &[u8]) {
        let Some(datagram) = Datagram::from_packet(packet) else {
            return;
        };
        if let Ok(s) = Stamp::decode(&datagram.payload) {
            self.got.push((s.seq, s.send_ns, now, datagram.payload.len()));
        }
    }

    fn poll(&mut self, _now: Nanos, _out: &mut Vec<Vec<u8>>) {}

    fn next_wakeup(&self) -> Option<Nanos> {
        None
    }

    fn finished(&self) -> bool {
        true
    }

    fn write_summary(&mut self, raw: &Path, end: Nanos) -> std::io::Result<()> {
        let mut seen = std::collections::HashSet::new();
        let unique: Vec<_> = self.got.iter().filter(|g| seen.insert(g.0)).collect();
        let expected = unique.iter().map(|g| g.0 + 1).max().unwrap_or(0);
        let owd: Vec<f64> = unique.iter().map(|g| g.2 as f64 - g.1 as f64).collect();
        let arrivals: Vec<(i64, i64)> = unique.iter().map(|g| (g.1 as i64, g.2 as i64)).collect();
        let by_seq: Vec<(u64, i64)> = unique.iter().map(|g| (g.0, g.2 as i64 - g.1 as i64)).collect();
        let n = unique.len() as u64;
        let results = RecvResults {
            received: self.got.len() as u64,
            unique: n,
            duplicates: self.got.len() as u64 - n,
            expected,
            lost: expected - n,
            loss_rate: (expected > 0).then(|| (expected - n) as f64 / expected as f64),
            bytes: self.got.iter().map(|g| g.3 as u64).sum(),
            owd: stats::scaled(&owd, 1e6, "ms"),
            jitter_rfc3550_ms: (arrivals.len() > 1).then(|| stats::rfc3550_jitter(&arrivals) / 1e6),
            ipdv_rfc3393_ms: stats::rfc3393_ipdv(&by_seq).map(|(m, _)| m / 1e6),
        };
        write_summary(
            &raw.join(format!("{}-server.json", self.name)),
            "udp-recv",
            self.start,
            end,
            "duration",
            &results,
        )
    }
}
