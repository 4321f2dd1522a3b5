//! Drop-tail: admit an arriving packet if, with it, the occupancy (held + on the wire)
//! stays within the limit; serve in arrival order. Never drops what it holds, never marks.

use super::{Backlog, Context, Discipline, Fifo, QueueLimit};
use crate::{DropReason, Dropped, Nanos, Packet};

#[derive(Debug)]
pub struct DropTail<P> {
    limit: QueueLimit,
    fifo: Fifo<P>,
}

impl<P> DropTail<P> {
    pub fn new(limit: QueueLimit) -> Self {
        DropTail {
            limit,
            fifo: Fifo::default(),
        }
    }

    pub fn limit(&self) -> QueueLimit {
        self.limit
    }
}

impl<P: Send> Discipline<P> for DropTail<P> {
    fn enqueue(&mut self, packet: Packet<P>, now: Nanos, cx: &mut Context<'_, P>) -> Result<(), Dropped<P>> {
        if !self.limit.admits(self.fifo.backlog().plus(cx.on_wire), packet.size) {
            return Err(Dropped {
                packet,
                reason: DropReason::QueueFull,
            });
        }
        self.fifo.push(packet, now);
        Ok(())
    }

    fn dequeue(&mut self, _now: Nanos, _cx: &mut Context<'_, P>) -> Option<Packet<P>> {
        self.fifo.pop().map(|(p, _)| p)
    }

    fn backlog(&self) -> Backlog {
        self.fifo.backlog()
    }
}
