//! The send buffer: what the application wrote and the peer has not acknowledged, by
//! stream offset. A bulk sender's data are zeros; they are kept as a count, not as
//! bytes, and read back as zeros, so a large buffer of them costs no memory.

use std::collections::VecDeque;

#[derive(Debug, Clone)]
enum Chunk {
    Bytes(Vec<u8>),
    Zeros(u64),
}

impl Chunk {
    fn len(&self) -> u64 {
        match self {
            Chunk::Bytes(b) => b.len() as u64,
            Chunk::Zeros(n) => *n,
        }
    }
}

#[derive(Debug, Clone)]
pub struct SendBuffer {
    /// (stream offset of its first byte, chunk), in order.
    chunks: VecDeque<(u64, Chunk)>,
    /// Offset of the first byte still held.
    start: u64,
    /// Offset after the last byte written.
    end: u64,
    capacity: u64,
}

impl SendBuffer {
    pub fn new(capacity: u64) -> SendBuffer {
        SendBuffer {
            chunks: VecDeque::new(),
            start: 0,
            end: 0,
            capacity,
        }
    }

    /// Offset after the last byte written.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Room left for the application.
    pub fn room(&self) -> u64 {
        self.capacity.saturating_sub(self.end - self.start)
    }

    /// Appends what fits of `data`; returns how much.
    pub fn write(&mut self, data: &[u8]) -> usize {
        let n = (data.len() as u64).min(self.room()) as usize;
        if n > 0 {
            self.chunks.push_back((self.end, Chunk::Bytes(data[..n].to_vec())));
            self.end += n as u64;
        }
        n
    }

    /// Appends up to `n` zero bytes; returns how many fitted.
    pub fn write_zeros(&mut self, n: u64) -> u64 {
        let n = n.min(self.room());
        if n == 0 {
            return 0;
        }
        match self.chunks.back_mut() {
            Some((_, Chunk::Zeros(z))) => *z += n,
            _ => self.chunks.push_back((self.end, Chunk::Zeros(n))),
        }
        self.end += n;
        n
    }

    /// The bytes at [from, from + len) (within what is held).
    pub fn read(&self, from: u64, len: usize) -> Vec<u8> {
        let mut out = vec![0u8; len];
        let to = from + len as u64;
        let first = self.chunks.partition_point(|(at, c)| at + c.len() <= from);
        for (at, c) in self.chunks.range(first..) {
            if *at >= to {
                break;
            }
            if let Chunk::Bytes(b) = c {
                let lo = from.max(*at);
                let hi = to.min(at + c.len());
                out[(lo - from) as usize..(hi - from) as usize]
                    .copy_from_slice(&b[(lo - at) as usize..(hi - at) as usize]);
            }
        }
        out
    }

    /// Forgets everything before `offset` (acknowledged).
    pub fn release(&mut self, offset: u64) {
        let offset = offset.min(self.end);
        while let Some((at, c)) = self.chunks.front_mut() {
            let len = c.len();
            if *at + len <= offset {
                self.chunks.pop_front();
                continue;
            }
            if *at < offset {
                let cut = offset - *at;
                match c {
                    Chunk::Bytes(b) => {
                        b.drain(..cut as usize);
                    }
                    Chunk::Zeros(z) => *z -= cut,
                }
                *at = offset;
            }
            break;
        }
        self.start = self.start.max(offset);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_then_zeros_read_back_across_chunks_and_release() {
        let mut b = SendBuffer::new(100);
        assert_eq!(b.write(&[1, 2, 3, 4]), 4);
        assert_eq!(b.write_zeros(200), 96);
        assert_eq!(b.room(), 0);
        assert_eq!(b.read(2, 4), vec![3, 4, 0, 0]);
        b.release(3);
        assert_eq!(b.room(), 3);
        assert_eq!(b.read(3, 2), vec![4, 0]);
        assert_eq!(b.write(&[9]), 1);
        assert_eq!(b.read(99, 2), vec![0, 9]);
    }
}
