//! The TCP header, as far as the engine reads it.

use super::{be16, be32, check_len, Error};

pub mod field {
    use crate::wire::Field;

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

/// A view of a TCP segment in `buffer`.
#[derive(Clone, Debug)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// A view without checks: an accessor panics if its field lies past the buffer.
    pub const fn new_unchecked(buffer: T) -> TcpPacket<T> {
        TcpPacket { buffer }
    }

    /// A view of a whole TCP header (options included) inside `buffer`.
    pub fn new_checked(buffer: T) -> Result<TcpPacket<T>, Error> {
        let p = TcpPacket::new_unchecked(buffer);
        p.check()?;
        Ok(p)
    }

    pub fn check(&self) -> Result<(), Error> {
        let buf = self.buffer.as_ref();
        check_len(buf, MIN_HEADER_LEN)?;
        let header_len = self.header_len();
        if header_len < MIN_HEADER_LEN {
            return Err(Error::BadHeaderLen { header_len });
        }
        check_len(buf, header_len)
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

    pub fn window(&self) -> u16 {
        be16(self.buffer.as_ref(), field::WINDOW)
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
}
