//! The UDP header.

use super::{be16, check_len, Error};

pub mod field {
    use crate::wire::Field;

    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const LENGTH: Field = 4..6;
    pub const CHECKSUM: Field = 6..8;
}

pub const HEADER_LEN: usize = field::CHECKSUM.end;

/// A view of a UDP datagram in `buffer`.
#[derive(Clone, Debug)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// A view without checks: an accessor panics if its field lies past the buffer.
    pub const fn new_unchecked(buffer: T) -> UdpPacket<T> {
        UdpPacket { buffer }
    }

    /// A view of a whole UDP header inside `buffer`.
    pub fn new_checked(buffer: T) -> Result<UdpPacket<T>, Error> {
        check_len(buffer.as_ref(), HEADER_LEN)?;
        Ok(UdpPacket::new_unchecked(buffer))
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    pub fn src_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::SRC_PORT)
    }

    pub fn dst_port(&self) -> u16 {
        be16(self.buffer.as_ref(), field::DST_PORT)
    }

    /// Header plus payload, in bytes, as the sender stated it.
    pub fn length(&self) -> u16 {
        be16(self.buffer.as_ref(), field::LENGTH)
    }

    pub fn checksum(&self) -> u16 {
        be16(self.buffer.as_ref(), field::CHECKSUM)
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
