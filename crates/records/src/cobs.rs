//! COBS (Cheshire & Baker, "Consistent Overhead Byte Stuffing", 1999), as the paper and the
//! usual reference code define it: the data is cut at every zero byte and after every run
//! of 254 non-zero bytes; each block becomes a code byte (its length + 1) followed by its
//! non-zero bytes. A block of code 0xFF (254 bytes) has no zero after it, and no empty
//! block is added when the data ends right after one.
//!
//! Written here rather than taken from the `cobs` crate: it is some forty lines, the
//! decoder must be strict about what a receiver meets on the network (a zero inside, a code
//! running past the end, empty input) and report which, and the framing around it (one
//! delimiter each side, see [`crate::frame`]) is ours, where the crate's helpers add or
//! expect a single trailing sentinel and their signatures changed between its 0.2, 0.3
//! and 0.4 releases.

use std::fmt;

/// Largest number of bytes `encode` produces for `len` input bytes: `len` plus one code
/// byte per started block of 254 (at least one).
pub const fn max_encoded_len(len: usize) -> usize {
    len + if len == 0 { 1 } else { len.div_ceil(254) }
}

/// Encodes `data` into bytes none of which is zero.
pub fn encode(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(max_encoded_len(data.len()));
    let mut code_at = 0;
    out.push(0); // the first block's code, filled in when the block ends
    let mut code: u8 = 1;
    for (i, &b) in data.iter().enumerate() {
        if b != 0 {
            out.push(b);
            code += 1;
        }
        if b == 0 || code == 0xFF {
            out[code_at] = code;
            code = 1;
            // A zero always opens a new block (it may be empty); a full block opens one
            // only if data follows.
            if b == 0 || i + 1 < data.len() {
                code_at = out.len();
                out.push(0);
            } else {
                return out;
            }
        }
    }
    out[code_at] = code;
    out
}

/// Why bytes are not a COBS encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Nothing to decode: every encoding has at least one code byte.
    Empty,
    /// A zero byte at this index (a code byte or data byte is never zero).
    Zero { at: usize },
    /// The code byte at `at` announces more bytes than there are.
    Truncated { at: usize, code: u8 },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Empty => f.write_str("empty COBS encoding"),
            DecodeError::Zero { at } => write!(f, "zero byte at {at} inside a COBS encoding"),
            DecodeError::Truncated { at, code } => {
                write!(f, "COBS code {code:#04x} at {at} runs past the end")
            }
        }
    }
}

impl std::error::Error for DecodeError {}

/// Decodes a COBS encoding (without delimiters).
pub fn decode(enc: &[u8]) -> Result<Vec<u8>, DecodeError> {
    if enc.is_empty() {
        return Err(DecodeError::Empty);
    }
    let mut out = Vec::with_capacity(enc.len());
    let mut i = 0;
    while i < enc.len() {
        let code = enc[i];
        if code == 0 {
            return Err(DecodeError::Zero { at: i });
        }
        let block = enc
            .get(i + 1..i + code as usize)
            .ok_or(DecodeError::Truncated { at: i, code })?;
        if let Some(z) = block.iter().position(|&b| b == 0) {
            return Err(DecodeError::Zero { at: i + 1 + z });
        }
        out.extend_from_slice(block);
        i += code as usize;
        if code != 0xFF && i < enc.len() {
            out.push(0);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(data: &[u8], enc: &[u8]) {
        assert_eq!(encode(data), enc, "encoding {data:02x?}");
        assert_eq!(decode(enc).as_deref(), Ok(data), "decoding {enc:02x?}");
        assert!(enc.len() <= max_encoded_len(data.len()));
    }

    /// The examples of the COBS article on Wikipedia (without its trailing delimiter).
    #[test]
    fn reference_examples() {
        check(&[0x00], &[0x01, 0x01]);
        check(&[0x00, 0x00], &[0x01, 0x01, 0x01]);
        check(&[0x00, 0x11, 0x00], &[0x01, 0x02, 0x11, 0x01]);
        check(&[0x11, 0x22, 0x00, 0x33], &[0x03, 0x11, 0x22, 0x02, 0x33]);
        check(&[0x11, 0x22, 0x33, 0x44], &[0x05, 0x11, 0x22, 0x33, 0x44]);
        check(&[0x11, 0x00, 0x00, 0x00], &[0x02, 0x11, 0x01, 0x01, 0x01]);
        check(&[], &[0x01]);
    }

    /// The long examples: 254 non-zero bytes fill one block with no empty block after it.
    #[test]
    fn reference_examples_long() {
        let ones_to_fe: Vec<u8> = (0x01..=0xFE).collect(); // 254 bytes
        check(&ones_to_fe, &[&[0xFF][..], &ones_to_fe].concat());

        let zero_to_fe: Vec<u8> = (0x00..=0xFE).collect(); // 255 bytes
        check(&zero_to_fe, &[&[0x01, 0xFF][..], &ones_to_fe].concat());

        let ones_to_ff: Vec<u8> = (0x01..=0xFF).collect(); // 255 bytes
        check(&ones_to_ff, &[&[0xFF][..], &ones_to_fe, &[0x02, 0xFF]].concat());

        let twos_to_ff_zero: Vec<u8> = (0x02..=0xFF).chain([0x00]).collect();
        let twos_to_ff: Vec<u8> = (0x02..=0xFF).collect();
        check(&twos_to_ff_zero, &[&[0xFF][..], &twos_to_ff, &[0x01, 0x01]].concat());

        let threes: Vec<u8> = (0x03..=0xFF).chain([0x00, 0x01]).collect();
        let threes_to_ff: Vec<u8> = (0x03..=0xFF).collect();
        check(&threes, &[&[0xFE][..], &threes_to_ff, &[0x02, 0x01]].concat());
    }

    #[test]
    fn overhead_bound_is_one_per_254() {
        assert_eq!(max_encoded_len(0), 1);
        assert_eq!(max_encoded_len(254), 255);
        assert_eq!(max_encoded_len(255), 257);
        assert_eq!(encode(&[7u8; 508]).len(), 510);
    }

    #[test]
    fn malformed_encodings_are_refused() {
        assert_eq!(decode(&[]), Err(DecodeError::Empty));
        assert_eq!(decode(&[0x00]), Err(DecodeError::Zero { at: 0 }));
        assert_eq!(decode(&[0x03, 0x11, 0x00]), Err(DecodeError::Zero { at: 2 }));
        assert_eq!(decode(&[0x05, 0x11]), Err(DecodeError::Truncated { at: 0, code: 5 }));
        assert_eq!(
            decode(&[0x02, 0x11, 0x04, 0x22]),
            Err(DecodeError::Truncated { at: 2, code: 4 })
        );
        assert!(DecodeError::Truncated { at: 2, code: 4 }.to_string().contains("0x04"));
    }
}
