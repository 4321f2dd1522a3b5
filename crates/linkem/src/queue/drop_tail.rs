//! Drop-tail: admit an arriving packet if, with it, the occupancy (held + on the wire)
//! stays within the limit; serve in arrival order. Never drops what it holds, never marks.

use super::{Backlog, Context, Discipline, Fifo, QueueLimit};
use crate::link::Link;
use crate::spec::queue::{Class, Options};
use crate::{Dropped, Nanos, Packet};

/// Drop-tail takes no parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DropTailParams;

impl Options for DropTailParams {
    const CLASS: Class = Class::tail(
        "drop_tail",
        "a full queue refuses the arriving packet",
        Self::PARAMETERS,
    );
    fn build<P: Send + 'static>(&self, limit: QueueLimit, _ecn: bool, _link: &Link) -> Box<dyn Discipline<P>> {
        Box::new(DropTail::new(limit))
    }
}

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
        self.fifo.push_within(self.limit, cx.on_wire, packet, now)
    }

    served_in_arrival_order!();
}
