//! TCP with the lab's own sans-IO TCP (`crates/tcp`, recorded as `transportlab-tcp`),
//! which follows Linux's behaviour (docs/simulator.md, "The simulator's TCP"). Each end
//! is one `tcp::Connection` at its address; the simulator carries its segments in IPv4
//! packets. The application is the agent's bulk transfer, as the smoltcp endpoint's
//! (`super::tcp`): the client sends the agent's request (`agent_proto::wire::request`),
//! the sender writes zeros up to the byte count or the flow's end, the client aborts at
//! its end.

use std::cell::Cell;
use std::net::SocketAddrV4;
use std::path::Path;

use linkem::Nanos;
use tcp::{Config, Connection, Segment, State, STACK_NAME};
use wire::ipv4::{protocol, Ecn, Ipv4Packet, Ipv4Repr};

use super::bulk::{client_request, Bulk, ClientLife, SummaryOf, TcpSetup, REQUEST_LEN};
use super::tcp_series::{self, Sample, Window};
use super::{Delivered, Endpoint, SampleGrid, Series};

/// Bytes written to the send buffer at a time.
const CHUNK: u64 = 1 << 20;

/// The IPv4 packet carrying `seg` from `src` to `dst` (DF set, TTL 64, both checksums).
fn to_packet(seg: &Segment, src: SocketAddrV4, dst: SocketAddrV4) -> Vec<u8> {
    let ip = Ipv4Repr {
        ecn: Ecn::from_bits(seg.ecn),
        ..Ipv4Repr::new(*src.ip(), *dst.ip(), protocol::TCP)
    };
    wire::build::tcp(&ip, &seg.header, &seg.payload).expect("a segment fits an IPv4 packet")
}

/// The TCP segment in an IPv4 packet; `None` if it is not one.
fn from_packet(p: &[u8]) -> Option<Segment> {
    let ip = Ipv4Packet::new_checked(p).ok()?;
    if ip.protocol() != protocol::TCP {
        return None;
    }
    Segment::parse(ip.transport(), ip.ecn() as u8)
}

/// The series row of connection `c` at `t_ns`, `bytes` sent or read.
fn sample(c: &Connection, t_ns: Nanos, bytes: u64) -> Sample {
    Sample {
        t_ns,
        bytes,
        window: Some(Window {
            cwnd: c.cwnd(),
            // As the kernel reports an unset ssthresh (TCP_INFINITE_SSTHRESH).
            ssthresh: c.ssthresh().unwrap_or(tcp::cc::INFINITE_SSTHRESH),
            snd_mss: c.mss(),
            ca_state: c.ca_state() as u32,
            rcv_ssthresh: c.receiver().rcv_ssthresh() as u32,
            rcv_space: c.receiver().rcv_space() as u32,
            rcv_wnd: c.receiver().rcv_wnd,
        }),
        srtt_us: c.srtt_us(),
        rttvar_us: c.srtt_us().map(|_| c.rttvar_us()),
        min_rtt_us: c.min_rtt_us(),
        bytes_in_flight: c.bytes_in_flight(),
        total_retrans: c.stats().total_retrans,
    }
}

/// One end: its connection, address, peer, series, and the application's transfer.
struct End {
    addr: SocketAddrV4,
    peer: SocketAddrV4,
    conn: Connection,
    series: Series<Sample>,
    grid: SampleGrid,
    bulk: Bulk,
}

impl End {
    fn new(addr: SocketAddrV4, peer: SocketAddrV4, conn: Connection, series: &Path, bulk: Bulk) -> End {
        End {
            addr,
            peer,
            conn,
            series: Series::new(series, tcp_series::schema(true)),
            grid: SampleGrid::default(),
            bulk,
        }
    }

    fn receive(&mut self, now: Nanos, packet: &[u8]) {
        if let Some(seg) = from_packet(packet) {
            if seg.header.dst_port == self.addr.port() && seg.header.src_port == self.peer.port() {
                self.conn.receive(now, &seg);
            }
        }
    }

    /// Lets the connection send what is due, into `out` as IPv4 packets.
    fn transmit(&mut self, now: Nanos, out: &mut Vec<Vec<u8>>) {
        let mut segs = Vec::new();
        self.conn.poll(now, &mut segs);
        out.extend(segs.iter().map(|s| to_packet(s, self.addr, self.peer)));
    }

    /// Writes zeros up to the limit (or while there is room), then the FIN.
    fn write(&mut self) {
        let b = &mut self.bulk;
        while b.p.sent < b.limit {
            let n = self.conn.write_zeros((b.limit - b.p.sent).min(CHUNK));
            if n == 0 {
                break;
            }
            b.p.sent += n;
        }
        if b.p.sent >= b.limit {
            self.conn.close();
        }
    }

    /// Reads what arrived (the request first if `want_request`), counting the payload.
    fn read(&mut self, want_request: bool, delivered: &Cell<Delivered>, now: Nanos) {
        if want_request && !self.bulk.request_read() {
            let mut buf = [0u8; REQUEST_LEN];
            let n = self.conn.read(now, &mut buf[..self.bulk.request_missing()]);
            self.bulk.take_request(&buf[..n]);
        }
        let n = self.conn.consume(now, usize::MAX) as u64;
        self.bulk.p.received += n;
        Delivered::add(delivered, n, now);
    }

    /// A series row at the first poll at or after each 10 ms deadline.
    fn sample(&mut self, now: Nanos, client: bool) {
        if self.grid.due(now) {
            let bytes = self.bulk.series_bytes(client);
            self.series.push(sample(&self.conn, now, bytes));
        }
    }
}

fn config(setup: &TcpSetup, local: SocketAddrV4, remote: SocketAddrV4, salt: u64) -> Config {
    let seed = setup.seed ^ salt;
    let mut cfg = Config::new(&setup.cc, local.port(), remote.port());
    cfg.mss_clamp = setup.mss;
    // tcp_rmem[0] only matters under TCP memory pressure, which one connection never
    // reaches (as on the emulated hosts).
    if let Some([_, initial, max]) = setup.rmem {
        cfg.rcvbuf_initial = initial;
        cfg.rcvbuf = max;
    }
    if let Some(s) = setup.sndbuf {
        cfg.sndbuf = s;
    }
    // Linux draws both per connection; here they come from the flow's seed.
    cfg.isn = (seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32;
    cfg.ts_offset = (seed.wrapping_mul(0xD6E8_FEB8_6659_FD93) >> 32) as u32;
    cfg
}

pub struct TcpClient {
    of: SummaryOf,
    end: End,
    life: ClientLife,
}

impl TcpClient {
    pub fn new(
        setup: TcpSetup,
        addr: SocketAddrV4,
        server: SocketAddrV4,
        start: Nanos,
        stop: Nanos,
        upload: bool,
        bytes: Option<u64>,
    ) -> Result<TcpClient, String> {
        let conn = Connection::connect(config(&setup, addr, server, 0)).map_err(|e| e.to_string())?;
        let series = setup.raw.join(format!("{}-client.arrow", setup.name));
        let bulk = Bulk::new(upload, bytes.unwrap_or(u64::MAX));
        Ok(TcpClient {
            of: SummaryOf::new(&setup, STACK_NAME, start),
            end: End::new(addr, server, conn, &series, bulk),
            life: ClientLife::new(start, stop),
        })
    }
}

impl Endpoint for TcpClient {
    fn address(&self) -> (u8, SocketAddrV4) {
        (protocol::TCP, self.end.addr)
    }

    fn receive(&mut self, now: Nanos, packet: &[u8]) {
        self.end.receive(now, packet);
    }

    fn poll(&mut self, now: Nanos, out: &mut Vec<Vec<u8>>) {
        let life = &mut self.life;
        if now < life.start || life.closed {
            return;
        }
        life.started = true;
        let e = &mut self.end;
        if e.conn.state() == State::Closed {
            life.closed = true;
            return;
        }
        if e.conn.is_established() {
            life.established(now);
        }
        if life.connected_ns.is_some() && !life.requested {
            let request = client_request(e.bulk.p.upload, e.bulk.limit, now, life.stop);
            life.requested = e.conn.write(&request) == REQUEST_LEN;
        }
        if life.requested {
            if e.bulk.p.upload {
                e.write();
            } else {
                e.read(false, &self.of.delivered, now);
                if e.conn.peer_closed() {
                    e.bulk.complete_at(Some(now));
                }
            }
        }
        // An upload is done, as for the agent's tcp-client, when the server's FIN comes
        // back: the server closes its side after reading everything (tcp/client.rs:
        // shutdown_write, then drain_to_eof).
        let (b, d) = (&mut e.bulk, self.of.delivered.get());
        if b.p.upload && b.p.sent >= b.limit && d.bytes >= b.limit && e.conn.peer_closed() {
            b.complete_at(Some(now));
        }
        if now >= life.stop || (b.p.complete && !b.p.upload) {
            e.conn.abort();
            life.closed = true;
        }
        e.transmit(now, out);
        if life.connected_ns.is_some() {
            e.sample(now, true);
        }
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        self.life.next_wakeup(self.end.conn.next_timeout())
    }

    fn finished(&self) -> bool {
        self.life.closed || self.end.bulk.p.complete
    }

    fn write_summary(&mut self, raw: &Path, end: Nanos) -> std::io::Result<()> {
        self.end.series.finish()?;
        let e = &self.end;
        // The sending end's retransmitted segments (`tcpi_total_retrans`), when the client
        // sends, as the agent reports it.
        let retransmits = e.bulk.p.upload.then(|| e.conn.stats().total_retrans);
        self.of.write_client(raw, end, &e.bulk.p, retransmits)
    }
}

pub struct TcpServer {
    of: SummaryOf,
    end: End,
    accepted: bool,
}

impl TcpServer {
    /// `client`: the address its one connection comes from.
    pub fn new(setup: TcpSetup, addr: SocketAddrV4, client: SocketAddrV4, start: Nanos) -> Result<TcpServer, String> {
        let conn = Connection::listen(config(&setup, addr, client, 0x5EED)).map_err(|e| e.to_string())?;
        let series = setup.raw.join(format!("{}-server.arrow", setup.name));
        // Until the request says otherwise: the client sends, without a byte count.
        let bulk = Bulk::new(true, u64::MAX);
        Ok(TcpServer {
            of: SummaryOf::new(&setup, STACK_NAME, start),
            end: End::new(addr, client, conn, &series, bulk),
            accepted: false,
        })
    }
}

impl Endpoint for TcpServer {
    fn address(&self) -> (u8, SocketAddrV4) {
        (protocol::TCP, self.end.addr)
    }

    fn receive(&mut self, now: Nanos, packet: &[u8]) {
        self.end.receive(now, packet);
    }

    fn poll(&mut self, now: Nanos, out: &mut Vec<Vec<u8>>) {
        let e = &mut self.end;
        if e.conn.is_established() {
            self.accepted = true;
        }
        if !e.bulk.request_read() || e.bulk.p.upload {
            e.read(true, &self.of.delivered, now);
        }
        let b = &e.bulk;
        if b.request_read() && !b.p.upload && b.p.error.is_none() {
            e.write();
            e.bulk.p.complete = e.bulk.p.sent >= e.bulk.limit && e.conn.all_acked();
        }
        if e.bulk.p.upload && e.bulk.request_read() && e.conn.peer_closed() && !e.bulk.p.complete {
            e.bulk.complete_at(Some(now));
            // Everything read: the server closes its side (tcp/server.rs).
            e.conn.close();
        }
        e.transmit(now, out);
        if self.accepted && e.conn.state() == State::Established {
            e.sample(now, false);
        }
    }

    fn next_wakeup(&self) -> Option<Nanos> {
        self.end.conn.next_timeout()
    }

    fn finished(&self) -> bool {
        true
    }

    fn write_summary(&mut self, raw: &Path, end: Nanos) -> std::io::Result<()> {
        self.end.series.finish()?;
        let e = &self.end;
        let retransmits = (!e.bulk.p.upload).then(|| e.conn.stats().total_retrans);
        self.of.write_server(raw, end, self.accepted, &e.bulk.p, retransmits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tcp::TcpRepr;
    use wire::TcpPacket;

    #[test]
    fn packets_carry_valid_checksums_and_parse_back() {
        let seg = Segment {
            header: TcpRepr {
                src_port: 40000,
                dst_port: 5201,
                seq: 7,
                ack: 9,
                flags: tcp::flags::ACK,
                window: 100,
                timestamps: Some((1, 2)),
                ..TcpRepr::default()
            },
            payload: vec![1, 2, 3],
            ecn: 2,
        };
        let a = SocketAddrV4::new([10, 0, 0, 1].into(), 40000);
        let b = SocketAddrV4::new([10, 0, 0, 2].into(), 5201);
        let p = to_packet(&seg, a, b);
        let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
        assert!(ip.verify_checksum());
        assert!(TcpPacket::new_checked(ip.transport())
            .unwrap()
            .verify_checksum(*a.ip(), *b.ip()));
        assert_eq!(from_packet(&p), Some(seg));
        let key = wire::flow_key(&p).unwrap();
        assert_eq!((key.sport, key.dport, key.proto, key.payload_len), (40000, 5201, 6, 3));
    }
}
