//! Properties of COBS, framing and the assembler on random records and random ways of
//! cutting, repeating and reordering the stream.

use proptest::prelude::*;
use records::cobs;
use records::frame::{self, FRAMING};
use records::{Assembler, Delivered};

/// Records of 0 … 600 bytes, biased towards zeros and long non-zero runs (the cases that
/// decide COBS's block boundaries).
fn record() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..600),
        prop::collection::vec(prop_oneof![Just(0u8), Just(1u8), any::<u8>()], 0..80),
        prop::collection::vec(1u8..=255, 200..600),
    ]
}

/// Cuts `len` bytes into ranges: a segmentation covering everything, plus some extra
/// ranges (duplicates, overlaps), all shuffled.
fn ranges(len: usize) -> impl Strategy<Value = Vec<(usize, usize)>> {
    let cuts = prop::collection::vec(0..=len, 0..40);
    let extra = prop::collection::vec((0..=len, 0..=len), 0..10);
    (cuts, extra)
        .prop_map(move |(mut cuts, extra)| {
            cuts.push(0);
            cuts.push(len);
            cuts.sort_unstable();
            cuts.dedup();
            let mut r: Vec<(usize, usize)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
            r.extend(extra.into_iter().map(|(a, b)| (a.min(b), a.max(b))));
            r
        })
        .prop_shuffle()
}

fn stream_of(records: &[Vec<u8>]) -> Vec<u8> {
    records.iter().flat_map(|r| frame::frame(r)).collect()
}

/// (opening, closing) delimiter offsets of each record in the stream.
fn frame_bounds(records: &[Vec<u8>]) -> Vec<(usize, usize)> {
    let mut at = 0;
    records
        .iter()
        .map(|r| {
            let len = frame::frame(r).len();
            let b = (at, at + len - 1);
            at += len;
            b
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn cobs_round_trips_without_zeros_within_the_overhead_bound(data in record()) {
        let enc = cobs::encode(&data);
        prop_assert!(!enc.contains(&0));
        prop_assert_eq!(cobs::decode(&enc), Ok(data.clone()));
        // Worst case: one byte per 254 (at least one), plus the two delimiters.
        let bound = data.len() + data.len().div_ceil(254).max(1);
        prop_assert!(enc.len() <= bound, "{} > {}", enc.len(), bound);
        prop_assert!(frame::frame(&data).len() <= bound + FRAMING);
    }

    #[test]
    fn non_zero_data_meets_the_worst_case_exactly(len in 1usize..2000, fill in 1u8..=255) {
        let enc = cobs::encode(&vec![fill; len]);
        prop_assert_eq!(enc.len(), len + len.div_ceil(254));
    }

    #[test]
    fn decoding_arbitrary_bytes_never_panics(data in prop::collection::vec(any::<u8>(), 0..600)) {
        if let Ok(d) = cobs::decode(&data) {
            // Accepted input without zeros re-encodes to itself unless it had a redundant
            // empty block after a full one; either way it round-trips through encode.
            prop_assert_eq!(cobs::decode(&cobs::encode(&d)), Ok(d));
        }
    }

    #[test]
    fn any_permutation_and_resegmentation_delivers_every_record_once_as_soon_as_complete(
        (records, cuts) in prop::collection::vec(record(), 1..12)
            .prop_flat_map(|rs| { let len = stream_of(&rs).len(); (Just(rs), ranges(len)) })
    ) {
        let stream = stream_of(&records);
        let bounds = frame_bounds(&records);
        let mut have = vec![false; stream.len()];
        let mut got: Vec<Option<Delivered>> = vec![None; records.len()];
        let mut a = Assembler::new();
        for (s, e) in cuts {
            let out = a.insert(s as u64, &stream[s..e]);
            have[s..e].iter_mut().for_each(|h| *h = true);
            for d in out {
                let i = bounds.iter().position(|&(o, c)| o as u64 == d.start && c as u64 == d.end);
                prop_assert!(i.is_some(), "a record at {}..={} that was never sent", d.start, d.end);
                let i = i.unwrap();
                prop_assert!(got[i].is_none(), "record {} delivered twice", i);
                prop_assert_eq!(&d.record, &records[i]);
                got[i] = Some(d);
            }
            // As soon as complete: every record whose bytes are all here was delivered.
            for (i, &(o, c)) in bounds.iter().enumerate() {
                let complete = have[o..=c].iter().all(|&h| h);
                prop_assert_eq!(complete, got[i].is_some(), "record {} complete={}", i, complete);
            }
        }
        prop_assert!(got.iter().all(Option::is_some));
        prop_assert_eq!(a.delivered(), records.len() as u64);
        prop_assert_eq!(a.malformed(), 0);
        prop_assert_eq!(a.bytes_received(), stream.len() as u64);
        prop_assert_eq!(a.chunks(), 1);
        prop_assert_eq!(a.buffered(), 2, "a finished stream keeps only its outer delimiters");
    }

    #[test]
    fn malformed_frames_are_counted_once_and_the_rest_delivered(
        records in prop::collection::vec(record(), 1..6),
        bad_at in 0usize..6,
        code in 2u8..=255,
        order in any::<u64>(),
    ) {
        // A frame whose code byte runs past its end: 0x00, code, (code - 2) bytes, 0x00.
        let mut stream = Vec::new();
        let mut bad = 0;
        for (i, r) in records.iter().enumerate() {
            if i == bad_at.min(records.len() - 1) {
                stream.push(0);
                stream.push(code);
                stream.extend(std::iter::repeat_n(0x5a, code as usize - 2));
                stream.push(0);
                bad += 1;
            }
            stream.extend(frame::frame(r));
        }
        // Feed in 7-byte pieces in a shuffled order.
        let mut pieces: Vec<usize> = (0..stream.len()).step_by(7).collect();
        let n = pieces.len();
        for i in (1..n).rev() {
            pieces.swap(i, (order as usize).wrapping_mul(i + 31) % (i + 1));
        }
        let mut a = Assembler::new();
        let mut delivered = Vec::new();
        for s in pieces {
            let e = (s + 7).min(stream.len());
            delivered.extend(a.insert(s as u64, &stream[s..e]));
            delivered.extend(a.insert(s as u64, &stream[s..e]));
        }
        delivered.sort_by_key(|d| d.start);
        let got: Vec<Vec<u8>> = delivered.into_iter().map(|d| d.record).collect();
        prop_assert_eq!(got, records);
        prop_assert_eq!(a.malformed(), bad);
    }
}
