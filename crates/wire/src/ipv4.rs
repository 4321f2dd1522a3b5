//! The IPv4 header.

use std::net::Ipv4Addr;

use super::{be16, be32, check_len, checksum, set_be16, Error};

pub mod field {
    use crate::Field;

    /// Version (high nibble) and header length in 32-bit words (low nibble).
    pub const VER_IHL: usize = 0;
    /// DSCP (high six bits) and ECN (low two bits), once the type-of-service byte.
    pub const DSCP_ECN: usize = 1;
    pub const TOTAL_LEN: Field = 2..4;
    pub const IDENT: Field = 4..6;
    /// Flags (high three bits) and fragment offset in 8-byte units (low 13 bits).
    pub const FLG_OFF: Field = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Field = 10..12;
    pub const SRC_ADDR: Field = 12..16;
    pub const DST_ADDR: Field = 16..20;
}

/// Length of a header without options.
pub const MIN_HEADER_LEN: usize = field::DST_ADDR.end;

/// Protocol numbers the engine looks into.
pub mod protocol {
    pub const TCP: u8 = 6;
    pub const UDP: u8 = 17;
}

/// The two ECN bits: the link model's codepoint type, so the engine reads and writes the
/// same values its queue disciplines decide on.
pub use linkem::Ecn;

crate::view!(
    /// A view of an IPv4 packet in `buffer`.
    Ipv4Packet
);

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Version 4, a header length of at least 20 bytes, and that many bytes present.
    /// The total length field is not checked: the engine forwards the bytes the TUN
    /// device handed over, and keys the packet the same whatever that field says.
    pub fn check(&self) -> Result<(), Error> {
        let buf = self.buffer.as_ref();
        check_len(buf, MIN_HEADER_LEN)?;
        if self.version() != 4 {
            return Err(Error::NotIpv4 {
                version: self.version(),
            });
        }
        let header_len = self.header_len();
        if header_len < MIN_HEADER_LEN {
            return Err(Error::BadHeaderLen { header_len });
        }
        check_len(buf, header_len)
    }

    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header length in bytes (options included).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    pub fn dscp(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] >> 2
    }

    pub fn ecn(&self) -> Ecn {
        Ecn::from_bits(self.buffer.as_ref()[field::DSCP_ECN])
    }

    pub fn total_len(&self) -> u16 {
        be16(self.buffer.as_ref(), field::TOTAL_LEN)
    }

    pub fn ident(&self) -> u16 {
        be16(self.buffer.as_ref(), field::IDENT)
    }

    pub fn dont_frag(&self) -> bool {
        be16(self.buffer.as_ref(), field::FLG_OFF) & 0x4000 != 0
    }

    pub fn more_frags(&self) -> bool {
        be16(self.buffer.as_ref(), field::FLG_OFF) & 0x2000 != 0
    }

    /// Offset of this fragment's data in the original datagram, in bytes.
    pub fn frag_offset(&self) -> u16 {
        (be16(self.buffer.as_ref(), field::FLG_OFF) & 0x1fff) << 3
    }

    /// Only the first fragment (or an unfragmented packet) carries the transport header.
    pub fn is_first_fragment(&self) -> bool {
        self.frag_offset() == 0
    }

    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[field::PROTOCOL]
    }

    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM)
    }

    pub fn src_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(be32(self.buffer.as_ref(), field::SRC_ADDR))
    }

    pub fn dst_addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(be32(self.buffer.as_ref(), field::DST_ADDR))
    }

    /// Whether the header checksum is right (summing a correct header, checksum field
    /// included, gives zero).
    pub fn verify_checksum(&self) -> bool {
        checksum(&self.buffer.as_ref()[..self.header_len()]) == 0
    }

    /// Everything after the header, to the end of the buffer (see [`Ipv4Packet::check`]
    /// on the total length).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..]
    }

    /// The bytes after the header up to the total length (or the end of the buffer if it
    /// is shorter): the transport header and payload. A total length of 0 is how a packet
    /// that generic receive offload merged past 64 KiB says "the whole buffer".
    pub fn transport(&self) -> &[u8] {
        let buf = self.buffer.as_ref();
        let end = match usize::from(self.total_len()) {
            0 => buf.len(),
            n => n.clamp(self.header_len(), buf.len()),
        };
        &buf[self.header_len()..end]
    }
}

/// An IPv4 header without options, as values: what the lab's hosts send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Repr {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub protocol: u8,
    pub ecn: Ecn,
    pub ident: u16,
    pub dont_frag: bool,
    pub ttl: u8,
}

impl Ipv4Repr {
    /// A header as Linux sends one with path MTU discovery on: TTL 64, DF set, not ECN
    /// capable, identification 0.
    pub fn new(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8) -> Ipv4Repr {
        Ipv4Repr {
            src,
            dst,
            protocol,
            ecn: Ecn::NotEct,
            ident: 0,
            dont_frag: true,
            ttl: 64,
        }
    }

    /// The header of a checked view (its options, DSCP and fragment offset left out).
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv4Packet<T>) -> Ipv4Repr {
        Ipv4Repr {
            src: p.src_addr(),
            dst: p.dst_addr(),
            protocol: p.protocol(),
            ecn: p.ecn(),
            ident: p.ident(),
            dont_frag: p.dont_frag(),
            ttl: p.ttl(),
        }
    }

    /// Writes the 20-byte header, total length `MIN_HEADER_LEN + payload_len` and checksum
    /// included, over the start of `buf`.
    pub fn emit(&self, buf: &mut [u8], payload_len: usize) -> Result<(), Error> {
        check_len(buf, MIN_HEADER_LEN)?;
        let total = MIN_HEADER_LEN + payload_len;
        let total = u16::try_from(total).map_err(|_| Error::Truncated {
            needed: total,
            got: usize::from(u16::MAX),
        })?;
        let b = &mut buf[..MIN_HEADER_LEN];
        b.fill(0);
        b[field::VER_IHL] = 0x40 | (MIN_HEADER_LEN / 4) as u8;
        b[field::DSCP_ECN] = self.ecn.bits();
        set_be16(b, field::TOTAL_LEN, total);
        set_be16(b, field::IDENT, self.ident);
        set_be16(b, field::FLG_OFF, if self.dont_frag { 0x4000 } else { 0 });
        b[field::TTL] = self.ttl;
        b[field::PROTOCOL] = self.protocol;
        b[field::SRC_ADDR].copy_from_slice(&self.src.octets());
        b[field::DST_ADDR].copy_from_slice(&self.dst.octets());
        Ipv4Packet::new_unchecked(b).fill_checksum();
        Ok(())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Sets the DSCP bits to the low six bits of `dscp`, leaving ECN alone. The checksum
    /// is not updated ([`Ipv4Packet::fill_checksum`] does that once all fields are set).
    pub fn set_dscp(&mut self, dscp: u8) {
        let b = &mut self.buffer.as_mut()[field::DSCP_ECN];
        *b = (dscp << 2) | (*b & 0b11);
    }

    /// Sets the ECN bits, leaving DSCP alone; a queue marks congestion with `Ecn::Ce`.
    /// The checksum is not updated.
    pub fn set_ecn(&mut self, ecn: Ecn) {
        let b = &mut self.buffer.as_mut()[field::DSCP_ECN];
        *b = (*b & !0b11) | ecn.bits();
    }

    pub fn set_ident(&mut self, ident: u16) {
        set_be16(self.buffer.as_mut(), field::IDENT, ident);
    }

    pub fn set_checksum(&mut self, v: u16) {
        set_be16(self.buffer.as_mut(), field::CHECKSUM, v);
    }

    /// Recomputes the header checksum over the header as it now is.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let sum = checksum(&self.buffer.as_ref()[..self.header_len()]);
        self.set_checksum(sum);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// UDP datagrams Linux sent over loopback with IP_TOS 0x00, 0xbb and 0x02: the
    /// kernel's checksums are the known-good values.
    const KERNEL_TOS_00: &str = "45000028f1a4400040114b1e7f0000017f0000019c40d1050014fe277472616e73706f72746c6162";
    const KERNEL_TOS_BB: &str = "45bb0028f1a5400040114a627f0000017f0000019cfbd1050014fe277472616e73706f72746c6162";
    const KERNEL_TOS_02: &str = "45020028f1a6400040114b1a7f0000017f0000019c42d1050014fe277472616e73706f72746c6162";

    #[test]
    fn reads_every_field() {
        let b = hex(KERNEL_TOS_BB);
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            (p.version(), p.header_len(), p.total_len(), p.ident()),
            (4, 20, 40, 0xf1a5)
        );
        assert_eq!((p.dscp(), p.ecn()), (46, Ecn::Ce));
        assert!(p.dont_frag() && !p.more_frags() && p.is_first_fragment());
        assert_eq!((p.ttl(), p.protocol(), p.checksum()), (64, protocol::UDP, 0x4a62));
        assert_eq!((p.src_addr(), p.dst_addr()), (Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST));
        assert_eq!(p.payload().len(), 20);
        assert!(p.verify_checksum());
    }

    #[test]
    fn fill_checksum_matches_the_kernel() {
        for h in [
            KERNEL_TOS_00,
            KERNEL_TOS_BB,
            KERNEL_TOS_02,
            "45000073000040004011b861c0a80001c0a800c7",
        ] {
            let mut b = hex(h);
            let expected = Ipv4Packet::new_checked(&b[..]).unwrap().checksum();
            let mut p = Ipv4Packet::new_checked(&mut b[..]).unwrap();
            p.set_checksum(0);
            assert!(!p.verify_checksum());
            p.fill_checksum();
            assert_eq!(p.checksum(), expected, "{h}");
            assert!(p.verify_checksum());
        }
    }

    /// Rewriting the first packet's TOS and ident into the second's gives the kernel's
    /// second header byte for byte, checksum included.
    #[test]
    fn setters_then_checksum_reproduce_a_kernel_header() {
        let mut b = hex(KERNEL_TOS_00);
        let mut p = Ipv4Packet::new_checked(&mut b[..]).unwrap();
        p.set_dscp(46);
        p.set_ecn(Ecn::Ce);
        p.set_ident(0xf1a5);
        p.fill_checksum();
        assert_eq!(b[..20], hex(KERNEL_TOS_BB)[..20]);
    }

    #[test]
    fn marking_ce_keeps_dscp_and_a_valid_checksum() {
        let mut b = hex(KERNEL_TOS_02);
        let mut p = Ipv4Packet::new_checked(&mut b[..]).unwrap();
        assert_eq!(p.ecn(), Ecn::Ect0);
        p.set_ecn(Ecn::Ce);
        p.fill_checksum();
        assert_eq!((p.dscp(), p.ecn()), (0, Ecn::Ce));
        // TOS 0x02 → 0x03 adds one to the sum, so the checksum drops by one.
        assert_eq!(p.checksum(), 0x4b1a - 1);
        assert!(p.verify_checksum());
        p.set_ecn(Ecn::NotEct);
        p.set_dscp(0x3f);
        assert_eq!(b[field::DSCP_ECN], 0xfc);
    }

    #[test]
    fn check_refuses_what_is_not_a_whole_ipv4_header() {
        let good = hex(KERNEL_TOS_00);
        assert_eq!(
            Ipv4Packet::new_checked(&good[..19]).unwrap_err(),
            Error::Truncated { needed: 20, got: 19 }
        );
        let mut v6 = good.clone();
        v6[0] = 0x60;
        assert_eq!(
            Ipv4Packet::new_checked(&v6[..]).unwrap_err(),
            Error::NotIpv4 { version: 6 }
        );
        let mut short_ihl = good.clone();
        short_ihl[0] = 0x44;
        assert_eq!(
            Ipv4Packet::new_checked(&short_ihl[..]).unwrap_err(),
            Error::BadHeaderLen { header_len: 16 }
        );
        let mut options = good.clone();
        options[0] = 0x4f;
        assert_eq!(
            Ipv4Packet::new_checked(&options[..]).unwrap_err(),
            Error::Truncated { needed: 60, got: 40 }
        );
        options.resize(60, 0);
        assert_eq!(Ipv4Packet::new_checked(&options[..]).unwrap().payload(), &[] as &[u8]);
    }
}
