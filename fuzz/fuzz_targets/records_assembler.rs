//! The record assembler on arbitrary ranges, as a receiver meets them from a packet tap:
//! any offsets, overlaps, repeats and bytes that are no valid frame. It must never panic,
//! never hand over a record twice (two records with the same opening delimiter), hand over
//! only records whose frame really is at that place in the bytes it was given, and count
//! every distinct offset once.
//!
//! Input: a list of ranges, each a 2-byte big-endian offset, a 1-byte length, and that
//! many bytes (fewer at the end of the input).
#![no_main]

use std::collections::HashSet;

use libfuzzer_sys::fuzz_target;
use records::frame;
use records::Assembler;

fuzz_target!(|data: &[u8]| {
    let mut a = Assembler::new();
    let mut seen = HashSet::new();
    // The first copy of every offset: what the assembler keeps.
    let mut first = vec![None::<u8>; 1 << 17];
    let mut rest = data;
    while rest.len() >= 3 {
        let offset = u16::from_be_bytes([rest[0], rest[1]]) as u64;
        let len = (rest[2] as usize).min(rest.len() - 3);
        let bytes = &rest[3..3 + len];
        rest = &rest[3 + len..];
        for (i, &b) in bytes.iter().enumerate() {
            first[offset as usize + i].get_or_insert(b);
        }
        for d in a.insert(offset, bytes) {
            assert!(seen.insert(d.start), "record at {} handed over twice", d.start);
            assert!(d.end > d.start + 1);
            let inner: Vec<u8> = (d.start + 1..d.end)
                .map(|o| first[o as usize].expect("a byte never given"))
                .collect();
            assert_eq!(first[d.start as usize], Some(0));
            assert_eq!(first[d.end as usize], Some(0));
            assert_eq!(frame::unframe(&inner).as_ref(), Ok(&d.record));
        }
    }
    assert_eq!(a.bytes_received(), first.iter().filter(|b| b.is_some()).count() as u64);
    assert_eq!(a.delivered(), seen.len() as u64);
    // Offsets near the end of the stream space.
    let _ = a.insert(u64::MAX - 1, data);
});
