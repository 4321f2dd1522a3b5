//! One link direction as a driver sees it, whether a plain [`Pipeline`] or a
//! [`Multipath`] split/merge: the same push / next_due / step interface and one event
//! type, so a driver treats both alike.

use std::collections::VecDeque;

use crate::multipath::Multipath;
use crate::{DropReason, Mark, Nanos, Packet, Pipeline, PipelineEvent};

/// The part of a payload a driver needs to log a packet the model keeps (one crossing a
/// leg of a multipath direction, which stays inside the model): copied into the event,
/// so reporting it moves and allocates nothing.
pub trait Summarize {
    type Summary: Copy + std::fmt::Debug + PartialEq;
    fn summarize(&self) -> Self::Summary;
}

impl Summarize for () {
    type Summary = ();
    fn summarize(&self) {}
}

/// A packet as reported by an event that does not hand it over.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PacketInfo<S> {
    pub id: u64,
    pub size: u32,
    pub copy: bool,
    pub summary: S,
}

impl<S> PacketInfo<S> {
    pub fn of<P: Summarize<Summary = S>>(p: &Packet<P>) -> Self {
        PacketInfo {
            id: p.id,
            size: p.size,
            copy: p.copy,
            summary: p.payload.summarize(),
        }
    }
}

/// What a direction reports. Leg indices are 0-based.
#[derive(Debug, Clone, PartialEq)]
pub enum DirectionEvent<P: Summarize> {
    /// The packet left the direction (for a multipath direction: delivered by the merge).
    Departed { packet: Packet<P>, at: Nanos },
    /// A stage of a plain direction refused the packet, or dropped it after holding it.
    Dropped {
        packet: Packet<P>,
        at: Nanos,
        reason: DropReason,
        stage: usize,
    },
    /// A stage of a plain direction ECN-marked the packet (CE); it departs later with
    /// `ecn == Ce`, and the driver rewrites its header then.
    Marked { mark: Mark, at: Nanos, stage: usize },
    /// The split put the packet (or, in duplication mode, one copy of it) on `leg`.
    LegArrived {
        leg: usize,
        info: PacketInfo<P::Summary>,
        at: Nanos,
    },
    /// The packet left `leg` and reached the merge.
    LegDeparted {
        leg: usize,
        info: PacketInfo<P::Summary>,
        at: Nanos,
    },
    /// A stage of `leg` refused the packet, or dropped it after holding it.
    LegDropped {
        leg: usize,
        packet: Packet<P>,
        at: Nanos,
        reason: DropReason,
        stage: usize,
    },
    /// A stage of `leg` ECN-marked the packet (CE).
    LegMarked {
        leg: usize,
        mark: Mark,
        at: Nanos,
        stage: usize,
    },
    /// The merge dropped a packet that came off `leg`: a duplicate, or too late (its COUNT
    /// had been given up). Reason [`DropReason::MergeDiscard`].
    MergeDiscarded { leg: usize, packet: Packet<P>, at: Nanos },
    /// At a reordering-timer expiry the merge gave up `count` missing packets as lost.
    GapSkipped { count: u64, at: Nanos },
}

impl<P: Summarize> DirectionEvent<P> {
    pub fn at(&self) -> Nanos {
        match self {
            DirectionEvent::Departed { at, .. }
            | DirectionEvent::Dropped { at, .. }
            | DirectionEvent::Marked { at, .. }
            | DirectionEvent::LegMarked { at, .. }
            | DirectionEvent::LegArrived { at, .. }
            | DirectionEvent::LegDeparted { at, .. }
            | DirectionEvent::LegDropped { at, .. }
            | DirectionEvent::MergeDiscarded { at, .. }
            | DirectionEvent::GapSkipped { at, .. } => *at,
        }
    }
}

impl<P: Summarize> From<PipelineEvent<P>> for DirectionEvent<P> {
    fn from(ev: PipelineEvent<P>) -> Self {
        match ev {
            PipelineEvent::Departed { packet, at } => DirectionEvent::Departed { packet, at },
            PipelineEvent::Dropped {
                packet,
                at,
                reason,
                stage,
            } => DirectionEvent::Dropped {
                packet,
                at,
                reason,
                stage,
            },
            PipelineEvent::Marked { mark, at, stage } => DirectionEvent::Marked { mark, at, stage },
        }
    }
}

/// A link direction of either kind.
pub enum Direction<P: Summarize> {
    Single(Single<P>),
    Multipath(Multipath<P>),
}

/// A plain pipeline, with the event its `push` may produce kept until `step` hands it out.
pub struct Single<P: Summarize> {
    pipeline: Pipeline<P>,
    pending: VecDeque<DirectionEvent<P>>,
}

impl<P: Summarize> From<Pipeline<P>> for Direction<P> {
    fn from(pipeline: Pipeline<P>) -> Self {
        Direction::Single(Single {
            pipeline,
            pending: VecDeque::new(),
        })
    }
}

impl<P: Summarize> From<Multipath<P>> for Direction<P> {
    fn from(m: Multipath<P>) -> Self {
        Direction::Multipath(m)
    }
}

impl<P: Summarize + Clone> Direction<P> {
    /// A packet enters the direction at `at`. Every consequence, even one at `at` itself
    /// (a drop at the first stage), is reported by [`Direction::step`].
    pub fn push(&mut self, packet: Packet<P>, at: Nanos) {
        match self {
            Direction::Single(s) => {
                if let Some(ev) = s.pipeline.push(packet, at) {
                    s.pending.push_back(ev.into());
                }
            }
            Direction::Multipath(m) => m.push(packet, at),
        }
    }

    /// A packet pinned to leg `leg` of a multipath direction enters it at `at` (see
    /// [`Multipath::push_on_leg`]).
    ///
    /// # Panics
    /// On a plain direction, or with a leg the direction does not have: a driver checks
    /// its configuration first.
    pub fn push_on_leg(&mut self, packet: Packet<P>, leg: usize, at: Nanos) {
        match self {
            Direction::Single(_) => panic!("a plain direction has no leg {leg}"),
            Direction::Multipath(m) => m.push_on_leg(packet, leg, at),
        }
    }

    /// When the next event is due.
    pub fn next_due(&self) -> Option<Nanos> {
        match self {
            Direction::Single(s) => match (s.pending.front().map(|e| e.at()), s.pipeline.next_due()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            Direction::Multipath(m) => m.next_due(),
        }
    }

    /// The next event due at or before `now`, processed in exact due-time order (see
    /// [`Pipeline::step`], [`Multipath::step`]); `None` when nothing is due by `now`.
    pub fn step(&mut self, now: Nanos) -> Option<DirectionEvent<P>> {
        match self {
            Direction::Single(s) => {
                if s.pending.front().is_some_and(|e| e.at() <= now) {
                    return s.pending.pop_front();
                }
                s.pipeline.step(now).map(Into::into)
            }
            Direction::Multipath(m) => m.step(now),
        }
    }

    /// The scenario's time 0: trace-driven links start their trace there
    /// ([`Pipeline::set_origin`]).
    pub fn set_origin(&mut self, t0: Nanos) {
        match self {
            Direction::Single(s) => s.pipeline.set_origin(t0),
            Direction::Multipath(m) => m.set_origin(t0),
        }
    }

    /// Packets held by the model.
    pub fn len(&self) -> usize {
        match self {
            Direction::Single(s) => s.pipeline.len(),
            Direction::Multipath(m) => m.len(),
        }
    }

    /// Nothing held and nothing left to report.
    pub fn is_empty(&self) -> bool {
        match self {
            Direction::Single(s) => s.pipeline.is_empty() && s.pending.is_empty(),
            Direction::Multipath(m) => m.is_empty(),
        }
    }
}
