//! PIE, Proportional Integral controller Enhanced (RFC 8033): drops (or marks) arriving
//! packets with a probability a PI controller steers so that the queueing delay stays
//! near `target` (the RFC's QDELAY_REF).
//!
//! * Queueing delay (RFC 8033 §4.3, the timestamp method Linux uses by default):
//!   `qdelay` is the sojourn time of the last packet dequeued, 0 if the queue was empty
//!   after it.
//! * Every `t_update` (at each multiple of `t_update` since time 0, before any packet
//!   event at that instant; replayed lazily, see [`crate::queue`]; at least
//!   [`MIN_T_UPDATE`]), §4.2 and §5.5:
//!   1. p = α·(qdelay − target) + β·(qdelay − qdelay_old), delays in seconds;
//!   2. auto-tuning: p /= 2048, 512, 128, 32, 8 or 2 while drop_prob < 10⁻⁶, 10⁻⁵,
//!      10⁻⁴, 10⁻³, 10⁻², 10⁻¹ (the first that holds), unchanged from 0.1 on;
//!   3. if drop_prob ≥ 0.1 and p > 0.02: p = 0.02 (cap on the step);
//!   4. drop_prob += p; if qdelay = 0 and qdelay_old = 0: drop_prob ·= 0.98 (decay);
//!      drop_prob bounded to [0, 1];
//!   5. burst allowance (§4.4): burst_allowance = max(0, burst_allowance − t_update); if
//!      drop_prob = 0 and qdelay < target/2 and qdelay_old < target/2, it is reset to
//!      `max_burst`;
//!   6. qdelay_old = qdelay.
//! * At each arrival (§4.1, §5.1, §5.4): the hard limit first (tail drop,
//!   [`crate::DropReason::QueueFull`], resets accu_prob); then, if the burst allowance is
//!   used up, the early-drop test: no drop if (qdelay_old < target/2 and drop_prob < 0.2)
//!   or the queue holds at most 2·`mean_packet_bytes`; else derandomised (§5.4):
//!   accu_prob reset to 0 when drop_prob is 0, accu_prob += drop_prob; no drop below
//!   0.85, a drop at 8.5 or more, else a drop with probability drop_prob. A dropped
//!   packet is [`crate::DropReason::AqmDrop`]; with ECN on, an ECN-capable packet is
//!   marked instead while drop_prob ≤ `mark_ecnth` (§5.1: 10 %). accu_prob is reset after
//!   every early drop **or mark** (the RFC's pseudocode resets it after drops only, so
//!   past 8.5 it would mark every packet).
//!
//! Not included: the optional "active/inactive" state of RFC 8033's appendix and Linux's
//! extra +2 % step above 250 ms of delay.

use super::{Backlog, Context, Discipline, Fifo, QueueLimit};
use crate::link::Link;
use crate::rng::unit;
use crate::spec::queue::{parameters, require, require_non_negative, require_positive, Class, Options};
use crate::{DropReason, Dropped, Nanos, Packet};

/// RFC 8033 parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PieParams {
    /// QDELAY_REF (RFC: 15 ms).
    pub target: Nanos,
    /// T_UPDATE (RFC: 15 ms).
    pub t_update: Nanos,
    /// α in 1/s (RFC: 0.125).
    pub alpha: f64,
    /// β in 1/s (RFC: 1.25).
    pub beta: f64,
    /// MAX_BURST (RFC: 150 ms).
    pub max_burst: Nanos,
    /// MEAN_PKTSIZE of the early-drop safeguard (default 1500 bytes).
    pub mean_packet_bytes: u32,
    /// With ECN on, mark instead of drop while drop_prob ≤ this (RFC: 10 %).
    pub mark_ecnth: f64,
}

impl Default for PieParams {
    fn default() -> Self {
        PieParams {
            target: 15_000_000,
            t_update: 15_000_000,
            alpha: 0.125,
            beta: 1.25,
            max_burst: 150_000_000,
            mean_packet_bytes: 1500,
            mark_ecnth: 0.1,
        }
    }
}

/// The shortest update period accepted (100 µs, 150 times the RFC's): updates are
/// replayed one by one while the controller moves.
pub const MIN_T_UPDATE: Nanos = 100_000;

/// The default hard limit (Linux `pie`'s).
pub const DEFAULT_LIMIT: QueueLimit = QueueLimit::Packets(1000);

/// Checks the PI controller's parameters, which PIE and DualPI2 share.
pub fn check_pi(target: Nanos, t_update: Nanos, alpha: f64, beta: f64) -> Result<(), String> {
    require_positive("target_ns", target)?;
    require(t_update >= MIN_T_UPDATE, "t_update_ns", "≥ 100000 (100 µs)", t_update)?;
    require_non_negative("alpha", alpha, "1/s")?;
    require_non_negative("beta", beta, "1/s")
}

impl Options for PieParams {
    const CLASS: Class = Class::aqm(
        "pie",
        "PIE, Proportional Integral controller Enhanced (RFC 8033)",
        Self::PARAMETERS,
        DEFAULT_LIMIT,
    );
    parameters! {
        target => "target_ns",
        t_update => "t_update_ns",
        alpha => "alpha",
        beta => "beta",
        max_burst => "max_burst_ns",
        mean_packet_bytes => "mean_packet_bytes",
        mark_ecnth => "mark_ecnth",
    }
    fn check(&self) -> Result<(), String> {
        check_pi(self.target, self.t_update, self.alpha, self.beta)?;
        let ok = (0.0..=1.0).contains(&self.mark_ecnth);
        require(ok, "mark_ecnth", "a probability in [0, 1]", self.mark_ecnth)
    }
    fn build<P: Send + 'static>(&self, limit: QueueLimit, ecn: bool, _link: &Link) -> Box<dyn Discipline<P>> {
        Box::new(Pie::new(*self, limit, ecn))
    }
}

#[derive(Debug)]
pub struct Pie<P> {
    params: PieParams,
    limit: QueueLimit,
    ecn: bool,
    fifo: Fifo<P>,
    drop_prob: f64,
    accu_prob: f64,
    qdelay: Nanos,
    qdelay_old: Nanos,
    burst_allowance: Nanos,
    /// The next update instant (a multiple of `t_update`).
    next_update: Nanos,
}

const SECOND: f64 = 1e9;

impl<P> Pie<P> {
    /// `params.t_update` must be > 0.
    pub fn new(params: PieParams, limit: QueueLimit, ecn: bool) -> Self {
        Pie {
            params,
            limit,
            ecn,
            fifo: Fifo::default(),
            drop_prob: 0.0,
            accu_prob: 0.0,
            qdelay: 0,
            qdelay_old: 0,
            burst_allowance: params.max_burst,
            next_update: params.t_update,
        }
    }

    pub fn drop_prob(&self) -> f64 {
        self.drop_prob
    }

    pub fn burst_allowance(&self) -> Nanos {
        self.burst_allowance
    }

    /// The current queueing-delay sample.
    pub fn qdelay(&self) -> Nanos {
        self.qdelay
    }

    pub fn accu_prob(&self) -> f64 {
        self.accu_prob
    }

    /// Runs the updates due at or before `now`. Between packet events an update's input
    /// (qdelay) does not change, so once an update leaves the state as it was, every later
    /// one does too: the replay then jumps to the last update due.
    pub fn catch_up(&mut self, now: Nanos) {
        while self.next_update <= now {
            let before = (self.drop_prob.to_bits(), self.burst_allowance, self.qdelay_old);
            self.update();
            let t = self.params.t_update;
            if (self.drop_prob.to_bits(), self.burst_allowance, self.qdelay_old) == before {
                self.next_update = (now / t).saturating_add(1).saturating_mul(t);
                return;
            }
            if self.next_update == Nanos::MAX {
                return; // the end of u64 time: no later update
            }
            self.next_update = self.next_update.saturating_add(t);
        }
    }

    fn update(&mut self) {
        let pr = &self.params;
        let secs = |ns: Nanos| ns as f64 / SECOND;
        let mut p =
            pr.alpha * (secs(self.qdelay) - secs(pr.target)) + pr.beta * (secs(self.qdelay) - secs(self.qdelay_old));
        let prob = self.drop_prob;
        p /= if prob < 1e-6 {
            2048.0
        } else if prob < 1e-5 {
            512.0
        } else if prob < 1e-4 {
            128.0
        } else if prob < 1e-3 {
            32.0
        } else if prob < 1e-2 {
            8.0
        } else if prob < 1e-1 {
            2.0
        } else {
            1.0
        };
        if prob >= 0.1 && p > 0.02 {
            p = 0.02;
        }
        self.drop_prob += p;
        if self.qdelay == 0 && self.qdelay_old == 0 {
            self.drop_prob *= 0.98;
        }
        self.drop_prob = self.drop_prob.clamp(0.0, 1.0);
        self.burst_allowance = self.burst_allowance.saturating_sub(pr.t_update);
        let low = |d: Nanos| u128::from(d) * 2 < u128::from(pr.target);
        if self.drop_prob == 0.0 && low(self.qdelay) && low(self.qdelay_old) {
            self.burst_allowance = pr.max_burst;
        }
        self.qdelay_old = self.qdelay;
    }

    /// RFC 8033 `drop_early`, derandomised.
    fn drop_early(&mut self, cx: &mut Context<'_, P>) -> bool {
        let low_delay = u128::from(self.qdelay_old) * 2 < u128::from(self.params.target);
        if (low_delay && self.drop_prob < 0.2)
            || self.fifo.backlog().bytes <= 2 * u64::from(self.params.mean_packet_bytes)
        {
            return false;
        }
        if self.drop_prob == 0.0 {
            self.accu_prob = 0.0;
        }
        self.accu_prob += self.drop_prob;
        if self.accu_prob < 0.85 {
            return false;
        }
        if self.accu_prob >= 8.5 {
            return true;
        }
        unit(cx.rng) < self.drop_prob
    }
}

impl<P: Send> Discipline<P> for Pie<P> {
    fn enqueue(&mut self, packet: Packet<P>, now: Nanos, cx: &mut Context<'_, P>) -> Result<(), Dropped<P>> {
        self.catch_up(now);
        let mut packet = self
            .limit
            .admit(self.fifo.backlog().plus(cx.on_wire), packet)
            .inspect_err(|_| self.accu_prob = 0.0)?;
        if self.burst_allowance == 0 && self.drop_early(cx) {
            self.accu_prob = 0.0;
            let marked = self.ecn && self.drop_prob <= self.params.mark_ecnth && cx.mark(&mut packet, now);
            if !marked {
                return Err(Dropped {
                    packet,
                    reason: DropReason::AqmDrop,
                });
            }
        }
        self.fifo.push(packet, now);
        Ok(())
    }

    fn dequeue(&mut self, now: Nanos, _cx: &mut Context<'_, P>) -> Option<Packet<P>> {
        self.catch_up(now);
        let (packet, enqueued) = self.fifo.pop()?;
        self.qdelay = if self.fifo.is_empty() {
            0
        } else {
            now.saturating_sub(enqueued)
        };
        Some(packet)
    }

    fn backlog(&self) -> Backlog {
        self.fifo.backlog()
    }
}
