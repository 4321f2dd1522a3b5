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
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent::cc::{CcChoice, Probe};
use agent_proto::one_way::Reaction;
use bytes::{Bytes, BytesMut};
use linkem::Nanos;
use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Dir, EcnCodepoint, Endpoint as QuinnEndpoint,
    EndpointConfig, Event, QlogStream, ServerConfig, StreamEvent, StreamId, Transmit, VarInt,
};
use serde::Serialize;
use wire::ipv4::Ecn;

use agent_proto::summary::{
    MessagesSummary, ObjectSummary, ObjectsSummary, QuicClientResults, QuicStats, ServedTransfer,
};
use agent_proto::transfer::{goodput_bps, secs, share};
use agent_proto::wire::object;
use agent_proto::wire::request::{Mode, Request, Transport::Quic as QUIC};

use super::{
    packets, series_key_columns, series_key_fields, udp, write_summary, Delivered, Endpoint, Row, SampleGrid, Series,
};

/// The agent's QUIC request, first on the control stream.
const REQUEST_LEN: usize = QUIC.request_len();
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

/// The qlog of one end (`raw/<name>-<end>.sqlog`, as the agent's), times in ms of virtual
/// time, if the flow asks for it.
fn qlog(setup: &QuicSetup, end: &str) -> Result<Option<QlogStream>, String> {
    if !setup.qlog {
        return Ok(None);
    }
    let path = setup.raw.join(format!("{}-{end}.sqlog", setup.name));
    agent::transport::qlog_file(&path, agent::transport::QlogWriter::Simulator, end, setup.clock.base).map(Some)
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
    /// The run's raw directory: the ends' series go to `<name>-client.arrow` and
    /// `<name>-server.arrow` there.
    pub raw: PathBuf,
    /// Both ends write their connection's qlog into `raw`.
    pub qlog: bool,
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
    series: Series<Sample>,
    grid: SampleGrid,
}

/// One connection's turn in the one-way delay exchange (`agent_proto::one_way`), as the agent's
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
    /// `role`: 1 client, 2 server.
    fn new(addr: SocketAddrV4, setup: &QuicSetup, server: Option<Arc<ServerConfig>>, role: u8) -> Stack {
        let end = if role == 1 { "client" } else { "server" };
        let series = setup.raw.join(format!("{}-{end}.arrow", setup.name));
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
            series: Series::new(&series, series_schema(&setup.cc)),
            grid: SampleGrid::default(),
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
            self.grid.stop();
            return;
        }
        if !self.grid.due(now) {
            return;
        }
        let s = conn.stats();
        self.series.push(Sample {
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
    }

    /// The next time the stack wants to run: its connections' timers and its sampling.
    fn wake(&self) -> Option<Nanos> {
        [self.timeout, self.grid.next()].into_iter().flatten().min()
    }
}

/// The agent's QUIC series (`docs/agent.md`), connection 0: its columns, then one
/// `cc_<name>` column (nullable: a sample may lack it) per diagnostic the controller may
/// report, as the agent's series has one per diagnostic reported.
fn series_schema(cc: &CcChoice) -> arrow_schema::Schema {
    use arrow_schema::{DataType, Field};
    let u64 = |name: &str| Field::new(name, DataType::UInt64, false);
    let mut fields = Vec::from(series_key_fields());
    fields.extend([
        u64("packets_sent"),
        u64("cwnd_bytes"),
        u64("srtt_us"),
        u64("min_rtt_us"),
        u64("lost_packets"),
        u64("lost_bytes"),
        u64("congestion_events"),
        Field::new("mtu", DataType::UInt32, false),
    ]);
    fields.extend(
        cc.diagnostic_names
            .iter()
            .map(|n| Field::new(format!("cc_{n}"), DataType::Float64, true)),
    );
    arrow_schema::Schema::new(fields)
}

impl Row for Sample {
    fn columns(s: &[Sample], schema: &arrow_schema::Schema) -> Vec<arrow_array::ArrayRef> {
        use arrow_array::{ArrayRef, Float64Array, UInt32Array, UInt64Array};
        let u64s = |f: fn(&Sample) -> u64| Arc::new(UInt64Array::from_iter_values(s.iter().map(f))) as ArrayRef;
        let mut columns = Vec::from(series_key_columns(s.iter().map(|x| x.t_ns)));
        columns.extend([
            u64s(|x| x.packets_sent),
            u64s(|x| x.cwnd_bytes),
            u64s(|x| x.srtt_us),
            u64s(|x| x.min_rtt_us),
            u64s(|x| x.lost_packets),
            u64s(|x| x.lost_bytes),
            u64s(|x| x.congestion_events),
            Arc::new(UInt32Array::from_iter_values(s.iter().map(|x| x.mtu))),
        ]);
        // The diagnostics' columns, in the schema's order.
        for field in &schema.fields()[columns.len()..] {
            let key = &field.name()["cc_".len()..];
            let values = s.iter().map(|x| x.diagnostics.iter().find(|d| d.0 == key).map(|d| d.1));
            columns.push(Arc::new(Float64Array::from_iter(values)) as ArrayRef);
        }
        columns
    }
}

/// The connection's counters for the summary (`quic`), as the agent's.
fn counters(c: &Connection, probe: &Probe) -> QuicStats {
    QuicStats::new(&c.stats(), probe.counters())
}

/// An object the client asked for: on its own bidirectional stream.
struct Fetch {
    index: u64,
    id: StreamId,
    request_ns: Nanos,
    first_byte_ns: Option<Nanos>,
    got: u64,
}

/// An object the server is sending: its stream, the request read so far, then the size
/// and what is written.
struct Serve {
    id: StreamId,
    request: Vec<u8>,
    size: Option<u64>,
    written: u64,
}

/// A whole object at the client (the agent's `ObjectRecord`).
struct ObjectDone {
    index: u64,
    size: u64,
    request_ns: Nanos,
    first_byte_ns: Nanos,
    complete_ns: Nanos,
}

/// The state of the transfer of a connection, on either end.
#[derive(Default)]
struct Transfer {
    /// The request's (control) stream: bulk stream 0.
    stream: Option<StreamId>,
    upload: bool,
    /// Bytes to move in all (`u64::MAX`: until the end).
    limit: u64,
    /// Bulk: the payload's streams; objects: how many in flight.
    streams: u32,
    request: Vec<u8>,
    /// Payload bytes written (sender) or read (receiver).
    bytes: u64,
    finished_writing: bool,
    /// The receiver read the end of every stream; or the sender saw all of it
    /// acknowledged; or every object arrived whole.
    complete: bool,
    done_ns: Option<Nanos>,
    /// The connection's counters, taken at its close (client) or last poll (server).
    quic: Option<QuicStats>,
    /// Bulk on several streams: bulk stream k's id, payload moved on it, and (sender)
    /// finished / (receiver) its end read; the writer's turn.
    payload: Vec<StreamId>,
    stream_bytes: Vec<u64>,
    stream_done: Vec<bool>,
    /// Sender: payload streams whose data was all acknowledged.
    streams_acked: u32,
    turn: usize,
    /// Objects mode: (count, bytes each); the client's fetches in flight and the next
    /// index, the objects done; the server's objects being sent and how many it sent.
    objects: Option<(u64, u64)>,
    fetches: Vec<Fetch>,
    next_object: u64,
    objects_done: Vec<ObjectDone>,
    serving: Vec<Serve>,
    objects_served: u64,
    /// Constant-rate messages (bytes each, ns apart) instead of a bulk transfer, and for
    /// how long (the sender's end is its start plus this).
    messages: Option<(u32, Nanos)>,
    messages_duration: Nanos,
    /// Sender: the next message's deadline and the end of sending, messages made, bytes
    /// not yet taken by the stream.
    next_message: Nanos,
    messages_end: Nanos,
    messages_sent: u64,
    unsent: Vec<u8>,
    /// Receiver: the bytes of the message being read, and (send, receive) time of each one.
    partial: Vec<u8>,
    received: Vec<(Nanos, Nanos)>,
    /// Something went wrong with the transfer itself (an object cut short).
    error: Option<String>,
}

impl Transfer {
    /// The request's mode: objects, messages, or bulk in the flow's direction.
    fn mode(&self) -> Mode {
        match (self.objects, self.messages, self.upload) {
            (Some(_), _, _) => Mode::Objects,
            (None, Some(_), _) => Mode::Messages,
            (None, None, true) => Mode::Upload,
            (None, None, false) => Mode::Download,
        }
    }

    fn streams(&self) -> u64 {
        u64::from(self.streams.max(1))
    }

    /// The request this end sends (client), as the agent's QUIC client sends it for the
    /// same flow: bulk with `bytes` or else until the flow's end, messages for
    /// `messages_duration`, objects `streams` at a time.
    fn as_request(&self) -> Request {
        let mode = self.mode();
        let (message_size, message_interval_ns) = self.messages.map_or((0, 0), |(s, i)| (u64::from(s), i));
        let (object_count, object_size) = self.objects.unwrap_or((0, 0));
        let bulk_bytes = (self.limit != u64::MAX).then_some(self.limit);
        Request {
            mode,
            // The agent's --direction defaults to upload, objects included.
            client_sends_messages: self.upload || self.objects.is_some(),
            bytes: if mode == Mode::Objects {
                0
            } else {
                bulk_bytes.unwrap_or(0)
            },
            duration_ns: match mode {
                Mode::Messages => self.messages_duration,
                Mode::Upload | Mode::Download if bulk_bytes.is_none() => self.messages_duration,
                _ => 0,
            },
            object_size,
            object_count,
            message_size,
            message_interval_ns,
            streams: self.streams(),
        }
    }

    /// The server takes the client's request.
    fn take_request(&mut self, r: Request) {
        self.upload = r.client_sends();
        self.limit = if r.bytes == 0 { u64::MAX } else { r.bytes };
        self.messages = (r.mode == Mode::Messages).then_some((r.message_size as u32, r.message_interval_ns));
        self.messages_duration = r.duration_ns;
        self.streams = r.streams.max(1) as u32;
        self.objects = (r.mode == Mode::Objects).then_some((r.object_count, r.object_size));
    }

    /// Messages mode, the sender: makes the messages due by `now` (before the end), each
    /// stamped with its sequence number and deadline, and writes what the stream takes;
    /// finishes the stream at the end once everything made is written.
    fn write_messages(&mut self, conn: &mut Connection, now: Nanos) {
        let (Some(id), Some((size, interval))) = (self.stream, self.messages) else {
            return;
        };
        let end = self.messages_end;
        while self.next_message <= now && self.next_message < end {
            let mut m = vec![0u8; size as usize];
            let stamp = agent_proto::wire::stamp::Stamp {
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
                if let Ok(s) = agent_proto::wire::stamp::Stamp::decode(&self.partial) {
                    self.received.push((s.send_ns, now));
                }
                self.partial.clear();
            }
        }
    }

    /// Bulk, the sender: opens the payload streams (the control stream is the first),
    /// then writes to one after the other, as the agent's writer taking turns, while the
    /// connection takes data; each stream finishes at its share of the limit.
    fn write(&mut self, conn: &mut Connection) {
        let Some(control) = self.stream else { return };
        if self.payload.is_empty() {
            self.payload.push(control);
        }
        while (self.payload.len() as u64) < self.streams() {
            let Some(id) = conn.streams().open(Dir::Uni) else { break };
            self.payload.push(id);
        }
        let n = self.payload.len();
        self.stream_bytes.resize(n, 0);
        self.stream_done.resize(n, false);
        // Turns without progress; a whole round of them means the connection is full.
        let mut idle = 0;
        while !self.finished_writing && idle < n {
            let k = self.turn % n;
            self.turn = self.turn.wrapping_add(1);
            if self.stream_done[k] {
                idle += 1;
                continue;
            }
            let id = self.payload[k];
            let left = share(self.limit, self.streams(), k as u64) - self.stream_bytes[k];
            if left == 0 {
                self.stream_done[k] = conn.send_stream(id).finish().is_ok();
                idle = 0;
            } else {
                let len = left.min(CHUNK.len() as u64) as usize;
                match conn.send_stream(id).write(&CHUNK[..len]) {
                    Ok(w) if w > 0 => {
                        self.bytes += w as u64;
                        self.stream_bytes[k] += w as u64;
                        idle = 0;
                    }
                    _ => idle += 1,
                }
            }
            self.finished_writing = self.payload.len() as u64 == self.streams() && self.stream_done.iter().all(|&d| d);
        }
    }

    /// Reads what arrived on stream `id` (the first `REQUEST_LEN` bytes into `request` if
    /// `skip_request`), counting the payload into `delivered`; the payload read, and
    /// whether the stream's end was read.
    fn read_stream(
        &mut self,
        conn: &mut Connection,
        id: StreamId,
        skip_request: bool,
        delivered: &Cell<Delivered>,
        now: Nanos,
    ) -> (u64, bool) {
        let mut recv = conn.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            return (0, false);
        };
        let mut ended = false;
        let mut got = 0u64;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => {
                    let mut data: Bytes = chunk.bytes;
                    if skip_request && self.request.len() < REQUEST_LEN {
                        let take = (REQUEST_LEN - self.request.len()).min(data.len());
                        self.request.extend_from_slice(&data[..take]);
                        data = data.slice(take..);
                        if self.request.len() == REQUEST_LEN {
                            match Request::decode(QUIC, &self.request).and_then(|r| r.validate().map(|()| r)) {
                                Ok(r) => self.take_request(r),
                                Err(e) => self.error = Some(format!("bad request: {e}")),
                            }
                        }
                    }
                    got += data.len() as u64;
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
        self.bytes += got;
        Delivered::add(delivered, got, now);
        (got, ended)
    }

    /// Bulk or messages, the receiver: reads the control stream and the payload streams
    /// the sender opened; `true` once the end of every one was read.
    fn read(&mut self, conn: &mut Connection, skip_request: bool, delivered: &Cell<Delivered>, now: Nanos) -> bool {
        let Some(control) = self.stream else { return false };
        if self.payload.is_empty() {
            self.payload.push(control);
            self.stream_bytes.push(0);
            self.stream_done.push(false);
        }
        while let Some(id) = conn.streams().accept(Dir::Uni) {
            self.payload.push(id);
            self.stream_bytes.push(0);
            self.stream_done.push(false);
        }
        for k in 0..self.payload.len() {
            if self.stream_done[k] {
                continue;
            }
            let (got, ended) = self.read_stream(conn, self.payload[k], skip_request && k == 0, delivered, now);
            self.stream_bytes[k] += got;
            self.stream_done[k] = ended;
        }
        let known = !skip_request || self.request.len() == REQUEST_LEN;
        known && self.payload.len() as u64 >= self.streams() && self.stream_done.iter().all(|&d| d)
    }

    /// Objects, the client: keeps `streams` objects requested at once, each on a new
    /// bidirectional stream (its 8-byte request, then FIN), reads them, and records each
    /// one whole; `true` once all of them arrived.
    fn fetch_objects(&mut self, conn: &mut Connection, delivered: &Cell<Delivered>, now: Nanos) -> bool {
        let Some((count, size)) = self.objects else {
            return false;
        };
        let mut i = 0;
        while i < self.fetches.len() {
            let id = self.fetches[i].id;
            let (got, ended) = self.read_stream(conn, id, false, delivered, now);
            let f = &mut self.fetches[i];
            if got > 0 {
                f.got += got;
                f.first_byte_ns.get_or_insert(now);
            }
            if ended {
                let f = self.fetches.remove(i);
                if f.got != size {
                    self.error = Some(format!("object {}: server sent {} of {size} bytes", f.index, f.got));
                }
                self.objects_done.push(ObjectDone {
                    index: f.index,
                    size: f.got,
                    request_ns: f.request_ns,
                    first_byte_ns: f.first_byte_ns.unwrap_or(now),
                    complete_ns: now,
                });
            } else {
                i += 1;
            }
        }
        while (self.fetches.len() as u64) < self.streams() && self.next_object < count {
            let Some(id) = conn.streams().open(Dir::Bi) else { break };
            let word = object::ObjectRequest { size }.encode();
            let _ = conn.send_stream(id).write(&word);
            let _ = conn.send_stream(id).finish();
            self.fetches.push(Fetch {
                index: self.next_object,
                id,
                request_ns: now,
                first_byte_ns: None,
                got: 0,
            });
            self.next_object += 1;
        }
        self.objects_done.len() as u64 == count
    }

    /// Objects, the server: takes each object stream, reads its size, and sends that many
    /// bytes to one object after the other while the connection takes data, then FIN.
    fn serve_objects(&mut self, conn: &mut Connection) {
        while let Some(id) = conn.streams().accept(Dir::Bi) {
            self.serving.push(Serve {
                id,
                request: Vec::new(),
                size: None,
                written: 0,
            });
        }
        for s in self.serving.iter_mut().filter(|s| s.size.is_none()) {
            let mut recv = conn.recv_stream(s.id);
            let Ok(mut chunks) = recv.read(true) else { continue };
            while let Ok(Some(c)) = chunks.next(object::LEN - s.request.len()) {
                s.request.extend_from_slice(&c.bytes);
                if s.request.len() == object::LEN {
                    break;
                }
            }
            let _ = chunks.finalize();
            if s.request.len() == object::LEN {
                s.size = object::ObjectRequest::decode(&s.request).ok().map(|r| r.size);
            }
        }
        let n = self.serving.len();
        let mut idle = 0;
        while idle < n {
            let k = self.turn % n;
            self.turn = self.turn.wrapping_add(1);
            let s = &mut self.serving[k];
            let Some(size) = s.size else {
                idle += 1;
                continue;
            };
            let left = size - s.written;
            if left == 0 {
                idle += 1;
                continue;
            }
            let len = left.min(CHUNK.len() as u64) as usize;
            match conn.send_stream(s.id).write(&CHUNK[..len]) {
                Ok(w) if w > 0 => {
                    s.written += w as u64;
                    self.bytes += w as u64;
                    idle = 0;
                    if s.written == size {
                        let _ = conn.send_stream(s.id).finish();
                        self.objects_served += 1;
                    }
                }
                _ => idle += 1,
            }
        }
        self.serving.retain(|s| s.size.is_none_or(|size| s.written < size));
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
/// end, on `streams` streams), constant-rate messages, upload or download; or `objects`
/// (count, bytes each) downloaded `streams` at a time.
pub struct Plan {
    pub start: Nanos,
    pub end: Nanos,
    pub upload: bool,
    pub bytes: Option<u64>,
    pub messages: Option<(u32, Nanos)>,
    pub streams: u32,
    pub objects: Option<(u64, u64)>,
}

impl QuicClient {
    pub fn new(setup: QuicSetup, addr: SocketAddrV4, server: SocketAddrV4, plan: Plan) -> Result<QuicClient, String> {
        let Plan {
            start,
            end,
            upload,
            bytes,
            messages,
            streams,
            objects,
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
            qlog(&setup, "client")?,
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
                upload: upload && objects.is_none(),
                limit: bytes.unwrap_or(u64::MAX),
                messages,
                messages_duration: end.saturating_sub(start),
                streams: streams.max(1),
                objects,
                ..Transfer::default()
            },
            connected_ns: None,
            closed: false,
            error: None,
        })
    }

    /// When the client closes the connection if the transfer is not complete by then: the
    /// flow's end; downloaded messages, never (it reads until the server finishes the
    /// stream, which it does the request's duration after it began, as the agent's).
    fn close_at(&self) -> Nanos {
        let t = &self.transfer;
        if t.messages.is_some() && !t.upload {
            Nanos::MAX
        } else {
            self.end
        }
    }

    fn app(&mut self, now: Nanos) {
        let close_at = self.close_at();
        let t = &mut self.transfer;
        let (end, closed) = (self.end, &mut self.closed);
        let connected = &mut self.connected_ns;
        let error = &mut self.error;
        let delivered = &*self.delivered;
        let probe = self.stack.probe.clone();
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
                    Event::Stream(StreamEvent::Finished { id }) if t.upload && t.payload.contains(&id) => {
                        t.streams_acked += 1;
                        if u64::from(t.streams_acked) == t.streams() && !t.complete {
                            t.complete = true;
                            t.done_ns = Some(now);
                        }
                    }
                    _ => {}
                }
            }
            if connected.is_some() && t.stream.is_none() {
                if let Some(id) = conn.streams().open(Dir::Bi) {
                    t.messages_duration = end.saturating_sub(now);
                    let request = t
                        .as_request()
                        .encode(QUIC)
                        .expect("a QUIC request of the simulator's modes");
                    let _ = conn.send_stream(id).write(&request);
                    (t.next_message, t.messages_end) = (now, end);
                    if !t.upload {
                        let _ = conn.send_stream(id).finish();
                    }
                    t.stream = Some(id);
                }
            }
            if t.objects.is_some() {
                if t.stream.is_some() && t.fetch_objects(conn, delivered, now) && !t.complete {
                    t.complete = true;
                    t.done_ns = Some(now);
                }
            } else if t.upload && t.messages.is_some() {
                t.write_messages(conn, now);
            } else if t.upload {
                t.write(conn);
            } else if t.read(conn, false, delivered, now) && !t.complete {
                t.complete = true;
                t.done_ns = Some(now);
            }
            if !*closed && (now >= close_at || t.complete) {
                t.quic = Some(counters(conn, &probe));
                conn.close(at, VarInt::from_u32(0), Bytes::from_static(b"done"));
                *closed = true;
            }
        });
    }
}

impl Transfer {
    /// Messages mode: what this end sent and received (no lateness: the simulated sender
    /// writes each message at its deadline).
    fn messages_summary(&self) -> Option<MessagesSummary> {
        self.messages
            .map(|_| MessagesSummary::new(self.messages_sent, &[], &self.received))
    }

    /// This end's counters, with its one-way delay exchange as it stands at the summary.
    fn quic_summary(&mut self, probe: &Probe) -> Option<QuicStats> {
        let mut q = self.quic.take()?;
        q.one_way_delay = probe.one_way.lock().unwrap().summary();
        Some(q)
    }
}

fn objects_summary(done: &[ObjectDone]) -> ObjectsSummary {
    let mut objects: Vec<ObjectSummary> = done
        .iter()
        .map(|o| ObjectSummary::new(o.index, o.size, o.request_ns, o.first_byte_ns, o.complete_ns))
        .collect();
    objects.sort_by_key(|o| o.index);
    ObjectsSummary::new(objects)
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
            let close_at = self.close_at();
            if close_at < Nanos::MAX {
                t = Some(t.map_or(close_at, |x| x.min(close_at)));
            }
            // The next message's deadline (messages mode, once the stream is open).
            let tr = &self.transfer;
            if tr.messages.is_some() && tr.upload && tr.stream.is_some() && tr.next_message < self.end {
                t = t.map(|x| x.min(tr.next_message));
            }
        }
        t
    }

    fn finished(&self) -> bool {
        self.closed
    }

    fn write_summary(&mut self, raw: &Path, end: Nanos) -> std::io::Result<()> {
        let quic = self.transfer.quic_summary(&self.stack.probe);
        let t = &self.transfer;
        let d = self.delivered.get();
        let bulk = t.messages.is_none() && t.objects.is_none();
        let requests = if t.objects.is_some() {
            t.next_object * object::LEN as u64
        } else {
            0
        };
        let results = QuicClientResults {
            mode: t.mode().name(),
            sender: if t.upload { "client" } else { "server" },
            cc: self.cc.clone(),
            complete: t.complete,
            // A one-way controller that got no samples had no delay signal: not a valid run.
            error: self
                .error
                .clone()
                .or_else(|| t.error.clone())
                .or_else(|| self.stack.probe.one_way.lock().unwrap().failure()),
            bytes: d.bytes,
            bytes_sent: if t.upload { t.bytes } else { requests },
            bytes_received: if t.upload { 0 } else { t.bytes },
            stream_bytes: bulk.then(|| t.stream_bytes.clone()),
            completion_s: t.done_ns.map(|d| secs(d - self.start)),
            goodput_bps: d.last_ns.and_then(|l| goodput_bps(d.bytes, self.start, l)),
            quic,
            objects: t.objects.map(|_| objects_summary(&t.objects_done)),
            messages: t.messages_summary(),
        };
        let stopped_by = match (t.objects.is_some(), t.complete) {
            (true, _) => "objects",
            (false, true) => "bytes",
            (false, false) => "duration",
        };
        self.stack.series.finish()?;
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
            qlog(&setup, "server")?,
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

/// A connection in the agent's quic-server `results.connections`, the fields the simulator has.
#[derive(Serialize)]
struct ServerConnection {
    #[serde(flatten)]
    transfer: ServedTransfer,
    stream_bytes: Option<Vec<u64>>,
    objects_served: u64,
    quic: Option<QuicStats>,
    #[serde(flatten)]
    messages: Option<MessagesSummary>,
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
            if !request_known || (t.upload && t.objects.is_none()) {
                let ended = t.read(conn, true, delivered, now);
                if t.request.len() == REQUEST_LEN && !request_known {
                    // The sender of download messages starts now, for the request's duration.
                    t.next_message = now;
                    t.messages_end = now.saturating_add(t.messages_duration);
                    if !t.upload {
                        // The server sends: its streams' counts are the sender's from here.
                        (t.payload, t.stream_bytes, t.stream_done) = Default::default();
                        if probe.wants_one_way {
                            probe.one_way.lock().unwrap().start_stamping();
                        }
                    }
                }
                if ended && t.upload && !t.complete {
                    t.complete = true;
                    t.done_ns = Some(now);
                }
            }
            if t.request.len() == REQUEST_LEN {
                if let Some((count, _)) = t.objects {
                    t.serve_objects(conn);
                    t.complete = t.objects_served == count;
                } else if !t.upload && t.messages.is_some() {
                    t.write_messages(conn, now);
                    t.complete = t.finished_writing;
                } else if !t.upload {
                    t.write(conn);
                    t.complete = t.finished_writing;
                }
            }
            if !conn.is_closed() {
                t.quic = Some(counters(conn, &probe));
            }
        });
        packets(self.stack.out.drain(..), out);
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        let t = &self.transfer;
        let mut wake = self.stack.wake();
        // Download messages: the next message's deadline, then the end of sending.
        let open = self
            .stack
            .conns
            .values()
            .next()
            .is_some_and(|c| !c.is_closed() && !c.is_drained());
        if open && t.messages.is_some() && !t.upload && t.request.len() == REQUEST_LEN && !t.finished_writing {
            let due = if t.next_message < t.messages_end {
                t.next_message
            } else {
                t.messages_end
            };
            wake = Some(wake.map_or(due, |w| w.min(due)));
        }
        wake
    }

    fn finished(&self) -> bool {
        true
    }

    fn write_summary(&mut self, raw: &Path, end: Nanos) -> std::io::Result<()> {
        let quic = self.transfer.quic_summary(&self.stack.probe);
        let t = &self.transfer;
        let connections = if self.connected_ns.is_some() {
            // Objects: the requests read, the objects sent.
            let (sent, received) = match t.objects {
                Some((_, size)) => (t.objects_served * size, t.objects_served * object::LEN as u64),
                None if t.upload => (0, t.bytes),
                None => (t.bytes, 0),
            };
            vec![ServerConnection {
                // `stopped` stays false: no simulated end is signalled before its end.
                transfer: ServedTransfer {
                    complete: t.complete,
                    error: t
                        .error
                        .clone()
                        .or_else(|| self.stack.probe.one_way.lock().unwrap().failure()),
                    bytes: t.bytes,
                    bytes_sent: sent,
                    bytes_received: received,
                    ..ServedTransfer::requested(Some(t.mode()), !t.upload)
                },
                stream_bytes: (t.messages.is_none() && t.objects.is_none()).then(|| t.stream_bytes.clone()),
                objects_served: t.objects_served,
                quic,
                messages: t.messages_summary(),
            }]
        } else {
            vec![]
        };
        let results = ServerResults {
            cc: self.cc.clone(),
            connections,
        };
        self.stack.series.finish()?;
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
