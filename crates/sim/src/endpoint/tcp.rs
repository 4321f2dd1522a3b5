//! TCP with smoltcp — a sans-IO TCP stack, not Linux: its congestion control is Reno or
//! CUBIC as smoltcp implements them (its window bounds data in flight), no SACK-based
//! recovery, its own delayed ACKs (10 ms). Each end is a smoltcp interface on an IP
//! "device" whose packets the simulator carries; smoltcp's clock is the simulator's, in
//! microseconds. The application is the agent's bulk transfer, with its request
//! (`agent_proto::wire::request`).

use std::cell::Cell;
use std::collections::VecDeque;
use std::net::SocketAddrV4;
use std::path::Path;

use linkem::Nanos;
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::phy::{Device, DeviceCapabilities, Medium, RxToken, TxToken};
use smoltcp::socket::tcp::{CongestionControl, Socket, SocketBuffer, State};
use smoltcp::time::Instant as SmolInstant;
use smoltcp::wire::{HardwareAddress, IpAddress, IpCidr};
use wire::{Ipv4Packet, TcpPacket};

use super::bulk::{client_request, Bulk, ClientLife, SummaryOf, TcpSetup};
use super::tcp_series::{self, Sample};
use super::{Delivered, Endpoint, SampleGrid, Series};

/// Send and receive buffers of each socket: above the bandwidth-delay product of
/// 1 Gbit/s × 50 ms, so the window, not the buffer, limits a transfer (Linux autotunes
/// its buffers up to net.ipv4.tcp_{r,w}mem's maximum, 6 MiB and 4 MiB by default).
///
/// The buffers are zeroed memory the kernel maps only when written, so a send buffer
/// costs memory only where something other than zeros was written (the request): the
/// bulk data are zeros, which the sender enqueues without writing them (see
/// [`Transfer::write`]), and smoltcp only reads its send buffer. The receive buffer is
/// written by smoltcp and costs its capacity once its ring has turned.
const BUFFER_BYTES: usize = 8 << 20;
const MTU: usize = 1500;
const CHUNK: usize = 65536;

/// The stack's name in the summaries.
const STACK: &str = "smoltcp";

/// The congestion controls smoltcp has, by the lab's names.
pub const CONTROLLERS: [&str; 2] = ["reno", "cubic"];

/// smoltcp's device: the packets the simulator delivered, and those smoltcp sends; its
/// IP MTU sets smoltcp's MSS (MTU − 40).
struct Wire {
    rx: VecDeque<Vec<u8>>,
    tx: Vec<Vec<u8>>,
    mtu: usize,
}

struct Rx(Vec<u8>);
struct Tx<'a>(&'a mut Vec<Vec<u8>>);

impl RxToken for Rx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

impl TxToken for Tx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut b = vec![0u8; len];
        let r = f(&mut b);
        self.0.push(b);
        r
    }
}

impl Device for Wire {
    type RxToken<'a> = Rx;
    type TxToken<'a> = Tx<'a>;

    fn receive(&mut self, _t: SmolInstant) -> Option<(Rx, Tx<'_>)> {
        let p = self.rx.pop_front()?;
        Some((Rx(p), Tx(&mut self.tx)))
    }

    fn transmit(&mut self, _t: SmolInstant) -> Option<Tx<'_>> {
        Some(Tx(&mut self.tx))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut c = DeviceCapabilities::default();
        c.medium = Medium::Ip;
        c.max_transmission_unit = self.mtu;
        c
    }
}

/// Sequence-space order (RFC 793's modular comparison).
fn seq_lt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// What the endpoint measures of its own connection from the segments smoltcp sends and
/// the acknowledgements it receives, because smoltcp keeps its RTT estimator and its
/// congestion window private: the RTT of one segment at a time (RFC 6298, with Karn's
/// rule: no sample from a retransmitted segment, a retransmission abandons the timing),
/// smoothed as RFC 6298 does; the data outstanding (highest sequence number sent −
/// highest acknowledgement), which smoltcp's window bounds except after a retransmission
/// timeout, when smoltcp forgets what it sent and sends it again; and its retransmissions
/// (segments sent again below the highest sequence number sent).
#[derive(Default)]
struct Meter {
    snd_max: Option<u32>,
    acked: Option<u32>,
    /// The segment being timed (its end) and when it left.
    timing: Option<(u32, Nanos)>,
    srtt_ns: Option<f64>,
    rttvar_ns: f64,
    min_rtt_ns: Option<Nanos>,
    retransmits: u64,
    grid: SampleGrid,
}

/// (sequence number, sequence space used, ack number if ACK is set) of an IPv4/TCP packet.
fn tcp_fields(p: &[u8]) -> Option<(u32, u32, Option<u32>)> {
    let ip = Ipv4Packet::new_checked(p).ok()?;
    let t = TcpPacket::new_checked(ip.transport()).ok()?;
    Some((t.seq_number(), t.segment_len(), t.ack().then(|| t.ack_number())))
}

impl Meter {
    fn sent(&mut self, now: Nanos, packet: &[u8]) {
        let Some((seq, len, _)) = tcp_fields(packet) else {
            return;
        };
        if len == 0 {
            return;
        }
        let end = seq.wrapping_add(len);
        match self.snd_max {
            Some(max) if !seq_lt(seq, max) => {
                self.timing.get_or_insert((end, now));
                self.snd_max = Some(end);
            }
            Some(max) => {
                self.retransmits += 1;
                self.timing = None;
                if seq_lt(max, end) {
                    self.snd_max = Some(end);
                }
            }
            None => {
                self.timing = Some((end, now));
                self.snd_max = Some(end);
            }
        }
    }

    fn received(&mut self, now: Nanos, packet: &[u8]) {
        let Some((_, _, Some(ack))) = tcp_fields(packet) else {
            return;
        };
        if self.acked.is_none_or(|a| seq_lt(a, ack)) {
            self.acked = Some(ack);
        }
        if let Some((end, t)) = self.timing {
            if !seq_lt(ack, end) {
                self.timing = None;
                let r = now.saturating_sub(t);
                self.min_rtt_ns = Some(self.min_rtt_ns.map_or(r, |m| m.min(r)));
                let r = r as f64;
                match self.srtt_ns {
                    None => {
                        self.srtt_ns = Some(r);
                        self.rttvar_ns = r / 2.0;
                    }
                    Some(s) => {
                        self.rttvar_ns = 0.75 * self.rttvar_ns + 0.25 * (s - r).abs();
                        self.srtt_ns = Some(0.875 * s + 0.125 * r);
                    }
                }
            }
        }
    }

    fn in_flight(&self) -> u64 {
        match (self.acked, self.snd_max) {
            (Some(a), Some(max)) if seq_lt(a, max) => u64::from(max.wrapping_sub(a)),
            _ => 0,
        }
    }

    /// Samples at the first poll at or after each deadline of the 10 ms grid (from the
    /// first poll), while the connection is open: the row, when one is due.
    fn sample(&mut self, now: Nanos, bytes: u64) -> Option<Sample> {
        if !self.grid.due(now) {
            return None;
        }
        let us = |ns: f64| (ns / 1e3).round() as u64;
        let row = Sample {
            t_ns: now,
            bytes,
            window: None,
            srtt_us: self.srtt_ns.map(us),
            rttvar_us: self.srtt_ns.map(|_| us(self.rttvar_ns)),
            min_rtt_us: self.min_rtt_ns.map(|m| us(m as f64)),
            bytes_in_flight: self.in_flight(),
            total_retrans: self.retransmits,
        };
        Some(row)
    }
}

fn smol(ns: Nanos) -> SmolInstant {
    SmolInstant::from_micros((ns / 1000) as i64)
}

/// One end: a smoltcp interface at `addr`'s IP with one TCP socket.
struct Stack {
    addr: SocketAddrV4,
    wire: Wire,
    iface: Interface,
    sockets: SocketSet<'static>,
    socket: SocketHandle,
    wake: Option<Nanos>,
    meter: Meter,
    series: Series<Sample>,
    /// Where the socket's send buffer starts in memory (to place what is written in it).
    tx_base: usize,
}

impl Stack {
    /// `series`: the file of its time series.
    fn new(addr: SocketAddrV4, cc: CongestionControl, seed: u64, mss: Option<u16>, series: &Path) -> Stack {
        let mut wire = Wire {
            rx: VecDeque::new(),
            tx: Vec::new(),
            mtu: mss.map_or(MTU, |m| usize::from(m) + 40),
        };
        let mut config = Config::new(HardwareAddress::Ip);
        config.random_seed = seed;
        let mut iface = Interface::new(config, &mut wire, SmolInstant::ZERO);
        iface.update_ip_addrs(|a| {
            a.push(IpCidr::new(IpAddress::Ipv4(*addr.ip()), 16))
                .expect("one address");
        });
        let tx = vec![0u8; BUFFER_BYTES];
        let tx_base = tx.as_ptr() as usize;
        let mut socket = Socket::new(SocketBuffer::new(vec![0u8; BUFFER_BYTES]), SocketBuffer::new(tx));
        socket.set_congestion_control(cc);
        let mut sockets = SocketSet::new(Vec::new());
        let socket = sockets.add(socket);
        Stack {
            addr,
            wire,
            iface,
            sockets,
            socket,
            wake: None,
            meter: Meter::default(),
            series: Series::new(series, tcp_series::schema(false)),
            tx_base,
        }
    }

    /// An IPv4 packet for this end: measured, then queued for smoltcp.
    /// Samples the connection into the series when a row is due (`Meter::sample`).
    fn sample(&mut self, now: Nanos, bytes: u64) {
        if let Some(row) = self.meter.sample(now, bytes) {
            self.series.push(row);
        }
    }

    fn receive(&mut self, now: Nanos, packet: &[u8]) {
        self.meter.received(now, packet);
        self.wire.rx.push_back(packet.to_vec());
    }

    fn socket(&mut self) -> &mut Socket<'static> {
        self.sockets.get_mut::<Socket>(self.socket)
    }

    /// Lets smoltcp process what arrived and send what it can, runs `app` on the socket,
    /// and lets it send again; the packets go to `out`.
    fn drive(&mut self, now: Nanos, out: &mut Vec<Vec<u8>>, mut app: impl FnMut(&mut Socket<'static>)) {
        let t = smol(now);
        self.iface.poll(t, &mut self.wire, &mut self.sockets);
        app(self.sockets.get_mut::<Socket>(self.socket));
        self.iface.poll(t, &mut self.wire, &mut self.sockets);
        for p in &self.wire.tx {
            self.meter.sent(now, p);
        }
        out.append(&mut self.wire.tx);
        self.wake = self
            .iface
            .poll_at(t, &self.sockets)
            .map(|w| (w.total_micros().max(0) as u64) * 1000);
    }
}

/// The transfer of one end: the application's account, and where in memory the socket's
/// send buffer lies.
struct Transfer {
    bulk: Bulk,
    /// The start of the socket's send buffer in memory ([`Stack::tx_base`]), and the part
    /// of it (offsets) that may hold bytes other than zeros.
    tx_base: usize,
    tx_dirty: Option<(usize, usize)>,
}

impl Transfer {
    fn new(stack: &Stack, bulk: Bulk) -> Transfer {
        Transfer {
            bulk,
            tx_base: stack.tx_base,
            tx_dirty: None,
        }
    }

    /// Enqueues `data` (the request) as `send_slice` does, remembering where in the send
    /// buffer it lies.
    fn send_bytes(&mut self, s: &mut Socket<'static>, data: &[u8]) -> Result<usize, smoltcp::socket::tcp::SendError> {
        let mut done = 0;
        while done < data.len() {
            let (base, dirty) = (self.tx_base, &mut self.tx_dirty);
            let w = s.send(|buf| {
                let k = buf.len().min(data.len() - done);
                buf[..k].copy_from_slice(&data[done..done + k]);
                let at = buf.as_ptr() as usize - base;
                *dirty = Some(dirty.map_or((at, at + k), |(a, b)| (a.min(at), b.max(at + k))));
                (k, k)
            })?;
            if w == 0 {
                break;
            }
            done += w;
        }
        Ok(done)
    }

    /// Enqueues the bulk data — zeros — up to the limit or a full buffer. The buffer's
    /// memory is zeros except where the request was written, so only that part is written
    /// (once the ring comes round to it); the rest is enqueued without touching its pages.
    /// smoltcp sends the same bytes as if every zero had been copied in.
    fn write(&mut self, s: &mut Socket<'static>) {
        let b = &mut self.bulk;
        while s.can_send() && b.p.sent < b.limit {
            let n = (b.limit - b.p.sent).min(CHUNK as u64) as usize;
            let (base, dirty) = (self.tx_base, &mut self.tx_dirty);
            let w = s.send(|buf| {
                let k = buf.len().min(n);
                if let Some((a, b)) = *dirty {
                    let at = buf.as_ptr() as usize - base;
                    let (lo, hi) = (a.max(at), b.min(at + k));
                    if lo < hi {
                        buf[lo - at..hi - at].fill(0);
                    }
                    if at <= a && b <= at + k {
                        *dirty = None;
                    }
                }
                (k, k)
            });
            match w {
                Ok(w) if w > 0 => b.p.sent += w as u64,
                _ => break,
            }
        }
        if b.p.sent >= b.limit && s.may_send() {
            s.close();
        }
    }

    /// Reads what arrived (the request first, if `want_request`), counting the payload
    /// into `delivered`.
    fn read(&mut self, s: &mut Socket<'static>, want_request: bool, delivered: &Cell<Delivered>, now: Nanos) {
        let b = &mut self.bulk;
        let before = b.p.received;
        while s.can_recv() {
            let got = s.recv(|buf| {
                let request = if want_request { b.take_request(buf) } else { 0 };
                (buf.len(), buf.len() - request)
            });
            match got {
                Ok(n) => b.p.received += n as u64,
                Err(_) => break,
            }
        }
        Delivered::add(delivered, b.p.received - before, now);
    }
}

fn congestion_control(name: &str) -> Result<CongestionControl, String> {
    match name {
        "reno" => Ok(CongestionControl::Reno),
        "cubic" => Ok(CongestionControl::Cubic),
        other => Err(format!(
            "cc {other:?}: smoltcp has {} (the simulator's TCP)",
            CONTROLLERS.join(" and ")
        )),
    }
}

pub struct TcpClient {
    of: SummaryOf,
    stack: Stack,
    server: SocketAddrV4,
    life: ClientLife,
    transfer: Transfer,
}

impl TcpClient {
    pub fn new(
        setup: TcpSetup,
        addr: SocketAddrV4,
        server: SocketAddrV4,
        start: Nanos,
        end: Nanos,
        upload: bool,
        bytes: Option<u64>,
    ) -> Result<TcpClient, String> {
        let series = setup.raw.join(format!("{}-client.arrow", setup.name));
        let stack = Stack::new(addr, congestion_control(&setup.cc)?, setup.seed, setup.mss, &series);
        let transfer = Transfer::new(&stack, Bulk::new(upload, bytes.unwrap_or(u64::MAX)));
        Ok(TcpClient {
            of: SummaryOf::new(&setup, STACK, start),
            stack,
            server,
            life: ClientLife::new(start, end),
            transfer,
        })
    }
}

impl Endpoint for TcpClient {
    fn address(&self) -> (u8, SocketAddrV4) {
        (wire::ipv4::protocol::TCP, self.stack.addr)
    }

    fn receive(&mut self, now: Nanos, packet: &[u8]) {
        self.stack.receive(now, packet);
    }

    fn poll(&mut self, now: Nanos, out: &mut Vec<Vec<u8>>) {
        let life = &mut self.life;
        if now < life.start || life.closed {
            return;
        }
        if !life.started {
            life.started = true;
            let (ip, port, local) = (*self.server.ip(), self.server.port(), self.stack.addr.port());
            let cx = self.stack.iface.context();
            let socket = self.stack.sockets.get_mut::<Socket>(self.stack.socket);
            if socket.connect(cx, (IpAddress::Ipv4(ip), port), local).is_err() {
                life.closed = true;
                return;
            }
        }
        let delivered = self.of.delivered.clone();
        let t = &mut self.transfer;
        self.stack.drive(now, out, |s| {
            if s.state() == State::Established {
                life.established(now);
            }
            if life.connected_ns.is_some() && !life.requested && s.can_send() {
                let request = client_request(t.bulk.p.upload, t.bulk.limit, now, life.stop);
                life.requested = t.send_bytes(s, &request).is_ok();
            }
            if life.requested {
                if t.bulk.p.upload {
                    t.write(s);
                } else {
                    t.read(s, false, &delivered, now);
                    if !s.may_recv() {
                        t.bulk.complete_at(Some(now));
                    }
                }
            }
            let b = &mut t.bulk;
            if b.p.upload && b.p.sent >= b.limit && delivered.get().bytes >= b.limit {
                b.complete_at(delivered.get().last_ns);
            }
            if now >= life.stop || (b.p.complete && !b.p.upload) {
                s.abort();
                life.closed = true;
            }
        });
        if self.life.connected_ns.is_some() {
            self.stack.sample(now, self.transfer.bulk.series_bytes(true));
        }
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        self.life.next_wakeup(self.stack.wake)
    }

    fn finished(&self) -> bool {
        self.life.closed || self.transfer.bulk.p.complete
    }

    fn write_summary(&mut self, raw: &Path, end: Nanos) -> std::io::Result<()> {
        self.stack.series.finish()?;
        // Segments this end sent again (counted by the endpoint: smoltcp keeps no count).
        let retransmits = Some(self.stack.meter.retransmits);
        let p = &self.transfer.bulk.p;
        self.of.write_client(raw, end, p, retransmits)
    }
}

pub struct TcpServer {
    of: SummaryOf,
    stack: Stack,
    transfer: Transfer,
    accepted: bool,
}

impl TcpServer {
    pub fn new(setup: TcpSetup, addr: SocketAddrV4, start: Nanos) -> Result<TcpServer, String> {
        let series = setup.raw.join(format!("{}-server.arrow", setup.name));
        let mut stack = Stack::new(
            addr,
            congestion_control(&setup.cc)?,
            setup.seed ^ 0x5EED,
            setup.mss,
            &series,
        );
        stack
            .socket()
            .listen(addr.port())
            .map_err(|e| format!("listen on {addr}: {e}"))?;
        // Until the request says otherwise: the client downloads nothing.
        let transfer = Transfer::new(&stack, Bulk::new(false, 0));
        Ok(TcpServer {
            of: SummaryOf::new(&setup, STACK, start),
            stack,
            transfer,
            accepted: false,
        })
    }
}

impl Endpoint for TcpServer {
    fn address(&self) -> (u8, SocketAddrV4) {
        (wire::ipv4::protocol::TCP, self.stack.addr)
    }

    fn receive(&mut self, now: Nanos, packet: &[u8]) {
        self.stack.receive(now, packet);
    }

    fn poll(&mut self, now: Nanos, out: &mut Vec<Vec<u8>>) {
        let delivered = self.of.delivered.clone();
        let t = &mut self.transfer;
        let accepted = &mut self.accepted;
        self.stack.drive(now, out, |s| {
            if s.is_active() {
                *accepted = true;
            }
            if !t.bulk.request_read() || t.bulk.p.upload {
                t.read(s, true, &delivered, now);
            }
            if t.bulk.request_read() && !t.bulk.p.upload {
                t.write(s);
                t.bulk.p.complete = t.bulk.p.sent >= t.bulk.limit;
            }
            if t.bulk.p.upload && !s.may_recv() && *accepted && t.bulk.request_read() {
                t.bulk.complete_at(Some(now));
            }
        });
        if self.accepted && self.stack.socket().is_active() {
            self.stack.sample(now, self.transfer.bulk.series_bytes(false));
        }
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        self.stack.wake
    }

    fn finished(&self) -> bool {
        true
    }

    fn write_summary(&mut self, raw: &Path, end: Nanos) -> std::io::Result<()> {
        self.stack.series.finish()?;
        let retransmits = Some(self.stack.meter.retransmits);
        let p = &self.transfer.bulk.p;
        self.of.write_server(raw, end, self.accepted, p, retransmits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoint::bulk::REQUEST_LEN;
    use crate::endpoint::SAMPLE_INTERVAL;
    use std::rc::Rc;
    use wire::ipv4::{protocol, Ipv4Repr};
    use wire::tcp::flags;

    /// An IPv4/TCP packet with `len` payload bytes (flags: ACK, plus SYN if `syn`).
    fn segment(seq: u32, ack: u32, len: usize, syn: bool) -> Vec<u8> {
        let t = wire::tcp::TcpRepr {
            seq,
            ack,
            flags: flags::ACK | if syn { flags::SYN } else { 0 },
            ..Default::default()
        };
        let ip = Ipv4Repr::new([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), protocol::TCP);
        wire::build::tcp(&ip, &t, &vec![0; len]).unwrap()
    }

    #[test]
    fn meter_times_one_segment_and_keeps_karns_rule() {
        let mut m = Meter::default();
        m.sent(0, &segment(u32::MAX - 1000, 0, 0, true));
        m.received(20_000_000, &segment(7, u32::MAX - 999, 0, true));
        assert_eq!(m.srtt_ns, Some(20e6));
        // Data across the sequence-number wrap: timed, acknowledged 30 ms later.
        m.sent(21_000_000, &segment(u32::MAX - 999, 8, 1460, false));
        m.sent(
            21_000_000,
            &segment((u32::MAX - 999).wrapping_add(1460), 8, 1460, false),
        );
        assert_eq!(m.in_flight(), 2920);
        m.received(51_000_000, &segment(8, (u32::MAX - 999).wrapping_add(1460), 0, false));
        assert_eq!(m.srtt_ns, Some(0.875 * 20e6 + 0.125 * 30e6));
        assert_eq!(
            (m.min_rtt_ns, m.retransmits, m.in_flight()),
            (Some(20_000_000), 0, 1460)
        );
        // The next segment is timed, then sent again: no sample from its acknowledgement.
        let seq = (u32::MAX - 999).wrapping_add(2920);
        m.sent(52_000_000, &segment(seq, 8, 1460, false));
        m.sent(
            60_000_000,
            &segment((u32::MAX - 999).wrapping_add(1460), 8, 1460, false),
        );
        let before = m.srtt_ns;
        m.received(90_000_000, &segment(8, seq.wrapping_add(1460), 0, false));
        assert_eq!((m.srtt_ns, m.retransmits, m.in_flight()), (before, 1, 0));
        let s = m.sample(90_000_000, 4380).expect("the first sample is due at once");
        assert_eq!(
            (s.srtt_us, s.min_rtt_us, s.total_retrans),
            (Some(21_250), Some(20_000), 1)
        );
    }

    /// The bulk data are enqueued without being written, but the bytes on the wire are
    /// what a copy of zeros would give: the request at the stream's start, zeros after —
    /// also once the send buffer's ring has come round to where the request lay.
    #[test]
    fn bulk_data_are_zeros_after_the_request_when_the_send_ring_turns() {
        let delivered = Rc::new(Cell::new(Delivered::default()));
        let raw = std::env::temp_dir().join(format!("sim-tcp-ring-{}", std::process::id()));
        std::fs::create_dir_all(&raw).unwrap();
        let setup = |seed| TcpSetup {
            name: "f".into(),
            cc: "cubic".into(),
            seed,
            mss: None,
            rmem: None,
            sndbuf: None,
            delivered: delivered.clone(),
            raw: raw.clone(),
        };
        let (a, b) = (
            SocketAddrV4::new([10, 0, 0, 1].into(), 40000),
            SocketAddrV4::new([10, 0, 0, 2].into(), 5201),
        );
        let total = 3 * BUFFER_BYTES as u64;
        let mut client = TcpClient::new(setup(1), a, b, 0, u64::MAX, true, Some(total)).unwrap();
        let mut server = TcpServer::new(setup(2), b, 0).unwrap();
        let (mut isn, mut checked, mut nonzero) = (None, 0u64, 0u64);
        for step in 0..100_000u64 {
            let now = step * 1_000_000;
            let mut out = Vec::new();
            client.poll(now, &mut out);
            for p in &out {
                let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
                let seg = TcpPacket::new_checked(ip.transport()).unwrap();
                let seq = seg.seq_number();
                if seg.syn() {
                    isn = Some(seq);
                }
                let offset = u64::from(seq.wrapping_sub(isn.unwrap()).wrapping_sub(1));
                for (i, &x) in seg.payload().iter().enumerate() {
                    if offset + i as u64 >= REQUEST_LEN as u64 {
                        checked += 1;
                        nonzero += u64::from(x != 0);
                    }
                }
                server.receive(now, p);
            }
            let mut back = Vec::new();
            server.poll(now, &mut back);
            for p in &back {
                client.receive(now, p);
            }
            if delivered.get().bytes >= total {
                break;
            }
        }
        assert!(
            delivered.get().bytes >= total,
            "only {} bytes arrived",
            delivered.get().bytes
        );
        assert!(checked >= total, "{checked}");
        assert_eq!(nonzero, 0);
        std::fs::remove_dir_all(&raw).unwrap();
    }

    /// The series goes to its file a batch at a time as rows come, and the file holds
    /// every row, in order, when it is finished.
    #[test]
    fn series_rows_are_written_in_batches_as_they_come() {
        use arrow_array::{Array, Int64Array, UInt64Array};
        use std::fs::File;
        let dir = std::env::temp_dir().join(format!("sim-tcp-series-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f-client.arrow");
        let mut series = Series::new(&path, tcp_series::schema(false));
        let mut m = Meter::default();
        let n = 2 * super::super::SERIES_BATCH + 500;
        for i in 0..n as u64 {
            if i == 3 {
                m.sent(0, &segment(0, 0, 0, true));
                m.received(25_000_000, &segment(7, 1, 0, true));
            }
            series.push(m.sample(i * SAMPLE_INTERVAL, i).expect("one row per interval"));
            if i + 1 == super::super::SERIES_BATCH as u64 {
                assert!(path.exists(), "the first batch is written when it is full");
            }
        }
        assert_eq!(series.pending().len(), 500);
        series.finish().unwrap();
        let r = arrow_ipc::reader::FileReader::try_new(File::open(&path).unwrap(), None).unwrap();
        let batches: Vec<_> = r.map(|b| b.unwrap()).collect();
        assert_eq!(
            batches.iter().map(|b| b.num_rows()).collect::<Vec<_>>(),
            vec![1000, 1000, 500]
        );
        let mut t = Vec::new();
        let mut bytes = Vec::new();
        for b in &batches {
            let c = b
                .column_by_name("t_ns")
                .unwrap()
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap();
            t.extend(c.values().iter().copied());
            let c = b
                .column_by_name("bytes")
                .unwrap()
                .as_any()
                .downcast_ref::<UInt64Array>()
                .unwrap();
            bytes.extend(c.values().iter().copied());
        }
        assert_eq!(t, (0..n as i64).map(|i| i * SAMPLE_INTERVAL as i64).collect::<Vec<_>>());
        assert_eq!(bytes, (0..n as u64).collect::<Vec<_>>());
        let srtt = batches[0].column_by_name("srtt_us").unwrap();
        assert_eq!(srtt.null_count(), 3, "no RTT before the first acknowledgement");
        assert_eq!(batches[2].column_by_name("srtt_us").unwrap().null_count(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
