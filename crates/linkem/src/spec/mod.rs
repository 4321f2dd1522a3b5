//! A plain description of one link direction, and how it becomes a [`Pipeline`].
//!
//! Units are SI integers (nanoseconds, bits per second, bytes). Stage order is fixed:
//! loss → duplicate → queue+rate → delay (random loss and duplication act as a packet
//! enters the link, as netem does; the queue sits ahead of the rate stage; propagation
//! delay and jitter come after serialisation). The queue has a discipline ([`queue`]:
//! drop-tail by default, or one of [`queue::DISCIPLINES`]).
//!
//! A multipath direction ([`MultipathSpec`]) is a split onto legs, each leg a
//! [`DirectionSpec`], and a merge; [`AnyDirectionSpec`] is either kind, and
//! [`build_direction`] builds either into a [`Direction`].

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

use crate::delay::{Delay, Jitter};
use crate::direction::{Direction, Summarize};
use crate::duplicate::Duplicate;
use crate::link::Link;
use crate::loss::{Loss, LossModel};
use crate::merge::{Reorder, DEFAULT_T_REORDERING};
use crate::multipath::Multipath;
use crate::rate::{validate_trace, RateQueue};
use crate::rng::{derive_seed, tag};
use crate::split::{batch_counts, Split};
use crate::{Nanos, Pipeline, Stage};

pub mod queue;
pub use queue::{DisciplineSpec, QueueSpec};

#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(deny_unknown_fields, default)
)]
pub struct DirectionSpec {
    /// `None`: unlimited rate (and therefore no queueing).
    pub rate: Option<RateSpec>,
    /// The queue ahead of the rate stage: its discipline, limit and ECN switch. JSON: the
    /// drop-tail forms `"unlimited"`, `{"packets": N}`, `{"bytes": N}`, or
    /// `{"discipline": …}` ([`queue`]).
    pub queue: QueueSpec,
    /// Fixed one-way delay.
    pub delay: Nanos,
    pub jitter: Option<JitterSpec>,
    pub loss: Option<LossSpec>,
    /// Probability that a packet is duplicated (the copy follows it through the link).
    pub duplicate: f64,
}

#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(rename_all = "snake_case", deny_unknown_fields)
)]
pub enum RateSpec {
    /// Constant bit rate: a packet of L bytes occupies the link for 8L/rate.
    Constant { bits_per_sec: u64 },
    /// Mahimahi trace: each entry a millisecond timestamp of one 1500-byte delivery
    /// opportunity; the trace repeats with a period equal to its last timestamp. Trace
    /// time 0 is the scenario's time 0 (the driver calls [`Direction::set_origin`]), or
    /// `offset_ns` into the trace there.
    Trace {
        opportunities_ms: Vec<u64>,
        #[cfg_attr(feature = "serde", serde(default))]
        offset_ns: Nanos,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(rename_all = "snake_case", deny_unknown_fields)
)]
pub enum QueueLimit {
    /// Drop-tail limited to this many packets (including the one being serialised).
    Packets(u32),
    /// Drop-tail limited to this many bytes (including the one being serialised).
    Bytes(u64),
    #[default]
    Unlimited,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize), serde(rename_all = "snake_case"))]
pub enum Distribution {
    /// Uniform on [−jitter, +jitter] (netem's meaning).
    Uniform,
    /// Normal with σ = jitter.
    Normal,
    /// Pareto with shape 3, shifted to mean 0 and scaled to standard deviation = jitter.
    Pareto,
    /// netem's mix: (0.25·pareto + 0.75·normal), both zero-mean unit-σ, rescaled to σ = jitter.
    Paretonormal,
}

#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize), serde(deny_unknown_fields))]
pub struct JitterSpec {
    pub amount: Nanos,
    pub distribution: Distribution,
    /// `false` (default): order-preserving, a packet never leaves before the one ahead
    /// of it; `true`: each packet keeps its own sample and packets may reorder.
    #[cfg_attr(feature = "serde", serde(default))]
    pub reorder: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(rename_all = "snake_case", deny_unknown_fields)
)]
pub enum LossSpec {
    Bernoulli {
        p: f64,
    },
    /// netem's gemodel: p = P(good→bad), r = P(bad→good), loss probability 1−h in the
    /// bad state and 1−k in the good state.
    GilbertElliott {
        p: f64,
        r: f64,
        h: f64,
        k: f64,
    },
}

/// Builds the pipeline of one link direction. `seed` is this direction's seed (derive it
/// from the run seed with [`crate::rng::derive_seed`], e.g. with the direction's index);
/// each stage draws from its own sub-stream of it ([`crate::rng::tag`]).
///
/// Stages, in order, each omitted when ideal: loss (absent, or never losing) →
/// duplicate (probability 0) → queue+rate (no rate: unlimited, and then the queue has no
/// effect; its discipline draws from the sub-stream [`tag::QUEUE`]) → delay (no fixed
/// delay and no jitter). A fully ideal spec gives an
/// empty pipeline, in which a packet departs at its arrival time.
pub fn build_pipeline<P: Clone + Send + 'static>(spec: &DirectionSpec, seed: u64) -> Result<Pipeline<P>, String> {
    validate(spec)?;
    let mut stages: Vec<Box<dyn Stage<P> + Send>> = Vec::new();
    if let Some(loss) = spec.loss {
        let model = match loss {
            LossSpec::Bernoulli { p } => LossModel::Bernoulli { p },
            LossSpec::GilbertElliott { p, r, h, k } => LossModel::GilbertElliott { p, r, h, k },
        };
        let never = match model {
            LossModel::Bernoulli { p } => p == 0.0,
            LossModel::GilbertElliott { h, k, .. } => h == 1.0 && k == 1.0,
        };
        if !never {
            stages.push(Box::new(Loss::new(model, derive_seed(seed, tag::LOSS))));
        }
    }
    if spec.duplicate > 0.0 {
        stages.push(Box::new(Duplicate::new(
            spec.duplicate,
            derive_seed(seed, tag::DUPLICATE),
        )));
    }
    if let Some(rate) = &spec.rate {
        let link = match rate {
            RateSpec::Constant { bits_per_sec } => Link::constant(*bits_per_sec)?,
            RateSpec::Trace {
                opportunities_ms,
                offset_ns,
            } => Link::trace(opportunities_ms.clone())?.with_offset(*offset_ns),
        };
        let queue = spec.queue.build::<P>(&link);
        stages.push(Box::new(RateQueue::new(link, queue, derive_seed(seed, tag::QUEUE))));
    }
    let jitter = spec.jitter.filter(|j| j.amount > 0).map(|j| Jitter {
        amount: j.amount,
        distribution: j.distribution,
        reorder: j.reorder,
    });
    if spec.delay > 0 || jitter.is_some() {
        stages.push(Box::new(Delay::new(spec.delay, jitter, derive_seed(seed, tag::DELAY))));
    }
    Ok(Pipeline::new(stages))
}

/// Checks a spec: probabilities in [0, 1], rate > 0, a valid trace, a valid queue
/// (non-zero limit, the discipline's parameters in range: [`QueueSpec::validate`]).
pub fn validate(spec: &DirectionSpec) -> Result<(), String> {
    fn prob(name: &str, v: f64) -> Result<(), String> {
        if (0.0..=1.0).contains(&v) {
            Ok(())
        } else {
            Err(format!("{name} must be a probability in [0, 1], got {v}"))
        }
    }
    prob("duplicate", spec.duplicate)?;
    match spec.loss {
        None => {}
        Some(LossSpec::Bernoulli { p }) => prob("loss p", p)?,
        Some(LossSpec::GilbertElliott { p, r, h, k }) => {
            prob("gilbert_elliott p", p)?;
            prob("gilbert_elliott r", r)?;
            prob("gilbert_elliott h", h)?;
            prob("gilbert_elliott k", k)?;
        }
    }
    match &spec.rate {
        None => {}
        Some(RateSpec::Constant { bits_per_sec: 0 }) => {
            return Err("rate bits_per_sec must be > 0 (omit the rate for an unlimited link)".into())
        }
        Some(RateSpec::Constant { .. }) => {}
        Some(RateSpec::Trace { opportunities_ms, .. }) => validate_trace(opportunities_ms)?,
    }
    spec.queue.validate()
}

/// A direction of either kind. In JSON a multipath direction is recognised by its `legs`
/// field; anything else is a plain [`DirectionSpec`].
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(
        untagged,
        expecting = "a direction spec: a plain one, or a multipath one with `legs`, `split` and `merge`"
    )
)]
pub enum AnyDirectionSpec {
    Multipath(MultipathSpec),
    Single(DirectionSpec),
}

impl Default for AnyDirectionSpec {
    fn default() -> Self {
        AnyDirectionSpec::Single(DirectionSpec::default())
    }
}

impl From<DirectionSpec> for AnyDirectionSpec {
    fn from(s: DirectionSpec) -> Self {
        AnyDirectionSpec::Single(s)
    }
}

impl From<MultipathSpec> for AnyDirectionSpec {
    fn from(s: MultipathSpec) -> Self {
        AnyDirectionSpec::Multipath(s)
    }
}

/// A multipath direction (dual connectivity): split → legs → merge.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize), serde(deny_unknown_fields))]
pub struct MultipathSpec {
    /// At least 2. Leg k (0-based) is a full link direction seeded with
    /// [`leg_seed`]`(seed, k)`.
    pub legs: Vec<DirectionSpec>,
    pub split: SplitSpec,
    /// Default: on, t-Reordering 200 ms.
    #[cfg_attr(feature = "serde", serde(default))]
    pub merge: MergeSpec,
}

/// How the split distributes packets over the legs.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(tag = "mode", rename_all = "snake_case", deny_unknown_fields)
)]
pub enum SplitSpec {
    /// Per batch of `batch` (≥ 1) consecutive packets, each leg in turn gets its share of
    /// the batch as one run (see [`crate::split::batch_counts`] for the rounding).
    Batch { batch: u32, ratio: Ratio },
    /// Every packet on every leg; the merge keeps the first copy to arrive.
    Duplicate,
}

/// The legs' shares of a batch.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(
        untagged,
        expecting = "a ratio: leg 1's share as a number in [0, 1] (two legs), or a list of one share per leg"
    )
)]
pub enum Ratio {
    /// Two legs only: the share of leg 1 (the first); leg 2 gets 1 − this. 0 or 1 is a
    /// single path.
    FirstLeg(f64),
    /// One share per leg, each in [0, 1], summing to 1.
    Shares(Vec<f64>),
}

impl Ratio {
    /// One share per leg for a direction of `legs` legs.
    pub fn shares(&self, legs: usize) -> Result<Vec<f64>, String> {
        match self {
            Ratio::FirstLeg(r) if legs == 2 => Ok(vec![*r, 1.0 - *r]),
            Ratio::FirstLeg(r) => Err(format!(
                "split ratio {r} is a single number, which only works for 2 legs; give a list of {legs} shares"
            )),
            Ratio::Shares(s) if s.len() == legs => Ok(s.clone()),
            Ratio::Shares(s) => Err(format!(
                "split ratio lists {} shares for {legs} legs: give one share per leg",
                s.len()
            )),
        }
    }
}

/// The merge (PDCP reordering) of a multipath direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize),
    serde(deny_unknown_fields, default)
)]
pub struct MergeSpec {
    /// `false`: packets leave in the order they come off the legs (reordered), duplicates
    /// included.
    pub enabled: bool,
    /// t-Reordering in ns.
    pub t_reordering_ns: Nanos,
}

impl Default for MergeSpec {
    fn default() -> Self {
        MergeSpec {
            enabled: true,
            t_reordering_ns: DEFAULT_T_REORDERING,
        }
    }
}

/// Tolerance on the sum of the shares (they are usually written in decimal).
const SHARES_SUM_TOLERANCE: f64 = 1e-6;

/// The seed of leg `leg` (0-based) of a multipath direction seeded with `seed`.
pub fn leg_seed(seed: u64, leg: usize) -> u64 {
    derive_seed(derive_seed(seed, tag::LEGS), leg as u64)
}

/// Checks a multipath spec: at least 2 legs, each valid; batch ≥ 1; one share per leg,
/// each in [0, 1], summing to 1.
pub fn validate_multipath(spec: &MultipathSpec) -> Result<(), String> {
    if spec.legs.len() < 2 {
        return Err(format!(
            "a multipath direction needs at least 2 legs, got {}",
            spec.legs.len()
        ));
    }
    for (k, leg) in spec.legs.iter().enumerate() {
        validate(leg).map_err(|e| format!("legs[{k}]: {e}"))?;
    }
    if let SplitSpec::Batch { batch, ratio } = &spec.split {
        if *batch == 0 {
            return Err("split batch must be at least 1 packet".into());
        }
        let shares = ratio.shares(spec.legs.len())?;
        if let Some((k, v)) = shares.iter().enumerate().find(|(_, v)| !(0.0..=1.0).contains(*v)) {
            return Err(format!("split share of legs[{k}] must be in [0, 1], got {v}"));
        }
        let sum: f64 = shares.iter().sum();
        if (sum - 1.0).abs() > SHARES_SUM_TOLERANCE {
            return Err(format!("split shares must sum to 1, got {sum} ({shares:?})"));
        }
    }
    Ok(())
}

/// Checks a spec of either kind.
pub fn validate_any(spec: &AnyDirectionSpec) -> Result<(), String> {
    match spec {
        AnyDirectionSpec::Single(s) => validate(s),
        AnyDirectionSpec::Multipath(m) => validate_multipath(m),
    }
}

/// Builds a multipath direction; `seed` is the direction's seed, from which each leg's
/// is derived ([`leg_seed`]). The split itself draws nothing.
pub fn build_multipath<P: Clone + Send + Summarize + 'static>(
    spec: &MultipathSpec,
    seed: u64,
) -> Result<Multipath<P>, String> {
    validate_multipath(spec)?;
    let split = match &spec.split {
        SplitSpec::Batch { batch, ratio } => Split::batch(&batch_counts(&ratio.shares(spec.legs.len())?, *batch)),
        SplitSpec::Duplicate => Split::duplicate(spec.legs.len()),
    };
    let legs = spec
        .legs
        .iter()
        .enumerate()
        .map(|(k, leg)| build_pipeline(leg, leg_seed(seed, k)).map_err(|e| format!("legs[{k}]: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let merge = spec.merge.enabled.then(|| Reorder::new(spec.merge.t_reordering_ns));
    Ok(Multipath::new(split, legs, merge))
}

/// Builds a direction of either kind.
pub fn build_direction<P: Clone + Send + Summarize + 'static>(
    spec: &AnyDirectionSpec,
    seed: u64,
) -> Result<Direction<P>, String> {
    Ok(match spec {
        AnyDirectionSpec::Single(s) => build_pipeline(s, seed)?.into(),
        AnyDirectionSpec::Multipath(m) => build_multipath(m, seed)?.into(),
    })
}
