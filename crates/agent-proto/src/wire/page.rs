//! What follows a TCP page request (mode 6, the web workload): the page's shape, then
//! the client asks for each page in two steps. Big-endian.
//!
//! | bytes  | field |
//! |--------|-------|
//! | 0      | `framing`: 0 = objects back to back on the byte stream, 1 = msTCP (each object on a sub-stream of its own, `records::mstcp` chunks) |
//! | 1..8   | reserved, 0 |
//! | 8..16  | `primary`: the primary object's size in bytes |
//! | 16..24 | `count`: the number of secondary objects N (at most [`MAX_SECONDARIES`]) |
//! | 24..   | N × 8 bytes: each secondary's size |
//!
//! Then, per page, the client writes a [`Step`] (8 bytes: 1 = the primary, 2 = the
//! secondaries); the server answers the first with the primary and the second with the N
//! secondaries (back to back, or their msTCP chunks interleaved one chunk per object in
//! turn). msTCP sub-stream ids: page `p` uses `p·(N+1)` for the primary and
//! `p·(N+1) + k` for secondary `k` (1…N). The client ends by closing its side.

use super::{check_len, get_u64, put_u64, Error};

pub mod field {
    use crate::wire::Field;

    pub const FRAMING: usize = 0;
    pub const RESERVED: Field = 1..8;
    pub const PRIMARY: Field = 8..16;
    pub const COUNT: Field = 16..24;
}

/// Fixed part's length; the sizes follow.
pub const FIXED_LEN: usize = field::COUNT.end;
/// Most secondary objects a page may have.
pub const MAX_SECONDARIES: u64 = 1000;
/// Largest object (16 MiB).
pub const MAX_OBJECT: u64 = 16 << 20;
/// Length of a step message.
pub const STEP_LEN: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// Objects back to back on the byte stream.
    Plain = 0,
    /// msTCP chunks, a sub-stream per object.
    Mstcp = 1,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageRequest {
    pub framing: Framing,
    pub primary: u64,
    pub secondaries: Vec<u64>,
}

/// What the client asks for next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Primary = 1,
    Secondaries = 2,
}

impl Step {
    pub fn encode(self) -> [u8; STEP_LEN] {
        (self as u64).to_be_bytes()
    }

    pub fn decode(b: &[u8]) -> Result<Step, Error> {
        check_len(b, STEP_LEN)?;
        match get_u64(b, 0..8)? {
            1 => Ok(Step::Primary),
            2 => Ok(Step::Secondaries),
            _ => Err(Error::Invalid("page step must be 1 (primary) or 2 (secondaries)")),
        }
    }
}

impl PageRequest {
    /// The number of secondaries a fixed part announces (to read their sizes next).
    pub fn count(fixed: &[u8]) -> Result<u64, Error> {
        check_len(fixed, FIXED_LEN)?;
        let n = get_u64(fixed, field::COUNT)?;
        if n > MAX_SECONDARIES {
            return Err(Error::Invalid("a page has at most 1000 secondary objects"));
        }
        Ok(n)
    }

    /// Decodes the fixed part followed by the sizes.
    pub fn decode(buf: &[u8]) -> Result<PageRequest, Error> {
        let n = Self::count(buf)? as usize;
        check_len(buf, FIXED_LEN + 8 * n)?;
        let framing = match buf[field::FRAMING] {
            0 => Framing::Plain,
            1 => Framing::Mstcp,
            v => {
                return Err(Error::BadByte {
                    field: "framing",
                    value: v,
                })
            }
        };
        if let Some(&v) = buf[field::RESERVED].iter().find(|&&b| b != 0) {
            return Err(Error::BadByte {
                field: "reserved",
                value: v,
            });
        }
        let secondaries = (0..n)
            .map(|k| get_u64(buf, FIXED_LEN + 8 * k..FIXED_LEN + 8 * k + 8))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(PageRequest {
            framing,
            primary: get_u64(buf, field::PRIMARY)?,
            secondaries,
        })
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; FIXED_LEN + 8 * self.secondaries.len()];
        b[field::FRAMING] = self.framing as u8;
        // The buffer is long enough for every field: no put can fail.
        let _ = put_u64(&mut b, field::PRIMARY, self.primary);
        let _ = put_u64(&mut b, field::COUNT, self.secondaries.len() as u64);
        for (k, s) in self.secondaries.iter().enumerate() {
            let _ = put_u64(&mut b, FIXED_LEN + 8 * k..FIXED_LEN + 8 * k + 8, *s);
        }
        b
    }

    /// Whether a server can send such pages.
    pub fn validate(&self) -> Result<(), Error> {
        if self.secondaries.len() as u64 > MAX_SECONDARIES {
            return Err(Error::Invalid("a page has at most 1000 secondary objects"));
        }
        if std::iter::once(&self.primary)
            .chain(&self.secondaries)
            .any(|&s| s == 0 || s > MAX_OBJECT)
        {
            return Err(Error::Invalid("page objects are 1 byte to 16 MiB"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_round_trip_and_limits() {
        let p = PageRequest {
            framing: Framing::Mstcp,
            primary: 30_000,
            secondaries: vec![10_000, 20_000],
        };
        let b = p.encode();
        assert_eq!(b.len(), 40);
        assert_eq!(b[0], 1);
        assert_eq!(b[8..16], 30_000u64.to_be_bytes());
        assert_eq!(b[16..24], 2u64.to_be_bytes());
        assert_eq!(b[32..40], 20_000u64.to_be_bytes());
        assert_eq!(PageRequest::decode(&b), Ok(p.clone()));
        assert_eq!(
            PageRequest::decode(&b[..39]),
            Err(Error::Truncated { needed: 40, got: 39 })
        );
        let mut bad = b.clone();
        bad[0] = 2;
        assert!(PageRequest::decode(&bad).unwrap_err().to_string().contains("framing"));
        bad[0] = 0;
        bad[3] = 1;
        assert!(PageRequest::decode(&bad).unwrap_err().to_string().contains("reserved"));
        assert!(p.validate().is_ok());
        assert!(PageRequest {
            primary: 0,
            ..p.clone()
        }
        .validate()
        .is_err());
        let mut many = p.encode();
        many[16..24].copy_from_slice(&1001u64.to_be_bytes());
        assert!(PageRequest::count(&many).is_err());
        assert_eq!(Step::decode(&Step::Secondaries.encode()), Ok(Step::Secondaries));
        assert!(Step::decode(&3u64.to_be_bytes()).is_err());
    }
}
