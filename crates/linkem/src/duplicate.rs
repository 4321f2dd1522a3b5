//! Duplication: with probability `d` a packet is followed by a copy of itself.
//!
//! The stage is instantaneous: the original and its copy are both due at the arrival
//! time, the copy right after the original, so they travel through the rest of the link
//! one behind the other (the copy queues behind its original at the rate stage). The
//! copy keeps the id and has [`Packet::copy`] set.

use crate::passing::Passing;
use crate::rng::{bernoulli, stage_rng, StageRng};
use crate::{Dropped, Nanos, Packet, Stage};

pub struct Duplicate<P> {
    probability: f64,
    rng: StageRng,
    out: Passing<P>,
}

impl<P> Duplicate<P> {
    /// A duplication stage with probability `probability`, drawing from `seed`.
    pub fn new(probability: f64, seed: u64) -> Self {
        Duplicate {
            probability,
            rng: stage_rng(seed),
            out: Passing::new(),
        }
    }
}

impl<P: Clone> Stage<P> for Duplicate<P> {
    fn enqueue(&mut self, packet: Packet<P>, at: Nanos) -> Result<(), Dropped<P>> {
        let copy = if bernoulli(&mut self.rng, self.probability) {
            Some(Packet {
                copy: true,
                ..packet.clone()
            })
        } else {
            None
        };
        self.out.push(packet, at);
        if let Some(c) = copy {
            self.out.push(c, at);
        }
        Ok(())
    }

    fn dequeue(&mut self, now: Nanos) -> Option<(Packet<P>, Nanos)> {
        self.out.dequeue(now)
    }

    fn next_due(&self) -> Option<Nanos> {
        self.out.next_due()
    }

    fn len(&self) -> usize {
        self.out.len()
    }
}
