//! What every record starts with (big-endian), so a receiver can tell records apart and
//! measure each one's latency:
//!
//! | bytes | field |
//! |-------|-------|
//! | 0..8  | `id`: the record's number, from 0 |
//! | 8..16 | `send_ns`: the sender's CLOCK_MONOTONIC just before the write |
//!
//! The rest of a record is zero padding. Zero padding makes the framed size exact: the
//! header's runs of non-zero bytes are shorter than 254, so COBS adds exactly one byte and
//! a record of `n` bytes occupies `n + 3` bytes of the stream ([`record_len_for_wire`]).

use std::fmt;

/// Header length in bytes.
pub const LEN: usize = 16;

/// Bytes the stream carries beyond the record: one COBS code byte (exact for a header
/// followed by zero padding) and the two delimiters.
pub const WIRE_OVERHEAD: usize = 1 + crate::frame::FRAMING;

/// Smallest record size on the wire: a header alone, framed.
pub const MIN_WIRE_LEN: usize = LEN + WIRE_OVERHEAD;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    pub id: u64,
    pub send_ns: u64,
}

/// A record body too short to hold the header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooShort {
    pub len: usize,
}

impl fmt::Display for TooShort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "record of {} bytes is shorter than its {LEN}-byte header", self.len)
    }
}

impl std::error::Error for TooShort {}

/// The record size whose frame is exactly `wire_len` bytes; None below [`MIN_WIRE_LEN`].
pub const fn record_len_for_wire(wire_len: usize) -> Option<usize> {
    if wire_len < MIN_WIRE_LEN {
        None
    } else {
        Some(wire_len - WIRE_OVERHEAD)
    }
}

impl RecordHeader {
    /// A record of `len` bytes (at least [`LEN`]): this header, then zeros.
    pub fn record(&self, len: usize) -> Result<Vec<u8>, TooShort> {
        if len < LEN {
            return Err(TooShort { len });
        }
        let mut r = vec![0u8; len];
        r[0..8].copy_from_slice(&self.id.to_be_bytes());
        r[8..16].copy_from_slice(&self.send_ns.to_be_bytes());
        Ok(r)
    }

    /// The framed record that occupies exactly `wire_len` bytes of the stream.
    pub fn framed(&self, wire_len: usize) -> Result<Vec<u8>, TooShort> {
        let len = record_len_for_wire(wire_len).ok_or(TooShort {
            len: wire_len.saturating_sub(WIRE_OVERHEAD),
        })?;
        let f = crate::frame::frame(&self.record(len)?);
        debug_assert_eq!(f.len(), wire_len);
        Ok(f)
    }

    /// The header at the start of a record.
    pub fn parse(record: &[u8]) -> Result<RecordHeader, TooShort> {
        match (record.get(0..8), record.get(8..16)) {
            (Some(id), Some(ns)) => Ok(RecordHeader {
                id: u64::from_be_bytes(id.try_into().map_err(|_| TooShort { len: record.len() })?),
                send_ns: u64::from_be_bytes(ns.try_into().map_err(|_| TooShort { len: record.len() })?),
            }),
            _ => Err(TooShort { len: record.len() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framed_size_is_exact() {
        for h in [
            RecordHeader { id: 0, send_ns: 0 },
            RecordHeader {
                id: u64::MAX,
                send_ns: u64::MAX,
            },
            RecordHeader {
                id: 0x0102_0304_0506_0708,
                send_ns: 123_456_789_012,
            },
        ] {
            for wire in [MIN_WIRE_LEN, 100, 257, 258, 1448, 9000] {
                let f = h.framed(wire).unwrap();
                assert_eq!(f.len(), wire, "{h:?}");
                let rec = crate::frame::unframe(&f[1..f.len() - 1]).unwrap();
                assert_eq!(RecordHeader::parse(&rec), Ok(h));
                assert_eq!(rec.len(), wire - WIRE_OVERHEAD);
            }
        }
    }

    #[test]
    fn header_is_big_endian_and_short_records_are_refused() {
        let r = RecordHeader { id: 1, send_ns: 2 }.record(LEN).unwrap();
        assert_eq!(r, [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2]);
        assert_eq!(RecordHeader::parse(&r[..15]), Err(TooShort { len: 15 }));
        assert_eq!(RecordHeader { id: 1, send_ns: 2 }.framed(18), Err(TooShort { len: 15 }));
        assert_eq!(record_len_for_wire(1448), Some(1445));
    }
}
