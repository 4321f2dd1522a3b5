//! TCP with smoltcp — a sans-IO TCP stack, not Linux: its congestion control is Reno or
//! CUBIC as smoltcp implements them (its window bounds data in flight), no SACK-based
//! recovery, its own delayed ACKs (10 ms). Each end is a smoltcp interface on an IP
//! "device" whose packets the simulator carries; smoltcp's clock is the simulator's, in
//! microseconds. The application is the simulator's QUIC bulk transfer, with the same
//! [`super::Request`].

use std::cell::Cell;
use std::collections::VecDeque;
use std::net::SocketAddrV4;
use std::path::Path;
use std::rc::Rc;

use linkem::Nanos;
use serde::Serialize;
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::phy::{Device, DeviceCapabilities, Medium, RxToken, TxToken};
use smoltcp::socket::tcp::{CongestionControl, Socket, SocketBuffer, State};
use smoltcp::time::Instant as SmolInstant;
use smoltcp::wire::{HardwareAddress, IpAddress, IpCidr};

use super::{write_summary, Delivered, Endpoint, Request, REQUEST_LEN};

/// Send and receive buffers of each socket: above the bandwidth-delay product of
/// 1 Gbit/s × 50 ms, so the window, not the buffer, limits a transfer (Linux autotunes
/// its buffers up to net.ipv4.tcp_{r,w}mem's maximum, 6 MiB and 4 MiB by default).
const BUFFER_BYTES: usize = 8 << 20;
const MTU: usize = 1500;
static CHUNK: [u8; 65536] = [0; 65536];

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
}

impl Stack {
    fn new(addr: SocketAddrV4, cc: CongestionControl, seed: u64, mss: Option<u16>) -> Stack {
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
        let mut socket = Socket::new(
            SocketBuffer::new(vec![0u8; BUFFER_BYTES]),
            SocketBuffer::new(vec![0u8; BUFFER_BYTES]),
        );
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
        }
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
        out.append(&mut self.wire.tx);
        self.wake = self
            .iface
            .poll_at(t, &self.sockets)
            .map(|w| (w.total_micros().max(0) as u64) * 1000);
    }
}

/// The transfer of one end: what it sent or received, and the request it read.
#[derive(Default)]
struct Transfer {
    upload: bool,
    limit: u64,
    request: Vec<u8>,
    sent: u64,
    received: u64,
    complete: bool,
    done_ns: Option<Nanos>,
}

impl Transfer {
    fn write(&mut self, s: &mut Socket<'static>) {
        while s.can_send() && self.sent < self.limit {
            let n = (self.limit - self.sent).min(CHUNK.len() as u64) as usize;
            match s.send_slice(&CHUNK[..n]) {
                Ok(w) if w > 0 => self.sent += w as u64,
                _ => break,
            }
        }
        if self.sent >= self.limit && s.may_send() {
            s.close();
        }
    }

    /// Reads what arrived (the first `REQUEST_LEN` bytes into `request` if
    /// `want_request`), counting the payload into `delivered`.
    fn read(&mut self, s: &mut Socket<'static>, want_request: bool, delivered: &Cell<Delivered>, now: Nanos) {
        let before = self.received;
        while s.can_recv() {
            let got = s.recv(|buf| {
                let mut skip = 0;
                if want_request && self.request.len() < REQUEST_LEN {
                    skip = (REQUEST_LEN - self.request.len()).min(buf.len());
                    self.request.extend_from_slice(&buf[..skip]);
                }
                (buf.len(), buf.len() - skip)
            });
            match got {
                Ok(n) => self.received += n as u64,
                Err(_) => break,
            }
        }
        Delivered::add(delivered, self.received - before, now);
    }
}

pub struct TcpSetup {
    pub name: String,
    pub cc: String,
    pub seed: u64,
    /// The largest segment payload (like TCP_MAXSEG); default 1460 (a 1500-byte MTU).
    pub mss: Option<u16>,
    pub delivered: Rc<Cell<Delivered>>,
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
    name: String,
    cc: String,
    stack: Stack,
    server: SocketAddrV4,
    start: Nanos,
    end: Nanos,
    transfer: Transfer,
    connected_ns: Option<Nanos>,
    connecting: bool,
    requested: bool,
    closed: bool,
    delivered: Rc<Cell<Delivered>>,
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
        let stack = Stack::new(addr, congestion_control(&setup.cc)?, setup.seed, setup.mss);
        Ok(TcpClient {
            name: setup.name,
            cc: setup.cc,
            stack,
            server,
            start,
            end,
            transfer: Transfer {
                upload,
                limit: bytes.unwrap_or(u64::MAX),
                ..Transfer::default()
            },
            connected_ns: None,
            connecting: false,
            requested: false,
            closed: false,
            delivered: setup.delivered,
        })
    }
}

#[derive(Serialize)]
struct ClientResults {
    sender: &'static str,
    cc: String,
    stack: &'static str,
    /// Payload the receiving application read (the server's, in an upload).
    bytes: u64,
    complete: bool,
    completion_s: Option<f64>,
    goodput_bps: Option<f64>,
    /// smoltcp does not count its retransmissions; the packet log does.
    retransmits: Option<u64>,
}

impl Endpoint for TcpClient {
    fn address(&self) -> (u8, SocketAddrV4) {
        (engine::wire::ipv4::protocol::TCP, self.stack.addr)
    }

    fn receive(&mut self, _now: Nanos, packet: &[u8]) {
        self.stack.wire.rx.push_back(packet.to_vec());
    }

    fn poll(&mut self, now: Nanos, out: &mut Vec<Vec<u8>>) {
        if now < self.start || self.closed {
            return;
        }
        if !self.connecting {
            self.connecting = true;
            let (ip, port, local) = (*self.server.ip(), self.server.port(), self.stack.addr.port());
            let cx = self.stack.iface.context();
            let socket = self.stack.sockets.get_mut::<Socket>(self.stack.socket);
            if socket.connect(cx, (IpAddress::Ipv4(ip), port), local).is_err() {
                self.closed = true;
                return;
            }
        }
        let (end, delivered) = (self.end, self.delivered.clone());
        let t = &mut self.transfer;
        let (connected, requested, closed) = (&mut self.connected_ns, &mut self.requested, &mut self.closed);
        self.stack.drive(now, out, |s| {
            if s.state() == State::Established && connected.is_none() {
                *connected = Some(now);
            }
            if connected.is_some() && !*requested && s.can_send() {
                *requested = s
                    .send_slice(
                        &Request {
                            upload: t.upload,
                            limit: t.limit,
                            ..Request::default()
                        }
                        .encode(),
                    )
                    .is_ok();
            }
            if *requested {
                if t.upload {
                    t.write(s);
                } else {
                    t.read(s, false, &delivered, now);
                    if !s.may_recv() && !t.complete {
                        t.complete = true;
                        t.done_ns = Some(now);
                    }
                }
            }
            if t.upload && t.sent >= t.limit && delivered.get().bytes >= t.limit && !t.complete {
                t.complete = true;
                t.done_ns = delivered.get().last_ns;
            }
            if now >= end || (t.complete && !t.upload) {
                s.abort();
                *closed = true;
            }
        });
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        if self.closed {
            None
        } else if !self.connecting {
            Some(self.start)
        } else {
            Some(self.stack.wake.unwrap_or(self.end).min(self.end))
        }
    }

    fn finished(&self) -> bool {
        self.closed || self.transfer.complete
    }

    fn write_summary(&self, raw: &Path, end: Nanos) -> std::io::Result<()> {
        let t = &self.transfer;
        let d = self.delivered.get();
        let span = d.last_ns.zip(self.connected_ns).map(|(l, c)| l.saturating_sub(c));
        let results = ClientResults {
            sender: if t.upload { "client" } else { "server" },
            cc: self.cc.clone(),
            stack: "smoltcp",
            bytes: d.bytes,
            complete: t.complete,
            completion_s: t.done_ns.map(|d| (d - self.start) as f64 / 1e9),
            goodput_bps: span.filter(|&s| s > 0).map(|s| d.bytes as f64 * 8.0 / (s as f64 / 1e9)),
            retransmits: None,
        };
        let stopped_by = if t.complete { "bytes" } else { "duration" };
        write_summary(
            &raw.join(format!("{}-client.json", self.name)),
            "tcp-client",
            self.start,
            end,
            stopped_by,
            &results,
        )
    }
}

pub struct TcpServer {
    name: String,
    cc: String,
    stack: Stack,
    start: Nanos,
    transfer: Transfer,
    accepted: bool,
    delivered: Rc<Cell<Delivered>>,
}

impl TcpServer {
    pub fn new(setup: TcpSetup, addr: SocketAddrV4, start: Nanos) -> Result<TcpServer, String> {
        let mut stack = Stack::new(addr, congestion_control(&setup.cc)?, setup.seed ^ 0x5EED, setup.mss);
        stack
            .socket()
            .listen(addr.port())
            .map_err(|e| format!("listen on {addr}: {e}"))?;
        Ok(TcpServer {
            name: setup.name,
            cc: setup.cc,
            stack,
            start,
            transfer: Transfer::default(),
            accepted: false,
            delivered: setup.delivered,
        })
    }
}

#[derive(Serialize)]
struct ServerConnection {
    bytes: u64,
    complete: bool,
    retransmits: Option<u64>,
}

#[derive(Serialize)]
struct ServerResults {
    cc: String,
    stack: &'static str,
    connections: Vec<ServerConnection>,
}

impl Endpoint for TcpServer {
    fn address(&self) -> (u8, SocketAddrV4) {
        (engine::wire::ipv4::protocol::TCP, self.stack.addr)
    }

    fn receive(&mut self, _now: Nanos, packet: &[u8]) {
        self.stack.wire.rx.push_back(packet.to_vec());
    }

    fn poll(&mut self, now: Nanos, out: &mut Vec<Vec<u8>>) {
        let delivered = self.delivered.clone();
        let t = &mut self.transfer;
        let accepted = &mut self.accepted;
        self.stack.drive(now, out, |s| {
            if s.is_active() {
                *accepted = true;
            }
            let known = t.request.len() == REQUEST_LEN;
            if !known || t.upload {
                t.read(s, true, &delivered, now);
                if t.request.len() == REQUEST_LEN && !known {
                    let r = Request::decode(&t.request);
                    (t.upload, t.limit) = (r.upload, r.limit);
                }
            }
            if t.request.len() == REQUEST_LEN && !t.upload {
                t.write(s);
                t.complete = t.sent >= t.limit;
            }
            if t.upload && !s.may_recv() && *accepted && !t.complete && t.request.len() == REQUEST_LEN {
                t.complete = true;
                t.done_ns = Some(now);
            }
        });
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        self.stack.wake
    }

    fn finished(&self) -> bool {
        true
    }

    fn write_summary(&self, raw: &Path, end: Nanos) -> std::io::Result<()> {
        let t = &self.transfer;
        let connections = if self.accepted {
            vec![ServerConnection {
                bytes: if t.upload { t.received } else { t.sent },
                complete: t.complete,
                retransmits: None,
            }]
        } else {
            vec![]
        };
        let results = ServerResults {
            cc: self.cc.clone(),
            stack: "smoltcp",
            connections,
        };
        write_summary(
            &raw.join(format!("{}-server.json", self.name)),
            "tcp-server",
            self.start,
            end,
            "once",
            &results,
        )
    }
}
