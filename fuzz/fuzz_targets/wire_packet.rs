//! The wire crate's TCP and UDP views and representations on arbitrary bytes after an IPv4
//! header, as the agent's packet tap and the simulator meet them: every parse answers with
//! a value or a typed error, never a panic; a TCP header that parses emits again to a
//! header that parses to the same values; a packet built from what was parsed passes both
//! checksums and gives the flow key its payload length.
#![no_main]

use std::net::Ipv4Addr;

use libfuzzer_sys::fuzz_target;
use wire::ipv4::{protocol, Ipv4Packet, Ipv4Repr};
use wire::tcp::{TcpPacket, TcpRepr};
use wire::udp::UdpPacket;

const A: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);

fuzz_target!(|data: &[u8]| {
    if let Ok(ip) = Ipv4Packet::new_checked(data) {
        let t = ip.transport();
        assert!(t.len() <= ip.payload().len());
        let _ = Ipv4Repr::parse(&ip);
    }
    if let Ok(u) = UdpPacket::new_checked(data) {
        assert!(u.payload().len() <= data.len() - 8);
        // A payload past an IPv4 packet's 64 KiB is refused, not built.
        if let Ok(p) = wire::build::udp(&Ipv4Repr::new(A, B, 0), u.src_port(), u.dst_port(), u.payload(), true) {
            let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
            assert!(ip.verify_checksum());
            let back = UdpPacket::new_checked(ip.transport()).unwrap();
            assert!(back.verify_checksum(A, B));
            assert_eq!(back.payload(), u.payload());
        }
    }
    let Ok(seg) = TcpPacket::new_checked(data) else { return };
    assert!(seg.header_len() <= data.len());
    let _ = seg.options().count();
    let Ok(repr) = TcpRepr::parse(&seg) else { return };
    let len = repr.header_len();
    let mut out = vec![0u8; len];
    if repr.emit(&mut out).is_err() {
        // Only options Linux would not combine overflow 40 bytes in Linux's layout.
        assert!(len > wire::tcp::MAX_HEADER_LEN);
        return;
    }
    let again = TcpPacket::new_checked(&out[..]).unwrap();
    assert_eq!(TcpRepr::parse(&again), Ok(repr));
    let Ok(p) = wire::build::tcp(&Ipv4Repr::new(A, B, protocol::TCP), &repr, seg.payload()) else {
        // Only a payload past an IPv4 packet's 64 KiB.
        assert!(seg.payload().len() + len + 20 > usize::from(u16::MAX));
        return;
    };
    let ip = Ipv4Packet::new_checked(&p[..]).unwrap();
    assert!(ip.verify_checksum());
    let back = TcpPacket::new_checked(ip.transport()).unwrap();
    assert!(back.verify_checksum(A, B));
    assert_eq!(back.payload(), seg.payload());
    assert_eq!(usize::from(wire::flow_key(&p).unwrap().payload_len), seg.payload().len());
});
