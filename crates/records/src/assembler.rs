//! Records from byte ranges that arrive in any order.
//!
//! The receiver knows the stream offset of every range it is given (a TCP segment's
//! sequence number, a QUIC stream frame's offset) but not the order they come in, and the
//! same bytes may come twice (a retransmission, or the same byte from two sources: a
//! packet tap and the socket). A record is complete when the bytes from its opening
//! delimiter to its closing one are all present; it is handed over then, once.
//!
//! State is a set of disjoint *chunks*, each a maximal run of received offsets. A chunk
//! keeps only what a later range can still complete: its bytes up to and including its
//! first delimiter (a record whose start is in the hole before the chunk) and from its
//! last delimiter on (a record whose end is in the hole after it). Every record between
//! its first and last delimiter was handed over (or counted malformed) when the chunk
//! formed, and its bytes are dropped, so memory stays about one record per hole. A range
//! only ever adds offsets not yet received, and every record a new range completes
//! contains new offsets: a record is never handed over twice, whatever the ranges.
//!
//! Choices: when ranges overlap, the bytes that arrived first are kept (the later copy is
//! not compared); the stream's first byte is taken as a delimiter's place only if it is a
//! delimiter (a sender starts the stream with one, see [`crate::frame`]). Limit: a run of
//! bytes without a delimiter is kept whole until one arrives, so a peer that never sends
//! one makes the receiver hold everything it sends (the agent's records are at most
//! 16 MiB, but the assembler does not enforce a bound).

use std::collections::BTreeMap;

use crate::frame::{self, DELIMITER};

/// A record handed over by [`Assembler::insert`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivered {
    /// Stream offset of the opening delimiter.
    pub start: u64,
    /// Stream offset of the closing delimiter: the frame is `start..=end`.
    pub end: u64,
    /// The decoded record.
    pub record: Vec<u8>,
}

impl Delivered {
    /// Bytes the record occupied in the stream, both delimiters included.
    pub fn wire_len(&self) -> u64 {
        self.end - self.start + 1
    }
}

/// A maximal run of received offsets `start..end` (the map key is `start`).
#[derive(Debug)]
struct Chunk {
    end: u64,
    /// No delimiter in the chunk: every byte. Otherwise the bytes up to and including
    /// the first delimiter.
    head: Vec<u8>,
    /// From the last delimiter (included) to the end; None if the chunk has no delimiter.
    tail: Option<Vec<u8>>,
}

impl Chunk {
    /// The bytes a range adjacent on the right continues: from the last delimiter on, or
    /// all of them.
    fn right_edge(&self) -> &[u8] {
        self.tail.as_deref().unwrap_or(&self.head)
    }
}

#[derive(Debug, Default)]
pub struct Assembler {
    chunks: BTreeMap<u64, Chunk>,
    delivered: u64,
    malformed: u64,
    bytes_received: u64,
}

impl Assembler {
    pub fn new() -> Assembler {
        Assembler::default()
    }

    /// Adds the bytes at stream offsets `offset..offset + data.len()` and returns the
    /// records they complete, in stream order. Offsets already received are ignored; bytes
    /// past offset `u64::MAX` are dropped.
    pub fn insert(&mut self, offset: u64, data: &[u8]) -> Vec<Delivered> {
        let mut out = Vec::new();
        let room = u64::MAX - offset;
        let data = &data[..data.len().min(usize::try_from(room).unwrap_or(usize::MAX))];
        let end = offset + data.len() as u64;
        let mut pos = offset;
        while pos < end {
            // Skip what a chunk already covers.
            if let Some((_, c)) = self.chunks.range(..=pos).next_back() {
                if c.end > pos {
                    pos = c.end;
                    continue;
                }
            }
            let gap_end = match self.chunks.range(pos + 1..).next() {
                Some((&next, _)) => next.min(end),
                None => end,
            };
            let from = (pos - offset) as usize;
            let to = (gap_end - offset) as usize;
            self.fill(pos, &data[from..to], &mut out);
            pos = gap_end;
        }
        out
    }

    /// Records handed over so far.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Frames (runs between two delimiters) that were not a COBS encoding, so skipped.
    pub fn malformed(&self) -> u64 {
        self.malformed
    }

    /// Distinct stream bytes received so far.
    pub fn bytes_received(&self) -> u64 {
        self.bytes_received
    }

    /// Runs of received offsets separated by holes.
    pub fn chunks(&self) -> usize {
        self.chunks.len()
    }

    /// Bytes held for records not yet complete.
    pub fn buffered(&self) -> usize {
        self.chunks
            .values()
            .map(|c| c.head.len() + c.tail.as_ref().map_or(0, Vec::len))
            .sum()
    }

    /// The length of the contiguous run of received bytes from offset 0.
    pub fn contiguous(&self) -> u64 {
        match self.chunks.get(&0) {
            Some(c) => c.end,
            None => 0,
        }
    }

    /// Fills the hole part `at..at + g.len()` (non-empty, no offset of it received) and
    /// joins it with the chunks that end where it starts and start where it ends.
    fn fill(&mut self, at: u64, g: &[u8], out: &mut Vec<Delivered>) {
        let g_end = at + g.len() as u64;
        self.bytes_received += g.len() as u64;
        let left_key = self
            .chunks
            .range(..at)
            .next_back()
            .filter(|(_, c)| c.end == at)
            .map(|(&k, _)| k);
        let left = left_key.and_then(|k| self.chunks.remove(&k).map(|c| (k, c)));
        let right = self.chunks.remove(&g_end);

        // The bytes in which new records can be: the left chunk from its last delimiter,
        // the new bytes, the right chunk up to its first delimiter.
        let (start, seq_start, mut seq) = match &left {
            Some((k, c)) => {
                let edge = c.right_edge();
                (*k, at - edge.len() as u64, edge.to_vec())
            }
            None => (at, at, Vec::new()),
        };
        seq.extend_from_slice(g);
        if let Some(r) = &right {
            seq.extend_from_slice(&r.head);
        }
        self.scan(seq_start, &seq, out);

        let head = match left {
            Some((
                _,
                Chunk {
                    head, tail: Some(_), ..
                },
            )) => head,
            _ => match seq.iter().position(|&b| b == DELIMITER) {
                Some(z) => seq[..=z].to_vec(),
                None => seq.clone(),
            },
        };
        let (end, tail) = match right {
            Some(Chunk { end, tail: Some(t), .. }) => (end, Some(t)),
            Some(Chunk { end, .. }) => (
                end,
                seq.iter().rposition(|&b| b == DELIMITER).map(|z| seq[z..].to_vec()),
            ),
            None => (
                g_end,
                seq.iter().rposition(|&b| b == DELIMITER).map(|z| seq[z..].to_vec()),
            ),
        };
        self.chunks.insert(start, Chunk { end, head, tail });
    }

    /// Hands over every record between two delimiters of `seq` (stream offset `seq_start`).
    fn scan(&mut self, seq_start: u64, seq: &[u8], out: &mut Vec<Delivered>) {
        let mut open: Option<usize> = None;
        for (i, &b) in seq.iter().enumerate() {
            if b != DELIMITER {
                continue;
            }
            if let Some(a) = open {
                if i > a + 1 {
                    match frame::unframe(&seq[a + 1..i]) {
                        Ok(record) => {
                            self.delivered += 1;
                            out.push(Delivered {
                                start: seq_start + a as u64,
                                end: seq_start + i as u64,
                                record,
                            });
                        }
                        Err(_) => self.malformed += 1,
                    }
                }
            }
            open = Some(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::frame;

    fn stream(records: &[&[u8]]) -> Vec<u8> {
        records.iter().flat_map(|r| frame(r)).collect()
    }

    fn records(d: &[Delivered]) -> Vec<Vec<u8>> {
        d.iter().map(|x| x.record.clone()).collect()
    }

    #[test]
    fn in_order_stream_delivers_each_record_when_its_closing_delimiter_arrives() {
        let s = stream(&[b"one", b"two"]); // 00 04 o n e 00 | 00 04 t w o 00
        let mut a = Assembler::new();
        assert!(a.insert(0, &s[..5]).is_empty());
        let d = a.insert(5, &s[5..6]);
        assert_eq!(records(&d), [b"one".to_vec()]);
        assert_eq!((d[0].start, d[0].end, d[0].wire_len()), (0, 5, 6));
        assert_eq!(records(&a.insert(6, &s[6..])), [b"two".to_vec()]);
        assert_eq!(a.delivered(), 2);
        assert_eq!(a.chunks(), 1);
        assert_eq!(a.contiguous(), 12);
    }

    #[test]
    fn lost_middle_segment_leaves_records_before_and_after() {
        let s = stream(&[b"aa", b"bb", b"cc"]); // 5 bytes each
        let mut a = Assembler::new();
        assert_eq!(records(&a.insert(0, &s[..5])), [b"aa".to_vec()]);
        assert_eq!(records(&a.insert(10, &s[10..])), [b"cc".to_vec()]);
        assert_eq!(a.chunks(), 2);
        // The retransmission of the middle, with the neighbours overlapping.
        assert_eq!(records(&a.insert(3, &s[3..12])), [b"bb".to_vec()]);
        assert_eq!(a.delivered(), 3);
        assert_eq!(a.chunks(), 1);
        // Everything again, in order: nothing twice.
        assert!(a.insert(0, &s).is_empty());
        assert_eq!(a.delivered(), 3);
    }

    #[test]
    fn record_split_across_segments_and_first_segment_lost() {
        let s = stream(&[b"first", b"second", b"third"]);
        let mut a = Assembler::new();
        // Frames: "first" 0..8, "second" 8..17, "third" 17..25. Bytes 0..7 are late (the
        // first segment lost); "second" arrives in three pieces, backwards.
        assert!(a.insert(12, &s[12..17]).is_empty());
        assert!(a.insert(9, &s[9..12]).is_empty());
        assert_eq!(records(&a.insert(7, &s[7..9])), [b"second".to_vec()]);
        assert_eq!(records(&a.insert(17, &s[17..])), [b"third".to_vec()]);
        assert_eq!(records(&a.insert(0, &s[0..4])), Vec::<Vec<u8>>::new());
        assert_eq!(records(&a.insert(4, &s[4..7])), [b"first".to_vec()]);
        assert_eq!(a.malformed(), 0);
        assert_eq!(a.bytes_received(), s.len() as u64);
        assert_eq!(a.buffered(), 2, "only the outer delimiters are kept");
    }

    #[test]
    fn malformed_frames_are_counted_and_skipped() {
        let mut s = stream(&[b"ok"]);
        s.extend_from_slice(&[0x00, 0x07, 0x41, 0x00]); // code 7 runs past the end
        s.extend_from_slice(&stream(&[b"fine"]));
        let mut a = Assembler::new();
        let d = a.insert(0, &s);
        assert_eq!(records(&d), [b"ok".to_vec(), b"fine".to_vec()]);
        assert_eq!(a.malformed(), 1);
        assert!(a.insert(0, &s).is_empty());
        assert_eq!(a.malformed(), 1, "a malformed frame is counted once");
    }

    #[test]
    fn offsets_near_the_end_of_the_stream_space_do_not_overflow() {
        let mut a = Assembler::new();
        assert!(a.insert(u64::MAX - 2, &[0, 2, 9, 0, 5]).is_empty());
        assert_eq!(a.bytes_received(), 2);
        assert!(a.insert(u64::MAX, &[1, 2, 3]).is_empty());
        assert!(a.insert(7, &[]).is_empty());
    }
}
