//! What follows a TCP records request (mode 5): 16 bytes, big-endian.
//!
//! | bytes | field |
//! |-------|-------|
//! | 0..8  | `record_size`: bytes each record occupies in the stream, framing included |
//! | 8..16 | `interval_ns`: time between the starts of consecutive records |
//!
//! The records themselves are the `records` crate's: `0x00 ‖ COBS(header ‖ zeros) ‖ 0x00`.

use super::{check_len, get_u64, put_u64, Error};

pub mod field {
    use crate::wire::Field;

    pub const RECORD_SIZE: Field = 0..8;
    pub const INTERVAL_NS: Field = 8..16;
}

/// Length of the message.
pub const LEN: usize = field::INTERVAL_NS.end;

/// Smallest record: its header, framed.
pub const MIN_RECORD_SIZE: u64 = records::header::MIN_WIRE_LEN as u64;
/// Largest record a server sends (16 MiB).
pub const MAX_RECORD_SIZE: u64 = 16 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordsRequest {
    pub record_size: u64,
    pub interval_ns: u64,
}

impl RecordsRequest {
    pub fn decode(buf: &[u8]) -> Result<RecordsRequest, Error> {
        check_len(buf, LEN)?;
        Ok(RecordsRequest {
            record_size: get_u64(buf, field::RECORD_SIZE)?,
            interval_ns: get_u64(buf, field::INTERVAL_NS)?,
        })
    }

    pub fn encode(&self) -> [u8; LEN] {
        let mut b = [0u8; LEN];
        // The array has LEN bytes: neither put can fail.
        let _ = put_u64(&mut b, field::RECORD_SIZE, self.record_size);
        let _ = put_u64(&mut b, field::INTERVAL_NS, self.interval_ns);
        b
    }

    /// Whether a server can send such records.
    pub fn validate(&self) -> Result<(), Error> {
        if !(MIN_RECORD_SIZE..=MAX_RECORD_SIZE).contains(&self.record_size) {
            return Err(Error::Invalid("record size must be 19 bytes to 16 MiB"));
        }
        if self.interval_ns == 0 {
            return Err(Error::Invalid("record interval must be greater than zero"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_round_trip_and_limits() {
        let r = RecordsRequest {
            record_size: 1448,
            interval_ns: 20_000_000,
        };
        let b = r.encode();
        assert_eq!(b[..8], 1448u64.to_be_bytes());
        assert_eq!(b[8..], 20_000_000u64.to_be_bytes());
        assert_eq!(RecordsRequest::decode(&b), Ok(r));
        assert_eq!(
            RecordsRequest::decode(&b[..15]),
            Err(Error::Truncated { needed: 16, got: 15 })
        );
        assert!(r.validate().is_ok());
        assert!(RecordsRequest { record_size: 18, ..r }.validate().is_err());
        assert!(RecordsRequest {
            record_size: MAX_RECORD_SIZE + 1,
            ..r
        }
        .validate()
        .is_err());
        assert!(RecordsRequest { interval_ns: 0, ..r }.validate().is_err());
        assert_eq!(MIN_RECORD_SIZE, 19);
    }
}
