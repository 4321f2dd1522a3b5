//! Queue disciplines: the queue in front of a bottleneck's link.
//!
//! A discipline holds the packets waiting for the link and answers three things:
//! `enqueue` (a packet arrives: hold it, or refuse it), `dequeue(now)` (the link is free:
//! which packet goes next) and its backlog. [`crate::rate::RateQueue`] composes one with
//! a [`crate::link::Link`], like Mahimahi composes its queue classes with its link, but
//! in exact virtual time: the link asks for the next packet exactly when it can start
//! one, so a discipline that decides at dequeue time (CoDel) acts on the packet's true
//! sojourn time.
//!
//! What a discipline does to packets it already holds (drops at the head, ECN marks) it
//! reports through its [`Context`]; the stage hands those out as [`crate::Notice`]s.
//! Disciplines are work-conserving: `dequeue` returns `None` only when it holds nothing
//! (after any drops it made). Every random decision comes from the stage's RNG, passed in
//! the context. Periodic updates (PIE's every `t_update`) happen at fixed multiples of
//! their period, replayed on the discipline's next `enqueue` or `dequeue`: nothing else
//! reads or changes its state in between, so this gives exactly what a timer would.
//!
//! Occupancy: a discipline's limit counts the packets it holds **plus the one the link is
//! serialising** ([`Context::on_wire`]), so a queue of N packets accepts exactly N of a
//! burst arriving at one instant, whatever the rate (drop-tail's rule, kept for all). An
//! AQM's own measures of the queue (RED's average, CoDel's and PIE's backlog checks)
//! count what the RFC's queue holds: the packets waiting (RED: waiting plus on the wire,
//! see [`red`]).
//!
//! Disciplines, one per module, each declaring its own options, parsing and description
//! ([`crate::spec::queue::Options`]), registered once in [`crate::spec::queue::DISCIPLINES`].

use std::collections::VecDeque;

use crate::rng::StageRng;
use crate::{DropReason, Dropped, Mark, Nanos, Notice, Packet};

/// `dequeue` and `backlog` of a discipline that decides everything at enqueue and serves
/// its `fifo` in arrival order (drop-tail, drop-head, RED).
macro_rules! served_in_arrival_order {
    () => {
        fn dequeue(&mut self, _now: Nanos, _cx: &mut Context<'_, P>) -> Option<Packet<P>> {
            self.fifo.pop_packet()
        }

        fn backlog(&self) -> Backlog {
            self.fifo.backlog()
        }
    };
}

pub mod codel;
pub mod drop_head;
pub mod drop_tail;
pub mod dualpi2;
pub mod fq_codel;
pub mod pie;
pub mod red;

pub use crate::spec::QueueLimit;
pub use drop_head::DropHead;
pub use drop_tail::DropTail;

/// What a queue holds at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Backlog {
    pub packets: u64,
    pub bytes: u64,
}

impl Backlog {
    pub(crate) fn add(&mut self, size: u32) {
        self.packets += 1;
        self.bytes += u64::from(size);
    }

    pub(crate) fn remove(&mut self, size: u32) {
        self.packets -= 1;
        self.bytes -= u64::from(size);
    }

    /// The two together.
    pub fn plus(self, other: Backlog) -> Backlog {
        Backlog {
            packets: self.packets + other.packets,
            bytes: self.bytes + other.bytes,
        }
    }
}

impl QueueLimit {
    /// Whether a packet of `size` bytes may join `occupancy` (the packets held and the one
    /// on the wire).
    pub fn admits(&self, occupancy: Backlog, size: u32) -> bool {
        match *self {
            QueueLimit::Packets(n) => occupancy.packets < u64::from(n),
            QueueLimit::Bytes(n) => occupancy.bytes + u64::from(size) <= n,
            QueueLimit::Unlimited => true,
        }
    }

    /// `packet` back if it may join `occupancy`, else refused as [`DropReason::QueueFull`]:
    /// every discipline's hard limit.
    pub fn admit<P>(&self, occupancy: Backlog, packet: Packet<P>) -> Result<Packet<P>, Dropped<P>> {
        if self.admits(occupancy, packet.size) {
            Ok(packet)
        } else {
            Err(Dropped {
                packet,
                reason: DropReason::QueueFull,
            })
        }
    }
}

/// What the stage tells a discipline at each call, and where the discipline reports what
/// it did to packets it held.
pub struct Context<'a, P> {
    /// The packet the link is serialising (0 or 1 packet); counted against limits.
    pub on_wire: Backlog,
    /// When the link holds nothing at all (nothing waiting, nothing on the wire): since
    /// when. `None` while busy.
    pub idle_since: Option<Nanos>,
    /// The stage's seeded RNG: every random decision of the discipline.
    pub rng: &'a mut StageRng,
    notices: &'a mut VecDeque<Notice<P>>,
}

impl<'a, P> Context<'a, P> {
    pub fn new(
        on_wire: Backlog,
        idle_since: Option<Nanos>,
        rng: &'a mut StageRng,
        notices: &'a mut VecDeque<Notice<P>>,
    ) -> Self {
        Context {
            on_wire,
            idle_since,
            rng,
            notices,
        }
    }

    /// Reports a packet the discipline held and dropped at `at`.
    pub fn drop(&mut self, packet: Packet<P>, reason: DropReason, at: Nanos) {
        self.notices.push_back(Notice::Dropped { packet, reason, at });
    }

    /// ECN-marks `packet` at `at` if it is ECN-capable (ECT(0), ECT(1) or already CE):
    /// sets CE, reports the mark and returns `true`; a not-ECT packet is left alone
    /// (`false`: the caller drops it instead).
    pub fn mark(&mut self, packet: &mut Packet<P>, at: Nanos) -> bool {
        if !packet.ecn.is_capable() {
            return false;
        }
        let mark = Mark::of(packet, packet.ecn);
        packet.ecn = crate::Ecn::Ce;
        self.notices.push_back(Notice::Marked { mark, at });
        true
    }
}

/// A queue discipline (see the module documentation for the contract).
pub trait Discipline<P>: Send {
    /// A packet arrives at `now`: held (`Ok`, possibly ECN-marked, possibly after dropping
    /// another packet it held to make room) or refused with a reason.
    fn enqueue(&mut self, packet: Packet<P>, now: Nanos, cx: &mut Context<'_, P>) -> Result<(), Dropped<P>>;
    /// The link can start a packet at `now`: the one to send, after any drops or marks the
    /// discipline makes on the way; `None` only when it holds nothing.
    fn dequeue(&mut self, now: Nanos, cx: &mut Context<'_, P>) -> Option<Packet<P>>;
    /// The packets it holds (not counting the one on the wire).
    fn backlog(&self) -> Backlog;
    fn len(&self) -> usize {
        self.backlog().packets as usize
    }
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A FIFO of packets with their enqueue times and its byte count: the queue of drop-tail,
/// drop-head, RED, CoDel and PIE, and of each flow of FQ-CoDel.
#[derive(Debug)]
pub struct Fifo<P> {
    items: VecDeque<(Packet<P>, Nanos)>,
    backlog: Backlog,
}

impl<P> Default for Fifo<P> {
    fn default() -> Self {
        Fifo {
            items: VecDeque::new(),
            backlog: Backlog::default(),
        }
    }
}

impl<P> Fifo<P> {
    pub fn push(&mut self, packet: Packet<P>, at: Nanos) {
        self.backlog.add(packet.size);
        self.items.push_back((packet, at));
    }

    /// Holds `packet` if, with it, the occupancy (what it holds + `on_wire`) stays within
    /// `limit`, else refuses it (drop-tail's rule, and the last check of CoDel's).
    pub fn push_within(
        &mut self,
        limit: QueueLimit,
        on_wire: Backlog,
        packet: Packet<P>,
        at: Nanos,
    ) -> Result<(), Dropped<P>> {
        let packet = limit.admit(self.backlog.plus(on_wire), packet)?;
        self.push(packet, at);
        Ok(())
    }

    /// The head packet, without its enqueue time.
    pub fn pop_packet(&mut self) -> Option<Packet<P>> {
        self.pop().map(|(p, _)| p)
    }

    /// The head packet and the time it was enqueued.
    pub fn pop(&mut self) -> Option<(Packet<P>, Nanos)> {
        let (p, at) = self.items.pop_front()?;
        self.backlog.remove(p.size);
        Some((p, at))
    }

    pub fn backlog(&self) -> Backlog {
        self.backlog
    }

    /// When the head packet was enqueued.
    pub fn head_time(&self) -> Option<Nanos> {
        self.items.front().map(|&(_, at)| at)
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_count_what_is_held_and_on_the_wire() {
        let b = Backlog {
            packets: 2,
            bytes: 3000,
        };
        assert!(QueueLimit::Packets(3).admits(b, 1500));
        assert!(!QueueLimit::Packets(2).admits(b, 1500));
        assert!(QueueLimit::Bytes(4500).admits(b, 1500));
        assert!(!QueueLimit::Bytes(4499).admits(b, 1500));
        assert!(QueueLimit::Unlimited.admits(b, u32::MAX));
        let wire = Backlog {
            packets: 1,
            bytes: 1500,
        };
        assert!(!QueueLimit::Packets(3).admits(b.plus(wire), 1500));
    }

    #[test]
    fn admit_hands_back_what_fits_and_refuses_the_rest_as_queue_full() {
        let b = Backlog {
            packets: 2,
            bytes: 3000,
        };
        let fits = QueueLimit::Bytes(4500).admit(b, Packet::new(1, 1500, ()));
        assert_eq!(fits.map(|p| p.id).ok(), Some(1));
        let refused = QueueLimit::Bytes(4499)
            .admit(b, Packet::new(2, 1500, ()))
            .err()
            .unwrap();
        assert_eq!((refused.packet.id, refused.reason), (2, DropReason::QueueFull));
    }
}
