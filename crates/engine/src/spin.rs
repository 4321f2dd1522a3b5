//! How long the forwarding thread polls before a due time instead of sleeping through it.
//! The kernel's timer wake-up is late (on this machine kind 26–42 µs on average, with a
//! tail to 80 µs and beyond), and a wake-up later than the spin makes the hand-over late by
//! the difference. Calibration at start sees a few hundred sleeps; a run's wake-ups have a
//! longer tail than that (bench/engine: spin 48 µs from calibration, hand-over lateness
//! p99 68 µs at 10 ms idle). So the spin follows the run's own wake-ups: raised at once to
//! any wake-up's lateness plus a margin, then lowered slowly, never below calibration's
//! choice, never above a cap (one hiccup of the host must not make the engine spin its
//! length before every packet for long).

use linkem::Nanos;

/// Added to the lateness seen: the spin must end a little before the wake-up it covers.
pub const MARGIN_NS: Nanos = 5_000;
/// The longest spin: a wake-up later than this is a hiccup of the host, not its timer.
pub const MAX_NS: Nanos = 200_000;
/// How much the spin shrinks per timer wake-up: a raise to the cap decays back over
/// ~1500 wake-ups (seconds at idle, much less under load).
pub const DECAY_NS: Nanos = 100;

pub struct Spin {
    floor: Nanos,
    current: Nanos,
}

impl Spin {
    /// Starts at `floor` (calibration's choice, or the configured spin).
    pub fn new(floor: Nanos) -> Spin {
        let floor = floor.min(MAX_NS);
        Spin { floor, current: floor }
    }

    /// The spin to use now.
    pub fn ns(&self) -> Nanos {
        self.current
    }

    /// A timer wake-up came `late` after the time it was armed for.
    pub fn woke(&mut self, late: Nanos) {
        let wanted = (late + MARGIN_NS).min(MAX_NS);
        self.current = self.current.saturating_sub(DECAY_NS).max(wanted).max(self.floor);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rises_at_once_decays_slowly_and_stays_within_floor_and_cap() {
        let mut s = Spin::new(40_000);
        assert_eq!(s.ns(), 40_000);
        s.woke(10_000); // earlier than the spin covers: stays at the floor
        assert_eq!(s.ns(), 40_000);
        s.woke(70_000);
        assert_eq!(s.ns(), 75_000);
        s.woke(0);
        assert_eq!(s.ns(), 75_000 - DECAY_NS);
        for _ in 0..1000 {
            s.woke(0);
        }
        assert_eq!(s.ns(), 40_000, "back to the floor, not below");
        s.woke(5_000_000);
        assert_eq!(s.ns(), MAX_NS, "a hiccup raises it to the cap only");
        assert_eq!(Spin::new(1_000_000).ns(), MAX_NS);
    }
}
