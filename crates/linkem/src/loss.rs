//! Random loss: Bernoulli or Gilbert–Elliott (netem's `gemodel`).
//!
//! The stage is instantaneous: a packet it keeps is due at its arrival time, so it only
//! decides, it never delays. It acts as a packet enters the link, as netem does.

use crate::passing::{Decide, Instant, Passing};
use crate::rng::{bernoulli, stage_rng, StageRng};
use crate::{DropReason, Dropped, Nanos, Packet};

/// The loss process.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LossModel {
    /// Each packet lost independently with probability `p`.
    Bernoulli { p: f64 },
    /// Two-state Markov chain, parameters as netem's `gemodel`: `p` = P(good→bad),
    /// `r` = P(bad→good); a packet is lost with probability `1 − h` in the bad state and
    /// `1 − k` in the good state. The chain starts in the good state.
    GilbertElliott { p: f64, r: f64, h: f64, k: f64 },
}

/// Gilbert–Elliott channel state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeState {
    Good,
    Bad,
}

/// The random-loss stage (its process decides, see [`LossProcess`]).
pub type Loss<P> = Instant<LossProcess, P>;

/// The loss process: its model, state and random stream.
///
/// Order of the Gilbert–Elliott decisions per packet (the same as netem's
/// `loss_gilb_ell`): first a draw decides the state transition, then a second draw
/// decides the loss *with the loss probability of the state the packet found the
/// channel in* (before the transition). Equivalently: packet n is lost with the
/// probability of state Xₙ, and the channel then moves to Xₙ₊₁. The long-run loss rate
/// is π_B(1−h) + π_G(1−k) with π_B = p/(p+r), whichever convention is used.
pub struct LossProcess {
    model: LossModel,
    state: GeState,
    rng: StageRng,
}

impl<P> Loss<P> {
    /// A loss stage drawing from the stream `seed` (see [`crate::rng`]).
    pub fn new(model: LossModel, seed: u64) -> Self {
        Instant::with(LossProcess {
            model,
            state: GeState::Good,
            rng: stage_rng(seed),
        })
    }

    /// The current Gilbert–Elliott state (always `Good` for Bernoulli).
    pub fn state(&self) -> GeState {
        self.decider().state
    }
}

impl LossProcess {
    /// Draws the fate of the next packet: `true` = lost.
    pub fn draw(&mut self) -> bool {
        match self.model {
            LossModel::Bernoulli { p } => bernoulli(&mut self.rng, p),
            LossModel::GilbertElliott { p, r, h, k } => {
                let found = self.state;
                let (switch, next, loss) = match found {
                    GeState::Good => (p, GeState::Bad, 1.0 - k),
                    GeState::Bad => (r, GeState::Good, 1.0 - h),
                };
                if bernoulli(&mut self.rng, switch) {
                    self.state = next;
                }
                bernoulli(&mut self.rng, loss)
            }
        }
    }
}

impl<P> Decide<P> for LossProcess {
    fn decide(&mut self, packet: Packet<P>, at: Nanos, out: &mut Passing<P>) -> Result<(), Dropped<P>> {
        if self.draw() {
            return Err(Dropped {
                packet,
                reason: DropReason::RandomLoss,
            });
        }
        out.push(packet, at);
        Ok(())
    }
}
