//! A plain description of one link direction, and how it becomes a [`Pipeline`].
//!
//! Units are SI integers (nanoseconds, bits per second, bytes). Stage order is fixed:
//! loss → duplicate → queue+rate → delay (random loss and duplication act as a packet
//! enters the link, as netem does; the queue sits ahead of the rate stage; propagation
//! delay and jitter come after serialisation).

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

use crate::Nanos;

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
