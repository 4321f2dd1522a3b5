//! The TCP header: a view, its options (MSS, window scale, SACK-permitted, SACK,
//! timestamps), and [`TcpRepr`], the header as values, parsed from a view and emitted.

use std::net::Ipv4Addr;

use super::ipv4::protocol;
use super::{be16, be32, check_len, pseudo_checksum, set_be16, Error};

pub mod field {
    use crate::Field;

    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const SEQ_NUM: Field = 4..8;
    pub const ACK_NUM: Field = 8..12;
    /// Data offset in 32-bit words (high nibble), then reserved bits and flags.
    pub const DATA_OFF_FLAGS: Field = 12..14;
    pub const WINDOW: Field = 14..16;
    pub const CHECKSUM: Field = 16..18;
    pub const URGENT: Field = 18..20;
}

/// Length of a header without options.
pub const MIN_HEADER_LEN: usize = field::URGENT.end;
/// Longest header: a data offset of 15 words.
pub const MAX_HEADER_LEN: usize = 60;

/// Bits of the flags byte (the low byte of `DATA_OFF_FLAGS`).
pub mod flags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
    pub const URG: u8 = 0x20;
    pub const ECE: u8 = 0x40;
    pub const CWR: u8 = 0x80;
}

/// Option kinds (RFC 9293, 7323, 2018).
pub mod kind {
    pub const END: u8 = 0;
    pub const NOP: u8 = 1;
    pub const MSS: u8 = 2;
    pub const WINDOW_SCALE: u8 = 3;
    pub const SACK_PERMITTED: u8 = 4;
    pub const SACK: u8 = 5;
    pub const TIMESTAMPS: u8 = 8;
}

/// Most SACK blocks an option can hold (2 + 4 × 8 of the 40 option bytes).
pub const MAX_SACK_BLOCKS: usize = 4;

crate::view!(
    /// A view of a TCP segment in `buffer`.
    TcpPacket, ports
);

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// A whole TCP header (options included) inside the buffer.
    pub fn check(&self) -> Result<(), Error> {
        let buf = self.buffer.as_ref();
        check_len(buf, MIN_HEADER_LEN)?;
        let header_len = self.header_len();
        if header_len < MIN_HEADER_LEN {
            return Err(Error::BadHeaderLen { header_len });
        }
        check_len(buf, header_len)
    }

    pub fn seq_number(&self) -> u32 {
        be32(self.buffer.as_ref(), field::SEQ_NUM)
    }

    pub fn ack_number(&self) -> u32 {
        be32(self.buffer.as_ref(), field::ACK_NUM)
    }

    /// Header length in bytes (options included).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::DATA_OFF_FLAGS.start] >> 4) * 4
    }

    /// The flags byte ([`flags`]).
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::DATA_OFF_FLAGS.start + 1]
    }

    pub fn syn(&self) -> bool {
        self.flags() & flags::SYN != 0
    }

    pub fn fin(&self) -> bool {
        self.flags() & flags::FIN != 0
    }

    pub fn ack(&self) -> bool {
        self.flags() & flags::ACK != 0
    }

    pub fn window(&self) -> u16 {
        be16(self.buffer.as_ref(), field::WINDOW)
    }

    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// The options (of a checked view), one at a time.
    pub fn options(&self) -> TcpOptions<'_> {
        TcpOptions(&self.buffer.as_ref()[MIN_HEADER_LEN..self.header_len()])
    }

    /// Everything after the header, to the end of the buffer (cut the buffer at the IP
    /// total length first: [`crate::ipv4::Ipv4Packet::transport`]).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }

    /// Sequence space the segment uses: its payload, and one each for SYN and FIN.
    pub fn segment_len(&self) -> u32 {
        self.payload().len() as u32 + u32::from(self.syn()) + u32::from(self.fin())
    }

    /// Whether the checksum over the pseudo-header of `src` → `dst` and the buffer is right.
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        pseudo_checksum(src, dst, protocol::TCP, self.buffer.as_ref()) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
    pub fn set_checksum(&mut self, v: u16) {
        set_be16(self.buffer.as_mut(), field::CHECKSUM, v);
    }

    /// Fills in the checksum over the pseudo-header of `src` → `dst` and the whole buffer
    /// (header and payload).
    pub fn fill_checksum(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        self.set_checksum(0);
        let sum = pseudo_checksum(src, dst, protocol::TCP, self.buffer.as_ref());
        self.set_checksum(sum);
    }
}

/// The SACK blocks one option carries: (left edge, right edge) pairs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlocks {
    blocks: [(u32, u32); MAX_SACK_BLOCKS],
    len: u8,
}

impl SackBlocks {
    /// At most [`MAX_SACK_BLOCKS`] blocks; None for more.
    pub fn new(blocks: &[(u32, u32)]) -> Option<SackBlocks> {
        if blocks.len() > MAX_SACK_BLOCKS {
            return None;
        }
        let mut s = SackBlocks {
            len: blocks.len() as u8,
            ..SackBlocks::default()
        };
        s.blocks[..blocks.len()].copy_from_slice(blocks);
        Some(s)
    }

    pub fn as_slice(&self) -> &[(u32, u32)] {
        &self.blocks[..usize::from(self.len)]
    }
}

/// One TCP option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpOption {
    End,
    Nop,
    Mss(u16),
    WindowScale(u8),
    SackPermitted,
    Sack(SackBlocks),
    Timestamps {
        value: u32,
        echo: u32,
    },
    /// A well-formed option of another kind, `len` bytes with its kind and length.
    Other {
        kind: u8,
        len: u8,
    },
}

impl TcpOption {
    /// Bytes the option takes.
    pub fn wire_len(&self) -> usize {
        match self {
            TcpOption::End | TcpOption::Nop => 1,
            TcpOption::Mss(_) => 4,
            TcpOption::WindowScale(_) => 3,
            TcpOption::SackPermitted => 2,
            TcpOption::Sack(b) => 2 + 8 * b.as_slice().len(),
            TcpOption::Timestamps { .. } => 10,
            TcpOption::Other { len, .. } => usize::from(*len),
        }
    }

    /// Writes the option at the start of `buf` (at least [`TcpOption::wire_len`] bytes);
    /// `Other` writes its kind and length, then zeros.
    pub fn emit(&self, buf: &mut [u8]) {
        let n = self.wire_len();
        let b = &mut buf[..n];
        match *self {
            TcpOption::End => b[0] = kind::END,
            TcpOption::Nop => b[0] = kind::NOP,
            TcpOption::Mss(v) => {
                b[..2].copy_from_slice(&[kind::MSS, 4]);
                b[2..].copy_from_slice(&v.to_be_bytes());
            }
            TcpOption::WindowScale(v) => b.copy_from_slice(&[kind::WINDOW_SCALE, 3, v]),
            TcpOption::SackPermitted => b.copy_from_slice(&[kind::SACK_PERMITTED, 2]),
            TcpOption::Sack(blocks) => {
                b[..2].copy_from_slice(&[kind::SACK, n as u8]);
                for (c, (l, r)) in b[2..].chunks_exact_mut(8).zip(blocks.as_slice()) {
                    c[..4].copy_from_slice(&l.to_be_bytes());
                    c[4..].copy_from_slice(&r.to_be_bytes());
                }
            }
            TcpOption::Timestamps { value, echo } => {
                b[..2].copy_from_slice(&[kind::TIMESTAMPS, 10]);
                b[2..6].copy_from_slice(&value.to_be_bytes());
                b[6..].copy_from_slice(&echo.to_be_bytes());
            }
            TcpOption::Other { kind, len } => {
                b.fill(0);
                b[..2].copy_from_slice(&[kind, len]);
            }
        }
    }

    /// The option at the start of `b` (not empty) and its length.
    fn parse(b: &[u8]) -> Result<(TcpOption, usize), Error> {
        let k = b[0];
        match k {
            kind::END => return Ok((TcpOption::End, 1)),
            kind::NOP => return Ok((TcpOption::Nop, 1)),
            _ => {}
        }
        let bad = Error::BadOption { kind: k };
        let n = usize::from(*b.get(1).ok_or(bad)?);
        if n < 2 || n > b.len() {
            return Err(bad);
        }
        let d = &b[2..n];
        let be32_at = |i: usize| u32::from_be_bytes([d[i], d[i + 1], d[i + 2], d[i + 3]]);
        let opt = match (k, n) {
            (kind::MSS, 4) => TcpOption::Mss(u16::from_be_bytes([d[0], d[1]])),
            (kind::WINDOW_SCALE, 3) => TcpOption::WindowScale(d[0]),
            (kind::SACK_PERMITTED, 2) => TcpOption::SackPermitted,
            (kind::SACK, _) if n > 2 && (n - 2) % 8 == 0 && (n - 2) / 8 <= MAX_SACK_BLOCKS => {
                let pairs: Vec<(u32, u32)> = (0..(n - 2) / 8).map(|i| (be32_at(8 * i), be32_at(8 * i + 4))).collect();
                TcpOption::Sack(SackBlocks::new(&pairs).ok_or(bad)?)
            }
            (kind::TIMESTAMPS, 10) => TcpOption::Timestamps {
                value: be32_at(0),
                echo: be32_at(4),
            },
            (kind::MSS | kind::WINDOW_SCALE | kind::SACK_PERMITTED | kind::SACK | kind::TIMESTAMPS, _) => {
                return Err(bad)
            }
            _ => TcpOption::Other { kind: k, len: n as u8 },
        };
        Ok((opt, n))
    }
}

/// The options of a header, one [`TcpOption`] at a time; nothing after an End option or
/// the first malformed one (its error).
#[derive(Clone, Debug)]
pub struct TcpOptions<'a>(&'a [u8]);

impl Iterator for TcpOptions<'_> {
    type Item = Result<TcpOption, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        let r = TcpOption::parse(self.0);
        self.0 = match r {
            Ok((TcpOption::End, _)) | Err(_) => &[],
            Ok((_, n)) => &self.0[n..],
        };
        Some(r.map(|(o, _)| o))
    }
}

/// A TCP header as values: what [`TcpRepr::parse`] reads from a view and
/// [`TcpRepr::emit`] writes (options in Linux's order and padding; any order parses).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpRepr {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    pub ack: u32,
    /// The flags byte ([`flags`]).
    pub flags: u8,
    pub window: u16,
    pub mss: Option<u16>,
    pub window_scale: Option<u8>,
    pub sack_permitted: bool,
    pub sack: SackBlocks,
    /// (TSval, TSecr).
    pub timestamps: Option<(u32, u32)>,
}

impl TcpRepr {
    /// The header of a checked view; an error for a malformed option (options of other
    /// kinds are skipped).
    pub fn parse<T: AsRef<[u8]>>(p: &TcpPacket<T>) -> Result<TcpRepr, Error> {
        let mut r = TcpRepr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            seq: p.seq_number(),
            ack: p.ack_number(),
            flags: p.flags(),
            window: p.window(),
            ..TcpRepr::default()
        };
        for o in p.options() {
            match o? {
                TcpOption::Mss(v) => r.mss = Some(v),
                TcpOption::WindowScale(v) => r.window_scale = Some(v),
                TcpOption::SackPermitted => r.sack_permitted = true,
                TcpOption::Sack(b) => r.sack = b,
                TcpOption::Timestamps { value, echo } => r.timestamps = Some((value, echo)),
                TcpOption::End | TcpOption::Nop | TcpOption::Other { .. } => {}
            }
        }
        Ok(r)
    }

    /// The options as Linux lays them out: MSS; SACK-permitted and timestamps together
    /// (or each after two NOPs); a NOP and the window scale; two NOPs and the SACK blocks.
    fn options(&self) -> Vec<TcpOption> {
        use TcpOption::Nop;
        let mut v = Vec::new();
        if let Some(mss) = self.mss {
            v.push(TcpOption::Mss(mss));
        }
        let ts = self
            .timestamps
            .map(|(value, echo)| TcpOption::Timestamps { value, echo });
        match (self.sack_permitted, ts) {
            (true, Some(ts)) => v.extend([TcpOption::SackPermitted, ts]),
            (true, None) => v.extend([Nop, Nop, TcpOption::SackPermitted]),
            (false, Some(ts)) => v.extend([Nop, Nop, ts]),
            (false, None) => {}
        }
        if let Some(ws) = self.window_scale {
            v.extend([Nop, TcpOption::WindowScale(ws)]);
        }
        if !self.sack.as_slice().is_empty() {
            v.extend([Nop, Nop, TcpOption::Sack(self.sack)]);
        }
        v
    }

    /// Header length with its options, padded to 32-bit words.
    pub fn header_len(&self) -> usize {
        let opts: usize = self.options().iter().map(TcpOption::wire_len).sum();
        MIN_HEADER_LEN + opts.div_ceil(4) * 4
    }

    /// Writes the header over the first [`TcpRepr::header_len`] bytes of `buf`, checksum
    /// 0 ([`TcpPacket::fill_checksum`] fills it once the payload is in place). An error if
    /// the options do not fit a header or `buf` is shorter.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), Error> {
        let len = self.header_len();
        if len > MAX_HEADER_LEN {
            return Err(Error::BadHeaderLen { header_len: len });
        }
        check_len(buf, len)?;
        let b = &mut buf[..len];
        // Zeros: the checksum, the urgent pointer and the padding (End options).
        b.fill(0);
        set_be16(b, field::SRC_PORT, self.src_port);
        set_be16(b, field::DST_PORT, self.dst_port);
        b[field::SEQ_NUM].copy_from_slice(&self.seq.to_be_bytes());
        b[field::ACK_NUM].copy_from_slice(&self.ack.to_be_bytes());
        b[field::DATA_OFF_FLAGS.start] = ((len / 4) as u8) << 4;
        b[field::DATA_OFF_FLAGS.start + 1] = self.flags;
        set_be16(b, field::WINDOW, self.window);
        let mut at = MIN_HEADER_LEN;
        for o in self.options() {
            o.emit(&mut b[at..]);
            at += o.wire_len();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_checks() {
        let mut b = [0u8; 24];
        b[field::SRC_PORT].copy_from_slice(&443u16.to_be_bytes());
        b[field::DST_PORT].copy_from_slice(&50000u16.to_be_bytes());
        b[field::SEQ_NUM].copy_from_slice(&0xdead_beefu32.to_be_bytes());
        b[field::ACK_NUM].copy_from_slice(&7u32.to_be_bytes());
        b[field::DATA_OFF_FLAGS.start] = 6 << 4;
        b[field::WINDOW].copy_from_slice(&1024u16.to_be_bytes());
        let t = TcpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(
            (t.src_port(), t.dst_port(), t.seq_number(), t.ack_number()),
            (443, 50000, 0xdead_beef, 7)
        );
        assert_eq!((t.header_len(), t.window()), (24, 1024));
        assert_eq!(
            TcpPacket::new_checked(&b[..23]).unwrap_err(),
            Error::Truncated { needed: 24, got: 23 }
        );
        b[field::DATA_OFF_FLAGS.start] = 4 << 4;
        assert_eq!(
            TcpPacket::new_checked(&b[..]).unwrap_err(),
            Error::BadHeaderLen { header_len: 16 }
        );
        assert_eq!(
            TcpPacket::new_checked(&b[..19]).unwrap_err(),
            Error::Truncated { needed: 20, got: 19 }
        );
    }

    /// A SYN header laid out as Linux writes one (tcp_options_write: MSS 1460,
    /// SACK-permitted and timestamps together, NOP, window scale 7): the options parse to
    /// their values and emit back to the same bytes.
    #[test]
    fn linux_syn_options_round_trip() {
        let hex = "a4a01451a3c0c9d400000000a002faf0fe300000020405b40402080a9d5b8d6e0000000001030307";
        let b: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        let p = TcpPacket::new_checked(&b[..]).unwrap();
        let r = TcpRepr::parse(&p).unwrap();
        assert_eq!(r.flags, flags::SYN);
        assert_eq!((r.mss, r.window_scale, r.sack_permitted), (Some(1460), Some(7), true));
        assert_eq!(r.timestamps, Some((0x9d5b_8d6e, 0)));
        assert_eq!(r.header_len(), 40);
        let mut out = vec![0u8; 40];
        r.emit(&mut out).unwrap();
        out[field::CHECKSUM].copy_from_slice(&b[field::CHECKSUM]);
        assert_eq!(out, b);
    }

    #[test]
    fn sack_blocks_and_bad_options() {
        let r = TcpRepr {
            flags: flags::ACK,
            timestamps: Some((1, 2)),
            sack: SackBlocks::new(&[(100, 200), (300, 400), (500, 600)]).unwrap(),
            ..TcpRepr::default()
        };
        // 12 (NOP NOP TS) + 28 (NOP NOP SACK×3): the 40 option bytes.
        assert_eq!(r.header_len(), 60);
        let mut b = vec![0u8; 60];
        r.emit(&mut b).unwrap();
        assert_eq!(TcpRepr::parse(&TcpPacket::new_checked(&b[..]).unwrap()), Ok(r));
        let four = TcpRepr {
            sack: SackBlocks::new(&[(1, 2); 4]).unwrap(),
            ..r
        };
        assert!(four.emit(&mut [0u8; 80]).is_err(), "44 option bytes do not fit");
        assert!(SackBlocks::new(&[(1, 2); 5]).is_none());
        // An MSS option of length 3, a length past the header, a missing length.
        for opts in [&[2u8, 3, 0, 1][..], &[8, 12, 0, 0], &[1, 1, 1, 5]] {
            let mut h = [0u8; 24];
            h[field::DATA_OFF_FLAGS.start] = 6 << 4;
            h[20..24].copy_from_slice(opts);
            let p = TcpPacket::new_checked(&h[..]).unwrap();
            assert!(matches!(TcpRepr::parse(&p), Err(Error::BadOption { .. })), "{opts:?}");
        }
        // Unknown kinds are skipped; End ends the options.
        let mut h = [0u8; 28];
        h[field::DATA_OFF_FLAGS.start] = 7 << 4;
        h[20..28].copy_from_slice(&[30, 4, 9, 9, 0, 2, 1, 0]);
        let p = TcpPacket::new_checked(&h[..]).unwrap();
        let opts: Vec<_> = p.options().collect();
        assert_eq!(
            opts,
            vec![Ok(TcpOption::Other { kind: 30, len: 4 }), Ok(TcpOption::End)]
        );
    }
}
