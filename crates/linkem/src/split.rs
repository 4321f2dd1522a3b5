//! The split point of a multipath direction: numbers every packet and picks its leg(s).
//!
//! The sequence number is the 16-bit PDCP SN: it starts at 0, wraps at 2^16 and is never
//! written into the packet — [`crate::multipath::Multipath`] carries it beside the
//! packet through the legs to the merge.
//!
//! Batch mode sends the first `counts[0]` packets of every batch on leg 0, the next
//! `counts[1]` on leg 1, and so on, then starts the next batch on leg 0 again.
//! Duplication mode sends every packet on every leg.

/// Where the split sends one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// On this leg only.
    One(usize),
    /// A copy on every leg.
    All,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Mode {
    /// `ends[k]` = position in the batch where leg k's run ends (cumulative counts).
    Batch {
        ends: Vec<u32>,
        pos: u32,
        leg: usize,
    },
    Duplicate,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    legs: usize,
    next_sn: u16,
    mode: Mode,
}

/// Slack for shares written in decimal that binary floating point cannot hold exactly
/// (0.15·10 is 1.4999999999999998): a product this close below x.5 still rounds up.
const ROUNDING_SLACK: f64 = 1e-9;

/// Packets per batch for each leg, from the legs' shares of a batch (shares in [0, 1]
/// summing to 1; checked by [`crate::spec::validate_multipath`]).
///
/// Rounding: cumulative, half up. Leg k gets `round(batch·(s₀+…+s_k)) −
/// round(batch·(s₀+…+s_{k−1}))`, so the counts always add up to `batch` and with two
/// legs leg 0 gets exactly `round(ratio·batch)` and leg 1 the rest (batch 10, ratio 0.3:
/// 3 and 7; batch 2, ratio 0.25: 1 and 1; batch 10, ratio 0.15: 2 and 8).
pub fn batch_counts(shares: &[f64], batch: u32) -> Vec<u32> {
    let mut counts = Vec::with_capacity(shares.len());
    let mut cumulative = 0.0;
    let mut prev_end = 0u32;
    for (k, share) in shares.iter().enumerate() {
        cumulative += share;
        let end = if k + 1 == shares.len() {
            batch
        } else {
            let exact = f64::from(batch) * cumulative;
            ((exact + 0.5 + ROUNDING_SLACK).floor() as u32).clamp(prev_end, batch)
        };
        counts.push(end - prev_end);
        prev_end = end;
    }
    counts
}

impl Split {
    /// Batch mode with `counts[k]` consecutive packets per batch on leg k (see
    /// [`batch_counts`]). The batch is their sum, at least 1.
    pub fn batch(counts: &[u32]) -> Split {
        let mut ends = Vec::with_capacity(counts.len());
        let mut end = 0u32;
        for &c in counts {
            end += c;
            ends.push(end);
        }
        assert!(end >= 1, "a batch holds at least one packet");
        Split {
            legs: counts.len(),
            next_sn: 0,
            mode: Mode::Batch { ends, pos: 0, leg: 0 },
        }
    }

    /// Duplication mode over `legs` legs.
    pub fn duplicate(legs: usize) -> Split {
        Split {
            legs,
            next_sn: 0,
            mode: Mode::Duplicate,
        }
    }

    pub fn legs(&self) -> usize {
        self.legs
    }

    /// Numbers the next packet and says where it goes.
    pub fn assign(&mut self) -> (u16, Route) {
        let sn = self.next_sn;
        self.next_sn = sn.wrapping_add(1);
        let route = match &mut self.mode {
            Mode::Duplicate => Route::All,
            Mode::Batch { ends, pos, leg } => {
                // Legs with a share of 0 have an empty run and are skipped.
                while *pos >= ends[*leg] {
                    *leg += 1;
                }
                let this = *leg;
                *pos += 1;
                if *pos == *ends.last().unwrap() {
                    *pos = 0;
                    *leg = 0;
                }
                Route::One(this)
            }
        };
        (sn, route)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_round_cumulatively_half_up() {
        assert_eq!(batch_counts(&[0.3, 0.7], 10), vec![3, 7]);
        assert_eq!(batch_counts(&[0.25, 0.75], 2), vec![1, 1]);
        assert_eq!(batch_counts(&[0.15, 0.85], 10), vec![2, 8]);
        assert_eq!(batch_counts(&[0.0, 1.0], 100), vec![0, 100]);
        assert_eq!(batch_counts(&[1.0, 0.0], 100), vec![100, 0]);
        assert_eq!(batch_counts(&[1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0], 10), vec![3, 4, 3]);
        assert_eq!(batch_counts(&[0.5, 0.5], 1), vec![1, 0]);
    }

    #[test]
    fn zero_share_legs_are_skipped_and_sn_wraps() {
        let mut s = Split::batch(&[2, 0, 1]);
        let legs: Vec<_> = (0..6).map(|_| s.assign().1).collect();
        use Route::One;
        assert_eq!(legs, vec![One(0), One(0), One(2), One(0), One(0), One(2)]);
        let mut s = Split::duplicate(2);
        for i in 0..=u16::MAX as u32 {
            assert_eq!(s.assign(), (i as u16, Route::All));
        }
        assert_eq!(s.assign().0, 0);
    }
}
