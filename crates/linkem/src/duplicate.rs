//! Duplication: with probability `d` a packet is followed by a copy of itself.
//!
//! The stage is instantaneous: the original and its copy are both due at the arrival
//! time, the copy right after the original, so they travel through the rest of the link
//! one behind the other (the copy queues behind its original at the rate stage). The
//! copy keeps the id and has [`Packet::copy`] set.

use crate::passing::{Decide, Instant, Passing};
use crate::rng::{bernoulli, stage_rng, StageRng};
use crate::{Dropped, Nanos, Packet};

/// The duplication stage.
pub type Duplicate<P> = Instant<Duplication, P>;

/// Whether a packet is copied: probability and random stream.
pub struct Duplication {
    probability: f64,
    rng: StageRng,
}

impl<P> Duplicate<P> {
    /// A duplication stage with probability `probability`, drawing from `seed`.
    pub fn new(probability: f64, seed: u64) -> Self {
        Instant::with(Duplication {
            probability,
            rng: stage_rng(seed),
        })
    }
}

impl<P: Clone> Decide<P> for Duplication {
    fn decide(&mut self, packet: Packet<P>, at: Nanos, out: &mut Passing<P>) -> Result<(), Dropped<P>> {
        let copy = if bernoulli(&mut self.rng, self.probability) {
            Some(Packet {
                copy: true,
                ..packet.clone()
            })
        } else {
            None
        };
        out.push(packet, at);
        if let Some(c) = copy {
            out.push(c, at);
        }
        Ok(())
    }
}
