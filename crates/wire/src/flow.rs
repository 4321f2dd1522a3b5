//! The flow key the packet log records for every packet: addresses, protocol, ports, the
//! TCP sequence number and the transport payload length.

use super::ipv4::{protocol, Ipv4Packet};
use super::tcp::{self, TcpPacket};
use super::udp::{self, UdpPacket};
use super::Error;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowKey {
    pub src: u32,
    pub dst: u32,
    pub sport: u16,
    pub dport: u16,
    pub proto: u8,
    pub tcp_seq: u32,
    /// Bytes after the IP header and, where this packet carries a whole one, the TCP or
    /// UDP header, up to the IP total length: a TCP segment's payload (0 for a pure ACK),
    /// a UDP datagram's; a fragment's data past its transport header.
    pub payload_len: u16,
}

impl FlowKey {
    /// A well-mixed 32-bit hash of the 5-tuple (addresses, protocol, ports; not the
    /// sequence number): the flow a queue discipline such as FQ-CoDel queues a packet by.
    /// Fixed, not perturbed per run, so a run is reproducible from its seed.
    pub fn flow_hash(&self) -> u32 {
        let tuple = (u64::from(self.src) << 32 | u64::from(self.dst))
            ^ (u64::from(self.sport) << 48 | u64::from(self.dport) << 32 | u64::from(self.proto)).rotate_left(17);
        // SplitMix64's finaliser: every input bit affects every output bit.
        let mut z = tuple.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z ^ (z >> 32)) as u32
    }
}

/// The flow key of an IPv4 packet; an error if `pkt` does not start with a whole IPv4
/// header. Ports (TCP, UDP) and the sequence number (TCP) are read from the first
/// fragment only, and as far as the bytes after the IP header hold them: a truncated
/// transport header still gives its ports, and what is missing stays 0.
pub fn flow_key(pkt: &[u8]) -> Result<FlowKey, Error> {
    let ip = Ipv4Packet::new_checked(pkt)?;
    let carried = ip.transport();
    let mut key = FlowKey {
        src: u32::from(ip.src_addr()),
        dst: u32::from(ip.dst_addr()),
        proto: ip.protocol(),
        // A later fragment, or another protocol: every byte after the IP header.
        payload_len: clamp16(carried.len()),
        ..FlowKey::default()
    };
    if !ip.is_first_fragment() {
        return Ok(key);
    }
    let l4 = ip.payload();
    match key.proto {
        protocol::TCP => {
            if l4.len() >= tcp::field::DST_PORT.end {
                let t = TcpPacket::new_unchecked(l4);
                key.sport = t.src_port();
                key.dport = t.dst_port();
                if l4.len() >= tcp::field::SEQ_NUM.end {
                    key.tcp_seq = t.seq_number();
                }
            }
            key.payload_len = TcpPacket::new_checked(carried).map_or(0, |t| clamp16(t.payload().len()));
        }
        protocol::UDP => {
            if l4.len() >= udp::field::DST_PORT.end {
                let u = UdpPacket::new_unchecked(l4);
                key.sport = u.src_port();
                key.dport = u.dst_port();
            }
            key.payload_len = clamp16(carried.len().saturating_sub(udp::HEADER_LEN));
        }
        _ => {}
    }
    Ok(key)
}

fn clamp16(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

/// The reference the views are checked against (the `reference` feature; the fuzz
/// targets enable it).
#[cfg(any(test, feature = "reference"))]
pub mod reference {
    use super::FlowKey;

    /// The parser before the typed views (literal offsets), kept to check that the views
    /// changed nothing: by the tests here and by the `engine_packet` fuzz target.
    pub fn literal_offsets(pkt: &[u8]) -> Option<FlowKey> {
        if pkt.len() < 20 || pkt[0] >> 4 != 4 {
            return None;
        }
        let ihl = ((pkt[0] & 0x0f) as usize) * 4;
        if ihl < 20 || pkt.len() < ihl {
            return None;
        }
        let be32 = |o: usize| u32::from_be_bytes([pkt[o], pkt[o + 1], pkt[o + 2], pkt[o + 3]]);
        let be16 = |o: usize| u16::from_be_bytes([pkt[o], pkt[o + 1]]);
        let mut key = FlowKey {
            src: be32(12),
            dst: be32(16),
            proto: pkt[9],
            ..FlowKey::default()
        };
        let first_fragment = be16(6) & 0x1fff == 0;
        let l4 = &pkt[ihl..];
        if first_fragment && (key.proto == 6 || key.proto == 17) && l4.len() >= 4 {
            key.sport = u16::from_be_bytes([l4[0], l4[1]]);
            key.dport = u16::from_be_bytes([l4[2], l4[3]]);
            if key.proto == 6 && l4.len() >= 8 {
                key.tcp_seq = u32::from_be_bytes([l4[4], l4[5], l4[6], l4[7]]);
            }
        }
        Some(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build;
    use crate::ipv4::Ipv4Repr;
    use crate::tcp::TcpRepr;
    use std::net::Ipv4Addr;

    #[test]
    fn flow_hash_is_the_five_tuple() {
        let key = FlowKey {
            src: 0x0a00_0001,
            dst: 0x0a00_0002,
            sport: 4000,
            dport: 5000,
            proto: 6,
            tcp_seq: 1,
            payload_len: 0,
        };
        let same_flow_later = FlowKey { tcp_seq: 99_999, ..key };
        assert_eq!(key.flow_hash(), same_flow_later.flow_hash());
        let others = [
            FlowKey { sport: 4001, ..key },
            FlowKey { dport: 5001, ..key },
            FlowKey {
                src: 0x0a00_0003,
                ..key
            },
            FlowKey {
                dst: 0x0a00_0003,
                ..key
            },
            FlowKey { proto: 17, ..key },
            FlowKey {
                src: key.dst,
                dst: key.src,
                sport: key.dport,
                dport: key.sport,
                ..key
            },
        ];
        for other in others {
            assert_ne!(key.flow_hash(), other.flow_hash(), "{other:?}");
        }
    }

    #[test]
    fn parses_udp_header() {
        let (a, b) = (Ipv4Addr::new(198, 18, 0, 1), Ipv4Addr::new(198, 18, 0, 2));
        let p = build::udp(&Ipv4Repr::new(a, b, 0), 5000, 6000, &[0; 100], false).unwrap();
        let k = flow_key(&p).unwrap();
        assert_eq!((Ipv4Addr::from(k.src), Ipv4Addr::from(k.dst)), (a, b));
        assert_eq!((k.sport, k.dport, k.proto, k.tcp_seq), (5000, 6000, 17, 0));
        assert_eq!(k.payload_len, 100);
        // Bytes past the total length (an Ethernet trailer) are not payload.
        let mut padded = p.clone();
        padded.extend_from_slice(&[0; 6]);
        assert_eq!(flow_key(&padded).unwrap().payload_len, 100);
    }

    #[test]
    fn tcp_sequence_number_payload_and_non_first_fragment() {
        let ip = Ipv4Repr::new(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), 0);
        let t = TcpRepr {
            seq: 0xdeadbeef,
            flags: tcp::flags::ACK,
            timestamps: Some((1, 2)),
            ..TcpRepr::default()
        };
        let mut p = build::tcp(&ip, &t, &[0; 1448]).unwrap();
        let k = flow_key(&p).unwrap();
        assert_eq!(
            (k.tcp_seq, k.payload_len),
            (0xdeadbeef, 1448),
            "the 32-byte header is not payload"
        );
        let ack = build::tcp(&ip, &t, &[]).unwrap();
        assert_eq!(flow_key(&ack).unwrap().payload_len, 0, "a pure ACK");
        // Fragment offset 16: no transport header here, all of it is the fragment's data.
        p[7] = 0x02;
        let k = flow_key(&p).unwrap();
        assert_eq!((k.sport, k.tcp_seq, k.payload_len), (0, 0, 32 + 1448));
    }

    #[test]
    fn rejects_ipv6_and_short() {
        assert_eq!(flow_key(&[0x60; 40]), Err(Error::NotIpv4 { version: 6 }));
        assert_eq!(flow_key(&[0x45; 10]), Err(Error::Truncated { needed: 20, got: 10 }));
    }

    #[test]
    fn truncated_transport_headers_give_what_they_hold() {
        let mut p = vec![0u8; 20 + 7];
        p[0] = 0x45;
        p[9] = 6;
        p[20..27].copy_from_slice(&[0x01, 0xbb, 0xc3, 0x50, 0xde, 0xad, 0xbe]);
        let k = flow_key(&p).unwrap();
        assert_eq!(
            (k.sport, k.dport, k.tcp_seq),
            (443, 50000, 0),
            "7 bytes: ports, no sequence number"
        );
        let k = flow_key(&p[..23]).unwrap();
        assert_eq!((k.sport, k.dport), (0, 0), "3 bytes: no ports");
        p[9] = 1; // ICMP: no ports
        assert_eq!(flow_key(&p).unwrap().sport, 0);
    }

    #[test]
    fn ip_options_move_the_transport_header() {
        let mut p = vec![0u8; 24 + 8];
        p[0] = 0x46;
        p[9] = 17;
        p[24..26].copy_from_slice(&53u16.to_be_bytes());
        p[26..28].copy_from_slice(&1234u16.to_be_bytes());
        let k = flow_key(&p).unwrap();
        assert_eq!((k.sport, k.dport), (53, 1234));
    }

    #[test]
    fn same_keys_as_the_literal_offsets() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for _ in 0..300_000 {
            let len = (next() % 72) as usize;
            let mut p: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            // Steer most inputs past the version and length checks.
            if len > 0 && next() % 4 != 0 {
                p[0] = 0x45 + (next() % 3) as u8;
            }
            if len > 9 && next() % 2 == 0 {
                p[9] = [6, 17][(next() % 2) as usize];
            }
            if len > 7 && next() % 2 == 0 {
                p[6] &= 0xe0;
                p[7] = 0;
            }
            // The literal offsets knew no payload length; it lies within the packet.
            let key = flow_key(&p).ok();
            assert!(
                key.is_none_or(|k| usize::from(k.payload_len) + 20 <= p.len()),
                "{p:02x?}"
            );
            let key = key.map(|k| FlowKey { payload_len: 0, ..k });
            assert_eq!(key, reference::literal_offsets(&p), "{p:02x?}");
        }
    }
}
