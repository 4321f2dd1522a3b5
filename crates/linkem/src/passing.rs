//! The hand-out side of an instantaneous stage (loss, duplicate): packets it let through
//! wait here, due at the time they arrived, until the pipeline moves them on.

use std::collections::VecDeque;

use crate::{Nanos, Packet};

pub(crate) struct Passing<P>(VecDeque<(Packet<P>, Nanos)>);

impl<P> Passing<P> {
    pub(crate) fn new() -> Self {
        Passing(VecDeque::new())
    }

    pub(crate) fn push(&mut self, packet: Packet<P>, at: Nanos) {
        self.0.push_back((packet, at));
    }

    pub(crate) fn dequeue(&mut self, now: Nanos) -> Option<(Packet<P>, Nanos)> {
        match self.0.front() {
            Some(&(_, due)) if due <= now => self.0.pop_front(),
            _ => None,
        }
    }

    pub(crate) fn next_due(&self) -> Option<Nanos> {
        self.0.front().map(|&(_, due)| due)
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}
