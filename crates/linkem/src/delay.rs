//! Propagation delay and jitter: due = arrival + fixed + jitter sample.
//!
//! The total `fixed + sample` is rounded to whole nanoseconds and clamped at 0 (a packet
//! cannot leave before it arrives). Clamping biases the distribution when the jitter is
//! large compared with the fixed delay: the mean rises and the spread shrinks. With
//! jitter ≤ fixed/3 (normal) it is negligible; uniform jitter ≤ fixed never clamps.
//!
//! Order-preserving mode (the default of [`crate::spec::JitterSpec`]): a packet never
//! leaves before the one ahead of it; its due time is raised to that packet's. This also
//! biases the distribution (upwards) when packets are spaced closer than the jitter.
//! Reordering mode: every packet keeps its own sample; ties leave in arrival order.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rand_distr::{Distribution as _, StandardNormal};

use crate::rng::{stage_rng, unit, StageRng};
pub use crate::spec::Distribution;
use crate::{Dropped, Nanos, Packet, Stage};

/// Standard deviation of a Pareto variable of shape 3 and scale 1:
/// var = x_m²·α / ((α−1)²·(α−2)) = 3/4.
const PARETO3_SD: f64 = 0.866_025_403_784_438_6; // sqrt(0.75)
/// Mean of that Pareto variable: α·x_m/(α−1) = 3/2.
const PARETO3_MEAN: f64 = 1.5;
/// σ of 0.25·P + 0.75·N for independent zero-mean unit-σ P and N: sqrt(0.0625 + 0.5625).
const PARETONORMAL_SD: f64 = 0.790_569_415_042_094_9; // sqrt(0.625)

/// A zero-mean, unit-σ sample of `d`. What "jitter" means per distribution:
/// * `Uniform`: uniform on [−1, 1] — here the jitter is the half-width, as in netem
///   (σ = jitter/√3), so this one is *not* unit-σ.
/// * `Normal`: standard normal (jitter = σ).
/// * `Pareto`: Pareto of shape 3 and scale 1, minus its mean 1.5, divided by its σ √0.75
///   (jitter = σ; support [−0.577, ∞), heavy right tail with P(X > x) ∝ x⁻³).
/// * `Paretonormal`: (0.25·P + 0.75·N)/√0.625 with P the standardised Pareto above and N
///   an independent standard normal (jitter = σ). netem builds its paretonormal from
///   tables; this is the same 1:3 mix, rescaled to unit σ so the jitter means σ.
pub fn standard_sample(d: Distribution, rng: &mut StageRng) -> f64 {
    match d {
        Distribution::Uniform => 2.0 * unit(rng) - 1.0,
        Distribution::Normal => StandardNormal.sample(rng),
        Distribution::Pareto => pareto(rng),
        Distribution::Paretonormal => {
            let p = pareto(rng);
            let n: f64 = StandardNormal.sample(rng);
            (0.25 * p + 0.75 * n) / PARETONORMAL_SD
        }
    }
}

fn pareto(rng: &mut StageRng) -> f64 {
    // Inverse CDF: X = U^(−1/3) with U uniform on (0, 1].
    let u = 1.0 - unit(rng);
    (u.powf(-1.0 / 3.0) - PARETO3_MEAN) / PARETO3_SD
}

/// Jitter configuration of a [`Delay`] stage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Jitter {
    /// Scale in ns (σ, or half-width for `Uniform`).
    pub amount: Nanos,
    pub distribution: Distribution,
    /// `false`: order-preserving; `true`: packets may reorder.
    pub reorder: bool,
}

struct Held<P> {
    due: Nanos,
    seq: u64,
    packet: Packet<P>,
}

impl<P> PartialEq for Held<P> {
    fn eq(&self, o: &Self) -> bool {
        (self.due, self.seq) == (o.due, o.seq)
    }
}
impl<P> Eq for Held<P> {}
impl<P> PartialOrd for Held<P> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<P> Ord for Held<P> {
    // Reversed so that the max-heap pops the earliest (due, seq).
    fn cmp(&self, o: &Self) -> Ordering {
        (o.due, o.seq).cmp(&(self.due, self.seq))
    }
}

/// The delay stage.
pub struct Delay<P> {
    fixed: Nanos,
    jitter: Option<Jitter>,
    rng: StageRng,
    /// Keyed by (due, arrival sequence): ties stay FIFO.
    heap: BinaryHeap<Held<P>>,
    seq: u64,
    last_due: Nanos,
}

impl<P> Delay<P> {
    /// A delay of `fixed` ns plus optional jitter drawn from the stream `seed`.
    pub fn new(fixed: Nanos, jitter: Option<Jitter>, seed: u64) -> Self {
        let jitter = jitter.filter(|j| j.amount > 0);
        Delay {
            fixed,
            jitter,
            rng: stage_rng(seed),
            heap: BinaryHeap::new(),
            seq: 0,
            last_due: 0,
        }
    }

    /// The delay the next packet gets, before order preservation: fixed + sample, rounded
    /// to ns and clamped at 0.
    fn sample_delay(&mut self) -> Nanos {
        match self.jitter {
            None => self.fixed,
            Some(j) => {
                let s = standard_sample(j.distribution, &mut self.rng) * j.amount as f64;
                let total = (self.fixed as f64 + s).round();
                if total <= 0.0 {
                    0
                } else {
                    total as Nanos // saturates at u64::MAX
                }
            }
        }
    }
}

impl<P> Stage<P> for Delay<P> {
    fn enqueue(&mut self, packet: Packet<P>, at: Nanos) -> Result<(), Dropped<P>> {
        let mut due = at.saturating_add(self.sample_delay());
        if !self.jitter.is_some_and(|j| j.reorder) {
            due = due.max(self.last_due);
        }
        self.last_due = self.last_due.max(due);
        self.heap.push(Held {
            due,
            seq: self.seq,
            packet,
        });
        self.seq += 1;
        Ok(())
    }

    fn dequeue(&mut self, now: Nanos) -> Option<(Packet<P>, Nanos)> {
        if self.heap.peek()?.due > now {
            return None;
        }
        self.heap.pop().map(|h| (h.packet, h.due))
    }

    fn next_due(&self) -> Option<Nanos> {
        self.heap.peek().map(|h| h.due)
    }

    fn len(&self) -> usize {
        self.heap.len()
    }
}
