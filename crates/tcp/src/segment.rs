//! One TCP segment as the stack takes and gives it: header fields and options typed,
//! sequence numbers as on the wire (32-bit), and the ECN codepoint of the IP header that
//! carries it. `parse`/`emit` convert to and from the TCP header's bytes (the IP header
//! is the driver's).

/// Header flags (the low byte of the flags field).
pub mod flags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
    pub const ECE: u8 = 0x40;
    pub const CWR: u8 = 0x80;
}

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

    /// Length of its TCP header with options, padded to 4 bytes.
    pub fn header_len(&self) -> usize {
        20 + self.options_len().div_ceil(4) * 4
    }

    fn options_len(&self) -> usize {
        // Linux's layouts: MSS 4; SACK-permitted 2 and timestamps 10 (packed together as
        // NOP NOP or SACK_PERM+TS: 12); window scale 3 (+NOP); SACK 2 + 8n (+2 NOPs).
        let mut n = 0;
        if self.mss.is_some() {
            n += 4;
        }
        n += match (self.sack_permitted, self.timestamps.is_some()) {
            (_, true) => 12,
            (true, false) => 4,
            (false, false) => 0,
        };
        if self.window_scale.is_some() {
            n += 4;
        }
        if !self.sack.is_empty() {
            n += 4 + 8 * self.sack.len();
        }
        n
    }

    /// The TCP header and payload (checksum left 0: the driver fills it, it needs the IP
    /// addresses).
    pub fn emit(&self) -> Vec<u8> {
        let hl = self.header_len();
        let mut b = Vec::with_capacity(hl + self.payload.len());
        b.extend_from_slice(&self.src_port.to_be_bytes());
        b.extend_from_slice(&self.dst_port.to_be_bytes());
        b.extend_from_slice(&self.seq.to_be_bytes());
        b.extend_from_slice(&self.ack.to_be_bytes());
        b.push(((hl / 4) as u8) << 4);
        b.push(self.flags);
        b.extend_from_slice(&self.window.to_be_bytes());
        b.extend_from_slice(&[0, 0, 0, 0]);
        if let Some(mss) = self.mss {
            b.extend_from_slice(&[2, 4]);
            b.extend_from_slice(&mss.to_be_bytes());
        }
        match (self.sack_permitted, self.timestamps) {
            (sp, Some((val, ecr))) => {
                if sp {
                    b.extend_from_slice(&[4, 2, 8, 10]);
                } else {
                    b.extend_from_slice(&[1, 1, 8, 10]);
                }
                b.extend_from_slice(&val.to_be_bytes());
                b.extend_from_slice(&ecr.to_be_bytes());
            }
            (true, None) => b.extend_from_slice(&[1, 1, 4, 2]),
            (false, None) => {}
        }
        if let Some(ws) = self.window_scale {
            b.extend_from_slice(&[1, 3, 3, ws]);
        }
        if !self.sack.is_empty() {
            b.extend_from_slice(&[1, 1, 5, (2 + 8 * self.sack.len()) as u8]);
            for &(l, r) in &self.sack {
                b.extend_from_slice(&l.to_be_bytes());
                b.extend_from_slice(&r.to_be_bytes());
            }
        }
        b.resize(hl, 0);
        b.extend_from_slice(&self.payload);
        b
    }

    /// A TCP header and payload (`ecn` from the IP header); `None` if it is malformed.
    pub fn parse(b: &[u8], ecn: u8) -> Option<Segment> {
        if b.len() < 20 {
            return None;
        }
        let hl = usize::from(b[12] >> 4) * 4;
        if hl < 20 || hl > b.len() {
            return None;
        }
        let u16_at = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
        let u32_at = |o: &[u8], i: usize| u32::from_be_bytes([o[i], o[i + 1], o[i + 2], o[i + 3]]);
        let mut s = Segment {
            src_port: u16_at(0),
            dst_port: u16_at(2),
            seq: u32_at(b, 4),
            ack: u32_at(b, 8),
            flags: b[13],
            window: u16_at(14),
            payload: b[hl..].to_vec(),
            ecn,
            ..Segment::default()
        };
        let mut o = &b[20..hl];
        while let Some(&kind) = o.first() {
            match kind {
                0 => break,
                1 => {
                    o = &o[1..];
                    continue;
                }
                _ => {}
            }
            let len = usize::from(*o.get(1)?);
            if len < 2 || len > o.len() {
                return None;
            }
            let v = &o[2..len];
            match (kind, v.len()) {
                (2, 2) => s.mss = Some(u16::from_be_bytes([v[0], v[1]])),
                (3, 1) => s.window_scale = Some(v[0]),
                (4, 0) => s.sack_permitted = true,
                (5, n) if n % 8 == 0 => {
                    s.sack = v.chunks(8).map(|c| (u32_at(c, 0), u32_at(c, 4))).collect();
                }
                (8, 8) => s.timestamps = Some((u32_at(v, 0), u32_at(v, 4))),
                _ => {}
            }
            o = &o[len..];
        }
        Some(s)
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
