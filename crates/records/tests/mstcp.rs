//! Properties of msTCP ([`records::mstcp`]): whatever order the byte ranges of the
//! multiplexed stream arrive in (re-segmented, duplicated, some held back as if lost and
//! repaired later), every sub-stream's data is handed over in that sub-stream's order,
//! exactly once, and as soon as that sub-stream's own chunks up to it are complete: never
//! later because another sub-stream has a gap.

use std::collections::HashMap;

use proptest::prelude::*;
use records::mstcp::{Receiver, Sender, StreamData};

/// Writes: (sub-stream 0..4, data 0..300 bytes, fin).
fn writes() -> impl Strategy<Value = Vec<(u32, Vec<u8>)>> {
    prop::collection::vec(
        (
            0u32..4,
            prop_oneof![
                prop::collection::vec(any::<u8>(), 0..300),
                prop::collection::vec(prop_oneof![Just(0u8), any::<u8>()], 0..40),
            ],
        ),
        1..25,
    )
}

struct Sent {
    /// The multiplexed byte stream.
    bytes: Vec<u8>,
    /// Each chunk: (stream, seq, first byte, last byte) of its frame.
    chunks: Vec<(u32, u64, usize, usize)>,
    /// What each sub-stream carried, in order.
    data: HashMap<u32, Vec<u8>>,
}

fn send(ws: &[(u32, Vec<u8>)], max_payload: usize) -> Sent {
    let mut tx = Sender::new(max_payload);
    let mut s = Sent {
        bytes: Vec::new(),
        chunks: Vec::new(),
        data: HashMap::new(),
    };
    let mut seq: HashMap<u32, u64> = HashMap::new();
    for (stream, d) in ws {
        for f in tx.write(*stream, d, false) {
            let n = seq.entry(*stream).or_insert(0);
            s.chunks.push((*stream, *n, s.bytes.len(), s.bytes.len() + f.len() - 1));
            *n += 1;
            s.bytes.extend_from_slice(&f);
        }
        s.data.entry(*stream).or_default().extend_from_slice(d);
    }
    s
}

/// Byte ranges covering the stream (cut at `cuts`), shuffled, plus duplicates; the ranges
/// chosen by `held` are moved to the end (lost, then repaired).
fn arrivals(len: usize) -> impl Strategy<Value = Vec<(usize, usize)>> {
    let cuts = prop::collection::vec(0..=len, 0..40);
    let extra = prop::collection::vec((0..=len, 0..=len), 0..6);
    let held = prop::collection::vec(any::<bool>(), 42);
    (cuts, extra, held, any::<u64>()).prop_map(move |(mut cuts, extra, held, seed)| {
        cuts.push(0);
        cuts.push(len);
        cuts.sort_unstable();
        cuts.dedup();
        let mut first: Vec<(usize, usize)> = Vec::new();
        let mut later: Vec<(usize, usize)> = Vec::new();
        for (i, w) in cuts.windows(2).enumerate() {
            if held[i % held.len()] {
                later.push((w[0], w[1]));
            } else {
                first.push((w[0], w[1]));
            }
        }
        first.extend(extra.into_iter().map(|(a, b)| (a.min(b), a.max(b))));
        // A cheap deterministic shuffle of what arrives first.
        let mut x = seed | 1;
        for i in (1..first.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            first.swap(i, (x % (i as u64 + 1)) as usize);
        }
        first.extend(later);
        first
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn each_sub_stream_in_order_exactly_once_never_waiting_on_another(
        (ws, max_payload, order) in (writes(), 1usize..120).prop_flat_map(|(ws, m)| {
            let len = send(&ws, m).bytes.len();
            (Just(ws), Just(m), arrivals(len))
        })
    ) {
        let sent = send(&ws, max_payload);
        let mut rx = Receiver::new();
        let mut have = vec![false; sent.bytes.len()];
        let mut got: HashMap<u32, Vec<StreamData>> = HashMap::new();
        for (a, b) in order {
            for d in rx.insert(a as u64, &sent.bytes[a..b]) {
                got.entry(d.stream).or_default().push(d);
            }
            have[a..b].iter_mut().for_each(|h| *h = true);
            // As soon as possible, and only then: each sub-stream has handed over exactly
            // its longest prefix of chunks whose frames are complete, whatever the others.
            let mut expect: HashMap<u32, u64> = HashMap::new();
            let mut blocked: HashMap<u32, bool> = HashMap::new();
            for &(s, _, first, last) in &sent.chunks {
                let b = blocked.entry(s).or_insert(false);
                if !*b && have[first..=last].iter().all(|&h| h) {
                    *expect.entry(s).or_insert(0) += 1;
                } else {
                    *b = true;
                }
            }
            for s in 0u32..4 {
                prop_assert_eq!(rx.delivered(s), expect.get(&s).copied().unwrap_or(0), "sub-stream {}", s);
            }
        }
        // In order, exactly once, the data as written.
        for (s, data) in &sent.data {
            let ds = got.remove(s).unwrap_or_default();
            let seqs: Vec<u64> = ds.iter().map(|d| d.seq).collect();
            prop_assert_eq!(seqs, (0..ds.len() as u64).collect::<Vec<_>>());
            let joined: Vec<u8> = ds.into_iter().flat_map(|d| d.data).collect();
            prop_assert_eq!(&joined, data);
        }
        prop_assert_eq!(rx.waiting(), 0);
        prop_assert_eq!((rx.malformed(), rx.duplicates()), (0, 0));
    }
}
