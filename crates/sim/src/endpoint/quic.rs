//! QUIC with quinn-proto — the stack the agent runs, here sans-IO in virtual time — and
//! the lab's congestion controllers behind quinn's interface (`agent::cc`), with the
//! agent's transport settings (`agent::transport`).
//!
//! The application is the agent's bulk transfer reduced to what the simulator needs: the
//! client opens one bidirectional stream and writes a 9-byte request (direction: 0 upload,
//! 1 download; then the byte count, `u64::MAX` for "until the end"); the sender writes
//! until the count or the flow's end, then finishes the stream; at the flow's end the
//! client closes the connection, as the agent resets the stream at its deadline.
//!
//! Time: quinn-proto takes `Instant`s; virtual nanoseconds map onto them from one base
//! instant, so nothing in the stack reads the real clock. Its random choices come from
//! the endpoint's seed; the TLS certificate is Ed25519 with a fixed serial, so every
//! handshake message has the same size in every run.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr, SocketAddrV4};
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent::cc::{CcChoice, Probe};
use bytes::{Bytes, BytesMut};
use engine::wire::ipv4::Ecn;
use linkem::Nanos;
use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Dir, EcnCodepoint, Endpoint as QuinnEndpoint,
    EndpointConfig, Event, ServerConfig, StreamEvent, StreamId, Transmit, VarInt,
};
use serde::Serialize;

use super::{packets, parse_request, request, udp, write_summary, Delivered, Endpoint, REQUEST_LEN};
use crate::datagram::Datagram;

static CHUNK: [u8; 65536] = [0; 65536];
/// Largest UDP payload quinn may send (the 1500-byte MTU less IPv4 and UDP headers).
const MAX_UDP_PAYLOAD: usize = 1472;

/// Maps virtual nanoseconds onto the `Instant`s quinn-proto takes.
#[derive(Clone, Copy)]
pub struct Clock {
    base: Instant,
}

impl Clock {
    pub fn new() -> Clock {
        Clock { base: Instant::now() }
    }
    fn at(&self, ns: Nanos) -> Instant {
        self.base + Duration::from_nanos(ns)
    }
    fn ns(&self, t: Instant) -> Nanos {
        t.saturating_duration_since(self.base).as_nanos() as Nanos
    }
}

/// What one end of a flow needs to build its stack.
pub struct QuicSetup {
    pub name: String,
    pub cc: CcChoice,
    pub datagram_size: Option<u16>,
    pub seed: u64,
    pub clock: Clock,
    /// What the receiving end has read, shared by both ends of the flow: the client's
    /// summary reports what arrived, as the agent's does from the server's final report.
    pub delivered: Rc<Cell<Delivered>>,
}

fn rng_seed(seed: u64, role: u8) -> [u8; 32] {
    let mut s = [0u8; 32];
    s[..8].copy_from_slice(&seed.to_le_bytes());
    s[8] = role;
    s
}

fn ecn_in(e: Ecn) -> Option<EcnCodepoint> {
    EcnCodepoint::from_bits(e.bits())
}

fn ecn_out(e: Option<EcnCodepoint>) -> Ecn {
    e.map_or(Ecn::NotEct, |c| Ecn::from_bits(c as u8))
}

/// The server's TLS identity: Ed25519 (fixed-size keys and signatures) with a fixed
/// serial number, so handshakes do not vary in size between runs.
fn server_crypto() -> Result<rustls::ServerConfig, String> {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).map_err(|e| format!("TLS key: {e}"))?;
    let mut params = rcgen::CertificateParams::new(vec![agent::tls::SERVER_NAME.to_string()])
        .map_err(|e| format!("TLS certificate: {e}"))?;
    params.serial_number = Some(rcgen::SerialNumber::from(1u64));
    let cert = params.self_signed(&key).map_err(|e| format!("TLS certificate: {e}"))?;
    agent::tls::server_config_with(cert.der().to_vec(), key.serialize_der()).map_err(|e| format!("TLS: {e}"))
}

/// One QUIC end: the quinn-proto endpoint and its connection(s), and the stream the
/// transfer runs on.
struct Stack {
    addr: SocketAddrV4,
    clock: Clock,
    endpoint: QuinnEndpoint,
    conns: BTreeMap<usize, Connection>,
    probe: Arc<Probe>,
    buf: Vec<u8>,
    out: Vec<Datagram>,
    timeout: Option<Nanos>,
}

impl Stack {
    fn new(addr: SocketAddrV4, setup: &QuicSetup, server: Option<Arc<ServerConfig>>, role: u8) -> Stack {
        let endpoint = QuinnEndpoint::new(
            Arc::new(EndpointConfig::default()),
            server,
            true,
            Some(rng_seed(setup.seed, role)),
        );
        Stack {
            addr,
            clock: setup.clock,
            endpoint,
            conns: BTreeMap::new(),
            probe: Arc::new(Probe::default()),
            buf: Vec::with_capacity(MAX_UDP_PAYLOAD),
            out: Vec::new(),
            timeout: None,
        }
    }

    fn send(&mut self, t: &Transmit, from_buf: usize) {
        let end = from_buf + t.size;
        self.out.push(Datagram {
            src: self.addr,
            dst: match t.destination {
                SocketAddr::V4(a) => a,
                SocketAddr::V6(_) => unreachable!("the lab's hosts are IPv4"),
            },
            ecn: ecn_out(t.ecn),
            payload: self.buf[from_buf..end].to_vec(),
        });
    }

    fn receive(&mut self, now: Nanos, d: Datagram) {
        self.buf.clear();
        let event = self.endpoint.handle(
            self.clock.at(now),
            SocketAddr::V4(d.src),
            Some(IpAddr::V4(*self.addr.ip())),
            ecn_in(d.ecn),
            BytesMut::from(&d.payload[..]),
            &mut self.buf,
        );
        match event {
            Some(DatagramEvent::ConnectionEvent(ch, ev)) => {
                if let Some(c) = self.conns.get_mut(&ch.0) {
                    c.handle_event(ev);
                }
            }
            Some(DatagramEvent::NewConnection(incoming)) => {
                let mut buf = Vec::new();
                match self.endpoint.accept(incoming, self.clock.at(now), &mut buf, None) {
                    Ok((ch, conn)) => {
                        self.conns.insert(ch.0, conn);
                    }
                    Err(e) => {
                        if let Some(t) = e.response {
                            self.buf = buf;
                            self.send(&t, 0);
                        }
                    }
                }
            }
            Some(DatagramEvent::Response(t)) => self.send(&t, 0),
            None => {}
        }
    }

    /// Runs timers due at `now`, then `app` on each connection, then sends what the
    /// connections have to send and relays their endpoint events.
    fn drive(&mut self, now: Nanos, mut app: impl FnMut(Nanos, Instant, &mut Connection)) {
        let at = self.clock.at(now);
        let handles: Vec<usize> = self.conns.keys().copied().collect();
        for h in handles {
            let conn = self.conns.get_mut(&h).expect("a connection");
            if conn.poll_timeout().is_some_and(|t| t <= at) {
                conn.handle_timeout(at);
            }
            app(now, at, conn);
            loop {
                let conn = self.conns.get_mut(&h).expect("a connection");
                while let Some(ev) = conn.poll_endpoint_events() {
                    if let Some(back) = self.endpoint.handle_event(ConnectionHandle(h), ev) {
                        conn.handle_event(back);
                    }
                }
                self.buf.clear();
                let Some(t) = conn.poll_transmit(at, 1, &mut self.buf) else {
                    break;
                };
                self.send(&t, 0);
            }
        }
        self.timeout = self
            .conns
            .values_mut()
            .filter_map(|c| c.poll_timeout())
            .min()
            .map(|t| self.clock.ns(t));
    }
}

#[derive(Serialize, Default, Clone)]
pub struct QuicCounters {
    packets_sent: u64,
    lost_packets: u64,
    lost_bytes: u64,
    congestion_events: u64,
    cwnd: u64,
    srtt_ms: f64,
    min_rtt_ms: f64,
}

fn counters(c: &Connection) -> QuicCounters {
    let s = c.stats();
    QuicCounters {
        packets_sent: s.path.sent_packets,
        lost_packets: s.path.lost_packets,
        lost_bytes: s.path.lost_bytes,
        congestion_events: s.path.congestion_events,
        cwnd: s.path.cwnd,
        srtt_ms: s.path.rtt.as_secs_f64() * 1e3,
        min_rtt_ms: s.path.min_rtt.as_secs_f64() * 1e3,
    }
}

/// The state of the one transfer of a connection, on either end.
#[derive(Default)]
struct Transfer {
    stream: Option<StreamId>,
    upload: bool,
    /// Bytes to move (`u64::MAX`: until the end).
    limit: u64,
    request: Vec<u8>,
    /// Payload bytes written (sender) or read (receiver).
    bytes: u64,
    finished_writing: bool,
    /// The receiver read the stream's end; or the sender saw all of it acknowledged.
    complete: bool,
    done_ns: Option<Nanos>,
    quic: QuicCounters,
}

impl Transfer {
    /// Writes payload while the stream takes it, up to the limit; finishes it then.
    fn write(&mut self, conn: &mut Connection) {
        let Some(id) = self.stream else { return };
        while !self.finished_writing {
            let left = self.limit - self.bytes;
            if left == 0 {
                self.finished_writing = conn.send_stream(id).finish().is_ok();
                break;
            }
            let n = left.min(CHUNK.len() as u64) as usize;
            match conn.send_stream(id).write(&CHUNK[..n]) {
                Ok(w) if w > 0 => self.bytes += w as u64,
                _ => break,
            }
        }
    }

    /// Reads what arrived, counting the payload into `delivered`; `true` once the
    /// stream's end was read.
    fn read(&mut self, conn: &mut Connection, skip_request: bool, delivered: &Cell<Delivered>, now: Nanos) -> bool {
        let Some(id) = self.stream else { return false };
        let before = self.bytes;
        let mut recv = conn.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else { return false };
        let mut ended = false;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => {
                    let mut data: Bytes = chunk.bytes;
                    if skip_request && self.request.len() < REQUEST_LEN {
                        let take = (REQUEST_LEN - self.request.len()).min(data.len());
                        self.request.extend_from_slice(&data[..take]);
                        data = data.slice(take..);
                    }
                    self.bytes += data.len() as u64;
                }
                Ok(None) => {
                    ended = true;
                    break;
                }
                Err(_) => break,
            }
        }
        let _ = chunks.finalize();
        Delivered::add(delivered, self.bytes - before, now);
        ended
    }
}

pub struct QuicClient {
    name: String,
    cc: String,
    stack: Stack,
    server: SocketAddrV4,
    config: ClientConfig,
    start: Nanos,
    end: Nanos,
    transfer: Transfer,
    connected_ns: Option<Nanos>,
    closed: bool,
    error: Option<String>,
    delivered: Rc<Cell<Delivered>>,
}

impl QuicClient {
    pub fn new(
        setup: QuicSetup,
        addr: SocketAddrV4,
        server: SocketAddrV4,
        start: Nanos,
        end: Nanos,
        upload: bool,
        bytes: Option<u64>,
    ) -> Result<QuicClient, String> {
        let crypto = QuicClientConfig::try_from(agent::tls::client_config().map_err(|e| e.to_string())?)
            .map_err(|e| format!("TLS config unusable for QUIC: {e}"))?;
        let mut config = ClientConfig::new(Arc::new(crypto));
        let stack = Stack::new(addr, &setup, None, 1);
        config.transport_config(Arc::new(agent::transport::config(
            &setup.cc,
            stack.probe.clone(),
            setup.datagram_size,
            None,
        )));
        Ok(QuicClient {
            delivered: setup.delivered.clone(),
            name: setup.name,
            cc: setup.cc.name.clone(),
            stack,
            server,
            config,
            start,
            end,
            transfer: Transfer {
                upload,
                limit: bytes.unwrap_or(u64::MAX),
                ..Transfer::default()
            },
            connected_ns: None,
            closed: false,
            error: None,
        })
    }

    fn app(&mut self, now: Nanos) {
        let t = &mut self.transfer;
        let (end, closed) = (self.end, &mut self.closed);
        let connected = &mut self.connected_ns;
        let error = &mut self.error;
        let delivered = &*self.delivered;
        self.stack.drive(now, |now, at, conn| {
            while let Some(ev) = conn.poll() {
                match ev {
                    Event::Connected => *connected = Some(now),
                    Event::ConnectionLost { reason } if !*closed => {
                        if !t.complete {
                            *error = Some(format!("connection lost: {reason}"));
                        }
                        *closed = true;
                    }
                    Event::Stream(StreamEvent::Finished { .. }) if t.upload && t.finished_writing => {
                        t.complete = true;
                        t.done_ns = Some(now);
                    }
                    _ => {}
                }
            }
            if connected.is_some() && t.stream.is_none() {
                if let Some(id) = conn.streams().open(Dir::Bi) {
                    let _ = conn.send_stream(id).write(&request(t.upload, t.limit));
                    if !t.upload {
                        let _ = conn.send_stream(id).finish();
                    }
                    t.stream = Some(id);
                }
            }
            if t.upload {
                t.write(conn);
            } else if t.read(conn, false, delivered, now) && !t.complete {
                t.complete = true;
                t.done_ns = Some(now);
            }
            if !*closed && (now >= end || t.complete) {
                t.quic = counters(conn);
                conn.close(at, VarInt::from_u32(0), Bytes::from_static(b"done"));
                *closed = true;
            }
        });
    }
}

#[derive(Serialize)]
struct ClientResults {
    sender: &'static str,
    cc: String,
    /// Payload the receiving application read (the server's, in an upload).
    bytes: u64,
    /// Payload the sending application wrote into the stream.
    bytes_written: u64,
    complete: bool,
    completion_s: Option<f64>,
    goodput_bps: Option<f64>,
    error: Option<String>,
    quic: QuicCounters,
}

impl Endpoint for QuicClient {
    fn address(&self) -> (u8, SocketAddrV4) {
        udp(self.stack.addr)
    }

    fn receive(&mut self, now: Nanos, packet: &[u8]) {
        let Some(datagram) = Datagram::from_packet(packet) else {
            return;
        };
        self.stack.receive(now, datagram);
    }

    fn poll(&mut self, now: Nanos, out: &mut Vec<Vec<u8>>) {
        if now >= self.start && self.stack.conns.is_empty() && !self.closed {
            match self.stack.endpoint.connect(
                self.stack.clock.at(now),
                self.config.clone(),
                SocketAddr::V4(self.server),
                agent::tls::SERVER_NAME,
            ) {
                Ok((ch, conn)) => {
                    self.stack.conns.insert(ch.0, conn);
                }
                Err(e) => {
                    self.error = Some(format!("cannot connect: {e}"));
                    self.closed = true;
                }
            }
        }
        self.app(now);
        packets(self.stack.out.drain(..), out);
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        let mut t = self.stack.timeout;
        if self.stack.conns.is_empty() && !self.closed {
            t = Some(t.map_or(self.start, |x| x.min(self.start)));
        }
        if !self.closed && self.connected_ns.is_some() {
            t = Some(t.map_or(self.end, |x| x.min(self.end)));
        }
        t
    }

    fn finished(&self) -> bool {
        self.closed
    }

    fn write_summary(&self, raw: &Path, end: Nanos) -> std::io::Result<()> {
        let t = &self.transfer;
        let d = self.delivered.get();
        // Goodput: what arrived over the time from the connection to its last byte.
        let span = d.last_ns.zip(self.connected_ns).map(|(l, c)| l.saturating_sub(c));
        let results = ClientResults {
            sender: if t.upload { "client" } else { "server" },
            cc: self.cc.clone(),
            bytes: d.bytes,
            bytes_written: if t.upload { t.bytes } else { 0 },
            complete: t.complete,
            completion_s: t.done_ns.map(|d| (d - self.start) as f64 / 1e9),
            goodput_bps: span.filter(|&s| s > 0).map(|s| d.bytes as f64 * 8.0 / (s as f64 / 1e9)),
            error: self.error.clone(),
            quic: t.quic.clone(),
        };
        let stopped_by = if t.complete { "bytes" } else { "duration" };
        write_summary(
            &raw.join(format!("{}-client.json", self.name)),
            "quic-client",
            self.start,
            end,
            stopped_by,
            &results,
        )
    }
}

pub struct QuicServer {
    name: String,
    cc: String,
    stack: Stack,
    start: Nanos,
    transfer: Transfer,
    connected_ns: Option<Nanos>,
    delivered: Rc<Cell<Delivered>>,
}

impl QuicServer {
    pub fn new(setup: QuicSetup, addr: SocketAddrV4, start: Nanos) -> Result<QuicServer, String> {
        let crypto =
            QuicServerConfig::try_from(server_crypto()?).map_err(|e| format!("TLS config unusable for QUIC: {e}"))?;
        let mut config = ServerConfig::with_crypto(Arc::new(crypto));
        let probe = Arc::new(Probe::default());
        config.transport_config(Arc::new(agent::transport::config(
            &setup.cc,
            probe.clone(),
            setup.datagram_size,
            None,
        )));
        let mut stack = Stack::new(addr, &setup, Some(Arc::new(config)), 2);
        stack.probe = probe;
        Ok(QuicServer {
            delivered: setup.delivered.clone(),
            name: setup.name,
            cc: setup.cc.name.clone(),
            stack,
            start,
            transfer: Transfer::default(),
            connected_ns: None,
        })
    }
}

#[derive(Serialize)]
struct ServerConnection {
    bytes: u64,
    complete: bool,
    quic: QuicCounters,
}

#[derive(Serialize)]
struct ServerResults {
    cc: String,
    connections: Vec<ServerConnection>,
}

impl Endpoint for QuicServer {
    fn address(&self) -> (u8, SocketAddrV4) {
        udp(self.stack.addr)
    }

    fn receive(&mut self, now: Nanos, packet: &[u8]) {
        let Some(datagram) = Datagram::from_packet(packet) else {
            return;
        };
        self.stack.receive(now, datagram);
    }

    fn poll(&mut self, now: Nanos, out: &mut Vec<Vec<u8>>) {
        let t = &mut self.transfer;
        let connected = &mut self.connected_ns;
        let delivered = &*self.delivered;
        self.stack.drive(now, |now, _at, conn| {
            while let Some(ev) = conn.poll() {
                if let Event::Connected = ev {
                    *connected = Some(now);
                }
            }
            if t.stream.is_none() {
                t.stream = conn.streams().accept(Dir::Bi);
            }
            let request_known = t.request.len() == REQUEST_LEN;
            if !request_known || t.upload {
                let ended = t.read(conn, true, delivered, now);
                if t.request.len() == REQUEST_LEN && !request_known {
                    (t.upload, t.limit) = parse_request(&t.request);
                }
                if ended && t.upload && !t.complete {
                    t.complete = true;
                    t.done_ns = Some(now);
                }
            }
            if t.request.len() == REQUEST_LEN && !t.upload {
                t.write(conn);
                t.complete = t.finished_writing;
            }
            if !conn.is_closed() {
                t.quic = counters(conn);
            }
        });
        packets(self.stack.out.drain(..), out);
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        self.stack.timeout
    }

    fn finished(&self) -> bool {
        true
    }

    fn write_summary(&self, raw: &Path, end: Nanos) -> std::io::Result<()> {
        let t = &self.transfer;
        let connections = if self.connected_ns.is_some() {
            vec![ServerConnection {
                bytes: t.bytes,
                complete: t.complete,
                quic: t.quic.clone(),
            }]
        } else {
            vec![]
        };
        let results = ServerResults {
            cc: self.cc.clone(),
            connections,
        };
        write_summary(
            &raw.join(format!("{}-server.json", self.name)),
            "quic-server",
            self.start,
            end,
            "once",
            &results,
        )
    }
}
