//! The bottleneck stage: a queue discipline ([`crate::queue`]) in front of a link that
//! serialises one packet at a time at a constant or trace-driven rate
//! ([`crate::link`]).
//!
//! The two are separate and meet at one point: when the link can start a packet
//! ([`Link::next_start`]: at once if idle, at the previous packet's finish, or on a trace
//! at the opportunity that would carry its first byte) it asks the discipline for the next
//! one (`dequeue` at that time), and fixes its finish time ([`Link::schedule`]). The
//! packet is due when its last bit has left, at its finish time. A discipline may drop
//! or mark packets at that moment (CoDel) or at arrival (RED, PIE); those are reported
//! through [`Stage::take_notice`] at the time they happen.
//!
//! Everything happens in exact virtual time and in a fixed order at one instant: the
//! link's finishes and starts due by an arrival's time happen before the arrival (a
//! packet finishing at `at` no longer counts at `at`), and a packet arriving at an idle
//! link starts at once. With drop-tail this is exactly the queue the lab always had:
//! occupancy counts the packets that have arrived and not yet finished serialisation,
//! *including the one being serialised*, so a queue of N packets accepts exactly N
//! packets of a burst arriving at one instant, whatever the rate; and the trace rules of
//! [`crate::link`] hold.

use std::collections::VecDeque;

use crate::link::Link;
pub use crate::link::{parse_mahimahi_trace, validate_trace, MAX_TRACE_MS, OPPORTUNITY_BYTES};
use crate::queue::{Backlog, Context, Discipline, DropTail, QueueLimit};
use crate::rng::{stage_rng, StageRng};
use crate::{Dropped, Nanos, Notice, Packet, Stage};

/// A queue discipline + a rate-limited link, as one stage.
pub struct RateQueue<P> {
    link: Link,
    queue: Box<dyn Discipline<P>>,
    rng: StageRng,
    /// The packet being serialised and its finish time.
    wire: Option<(Packet<P>, Nanos)>,
    /// The link is free and will take the discipline's next packet at this time (set only
    /// while the discipline holds packets).
    ready: Option<Nanos>,
    /// Nothing waiting and nothing on the wire since this time (`None`: busy).
    idle_since: Option<Nanos>,
    /// Packets fully serialised, not yet handed out, with their finish times.
    done: VecDeque<(Packet<P>, Nanos)>,
    /// Drops and marks of packets the discipline held, in time order.
    notices: VecDeque<Notice<P>>,
    /// Dropped packets among `notices` (still held until reported).
    dropped_pending: usize,
}

impl<P: Send + 'static> RateQueue<P> {
    /// A constant-rate link of `bits_per_sec` (> 0) behind a drop-tail queue.
    pub fn constant(bits_per_sec: u64, limit: QueueLimit) -> Result<Self, String> {
        Ok(Self::new(
            Link::constant(bits_per_sec)?,
            Box::new(DropTail::new(limit)),
            0,
        ))
    }

    /// A Mahimahi trace-driven link behind a drop-tail queue (see [`validate_trace`]).
    pub fn trace(opportunities_ms: Vec<u64>, limit: QueueLimit) -> Result<Self, String> {
        Ok(Self::new(
            Link::trace(opportunities_ms)?,
            Box::new(DropTail::new(limit)),
            0,
        ))
    }
}

impl<P> RateQueue<P> {
    /// `link` behind `queue`; the discipline's random decisions draw from the stream
    /// `seed`.
    pub fn new(link: Link, queue: Box<dyn Discipline<P>>, seed: u64) -> Self {
        RateQueue {
            link,
            queue,
            rng: stage_rng(seed),
            wire: None,
            ready: None,
            idle_since: Some(0),
            done: VecDeque::new(),
            notices: VecDeque::new(),
            dropped_pending: 0,
        }
    }

    /// Sets the time at which the trace starts ([`Link::set_origin`]). No effect at
    /// constant rate.
    pub fn with_origin(mut self, origin: Nanos) -> Self {
        self.link.set_origin(origin);
        self
    }

    /// The queue's occupancy as of the last time the stage was advanced (by `enqueue`, or
    /// `dequeue` processing a finish): packets not yet fully serialised, including the one
    /// on the wire.
    pub fn backlog(&self) -> Backlog {
        self.queue.backlog().plus(self.on_wire())
    }

    /// The queue discipline.
    pub fn discipline(&self) -> &dyn Discipline<P> {
        self.queue.as_ref()
    }

    fn on_wire(&self) -> Backlog {
        let mut b = Backlog::default();
        if let Some((p, _)) = &self.wire {
            b.add(p.size);
        }
        b
    }

    /// Runs `f` on the discipline with a context of the current state; counts the drops
    /// it reports.
    fn with_queue<T>(&mut self, f: impl FnOnce(&mut dyn Discipline<P>, &mut Context<'_, P>) -> T) -> T {
        let on_wire = self.on_wire();
        let before = self.notices.len();
        let idle_since = if self.queue.is_empty() && self.wire.is_none() {
            self.idle_since
        } else {
            None
        };
        let mut cx = Context::new(on_wire, idle_since, &mut self.rng, &mut self.notices);
        let out = f(self.queue.as_mut(), &mut cx);
        self.dropped_pending += self
            .notices
            .iter()
            .skip(before)
            .filter(|n| matches!(n, Notice::Dropped { .. }))
            .count();
        out
    }

    /// The next internal event: the wire's finish, or the link taking its next packet.
    fn next_internal(&self) -> Option<Nanos> {
        match (&self.wire, self.ready) {
            (Some((_, finish)), _) => Some(*finish),
            (None, ready) => ready,
        }
    }

    /// Processes the next internal event if it is due by `t`; `false` if there is none.
    fn step_internal(&mut self, t: Nanos) -> bool {
        match self.next_internal() {
            Some(at) if at <= t => {}
            _ => return false,
        }
        if let Some((packet, finish)) = self.wire.take() {
            self.done.push_back((packet, finish));
            if self.queue.is_empty() {
                self.idle_since = Some(finish);
            } else {
                self.ready = Some(self.link.next_start(finish));
            }
        } else if let Some(at) = self.ready.take() {
            match self.with_queue(|q, cx| q.dequeue(at, cx)) {
                Some(packet) => {
                    let finish = self.link.schedule(packet.size, at);
                    self.wire = Some((packet, finish));
                }
                // It dropped everything it held: the link is idle.
                None => self.idle_since = Some(at),
            }
        }
        true
    }
}

impl<P> Stage<P> for RateQueue<P> {
    fn enqueue(&mut self, packet: Packet<P>, at: Nanos) -> Result<(), Dropped<P>> {
        while self.step_internal(at) {}
        let out = self.with_queue(|q, cx| q.enqueue(packet, at, cx));
        if self.wire.is_none() && self.ready.is_none() && !self.queue.is_empty() {
            self.ready = Some(self.link.next_start(at));
        }
        // A packet reaching an idle link starts at once. Its finish, even if at `at`
        // itself (a 0-byte packet, or the rest of a trace opportunity), is processed
        // later: like drop-tail always did, the backlog right after an arrival counts it.
        if self.wire.is_none() && self.ready.is_some_and(|r| r <= at) {
            self.step_internal(at);
        }
        out
    }

    fn dequeue(&mut self, now: Nanos) -> Option<(Packet<P>, Nanos)> {
        loop {
            if let Some(&(_, due)) = self.done.front() {
                return if due <= now { self.done.pop_front() } else { None };
            }
            if !self.step_internal(now) {
                return None;
            }
        }
    }

    fn next_due(&self) -> Option<Nanos> {
        [
            self.done.front().map(|d| d.1),
            self.notices.front().map(Notice::at),
            self.next_internal(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    fn take_notice(&mut self, now: Nanos) -> Option<Notice<P>> {
        if self.notices.front()?.at() > now {
            return None;
        }
        let n = self.notices.pop_front()?;
        if matches!(n, Notice::Dropped { .. }) {
            self.dropped_pending -= 1;
        }
        Some(n)
    }

    fn len(&self) -> usize {
        self.queue.len() + usize::from(self.wire.is_some()) + self.done.len() + self.dropped_pending
    }

    fn set_origin(&mut self, t0: Nanos) {
        self.link.set_origin(t0);
        // Queued packets (the driver has run the model up to `t0`) wait for the new
        // timeline's first opportunity.
        if self.wire.is_none() && self.ready.is_some() {
            self.ready = Some(self.link.next_start(t0));
        }
    }
}
