//! RED, Random Early Detection (Floyd & Jacobson 1993; recommended by RFC 2309), with
//! the "gentle" variant (Floyd 2000).
//!
//! At each arrival the average queue `avg` is updated: `avg ← (1 − w_q)·avg + w_q·q`
//! with `q` the packets in the queue (waiting plus the one on the wire, the lab's
//! occupancy); if the queue is empty, it is aged instead over the time the link has been
//! idle: `avg ← (1 − w_q)^m·avg`, `m` = idle time / the time the link takes to send a
//! packet of `avpkt_bytes`. Then the drop probability
//!
//! * `avg < min_th`: p_b = 0 (and `count ← −1`);
//! * `min_th ≤ avg < max_th`: p_b = max_p·(avg − min_th)/(max_th − min_th), linear;
//! * gentle, `max_th ≤ avg < 2·max_th`: p_b = max_p + (1 − max_p)·(avg − max_th)/max_th,
//!   linear from max_p to 1;
//! * `avg ≥ max_th` (not gentle) or `avg ≥ 2·max_th` (gentle): every packet (p_b = 1);
//!
//! and the packet is dropped (ECN on and ECN-capable: marked) with probability
//! `p_a = p_b/(1 − count·p_b)` (1 once the denominator reaches 0), `count` the packets
//! since the last drop or mark in the linear regions, which spaces drops evenly: the
//! number of packets between two is uniform on 1 … 1/p_b − 1 at a constant p_b. A forced
//! drop sets `count ← 0`. The hard limit is tail drop ([`crate::DropReason::QueueFull`]),
//! checked after RED's decision (a packet RED would mark but that does not fit is
//! dropped, not marked); RED's drops are [`crate::DropReason::AqmDrop`].
//!
//! Thresholds are in packets. Defaults: Floyd's recommendations (min_th 5, max_th
//! 3·min_th = 15, max_p 0.1, w_q 0.002, gentle on); `avpkt_bytes` 1000 (tc-red's usual).

use super::{Backlog, Context, Discipline, Fifo, QueueLimit};
use crate::link::Link;
use crate::rng::unit;
use crate::spec::queue::{
    parameters, require, require_fraction, require_non_negative, require_positive, Class, Options,
};
use crate::{DropReason, Dropped, Nanos, Packet};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RedParams {
    /// Average queue (packets) below which nothing is dropped.
    pub min_th: f64,
    /// Average queue (packets) at which the probability reaches `max_p`.
    pub max_th: f64,
    pub max_p: f64,
    /// Weight of the queue sample in the average.
    pub w_q: f64,
    /// Between max_th and 2·max_th, rise linearly from max_p to 1 instead of jumping to 1.
    pub gentle: bool,
    /// Packet size whose transmission time is the unit of idle-time ageing.
    pub avpkt_bytes: u32,
}

impl Default for RedParams {
    fn default() -> Self {
        RedParams {
            min_th: 5.0,
            max_th: 15.0,
            max_p: 0.1,
            w_q: 0.002,
            gentle: true,
            avpkt_bytes: 1000,
        }
    }
}

/// The default hard limit.
pub const DEFAULT_LIMIT: QueueLimit = QueueLimit::Packets(1000);

impl Options for RedParams {
    const CLASS: Class = Class::aqm(
        "red",
        "Random Early Detection (Floyd & Jacobson 1993), with the gentle variant",
        Self::PARAMETERS,
        DEFAULT_LIMIT,
    );
    parameters! {
        min_th => "min_th",
        max_th => "max_th",
        max_p => "max_p",
        w_q => "w_q",
        gentle => "gentle",
        avpkt_bytes => "avpkt_bytes",
    }
    fn check(&self) -> Result<(), String> {
        require_non_negative("min_th", self.min_th, "packets")?;
        let max_th_ok = self.max_th.is_finite() && self.max_th > self.min_th;
        require(max_th_ok, "max_th", "a number > min_th (packets)", self.max_th)?;
        require_fraction("max_p", self.max_p)?;
        require_fraction("w_q", self.w_q)?;
        require_positive("avpkt_bytes", self.avpkt_bytes)
    }
    fn build<P: Send + 'static>(&self, limit: QueueLimit, ecn: bool, link: &Link) -> Box<dyn Discipline<P>> {
        Box::new(Red::new(*self, limit, ecn, link.mean_tx_ns(self.avpkt_bytes)))
    }
}

impl RedParams {
    /// p_b for an average queue of `avg` packets (see the module documentation).
    pub fn probability(&self, avg: f64) -> f64 {
        if avg < self.min_th {
            0.0
        } else if avg < self.max_th {
            self.max_p * (avg - self.min_th) / (self.max_th - self.min_th)
        } else if self.gentle && avg < 2.0 * self.max_th {
            self.max_p + (1.0 - self.max_p) * (avg - self.max_th) / self.max_th
        } else {
            1.0
        }
    }

    /// Whether `avg` is in the region where every packet is dropped.
    fn forced(&self, avg: f64) -> bool {
        avg >= if self.gentle { 2.0 * self.max_th } else { self.max_th }
    }
}

/// p_a = p_b/(1 − count·p_b), 1 once the denominator is ≤ 0.
pub fn spaced_probability(p_b: f64, count: i64) -> f64 {
    let denominator = 1.0 - count as f64 * p_b;
    if denominator <= 0.0 {
        1.0
    } else {
        (p_b / denominator).min(1.0)
    }
}

#[derive(Debug)]
pub struct Red<P> {
    params: RedParams,
    limit: QueueLimit,
    ecn: bool,
    /// Time the link takes to send `avpkt_bytes` (ns).
    avpkt_tx_ns: f64,
    fifo: Fifo<P>,
    avg: f64,
    count: i64,
}

impl<P> Red<P> {
    /// `avpkt_tx_ns`: the link's time to send a packet of `params.avpkt_bytes` (> 0).
    pub fn new(params: RedParams, limit: QueueLimit, ecn: bool, avpkt_tx_ns: f64) -> Self {
        Red {
            params,
            limit,
            ecn,
            avpkt_tx_ns,
            fifo: Fifo::default(),
            avg: 0.0,
            count: -1,
        }
    }

    /// The average queue after the last arrival.
    pub fn avg(&self) -> f64 {
        self.avg
    }

    /// Packets since the last drop or mark (−1: below min_th).
    pub fn count(&self) -> i64 {
        self.count
    }

    /// Updates `avg` for an arrival at `now` and decides: `true` = drop or mark it.
    fn decide(&mut self, now: Nanos, cx: &mut Context<'_, P>) -> bool {
        let q = self.fifo.backlog().plus(cx.on_wire).packets;
        let w = self.params.w_q;
        if q > 0 {
            self.avg = (1.0 - w) * self.avg + w * q as f64;
        } else if let Some(since) = cx.idle_since {
            let m = now.saturating_sub(since) as f64 / self.avpkt_tx_ns;
            self.avg *= (1.0 - w).powf(m);
        }
        if self.avg < self.params.min_th {
            self.count = -1;
            false
        } else if self.params.forced(self.avg) {
            self.count = 0;
            true
        } else {
            self.count += 1;
            let p_b = self.params.probability(self.avg);
            if unit(cx.rng) < spaced_probability(p_b, self.count) {
                self.count = 0;
                true
            } else {
                false
            }
        }
    }
}

impl<P: Send> Discipline<P> for Red<P> {
    fn enqueue(&mut self, packet: Packet<P>, now: Nanos, cx: &mut Context<'_, P>) -> Result<(), Dropped<P>> {
        let congested = self.decide(now, cx);
        let mark = congested && self.ecn && packet.ecn.is_capable();
        if congested && !mark {
            return Err(Dropped {
                packet,
                reason: DropReason::AqmDrop,
            });
        }
        let mut packet = self.limit.admit(self.fifo.backlog().plus(cx.on_wire), packet)?;
        if mark {
            cx.mark(&mut packet, now);
        }
        self.fifo.push(packet, now);
        Ok(())
    }

    served_in_arrival_order!();
}
