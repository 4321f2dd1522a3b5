//! Multipath directions: split patterns, PDCP merge (order, duplicates, timer, SN wrap),
//! merge off, and the uniform Direction interface — all in virtual time, exact.
mod common;
use common::*;

use std::collections::HashSet;

use linkem::merge::{MergeOutput, Reorder};
use linkem::spec::{
    build_direction, build_multipath, leg_seed, validate_multipath, AnyDirectionSpec, DirectionSpec, Distribution,
    JitterSpec, LossSpec, MergeSpec, MultipathSpec, QueueLimit, RateSpec, Ratio, SplitSpec,
};
use linkem::{build_pipeline, Direction, DirectionEvent, DropReason, Nanos, Packet};

const MS: u64 = 1_000_000;

fn delay(d: Nanos) -> DirectionSpec {
    DirectionSpec {
        delay: d,
        ..Default::default()
    }
}

fn direction(spec: MultipathSpec, seed: u64) -> Direction<()> {
    build_direction(&AnyDirectionSpec::Multipath(spec), seed).unwrap()
}

fn batch(legs: Vec<DirectionSpec>, batch: u32, ratio: Ratio, merge: MergeSpec) -> MultipathSpec {
    MultipathSpec {
        legs,
        split: SplitSpec::Batch { batch, ratio },
        merge,
    }
}

/// Arrivals: `n` packets of 1200 B, one every `gap` ns from 0.
fn evenly(n: u64, gap: Nanos) -> Vec<(u64, u32, Nanos)> {
    (0..n).map(|i| (i, 1200, i * gap)).collect()
}

fn leg_arrivals(ev: &[DirectionEvent<()>]) -> Vec<(u64, usize)> {
    ev.iter()
        .filter_map(|e| match e {
            DirectionEvent::LegArrived { leg, info, .. } => Some((info.id, *leg)),
            _ => None,
        })
        .collect()
}

fn leg_departures(ev: &[DirectionEvent<()>]) -> Vec<(u64, Nanos)> {
    ev.iter()
        .filter_map(|e| match e {
            DirectionEvent::LegDeparted { info, at, .. } => Some((info.id, *at)),
            _ => None,
        })
        .collect()
}

fn delivered(ev: &[DirectionEvent<()>]) -> Vec<(u64, Nanos)> {
    ev.iter()
        .filter_map(|e| match e {
            DirectionEvent::Departed { packet, at } => Some((packet.id, *at)),
            _ => None,
        })
        .collect()
}

fn leg_drops(ev: &[DirectionEvent<()>]) -> Vec<(u64, usize)> {
    ev.iter()
        .filter_map(|e| match e {
            DirectionEvent::LegDropped { packet, leg, .. } => Some((packet.id, *leg)),
            _ => None,
        })
        .collect()
}

fn discarded(ev: &[DirectionEvent<()>]) -> Vec<u64> {
    ev.iter()
        .filter_map(|e| match e {
            DirectionEvent::MergeDiscarded { packet, .. } => Some(packet.id),
            _ => None,
        })
        .collect()
}

fn gaps(ev: &[DirectionEvent<()>]) -> Vec<(u64, Nanos)> {
    ev.iter()
        .filter_map(|e| match e {
            DirectionEvent::GapSkipped { count, at } => Some((*count, *at)),
            _ => None,
        })
        .collect()
}

fn assert_strictly_increasing(ids: &[u64]) {
    if let Some(w) = ids.windows(2).find(|w| w[1] <= w[0]) {
        panic!("delivery out of order or duplicated: {} then {}", w[0], w[1]);
    }
}

#[test]
fn batch_10_ratio_0_3_is_3_then_7_repeated() {
    let spec = batch(
        vec![delay(MS), delay(2 * MS)],
        10,
        Ratio::FirstLeg(0.3),
        MergeSpec::default(),
    );
    let ev = run_direction(&mut direction(spec, 1), &evenly(95, 100_000));
    let want: Vec<_> = (0..95).map(|i| (i, if i % 10 < 3 { 0 } else { 1 })).collect();
    assert_eq!(leg_arrivals(&ev), want);
    assert_eq!(delivered(&ev).len(), 95);
}

#[test]
fn batch_shares_over_three_legs_and_single_path_ratios() {
    let legs = || vec![delay(MS), delay(2 * MS), delay(3 * MS)];
    let spec = batch(legs(), 10, Ratio::Shares(vec![0.2, 0.5, 0.3]), MergeSpec::default());
    let ev = run_direction(&mut direction(spec, 1), &evenly(40, 100_000));
    let pattern = [0, 0, 1, 1, 1, 1, 1, 2, 2, 2];
    assert_eq!(
        leg_arrivals(&ev),
        (0..40).map(|i| (i, pattern[i as usize % 10])).collect::<Vec<_>>()
    );
    assert_strictly_increasing(&delivered(&ev).iter().map(|d| d.0).collect::<Vec<_>>());

    for (ratio, leg) in [(1.0, 0), (0.0, 1)] {
        let spec = batch(
            vec![delay(MS), delay(2 * MS)],
            7,
            Ratio::FirstLeg(ratio),
            MergeSpec::default(),
        );
        let ev = run_direction(&mut direction(spec, 1), &evenly(30, 100_000));
        assert!(
            leg_arrivals(&ev).iter().all(|&(_, l)| l == leg),
            "ratio {ratio}: single path on leg {leg}"
        );
        assert_eq!(delivered(&ev).len(), 30);
    }
}

/// Legs of 10 ms and 30 ms: the merge delivers in split order, each packet as soon as it
/// and everything before it have come off the legs (running maximum of leg departures).
#[test]
fn merge_restores_order_after_legs_that_reorder() {
    let spec = batch(
        vec![delay(10 * MS), delay(30 * MS)],
        10,
        Ratio::FirstLeg(0.5),
        MergeSpec::default(),
    );
    let ev = run_direction(&mut direction(spec, 1), &evenly(1_000, 200_000));
    let mut arrived = leg_departures(&ev);
    assert!(arrived.windows(2).any(|w| w[1].0 < w[0].0), "the legs do reorder");
    arrived.sort();
    let mut latest = 0;
    let want: Vec<_> = arrived
        .iter()
        .map(|&(id, at)| {
            latest = latest.max(at);
            (id, latest)
        })
        .collect();
    assert_eq!(delivered(&ev), want);
    assert!(gaps(&ev).is_empty() && discarded(&ev).is_empty());
}

#[test]
fn duplication_delivers_exactly_one_copy_in_order() {
    let leg = |d, seed_loss| DirectionSpec {
        delay: d,
        jitter: Some(JitterSpec {
            amount: 3 * MS,
            distribution: Distribution::Normal,
            reorder: true,
        }),
        loss: Some(LossSpec::Bernoulli { p: seed_loss }),
        ..Default::default()
    };
    let spec = MultipathSpec {
        legs: vec![leg(10 * MS, 0.05), leg(12 * MS, 0.05)],
        split: SplitSpec::Duplicate,
        merge: MergeSpec::default(),
    };
    let n = 20_000;
    let ev = run_direction(&mut direction(spec, 7), &evenly(n, 100_000));
    // Every packet on both legs, in split order.
    let arr = leg_arrivals(&ev);
    assert_eq!(arr, (0..n).flat_map(|i| [(i, 0), (i, 1)]).collect::<Vec<_>>());
    let out: Vec<u64> = delivered(&ev).iter().map(|d| d.0).collect();
    assert_strictly_increasing(&out);
    // Delivered = arrived on at least one leg; discarded = the second copy of those that
    // arrived on both.
    let mut came_off = std::collections::HashMap::<u64, u32>::new();
    for (id, _) in leg_departures(&ev) {
        *came_off.entry(id).or_default() += 1;
    }
    let mut want: Vec<u64> = came_off.keys().copied().collect();
    want.sort();
    assert_eq!(out, want);
    let mut disc = discarded(&ev);
    disc.sort();
    let mut twice: Vec<u64> = came_off.iter().filter(|(_, &c)| c == 2).map(|(&id, _)| id).collect();
    twice.sort();
    assert_eq!(disc, twice);
    let lost_both = n as usize - out.len();
    assert!(
        lost_both > 0 && lost_both < 200,
        "about 0.25 % lost on both legs: {lost_both}"
    );
}

/// Leg 2 loses everything (batch 2, ratio 0.5: every odd packet). A packet every 1 ms,
/// leg 1 10 ms, t-Reordering 50 ms. Packet 0 is delivered at 10 ms; packet 2 (12 ms)
/// starts the timer with RX_REORD = 3: it expires at 62 ms, delivers packet 2 (gap: 1),
/// and restarts with RX_REORD = 53 (packet 52 arrived at 62 ms, before the expiry at the
/// same instant); at 112 ms 4…52 go out with 25 gaps, and so on every 50 ms; the last
/// packet (198) arrives at 208 ms and leaves at 262 ms, when the timer is not restarted.
#[test]
fn timer_expiry_releases_buffered_packets_at_exactly_t_reordering() {
    let lossy = DirectionSpec {
        loss: Some(LossSpec::Bernoulli { p: 1.0 }),
        ..delay(10 * MS)
    };
    let merge = MergeSpec {
        enabled: true,
        t_reordering_ns: 50 * MS,
    };
    let spec = batch(vec![delay(10 * MS), lossy], 2, Ratio::FirstLeg(0.5), merge);
    let ev = run_direction(&mut direction(spec, 3), &evenly(200, MS));
    let mut want = vec![(0, 10 * MS), (2, 62 * MS)];
    for round in 0..4u64 {
        let first = 4 + 50 * round;
        want.extend(
            (first..(first + 50).min(200))
                .step_by(2)
                .map(|id| (id, (112 + 50 * round) * MS)),
        );
    }
    assert_eq!(delivered(&ev), want);
    assert_eq!(
        gaps(&ev),
        vec![
            (1, 62 * MS),
            (25, 112 * MS),
            (25, 162 * MS),
            (25, 212 * MS),
            (23, 262 * MS)
        ]
    );
    assert!(discarded(&ev).is_empty());
}

/// The merge alone: the timer starts at the out-of-order arrival, stops when the gap is
/// filled, and restarts from the expiry time with RX_REORD = RX_NEXT.
#[test]
fn reorder_timer_start_stop_restart() {
    let mut m = Reorder::<()>::new(100);
    let mut out = Vec::new();
    let rx = |m: &mut Reorder<()>, sn: u16, at: Nanos, out: &mut Vec<(String, u64)>| {
        m.receive(sn, Packet::new(sn as u64, 100, ()), at, &mut |o| out.push(show(o)))
    };
    rx(&mut m, 0, 0, &mut out);
    assert_eq!((m.rx_deliv(), m.rx_next(), m.timer()), (1, 1, None));
    rx(&mut m, 2, 10, &mut out); // gap at 1: timer to 110, RX_REORD 3
    assert_eq!(
        (m.rx_deliv(), m.rx_next(), m.rx_reord(), m.timer()),
        (1, 3, 3, Some(110))
    );
    rx(&mut m, 1, 20, &mut out); // filled: 1, 2 delivered, timer stopped
    assert_eq!((m.rx_deliv(), m.rx_next(), m.timer()), (3, 3, None));
    rx(&mut m, 4, 30, &mut out); // gap at 3: timer to 130, RX_REORD 5
    rx(&mut m, 6, 40, &mut out); // RX_NEXT 7, timer keeps running
    assert_eq!((m.rx_reord(), m.timer(), m.buffered()), (5, Some(130), 2));
    m.expire(130, &mut |o| out.push(show(o))); // 3 given up, 4 delivered; 5 missing → restart
    assert_eq!((m.rx_deliv(), m.rx_reord(), m.timer()), (5, 7, Some(230)));
    rx(&mut m, 2, 150, &mut out); // too late: discarded
    rx(&mut m, 6, 160, &mut out); // duplicate of a buffered packet: discarded
    m.expire(230, &mut |o| out.push(show(o)));
    assert_eq!((m.rx_deliv(), m.rx_next(), m.timer(), m.buffered()), (7, 7, None, 0));
    let d = |id| ("delivered".to_string(), id);
    let g = |n| ("gap".to_string(), n);
    let x = |id| ("discarded".to_string(), id);
    assert_eq!(out, vec![d(0), d(1), d(2), g(1), d(4), x(2), x(6), g(1), d(6)]);
    let s = m.stats();
    assert_eq!(
        (
            s.delivered,
            s.discarded,
            s.gap_skipped,
            s.timer_expiries,
            s.max_buffered
        ),
        (5, 2, 2, 2, 2)
    );
}

fn show(o: MergeOutput<()>) -> (String, u64) {
    match o {
        MergeOutput::Delivered(p) => ("delivered".into(), p.id),
        MergeOutput::Discarded(p) => ("discarded".into(), p.id),
        MergeOutput::GapSkipped(n) => ("gap".into(), n),
    }
}

/// The HFN is inferred from RX_DELIV within ±2^15; an SN needing HFN −1 is too late.
#[test]
fn count_inference_window() {
    let mut m = Reorder::<()>::new(1);
    assert_eq!(m.count_of(0), Some(0));
    assert_eq!(m.count_of(32_767), Some(32_767));
    assert_eq!(m.count_of(32_768), None, "HFN −1 at the start: too late");
    // Deliver 0..=65_535 and a bit more, in order: RX_DELIV = 70 000 (HFN 1, SN 4 464).
    for c in 0..70_000u64 {
        m.receive(c as u16, Packet::new(c, 1, ()), c, &mut |_| {});
    }
    assert_eq!(m.rx_deliv(), 70_000);
    assert_eq!(m.count_of(4_464), Some(70_000));
    assert_eq!(m.count_of(4_464 + 32_767), Some(70_000 + 32_767));
    assert_eq!(
        m.count_of(4_464 + 32_768),
        Some(70_000 + 32_768 - 65_536),
        "an old SN of HFN 0"
    );
    assert_eq!(m.count_of(4_463), Some(69_999));
}

/// Over the 16-bit wrap: 300 000 packets (HFN up to 4) through legs of different delays
/// with reordering jitter, random loss and a finite queue. The output is in strictly
/// increasing split (= COUNT) order, has no duplicates, and holds every packet not
/// dropped on a leg.
#[test]
fn sequence_numbers_wrap_without_loss_of_order() {
    let leg = |d, rate| DirectionSpec {
        rate: Some(RateSpec::Constant { bits_per_sec: rate }),
        queue: QueueLimit::Packets(200),
        delay: d,
        jitter: Some(JitterSpec {
            amount: 2 * MS,
            distribution: Distribution::Normal,
            reorder: true,
        }),
        loss: Some(LossSpec::Bernoulli { p: 0.002 }),
        ..Default::default()
    };
    for (split, seed) in [
        (
            SplitSpec::Batch {
                batch: 100,
                ratio: Ratio::FirstLeg(0.5),
            },
            11,
        ),
        (SplitSpec::Duplicate, 12),
    ] {
        let spec = MultipathSpec {
            legs: vec![leg(10 * MS, 600_000_000), leg(25 * MS, 500_000_000)],
            split,
            merge: MergeSpec::default(),
        };
        let n = 300_000u64;
        // 1200 B every 20 µs = 480 Mbit/s: mostly below either leg's rate, with the
        // queue of the slower one overflowing now and then in duplication mode.
        let ev = run_direction(&mut direction(spec.clone(), seed), &evenly(n, 20_000));
        let out: Vec<u64> = delivered(&ev).iter().map(|d| d.0).collect();
        assert_strictly_increasing(&out);
        let came_off: HashSet<u64> = leg_departures(&ev).iter().map(|d| d.0).collect();
        let mut want: Vec<u64> = came_off.into_iter().collect();
        want.sort();
        assert_eq!(
            out, want,
            "{:?}: every packet that came off a leg is delivered",
            spec.split
        );
        let dropped = leg_drops(&ev);
        assert!(!dropped.is_empty());
        assert!(out.len() as u64 > n * 99 / 100);
        if spec.split == SplitSpec::Duplicate {
            assert_eq!(discarded(&ev).len(), leg_departures(&ev).len() - out.len());
        } else {
            assert!(
                discarded(&ev).is_empty(),
                "nothing late: t-Reordering ≫ the legs' delay difference"
            );
            assert_eq!(dropped.len() + out.len(), n as usize);
        }
    }
}

/// Merge off: packets leave in the order and at the times they come off the legs.
#[test]
fn merge_off_delivers_reordered() {
    let off = MergeSpec {
        enabled: false,
        ..Default::default()
    };
    let spec = batch(vec![delay(10 * MS), delay(30 * MS)], 10, Ratio::FirstLeg(0.5), off);
    let d = run_direction(&mut direction(spec, 1), &evenly(1_000, 200_000));
    assert_eq!(delivered(&d), leg_departures(&d));
    assert!(delivered(&d).windows(2).any(|w| w[1].0 < w[0].0));
    // Duplication with the merge off: both copies go through.
    let spec = MultipathSpec {
        legs: vec![delay(MS), delay(2 * MS)],
        split: SplitSpec::Duplicate,
        merge: off,
    };
    let d = run_direction(&mut direction(spec, 1), &evenly(10, 100_000));
    assert_eq!(delivered(&d).len(), 20);
}

/// Every copy on a leg is accounted for: arrival first, then departure or drop.
#[test]
fn leg_events_account_for_every_packet() {
    let leg = |d| DirectionSpec {
        rate: Some(RateSpec::Constant {
            bits_per_sec: 10_000_000,
        }),
        queue: QueueLimit::Packets(5),
        loss: Some(LossSpec::Bernoulli { p: 0.1 }),
        ..delay(d)
    };
    let spec = batch(
        vec![leg(MS), leg(5 * MS)],
        4,
        Ratio::FirstLeg(0.25),
        MergeSpec::default(),
    );
    let ev = run_direction(&mut direction(spec, 5), &evenly(2_000, 500_000));
    let arrivals = leg_arrivals(&ev);
    let mut ends: Vec<(u64, usize)> = leg_drops(&ev);
    let mut seen = HashSet::new();
    for e in &ev {
        match e {
            DirectionEvent::LegArrived { info, leg, .. } => assert!(seen.insert((info.id, *leg))),
            DirectionEvent::LegDeparted { info, leg, .. } => {
                assert!(seen.contains(&(info.id, *leg)));
                ends.push((info.id, *leg));
            }
            DirectionEvent::LegDropped {
                packet, leg, reason, ..
            } => {
                assert!(seen.contains(&(packet.id, *leg)));
                assert!(matches!(reason, DropReason::QueueFull | DropReason::RandomLoss));
            }
            _ => {}
        }
    }
    ends.sort();
    let mut a = arrivals.clone();
    a.sort();
    assert_eq!(a, ends);
    assert!(
        leg_drops(&ev).iter().any(|&(_, l)| l == 1),
        "leg 2 (3 of 4 packets at the same rate) overflows"
    );
}

/// Legs draw from their own streams: identical lossy legs lose different packets, and
/// leg k of a direction is the pipeline built with `leg_seed(seed, k)`.
#[test]
fn legs_have_their_own_seeds() {
    let lossy = DirectionSpec {
        loss: Some(LossSpec::Bernoulli { p: 0.3 }),
        ..Default::default()
    };
    let spec = MultipathSpec {
        legs: vec![lossy.clone(), lossy.clone()],
        split: SplitSpec::Duplicate,
        merge: MergeSpec::default(),
    };
    let ev = run_direction(&mut direction(spec, 9), &evenly(1_000, 1_000));
    let lost = |leg| {
        leg_drops(&ev)
            .iter()
            .filter(|d| d.1 == leg)
            .map(|d| d.0)
            .collect::<Vec<_>>()
    };
    assert_ne!(lost(0), lost(1));
    for leg in 0..2 {
        let mut p = build_pipeline::<()>(&lossy, leg_seed(9, leg)).unwrap();
        let alone: Vec<u64> = pipeline_drops(&run_pipeline(&mut p, &evenly(1_000, 1_000)))
            .iter()
            .map(|d| d.0)
            .collect();
        assert_eq!(lost(leg), alone);
    }
}

/// A plain spec through `build_direction` behaves exactly like its pipeline.
#[test]
fn plain_direction_matches_its_pipeline() {
    let spec = DirectionSpec {
        rate: Some(RateSpec::Constant {
            bits_per_sec: 5_000_000,
        }),
        queue: QueueLimit::Packets(4),
        delay: 3 * MS,
        ..Default::default()
    };
    let arrivals = evenly(300, 1_000_000);
    let mut p = build_pipeline::<()>(&spec, 2).unwrap();
    let want = run_pipeline(&mut p, &arrivals);
    let mut d = build_direction::<()>(&AnyDirectionSpec::Single(spec), 2).unwrap();
    let got = run_direction(&mut d, &arrivals);
    assert_eq!(got, want.into_iter().map(DirectionEvent::from).collect::<Vec<_>>());
    // An ideal plain direction: the departure is reported by step, at the arrival time.
    let mut d = build_direction::<()>(&AnyDirectionSpec::default(), 0).unwrap();
    d.push(Packet::new(1, 10, ()), 5);
    assert_eq!(d.next_due(), Some(5));
    assert!(matches!(d.step(5), Some(DirectionEvent::Departed { at: 5, .. })));
}

#[test]
fn invalid_multipath_specs_are_refused_with_a_reason() {
    let two = || vec![delay(MS), delay(MS)];
    let b = |batch, ratio| SplitSpec::Batch { batch, ratio };
    let cases: Vec<(MultipathSpec, &str)> = vec![
        (
            MultipathSpec {
                legs: vec![delay(MS)],
                split: SplitSpec::Duplicate,
                merge: MergeSpec::default(),
            },
            "at least 2 legs",
        ),
        (
            MultipathSpec {
                legs: two(),
                split: b(0, Ratio::FirstLeg(0.5)),
                merge: MergeSpec::default(),
            },
            "batch",
        ),
        (
            MultipathSpec {
                legs: two(),
                split: b(10, Ratio::FirstLeg(1.2)),
                merge: MergeSpec::default(),
            },
            "[0, 1]",
        ),
        (
            MultipathSpec {
                legs: two(),
                split: b(10, Ratio::FirstLeg(f64::NAN)),
                merge: MergeSpec::default(),
            },
            "[0, 1]",
        ),
        (
            MultipathSpec {
                legs: two(),
                split: b(10, Ratio::Shares(vec![0.5, 0.6])),
                merge: MergeSpec::default(),
            },
            "sum to 1",
        ),
        (
            MultipathSpec {
                legs: two(),
                split: b(10, Ratio::Shares(vec![1.0])),
                merge: MergeSpec::default(),
            },
            "one share per leg",
        ),
        (
            MultipathSpec {
                legs: vec![delay(MS), delay(MS), delay(MS)],
                split: b(10, Ratio::FirstLeg(0.5)),
                merge: MergeSpec::default(),
            },
            "only works for 2 legs",
        ),
        (
            MultipathSpec {
                legs: vec![
                    delay(MS),
                    DirectionSpec {
                        duplicate: 2.0,
                        ..Default::default()
                    },
                ],
                split: SplitSpec::Duplicate,
                merge: MergeSpec::default(),
            },
            "legs[1]: duplicate",
        ),
    ];
    for (spec, want) in cases {
        let e = validate_multipath(&spec).unwrap_err();
        assert!(e.contains(want), "{e:?} should mention {want:?}");
        assert_eq!(build_multipath::<()>(&spec, 0).err(), Some(e));
    }
}

/// A packet pinned to a leg rides that leg only, takes no sequence number (the split's
/// pattern for the others is unchanged) and leaves the direction as it leaves the leg,
/// even while the merge holds packets back for a gap.
#[test]
fn pinned_packets_bypass_split_and_merge() {
    let lossy = DirectionSpec {
        loss: Some(LossSpec::Bernoulli { p: 1.0 }),
        ..delay(10 * MS)
    };
    let spec = batch(
        vec![delay(10 * MS), lossy],
        2,
        Ratio::FirstLeg(0.5),
        MergeSpec::default(),
    );
    let mut d = direction(spec, 1);
    let mut ev = Vec::new();
    let drain = |d: &mut Direction<()>, now, ev: &mut Vec<DirectionEvent<()>>| {
        while let Some(e) = d.step(now) {
            ev.push(e);
        }
    };
    // Split traffic 0, 1 (lost), 2: the merge holds 2 for 200 ms. Pinned 100 and 101 in
    // between ride leg 1 and leave after its 10 ms.
    for (id, at) in [(0, 0), (1, MS), (100, 2 * MS), (2, 3 * MS), (101, 4 * MS)] {
        drain(&mut d, at, &mut ev);
        if id >= 100 {
            d.push_on_leg(Packet::new(id, 100, ()), 0, at);
        } else {
            d.push(Packet::new(id, 100, ()), at);
        }
    }
    drain(&mut d, Nanos::MAX, &mut ev);
    assert_eq!(leg_arrivals(&ev), vec![(0, 0), (1, 1), (100, 0), (2, 0), (101, 0)]);
    assert_eq!(
        delivered(&ev),
        vec![(0, 10 * MS), (100, 12 * MS), (101, 14 * MS), (2, 213 * MS)]
    );
    let Direction::Multipath(m) = &d else { panic!() };
    assert_eq!(m.merge_stats().delivered, 2, "pinned packets do not pass the merge");
}
