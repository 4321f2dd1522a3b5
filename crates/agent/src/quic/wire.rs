//! The QUIC request: what the client asks for, sent as the first bytes of the first
//! bidirectional stream (the control stream). Big-endian, 56 bytes:
//!
//! | offset | size | field |
//! |--------|------|-------|
//! | 0  | 4 | magic `"TLQC"` |
//! | 4  | 1 | version = 1 |
//! | 5  | 1 | mode: 1 upload, 2 download, 3 objects, 4 messages |
//! | 6  | 1 | messages mode: 1 client sends, 2 server sends |
//! | 7  | 1 | reserved, 0 |
//! | 8  | 8 | `bytes` (bulk; 0 = not limited by bytes) |
//! | 16 | 8 | `duration_ns` (bulk, messages; 0 = not limited by time) |
//! | 24 | 8 | `object_size` (objects) |
//! | 32 | 8 | `object_count` (objects) |
//! | 40 | 8 | `message_size` (messages) |
//! | 48 | 8 | `message_interval_ns` (messages) |

pub const MAGIC: [u8; 4] = *b"TLQC";
pub const VERSION: u8 = 1;
pub const REQUEST_LEN: usize = 56;
/// An object request on its own stream: the object size, u64 BE.
pub const OBJECT_REQUEST_LEN: usize = 8;
/// Seq (u64) and send time (u64) at the start of every message.
pub const MESSAGE_HEADER_LEN: usize = 16;

/// Application error codes (connection close and stream reset).
pub mod code {
    /// Connection closed after a complete transfer.
    pub const DONE: u32 = 0;
    /// The sender stopped at the end of `--duration`, discarding data not yet sent.
    pub const DURATION_OVER: u32 = 1;
    /// The endpoint was stopped (signal or `--duration` of a server).
    pub const STOPPED: u32 = 2;
    /// The peer's request was malformed.
    pub const BAD_REQUEST: u32 = 3;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Upload,
    Download,
    Objects,
    Messages,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Upload => "upload",
            Mode::Download => "download",
            Mode::Objects => "objects",
            Mode::Messages => "messages",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub mode: Mode,
    /// Messages mode: the client sends (upload) rather than the server (download).
    pub client_sends_messages: bool,
    pub bytes: u64,
    pub duration_ns: u64,
    pub object_size: u64,
    pub object_count: u64,
    pub message_size: u64,
    pub message_interval_ns: u64,
}

impl Request {
    /// Whether the client is the end that sends the payload.
    pub fn client_sends(&self) -> bool {
        match self.mode {
            Mode::Upload => true,
            Mode::Download | Mode::Objects => false,
            Mode::Messages => self.client_sends_messages,
        }
    }

    pub fn encode(&self) -> [u8; REQUEST_LEN] {
        let mut b = [0u8; REQUEST_LEN];
        b[0..4].copy_from_slice(&MAGIC);
        b[4] = VERSION;
        b[5] = match self.mode {
            Mode::Upload => 1,
            Mode::Download => 2,
            Mode::Objects => 3,
            Mode::Messages => 4,
        };
        b[6] = if self.client_sends_messages { 1 } else { 2 };
        for (i, v) in [
            self.bytes,
            self.duration_ns,
            self.object_size,
            self.object_count,
            self.message_size,
            self.message_interval_ns,
        ]
        .into_iter()
        .enumerate()
        {
            b[8 + 8 * i..16 + 8 * i].copy_from_slice(&v.to_be_bytes());
        }
        b
    }

    pub fn decode(b: &[u8; REQUEST_LEN]) -> Result<Request, String> {
        if b[0..4] != MAGIC {
            return Err(format!("bad magic {:02x?} (not a transportlab QUIC client)", &b[0..4]));
        }
        if b[4] != VERSION {
            return Err(format!("unsupported request version {} (expected {VERSION})", b[4]));
        }
        let mode = match b[5] {
            1 => Mode::Upload,
            2 => Mode::Download,
            3 => Mode::Objects,
            4 => Mode::Messages,
            m => return Err(format!("unknown mode {m}")),
        };
        let u = |i: usize| u64::from_be_bytes(b[8 + 8 * i..16 + 8 * i].try_into().unwrap());
        let r = Request {
            mode,
            client_sends_messages: b[6] == 1,
            bytes: u(0),
            duration_ns: u(1),
            object_size: u(2),
            object_count: u(3),
            message_size: u(4),
            message_interval_ns: u(5),
        };
        match mode {
            Mode::Download if r.bytes == 0 && r.duration_ns == 0 => {
                Err("download request has neither bytes nor duration".into())
            }
            Mode::Messages
                if r.message_size < MESSAGE_HEADER_LEN as u64
                    || r.message_interval_ns == 0
                    || r.duration_ns == 0 =>
            {
                Err("messages request needs size >= 16, an interval and a duration".into())
            }
            _ => Ok(r),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip() {
        let r = Request {
            mode: Mode::Messages,
            client_sends_messages: true,
            bytes: 1,
            duration_ns: 2,
            object_size: 3,
            object_count: 4,
            message_size: 100,
            message_interval_ns: 6,
        };
        assert_eq!(Request::decode(&r.encode()).unwrap(), r);
        let mut b = r.encode();
        b[0] = b'X';
        assert!(Request::decode(&b).is_err());
    }
}
