//! msTCP: several ordered sub-streams multiplexed over one byte stream received
//! unordered (Minion's msTCP, see docs/agent.md, "Records"). Each sub-stream's data travels
//! in *chunks*, one COBS record each ([`crate::frame`]); a chunk starts with a header
//! naming its sub-stream and its place in it. The receiver takes byte ranges in any
//! order ([`crate::Assembler`]) and hands each sub-stream's chunks over in that
//! sub-stream's order, each exactly once, as soon as the chunk and every earlier chunk
//! *of the same sub-stream* are there: a gap in one sub-stream never holds up another.
//!
//! Chunk header (big-endian), then the payload:
//!
//! | bytes  | field |
//! |--------|-------|
//! | 0..4   | `stream`: the sub-stream's id |
//! | 4..12  | `seq`: the chunk's number within its sub-stream, from 0 |
//! | 12     | `flags`: bit 0 = the sub-stream's last chunk (FIN); other bits 0 |
//!
//! No I/O: [`Sender`] turns writes into framed chunks for the byte stream, [`Receiver`]
//! turns byte ranges into in-order sub-stream data.

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use crate::assembler::Assembler;
use crate::frame;

/// Chunk header length in bytes.
pub const HEADER_LEN: usize = 13;
const FLAG_FIN: u8 = 1;

/// A chunk's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChunkHeader {
    pub stream: u32,
    pub seq: u64,
    /// The sub-stream's last chunk.
    pub fin: bool,
}

/// Why a decoded record is no chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChunkError {
    /// Shorter than the header.
    Short { len: usize },
    /// Flag bits other than FIN set.
    Flags(u8),
}

impl fmt::Display for ChunkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChunkError::Short { len } => write!(f, "chunk of {len} bytes is shorter than its {HEADER_LEN}-byte header"),
            ChunkError::Flags(v) => write!(f, "chunk flags {v:#04x}: only bit 0 (FIN) is defined"),
        }
    }
}

impl std::error::Error for ChunkError {}

impl ChunkHeader {
    /// The record `header ‖ payload` (unframed).
    pub fn chunk(&self, payload: &[u8]) -> Vec<u8> {
        let mut c = Vec::with_capacity(HEADER_LEN + payload.len());
        c.extend_from_slice(&self.stream.to_be_bytes());
        c.extend_from_slice(&self.seq.to_be_bytes());
        c.push(if self.fin { FLAG_FIN } else { 0 });
        c.extend_from_slice(payload);
        c
    }

    /// The header and payload of a decoded record.
    pub fn parse(record: &[u8]) -> Result<(ChunkHeader, &[u8]), ChunkError> {
        if record.len() < HEADER_LEN {
            return Err(ChunkError::Short { len: record.len() });
        }
        let flags = record[12];
        if flags & !FLAG_FIN != 0 {
            return Err(ChunkError::Flags(flags));
        }
        let mut stream = [0u8; 4];
        stream.copy_from_slice(&record[0..4]);
        let mut seq = [0u8; 8];
        seq.copy_from_slice(&record[4..12]);
        Ok((
            ChunkHeader {
                stream: u32::from_be_bytes(stream),
                seq: u64::from_be_bytes(seq),
                fin: flags & FLAG_FIN != 0,
            },
            &record[HEADER_LEN..],
        ))
    }
}

/// The sending side: numbers each sub-stream's chunks and frames them.
#[derive(Debug)]
pub struct Sender {
    max_payload: usize,
    next_seq: HashMap<u32, u64>,
}

impl Sender {
    /// Chunks carry at most `max_payload` bytes of data (at least 1).
    pub fn new(max_payload: usize) -> Sender {
        Sender {
            max_payload: max_payload.max(1),
            next_seq: HashMap::new(),
        }
    }

    /// The framed chunks (`0x00 ‖ COBS(header ‖ payload) ‖ 0x00` each) that carry `data`
    /// on `stream`, in order; with `fin` the last one ends the sub-stream. Empty data with
    /// `fin` gives one empty chunk; empty data without it gives nothing.
    pub fn write(&mut self, stream: u32, data: &[u8], fin: bool) -> Vec<Vec<u8>> {
        let mut pieces: Vec<&[u8]> = data.chunks(self.max_payload).collect();
        if pieces.is_empty() && fin {
            pieces.push(&[]);
        }
        let n = pieces.len();
        let next = self.next_seq.entry(stream).or_insert(0);
        pieces
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                let h = ChunkHeader {
                    stream,
                    seq: *next,
                    fin: fin && i + 1 == n,
                };
                *next += 1;
                frame::frame(&h.chunk(p))
            })
            .collect()
    }
}

/// Data handed over on one sub-stream, in that sub-stream's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamData {
    pub stream: u32,
    pub seq: u64,
    pub fin: bool,
    pub data: Vec<u8>,
}

#[derive(Debug, Default)]
struct SubStream {
    next: u64,
    /// Chunks past a gap, by seq.
    waiting: BTreeMap<u64, (bool, Vec<u8>)>,
    finished: bool,
}

/// The receiving side: byte ranges in, each sub-stream's chunks out in its own order.
#[derive(Debug, Default)]
pub struct Receiver {
    assembler: Assembler,
    streams: HashMap<u32, SubStream>,
    bad_chunks: u64,
    duplicates: u64,
}

impl Receiver {
    pub fn new() -> Receiver {
        Receiver::default()
    }

    /// Adds the stream bytes at `offset` and returns the sub-stream data they make
    /// deliverable: per sub-stream in order, never past a gap of that sub-stream.
    pub fn insert(&mut self, offset: u64, bytes: &[u8]) -> Vec<StreamData> {
        let mut out = Vec::new();
        for d in self.assembler.insert(offset, bytes) {
            let (h, payload) = match ChunkHeader::parse(&d.record) {
                Ok(x) => x,
                Err(_) => {
                    self.bad_chunks += 1;
                    continue;
                }
            };
            let s = self.streams.entry(h.stream).or_default();
            if h.seq < s.next || s.waiting.contains_key(&h.seq) {
                self.duplicates += 1;
                continue;
            }
            s.waiting.insert(h.seq, (h.fin, payload.to_vec()));
            while let Some((fin, data)) = s.waiting.remove(&s.next) {
                out.push(StreamData {
                    stream: h.stream,
                    seq: s.next,
                    fin,
                    data,
                });
                s.next += 1;
                s.finished |= fin;
            }
        }
        out
    }

    /// Chunks handed over so far on `stream`.
    pub fn delivered(&self, stream: u32) -> u64 {
        self.streams.get(&stream).map_or(0, |s| s.next)
    }

    /// Whether `stream`'s last chunk (FIN) was handed over.
    pub fn finished(&self, stream: u32) -> bool {
        self.streams.get(&stream).is_some_and(|s| s.finished)
    }

    /// Chunks held back behind a gap of their own sub-stream.
    pub fn waiting(&self) -> usize {
        self.streams.values().map(|s| s.waiting.len()).sum()
    }

    /// Records that were no chunk (too short, unknown flags), plus the assembler's
    /// malformed frames: skipped.
    pub fn malformed(&self) -> u64 {
        self.bad_chunks + self.assembler.malformed()
    }

    /// Chunks that came twice with the same (stream, seq) (a sender bug or forgery): the
    /// first copy is kept.
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_layout_and_errors() {
        let h = ChunkHeader {
            stream: 0x0102_0304,
            seq: 5,
            fin: true,
        };
        let c = h.chunk(b"xy");
        assert_eq!(c, [1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 5, 1, b'x', b'y']);
        assert_eq!(ChunkHeader::parse(&c), Ok((h, &b"xy"[..])));
        assert_eq!(ChunkHeader::parse(&c[..12]), Err(ChunkError::Short { len: 12 }));
        let mut bad = c.clone();
        bad[12] = 3;
        assert_eq!(ChunkHeader::parse(&bad), Err(ChunkError::Flags(3)));
    }

    #[test]
    fn a_gap_in_one_sub_stream_does_not_hold_up_another() {
        let mut tx = Sender::new(4);
        let a = tx.write(1, b"aaaabbbb", false); // two chunks on sub-stream 1
        let b = tx.write(2, b"cc", true); // one on sub-stream 2
        let stream: Vec<u8> = [&a[0], &a[1], &b[0]].into_iter().flatten().copied().collect();
        let (a0, a1) = (a[0].len(), a[1].len());
        let mut rx = Receiver::new();
        // Sub-stream 1's first chunk is lost; its second and sub-stream 2's arrive.
        let got = rx.insert(a0 as u64, &stream[a0..]);
        assert_eq!(
            got,
            vec![StreamData {
                stream: 2,
                seq: 0,
                fin: true,
                data: b"cc".to_vec()
            }]
        );
        assert_eq!((rx.delivered(1), rx.waiting(), rx.finished(2)), (0, 1, true));
        // The repair releases both of sub-stream 1's chunks, in order.
        let got = rx.insert(0, &stream[..a0]);
        let data: Vec<_> = got.iter().map(|d| (d.stream, d.seq, d.data.clone())).collect();
        assert_eq!(data, vec![(1, 0, b"aaaa".to_vec()), (1, 1, b"bbbb".to_vec())]);
        assert_eq!((rx.delivered(1), rx.waiting(), a1 > 0), (2, 0, true));
    }

    #[test]
    fn bad_chunks_and_duplicates_are_counted_and_skipped() {
        let mut rx = Receiver::new();
        let short = frame::frame(&[1, 2, 3]);
        let mut stream = short.clone();
        let c = frame::frame(
            &ChunkHeader {
                stream: 7,
                seq: 0,
                fin: false,
            }
            .chunk(b"x"),
        );
        stream.extend_from_slice(&c);
        stream.extend_from_slice(&c); // the same chunk again, at a new offset
        let got = rx.insert(0, &stream);
        assert_eq!(got.len(), 1);
        assert_eq!((rx.malformed(), rx.duplicates()), (1, 1));
        assert!(Sender::new(10).write(3, b"", false).is_empty());
        assert_eq!(Sender::new(10).write(3, b"", true).len(), 1);
    }
}
