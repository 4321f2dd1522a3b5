//! The UDP header.

use std::net::Ipv4Addr;

use super::ipv4::protocol;
use super::{be16, check_len, pseudo_checksum, set_be16, Error};

pub mod field {
    use crate::Field;

    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const LENGTH: Field = 4..6;
    pub const CHECKSUM: Field = 6..8;
}

pub const HEADER_LEN: usize = field::CHECKSUM.end;

crate::view!(
    /// A view of a UDP datagram in `buffer`.
    UdpPacket, ports
);

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// A whole UDP header inside the buffer.
    pub fn check(&self) -> Result<(), Error> {
        check_len(self.buffer.as_ref(), HEADER_LEN)
    }

    /// Header plus payload, in bytes, as the sender stated it.
    pub fn length(&self) -> u16 {
        be16(self.buffer.as_ref(), field::LENGTH)
    }

    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM)
    }

    /// The payload as the length field states it, within the buffer (a length below the
    /// header's gives none).
    pub fn payload(&self) -> &[u8] {
        let buf = self.buffer.as_ref();
        let end = usize::from(self.length()).clamp(HEADER_LEN, buf.len());
        &buf[HEADER_LEN..end]
    }

    /// Whether the checksum is right over the pseudo-header of `src` → `dst` and the
    /// datagram (a checksum of 0 means none was sent, and verifies).
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        let d = &self.buffer.as_ref()[..usize::from(self.length()).clamp(HEADER_LEN, self.buffer.as_ref().len())];
        self.checksum() == 0 || pseudo_checksum(src, dst, protocol::UDP, d) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    pub fn set_src_port(&mut self, v: u16) {
        set_be16(self.buffer.as_mut(), field::SRC_PORT, v);
    }

    pub fn set_dst_port(&mut self, v: u16) {
        set_be16(self.buffer.as_mut(), field::DST_PORT, v);
    }

    pub fn set_length(&mut self, v: u16) {
        set_be16(self.buffer.as_mut(), field::LENGTH, v);
    }

    /// Fills in the checksum over the pseudo-header and the datagram (`length` bytes); a
    /// sum of 0 is sent as 0xffff, 0 meaning "no checksum".
    pub fn fill_checksum(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        set_be16(self.buffer.as_mut(), field::CHECKSUM, 0);
        let len = usize::from(self.length()).clamp(HEADER_LEN, self.buffer.as_ref().len());
        let sum = match pseudo_checksum(src, dst, protocol::UDP, &self.buffer.as_ref()[..len]) {
            0 => 0xffff,
            s => s,
        };
        set_be16(self.buffer.as_mut(), field::CHECKSUM, sum);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_checks() {
        let b = [0x13, 0x88, 0x17, 0x70, 0, 12, 0xab, 0xcd, 1, 2, 3, 4];
        let u = UdpPacket::new_checked(&b[..]).unwrap();
        assert_eq!(
            (u.src_port(), u.dst_port(), u.length(), u.checksum()),
            (5000, 6000, 12, 0xabcd)
        );
        assert_eq!(
            UdpPacket::new_checked(&b[..7]).unwrap_err(),
            Error::Truncated { needed: 8, got: 7 }
        );
    }
}
