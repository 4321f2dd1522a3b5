//! What this crate emits, read by an independent parser: smoltcp's `wire` (the model of
//! this crate's design, and the sans-IO TCP the simulator has run). Every packet the
//! builders make passes smoltcp's checks and checksums and reads back the same fields and
//! TCP options.

use std::net::Ipv4Addr;

use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{
    IpAddress, IpProtocol, Ipv4Packet as SmolIpv4, Ipv4Repr as SmolIpv4Repr, TcpControl, TcpPacket as SmolTcp,
    TcpRepr as SmolTcpRepr, UdpPacket as SmolUdp, UdpRepr as SmolUdpRepr,
};
use wire::ipv4::{Ecn, Ipv4Repr};
use wire::tcp::{flags, SackBlocks, TcpRepr};

const A: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
const B: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);

fn ip_of(p: &[u8]) -> (SmolIpv4<&[u8]>, SmolIpv4Repr) {
    let ip = SmolIpv4::new_checked(p).expect("smoltcp takes the IPv4 header");
    let repr = SmolIpv4Repr::parse(&ip, &ChecksumCapabilities::default()).expect("and its checksum");
    (ip, repr)
}

#[test]
fn udp_packets_read_the_same_in_smoltcp() {
    let ip = Ipv4Repr {
        ecn: Ecn::Ect1,
        ident: 77,
        ..Ipv4Repr::new(A, B, 0)
    };
    let p = wire::build::udp(&ip, 40000, 5201, b"datagram", true).unwrap();
    let (v, repr) = ip_of(&p);
    assert_eq!((repr.src_addr, repr.dst_addr), (A, B));
    assert_eq!(
        (repr.next_header, repr.payload_len, repr.hop_limit),
        (IpProtocol::Udp, 16, 64)
    );
    assert_eq!((v.ecn(), v.ident(), v.dont_frag()), (1, 77, true));
    let u = SmolUdp::new_checked(v.payload()).unwrap();
    let r = SmolUdpRepr::parse(
        &u,
        &IpAddress::Ipv4(A),
        &IpAddress::Ipv4(B),
        &ChecksumCapabilities::default(),
    )
    .expect("smoltcp verifies the UDP checksum");
    assert_eq!((r.src_port, r.dst_port, u.payload()), (40000, 5201, &b"datagram"[..]));
}

#[test]
fn tcp_packets_and_options_read_the_same_in_smoltcp() {
    let cases = [
        // A SYN as Linux sends it.
        TcpRepr {
            src_port: 40000,
            dst_port: 5201,
            seq: 0xfffe_0000,
            flags: flags::SYN,
            window: 64240,
            mss: Some(1460),
            window_scale: Some(7),
            sack_permitted: true,
            timestamps: Some((123, 0)),
            ..TcpRepr::default()
        },
        // An ACK with timestamps and three SACK blocks.
        TcpRepr {
            src_port: 5201,
            dst_port: 40000,
            seq: 1,
            ack: 0xfffe_1000,
            flags: flags::ACK,
            window: 501,
            timestamps: Some((9, 123)),
            sack: SackBlocks::new(&[(3000, 4448), (6000, 7448), (9000, 10448)]).unwrap(),
            ..TcpRepr::default()
        },
    ];
    for t in cases {
        let payload = if t.flags & flags::SYN != 0 {
            &b""[..]
        } else {
            &b"bytes"[..]
        };
        let p = wire::build::tcp(&Ipv4Repr::new(A, B, 0), &t, payload).unwrap();
        let (v, _) = ip_of(&p);
        let seg = SmolTcp::new_checked(v.payload()).unwrap();
        let r = SmolTcpRepr::parse(
            &seg,
            &IpAddress::Ipv4(A),
            &IpAddress::Ipv4(B),
            &ChecksumCapabilities::default(),
        )
        .expect("smoltcp verifies the TCP checksum and options");
        assert_eq!(
            (r.src_port, r.dst_port, r.seq_number.0 as u32),
            (t.src_port, t.dst_port, t.seq)
        );
        assert_eq!(
            r.ack_number.map(|a| a.0 as u32),
            (t.flags & flags::ACK != 0).then_some(t.ack)
        );
        assert_eq!(
            r.control,
            if t.flags & flags::SYN != 0 {
                TcpControl::Syn
            } else {
                TcpControl::None
            }
        );
        assert_eq!(
            (r.window_len, r.max_seg_size, r.sack_permitted),
            (t.window, t.mss, t.sack_permitted)
        );
        // smoltcp keeps the scale only on a SYN.
        if t.flags & flags::SYN != 0 {
            assert_eq!(r.window_scale, t.window_scale);
        }
        let ts = r.timestamp.map(|ts| (ts.tsval, ts.tsecr));
        assert_eq!(ts, t.timestamps);
        let sack: Vec<(u32, u32)> = r.sack_ranges.iter().flatten().copied().collect();
        assert_eq!(sack, t.sack.as_slice());
        assert_eq!(r.payload, payload);
    }
}
