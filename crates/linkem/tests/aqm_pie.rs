//! PIE (RFC 8033) in virtual time: the drop probability's updates (the α and β terms,
//! auto-tuning, bounds), the burst allowance, and the drops they cause, computed by hand.
//!
//! The discipline is driven directly by a small 1 ms-per-packet link (`Bench`) so its
//! state can be read at each update; the same arrivals through a built pipeline give the
//! same drops, which checks the bench against the real stage.
mod common;
use common::*;

use std::collections::VecDeque;

use linkem::queue::pie::{Pie, PieParams};
use linkem::queue::{Backlog, Context, Discipline, QueueLimit};
use linkem::rng::{stage_rng, StageRng};
use linkem::spec::{build_pipeline, DirectionSpec, DisciplineSpec, QueueSpec, RateSpec};
use linkem::{DropReason, Ecn, Nanos, Notice, Packet, PipelineEvent};

const MS: u64 = 1_000_000;

/// PIE in front of a link that sends a packet per ms (12 Mbit/s, 1500 B), as
/// [`linkem::rate::RateQueue`] drives it: the link takes the next packet when the last
/// finishes, before an arrival at the same instant; an arrival at an idle link starts at
/// once.
struct Bench {
    pie: Pie<()>,
    rng: StageRng,
    notices: VecDeque<Notice<()>>,
    /// The link is busy until then.
    busy_until: Nanos,
    arrivals: VecDeque<(u64, Nanos)>,
    drops: Vec<(u64, Nanos)>,
}

impl Bench {
    fn new(params: PieParams, arrivals: &[(u64, u32, Nanos)]) -> Bench {
        Bench {
            pie: Pie::new(params, QueueLimit::Packets(1000), false),
            rng: stage_rng(1),
            notices: VecDeque::new(),
            busy_until: 0,
            arrivals: arrivals.iter().map(|&(id, _, at)| (id, at)).collect(),
            drops: Vec::new(),
        }
    }

    fn dequeue(&mut self, at: Nanos) -> bool {
        let mut cx = Context::new(Backlog::default(), None, &mut self.rng, &mut self.notices);
        let sent = self.pie.dequeue(at, &mut cx).is_some();
        if sent {
            self.busy_until = at + MS;
        }
        sent
    }

    /// Processes every event before `t`.
    fn run_until(&mut self, t: Nanos) {
        loop {
            let next_arrival = self.arrivals.front().map(|a| a.1);
            let link_free = (!self.pie.is_empty()).then_some(self.busy_until);
            match (link_free, next_arrival) {
                (Some(f), a) if f < t && a.is_none_or(|a| f <= a) => {
                    self.dequeue(f);
                }
                (_, Some(a)) if a < t => {
                    let (id, at) = self.arrivals.pop_front().unwrap();
                    let wire = if self.busy_until > at {
                        Backlog {
                            packets: 1,
                            bytes: 1500,
                        }
                    } else {
                        Backlog::default()
                    };
                    let mut cx = Context::new(wire, None, &mut self.rng, &mut self.notices);
                    if let Err(d) = self.pie.enqueue(Packet::new(id, 1500, ()), at, &mut cx) {
                        assert_eq!(d.reason, DropReason::AqmDrop);
                        self.drops.push((id, at));
                    }
                    if self.busy_until <= at {
                        self.dequeue(at);
                    }
                }
                _ => return,
            }
        }
    }

    /// The state right after the update at `t` (a multiple of 15 ms), before the packet
    /// events at `t`: (drop_prob, burst_allowance, qdelay).
    fn at_update(&mut self, t: Nanos) -> (f64, Nanos, Nanos) {
        self.run_until(t);
        self.pie.catch_up(t);
        (self.pie.drop_prob(), self.pie.burst_allowance(), self.pie.qdelay())
    }
}

/// A burst of 31 packets at 0 (ids 0–30), then one per ms at 1 … `until` ms (id 30 + k at
/// k ms). Packet i of the burst is dequeued at i ms (sojourn i ms); from 31 ms on each
/// packet waits 30 ms.
fn standing_queue(until: u64) -> Vec<(u64, u32, Nanos)> {
    let mut a: Vec<_> = (0..31).map(|i| (i, 1500, 0)).collect();
    a.extend((1..=until).map(|k| (30 + k, 1500, k * MS)));
    a
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1e-300)
}

/// Default parameters (target 15 ms, t_update 15 ms, α = 0.125, β = 1.25, max burst
/// 150 ms). At each update qdelay is the sojourn of the packet dequeued last (at the
/// millisecond before). By hand, p = α(qdelay − target) + β(qdelay − qdelay_old), in
/// seconds, then divided by the auto-tuning factor for the current probability:
///
/// | t (ms) | qdelay | qdelay_old | p                                   | factor | drop_prob          |
/// |--------|--------|------------|-------------------------------------|--------|--------------------|
/// | 15     | 14 ms  | 0          | −0.000125 + 0.0175  = 0.017375      | 2048   | 8.48388671875e-6   |
/// | 30     | 29 ms  | 14 ms      | 0.00175 + 0.01875   = 0.0205        | 512    | + 4.00390625e-5    |
/// | 45     | 30 ms  | 29 ms      | 0.001875 + 0.00125  = 0.003125      | 128    | + 2.44140625e-5    |
/// | 60     | 30 ms  | 30 ms      | 0.001875                            | 128    | + 1.46484375e-5    |
/// | 75     | 30 ms  | 30 ms      | 0.001875                            | 128    | + 1.46484375e-5    |
/// | 90     | 30 ms  | 30 ms      | 0.001875 (drop_prob now ≥ 10⁻⁴)     | 32     | + 5.859375e-5      |
///
/// The burst allowance loses 15 ms per update (the probability is not 0, so it is not
/// reset): 135, 120, … and 0 at 150 ms. With a probability near 10⁻⁴ the derandomised
/// accumulator stays far below 0.85 over these 300 arrivals: no drop.
#[test]
fn probability_updates_follow_alpha_beta_and_autotuning() {
    let arrivals = standing_queue(300);
    let mut b = Bench::new(PieParams::default(), &arrivals);
    let steps = [
        (14, 0.017375 / 2048.0),
        (29, 0.0205 / 512.0),
        (30, 0.003125 / 128.0),
        (30, 0.001875 / 128.0),
        (30, 0.001875 / 128.0),
        (30, 0.001875 / 32.0),
    ];
    let mut prob = 0.0;
    for (k, &(qdelay_ms, step)) in steps.iter().enumerate() {
        let t = (k as u64 + 1) * 15 * MS;
        prob += step;
        let (p, allowance, qdelay) = b.at_update(t);
        assert_eq!(qdelay, qdelay_ms * MS, "qdelay at {t}");
        assert!(
            close(p, prob),
            "drop_prob after the update at {} ms: {p} ≠ {prob}",
            t / MS
        );
        assert_eq!(allowance, 150 * MS - (k as u64 + 1) * 15 * MS);
    }
    assert_eq!(b.at_update(150 * MS).1, 0);
    b.run_until(Nanos::MAX);
    assert!(b.drops.is_empty());
    let spec = pie_link(PieParams::default(), 0.1, false);
    let ev = run_pipeline(&mut build_pipeline::<()>(&spec, 1).unwrap(), &arrivals);
    assert!(pipeline_drops(&ev).is_empty());
}

/// A PIE direction at 12 Mbit/s with a 1000-packet limit.
fn pie_link(params: PieParams, mark_ecnth: f64, ecn: bool) -> DirectionSpec {
    DirectionSpec {
        rate: Some(RateSpec::Constant {
            bits_per_sec: 12_000_000,
        }),
        queue: QueueSpec::new(DisciplineSpec::Pie(PieParams { mark_ecnth, ..params })).with_ecn(ecn),
        ..Default::default()
    }
}

/// `arrivals` through a built pipeline of `pie_link(params, mark_ecnth, ecn)` (seed 7).
/// With `ecn` the packets of even id are ECT(0) and those of odd id not ECN-capable.
fn through_pie(
    params: PieParams,
    mark_ecnth: f64,
    ecn: bool,
    arrivals: &[(u64, u32, Nanos)],
) -> Vec<PipelineEvent<()>> {
    let mut p = build_pipeline::<()>(&pie_link(params, mark_ecnth, ecn), 7).unwrap();
    run_pipeline_of(&mut p, arrivals, |id, size| {
        let codepoint = if ecn && id.is_multiple_of(2) {
            Ecn::Ect0
        } else {
            Ecn::NotEct
        };
        Packet::new(id, size, ()).with_ecn(codepoint)
    })
}

/// α = 10 000/s, β = 0: the parameters of the two tests below, which make the probability
/// jump.
fn jumping() -> PieParams {
    PieParams {
        alpha: 10_000.0,
        beta: 0.0,
        ..PieParams::default()
    }
}

/// α = 10 000/s, β = 0 make the probability jump: at 15 ms, p = 10⁴·(0.014 − 0.015)/2048
/// < 0, so it stays 0; at 30 ms p = 10⁴·0.014/2048 = 0.068359375; at 45 ms
/// p = 10⁴·0.015/2 = 75 and it is bounded to 1. Yet nothing is dropped while the burst
/// allowance lasts (135, 120, … ms, 0 at the update at 150 ms). From the arrival at
/// 150 ms on every arrival is dropped — the accumulator reaches ≥ 0.85 at once and a
/// uniform draw is always < 1 — as long as the queue holds more than 2·1500 bytes: after
/// the dequeue at k ms the queue holds the 179 − k packets that arrived at
/// k − 29 … 149 ms, so the arrivals at 150 … 176 ms are dropped and from 177 ms on
/// admitted. The queue then holds 2 packets waiting 3 ms; the update at 195 ms sees
/// qdelay 3 ms: p = 10⁴·(0.003 − 0.015) = −120, drop_prob = 0; the allowance is reset to
/// 150 ms at the update at 210 ms, the first with qdelay and qdelay_old both < 7.5 ms
/// (at 195 ms qdelay_old was still 30 ms).
#[test]
fn burst_allowance_delays_drops_then_every_arrival_is_dropped() {
    let params = jumping();
    let arrivals = standing_queue(300);
    let mut b = Bench::new(params, &arrivals);
    assert_eq!(b.at_update(15 * MS), (0.0, 135 * MS, 14 * MS));
    // 10⁴·(0.029 − 0.015) is 140 up to the rounding of 0.029 and 0.015 in binary.
    let (p, allowance, qdelay) = b.at_update(30 * MS);
    assert!(
        close(p, 0.068359375) && (allowance, qdelay) == (120 * MS, 29 * MS),
        "{p} {allowance} {qdelay}"
    );
    assert_eq!(b.at_update(45 * MS), (1.0, 105 * MS, 30 * MS));
    for k in 4..=10u64 {
        assert_eq!(b.at_update(k * 15 * MS), (1.0, 150 * MS - k * 15 * MS, 30 * MS));
    }
    assert!(
        b.drops.is_empty(),
        "no drop before the allowance is used up: {:?}",
        b.drops
    );
    assert_eq!(b.at_update(180 * MS), (1.0, 0, 30 * MS));
    assert_eq!(b.at_update(195 * MS), (0.0, 0, 3 * MS));
    assert_eq!(b.at_update(210 * MS), (0.0, 150 * MS, 3 * MS));
    b.run_until(Nanos::MAX);
    let want: Vec<(u64, Nanos)> = (150..=176).map(|k| (30 + k, k * MS)).collect();
    assert_eq!(b.drops, want);

    // The same through a built pipeline.
    let ev = through_pie(params, 0.1, false, &arrivals);
    assert_eq!(drops_with(&ev, DropReason::AqmDrop), want);
    assert_eq!(pipeline_drops(&ev).len(), want.len());
}

/// RFC 8033 §5.1: with ECN on, an ECN-capable packet is marked instead of dropped only
/// while drop_prob ≤ mark_ecnth (10 %). In the scenario above drop_prob is 1 when the
/// drops happen, so ECT packets are dropped all the same; with mark_ecnth = 1 the ECT
/// ones (even ids) are marked and admitted and the not-ECT ones (odd ids) still dropped.
#[test]
fn ecn_marks_only_below_the_marking_threshold() {
    let params = jumping();
    let arrivals = standing_queue(300);
    let plain = through_pie(params, 0.1, false, &arrivals);
    let ev = through_pie(params, 0.1, true, &arrivals);
    assert!(marks(&ev).is_empty());
    assert_eq!(
        drops_with(&ev, DropReason::AqmDrop),
        drops_with(&plain, DropReason::AqmDrop)
    );

    let ev = through_pie(params, 1.0, true, &arrivals);
    let (m, d) = (marks(&ev), drops_with(&ev, DropReason::AqmDrop));
    assert!(
        m.iter().all(|(id, _)| id % 2 == 0) && d.iter().all(|(id, _)| id % 2 == 1),
        "{m:?} {d:?}"
    );
    // The first decisions: packet 180 (ECT) at 150 ms marked, 181 (not-ECT) dropped.
    assert_eq!((m[0], d[0]), ((180, 150 * MS), (181, 151 * MS)));
    let ce: Vec<u64> = departed(&ev).iter().filter(|d| d.2 == Ecn::Ce).map(|d| d.0).collect();
    assert_eq!(ce, m.iter().map(|m| m.0).collect::<Vec<_>>());
}
