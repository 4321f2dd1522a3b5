//! Drop-head (Linux `pfifo_head_drop`, Mahimahi's `drop_head`): when an arriving packet
//! does not fit, drop packets from the head of the queue (the oldest) until it does, then
//! admit it; serve in arrival order. A packet that would not fit even in an empty queue
//! (beside the one on the wire) is refused itself, and then nothing else is dropped.
//! Drops are [`DropReason::QueueFull`]; it never marks.

use super::{Backlog, Context, Discipline, Fifo, QueueLimit};
use crate::link::Link;
use crate::spec::queue::{Class, Options};
use crate::{DropReason, Dropped, Nanos, Packet};

/// Drop-head takes no parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DropHeadParams;

impl Options for DropHeadParams {
    const CLASS: Class = Class::tail(
        "drop_head",
        "a full queue drops its oldest waiting packet to admit the new one",
        Self::PARAMETERS,
    );
    fn build<P: Send + 'static>(&self, limit: QueueLimit, _ecn: bool, _link: &Link) -> Box<dyn Discipline<P>> {
        Box::new(DropHead::new(limit))
    }
}

#[derive(Debug)]
pub struct DropHead<P> {
    limit: QueueLimit,
    fifo: Fifo<P>,
}

impl<P> DropHead<P> {
    pub fn new(limit: QueueLimit) -> Self {
        DropHead {
            limit,
            fifo: Fifo::default(),
        }
    }
}

impl<P: Send> Discipline<P> for DropHead<P> {
    fn enqueue(&mut self, packet: Packet<P>, now: Nanos, cx: &mut Context<'_, P>) -> Result<(), Dropped<P>> {
        let packet = self.limit.admit(cx.on_wire, packet)?;
        while !self.limit.admits(self.fifo.backlog().plus(cx.on_wire), packet.size) {
            let (old, _) = self
                .fifo
                .pop()
                .expect("an empty queue admits what fits beside the wire");
            cx.drop(old, DropReason::QueueFull, now);
        }
        self.fifo.push(packet, now);
        Ok(())
    }

    served_in_arrival_order!();
}
