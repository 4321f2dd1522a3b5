//! QUIC with quinn-proto — the stack the agent runs, here sans-IO in virtual time — and
//! the lab's congestion controllers behind quinn's interface (`agent::cc`), with the
//! agent's transport settings (`agent::transport`).
//!
//! The application is the agent's bulk transfer or constant-rate messages, reduced to what
//! the simulator needs: the client opens one bidirectional stream and writes a
//! [`super::Request`]; the sender writes until the count or the flow's end (or one stamped
//! message per interval), then finishes the stream; at the flow's end the client closes
//! the connection, as the agent resets the stream at its deadline.
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
use agent::one_way::Reaction;
use bytes::{Bytes, BytesMut};
use engine::wire::ipv4::Ecn;
use linkem::Nanos;
use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Dir, EcnCodepoint, Endpoint as QuinnEndpoint,
    EndpointConfig, Event, ServerConfig, StreamEvent, StreamId, Transmit, VarInt,
};
use serde::Serialize;

use super::{packets, udp, write_summary, Delivered, Endpoint, Request, REQUEST_LEN};
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

/// How often each end samples its connection for the series, as the agent's default
/// `--sample-interval`.
const SAMPLE_INTERVAL: Nanos = 10_000_000;

/// One row of the series (the agent's QUIC series columns that quinn-proto's statistics
/// give without the agent's socket counters).
struct Sample {
    t_ns: Nanos,
    packets_sent: u64,
    cwnd_bytes: u64,
    srtt_us: u64,
    min_rtt_us: u64,
    lost_packets: u64,
    lost_bytes: u64,
    congestion_events: u64,
    mtu: u32,
    /// The controller's diagnostics (the agent's `cc_<name>` columns).
    diagnostics: Vec<(&'static str, f64)>,
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
    samples: Vec<Sample>,
    next_sample: Option<Nanos>,
}

/// One connection's turn in the one-way delay exchange (`agent::one_way`), as the agent's
/// task runs it: echo every stamp that arrived, hand every echo's sample to the
/// controller (arrival time `at`), and send a stamp if one is due. Stamps are due only
/// after acknowledgements, and the sender runs at every arrival, so the exchange needs
/// no wake-ups of its own.
fn exchange_one_way(probe: &Probe, conn: &mut Connection, now: Nanos, at: Instant) {
    while let Some(d) = conn.datagrams().recv() {
        let reaction = probe.one_way.lock().unwrap().on_datagram(now, &d);
        match reaction {
            Reaction::Reply(echo) => {
                if let Err(e) = conn.datagrams().send(echo.into(), true) {
                    probe.one_way.lock().unwrap().note_send_error(e);
                }
            }
            Reaction::Sample(delay) => probe.deliver_one_way(at, delay),
            Reaction::Ignore => {}
        }
    }
    if conn.is_handshaking() {
        // The peer's transport parameters (does it take DATAGRAM frames?) are not known yet.
        return;
    }
    let acked = probe.bytes_acked.load(std::sync::atomic::Ordering::Relaxed);
    let stamp = probe.one_way.lock().unwrap().poll_stamp(now, acked);
    if let Some(s) = stamp {
        if let Err(e) = conn.datagrams().send(s.into(), true) {
            probe.one_way.lock().unwrap().note_send_error(e);
        }
    }
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
            probe: Arc::new(Probe::new(&setup.cc)),
            buf: Vec::with_capacity(MAX_UDP_PAYLOAD),
            out: Vec::new(),
            timeout: None,
            samples: Vec::new(),
            next_sample: None,
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

    /// An IPv4 packet for this end: its UDP datagram goes to quinn's endpoint.
    fn receive(&mut self, now: Nanos, packet: &[u8]) {
        let Some(d) = Datagram::from_packet(packet) else {
            return;
        };
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
            exchange_one_way(&self.probe, conn, now, at);
            // Observed before and after this step's transmissions, so the stamps that
            // leave in it are known to leave now (samples run from their departure).
            let frames = conn.stats().frame_tx.datagram;
            self.probe.one_way.lock().unwrap().observe_sent(now, frames);
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
            let frames = self.conns[&h].stats().frame_tx.datagram;
            self.probe.one_way.lock().unwrap().observe_sent(now, frames);
        }
        self.sample(now);
        self.timeout = self
            .conns
            .values_mut()
            .filter_map(|c| c.poll_timeout())
            .min()
            .map(|t| self.clock.ns(t));
    }

    /// Samples the first connection every `SAMPLE_INTERVAL` from its start while it is open.
    fn sample(&mut self, now: Nanos) {
        let Some(conn) = self.conns.values().next() else { return };
        if conn.is_closed() {
            self.next_sample = None;
            return;
        }
        let due = *self.next_sample.get_or_insert(now);
        if now < due {
            return;
        }
        let s = conn.stats();
        self.samples.push(Sample {
            t_ns: now,
            packets_sent: s.path.sent_packets,
            cwnd_bytes: s.path.cwnd,
            srtt_us: s.path.rtt.as_micros() as u64,
            min_rtt_us: s.path.min_rtt.as_micros() as u64,
            lost_packets: s.path.lost_packets,
            lost_bytes: s.path.lost_bytes,
            congestion_events: s.path.congestion_events,
            mtu: u32::from(s.path.current_mtu),
            diagnostics: self.probe.diagnostics.lock().unwrap().clone(),
        });
        self.next_sample = Some(due + (now - due) / SAMPLE_INTERVAL * SAMPLE_INTERVAL + SAMPLE_INTERVAL);
    }

    /// The next time the stack wants to run: its connections' timers and its sampling.
    fn wake(&self) -> Option<Nanos> {
        [self.timeout, self.next_sample].into_iter().flatten().min()
    }

    /// Writes the samples as the agent's QUIC series (`docs/agent.md`), connection 0.
    fn write_series(&self, path: &Path) -> std::io::Result<()> {
        use arrow_array::{ArrayRef, Int64Array, UInt32Array, UInt64Array};
        let s = &self.samples;
        let u64s = |f: fn(&Sample) -> u64| Arc::new(UInt64Array::from_iter_values(s.iter().map(f))) as ArrayRef;
        let columns: Vec<(&str, ArrayRef)> = vec![
            ("conn", Arc::new(UInt32Array::from_iter_values(s.iter().map(|_| 0)))),
            (
                "t_ns",
                Arc::new(Int64Array::from_iter_values(s.iter().map(|x| x.t_ns as i64))),
            ),
            ("packets_sent", u64s(|x| x.packets_sent)),
            ("cwnd_bytes", u64s(|x| x.cwnd_bytes)),
            ("srtt_us", u64s(|x| x.srtt_us)),
            ("min_rtt_us", u64s(|x| x.min_rtt_us)),
            ("lost_packets", u64s(|x| x.lost_packets)),
            ("lost_bytes", u64s(|x| x.lost_bytes)),
            ("congestion_events", u64s(|x| x.congestion_events)),
            ("mtu", Arc::new(UInt32Array::from_iter_values(s.iter().map(|x| x.mtu)))),
        ];
        // One `cc_<name>` column per diagnostic any sample has (null where a row lacks
        // it), as the agent's series.
        let names: std::collections::BTreeSet<&'static str> =
            s.iter().flat_map(|x| x.diagnostics.iter().map(|d| d.0)).collect();
        let names: Vec<String> = names.into_iter().map(|n| format!("cc_{n}")).collect();
        let mut columns = columns;
        for name in &names {
            let key = &name[3..];
            let col = arrow_array::Float64Array::from_iter(
                s.iter().map(|x| x.diagnostics.iter().find(|d| d.0 == key).map(|d| d.1)),
            );
            columns.push((name.as_str(), Arc::new(col) as ArrayRef));
        }
        agent::series::write_series(path, columns).map_err(std::io::Error::other)
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
    /// Constant-rate messages (bytes each, ns apart) instead of a bulk transfer.
    messages: Option<(u32, Nanos)>,
    /// Sender: the next message's deadline, messages made, bytes not yet taken by the stream.
    next_message: Nanos,
    messages_sent: u64,
    unsent: Vec<u8>,
    /// Receiver: the bytes of the message being read, and (send, receive) time of each one.
    partial: Vec<u8>,
    received: Vec<(Nanos, Nanos)>,
}

impl Transfer {
    /// Messages mode, the sender: makes the messages due by `now` (before `end`), each
    /// stamped with its sequence number and deadline, and writes what the stream takes;
    /// finishes the stream at `end` once everything made is written.
    fn write_messages(&mut self, conn: &mut Connection, now: Nanos, end: Nanos) {
        let (Some(id), Some((size, interval))) = (self.stream, self.messages) else {
            return;
        };
        while self.next_message <= now && self.next_message < end {
            let mut m = vec![0u8; size as usize];
            let stamp = agent::wire::stamp::Stamp {
                seq: self.messages_sent,
                send_ns: self.next_message,
            };
            stamp.emit(&mut m).expect("a message holds its stamp");
            self.unsent.extend_from_slice(&m);
            self.messages_sent += 1;
            self.next_message += interval.max(1);
        }
        while !self.unsent.is_empty() {
            match conn.send_stream(id).write(&self.unsent) {
                Ok(w) if w > 0 => {
                    self.bytes += w as u64;
                    self.unsent.drain(..w);
                }
                _ => break,
            }
        }
        if now >= end && self.unsent.is_empty() && !self.finished_writing {
            self.finished_writing = conn.send_stream(id).finish().is_ok();
        }
    }

    /// Messages mode, the receiver: splits `data` into messages, recording each one's
    /// arrival (its last byte read) at `now`.
    fn take_messages(&mut self, mut data: &[u8], now: Nanos) {
        let Some((size, _)) = self.messages else { return };
        let size = size as usize;
        while !data.is_empty() {
            let take = (size - self.partial.len()).min(data.len());
            self.partial.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.partial.len() == size {
                if let Ok(s) = agent::wire::stamp::Stamp::decode(&self.partial) {
                    self.received.push((s.send_ns, now));
                }
                self.partial.clear();
            }
        }
    }

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
                        if self.request.len() == REQUEST_LEN {
                            self.messages = Request::decode(&self.request).messages;
                        }
                    }
                    self.bytes += data.len() as u64;
                    self.take_messages(&data, now);
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

/// What a client does: from `start` to `end`, a bulk transfer (of `bytes`, or until the
/// end) or constant-rate messages, upload or download.
pub struct Plan {
    pub start: Nanos,
    pub end: Nanos,
    pub upload: bool,
    pub bytes: Option<u64>,
    pub messages: Option<(u32, Nanos)>,
}

impl QuicClient {
    pub fn new(setup: QuicSetup, addr: SocketAddrV4, server: SocketAddrV4, plan: Plan) -> Result<QuicClient, String> {
        let Plan {
            start,
            end,
            upload,
            bytes,
            messages,
        } = plan;
        let crypto = QuicClientConfig::try_from(agent::tls::client_config().map_err(|e| e.to_string())?)
            .map_err(|e| format!("TLS config unusable for QUIC: {e}"))?;
        let mut config = ClientConfig::new(Arc::new(crypto));
        let stack = Stack::new(addr, &setup, None, 1);
        if stack.probe.wants_one_way && upload {
            stack.probe.one_way.lock().unwrap().start_stamping();
        }
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
                messages,
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
                    let request = Request {
                        upload: t.upload,
                        limit: t.limit,
                        messages: t.messages,
                    };
                    let _ = conn.send_stream(id).write(&request.encode());
                    t.next_message = now;
                    if !t.upload {
                        let _ = conn.send_stream(id).finish();
                    }
                    t.stream = Some(id);
                }
            }
            if t.upload && t.messages.is_some() {
                t.write_messages(conn, now, end);
            } else if t.upload {
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
    /// This end's one-way delay exchange (`agent::one_way`).
    one_way_delay: agent::one_way::Summary,
    /// Messages mode: messages the sender made (each written in full or still queued).
    messages_sent: Option<u64>,
}

impl Endpoint for QuicClient {
    fn address(&self) -> (u8, SocketAddrV4) {
        udp(self.stack.addr)
    }

    fn receive(&mut self, now: Nanos, packet: &[u8]) {
        self.stack.receive(now, packet);
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
        let mut t = self.stack.wake();
        if self.stack.conns.is_empty() && !self.closed {
            t = Some(t.map_or(self.start, |x| x.min(self.start)));
        }
        if !self.closed && self.connected_ns.is_some() {
            t = Some(t.map_or(self.end, |x| x.min(self.end)));
            // The next message's deadline (messages mode, once the stream is open).
            let tr = &self.transfer;
            if tr.messages.is_some() && tr.stream.is_some() && tr.next_message < self.end {
                t = t.map(|x| x.min(tr.next_message));
            }
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
        let one_way = self.stack.probe.one_way.lock().unwrap();
        let results = ClientResults {
            sender: if t.upload { "client" } else { "server" },
            cc: self.cc.clone(),
            bytes: d.bytes,
            bytes_written: if t.upload { t.bytes } else { 0 },
            complete: t.complete,
            completion_s: t.done_ns.map(|d| (d - self.start) as f64 / 1e9),
            goodput_bps: span.filter(|&s| s > 0).map(|s| d.bytes as f64 * 8.0 / (s as f64 / 1e9)),
            // A one-way controller that got no samples had no delay signal: not a valid run.
            error: self.error.clone().or_else(|| one_way.failure()),
            quic: t.quic.clone(),
            one_way_delay: one_way.summary(),
            messages_sent: t.messages.map(|_| t.messages_sent),
        };
        let stopped_by = if t.complete { "bytes" } else { "duration" };
        self.stack
            .write_series(&raw.join(format!("{}-client.arrow", self.name)))?;
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
        let probe = Arc::new(Probe::new(&setup.cc));
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
    one_way_delay: agent::one_way::Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// Messages mode: messages received whole, and their one-way delay (last byte read −
    /// the deadline stamped in it), as the agent's.
    #[serde(skip_serializing_if = "Option::is_none")]
    messages_received: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    owd: Option<agent::stats::Scaled>,
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
        self.stack.receive(now, packet);
    }

    fn poll(&mut self, now: Nanos, out: &mut Vec<Vec<u8>>) {
        let t = &mut self.transfer;
        let connected = &mut self.connected_ns;
        let delivered = &*self.delivered;
        let probe = self.stack.probe.clone();
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
                    let r = Request::decode(&t.request);
                    (t.upload, t.limit) = (r.upload, r.limit);
                    if probe.wants_one_way && !r.upload {
                        probe.one_way.lock().unwrap().start_stamping();
                    }
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
        self.stack.wake()
    }

    fn finished(&self) -> bool {
        true
    }

    fn write_summary(&self, raw: &Path, end: Nanos) -> std::io::Result<()> {
        let t = &self.transfer;
        let one_way = self.stack.probe.one_way.lock().unwrap();
        let connections = if self.connected_ns.is_some() {
            let owd: Vec<f64> = t.received.iter().map(|&(s, r)| r.saturating_sub(s) as f64).collect();
            vec![ServerConnection {
                bytes: t.bytes,
                complete: t.complete,
                quic: t.quic.clone(),
                one_way_delay: one_way.summary(),
                error: one_way.failure(),
                messages_received: t.messages.map(|_| t.received.len()),
                owd: t.messages.and_then(|_| agent::stats::scaled(&owd, 1e6, "ms")),
            }]
        } else {
            vec![]
        };
        let results = ServerResults {
            cc: self.cc.clone(),
            connections,
        };
        self.stack
            .write_series(&raw.join(format!("{}-server.arrow", self.name)))?;
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
