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
//! The bottleneck of a direction is a queue discipline (one of
//! [`spec::queue::DISCIPLINES`], each in its module under [`queue`]) in front of a link that serialises one packet at a time
//! ([`link`]: constant or trace-driven rate); [`rate::RateQueue`] composes the two into a
//! stage. A discipline may drop or ECN-mark packets it already holds; the pipeline
//! reports those as events too ([`PipelineEvent::Marked`], [`Notice`]).
//!
//! `linkem` never parses packets: what a discipline needs to know about one (its flow,
//! its ECN codepoint) the driver fills into [`Packet`].
//!
//! Time is in integer nanoseconds ([`Nanos`]) from an arbitrary origin; rates are in
//! integer bits per second.

pub mod delay;
pub mod direction;
pub mod duplicate;
pub mod link;
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

/// A packet's ECN codepoint (RFC 3168: the two low bits of the IPv4 TOS / IPv6 traffic
/// class byte). The driver reads it from the header; a discipline with ECN on sets `Ce`
/// instead of dropping an ECN-capable packet, and the driver writes it back when the
/// packet leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum Ecn {
    /// Not ECN-capable transport (00): an AQM drops it.
    #[default]
    NotEct = 0b00,
    /// ECT(1) (01): ECN-capable; L4S in RFC 9330.
    Ect1 = 0b01,
    /// ECT(0) (10): ECN-capable (classic).
    Ect0 = 0b10,
    /// Congestion experienced (11).
    Ce = 0b11,
}

impl Ecn {
    /// The codepoint of the two low bits of `bits` (the TOS / traffic-class byte).
    pub fn from_bits(bits: u8) -> Ecn {
        match bits & 0b11 {
            0b00 => Ecn::NotEct,
            0b01 => Ecn::Ect1,
            0b10 => Ecn::Ect0,
            _ => Ecn::Ce,
        }
    }

    /// The two-bit value.
    pub fn bits(self) -> u8 {
        self as u8
    }

    /// ECT(0), ECT(1) or CE: a discipline with ECN on marks it instead of dropping it.
    /// (A CE packet stays CE: the mark is reported, the header does not change.)
    pub fn is_capable(self) -> bool {
        self != Ecn::NotEct
    }
}

/// A packet as the link model sees it: an identity, a size on the wire, what queue
/// disciplines need to know about it (its flow and ECN codepoint, filled in by the
/// driver), and an opaque payload the model never looks into (the engine's buffer; `()`
/// in tests).
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
    /// The packet's flow: a hash of its 5-tuple the driver computes (any well-mixed 32-bit
    /// value; equal for the packets of one flow). FQ-CoDel queues by it. Default 0: every
    /// packet in one flow.
    pub flow: u32,
    /// Its ECN codepoint. Default [`Ecn::NotEct`]. A stage that marks the packet sets
    /// [`Ecn::Ce`] and reports it ([`PipelineEvent::Marked`]).
    pub ecn: Ecn,
}

impl<P> Packet<P> {
    /// A packet of flow 0, not ECN-capable, not a copy.
    pub fn new(id: u64, size: u32, payload: P) -> Self {
        Packet {
            id,
            size,
            payload,
            copy: false,
            flow: 0,
            ecn: Ecn::NotEct,
        }
    }

    /// The same packet with flow hash `flow`.
    pub fn with_flow(self, flow: u32) -> Self {
        Packet { flow, ..self }
    }

    /// The same packet with ECN codepoint `ecn`.
    pub fn with_ecn(self, ecn: Ecn) -> Self {
        Packet { ecn, ..self }
    }

    /// The same packet with another payload (id, size, flags, flow and ECN kept).
    pub fn map_payload<Q>(self, f: impl FnOnce(P) -> Q) -> Packet<Q> {
        Packet {
            id: self.id,
            size: self.size,
            payload: f(self.payload),
            copy: self.copy,
            flow: self.flow,
            ecn: self.ecn,
        }
    }
}

/// Why a packet was dropped. Every drop carries one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DropReason {
    /// The queue ahead of the rate stage was full: drop-tail refused the arriving packet,
    /// a drop-head queue or FQ-CoDel dropped one it held to make room, an AQM's hard limit
    /// was reached.
    QueueFull = 1,
    /// Random loss (Bernoulli or Gilbert–Elliott).
    RandomLoss = 2,
    /// The merge of a multipath direction discarded it: a duplicate of a packet it had
    /// already buffered or delivered, or too late (its sequence number was given up at a
    /// reordering-timer expiry).
    MergeDiscard = 3,
    /// An active queue management decision (an AQM discipline: `Class::aqm`) with room left in
    /// the queue: early drop at arrival, or drop at the head at dequeue. With ECN on, an
    /// ECN-capable packet is marked instead.
    AqmDrop = 4,
}

impl DropReason {
    /// Every reason, in code order.
    pub const ALL: [DropReason; 4] = [
        DropReason::QueueFull,
        DropReason::RandomLoss,
        DropReason::MergeDiscard,
        DropReason::AqmDrop,
    ];

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
            DropReason::AqmDrop => "aqm_drop",
        }
    }
}

/// A packet a stage refused, with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped<P> {
    pub packet: Packet<P>,
    pub reason: DropReason,
}

/// A packet a stage ECN-marked (set to [`Ecn::Ce`]), as reported when it happened; the
/// packet itself goes on and later leaves the stage with `ecn == Ce`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    pub id: u64,
    pub size: u32,
    pub copy: bool,
    pub flow: u32,
    /// Its codepoint before: ECT(0) or ECT(1) (the driver rewrites the header to CE), or
    /// CE already (nothing to rewrite).
    pub from: Ecn,
}

impl Mark {
    pub fn of<P>(p: &Packet<P>, from: Ecn) -> Self {
        Mark {
            id: p.id,
            size: p.size,
            copy: p.copy,
            flow: p.flow,
            from,
        }
    }
}

/// A decision a stage made about a packet it had already accepted, other than handing it
/// out: a queue discipline dropping a packet it held (CoDel at dequeue, drop-head making
/// room) or ECN-marking one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice<P> {
    Dropped {
        packet: Packet<P>,
        reason: DropReason,
        at: Nanos,
    },
    Marked {
        mark: Mark,
        at: Nanos,
    },
}

impl<P> Notice<P> {
    pub fn at(&self) -> Nanos {
        match self {
            Notice::Dropped { at, .. } | Notice::Marked { at, .. } => *at,
        }
    }
}

/// One stage of a link direction.
///
/// Contract (what [`Pipeline`] relies on): `enqueue` is called with non-decreasing `at`,
/// never earlier than a due time already handed out by `dequeue`; `dequeue(now)` hands
/// out packets in the order of their due times, each only once its due time is `<= now`;
/// `next_due` is the earliest time at which the stage has something to do: a packet to
/// hand out, a notice to report, or an internal event (a link becoming free, at which a
/// queue discipline may drop or mark). `dequeue(now)` processes internal events due by
/// `now` on its way and returns `None` when they produced no packet due by `now`.
pub trait Stage<P> {
    /// A packet reaches this stage at time `at`. It is either accepted (and will be handed
    /// out later by `dequeue`) or refused with a reason. A stage may accept more than one
    /// packet for one offered (duplication): they all come out of `dequeue`.
    fn enqueue(&mut self, packet: Packet<P>, at: Nanos) -> Result<(), Dropped<P>>;
    /// The next packet whose due time is `<= now`, with that due time.
    fn dequeue(&mut self, now: Nanos) -> Option<(Packet<P>, Nanos)>;
    /// When the stage next has something to do (see the trait's contract), if ever.
    fn next_due(&self) -> Option<Nanos>;
    /// The next notice (a drop or mark of a packet the stage held) due by `now`, in time
    /// order. Stages that never drop or mark what they accepted keep the default.
    fn take_notice(&mut self, now: Nanos) -> Option<Notice<P>> {
        let _ = now;
        None
    }
    /// Packets held by the stage (including dropped ones not yet reported).
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The scenario's time 0 is `t0`: a stage whose behaviour follows a timeline of its
    /// own (a trace-driven link) starts it there. Others keep the default.
    fn set_origin(&mut self, t0: Nanos) {
        let _ = t0;
    }
}
