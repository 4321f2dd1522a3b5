//! RED (Floyd & Jacobson 1993, gentle variant): the drop probability by hand, the
//! average, idle ageing, the spacing of drops, and ECN marks in place of drops. The
//! discipline is driven directly, with the queue it sees held where each test needs it.
mod common;

use std::collections::VecDeque;

use linkem::queue::red::{spaced_probability, Red, RedParams};
use linkem::queue::{Backlog, Context, Discipline, QueueLimit};
use linkem::rng::{stage_rng, StageRng};
use linkem::{DropReason, Ecn, Nanos, Notice, Packet};

/// RED with an explicit context: nothing on the wire, the link idle since `idle_since`
/// when the queue is empty.
struct Bench {
    red: Red<()>,
    rng: StageRng,
    notices: VecDeque<Notice<()>>,
    next_id: u64,
}

/// What happened to one arrival.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Admitted,
    Marked,
    Dropped(DropReason),
}

impl Bench {
    fn new(params: RedParams, ecn: bool, seed: u64) -> Bench {
        // The link sends a 1000-byte packet in 1000 ns (8 Gbit/s): the unit of idle ageing.
        Bench {
            red: Red::new(params, QueueLimit::Packets(1000), ecn, 1000.0),
            rng: stage_rng(seed),
            notices: VecDeque::new(),
            next_id: 0,
        }
    }

    /// A packet arrives at `at` with `wire` packets on the wire.
    fn arrive(&mut self, ecn: Ecn, at: Nanos, wire: u64, idle_since: Option<Nanos>) -> Outcome {
        let id = self.next_id;
        self.next_id += 1;
        let idle_since = if self.red.is_empty() && wire == 0 {
            idle_since
        } else {
            None
        };
        let on_wire = Backlog {
            packets: wire,
            bytes: wire * 1000,
        };
        let mut cx = Context::new(on_wire, idle_since, &mut self.rng, &mut self.notices);
        match self.red.enqueue(Packet::new(id, 1000, ()).with_ecn(ecn), at, &mut cx) {
            Err(d) => Outcome::Dropped(d.reason),
            Ok(()) => match self.notices.pop_front() {
                Some(Notice::Marked { mark, .. }) => {
                    assert_eq!(mark.id, id);
                    Outcome::Marked
                }
                None => Outcome::Admitted,
                Some(other) => panic!("RED reported {other:?}"),
            },
        }
    }

    fn dequeue(&mut self) {
        let mut cx = Context::new(Backlog::default(), None, &mut self.rng, &mut self.notices);
        assert!(self.red.dequeue(0, &mut cx).is_some());
    }

    /// Offers `n` packets, the i-th with codepoint `ecn(i)`, each finding the queue at `q`
    /// packets (the link holds them; what RED admits is taken at once).
    fn hold(&mut self, q: u64, n: usize, ecn: impl Fn(usize) -> Ecn) -> Vec<Outcome> {
        (0..n)
            .map(|i| {
                let o = self.arrive(ecn(i), 0, q, None);
                if !self.red.is_empty() {
                    self.dequeue();
                }
                o
            })
            .collect()
    }
}

/// p_b with min_th 5, max_th 15, max_p 0.1: 0 below 5; max_p·(avg − 5)/10 from 5 to 15;
/// gentle: 0.1 + 0.9·(avg − 15)/15 from 15 to 30; 1 beyond (not gentle: from 15).
#[test]
fn probability_is_linear_between_the_thresholds() {
    let gentle = RedParams::default();
    assert_eq!(
        (gentle.min_th, gentle.max_th, gentle.max_p, gentle.gentle),
        (5.0, 15.0, 0.1, true)
    );
    let cases = [
        (0.0, 0.0),
        (4.999, 0.0),
        (5.0, 0.0),
        (7.5, 0.025),
        (10.0, 0.05),
        (12.5, 0.075),
        (15.0, 0.1),
        (18.75, 0.1 + 0.9 * 0.25),
        (22.5, 0.55),
        (26.25, 0.1 + 0.9 * 0.75),
        (30.0, 1.0),
        (1000.0, 1.0),
    ];
    for (avg, p) in cases {
        assert!(
            (gentle.probability(avg) - p).abs() < 1e-15,
            "gentle p_b({avg}) = {} ≠ {p}",
            gentle.probability(avg)
        );
    }
    // Linear: equal steps in avg give equal steps in p_b, in each region.
    for (lo, hi) in [(5.0, 15.0), (15.0, 30.0)] {
        let step = (hi - lo) / 8.0;
        let d: Vec<f64> = (0..8)
            .map(|i| gentle.probability(lo + (i + 1) as f64 * step) - gentle.probability(lo + i as f64 * step))
            .collect();
        assert!(d.iter().all(|x| (x - d[0]).abs() < 1e-12), "{d:?}");
    }
    let abrupt = RedParams {
        gentle: false,
        ..RedParams::default()
    };
    for (avg, p) in [(10.0, 0.05), (14.999, 0.1 * 9.999 / 10.0), (15.0, 1.0), (22.5, 1.0)] {
        assert!((abrupt.probability(avg) - p).abs() < 1e-12, "p_b({avg})");
    }
}

/// p_a = p_b/(1 − count·p_b): with p_b = 0.05, 0.05 after a drop (count 0), 0.1 at count
/// 10, 1 at count 19 (and beyond).
#[test]
fn drops_are_spaced_by_the_count() {
    assert_eq!(spaced_probability(0.05, 0), 0.05);
    assert!((spaced_probability(0.05, 1) - 0.05 / 0.95).abs() < 1e-15);
    assert!((spaced_probability(0.05, 10) - 0.1).abs() < 1e-15);
    assert_eq!(spaced_probability(0.05, 19), 1.0);
    assert_eq!(spaced_probability(0.05, 25), 1.0);

    // Held at 10 packets with w_q = 1 (avg = the queue), p_b = 0.05 at every arrival: the
    // number of arrivals from one drop to the next (the next included) is uniform on
    // 1 … 19 (P = p_b/(1 − p_b) each), mean 10, variance (19² − 1)/12 = 30.
    let mut b = Bench::new(
        RedParams {
            w_q: 1.0,
            ..RedParams::default()
        },
        false,
        11,
    );
    let out = b.hold(10, 200_000, |_| Ecn::NotEct);
    let drops: Vec<usize> = out
        .iter()
        .enumerate()
        .filter(|(_, o)| **o != Outcome::Admitted)
        .map(|(i, _)| i)
        .collect();
    let gaps: Vec<usize> = drops.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.iter().all(|g| (1..=19).contains(g)), "a gap outside 1..=19");
    assert!(gaps.contains(&1) && gaps.contains(&19));
    let n = gaps.len() as f64;
    let mean = gaps.iter().sum::<usize>() as f64 / n;
    let half = common::Z99 * (30.0 / n).sqrt();
    assert!(
        (mean - 10.0).abs() < half,
        "mean gap {mean} over {n} gaps, 99 % interval ±{half}"
    );
    assert!(out
        .iter()
        .all(|o| matches!(o, Outcome::Admitted | Outcome::Dropped(DropReason::AqmDrop))));
}

/// Forced region: every arrival is dropped at avg ≥ max_th (not gentle) or ≥ 2·max_th
/// (gentle); gentle at avg = 20 is the probabilistic p_b = 0.1 + 0.9·5/15 = 0.4.
#[test]
fn gentle_mode_ramps_to_one_at_twice_max_th() {
    let abrupt = RedParams {
        w_q: 1.0,
        gentle: false,
        ..RedParams::default()
    };
    let gentle = RedParams {
        w_q: 1.0,
        ..RedParams::default()
    };
    let all_dropped = |o: &[Outcome]| o.iter().all(|o| *o == Outcome::Dropped(DropReason::AqmDrop));
    assert!(all_dropped(
        &Bench::new(abrupt, false, 1).hold(20, 1000, |_| Ecn::NotEct)[1..]
    ));
    assert!(all_dropped(
        &Bench::new(gentle, false, 1).hold(30, 1000, |_| Ecn::NotEct)[1..]
    ));
    let o = Bench::new(gentle, false, 1).hold(20, 100_000, |_| Ecn::NotEct);
    let dropped = o.iter().filter(|o| **o != Outcome::Admitted).count();
    // Spaced drops at p_b = 0.4: after a drop the next arrival goes with
    // p_a = 0.4/(1 − 0.4) = 2/3, the one after with 0.4/(1 − 0.8) → 1: gaps of 1 (P 2/3)
    // or 2 (P 1/3), mean 4/3, a drop fraction of 3/4.
    let frac = dropped as f64 / o.len() as f64;
    assert!((frac - 0.75).abs() < 0.01, "drop fraction {frac}");
}

/// The average: avg ← (1 − w_q)·avg + w_q·q at each arrival that finds q > 0 packets; an
/// arrival at an empty queue ages it by (1 − w_q)^m, m = idle time / time to send
/// avpkt_bytes (here 1000 ns). With w_q = ½ and arrivals finding 0, 1, 2, 3, 4 packets:
/// 0, 0.5, 1.25, 2.125, 3.0625, then 4.03125 at q = 5 (all below min_th: no drop); idle
/// for 3000 ns: 4.03125/2³ = 0.50390625.
#[test]
fn average_and_idle_ageing_by_hand() {
    let mut b = Bench::new(
        RedParams {
            w_q: 0.5,
            ..RedParams::default()
        },
        false,
        3,
    );
    let mut avgs = Vec::new();
    for _ in 0..6 {
        assert_eq!(b.arrive(Ecn::NotEct, 0, 0, Some(0)), Outcome::Admitted);
        avgs.push(b.red.avg());
    }
    assert_eq!(avgs, vec![0.0, 0.5, 1.25, 2.125, 3.0625, 4.03125]);
    assert_eq!(b.red.count(), -1);
    for _ in 0..6 {
        b.dequeue();
    }
    assert_eq!(b.arrive(Ecn::NotEct, 10_000, 0, Some(7_000)), Outcome::Admitted);
    assert_eq!(b.red.avg(), 0.50390625);
}

/// ECN: with the same seed and the queue held the same, RED makes the same decisions;
/// where it decides against a packet, an ECN-capable one (ECT(0), ECT(1), CE) is marked
/// and admitted and a not-ECT one dropped. ECN on with only not-ECT packets is RED
/// without ECN.
#[test]
fn ecn_marks_replace_drops_for_ect_packets_only() {
    let params = RedParams {
        w_q: 1.0,
        ..RedParams::default()
    };
    let codepoint = |i: usize| [Ecn::Ect0, Ecn::NotEct, Ecn::Ect1, Ecn::NotEct, Ecn::Ce][i % 5];
    let plain = Bench::new(params, false, 5).hold(10, 50_000, |_| Ecn::NotEct);
    let ecn_off_ect = Bench::new(params, false, 5).hold(10, 50_000, codepoint);
    let ecn_on_not_ect = Bench::new(params, true, 5).hold(10, 50_000, |_| Ecn::NotEct);
    let ecn = Bench::new(params, true, 5).hold(10, 50_000, codepoint);
    assert_eq!(plain, ecn_off_ect, "ECN off: ECT packets are dropped like the rest");
    assert_eq!(plain, ecn_on_not_ect);
    let mut marked = 0;
    for (i, (p, e)) in plain.iter().zip(&ecn).enumerate() {
        match (p, codepoint(i).is_capable()) {
            (Outcome::Admitted, _) => assert_eq!(*e, Outcome::Admitted),
            (Outcome::Dropped(DropReason::AqmDrop), true) => {
                assert_eq!(*e, Outcome::Marked, "packet {i}");
                marked += 1;
            }
            (d, false) => assert_eq!(e, d, "packet {i}"),
            (other, true) => panic!("{other:?}"),
        }
    }
    assert!(marked > 1000, "{marked} marks");
}
