//! Instantaneous stages (loss, duplicate): they only decide, as a packet arrives, what
//! passes; what passes waits here, due at the time it arrived, until the pipeline moves it
//! on.

use std::collections::VecDeque;

use crate::{Dropped, Nanos, Packet, Stage};

/// The hand-out side of an instantaneous stage.
pub struct Passing<P>(VecDeque<(Packet<P>, Nanos)>);

impl<P> Passing<P> {
    fn new() -> Self {
        Passing(VecDeque::new())
    }

    /// `packet` passes, due at `at`.
    pub(crate) fn push(&mut self, packet: Packet<P>, at: Nanos) {
        self.0.push_back((packet, at));
    }
}

/// What an instantaneous stage does with a packet arriving at `at`: puts what passes into
/// `out` (the packet, perhaps a copy after it), or refuses the packet.
pub trait Decide<P> {
    fn decide(&mut self, packet: Packet<P>, at: Nanos, out: &mut Passing<P>) -> Result<(), Dropped<P>>;
}

/// An instantaneous stage: `D` decides, and what it lets through is handed out at its
/// arrival time, in arrival order.
pub struct Instant<D, P> {
    decider: D,
    out: Passing<P>,
}

impl<D, P> Instant<D, P> {
    pub(crate) fn with(decider: D) -> Self {
        Instant {
            decider,
            out: Passing::new(),
        }
    }

    /// What decides.
    pub fn decider(&self) -> &D {
        &self.decider
    }
}

impl<P, D: Decide<P>> Stage<P> for Instant<D, P> {
    fn enqueue(&mut self, packet: Packet<P>, at: Nanos) -> Result<(), Dropped<P>> {
        self.decider.decide(packet, at, &mut self.out)
    }

    fn dequeue(&mut self, now: Nanos) -> Option<(Packet<P>, Nanos)> {
        match self.out.0.front() {
            Some(&(_, due)) if due <= now => self.out.0.pop_front(),
            _ => None,
        }
    }

    fn next_due(&self) -> Option<Nanos> {
        self.out.0.front().map(|&(_, due)| due)
    }

    fn len(&self) -> usize {
        self.out.0.len()
    }
}
