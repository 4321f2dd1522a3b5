//! Constant-rate link and its drop-tail queue, in virtual time, exact.
mod common;
use common::*;

use linkem::rate::RateQueue;
use linkem::spec::{build_pipeline, DirectionSpec, QueueLimit, RateSpec};
use linkem::{DropReason, Stage};

const MS: u64 = 1_000_000;

/// A burst of `n` packets at `t0` into an unlimited queue: the k-th (1-based) finishes
/// at exactly t0 + ⌊k·8L·10⁹/rate⌋, for every k up to 100 000 (no drift).
#[test]
fn back_to_back_departures_are_exact_without_drift() {
    // 10 Mbit/s divides (1 200 000 ns per 1500 B); the others do not, including a prime rate.
    for &rate in &[10_000_000u64, 7_000_000, 1_544_000, 999_999_937, 3] {
        for &size in &[1500u32, 64, 1] {
            let t0 = 12_345;
            let mut q = RateQueue::constant(rate, QueueLimit::Unlimited).unwrap();
            let n = 100_000u64;
            let arrivals: Vec<_> = (0..n).map(|i| (i, size, t0)).collect();
            let (out, drops) = run_stage(&mut q, &arrivals);
            assert!(drops.is_empty());
            assert_eq!(out.len() as u64, n);
            for (k, &(id, _, due)) in out.iter().enumerate() {
                let k = k as u128 + 1;
                let exact = t0 as u128 + k * 8 * size as u128 * 1_000_000_000 / rate as u128;
                assert_eq!(id as u128, k - 1);
                assert_eq!(due as u128, exact, "rate {rate} size {size} packet {k}");
            }
        }
    }
}

#[test]
fn ten_mbit_is_exactly_1_2_ms_per_1500_bytes() {
    let mut q = RateQueue::constant(10_000_000, QueueLimit::Unlimited).unwrap();
    let (out, _) = run_stage(&mut q, &(0..100_000).map(|i| (i, 1500, 0)).collect::<Vec<_>>());
    for w in out.windows(2) {
        assert_eq!(w[1].2 - w[0].2, 1_200_000);
    }
    assert_eq!(out.last().unwrap().2, 100_000 * 1_200_000);
}

/// A packet that finds the link idle starts at its arrival; one that finds it busy starts
/// at the previous finish (including the carried sub-nanosecond remainder).
#[test]
fn transmission_starts_at_max_of_arrival_and_previous_finish() {
    // 7 Mbit/s, 7 bytes: 56 bits → 8 000 ns exactly; 1 byte → 1142.857… ns.
    let mut q = RateQueue::constant(7_000_000, QueueLimit::Unlimited).unwrap();
    let arrivals = [
        (0, 1, 0),      // 0 → 1142.857 (due 1142)
        (1, 1, 0),      // → 2285.714 (due 2285)
        (2, 7, 2285),   // busy until 2285.714: starts there → 10285.714 (due 10285)
        (3, 7, 20_000), // idle: 20 000 → 28 000
        (4, 1, 28_000), // idle exactly at the finish → 29142.857
        (5, 1, 28_000), // → 30285.714
        (6, 1, 30_285), // still busy by 0.714 ns → 31428.571
    ];
    let (out, _) = run_stage(&mut q, &arrivals);
    let due: Vec<u64> = out.iter().map(|o| o.2).collect();
    assert_eq!(due, vec![1142, 2285, 10285, 28_000, 29_142, 30_285, 31_428]);
}

/// Periodic arrivals spaced exactly one transmission time apart depart with that spacing.
#[test]
fn paced_arrivals_keep_their_spacing() {
    let mut q = RateQueue::constant(100_000_000, QueueLimit::Packets(1)).unwrap();
    // 1500 B at 100 Mbit/s = 120 µs; a 1-packet queue suffices when pacing is exact.
    let arrivals: Vec<_> = (0..100_000u64).map(|i| (i, 1500, 5 + i * 120_000)).collect();
    let (out, drops) = run_stage(&mut q, &arrivals);
    assert!(drops.is_empty());
    for (i, o) in out.iter().enumerate() {
        assert_eq!(o.2, 5 + (i as u64 + 1) * 120_000);
    }
}

/// The fidelity target: a drop-tail queue of N packets accepts exactly N of a burst.
#[test]
fn queue_of_50_accepts_exactly_50_of_a_burst_at_any_rate() {
    for &mbit in &[1u64, 5, 10, 25, 50, 100] {
        let mut q = RateQueue::constant(mbit * 1_000_000, QueueLimit::Packets(50)).unwrap();
        let arrivals: Vec<_> = (0..500).map(|i| (i, 1500, 1_000)).collect();
        let (out, drops) = run_stage(&mut q, &arrivals);
        assert_eq!(out.len(), 50, "{mbit} Mbit/s");
        assert_eq!(out.iter().map(|o| o.0).collect::<Vec<_>>(), (0..50).collect::<Vec<_>>());
        assert_eq!(drops.len(), 450);
        assert!(drops.iter().all(|d| d.1 == DropReason::QueueFull));

        // The same through a pipeline with a large delay stage after the queue.
        let spec = DirectionSpec {
            rate: Some(RateSpec::Constant {
                bits_per_sec: mbit * 1_000_000,
            }),
            queue: QueueLimit::Packets(50),
            delay: 500 * MS,
            ..Default::default()
        };
        let mut p = build_pipeline::<()>(&spec, 1).unwrap();
        let ev = run_pipeline(&mut p, &arrivals);
        assert_eq!(departures(&ev).len(), 50, "{mbit} Mbit/s with delay");
        let d = pipeline_drops(&ev);
        assert_eq!(d.len(), 450);
        assert!(d.iter().all(|&(_, r, stage)| r == DropReason::QueueFull && stage == 0));
    }
}

#[test]
fn byte_limited_queue_accepts_exactly_what_fits() {
    for &mbit in &[1u64, 10, 100] {
        for &(limit, size, expect) in &[
            (75_000u64, 1500u32, 50usize),
            (75_000, 1000, 75),
            (74_999, 1500, 49),
            (1000, 1500, 0),
        ] {
            let mut q = RateQueue::constant(mbit * 1_000_000, QueueLimit::Bytes(limit)).unwrap();
            let arrivals: Vec<_> = (0..500).map(|i| (i, size, 0)).collect();
            let (out, drops) = run_stage(&mut q, &arrivals);
            assert_eq!(out.len(), expect, "{mbit} Mbit/s limit {limit} size {size}");
            assert_eq!(drops.len(), 500 - expect);
        }
        // Mixed sizes: 20 × (1500 + 500) = 40 000 bytes; with a 40 001-byte limit a further
        // 1500 B packet does not fit, a 1 B one does, and a second 1 B one does not.
        let mut q = RateQueue::constant(mbit * 1_000_000, QueueLimit::Bytes(40_001)).unwrap();
        let mut arrivals: Vec<_> = (0..40).map(|i| (i, if i % 2 == 0 { 1500 } else { 500 }, 0)).collect();
        arrivals.push((40, 1500, 0)); // 41 500 > 40 001: dropped
        arrivals.push((41, 1, 0)); // 40 001: fits
        arrivals.push((42, 1, 0)); // 40 002: dropped
        let (out, drops) = run_stage(&mut q, &arrivals);
        assert_eq!(out.len(), 41);
        assert_eq!(drops.iter().map(|d| d.0).collect::<Vec<_>>(), vec![40, 42]);
    }
}

/// Occupancy includes the packet on the wire and frees a slot exactly when a packet's
/// serialisation finishes (a packet finishing at `at` no longer counts at `at`).
#[test]
fn queue_frees_slots_exactly_at_finish_times() {
    // 10 Mbit/s, 1500 B: finishes at 1.2, 2.4, 3.6 … ms after t0.
    let t0 = 1_000;
    let mut q = RateQueue::constant(10_000_000, QueueLimit::Packets(50)).unwrap();
    for i in 0..500 {
        let _ = q.enqueue(linkem::Packet::new(i, 1500, ()), t0);
    }
    assert_eq!(q.backlog().packets, 50);
    // 1 ns before the third finish: two slots free.
    let at = t0 + 3 * 1_200_000 - 1;
    let accepted = (1000..1010)
        .filter(|&i| q.enqueue(linkem::Packet::new(i, 1500, ()), at).is_ok())
        .count();
    assert_eq!(accepted, 2);
    // At the third finish exactly: one more.
    let at = t0 + 3 * 1_200_000;
    let accepted = (2000..2010)
        .filter(|&i| q.enqueue(linkem::Packet::new(i, 1500, ()), at).is_ok())
        .count();
    assert_eq!(accepted, 1);
    assert_eq!(q.backlog().packets, 50);
    // Nothing was dequeued: the stage still holds all 53 (3 finished, 50 in the queue).
    assert_eq!(q.len(), 53);
    // Handing out the finished ones does not change the occupancy.
    let mut n = 0;
    while q.dequeue(at).is_some() {
        n += 1;
    }
    assert_eq!(n, 3);
    assert_eq!(q.backlog().packets, 50);
    assert!(q.enqueue(linkem::Packet::new(3000, 1500, ()), at).is_err());
    // Long after: everything finished, an empty queue, the link idle.
    let late = t0 + 1_000 * MS;
    assert!(q.enqueue(linkem::Packet::new(4000, 1500, ()), late).is_ok());
    assert_eq!(q.backlog().packets, 1);
    let mut last = None;
    while let Some((p, due)) = q.dequeue(u64::MAX) {
        last = Some((p.id, due));
    }
    assert_eq!(last, Some((4000, late + 1_200_000)));
}

#[test]
fn zero_rate_is_refused() {
    assert!(RateQueue::<()>::constant(0, QueueLimit::Unlimited).is_err());
}
