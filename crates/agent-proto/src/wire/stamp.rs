//! The stamp at the start of every UDP datagram of udp-send and probe and of every QUIC
//! message: a sequence number and the sender's CLOCK_MONOTONIC just before sending. A
//! probe's datagram adds the echo's receive time (written by `echo --stamp`, else 0). The
//! rest of a datagram or message is zero padding.

use super::{check_len, get_u64, put_u64, Error};

pub mod field {
    use crate::wire::Field;

    pub const SEQ: Field = 0..8;
    pub const SEND_NS: Field = 8..16;
    /// Probe datagrams only.
    pub const ECHO_NS: Field = 16..24;
}

/// Length of a [`Stamp`]: the smallest udp-send datagram and QUIC message.
pub const LEN: usize = field::SEND_NS.end;
/// Length of a [`ProbeStamp`]: the smallest probe datagram.
pub const PROBE_LEN: usize = field::ECHO_NS.end;

/// The header of a UDP datagram (udp-send) and of a QUIC message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub seq: u64,
    pub send_ns: u64,
}

impl Stamp {
    /// Reads the stamp at the start of `buf` (the payload after it is not looked at).
    pub fn decode(buf: &[u8]) -> Result<Stamp, Error> {
        check_len(buf, LEN)?;
        Ok(Stamp {
            seq: get_u64(buf, field::SEQ)?,
            send_ns: get_u64(buf, field::SEND_NS)?,
        })
    }

    /// Writes the stamp over the first [`LEN`] bytes of `buf`, leaving the rest alone.
    pub fn emit(&self, buf: &mut [u8]) -> Result<(), Error> {
        check_len(buf, LEN)?;
        put_u64(buf, field::SEQ, self.seq)?;
        put_u64(buf, field::SEND_NS, self.send_ns)
    }
}

/// The header of a probe datagram, as the probe reads it back from the echo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeStamp {
    pub seq: u64,
    pub send_ns: u64,
    /// The echo's receive time, 0 when the echo does not stamp.
    pub echo_ns: u64,
}

impl ProbeStamp {
    pub fn decode(buf: &[u8]) -> Result<ProbeStamp, Error> {
        check_len(buf, PROBE_LEN)?;
        let Stamp { seq, send_ns } = Stamp::decode(buf)?;
        Ok(ProbeStamp {
            seq,
            send_ns,
            echo_ns: get_u64(buf, field::ECHO_NS)?,
        })
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<(), Error> {
        check_len(buf, PROBE_LEN)?;
        Stamp {
            seq: self.seq,
            send_ns: self.send_ns,
        }
        .emit(buf)?;
        set_echo_ns(buf, self.echo_ns)
    }
}

/// The echo's side of a probe datagram: its receive time, in place. Datagrams too short
/// to hold it are refused (and reflected unchanged by the caller).
pub fn set_echo_ns(buf: &mut [u8], echo_ns: u64) -> Result<(), Error> {
    check_len(buf, PROBE_LEN)?;
    put_u64(buf, field::ECHO_NS, echo_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        let mut b = [0xffu8; 30];
        ProbeStamp {
            seq: 1,
            send_ns: 2,
            echo_ns: 3,
        }
        .emit(&mut b)
        .unwrap();
        assert_eq!(
            &b[..24],
            &[0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3]
        );
        assert_eq!(&b[24..], &[0xff; 6], "bytes past the stamp are left alone");
        assert_eq!(Stamp::decode(&b), Ok(Stamp { seq: 1, send_ns: 2 }));
        set_echo_ns(&mut b, 9).unwrap();
        assert_eq!(ProbeStamp::decode(&b).unwrap().echo_ns, 9);
    }

    #[test]
    fn short_buffers_are_refused_untouched() {
        let mut b = [7u8; 23];
        assert_eq!(set_echo_ns(&mut b, 1), Err(Error::Truncated { needed: 24, got: 23 }));
        assert_eq!(
            ProbeStamp {
                seq: 1,
                send_ns: 2,
                echo_ns: 3
            }
            .emit(&mut b),
            Err(Error::Truncated { needed: 24, got: 23 })
        );
        assert_eq!(b, [7u8; 23]);
        assert_eq!(Stamp::decode(&b[..15]), Err(Error::Truncated { needed: 16, got: 15 }));
        assert_eq!(
            Stamp { seq: 0, send_ns: 0 }.emit(&mut b[..15]),
            Err(Error::Truncated { needed: 16, got: 15 })
        );
    }
}
