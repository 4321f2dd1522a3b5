//! Virtual-time drivers and statistics shared by the integration tests.
#![allow(dead_code)]

use linkem::{DropReason, Nanos, Packet, Pipeline, PipelineEvent, Stage};

/// What a stage handed out: (id, copy, due).
pub type Out = (u64, bool, Nanos);

/// Drives one stage in virtual time: before each arrival, hands out whatever is due by
/// then (as a driver would); at the end drains everything. Returns the packets handed
/// out in order, and the drops.
pub fn run_stage<S: Stage<()>>(stage: &mut S, arrivals: &[(u64, u32, Nanos)]) -> (Vec<Out>, Vec<(u64, DropReason)>) {
    let mut out = Vec::new();
    let mut drops = Vec::new();
    let drain = |stage: &mut S, now: Nanos, out: &mut Vec<Out>| {
        while let Some((p, due)) = stage.dequeue(now) {
            assert!(due <= now, "handed out before due");
            out.push((p.id, p.copy, due));
        }
    };
    for &(id, size, at) in arrivals {
        drain(stage, at, &mut out);
        if let Err(d) = stage.enqueue(Packet::new(id, size, ()), at) {
            assert_eq!(d.packet.id, id);
            drops.push((id, d.reason));
        }
    }
    drain(stage, Nanos::MAX, &mut out);
    assert!(stage.is_empty());
    (out, drops)
}

/// Drives a pipeline in virtual time; returns all events in the order they happened.
pub fn run_pipeline(p: &mut Pipeline<()>, arrivals: &[(u64, u32, Nanos)]) -> Vec<PipelineEvent<()>> {
    let mut ev = Vec::new();
    for &(id, size, at) in arrivals {
        while let Some(e) = p.step(at) {
            ev.push(e);
        }
        if let Some(e) = p.push(Packet::new(id, size, ()), at) {
            ev.push(e);
        }
    }
    while let Some(e) = p.step(Nanos::MAX) {
        ev.push(e);
    }
    assert!(p.is_empty());
    ev
}

/// Departures (id, copy, at) of a pipeline run.
pub fn departures(ev: &[PipelineEvent<()>]) -> Vec<(u64, bool, Nanos)> {
    ev.iter()
        .filter_map(|e| match e {
            PipelineEvent::Departed { packet, at } => Some((packet.id, packet.copy, *at)),
            _ => None,
        })
        .collect()
}

/// Drops (id, reason, stage) of a pipeline run.
pub fn pipeline_drops(ev: &[PipelineEvent<()>]) -> Vec<(u64, DropReason, usize)> {
    ev.iter()
        .filter_map(|e| match e {
            PipelineEvent::Dropped {
                packet, reason, stage, ..
            } => Some((packet.id, *reason, *stage)),
            _ => None,
        })
        .collect()
}

/// z for a two-sided 99 % normal interval.
pub const Z99: f64 = 2.576;

/// Half-width of the 99 % (normal-approximation) binomial interval for a count of
/// successes among `n` trials with success probability `p`: 2.576·sqrt(n·p·(1−p)).
/// (n·p·(1−p) ≥ 90 in every use, where the normal approximation is good.)
pub fn binomial_halfwidth(n: u64, p: f64) -> f64 {
    Z99 * (n as f64 * p * (1.0 - p)).sqrt()
}

/// Sample mean and (n−1) standard deviation.
pub fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
    (m, v.sqrt())
}

/// Complementary error function (Numerical Recipes `erfcc`, Chebyshev fit, fractional
/// error < 1.2e−7 everywhere).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let ans = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        ans
    } else {
        2.0 - ans
    }
}

/// P(N > x) for a standard normal N.
pub fn normal_tail(x: f64) -> f64 {
    0.5 * erfc(x / std::f64::consts::SQRT_2)
}

/// Drives a direction of either kind in virtual time, as a driver would: everything due
/// by an arrival's time happens before it. Returns all events in order, and checks that
/// they come out in non-decreasing time (exact due-time processing).
pub fn run_direction(d: &mut linkem::Direction<()>, arrivals: &[(u64, u32, Nanos)]) -> Vec<linkem::DirectionEvent<()>> {
    let mut ev = Vec::new();
    let push = |e: linkem::DirectionEvent<()>, ev: &mut Vec<linkem::DirectionEvent<()>>| {
        if let Some(prev) = ev.last() {
            assert!(
                e.at() >= linkem::DirectionEvent::at(prev),
                "events out of time order: {e:?} after {prev:?}"
            );
        }
        ev.push(e);
    };
    for &(id, size, at) in arrivals {
        while let Some(e) = d.step(at) {
            push(e, &mut ev);
        }
        d.push(Packet::new(id, size, ()), at);
        while let Some(e) = d.step(at) {
            push(e, &mut ev);
        }
    }
    while let Some(e) = d.step(Nanos::MAX) {
        push(e, &mut ev);
    }
    assert!(d.is_empty());
    assert_eq!(d.next_due(), None);
    ev
}
