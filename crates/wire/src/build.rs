//! Whole IPv4 packets, every length and checksum filled in: what the simulator's hosts
//! put on the network and what tests feed the engine, the tap and the simulator.

use super::ipv4::{protocol, Ipv4Repr, MIN_HEADER_LEN};
use super::tcp::{TcpPacket, TcpRepr};
use super::udp::{self, UdpPacket};
use super::Error;

/// An IPv4/UDP packet carrying `payload` from `src_port` to `dst_port`; the UDP checksum
/// is filled in if `checksum`, else 0 (which IPv4 allows: "no checksum").
pub fn udp(ip: &Ipv4Repr, src_port: u16, dst_port: u16, payload: &[u8], checksum: bool) -> Result<Vec<u8>, Error> {
    let udp_len = udp::HEADER_LEN + payload.len();
    let mut p = vec![0u8; MIN_HEADER_LEN + udp_len];
    Ipv4Repr {
        protocol: protocol::UDP,
        ..*ip
    }
    .emit(&mut p, udp_len)?;
    let mut u = UdpPacket::new_unchecked(&mut p[MIN_HEADER_LEN..]);
    u.set_src_port(src_port);
    u.set_dst_port(dst_port);
    u.set_length(udp_len as u16);
    p[MIN_HEADER_LEN + udp::HEADER_LEN..].copy_from_slice(payload);
    if checksum {
        UdpPacket::new_unchecked(&mut p[MIN_HEADER_LEN..]).fill_checksum(ip.src, ip.dst);
    }
    Ok(p)
}

/// An IPv4/TCP packet: the header `tcp` (options included) and `payload`, TCP checksum
/// filled in.
pub fn tcp(ip: &Ipv4Repr, tcp: &TcpRepr, payload: &[u8]) -> Result<Vec<u8>, Error> {
    let seg_len = tcp.header_len() + payload.len();
    let mut p = vec![0u8; MIN_HEADER_LEN + seg_len];
    Ipv4Repr {
        protocol: protocol::TCP,
        ..*ip
    }
    .emit(&mut p, seg_len)?;
    tcp.emit(&mut p[MIN_HEADER_LEN..])?;
    p[MIN_HEADER_LEN + tcp.header_len()..].copy_from_slice(payload);
    TcpPacket::new_unchecked(&mut p[MIN_HEADER_LEN..]).fill_checksum(ip.src, ip.dst);
    Ok(p)
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use crate::ipv4::{Ecn, Ipv4Packet};
    use crate::tcp::flags;

    const A: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
    const B: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);

    #[test]
    fn udp_packets_parse_back() {
        let ip = Ipv4Repr {
            ecn: Ecn::Ect0,
            ident: 9,
            ..Ipv4Repr::new(A, B, 0)
        };
        for checksum in [false, true] {
            let p = udp(&ip, 40000, 5201, &[7; 100], checksum).unwrap();
            let v = Ipv4Packet::new_checked(&p[..]).unwrap();
            assert!(v.verify_checksum());
            assert_eq!(Ipv4Repr::parse(&v), Ipv4Repr { protocol: 17, ..ip });
            assert_eq!(usize::from(v.total_len()), p.len());
            let u = UdpPacket::new_checked(v.transport()).unwrap();
            assert_eq!((u.src_port(), u.dst_port(), u.length()), (40000, 5201, 108));
            assert_eq!(u.payload(), &[7; 100][..]);
            assert_eq!(u.checksum() != 0, checksum);
            if checksum {
                assert!(u.verify_checksum(A, B));
            }
        }
    }

    #[test]
    fn tcp_packets_parse_back() {
        let t = TcpRepr {
            src_port: 40000,
            dst_port: 5201,
            seq: 1,
            ack: 2,
            flags: flags::ACK | flags::PSH,
            window: 512,
            timestamps: Some((5, 6)),
            ..TcpRepr::default()
        };
        let p = tcp(&Ipv4Repr::new(A, B, 0), &t, b"hello").unwrap();
        let v = Ipv4Packet::new_checked(&p[..]).unwrap();
        let seg = TcpPacket::new_checked(v.transport()).unwrap();
        assert!(seg.verify_checksum(A, B));
        assert_eq!(TcpRepr::parse(&seg), Ok(t));
        assert_eq!((seg.header_len(), seg.payload()), (32, &b"hello"[..]));
        assert_eq!(seg.segment_len(), 5);
    }
}
