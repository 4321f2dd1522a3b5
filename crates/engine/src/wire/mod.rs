//! Typed views of the packet headers the engine reads (and, for ECN marking, writes):
//! IPv4, and the TCP and UDP fields of a flow key. A view wraps a buffer
//! (`T: AsRef<[u8]>`); `new_checked` verifies that every field the view's accessors read
//! lies inside it, so no accessor of a checked view can index out of bounds. Every field
//! is a named byte range in the module's `field`.
//!
//! [`flow_key`] is what the forwarder calls on every packet a TUN device hands over.

mod flow;
pub mod ipv4;
pub mod tcp;
pub mod udp;

use std::fmt;
use std::ops::Range;

pub use flow::{flow_key, FlowKey};
pub use ipv4::Ipv4Packet;
pub use tcp::TcpPacket;
pub use udp::UdpPacket;

/// A field's byte range within its header.
pub type Field = Range<usize>;

/// Why a buffer is not a packet the view can read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// Shorter than the header (or than the header length the header itself states).
    Truncated { needed: usize, got: usize },
    /// The IP version nibble is not 4.
    NotIpv4 { version: u8 },
    /// A header length field below its minimum.
    BadHeaderLen { header_len: usize },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated { needed, got } => write!(f, "truncated: {got} of {needed} bytes"),
            Error::NotIpv4 { version } => write!(f, "IP version {version}, not 4"),
            Error::BadHeaderLen { header_len } => {
                write!(f, "header length {header_len} below the minimum")
            }
        }
    }
}

impl std::error::Error for Error {}

fn check_len(buf: &[u8], needed: usize) -> Result<(), Error> {
    if buf.len() < needed {
        return Err(Error::Truncated { needed, got: buf.len() });
    }
    Ok(())
}

fn be16(buf: &[u8], f: Field) -> u16 {
    u16::from_be_bytes([buf[f.start], buf[f.start + 1]])
}

fn be32(buf: &[u8], f: Field) -> u32 {
    u32::from_be_bytes([buf[f.start], buf[f.start + 1], buf[f.start + 2], buf[f.start + 3]])
}

fn set_be16(buf: &mut [u8], f: Field, v: u16) {
    buf[f].copy_from_slice(&v.to_be_bytes());
}

/// The internet checksum: the ones' complement of the ones' complement sum of the data
/// as big-endian 16-bit words (an odd last byte padded with zero).
pub fn checksum(data: &[u8]) -> u16 {
    // u64 cannot overflow: that would take 2^48 words.
    let mut sum: u64 = 0;
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        sum += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        sum += u64::from(*last) << 8;
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}
