//! A plain description of one link direction, and how it becomes a [`Pipeline`].
//!
//! Units are SI integers (nanoseconds, bits per second, bytes). Stage order is fixed:
//! loss → duplicate → queue+rate → delay (random loss and duplication act as a packet
//! enters the link, as netem does; the queue sits ahead of the rate stage; propagation
//! delay and jitter come after serialisation).

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

use crate::delay::{Delay, Jitter};
use crate::duplicate::Duplicate;
use crate::loss::{Loss, LossModel};
use crate::rate::{validate_trace, RateQueue};
use crate::rng::{derive_seed, tag};
use crate::{Nanos, Pipeline, Stage};

#[derive(Debug, Clone, PartialEq, Default)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize), serde(deny_unknown_fields, default))]
pub struct DirectionSpec {
    /// `None`: unlimited rate (and therefore no queueing).
    pub rate: Option<RateSpec>,
    pub queue: QueueLimit,
    /// Fixed one-way delay.
    pub delay: Nanos,
    pub jitter: Option<JitterSpec>,
    pub loss: Option<LossSpec>,
    /// Probability that a packet is duplicated (the copy follows it through the link).
    pub duplicate: f64,
}

#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize), serde(rename_all = "snake_case", deny_unknown_fields))]
pub enum RateSpec {
    /// Constant bit rate: a packet of L bytes occupies the link for 8L/rate.
    Constant { bits_per_sec: u64 },
    /// Mahimahi trace: each entry a millisecond timestamp of one 1500-byte delivery
    /// opportunity; the trace repeats with a period equal to its last timestamp.
    Trace { opportunities_ms: Vec<u64> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize), serde(rename_all = "snake_case", deny_unknown_fields))]
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
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize), serde(rename_all = "snake_case", deny_unknown_fields))]
pub enum LossSpec {
    Bernoulli { p: f64 },
    /// netem's gemodel: p = P(good→bad), r = P(bad→good), loss probability 1−h in the
    /// bad state and 1−k in the good state.
    GilbertElliott { p: f64, r: f64, h: f64, k: f64 },
}

/// Builds the pipeline of one link direction. `seed` is this direction's seed (derive it
/// from the run seed with [`crate::rng::derive_seed`], e.g. with the direction's index);
/// each stage draws from its own sub-stream of it ([`crate::rng::tag`]).
///
/// Stages, in order, each omitted when ideal: loss (absent, or never losing) →
/// duplicate (probability 0) → queue+rate (no rate: unlimited, and then the queue limit
/// has no effect) → delay (no fixed delay and no jitter). A fully ideal spec gives an
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
        stages.push(Box::new(Duplicate::new(spec.duplicate, derive_seed(seed, tag::DUPLICATE))));
    }
    match &spec.rate {
        None => {}
        Some(RateSpec::Constant { bits_per_sec }) => stages.push(Box::new(RateQueue::constant(*bits_per_sec, spec.queue)?)),
        Some(RateSpec::Trace { opportunities_ms }) => {
            stages.push(Box::new(RateQueue::trace(opportunities_ms.clone(), spec.queue)?))
        }
    }
    let jitter = spec
        .jitter
        .filter(|j| j.amount > 0)
        .map(|j| Jitter { amount: j.amount, distribution: j.distribution, reorder: j.reorder });
    if spec.delay > 0 || jitter.is_some() {
        stages.push(Box::new(Delay::new(spec.delay, jitter, derive_seed(seed, tag::DELAY))));
    }
    Ok(Pipeline::new(stages))
}

/// Checks a spec: probabilities in [0, 1], rate > 0, a valid trace, non-zero queue limit.
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
        Some(RateSpec::Trace { opportunities_ms }) => validate_trace(opportunities_ms)?,
    }
    match spec.queue {
        QueueLimit::Packets(0) => return Err("queue limit of 0 packets would drop every packet".into()),
        QueueLimit::Bytes(0) => return Err("queue limit of 0 bytes would drop every packet".into()),
        _ => {}
    }
    Ok(())
}
