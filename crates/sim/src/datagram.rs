//! IPv4/UDP packets as the simulated hosts put them on the network (`wire::build`): a
//! 20-byte IPv4 header (checksum filled in, TTL 64, DF set like Linux) and an 8-byte UDP
//! header (checksum 0, which IPv4 allows), so the forwarder sees what a kernel would have
//! sent.

use std::net::{Ipv4Addr, SocketAddrV4};

use wire::ipv4::{protocol, Ecn, Ipv4Packet, Ipv4Repr};
use wire::udp::UdpPacket;

/// A UDP datagram as one endpoint sends or receives it.
#[derive(Debug, Clone)]
pub struct Datagram {
    pub src: SocketAddrV4,
    pub dst: SocketAddrV4,
    pub ecn: Ecn,
    pub payload: Vec<u8>,
}

impl Datagram {
    /// The IPv4 packet carrying it; `ident` is the IP identification field.
    pub fn to_packet(&self, ident: u16) -> Vec<u8> {
        let ip = Ipv4Repr {
            ecn: self.ecn,
            ident,
            ..Ipv4Repr::new(*self.src.ip(), *self.dst.ip(), protocol::UDP)
        };
        wire::build::udp(&ip, self.src.port(), self.dst.port(), &self.payload, false)
            .expect("a datagram the simulator's endpoints send fits an IPv4 packet")
    }

    /// The datagram in an IPv4 packet the network delivered; None if it is not UDP.
    pub fn from_packet(p: &[u8]) -> Option<Datagram> {
        let ip = Ipv4Packet::new_checked(p).ok()?;
        if ip.protocol() != protocol::UDP {
            return None;
        }
        let udp = UdpPacket::new_checked(ip.payload()).ok()?;
        Some(Datagram {
            src: SocketAddrV4::new(ip.src_addr(), udp.src_port()),
            dst: SocketAddrV4::new(ip.dst_addr(), udp.dst_port()),
            ecn: ip.ecn(),
            payload: udp.payload().to_vec(),
        })
    }
}

/// The socket address of `port` on `addr`.
pub fn at(addr: Ipv4Addr, port: u16) -> SocketAddrV4 {
    SocketAddrV4::new(addr, port)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_through_the_engine_parsers() {
        let d = Datagram {
            src: at(Ipv4Addr::new(198, 18, 0, 1), 40000),
            dst: at(Ipv4Addr::new(198, 18, 0, 2), 5201),
            ecn: Ecn::Ect0,
            payload: vec![7; 100],
        };
        let p = d.to_packet(9);
        assert_eq!(p.len(), 128);
        assert!(Ipv4Packet::new_checked(&p[..]).unwrap().verify_checksum());
        let key = wire::flow_key(&p).unwrap();
        assert_eq!((key.sport, key.dport, key.proto), (40000, 5201, 17));
        let back = Datagram::from_packet(&p).unwrap();
        assert_eq!(
            (back.src, back.dst, back.ecn, back.payload),
            (d.src, d.dst, d.ecn, d.payload)
        );
    }
}
