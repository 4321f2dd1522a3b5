//! The request a client sends before anything else: the first bytes of a TCP connection
//! (inside TLS with `--tls`) or of the QUIC control stream. Both transports share one
//! layout; QUIC's is TCP's with the messages mode and three more fields:
//!
//! | bytes  | field | TCP (`"TLAB"`, 40 bytes) | QUIC (`"TLQC"`, 64 bytes) |
//! |--------|-------|--------------------------|---------------------------|
//! | 0..4   | magic | `"TLAB"` | `"TLQC"` |
//! | 4      | version | 1 | 2 |
//! | 5      | mode | 1 upload, 2 download, 3 objects, 5 records, 6 page | 1, 2, 3, 4 messages, 5 records |
//! | 6      | message sender | 0 | 1 client sends, 2 server sends (every mode) |
//! | 7      | reserved | 0 | 0 |
//! | 8..16  | `bytes` (0 = not limited by bytes) | | |
//! | 16..24 | `duration_ns` (0 = not limited by time) | | |
//! | 24..32 | `object_size` | | |
//! | 32..40 | `object_count` | | |
//! | 40..48 | `message_size` | – | |
//! | 48..56 | `message_interval_ns` | – | |
//! | 56..64 | `streams` | – (always 1) | |
//!
//! A TCP records request (mode 5) is followed by a [`super::records::RecordsRequest`]
//! (record size and interval): the 40 bytes of the other modes are unchanged. A QUIC
//! records request carries them in `message_size` and `message_interval_ns` (sender byte
//! 2), and its `streams` says how the server lays them out: 1 = every record on the
//! control stream, back to back; 0 = each record on a unidirectional stream of its own
//! (their number is not fixed in advance).
//!
//! QUIC version 1 was the first 56 bytes of version 2, without `streams`; a server refuses
//! it. Decoding is strict (reserved bytes 0, sender byte 0 for TCP and 1 or 2 for QUIC), so
//! every accepted request re-encodes to the bytes it came from.

use super::{check_len, get_u64, put_u64, Error};

pub mod field {
    use crate::wire::Field;

    pub const MAGIC: Field = 0..4;
    pub const VERSION: usize = 4;
    pub const MODE: usize = 5;
    pub const MESSAGE_SENDER: usize = 6;
    pub const RESERVED: usize = 7;
    pub const BYTES: Field = 8..16;
    pub const DURATION_NS: Field = 16..24;
    pub const OBJECT_SIZE: Field = 24..32;
    pub const OBJECT_COUNT: Field = 32..40;
    pub const MESSAGE_SIZE: Field = 40..48;
    pub const MESSAGE_INTERVAL_NS: Field = 48..56;
    pub const STREAMS: Field = 56..64;
}

/// Version of the TCP request.
pub const TCP_VERSION: u8 = 1;
/// Version of the QUIC request (2: `streams` added).
pub const QUIC_VERSION: u8 = 2;
/// Length of the TCP request.
pub const TCP_LEN: usize = field::OBJECT_COUNT.end;
/// Length of the QUIC request.
pub const QUIC_LEN: usize = field::STREAMS.end;
/// Most streams a QUIC request may ask for: with the control stream they fit the 10 000
/// concurrent streams each QUIC endpoint allows its peer.
pub const MAX_STREAMS: u64 = 9_999;

const SENDER_CLIENT: u8 = 1;
const SENDER_SERVER: u8 = 2;

/// Which transport's request: each has its own magic and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Tcp,
    Quic,
}

impl Transport {
    pub const fn magic(self) -> [u8; 4] {
        match self {
            Transport::Tcp => *b"TLAB",
            Transport::Quic => *b"TLQC",
        }
    }

    /// Version of this transport's request.
    pub const fn version(self) -> u8 {
        match self {
            Transport::Tcp => TCP_VERSION,
            Transport::Quic => QUIC_VERSION,
        }
    }

    /// Length of this transport's request in bytes.
    pub const fn request_len(self) -> usize {
        match self {
            Transport::Tcp => TCP_LEN,
            Transport::Quic => QUIC_LEN,
        }
    }

    /// How an error message names a client of this transport.
    pub const fn client_name(self) -> &'static str {
        match self {
            Transport::Tcp => "agent",
            Transport::Quic => "QUIC",
        }
    }
}

/// What the client asks the server to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The client sends bulk data.
    Upload = 1,
    /// The server sends `bytes` bytes or for `duration_ns`.
    Download = 2,
    /// The client requests `object_count` objects of `object_size` bytes.
    Objects = 3,
    /// One end sends `message_size`-byte messages every `message_interval_ns` (QUIC only).
    Messages = 4,
    /// The server sends COBS-framed records at a fixed interval for `duration_ns`; their
    /// size and interval follow the request over TCP ([`super::records`]) and are its
    /// message fields over QUIC.
    Records = 5,
    /// Web pages: a primary object, then N secondaries, again and again for
    /// `duration_ns`; the page's shape follows the request (TCP only, see [`super::page`]).
    Page = 6,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Upload => "upload",
            Mode::Download => "download",
            Mode::Objects => "objects",
            Mode::Messages => "messages",
            Mode::Records => "records",
            Mode::Page => "page",
        }
    }

    fn from_byte(b: u8, transport: Transport) -> Result<Mode, Error> {
        match (b, transport) {
            (1, _) => Ok(Mode::Upload),
            (2, _) => Ok(Mode::Download),
            (3, _) => Ok(Mode::Objects),
            (4, Transport::Quic) => Ok(Mode::Messages),
            (5, _) => Ok(Mode::Records),
            (6, Transport::Tcp) => Ok(Mode::Page),
            (m, _) => Err(Error::UnknownMode(m)),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub mode: Mode,
    /// QUIC: the client sends the messages (messages mode; carried, unused, in the
    /// others). TCP: always false.
    pub client_sends_messages: bool,
    pub bytes: u64,
    pub duration_ns: u64,
    pub object_size: u64,
    pub object_count: u64,
    /// QUIC only (0 over TCP).
    pub message_size: u64,
    /// QUIC only (0 over TCP).
    pub message_interval_ns: u64,
    /// Streams the transfer runs on. Upload and download: the payload's streams (the
    /// control stream and `streams − 1` unidirectional ones from the sender); objects: the
    /// objects in flight at once; messages: 1. TCP: always 1 (not carried).
    pub streams: u64,
}

impl Request {
    /// A request for `mode` on one stream with every amount 0.
    pub fn new(mode: Mode) -> Request {
        Request {
            mode,
            client_sends_messages: false,
            bytes: 0,
            duration_ns: 0,
            object_size: 0,
            object_count: 0,
            message_size: 0,
            message_interval_ns: 0,
            streams: 1,
        }
    }

    /// Whether the client is the end that sends the payload.
    pub fn client_sends(&self) -> bool {
        match self.mode {
            Mode::Upload => true,
            Mode::Download | Mode::Objects | Mode::Records | Mode::Page => false,
            Mode::Messages => self.client_sends_messages,
        }
    }

    /// Decodes the request at the start of `buf` (bytes past `transport.request_len()` are not
    /// looked at). Checks the framing only; [`Request::validate`] checks the amounts.
    pub fn decode(transport: Transport, buf: &[u8]) -> Result<Request, Error> {
        check_len(buf, transport.request_len())?;
        let mut magic = [0u8; 4];
        magic.copy_from_slice(&buf[field::MAGIC]);
        if magic != transport.magic() {
            return Err(Error::BadMagic {
                found: magic,
                expected: transport,
            });
        }
        if buf[field::VERSION] != transport.version() {
            return Err(Error::UnsupportedVersion {
                found: buf[field::VERSION],
                expected: transport.version(),
            });
        }
        let mode = Mode::from_byte(buf[field::MODE], transport)?;
        let sender = buf[field::MESSAGE_SENDER];
        let client_sends_messages = match (transport, sender) {
            (Transport::Tcp, 0) => false,
            (Transport::Quic, SENDER_CLIENT) => true,
            (Transport::Quic, SENDER_SERVER) => false,
            (Transport::Tcp, v) => {
                return Err(Error::BadByte {
                    field: "reserved",
                    value: v,
                })
            }
            (Transport::Quic, v) => {
                return Err(Error::BadByte {
                    field: "message sender",
                    value: v,
                })
            }
        };
        if buf[field::RESERVED] != 0 {
            return Err(Error::BadByte {
                field: "reserved",
                value: buf[field::RESERVED],
            });
        }
        let mut r = Request {
            mode,
            client_sends_messages,
            bytes: get_u64(buf, field::BYTES)?,
            duration_ns: get_u64(buf, field::DURATION_NS)?,
            object_size: get_u64(buf, field::OBJECT_SIZE)?,
            object_count: get_u64(buf, field::OBJECT_COUNT)?,
            message_size: 0,
            message_interval_ns: 0,
            streams: 1,
        };
        if transport == Transport::Quic {
            r.message_size = get_u64(buf, field::MESSAGE_SIZE)?;
            r.message_interval_ns = get_u64(buf, field::MESSAGE_INTERVAL_NS)?;
            r.streams = get_u64(buf, field::STREAMS)?;
        }
        Ok(r)
    }

    /// Whether a server can serve this request.
    pub fn validate(&self) -> Result<(), Error> {
        match self.mode {
            Mode::Download if self.bytes == 0 && self.duration_ns == 0 => {
                Err(Error::Invalid("download request has neither bytes nor duration"))
            }
            Mode::Messages
                if self.message_size < super::stamp::LEN as u64
                    || self.message_interval_ns == 0
                    || self.duration_ns == 0 =>
            {
                Err(Error::Invalid(
                    "messages request needs size >= 16, an interval and a duration",
                ))
            }
            Mode::Records if self.duration_ns == 0 => Err(Error::Invalid("records request has no duration")),
            Mode::Records if self.streams > 1 => Err(Error::Invalid(
                "records request runs on one stream (streams 1) or a stream per record (streams 0)",
            )),
            Mode::Records => Ok(()),
            Mode::Page if self.duration_ns == 0 => Err(Error::Invalid("page request has no duration")),
            _ if self.streams == 0 || self.streams > MAX_STREAMS => {
                Err(Error::Invalid("request needs 1 to 9999 streams"))
            }
            Mode::Messages if self.streams != 1 => Err(Error::Invalid("messages request runs on one stream")),
            _ => Ok(()),
        }
    }

    /// Writes the request for `transport` over the first `transport.request_len()` bytes of `buf`.
    /// TCP has no messages mode, carries no message fields and runs on one stream.
    pub fn emit(&self, transport: Transport, buf: &mut [u8]) -> Result<(), Error> {
        check_len(buf, transport.request_len())?;
        if transport == Transport::Tcp && self.mode == Mode::Messages {
            return Err(Error::Invalid("messages mode is QUIC only"));
        }
        if transport == Transport::Quic && self.mode == Mode::Page {
            return Err(Error::Invalid("page mode is TCP only"));
        }
        if transport == Transport::Tcp && self.streams != 1 {
            return Err(Error::Invalid("several streams are QUIC only"));
        }
        buf[field::MAGIC].copy_from_slice(&transport.magic());
        buf[field::VERSION] = transport.version();
        buf[field::MODE] = self.mode as u8;
        buf[field::MESSAGE_SENDER] = match transport {
            Transport::Tcp => 0,
            Transport::Quic if self.client_sends_messages => SENDER_CLIENT,
            Transport::Quic => SENDER_SERVER,
        };
        buf[field::RESERVED] = 0;
        put_u64(buf, field::BYTES, self.bytes)?;
        put_u64(buf, field::DURATION_NS, self.duration_ns)?;
        put_u64(buf, field::OBJECT_SIZE, self.object_size)?;
        put_u64(buf, field::OBJECT_COUNT, self.object_count)?;
        if transport == Transport::Quic {
            put_u64(buf, field::MESSAGE_SIZE, self.message_size)?;
            put_u64(buf, field::MESSAGE_INTERVAL_NS, self.message_interval_ns)?;
            put_u64(buf, field::STREAMS, self.streams)?;
        }
        Ok(())
    }

    /// The request as `transport.request_len()` bytes.
    pub fn encode(&self, transport: Transport) -> Result<Vec<u8>, Error> {
        let mut b = vec![0u8; transport.request_len()];
        self.emit(transport, &mut b)?;
        Ok(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(mode: Mode, bytes: u64, duration_ns: u64, object_size: u64, object_count: u64) -> Request {
        Request {
            bytes,
            duration_ns,
            object_size,
            object_count,
            ..Request::new(mode)
        }
    }

    /// The smallest valid messages-mode request.
    fn messages() -> Request {
        Request {
            message_size: 16,
            message_interval_ns: 1,
            duration_ns: 1,
            ..Request::new(Mode::Messages)
        }
    }

    #[test]
    fn tcp_roundtrip() {
        for r in [
            tcp(Mode::Upload, 20_000_000, 0, 0, 0),
            tcp(Mode::Download, 0, 2_000_000_000, 0, 0),
            tcp(Mode::Objects, 0, 0, 65536, u64::MAX),
        ] {
            let b = r.encode(Transport::Tcp).unwrap();
            assert_eq!(b.len(), TCP_LEN);
            assert_eq!(Request::decode(Transport::Tcp, &b), Ok(r));
        }
    }

    /// The bytes the agent's TCP client sent before this module existed.
    #[test]
    fn tcp_layout_is_fixed() {
        let b = tcp(Mode::Download, 0x0102030405060708, 1, 2, 3)
            .encode(Transport::Tcp)
            .unwrap();
        let mut expected = b"TLAB\x01\x02\x00\x00\x01\x02\x03\x04\x05\x06\x07\x08".to_vec();
        for v in [1u64, 2, 3] {
            expected.extend_from_slice(&v.to_be_bytes());
        }
        assert_eq!(b, expected);
    }

    /// The QUIC request, version 2: version 1's 56 bytes (with the version byte 2), then
    /// `streams`.
    #[test]
    fn quic_layout_is_fixed() {
        let r = Request {
            mode: Mode::Messages,
            client_sends_messages: true,
            bytes: 1,
            duration_ns: 2,
            object_size: 3,
            object_count: 4,
            message_size: 100,
            message_interval_ns: 6,
            streams: 7,
        };
        let b = r.encode(Transport::Quic).unwrap();
        let mut expected = b"TLQC\x02\x04\x01\x00".to_vec();
        for v in [1u64, 2, 3, 4, 100, 6, 7] {
            expected.extend_from_slice(&v.to_be_bytes());
        }
        assert_eq!(b, expected);
        assert_eq!(Request::decode(Transport::Quic, &b), Ok(r));
        let download = Request {
            client_sends_messages: false,
            ..Request::new(Mode::Download)
        };
        assert_eq!(download.encode(Transport::Quic).unwrap()[field::MESSAGE_SENDER], 2);
    }

    /// A version-1 QUIC client's request (56 bytes, then its upload's payload of zeros) is
    /// refused for its version, not misread.
    #[test]
    fn quic_version_1_is_refused() {
        let mut v1 = b"TLQC\x01\x01\x01\x00".to_vec();
        v1.extend_from_slice(&20_000_000u64.to_be_bytes());
        v1.resize(QUIC_LEN, 0);
        assert_eq!(
            Request::decode(Transport::Quic, &v1),
            Err(Error::UnsupportedVersion { found: 1, expected: 2 })
        );
    }

    #[test]
    fn streams_are_quic_only_and_bounded() {
        let two = Request {
            bytes: 5,
            streams: 2,
            ..Request::new(Mode::Upload)
        };
        assert!(two.encode(Transport::Tcp).is_err());
        let b = two.encode(Transport::Quic).unwrap();
        assert_eq!(b[field::STREAMS], 2u64.to_be_bytes());
        assert_eq!(Request::decode(Transport::Quic, &b), Ok(two));
        assert_eq!(
            Request::decode(
                Transport::Tcp,
                &Request::new(Mode::Upload).encode(Transport::Tcp).unwrap()
            )
            .unwrap()
            .streams,
            1
        );
        assert!(two.validate().is_ok());
        assert!(Request {
            streams: MAX_STREAMS,
            ..two
        }
        .validate()
        .is_ok());
        let e = Request {
            streams: MAX_STREAMS + 1,
            ..two
        }
        .validate()
        .unwrap_err();
        assert!(e.to_string().contains(&format!("1 to {MAX_STREAMS} streams")), "{e}");
        assert!(Request { streams: 0, ..two }.validate().is_err());
        let m = messages();
        assert!(m.validate().is_ok());
        assert!(Request { streams: 2, ..m }.validate().is_err());
    }

    #[test]
    fn rejects_garbage_with_the_field_named() {
        let good = tcp(Mode::Upload, 1, 0, 0, 0).encode(Transport::Tcp).unwrap();
        let bad = |i: usize, v: u8| {
            let mut b = good.clone();
            b[i] = v;
            Request::decode(Transport::Tcp, &b).unwrap_err().to_string()
        };
        assert!(bad(field::MODE, 9).contains("mode"));
        assert!(bad(field::MODE, 4).contains("mode"), "no messages mode over TCP");
        assert!(bad(field::VERSION, 7).contains("version"));
        assert!(bad(0, b'X').contains("magic"));
        assert!(bad(field::MESSAGE_SENDER, 1).contains("reserved"));
        assert!(bad(field::RESERVED, 1).contains("reserved"));
        let mut tcp_as_quic = good.clone();
        tcp_as_quic.resize(QUIC_LEN, 0);
        let e = Request::decode(Transport::Quic, &tcp_as_quic).unwrap_err();
        assert!(e.to_string().contains("not a transportlab QUIC client"), "{e}");
        assert_eq!(
            Request::decode(Transport::Tcp, &good[..39]),
            Err(Error::Truncated { needed: 40, got: 39 })
        );
        let mut q = Request::new(Mode::Upload).encode(Transport::Quic).unwrap();
        q[field::MESSAGE_SENDER] = 0;
        assert!(Request::decode(Transport::Quic, &q)
            .unwrap_err()
            .to_string()
            .contains("message sender"));
    }

    #[test]
    fn validate() {
        assert!(Request::new(Mode::Download).validate().is_err());
        assert!(tcp(Mode::Download, 0, 1, 0, 0).validate().is_ok());
        let m = messages();
        assert!(m.validate().is_ok());
        assert!(Request { message_size: 15, ..m }.validate().is_err());
        assert!(Request::new(Mode::Messages).encode(Transport::Tcp).is_err());
        assert!(Request::new(Mode::Records).validate().is_err());
        let records = tcp(Mode::Records, 0, 5, 0, 0);
        assert!(records.validate().is_ok());
        let b = records.encode(Transport::Tcp).unwrap();
        assert_eq!((b.len(), b[field::MODE]), (TCP_LEN, 5));
        assert_eq!(Request::decode(Transport::Tcp, &b), Ok(records));
        assert!(!records.client_sends());
        // Over QUIC: the record size and interval in the message fields, one stream or a
        // stream per record.
        let q = Request {
            message_size: 1448,
            message_interval_ns: 20_000_000,
            ..records
        };
        for streams in [0, 1] {
            let q = Request { streams, ..q };
            assert!(q.validate().is_ok());
            let b = q.encode(Transport::Quic).unwrap();
            assert_eq!(b[field::MODE], 5);
            assert_eq!(Request::decode(Transport::Quic, &b), Ok(q));
        }
        let e = Request { streams: 2, ..q }.validate().unwrap_err().to_string();
        assert!(e.contains("stream per record"), "{e}");
        assert!(Request { streams: 0, ..records }.encode(Transport::Tcp).is_err());
    }
}
