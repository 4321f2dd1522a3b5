//! Two 8-byte messages: an objects-mode request (TCP: on the connection, one after the
//! other; QUIC: alone on its own stream), and the QUIC server's reply to an upload.

use super::{check_len, get_u64, put_u64, Error};

pub mod field {
    use crate::wire::Field;

    /// Object request: the object's size in bytes. Upload reply: the payload bytes the
    /// server application read.
    pub const VALUE: Field = 0..8;
}

/// Length of either message.
pub const LEN: usize = field::VALUE.end;

/// "Send me an object of `size` bytes."
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ObjectRequest {
    pub size: u64,
}

impl ObjectRequest {
    pub fn decode(buf: &[u8]) -> Result<ObjectRequest, Error> {
        Ok(ObjectRequest {
            size: decode_value(buf)?,
        })
    }

    pub fn encode(&self) -> [u8; LEN] {
        encode_value(self.size)
    }
}

/// A QUIC server's answer once an upload stream (bulk or messages) ended: what it read.
/// It is how the client learns how many of its bytes were delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UploadReply {
    pub bytes_read: u64,
}

impl UploadReply {
    pub fn decode(buf: &[u8]) -> Result<UploadReply, Error> {
        Ok(UploadReply {
            bytes_read: decode_value(buf)?,
        })
    }

    pub fn encode(&self) -> [u8; LEN] {
        encode_value(self.bytes_read)
    }
}

fn decode_value(buf: &[u8]) -> Result<u64, Error> {
    check_len(buf, LEN)?;
    get_u64(buf, field::VALUE)
}

fn encode_value(v: u64) -> [u8; LEN] {
    let mut b = [0u8; LEN];
    // Infallible: VALUE lies within LEN by definition.
    let _ = put_u64(&mut b, field::VALUE, v);
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_roundtrip() {
        let b = ObjectRequest {
            size: 0x0102_0304_0506_0708,
        }
        .encode();
        assert_eq!(b, [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(
            ObjectRequest::decode(&b),
            Ok(ObjectRequest {
                size: 0x0102_0304_0506_0708
            })
        );
        assert_eq!(
            UploadReply::decode(&UploadReply { bytes_read: 7 }.encode()),
            Ok(UploadReply { bytes_read: 7 })
        );
        assert_eq!(
            ObjectRequest::decode(&b[..7]),
            Err(Error::Truncated { needed: 8, got: 7 })
        );
    }
}
