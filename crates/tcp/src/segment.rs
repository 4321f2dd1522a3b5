//! One TCP segment as the stack takes and gives it: the header as the `wire` crate's
//! `TcpRepr` (sequence numbers as on the wire, 32-bit), the payload, and the ECN codepoint
//! of the IP header that carries it. `parse` reads one from the TCP header's bytes; the
//! driver puts it on the wire with `wire::build::tcp` (it knows the IP header).

use wire::tcp::TcpPacket;

/// The header's values and its SACK blocks, as `Segment::header` holds them.
pub use wire::tcp::{SackBlocks, TcpRepr};

/// Header flags (the low byte of the flags field).
pub use wire::tcp::flags;

/// Most SACK blocks one segment carries: 40 option bytes, 12 for timestamps (with
/// padding), 8 per block + 2 → 3 (Linux sends 4 without timestamps).
pub const MAX_SACK_BLOCKS_WITH_TIMESTAMPS: usize = 3;
pub use wire::tcp::MAX_SACK_BLOCKS;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Segment {
    /// The TCP header: ports, numbers, flags, the window as sent (unscaled) and options
    /// (SACK blocks most recent first).
    pub header: TcpRepr,
    pub payload: Vec<u8>,
    /// ECN codepoint of the carrying IP header (0 not-ECT, 1 ECT(1), 2 ECT(0), 3 CE).
    pub ecn: u8,
}

impl Segment {
    pub fn has(&self, flag: u8) -> bool {
        self.header.flags & flag != 0
    }

    /// Sequence space it occupies: payload plus one for SYN and one for FIN.
    pub fn seq_len(&self) -> u32 {
        self.payload.len() as u32 + u32::from(self.has(flags::SYN)) + u32::from(self.has(flags::FIN))
    }

    /// A TCP header and payload (`ecn` from the IP header); `None` if it is malformed.
    pub fn parse(b: &[u8], ecn: u8) -> Option<Segment> {
        let p = TcpPacket::new_checked(b).ok()?;
        Some(Segment {
            header: TcpRepr::parse(&p).ok()?,
            payload: p.payload().to_vec(),
            ecn,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use wire::ipv4::{protocol, Ecn, Ipv4Packet, Ipv4Repr};

    use super::*;

    /// `s` as a driver puts it in an IPv4 packet, parsed back.
    fn through_the_wire(s: &Segment) -> (usize, Option<Segment>) {
        let ip = Ipv4Repr {
            ecn: Ecn::from_bits(s.ecn),
            ..Ipv4Repr::new(Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2), protocol::TCP)
        };
        let p = wire::build::tcp(&ip, &s.header, &s.payload).unwrap();
        let v = Ipv4Packet::new_checked(&p[..]).unwrap();
        (v.transport().len(), Segment::parse(v.transport(), v.ecn() as u8))
    }

    #[test]
    fn parse_reads_back_every_option_and_the_ecn_codepoint() {
        let s = Segment {
            header: TcpRepr {
                src_port: 40000,
                dst_port: 5201,
                seq: 0xfffffff0,
                ack: 7,
                flags: flags::ACK | flags::SYN,
                window: 502,
                mss: Some(1460),
                window_scale: Some(7),
                sack_permitted: true,
                timestamps: Some((123, 456)),
                sack: SackBlocks::default(),
            },
            payload: vec![1, 2, 3],
            ecn: 0,
        };
        assert_eq!(through_the_wire(&s), (20 + 4 + 12 + 4 + 3, Some(s.clone())));
        assert_eq!(s.seq_len(), 3 + 1);
        // A data segment with timestamps and three SACK blocks fills the 40 option bytes.
        let d = Segment {
            header: TcpRepr {
                flags: flags::ACK,
                mss: None,
                window_scale: None,
                sack_permitted: false,
                sack: SackBlocks::new(&[(10, 20), (30, 40), (50, 60)]).unwrap(),
                ..s.header
            },
            ecn: 2,
            ..s
        };
        assert_eq!(through_the_wire(&d), (60 + 3, Some(d.clone())));
    }

    #[test]
    fn a_truncated_header_does_not_parse() {
        assert_eq!(Segment::parse(&[0; 19], 0), None);
    }
}
