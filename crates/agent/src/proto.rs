//! Wire formats: the TCP request header a client sends right after connecting, the
//! per-object request of objects mode, and the header at the start of every UDP datagram.
//! All integers are big-endian (network order).

/// "TLAB" — first four bytes of every TCP request header.
pub const MAGIC: [u8; 4] = *b"TLAB";
pub const VERSION: u8 = 1;
/// Size of the TCP request header in bytes.
pub const HEADER_LEN: usize = 40;
/// Size of one objects-mode request (object size as u64).
pub const OBJECT_REQUEST_LEN: usize = 8;

/// What the client asks the server to do on this connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Client sends bulk data; the server reads to EOF, then closes its side.
    Upload = 1,
    /// Server sends `bytes` bytes (or for `duration_ns`), then closes its side.
    Download = 2,
    /// Client sends `object_count` requests of OBJECT_REQUEST_LEN bytes, one after the
    /// other; the server answers each with the requested number of bytes.
    Objects = 3,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Upload => "upload",
            Mode::Download => "download",
            Mode::Objects => "objects",
        }
    }
}

/// The fixed 40-byte request header:
///
/// | offset | size | field        |
/// |--------|------|--------------|
/// | 0      | 4    | magic "TLAB" |
/// | 4      | 1    | version (1)  |
/// | 5      | 1    | mode (1 upload, 2 download, 3 objects) |
/// | 6      | 2    | reserved (0) |
/// | 8      | 8    | bytes: total bytes to transfer (0 = not limited by bytes) |
/// | 16     | 8    | duration_ns: transfer duration (0 = not limited by time) |
/// | 24     | 8    | object_size in bytes (objects mode) |
/// | 32     | 8    | object_count (objects mode) |
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub mode: Mode,
    pub bytes: u64,
    pub duration_ns: u64,
    pub object_size: u64,
    pub object_count: u64,
}

impl Header {
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..4].copy_from_slice(&MAGIC);
        b[4] = VERSION;
        b[5] = self.mode as u8;
        b[8..16].copy_from_slice(&self.bytes.to_be_bytes());
        b[16..24].copy_from_slice(&self.duration_ns.to_be_bytes());
        b[24..32].copy_from_slice(&self.object_size.to_be_bytes());
        b[32..40].copy_from_slice(&self.object_count.to_be_bytes());
        b
    }

    pub fn decode(b: &[u8; HEADER_LEN]) -> Result<Header, String> {
        if b[0..4] != MAGIC {
            return Err(format!(
                "bad magic {:02x?} (not a transportlab agent client)",
                &b[0..4]
            ));
        }
        if b[4] != VERSION {
            return Err(format!(
                "unsupported header version {} (expected {VERSION})",
                b[4]
            ));
        }
        let mode = match b[5] {
            1 => Mode::Upload,
            2 => Mode::Download,
            3 => Mode::Objects,
            m => return Err(format!("unknown mode {m}")),
        };
        let u = |i: usize| u64::from_be_bytes(b[i..i + 8].try_into().unwrap());
        Ok(Header {
            mode,
            bytes: u(8),
            duration_ns: u(16),
            object_size: u(24),
            object_count: u(32),
        })
    }
}

/// Header at the start of every UDP datagram sent by udp-send and probe.
/// Offsets: 0 seq (u64), 8 send_ns (u64, sender's CLOCK_MONOTONIC), 16 echo_ns (u64,
/// probe only: the echo server's CLOCK_MONOTONIC receive time when it runs with --stamp,
/// else 0). The rest of the payload is zero padding.
pub const UDP_HEADER_LEN: usize = 16;
pub const PROBE_HEADER_LEN: usize = 24;

#[inline]
pub fn put_u64(buf: &mut [u8], at: usize, v: u64) {
    buf[at..at + 8].copy_from_slice(&v.to_be_bytes());
}

#[inline]
pub fn get_u64(buf: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(buf[at..at + 8].try_into().unwrap())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_roundtrip() {
        for h in [
            Header {
                mode: Mode::Upload,
                bytes: 20_000_000,
                duration_ns: 0,
                object_size: 0,
                object_count: 0,
            },
            Header {
                mode: Mode::Download,
                bytes: 0,
                duration_ns: 2_000_000_000,
                object_size: 0,
                object_count: 0,
            },
            Header {
                mode: Mode::Objects,
                bytes: 0,
                duration_ns: 0,
                object_size: 65536,
                object_count: u64::MAX,
            },
        ] {
            assert_eq!(Header::decode(&h.encode()), Ok(h));
        }
    }

    #[test]
    fn header_layout_is_fixed() {
        let h = Header {
            mode: Mode::Download,
            bytes: 0x0102030405060708,
            duration_ns: 1,
            object_size: 2,
            object_count: 3,
        };
        let b = h.encode();
        assert_eq!(&b[0..8], b"TLAB\x01\x02\x00\x00");
        assert_eq!(&b[8..16], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(b[23], 1);
        assert_eq!(b[31], 2);
        assert_eq!(b[39], 3);
    }

    #[test]
    fn header_rejects_garbage() {
        let mut b = Header {
            mode: Mode::Upload,
            bytes: 1,
            duration_ns: 0,
            object_size: 0,
            object_count: 0,
        }
        .encode();
        b[5] = 9;
        assert!(Header::decode(&b).unwrap_err().contains("mode"));
        b[5] = 1;
        b[4] = 7;
        assert!(Header::decode(&b).unwrap_err().contains("version"));
        b[0] = b'X';
        assert!(Header::decode(&b).unwrap_err().contains("magic"));
    }

    #[test]
    fn u64_fields() {
        let mut buf = [0u8; 24];
        put_u64(&mut buf, 8, 0xdead_beef_0000_0001);
        assert_eq!(get_u64(&buf, 8), 0xdead_beef_0000_0001);
        assert_eq!(buf[8], 0xde);
    }
}
