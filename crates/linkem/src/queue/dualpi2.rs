//! DualPI2, the DualQ Coupled AQM of L4S (RFC 9332, Appendix A): two queues sharing one
//! limit — L for L4S traffic (ECT(1) and CE packets), C for classic (not-ECT and ECT(0))
//! — and one PI controller whose base probability p' couples them.
//!
//! * Enqueue (RFC 9332 Figure 3): the shared limit first (tail drop,
//!   [`crate::DropReason::QueueFull`]; it counts both queues and the packet on the
//!   wire, like every discipline here); then ECT(1) or CE → L, otherwise → C.
//! * Every `t_update` (at each multiple of `t_update` since time 0, replayed lazily like
//!   PIE, see [`crate::queue`]), Figure 5: curq = sojourn time of C's head packet (0 when
//!   C is empty); p' += α·(curq − target) + β·(curq − prevq), seconds; p' kept in [0, 1];
//!   p_CL = k·p' (at most 1), p_C = p'²; prevq = curq.
//! * Dequeue (Figure 4), the scheduler first: a time-shifted FIFO (RFC 9332 §4.2.2 names
//!   it as one choice): L's head goes unless C's head has waited more than `tshift`
//!   longer. From L: p'_L = the native ramp on L's head sojourn — 0 up to `l_threshold`,
//!   linear to 1 over `l_range`, 1 beyond; no native marking while L holds at most one
//!   packet (the RFC's Th_len = 1); p_L = max(p'_L, p_CL); the packet is marked CE by the
//!   RFC's deterministic `recur`: a counter adds p_L per packet and marks each time it
//!   passes 1. From C: with probability p_C (the stage's RNG) the packet is dropped
//!   ([`crate::DropReason::AqmDrop`]) and the next one considered — or, with `ecn` on and
//!   the packet ECT(0), marked CE instead.
//!
//! Not included: the overload handling of RFC 9332 §4.2.3 (switching L4S traffic to
//! drop when p_C would exceed p_Cmax = 1/k²); p_CL and p_C are clamped instead.

use super::pie::check_pi;
use super::{Backlog, Context, Discipline, Fifo, QueueLimit};
use crate::link::Link;
use crate::rng::unit;
use crate::spec::queue::{parameters, require, Class, Options};
use crate::{DropReason, Dropped, Ecn, Nanos, Packet};

/// RFC 9332 parameters (Linux `dualpi2`'s defaults where the RFC gives a formula).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DualPi2Params {
    /// The classic queue's delay target (RFC: 15 ms).
    pub target: Nanos,
    /// Tupdate (Linux: 16 ms).
    pub t_update: Nanos,
    /// α in Hz (Linux: 0.16).
    pub alpha: f64,
    /// β in Hz (Linux: 3.2).
    pub beta: f64,
    /// Coupling factor k (RFC: 2).
    pub k: f64,
    /// Start of the L4S marking ramp (RFC: 800 µs).
    pub l_threshold: Nanos,
    /// Width of the ramp (RFC: 400 µs); 0 makes it a step.
    pub l_range: Nanos,
    /// How much longer a classic head packet may wait than the L4S head before it goes
    /// first (the time-shifted FIFO's shift; 40 ms here).
    pub tshift: Nanos,
}

impl Default for DualPi2Params {
    fn default() -> Self {
        DualPi2Params {
            target: 15_000_000,
            t_update: 16_000_000,
            alpha: 0.16,
            beta: 3.2,
            k: 2.0,
            l_threshold: 800_000,
            l_range: 400_000,
            tshift: 40_000_000,
        }
    }
}

/// The default limit (Linux `dualpi2`'s).
pub const DEFAULT_LIMIT: QueueLimit = QueueLimit::Packets(10_000);

impl Options for DualPi2Params {
    const CLASS: Class = Class {
        fifo: false,
        l4s: true,
        ..Class::aqm(
            "dualpi2",
            "DualPI2, the dual-queue coupled AQM for L4S (RFC 9332)",
            Self::PARAMETERS,
            DEFAULT_LIMIT,
        )
    };
    parameters! {
        target => "target_ns",
        t_update => "t_update_ns",
        alpha => "alpha",
        beta => "beta",
        k => "k",
        l_threshold => "l_threshold_ns",
        l_range => "l_range_ns",
        tshift => "tshift_ns",
    }
    fn check(&self) -> Result<(), String> {
        check_pi(self.target, self.t_update, self.alpha, self.beta)?;
        require(self.k.is_finite() && self.k > 0.0, "k", "a number > 0", self.k)
    }
    fn build<P: Send + 'static>(&self, limit: QueueLimit, ecn: bool, _link: &Link) -> Box<dyn Discipline<P>> {
        Box::new(DualPi2::new(*self, limit, ecn))
    }
}

const SECOND: f64 = 1e9;

#[derive(Debug)]
pub struct DualPi2<P> {
    params: DualPi2Params,
    limit: QueueLimit,
    ecn: bool,
    l: Fifo<P>,
    c: Fifo<P>,
    /// p', the PI controller's base probability.
    base: f64,
    prevq: Nanos,
    /// The L queue's `recur` counter.
    l_count: f64,
    next_update: Nanos,
}

impl<P> DualPi2<P> {
    /// `params.t_update` must be > 0.
    pub fn new(params: DualPi2Params, limit: QueueLimit, ecn: bool) -> Self {
        DualPi2 {
            params,
            limit,
            ecn,
            l: Fifo::default(),
            c: Fifo::default(),
            base: 0.0,
            prevq: 0,
            l_count: 0.0,
            next_update: params.t_update,
        }
    }

    /// p', the base probability.
    pub fn base_prob(&self) -> f64 {
        self.base
    }

    /// p_C = p'², the classic drop (or mark) probability.
    pub fn classic_prob(&self) -> f64 {
        self.base * self.base
    }

    /// p_CL = k·p', the coupled L4S marking probability.
    pub fn coupled_prob(&self) -> f64 {
        (self.params.k * self.base).min(1.0)
    }

    /// Packets waiting in (L, C).
    pub fn lengths(&self) -> (usize, usize) {
        (self.l.len(), self.c.len())
    }

    fn head_sojourn(q: &Fifo<P>, now: Nanos) -> Option<Nanos> {
        q.head_time().map(|t| now.saturating_sub(t))
    }

    /// Runs the PI updates due at or before `now` (C's head does not change between
    /// packet events, so each replayed update sees the head it would have seen).
    pub fn catch_up(&mut self, now: Nanos) {
        while self.next_update <= now {
            let at = self.next_update;
            let before = (self.base.to_bits(), self.prevq);
            let curq = Self::head_sojourn(&self.c, at).unwrap_or(0);
            let secs = |ns: Nanos| ns as f64 / SECOND;
            let p = &self.params;
            self.base += p.alpha * (secs(curq) - secs(p.target)) + p.beta * (secs(curq) - secs(self.prevq));
            self.base = self.base.clamp(0.0, 1.0);
            self.prevq = curq;
            let t = self.params.t_update;
            // With C empty the state stops changing once p' is 0 and prevq 0: jump ahead.
            if self.c.is_empty() && (self.base.to_bits(), self.prevq) == before {
                self.next_update = (now / t).saturating_add(1).saturating_mul(t);
                return;
            }
            if self.next_update == Nanos::MAX {
                return;
            }
            self.next_update = self.next_update.saturating_add(t);
        }
    }

    /// The native L4S ramp on sojourn `q`.
    fn ramp(&self, q: Nanos) -> f64 {
        let p = &self.params;
        if q <= p.l_threshold {
            0.0
        } else if q >= p.l_threshold + p.l_range {
            1.0
        } else {
            (q - p.l_threshold) as f64 / p.l_range as f64
        }
    }

    /// The time-shifted FIFO: whether L's head goes next.
    fn l_first(&self, now: Nanos) -> bool {
        match (Self::head_sojourn(&self.l, now), Self::head_sojourn(&self.c, now)) {
            (Some(l), Some(c)) => l.saturating_add(self.params.tshift) >= c,
            (Some(_), None) => true,
            _ => false,
        }
    }
}

impl<P: Send> Discipline<P> for DualPi2<P> {
    fn enqueue(&mut self, packet: Packet<P>, now: Nanos, cx: &mut Context<'_, P>) -> Result<(), Dropped<P>> {
        self.catch_up(now);
        let held = self.l.backlog().plus(self.c.backlog()).plus(cx.on_wire);
        let packet = self.limit.admit(held, packet)?;
        match packet.ecn {
            Ecn::Ect1 | Ecn::Ce => self.l.push(packet, now),
            Ecn::NotEct | Ecn::Ect0 => self.c.push(packet, now),
        }
        Ok(())
    }

    fn dequeue(&mut self, now: Nanos, cx: &mut Context<'_, P>) -> Option<Packet<P>> {
        self.catch_up(now);
        loop {
            if self.l_first(now) {
                let native = if self.l.len() > 1 {
                    self.ramp(Self::head_sojourn(&self.l, now).unwrap_or(0))
                } else {
                    0.0
                };
                let (mut packet, _) = self.l.pop()?;
                self.l_count += native.max(self.coupled_prob());
                if self.l_count > 1.0 {
                    self.l_count -= 1.0;
                    cx.mark(&mut packet, now);
                }
                return Some(packet);
            }
            let (mut packet, _) = self.c.pop()?;
            if unit(cx.rng) < self.classic_prob() {
                let marked = self.ecn && packet.ecn == Ecn::Ect0 && cx.mark(&mut packet, now);
                if !marked {
                    cx.drop(packet, DropReason::AqmDrop, now);
                    continue;
                }
            }
            return Some(packet);
        }
    }

    fn backlog(&self) -> Backlog {
        self.l.backlog().plus(self.c.backlog())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::StageRng;
    use crate::Notice;
    use std::collections::VecDeque;

    const MS: Nanos = 1_000_000;

    fn packet(id: u64, ecn: Ecn) -> Packet<()> {
        Packet::new(id, 1500, ()).with_ecn(ecn)
    }

    struct Harness {
        q: DualPi2<()>,
        rng: StageRng,
        notices: VecDeque<Notice<()>>,
    }

    impl Harness {
        fn new(params: DualPi2Params, ecn: bool) -> Self {
            Harness {
                q: DualPi2::new(params, DEFAULT_LIMIT, ecn),
                rng: StageRng::new(7),
                notices: VecDeque::new(),
            }
        }
        fn enqueue(&mut self, p: Packet<()>, now: Nanos) {
            let mut cx = Context::new(Backlog::default(), None, &mut self.rng, &mut self.notices);
            self.q.enqueue(p, now, &mut cx).unwrap();
        }
        fn dequeue(&mut self, now: Nanos) -> Option<Packet<()>> {
            let mut cx = Context::new(Backlog::default(), None, &mut self.rng, &mut self.notices);
            self.q.dequeue(now, &mut cx)
        }
    }

    #[test]
    fn ect1_and_ce_go_to_l_the_rest_to_c() {
        let mut h = Harness::new(DualPi2Params::default(), false);
        for (i, e) in [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce].into_iter().enumerate() {
            h.enqueue(packet(i as u64, e), 0);
        }
        assert_eq!(h.q.lengths(), (2, 2));
        // L first (the time-shifted FIFO: neither head has waited), in order, then C.
        let order: Vec<u64> = (0..4).map(|_| h.dequeue(0).unwrap().id).collect();
        assert_eq!(order, vec![2, 3, 0, 1]);
    }

    /// A classic packet waits from time 0; the updates at 16, 32 and 48 ms see it
    /// 16, 32 and 48 ms old: p' = 0.16·(0.016 − 0.015) + 3.2·(0.016 − 0) = 0.05136, then
    /// 0.05136 + 0.16·0.017 + 3.2·0.016 = 0.10528, then 0.10528 + 0.16·0.033 + 3.2·0.016 =
    /// 0.16176; and p_C = p'², p_CL = 2·p'.
    #[test]
    fn pi_update_by_hand() {
        let mut h = Harness::new(DualPi2Params::default(), false);
        h.enqueue(packet(0, Ecn::NotEct), 0);
        let mut want = 0.0;
        for (t, p) in [(16, 0.05136), (32, 0.10528), (48, 0.16176)] {
            h.q.catch_up(t * MS);
            want = p;
            assert!(
                (h.q.base_prob() - want).abs() < 1e-12,
                "t = {t} ms: {}",
                h.q.base_prob()
            );
        }
        assert!((h.q.classic_prob() - want * want).abs() < 1e-12);
        assert!((h.q.coupled_prob() - 2.0 * want).abs() < 1e-12);
    }

    /// The native ramp: a head sojourn of 1 ms (800 µs + half the 400 µs range) gives
    /// p'_L = 0.5, and `recur` (mark when the running sum passes 1) then marks the 3rd,
    /// 5th, 7th … packet: sums 0.5, 1.0, 1.5 → mark, 1.0, 1.5 → mark, …; below the
    /// threshold nothing is marked (p' is 0: no classic traffic).
    #[test]
    fn l4s_ramp_marks_deterministically() {
        let mut h = Harness::new(DualPi2Params::default(), false);
        for i in 0..40 {
            h.enqueue(packet(i, Ecn::Ect1), 0);
        }
        let marks: Vec<bool> = (0..20).map(|_| h.dequeue(MS).unwrap().ecn == Ecn::Ce).collect();
        let want: Vec<bool> = (0..20).map(|i| i >= 2 && i % 2 == 0).collect();
        assert_eq!(marks, want);
        let unmarked: Vec<bool> = (0..19).map(|_| h.dequeue(0).unwrap().ecn == Ecn::Ce).collect();
        assert!(unmarked.iter().all(|&m| !m));
    }

    /// Coupling: a classic standing queue drives p' up; L4S packets with no queue of
    /// their own are then marked at p_CL = k·p' (every 1/p_CL-th packet), never dropped.
    #[test]
    fn classic_congestion_marks_l4s_at_the_coupled_rate() {
        // A long time shift keeps the classic packet waiting behind the L4S ones.
        let params = DualPi2Params {
            tshift: 1_000 * MS,
            ..DualPi2Params::default()
        };
        let mut h = Harness::new(params, false);
        h.enqueue(packet(0, Ecn::NotEct), 0);
        h.q.catch_up(48 * MS);
        let p_cl = h.q.coupled_prob();
        assert!((p_cl - 2.0 * 0.16176).abs() < 1e-12);
        // One L packet at a time (no native marking), dequeued at 48 ms, before the next update.
        let mut marked = 0;
        for i in 1..=1000 {
            h.enqueue(packet(i, Ecn::Ect1), 48 * MS);
            if h.dequeue(48 * MS).unwrap().ecn == Ecn::Ce {
                marked += 1;
            }
        }
        assert_eq!(marked, (1000.0 * p_cl).floor() as usize);
    }

    /// Classic packets are dropped with probability p_C, or marked with ECN on if ECT(0);
    /// the drops are reported as AQM drops.
    #[test]
    fn classic_drops_or_marks_at_p_c() {
        for ecn in [false, true] {
            let mut h = Harness::new(DualPi2Params::default(), ecn);
            h.enqueue(packet(0, Ecn::Ect0), 0);
            h.q.catch_up(160 * MS);
            let p_c = h.q.classic_prob();
            assert!(p_c > 0.3, "{p_c}");
            let mut ce = 0;
            let mut out = 0;
            for i in 1..=2000 {
                h.enqueue(packet(i, Ecn::Ect0), 160 * MS);
                if let Some(p) = h.dequeue(160 * MS) {
                    out += 1;
                    ce += usize::from(p.ecn == Ecn::Ce);
                }
            }
            let drops = h
                .notices
                .iter()
                .filter(|n| {
                    matches!(
                        n,
                        Notice::Dropped {
                            reason: DropReason::AqmDrop,
                            ..
                        }
                    )
                })
                .count();
            let hit = if ecn { ce } else { drops };
            assert!(
                (hit as f64 / 2000.0 - p_c).abs() < 0.05,
                "ecn {ecn}: {hit} of 2000 at p_C {p_c}"
            );
            assert_eq!(if ecn { drops } else { ce }, 0);
            assert!(out > 0);
        }
    }
}
