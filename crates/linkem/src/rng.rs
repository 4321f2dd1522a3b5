//! Seeded randomness for stages.
//!
//! Every random decision of a stage comes from a [`StageRng`] the stage owns. A run has
//! one seed; the driver derives one seed per link direction and [`crate::spec::build_pipeline`]
//! derives one per stage with [`derive_seed`], so adding, removing or reordering a stage
//! (or a link) never shifts the random stream of another one. Nothing here reads the
//! time or any global source of randomness.

use rand::Rng;
use rand_pcg::Pcg64Mcg;

/// The RNG a stage owns: a PCG-64 (MCG variant), small, fast and statistically good;
/// its output for a given seed is fixed by the `rand_pcg` crate.
pub type StageRng = Pcg64Mcg;

/// Stream tags [`crate::spec::build_pipeline`] uses for its stages (any distinct values
/// work; these are fixed so that a seed keeps meaning the same decisions).
pub mod tag {
    pub const LOSS: u64 = 1;
    pub const DUPLICATE: u64 = 2;
    pub const DELAY: u64 = 3;
    /// The legs of a multipath direction: leg k's seed is the sub-stream k of this one
    /// ([`crate::spec::leg_seed`]).
    pub const LEGS: u64 = 4;
    /// The queue discipline of the bottleneck (RED's and PIE's random drops).
    pub const QUEUE: u64 = 5;
}

/// One step of splitmix64 (Steele, Lea, Flood 2014): a bijective mixer whose outputs for
/// consecutive inputs are statistically independent.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A seed for the sub-stream `tag` of `seed` (e.g. a link direction of a run, or a stage
/// of a direction). Different tags give unrelated seeds; the mapping is fixed forever.
pub fn derive_seed(seed: u64, tag: u64) -> u64 {
    // Mix the seed first so that (seed, tag) and (seed + 1, tag - 1)-like pairs don't
    // collide, then mix in the tag.
    splitmix64(splitmix64(seed) ^ splitmix64(tag.wrapping_add(0x6A09_E667_F3BC_C909)))
}

/// The RNG for a stage from its seed. The 128-bit PCG state is filled from two splitmix
/// outputs, so nearby seeds give unrelated streams.
pub fn stage_rng(seed: u64) -> StageRng {
    let hi = splitmix64(seed) as u128;
    let lo = splitmix64(seed ^ 0xD1B5_4A32_D192_ED03) as u128;
    Pcg64Mcg::new((hi << 64) | lo)
}

/// A uniform sample in `[0, 1)` with 53 random bits.
pub(crate) fn unit(rng: &mut StageRng) -> f64 {
    rng.gen::<f64>()
}

/// `true` with probability `p` (`p <= 0` never, `p >= 1` always).
pub(crate) fn bernoulli(rng: &mut StageRng, p: f64) -> bool {
    unit(rng) < p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derive_seed_is_a_function_and_separates_tags() {
        assert_eq!(derive_seed(42, 1), derive_seed(42, 1));
        assert_ne!(derive_seed(42, 1), derive_seed(42, 2));
        assert_ne!(derive_seed(42, 1), derive_seed(43, 1));
        assert_ne!(derive_seed(1, 2), derive_seed(2, 1));
    }

    #[test]
    fn stage_rng_is_reproducible() {
        let mut a = stage_rng(7);
        let mut b = stage_rng(7);
        let mut c = stage_rng(8);
        let va: Vec<u64> = (0..8).map(|_| a.gen()).collect();
        let vb: Vec<u64> = (0..8).map(|_| b.gen()).collect();
        let vc: Vec<u64> = (0..8).map(|_| c.gen()).collect();
        assert_eq!(va, vb);
        assert_ne!(va, vc);
    }
}
