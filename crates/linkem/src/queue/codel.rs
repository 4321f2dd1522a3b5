//! CoDel (RFC 8289): controls the sojourn time of packets at dequeue.
//!
//! At each dequeue the head packet's sojourn time (now − its enqueue time) is compared
//! with `target`. When it has stayed at or above `target` for `interval` (and the queue
//! left behind holds more than one MTU), CoDel enters the dropping state: it drops the
//! head and dequeues the next, and drops again at times following the control law
//! `drop_next += interval / √count`, `count` the drops so far in this state, until a
//! dequeued packet's sojourn falls below `target` (or the queue empties). On re-entry soon
//! after leaving (`now − drop_next < 16·interval`) it resumes with the count it had
//! reached in excess of the last cycle's start (`count − lastcount` when that is > 1).
//! This is RFC 8289 §5's pseudocode, with these choices:
//!
//! * `interval/√count` is computed in `f64` and truncated to whole ns (RFC: exact
//!   division; Linux: a Newton approximation of 1/√count);
//! * the re-entry test `now − drop_next < 16·interval` is signed (`drop_next` may lie in
//!   the future), as Linux's `codel_time_before`;
//! * the RFC's `maxpacket` ("SHOULD use interface MTU") is the parameter `mtu_bytes`;
//! * ECN (Linux's variant): where CoDel would drop an ECN-capable packet it marks it CE
//!   and sends it instead, counting it as a drop in the control law; in the dropping
//!   state a mark ends that dequeue's drop loop (the marked packet goes out).
//!
//! The hard limit is tail drop ([`crate::DropReason::QueueFull`]); CoDel's own drops are
//! [`crate::DropReason::AqmDrop`].

use super::{Backlog, Context, Discipline, Fifo, QueueLimit};
use crate::link::Link;
use crate::spec::queue::{parameters, require_positive, Class, Options};
use crate::{DropReason, Dropped, Nanos, Packet};

/// RFC 8289 parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodelParams {
    /// Acceptable standing sojourn time (RFC: 5 ms).
    pub target: Nanos,
    /// Sliding window over which the sojourn time must stay above target (RFC: 100 ms).
    pub interval: Nanos,
    /// The RFC's `maxpacket`: CoDel does not drop when what is left in the queue is at
    /// most this (default 1500 bytes, the lab's MTU).
    pub mtu_bytes: u32,
}

impl Default for CodelParams {
    fn default() -> Self {
        CodelParams {
            target: 5_000_000,
            interval: 100_000_000,
            mtu_bytes: 1500,
        }
    }
}

/// The default hard limit (Linux `codel`'s).
pub const DEFAULT_LIMIT: QueueLimit = QueueLimit::Packets(1000);

impl Options for CodelParams {
    const CLASS: Class = Class::aqm(
        "codel",
        "CoDel, Controlled Delay (RFC 8289)",
        Self::PARAMETERS,
        DEFAULT_LIMIT,
    );
    parameters! {
        target => "target_ns",
        interval => "interval_ns",
        mtu_bytes => "mtu_bytes",
    }
    fn check(&self) -> Result<(), String> {
        require_positive("target_ns", self.target)?;
        require_positive("interval_ns", self.interval)
    }
    fn build<P: Send + 'static>(&self, limit: QueueLimit, ecn: bool, _link: &Link) -> Box<dyn Discipline<P>> {
        Box::new(Codel::new(*self, limit, ecn))
    }
}

/// `t + interval/√count`, truncated to whole ns, saturating.
pub fn control_law(t: Nanos, interval: Nanos, count: u32) -> Nanos {
    t.saturating_add((interval as f64 / f64::from(count.max(1)).sqrt()) as Nanos)
}

/// The per-queue state of RFC 8289 (one per FQ-CoDel flow).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodelState {
    /// When the sojourn time went (and stayed) above target, plus interval; `None`: below.
    first_above_time: Option<Nanos>,
    drop_next: Nanos,
    count: u32,
    lastcount: u32,
    dropping: bool,
}

impl CodelState {
    /// Drops (and marks) so far in the current or last dropping state.
    pub fn count(&self) -> u32 {
        self.count
    }

    pub fn dropping(&self) -> bool {
        self.dropping
    }

    /// When the next drop is due while dropping.
    pub fn drop_next(&self) -> Nanos {
        self.drop_next
    }

    /// RFC 8289 `dodequeue`: pops the head; `true` if it may be dropped.
    fn dodequeue<P>(&mut self, p: &CodelParams, q: &mut Fifo<P>, now: Nanos) -> (Option<Packet<P>>, bool) {
        let Some((packet, enqueued)) = q.pop() else {
            self.first_above_time = None;
            return (None, false);
        };
        let sojourn = now.saturating_sub(enqueued);
        if sojourn < p.target || q.backlog().bytes <= u64::from(p.mtu_bytes) {
            self.first_above_time = None;
            return (Some(packet), false);
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now.saturating_add(p.interval));
                (Some(packet), false)
            }
            Some(t) => (Some(packet), now >= t),
        }
    }

    /// RFC 8289 `dequeue` on queue `q` at `now`: the packet to send, if any; drops and
    /// marks go to `cx`.
    pub fn dequeue<P>(
        &mut self,
        p: &CodelParams,
        ecn: bool,
        q: &mut Fifo<P>,
        now: Nanos,
        cx: &mut Context<'_, P>,
    ) -> Option<Packet<P>> {
        let (mut packet, ok_to_drop) = self.dodequeue(p, q, now);
        if self.dropping {
            if !ok_to_drop {
                // Sojourn time below target: leave the dropping state.
                self.dropping = false;
            }
            // Time for the next drop(s): a large backlog may need several now.
            while self.dropping && now >= self.drop_next {
                self.count = self.count.saturating_add(1);
                let mut head = packet.take().expect("ok_to_drop implies a packet");
                if ecn && cx.mark(&mut head, now) {
                    self.drop_next = control_law(self.drop_next, p.interval, self.count);
                    return Some(head);
                }
                cx.drop(head, DropReason::AqmDrop, now);
                let (next, ok) = self.dodequeue(p, q, now);
                packet = next;
                if ok {
                    self.drop_next = control_law(self.drop_next, p.interval, self.count);
                } else {
                    self.dropping = false;
                }
            }
        } else if ok_to_drop {
            let mut head = packet.take().expect("ok_to_drop implies a packet");
            if ecn && cx.mark(&mut head, now) {
                packet = Some(head);
            } else {
                cx.drop(head, DropReason::AqmDrop, now);
                packet = self.dodequeue(p, q, now).0;
            }
            self.dropping = true;
            // Re-entering soon after the last dropping state: start from the drop rate
            // that controlled the queue then.
            let delta = self.count.wrapping_sub(self.lastcount);
            let recent = (i128::from(now) - i128::from(self.drop_next)) < 16 * i128::from(p.interval);
            self.count = if delta > 1 && recent { delta } else { 1 };
            self.drop_next = control_law(now, p.interval, self.count);
            self.lastcount = self.count;
        }
        packet
    }
}

/// CoDel on one FIFO with a hard limit.
#[derive(Debug)]
pub struct Codel<P> {
    params: CodelParams,
    limit: QueueLimit,
    ecn: bool,
    fifo: Fifo<P>,
    state: CodelState,
}

impl<P> Codel<P> {
    pub fn new(params: CodelParams, limit: QueueLimit, ecn: bool) -> Self {
        Codel {
            params,
            limit,
            ecn,
            fifo: Fifo::default(),
            state: CodelState::default(),
        }
    }

    pub fn state(&self) -> &CodelState {
        &self.state
    }
}

impl<P: Send> Discipline<P> for Codel<P> {
    fn enqueue(&mut self, packet: Packet<P>, now: Nanos, cx: &mut Context<'_, P>) -> Result<(), Dropped<P>> {
        self.fifo.push_within(self.limit, cx.on_wire, packet, now)
    }

    fn dequeue(&mut self, now: Nanos, cx: &mut Context<'_, P>) -> Option<Packet<P>> {
        self.state.dequeue(&self.params, self.ecn, &mut self.fifo, now, cx)
    }

    fn backlog(&self) -> Backlog {
        self.fifo.backlog()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_law_truncates_interval_over_root_count() {
        let i = 100_000_000;
        assert_eq!(control_law(0, i, 1), 100_000_000);
        assert_eq!(control_law(0, i, 2), 70_710_678); // 70 710 678.118…
        assert_eq!(control_law(5, i, 3), 5 + 57_735_026); // 57 735 026.918…
        assert_eq!(control_law(0, i, 4), 50_000_000);
        assert_eq!(control_law(u64::MAX - 1, i, 1), u64::MAX);
    }
}
