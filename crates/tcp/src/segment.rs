//! One TCP segment as the stack takes and gives it: header fields and options typed,
//! sequence numbers as on the wire (32-bit), and the ECN codepoint of the IP header that
//! carries it. `parse`/`emit` convert to and from the TCP header's bytes through the
//! `wire` crate's `TcpRepr` (the IP header is the driver's).

use wire::tcp::{SackBlocks, TcpPacket, TcpRepr};

/// Header flags (the low byte of the flags field).
pub use wire::tcp::flags;

/// Most SACK blocks one segment carries: 40 option bytes, 12 for timestamps (with
/// padding), 8 per block + 2 → 3 (Linux sends 4 without timestamps).
pub const MAX_SACK_BLOCKS_WITH_TIMESTAMPS: usize = 3;
pub const MAX_SACK_BLOCKS: usize = 4;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Segment {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    /// The window field as sent (unscaled).
    pub window: u16,
    pub mss: Option<u16>,
    pub window_scale: Option<u8>,
    pub sack_permitted: bool,
    /// (TSval, TSecr).
    pub timestamps: Option<(u32, u32)>,
    /// SACK blocks (left edge, right edge), most recent first.
    pub sack: Vec<(u32, u32)>,
    pub payload: Vec<u8>,
    /// ECN codepoint of the carrying IP header (0 not-ECT, 1 ECT(1), 2 ECT(0), 3 CE).
    pub ecn: u8,
}

impl Segment {
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }

    /// Sequence space it occupies: payload plus one for SYN and one for FIN.
    pub fn seq_len(&self) -> u32 {
        self.payload.len() as u32 + u32::from(self.has(flags::SYN)) + u32::from(self.has(flags::FIN))
    }

    /// The header as the wire crate's values.
    fn repr(&self) -> TcpRepr {
        TcpRepr {
            src_port: self.src_port,
            dst_port: self.dst_port,
            seq: self.seq,
            ack: self.ack,
            flags: self.flags,
            window: self.window,
            mss: self.mss,
            window_scale: self.window_scale,
            sack_permitted: self.sack_permitted,
            sack: SackBlocks::new(&self.sack).expect("at most MAX_SACK_BLOCKS SACK blocks"),
            timestamps: self.timestamps,
        }
    }

    /// Length of its TCP header with options (Linux's layouts), padded to 4 bytes.
    pub fn header_len(&self) -> usize {
        self.repr().header_len()
    }

    /// The TCP header and payload (checksum left 0: the driver fills it, it needs the IP
    /// addresses).
    pub fn emit(&self) -> Vec<u8> {
        let r = self.repr();
        let hl = r.header_len();
        let mut b = vec![0u8; hl + self.payload.len()];
        r.emit(&mut b).expect("a segment's options fit the 40 option bytes");
        b[hl..].copy_from_slice(&self.payload);
        b
    }

    /// A TCP header and payload (`ecn` from the IP header); `None` if it is malformed.
    pub fn parse(b: &[u8], ecn: u8) -> Option<Segment> {
        let p = TcpPacket::new_checked(b).ok()?;
        let r = TcpRepr::parse(&p).ok()?;
        Some(Segment {
            src_port: r.src_port,
            dst_port: r.dst_port,
            seq: r.seq,
            ack: r.ack,
            flags: r.flags,
            window: r.window,
            mss: r.mss,
            window_scale: r.window_scale,
            sack_permitted: r.sack_permitted,
            timestamps: r.timestamps,
            sack: r.sack.as_slice().to_vec(),
            payload: p.payload().to_vec(),
            ecn,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emit_parse_round_trip_with_every_option() {
        let s = Segment {
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
            sack: vec![],
            payload: vec![1, 2, 3],
            ecn: 0,
        };
        let b = s.emit();
        assert_eq!(b.len(), s.header_len() + 3);
        assert_eq!(s.header_len(), 20 + 4 + 12 + 4);
        assert_eq!(Segment::parse(&b, 0), Some(s.clone()));
        // A data segment with timestamps and three SACK blocks fills the 40 option bytes.
        let d = Segment {
            flags: flags::ACK,
            mss: None,
            window_scale: None,
            sack_permitted: false,
            sack: vec![(10, 20), (30, 40), (50, 60)],
            ..s
        };
        assert_eq!(d.header_len(), 60);
        assert_eq!(
            Segment::parse(&d.emit(), 2).map(|p| (p.sack, p.ecn)),
            Some((d.sack.clone(), 2))
        );
    }

    #[test]
    fn a_data_segment_with_timestamps_has_a_32_byte_header() {
        let s = Segment {
            timestamps: Some((1, 2)),
            payload: vec![0; 1448],
            ..Segment::default()
        };
        assert_eq!(s.emit().len(), 32 + 1448);
    }
}
