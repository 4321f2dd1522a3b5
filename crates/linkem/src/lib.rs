//! `linkem` is the link model of transportlab and nothing else.
//!
//! A link direction is a [`Pipeline`] of [`Stage`]s. A stage takes packets in at a given
//! time and hands them out when they are due. **Time is an argument**: no stage reads a
//! clock, sleeps or does I/O, and every random decision comes from an RNG the stage owns,
//! seeded at construction. The real-time `engine` and the tests drive the same code; the
//! tests do it in virtual time and assert exact outcomes.
//!
//! A direction may also be [`Multipath`]: a split onto several legs, each a pipeline,
//! and a PDCP merge that restores sequence order ([`split`], [`merge`], [`multipath`]).
//! [`Direction`] gives both kinds one interface.
//!
//! Time is in integer nanoseconds ([`Nanos`]) from an arbitrary origin; rates are in
//! integer bits per second.

pub mod delay;
pub mod direction;
pub mod duplicate;
pub mod loss;
pub mod merge;
pub mod multipath;
mod passing;
pub mod pipeline;
pub mod queue;
pub mod rate;
pub mod rng;
pub mod spec;
pub mod split;

pub use direction::{Direction, DirectionEvent, PacketInfo, Summarize};
pub use multipath::Multipath;
pub use pipeline::{Pipeline, PipelineEvent};
pub use spec::{build_direction, build_multipath, build_pipeline};

/// Nanoseconds since an arbitrary origin chosen by the driver.
pub type Nanos = u64;

/// A packet as the link model sees it: an identity, a size on the wire, and an opaque
/// payload the model never looks into (the engine's buffer; `()` in tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet<P> {
    /// Unique per packet for the driver; a duplicate keeps its original's id.
    pub id: u64,
    /// Size in bytes as it occupies the link (IP packet length).
    pub size: u32,
    pub payload: P,
    /// `true` for the copy a [`duplicate::Duplicate`] stage made (the original keeps
    /// `false`), so a driver can log it as a duplicate. [`Packet::new`] sets `false`.
    pub copy: bool,
}

impl<P> Packet<P> {
    pub fn new(id: u64, size: u32, payload: P) -> Self {
        Packet {
            id,
            size,
            payload,
            copy: false,
        }
    }
}

/// Why a packet was dropped. Every drop carries one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DropReason {
    /// The queue ahead of the rate stage was full (drop-tail).
    QueueFull = 1,
    /// Random loss (Bernoulli or Gilbert–Elliott).
    RandomLoss = 2,
    /// The merge of a multipath direction discarded it: a duplicate of a packet it had
    /// already buffered or delivered, or too late (its sequence number was given up at a
    /// reordering-timer expiry).
    MergeDiscard = 3,
}

impl DropReason {
    /// Every reason, in code order.
    pub const ALL: [DropReason; 3] = [DropReason::QueueFull, DropReason::RandomLoss, DropReason::MergeDiscard];

    /// The code a packet log records (`reason` field).
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The name readers of the packet log use (contracts/contract.json `drop_reasons`).
    pub fn name(self) -> &'static str {
        match self {
            DropReason::QueueFull => "queue_full",
            DropReason::RandomLoss => "random_loss",
            DropReason::MergeDiscard => "merge_discard",
        }
    }
}

/// A packet a stage refused, with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped<P> {
    pub packet: Packet<P>,
    pub reason: DropReason,
}

/// One stage of a link direction.
///
/// Contract (what [`Pipeline`] relies on): `enqueue` is called with non-decreasing `at`,
/// never earlier than a due time already handed out by `dequeue`; `dequeue(now)` hands
/// out packets in the order of their due times, each only once its due time is `<= now`;
/// `next_due` is the due time of the packet `dequeue` would hand out next.
pub trait Stage<P> {
    /// A packet reaches this stage at time `at`. It is either accepted (and will be handed
    /// out later by `dequeue`) or refused with a reason. A stage may accept more than one
    /// packet for one offered (duplication): they all come out of `dequeue`.
    fn enqueue(&mut self, packet: Packet<P>, at: Nanos) -> Result<(), Dropped<P>>;
    /// The next packet whose due time is `<= now`, with that due time.
    fn dequeue(&mut self, now: Nanos) -> Option<(Packet<P>, Nanos)>;
    /// When the next packet is due, if the stage holds any.
    fn next_due(&self) -> Option<Nanos>;
    /// Packets held by the stage.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
