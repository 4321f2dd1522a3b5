//! The TCP segments of one connection as a packet tap sees them: IPv4 header, TCP header,
//! payload, and the mapping of sequence numbers to stream offsets. No I/O, so every case
//! is a unit test.

use std::net::SocketAddrV4;

use wire::ipv4::{protocol, Ipv4Packet};
use wire::tcp::{flags, TcpPacket};

/// One direction of a connection: segments from `from` to `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Direction {
    pub from: SocketAddrV4,
    pub to: SocketAddrV4,
}

/// A segment of the watched direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment<'a> {
    pub seq: u32,
    pub syn_ack: bool,
    pub payload: &'a [u8],
}

/// Why a captured packet is not a segment of the watched direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip {
    /// Not IPv4, not TCP, a fragment, or headers that do not fit the packet.
    NotTcp,
    /// Another connection or the other direction.
    OtherFlow,
}

/// Parses an IPv4 packet (from its IP header on) and returns the TCP segment if it belongs
/// to `dir`. A `to` address of 0.0.0.0 matches any destination address (the local address
/// is not known until connect() chose it). The payload ends at the IP total length (0 is
/// how a GRO packet over 64 KiB says "the whole buffer": `Ipv4Packet::transport`).
pub fn parse<'a>(packet: &'a [u8], dir: &Direction) -> Result<Segment<'a>, Skip> {
    let ip = Ipv4Packet::new_checked(packet).map_err(|_| Skip::NotTcp)?;
    // More fragments, or a fragment offset: not a whole segment.
    if ip.protocol() != protocol::TCP || ip.more_frags() || !ip.is_first_fragment() {
        return Err(Skip::NotTcp);
    }
    let t = TcpPacket::new_checked(ip.transport()).map_err(|_| Skip::NotTcp)?;
    if ip.src_addr() != *dir.from.ip()
        || t.src_port() != dir.from.port()
        || t.dst_port() != dir.to.port()
        || (!dir.to.ip().is_unspecified() && ip.dst_addr() != *dir.to.ip())
    {
        return Err(Skip::OtherFlow);
    }
    let syn_ack = flags::SYN | flags::ACK;
    // The segment borrows from `packet`, not from the views.
    let (start, len) = (ip.header_len() + t.header_len(), t.payload().len());
    Ok(Segment {
        seq: t.seq_number(),
        syn_ack: t.flags() & syn_ack == syn_ack,
        payload: &packet[start..start + len],
    })
}

/// Maps sequence numbers of one direction to stream offsets (offset 0 = the first payload
/// byte, sequence number ISN + 1), unwrapping the 32-bit space around the highest offset
/// seen so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeqMap {
    isn: u32,
    /// Highest stream offset mapped so far.
    high: u64,
}

impl SeqMap {
    pub fn new(isn: u32) -> SeqMap {
        SeqMap { isn, high: 0 }
    }

    /// The stream offset of sequence number `seq`: the one closest to the highest offset
    /// seen so far among those congruent to `seq − ISN − 1` modulo 2³². None for sequence
    /// numbers before the stream (the SYN, or a keep-alive probe at ISN).
    pub fn offset(&mut self, seq: u32) -> Option<u64> {
        let rel = seq.wrapping_sub(self.isn).wrapping_sub(1);
        // The candidate in the same 4 GiB window as `high`, then ±2³² if that is closer.
        let base = self.high & !0xffff_ffff;
        let mut best = base + u64::from(rel);
        let span = 1u64 << 32;
        if best > self.high && best - self.high > span / 2 {
            if best < span {
                // Behind the start of the stream.
                return None;
            }
            best -= span;
        } else if best < self.high && self.high - best > span / 2 {
            best += span;
        }
        self.high = self.high.max(best);
        Some(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::ipv4::Ipv4Repr;
    use wire::tcp::TcpRepr;

    const FLAG_SYN: u8 = flags::SYN;
    const FLAG_ACK: u8 = flags::ACK;

    fn dir() -> Direction {
        Direction {
            from: "10.0.0.2:5201".parse().unwrap(),
            to: "10.0.0.1:40000".parse().unwrap(),
        }
    }

    /// An IPv4/TCP packet with the given addresses, flags, seq and payload (a 32-byte TCP
    /// header: timestamps, as Linux sends).
    fn packet(src: &str, dst: &str, sport: u16, dport: u16, flags: u8, seq: u32, payload: &[u8]) -> Vec<u8> {
        let t = TcpRepr {
            src_port: sport,
            dst_port: dport,
            seq,
            flags,
            timestamps: Some((1, 2)),
            ..TcpRepr::default()
        };
        let ip = Ipv4Repr::new(src.parse().unwrap(), dst.parse().unwrap(), protocol::TCP);
        wire::build::tcp(&ip, &t, payload).unwrap()
    }

    #[test]
    fn parses_the_watched_direction_only() {
        let p = packet("10.0.0.2", "10.0.0.1", 5201, 40000, FLAG_ACK, 77, b"abc");
        assert_eq!(
            parse(&p, &dir()),
            Ok(Segment {
                seq: 77,
                syn_ack: false,
                payload: b"abc"
            })
        );
        let syn_ack = packet("10.0.0.2", "10.0.0.1", 5201, 40000, FLAG_SYN | FLAG_ACK, 9, b"");
        assert!(parse(&syn_ack, &dir()).unwrap().syn_ack);
        let reverse = packet("10.0.0.1", "10.0.0.2", 40000, 5201, FLAG_ACK, 1, b"x");
        assert_eq!(parse(&reverse, &dir()), Err(Skip::OtherFlow));
        let other_port = packet("10.0.0.2", "10.0.0.1", 5201, 40001, FLAG_ACK, 1, b"x");
        assert_eq!(parse(&other_port, &dir()), Err(Skip::OtherFlow));
        let any_local = Direction {
            to: "0.0.0.0:40000".parse().unwrap(),
            ..dir()
        };
        assert!(parse(&p, &any_local).is_ok());
    }

    #[test]
    fn refuses_what_is_not_a_whole_tcp_segment() {
        let p = packet("10.0.0.2", "10.0.0.1", 5201, 40000, FLAG_ACK, 77, b"abc");
        for n in 0..52 {
            assert_eq!(parse(&p[..n], &dir()), Err(Skip::NotTcp), "{n} bytes");
        }
        let mut udp = p.clone();
        udp[9] = 17;
        assert_eq!(parse(&udp, &dir()), Err(Skip::NotTcp));
        let mut frag = p.clone();
        frag[6] = 0x20; // more fragments
        assert_eq!(parse(&frag, &dir()), Err(Skip::NotTcp));
        let mut bad_offset = p.clone();
        bad_offset[32] = 4 << 4;
        assert_eq!(parse(&bad_offset, &dir()), Err(Skip::NotTcp));
        // Trailing bytes past the IP total length (Ethernet padding) are not payload.
        let mut padded = p.clone();
        padded.extend_from_slice(&[0xee; 6]);
        assert_eq!(parse(&padded, &dir()).unwrap().payload, b"abc");
    }

    #[test]
    fn sequence_numbers_map_to_offsets_across_the_wrap() {
        let mut m = SeqMap::new(u32::MAX - 10);
        assert_eq!(m.offset(u32::MAX - 10), None, "the SYN's own number");
        assert_eq!(m.offset(u32::MAX - 9), Some(0));
        assert_eq!(m.offset(5), Some(15));
        // A retransmission from before the wrap, after it.
        assert_eq!(m.offset(u32::MAX - 5), Some(4));
        // Steps under 2³¹ (a TCP window is at most 2³⁰) through two wraps, then back.
        let mut m = SeqMap::new(1000);
        let seq = |off: u64| 1001u32.wrapping_add(off as u32);
        for off in [
            2_000_000_000u64,
            4_000_000_000,
            5_000_000_000,
            7_000_000_000,
            9_000_000_000,
            8_000_000_000,
        ] {
            assert_eq!(m.offset(seq(off)), Some(off));
        }
        // More than 2³¹ ahead of everything seen reads as behind the start.
        let mut m = SeqMap::new(1000);
        assert_eq!(m.offset(seq(3_000_000_000)), None);
    }
}
