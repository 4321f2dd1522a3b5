//! Framing: `0x00 ‖ COBS(record) ‖ 0x00`. The delimiter on each side makes every record
//! findable from either neighbour's bytes alone, so a receiver with holes in the stream
//! still finds every record whose own bytes all arrived. Two records back to back give
//! `… 0x00 0x00 …`: the empty run between them is no record.

use crate::cobs;

/// The byte between records.
pub const DELIMITER: u8 = 0x00;

/// Bytes added around a record's encoding.
pub const FRAMING: usize = 2;

/// `0x00 ‖ COBS(record) ‖ 0x00`.
pub fn frame(record: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(max_framed_len(record.len()));
    out.push(DELIMITER);
    out.extend_from_slice(&cobs::encode(record));
    out.push(DELIMITER);
    out
}

/// Largest framed size of a record of `len` bytes.
pub const fn max_framed_len(len: usize) -> usize {
    cobs::max_encoded_len(len) + FRAMING
}

/// The record inside one frame's bytes between its delimiters.
pub fn unframe(inner: &[u8]) -> Result<Vec<u8>, cobs::DecodeError> {
    cobs::decode(inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_is_cobs_between_delimiters() {
        assert_eq!(
            frame(&[0x11, 0x22, 0x00, 0x33]),
            [0x00, 0x03, 0x11, 0x22, 0x02, 0x33, 0x00]
        );
        assert_eq!(frame(&[]), [0x00, 0x01, 0x00]);
        let f = frame(&[0u8; 10]);
        assert_eq!(unframe(&f[1..f.len() - 1]), Ok(vec![0u8; 10]));
        assert_eq!(max_framed_len(254), 257);
    }
}
