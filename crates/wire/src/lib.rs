//! IPv4, UDP and TCP without I/O, on smoltcp's `wire` pattern: a typed view wraps a
//! buffer (`T: AsRef<[u8]>`) and `new_checked` verifies that every field its accessors
//! read lies inside it, so no accessor of a checked view can index out of bounds; a
//! `Repr` is a header as values, parsed from a view and emitted into a buffer; every field
//! is a named byte range in its module's `field`. Decoders answer any bytes with a value
//! or an [`Error`], never a panic: these bytes come from the network (fuzz/).
//!
//! - [`ipv4`]: the IPv4 header (ECN marking, fragments) and [`ipv4::Ipv4Repr`].
//! - [`udp`], [`tcp`]: the transport headers; TCP's options (MSS, window scale,
//!   SACK-permitted, SACK, timestamps) and [`tcp::TcpRepr`].
//! - [`flow_key`]: what the engine logs of every packet (addresses, ports, sequence
//!   number, transport payload length).
//! - [`build`]: whole IPv4 packets with checksums, as a kernel sends them: the simulator's
//!   hosts and the tests build theirs here.
//!
//! The engine, the agent's packet tap, the simulator and the tests all read and write
//! packets through this crate. It does not use smoltcp's `wire` itself (tests/smoltcp.rs
//! checks against it): the engine's forwarder needs what smoltcp's views refuse or do not
//! have — a packet keyed whatever its total length says (the bytes the host handed over
//! are what is forwarded), a GRO packet's total length 0 at the tap, a flow key from a
//! truncated transport header — and ECN as the link model's type.

/// A typed view over a byte buffer: the struct and what every header's view has, the
/// constructors (`new_checked` passes the type's own `check`) and `into_inner`; with
/// `ports`, the transport headers' source and destination ports (their first four bytes).
macro_rules! view {
    ($(#[$doc:meta])* $name:ident $(, $ports:ident)?) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub struct $name<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> $name<T> {
            /// A view without checks: an accessor panics if its field lies past the
            /// buffer (none does once `check` passes).
            pub const fn new_unchecked(buffer: T) -> $name<T> {
                $name { buffer }
            }

            /// A view whose header lies inside `buffer` (its `check` passes).
            pub fn new_checked(buffer: T) -> Result<$name<T>, $crate::Error> {
                let p = $name::new_unchecked(buffer);
                p.check()?;
                Ok(p)
            }

            pub fn into_inner(self) -> T {
                self.buffer
            }

            $($crate::view!(@$ports);)?
        }
    };
    (@ports) => {
        pub fn src_port(&self) -> u16 {
            $crate::be16(self.buffer.as_ref(), field::SRC_PORT)
        }

        pub fn dst_port(&self) -> u16 {
            $crate::be16(self.buffer.as_ref(), field::DST_PORT)
        }
    };
}
pub(crate) use view;

pub mod build;
pub mod flow;
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
    /// A header length field below its minimum (or, emitting, above its maximum).
    BadHeaderLen { header_len: usize },
    /// A TCP option of this kind whose length is wrong or runs past the header.
    BadOption { kind: u8 },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated { needed, got } => write!(f, "truncated: {got} of {needed} bytes"),
            Error::NotIpv4 { version } => write!(f, "IP version {version}, not 4"),
            Error::BadHeaderLen { header_len } => {
                write!(f, "header length {header_len} outside the header's bounds")
            }
            Error::BadOption { kind } => write!(f, "malformed TCP option of kind {kind}"),
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

/// The checksum of a TCP or UDP `segment` (checksum field included) with the IPv4
/// pseudo-header of `src` → `dst`: 0 over a segment whose checksum is right.
pub fn pseudo_checksum(src: std::net::Ipv4Addr, dst: std::net::Ipv4Addr, protocol: u8, segment: &[u8]) -> u16 {
    let mut b = Vec::with_capacity(12 + segment.len());
    b.extend_from_slice(&src.octets());
    b.extend_from_slice(&dst.octets());
    b.extend_from_slice(&[0, protocol]);
    b.extend_from_slice(&(segment.len() as u16).to_be_bytes());
    b.extend_from_slice(segment);
    checksum(&b)
}
