//! Duplication: rate within its 99 % binomial interval; a copy follows its original.
mod common;
use common::*;

use linkem::duplicate::Duplicate;
use linkem::spec::{build_pipeline, DirectionSpec, QueueLimit, RateSpec};

#[test]
fn duplicate_rate_and_copies_follow_originals() {
    let n = 200_000u64;
    for (i, &d) in [0.01, 0.1, 0.5, 1.0].iter().enumerate() {
        let mut s = Duplicate::<()>::new(d, 40 + i as u64);
        // Arrivals spaced 1 µs; each handed out at the arrival time.
        let arrivals: Vec<_> = (0..n).map(|j| (j, 1200, 1_000 * j)).collect();
        let (out, drops) = run_stage(&mut s, &arrivals);
        assert!(drops.is_empty());
        let mut copies = 0u64;
        let mut next_original = 0u64;
        for (j, &(id, copy, due)) in out.iter().enumerate() {
            assert_eq!(due, 1_000 * id, "instantaneous");
            if copy {
                copies += 1;
                let (prev_id, prev_copy, prev_due) = out[j - 1];
                assert_eq!(
                    (prev_id, prev_copy, prev_due),
                    (id, false, due),
                    "copy right after its original"
                );
            } else {
                assert_eq!(id, next_original);
                next_original += 1;
            }
        }
        assert_eq!(next_original, n);
        // Independent Bernoulli(d) per packet: 99 % interval n·d ± 2.576·sqrt(n·d·(1−d)).
        let hw = binomial_halfwidth(n, d);
        assert!((copies as f64 - n as f64 * d).abs() <= hw, "d={d}: {copies} copies");
    }
}

#[test]
fn copy_queues_behind_its_original_at_the_rate_stage() {
    // Every packet duplicated; 10 Mbit/s: the copy leaves one transmission time later.
    let spec = DirectionSpec {
        duplicate: 1.0,
        rate: Some(RateSpec::Constant {
            bits_per_sec: 10_000_000,
        }),
        queue: QueueLimit::Packets(1000),
        delay: 3_000_000,
        ..Default::default()
    };
    let mut p = build_pipeline::<()>(&spec, 1).unwrap();
    let ev = run_pipeline(&mut p, &[(7, 1500, 0), (8, 1500, 100_000_000)]);
    assert_eq!(
        departures(&ev),
        vec![
            (7, false, 1_200_000 + 3_000_000),
            (7, true, 2_400_000 + 3_000_000),
            (8, false, 101_200_000 + 3_000_000),
            (8, true, 102_400_000 + 3_000_000)
        ]
    );
}
