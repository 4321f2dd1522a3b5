//! The agents' wire formats, one module per message. Every field is a named byte range in
//! the message's `field` module and every integer is big-endian. Decoders accept any byte
//! slice and answer with an [`Error`], never a panic: these bytes come from the network.
//!
//! - [`request`]: what a client asks for, first on a TCP connection (`"TLAB"`, 40 bytes)
//!   or on the QUIC control stream (`"TLQC"`, 64 bytes); one layout, QUIC's extends TCP's.
//! - [`object`]: an objects-mode request (the object's size) and the QUIC server's reply to
//!   an upload (the bytes it read).
//! - [`records`]: the record size and interval after a TCP records request.
//! - [`page`]: the page's shape after a TCP page request (web workload), and its steps.
//! - [`stamp`]: sequence number and send time at the start of every UDP datagram (udp-send,
//!   probe) and every QUIC message, and the probe's echo time after them.
//! - [`code`]: QUIC application error codes.
//!
//! docs/agent.md describes the same formats for readers of the protocol.

pub mod code;
pub mod object;
pub mod page;
pub mod records;
pub mod request;
pub mod stamp;

use std::fmt;
use std::ops::Range;

/// A field's byte range within its message.
pub type Field = Range<usize>;

/// Why bytes are not a valid message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// Fewer bytes than the message's fixed length.
    Truncated {
        needed: usize,
        got: usize,
    },
    /// The first four bytes are not the magic of the expected request.
    BadMagic {
        found: [u8; 4],
        expected: request::Transport,
    },
    UnsupportedVersion {
        found: u8,
        expected: u8,
    },
    /// A mode number this transport does not serve.
    UnknownMode(u8),
    /// A byte with a fixed set of values (a reserved byte, the messages sender) holds
    /// another: decoding is strict so that every accepted message has one encoding.
    BadByte {
        field: &'static str,
        value: u8,
    },
    /// Well-formed, but not a request a server can serve.
    Invalid(&'static str),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated { needed, got } => write!(f, "truncated: {got} of {needed} bytes"),
            Error::BadMagic { found, expected } => {
                write!(
                    f,
                    "bad magic {found:02x?} (not a transportlab {} client)",
                    expected.client_name()
                )
            }
            Error::UnsupportedVersion { found, expected } => {
                write!(f, "unsupported request version {found} (expected {expected})")
            }
            Error::UnknownMode(m) => write!(f, "unknown mode {m}"),
            Error::BadByte { field, value } => write!(f, "bad {field} byte {value}"),
            Error::Invalid(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for Error {}

/// Fails with [`Error::Truncated`] unless `buf` holds at least `needed` bytes.
fn check_len(buf: &[u8], needed: usize) -> Result<(), Error> {
    if buf.len() < needed {
        return Err(Error::Truncated { needed, got: buf.len() });
    }
    Ok(())
}

fn get_u64(buf: &[u8], field: Field) -> Result<u64, Error> {
    let got = buf.len();
    let needed = field.end;
    buf.get(field)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_be_bytes)
        .ok_or(Error::Truncated { needed, got })
}

fn put_u64(buf: &mut [u8], field: Field, v: u64) -> Result<(), Error> {
    let got = buf.len();
    let needed = field.end;
    match buf.get_mut(field) {
        Some(b) if b.len() == 8 => {
            b.copy_from_slice(&v.to_be_bytes());
            Ok(())
        }
        _ => Err(Error::Truncated { needed, got }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u64_fields_are_big_endian_and_bounded() {
        let mut buf = [0u8; 24];
        put_u64(&mut buf, 8..16, 0xdead_beef_0000_0001).unwrap();
        assert_eq!(get_u64(&buf, 8..16), Ok(0xdead_beef_0000_0001));
        assert_eq!(buf[8], 0xde);
        assert_eq!(get_u64(&buf, 20..28), Err(Error::Truncated { needed: 28, got: 24 }));
        assert_eq!(
            put_u64(&mut buf, 17..25, 1),
            Err(Error::Truncated { needed: 25, got: 24 })
        );
    }
}
