//! Trace-driven (Mahimahi) link, hand-computed cases and a saturated 100k-packet run.
mod common;
use common::*;

use linkem::link::Link;
use linkem::queue::DropTail;
use linkem::rate::{parse_mahimahi_trace, RateQueue, MAX_TRACE_MS, OPPORTUNITY_BYTES};
use linkem::spec::QueueLimit;
use linkem::{DropReason, Stage};

const MS: u64 = 1_000_000;

fn run(trace: &[u64], arrivals: &[(u64, u32, u64)]) -> Vec<u64> {
    let mut q = RateQueue::trace(trace.to_vec(), QueueLimit::Unlimited).unwrap();
    let (out, drops) = run_stage(&mut q, arrivals);
    assert!(drops.is_empty());
    assert_eq!(
        out.iter().map(|o| o.0).collect::<Vec<_>>(),
        arrivals.iter().map(|a| a.0).collect::<Vec<_>>(),
        "FIFO"
    );
    out.iter().map(|o| o.2).collect()
}

#[test]
fn one_full_packet_per_opportunity_and_the_trace_repeats() {
    // Period 3 ms: opportunities at 1, 2, 3 | 4, 5, 6 | 7 …
    let a: Vec<_> = (0..7).map(|i| (i, 1500, 0)).collect();
    assert_eq!(run(&[1, 2, 3], &a), (1..=7).map(|m| m * MS).collect::<Vec<_>>());
}

#[test]
fn repeated_timestamps_are_several_opportunities() {
    // Period 8: 5, 5, 8 | 13, 13, 16 | 21, 21, 24
    let a: Vec<_> = (0..9).map(|i| (i, 1500, 0)).collect();
    assert_eq!(
        run(&[5, 5, 8], &a),
        [5, 5, 8, 13, 13, 16, 21, 21, 24].map(|m| m * MS).to_vec()
    );
    // A trace starting at 0: period 4: 0, 4 | 4, 8 | 8, 12 — the end of one period and the
    // start of the next are two opportunities at the same time.
    let a: Vec<_> = (0..5).map(|i| (i, 1500, 0)).collect();
    assert_eq!(run(&[0, 4], &a), [0, 4, 4, 8, 8].map(|m| m * MS).to_vec());
}

#[test]
fn partial_use_of_an_opportunity() {
    // Opportunities at 10, 20, 30 ms. 1000 B uses 2/3 of @10; the next 1000 B takes the
    // remaining 500 of @10 and 500 of @20; the third 1000 B fits in @20's remaining 1000.
    let a = [(0, 1000, 0), (1, 1000, 0), (2, 1000, 0), (3, 1500, 0)];
    assert_eq!(run(&[10, 20, 30], &a), vec![10 * MS, 20 * MS, 20 * MS, 30 * MS]);
    // Small packets share one opportunity: 15 × 100 B at @10, the 16th at @20.
    let a: Vec<_> = (0..16).map(|i| (i, 100, 0)).collect();
    let mut want = vec![10 * MS; 15];
    want.push(20 * MS);
    assert_eq!(run(&[10, 20, 30], &a), want);
    // A packet larger than an opportunity spans several: 4000 B = 1500 + 1500 + 1000,
    // leaving 500 of @3 to the next (which arrived in time), then @4.
    let a = [(0, 4000, 0), (1, 500, 0), (2, 1, 0)];
    assert_eq!(run(&[1, 2, 3, 4], &a), vec![3 * MS, 3 * MS, 4 * MS]);
}

#[test]
fn an_opportunity_serves_only_packets_that_arrived_by_then() {
    // p0 uses 1000 of @10; p1 arrives at 11 ms, too late for the 500 left at @10: @20.
    assert_eq!(
        run(&[10, 20, 30], &[(0, 1000, 0), (1, 400, 11 * MS)]),
        vec![10 * MS, 20 * MS]
    );
    // Arriving at 10 ms exactly, it may use what is left of @10.
    assert_eq!(
        run(&[10, 20, 30], &[(0, 1000, 0), (1, 400, 10 * MS)]),
        vec![10 * MS, 10 * MS]
    );
    // … but only the 500 left: 600 B continues into @20.
    assert_eq!(
        run(&[10, 20, 30], &[(0, 1000, 0), (1, 600, 10 * MS)]),
        vec![10 * MS, 20 * MS]
    );
}

#[test]
fn bytes_left_when_the_queue_is_empty_are_wasted() {
    // p0: 1000 B of @10. p1 (100 B at 15 ms) cannot use @10; it uses 100 of @20, leaving
    // 1400. p2 (1500 B at 20 ms) takes those 1400 and 100 of @30.
    let a = [(0, 1000, 0), (1, 100, 15 * MS), (2, 1500, 20 * MS)];
    assert_eq!(run(&[10, 20, 30], &a), vec![10 * MS, 20 * MS, 30 * MS]);
    // An idle stretch wastes whole opportunities: a packet at 35 ms uses @40 (period 2).
    assert_eq!(run(&[10, 20, 30], &[(0, 1500, 35 * MS)]), vec![40 * MS]);
    // … and partial ones across periods (opportunities 10, 20, 30 | 40, 50, 60 | 70 …):
    // 1000 B at 0 → @10 (500 wasted); 1000 B at 61 ms → @70.
    assert_eq!(
        run(&[10, 20, 30], &[(0, 1000, 0), (1, 1000, 61 * MS)]),
        vec![10 * MS, 70 * MS]
    );
    // A packet arriving exactly at a period boundary takes the end-of-period opportunity.
    assert_eq!(run(&[10, 20, 30], &[(0, 1000, 30 * MS)]), vec![30 * MS]);
}

#[test]
fn origin_shifts_the_trace() {
    let mut q = RateQueue::trace(vec![1, 2], QueueLimit::Unlimited)
        .unwrap()
        .with_origin(5_000 * MS);
    let (out, _) = run_stage(
        &mut q,
        &[(0, 1500, 0), (1, 1500, 5_000 * MS + 1), (2, 1500, 5_000 * MS + 1)],
    );
    assert_eq!(
        out.iter().map(|o| o.2).collect::<Vec<_>>(),
        vec![5_001 * MS, 5_002 * MS, 5_003 * MS]
    );
}

#[test]
fn offset_starts_inside_the_trace_and_wraps_with_the_period() {
    // Opportunities at 10, 20, 30 ms (period 30). 25 ms in, at the origin (1 s): the next
    // opportunities are at trace times 30, 40 (= 10 of the next period), 50, 60.
    let link = |offset| {
        let mut q = RateQueue::new(
            Link::trace(vec![10, 20, 30]).unwrap().with_offset(offset),
            Box::new(DropTail::new(QueueLimit::Unlimited)),
            0,
        );
        q.set_origin(1_000 * MS);
        q
    };
    let burst: Vec<_> = (0..4).map(|i| (i, 1500, 1_000 * MS)).collect();
    let due = |offset| {
        run_stage(&mut link(offset), &burst)
            .0
            .iter()
            .map(|o| o.2)
            .collect::<Vec<_>>()
    };
    assert_eq!(due(25 * MS), vec![1_005 * MS, 1_015 * MS, 1_025 * MS, 1_035 * MS]);
    // An offset of whole periods is no offset; one exactly on an opportunity uses it.
    assert_eq!(due(60 * MS), due(0));
    assert_eq!(due(0), vec![1_010 * MS, 1_020 * MS, 1_030 * MS, 1_040 * MS]);
    assert_eq!(due(20 * MS)[0], 1_000 * MS);
}

/// A new origin moves the timeline of a link that already served packets: the next
/// packet starts on the new one.
#[test]
fn set_origin_restarts_the_timeline() {
    let mut q = RateQueue::trace(vec![10, 20], QueueLimit::Unlimited).unwrap();
    let (out, _) = run_stage(&mut q, &[(0, 1500, 0)]);
    assert_eq!(out[0].2, 10 * MS);
    q.set_origin(33 * MS);
    let (out, _) = run_stage(&mut q, &[(1, 1500, 34 * MS)]);
    assert_eq!(out[0].2, 43 * MS);
}

/// A saturated link delivers exactly what the trace allows: the k-th opportunity
/// completes exactly the packets whose last byte falls in it, over 100 000 packets.
#[test]
fn saturated_throughput_is_exactly_the_trace() {
    let trace = vec![1, 1, 2, 3, 5, 8, 8, 8, 13, 20]; // 10 opportunities per 20 ms
    let time_of = |g: u64| ((g / 10) * 20 + trace[(g % 10) as usize]) * MS;
    for &size in &[1500u32, 1000, 500, 3000, 1499] {
        let n = 100_000u64;
        let a: Vec<_> = (0..n).map(|i| (i, size, 0)).collect();
        let due = run(&trace, &a);
        for (k, &d) in due.iter().enumerate() {
            // Bytes through the end of packet k (1-based): k·size; it completes in the
            // opportunity numbered ⌈k·size/1500⌉ − 1 (0-based).
            let bytes = (k as u64 + 1) * size as u64;
            let g = bytes.div_ceil(OPPORTUNITY_BYTES as u64) - 1;
            assert_eq!(d, time_of(g), "size {size} packet {k}");
        }
        // Equivalently: bytes delivered by the end = opportunities used × 1500 (exact
        // when size divides into whole opportunities).
        if (n * size as u64).is_multiple_of(1500) {
            let opportunities_used = n * size as u64 / 1500;
            assert_eq!(*due.last().unwrap(), time_of(opportunities_used - 1));
        }
    }
}

#[test]
fn trace_queue_accepts_exactly_its_limit_from_a_burst() {
    // The burst arrives between opportunities (at 0.5 ms), so no packet leaves at once.
    let mut q = RateQueue::trace(vec![1, 2, 3], QueueLimit::Packets(50)).unwrap();
    let (out, drops) = run_stage(&mut q, &(0..500).map(|i| (i, 1500, MS / 2)).collect::<Vec<_>>());
    assert_eq!(out.len(), 50);
    assert!(drops.iter().all(|d| d.1 == DropReason::QueueFull));
    // A packet whose serialisation ends at its arrival instant (it arrived exactly at an
    // opportunity it fits in) never occupies the queue: 50 wait behind it.
    let mut q = RateQueue::trace(vec![1, 2, 3], QueueLimit::Packets(50)).unwrap();
    let (out, _) = run_stage(&mut q, &(0..500).map(|i| (i, 1500, MS)).collect::<Vec<_>>());
    assert_eq!(out.len(), 51);
}

#[test]
fn bad_traces_are_refused() {
    assert!(RateQueue::<()>::trace(vec![], QueueLimit::Unlimited).is_err());
    assert!(RateQueue::<()>::trace(vec![0, 0], QueueLimit::Unlimited).is_err());
    assert!(RateQueue::<()>::trace(vec![3, 2], QueueLimit::Unlimited).is_err());
    assert_eq!(parse_mahimahi_trace("0\n5\n5\n12\n").unwrap(), vec![0, 5, 5, 12]);
    let e = parse_mahimahi_trace("1\n2\n3.5\n").unwrap_err();
    assert!(e.contains("line 3") && e.contains("3.5"), "{e}");
}

/// Found by fuzzing (fuzz/fuzz_targets/linkem_trace.rs): opportunity times overflowed u64
/// nanoseconds — with a period of 10^13 ms from the second period on, and with a period
/// under 2^40 ms once a queue of 64 kB packets booked thousands of periods ahead — a
/// panic with overflow checks, due times wrapped into the past without. Longer periods
/// are refused; times beyond u64 saturate at `Nanos::MAX`, staying in order.
#[test]
fn opportunity_times_never_wrap() {
    let e = parse_mahimahi_trace("0\n9999999999999\n").unwrap_err();
    assert!(e.contains("9999999999999") && e.contains("period"), "{e}");
    assert!(RateQueue::<()>::trace(vec![MAX_TRACE_MS + 1], QueueLimit::Unlimited).is_err());
    let a: Vec<_> = (0..8).map(|i| (i, 1500, 0)).collect();
    let period_ns = MAX_TRACE_MS * MS;
    let want: Vec<u64> = [0, 1, 1, 2, 2, 3, 3, 4].iter().map(|k| k * period_ns).collect();
    assert_eq!(run(&[0, MAX_TRACE_MS], &a), want);

    let jumbo: Vec<_> = (0..64).map(|i| (i, 65_535, 0)).collect();
    let due = run(&[100_000_000_000], &jumbo);
    assert!(due.windows(2).all(|w| w[0] <= w[1]), "due times went back: {due:?}");
    assert_eq!(
        due[0],
        44 * 100_000_000_000 * MS,
        "44 opportunities of 1500 B carry 65 535 B"
    );
    assert_eq!(*due.last().unwrap(), u64::MAX);
}

/// The constant-rate link saturates the same way: 1 bit/s and 64 kB packets reach the end
/// of u64 time after about 35 000 packets.
#[test]
fn constant_rate_finish_times_never_wrap() {
    let mut q = RateQueue::constant(1, QueueLimit::Unlimited).unwrap();
    let (out, _) = run_stage(&mut q, &(0..40_000).map(|i| (i, 65_535, 0)).collect::<Vec<_>>());
    assert!(out.windows(2).all(|w| w[0].2 <= w[1].2), "finish times went back");
    assert_eq!(out[0].2, 65_535 * 8 * 1_000_000_000);
    assert_eq!(out.last().unwrap().2, u64::MAX);
}
