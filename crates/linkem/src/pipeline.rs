//! A link direction: stages composed in order, processed as a discrete-event system.

use crate::{DropReason, Mark, Nanos, Notice, Packet, Stage};

/// What a pipeline reports when it is stepped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PipelineEvent<P> {
    /// The packet left the last stage (the link direction) at `at`.
    Departed { packet: Packet<P>, at: Nanos },
    /// A stage refused the packet at `at`, or dropped it at `at` after holding it (a
    /// queue discipline's drop at dequeue, or of its oldest packet to make room).
    Dropped {
        packet: Packet<P>,
        at: Nanos,
        reason: DropReason,
        stage: usize,
    },
    /// A stage ECN-marked the packet at `at` (it goes on, with `ecn == Ce`, and departs
    /// later).
    Marked { mark: Mark, at: Nanos, stage: usize },
}

impl<P> PipelineEvent<P> {
    pub fn at(&self) -> Nanos {
        match self {
            PipelineEvent::Departed { at, .. }
            | PipelineEvent::Dropped { at, .. }
            | PipelineEvent::Marked { at, .. } => *at,
        }
    }
}

/// Stages in order; a packet moves from one to the next at the exact due time the
/// previous stage gave it, whatever the time at which the driver calls `step`. A driver
/// that wakes late therefore delays the *hand-over* to the outside world but never the
/// model's own timeline.
pub struct Pipeline<P> {
    stages: Vec<Box<dyn Stage<P> + Send>>,
}

impl<P> Pipeline<P> {
    pub fn new(stages: Vec<Box<dyn Stage<P> + Send>>) -> Self {
        Pipeline { stages }
    }

    /// A packet enters the link direction at `at`. A drop at the first stage is reported
    /// immediately.
    pub fn push(&mut self, packet: Packet<P>, at: Nanos) -> Option<PipelineEvent<P>> {
        if self.stages.is_empty() {
            return Some(PipelineEvent::Departed { packet, at });
        }
        self.offer(0, packet, at)
    }

    fn offer(&mut self, stage: usize, packet: Packet<P>, at: Nanos) -> Option<PipelineEvent<P>> {
        match self.stages[stage].enqueue(packet, at) {
            Ok(()) => None,
            Err(d) => Some(PipelineEvent::Dropped {
                packet: d.packet,
                at,
                reason: d.reason,
                stage,
            }),
        }
    }

    /// The earliest due time among all stages.
    pub fn next_due(&self) -> Option<Nanos> {
        self.earliest().map(|(_, t)| t)
    }

    fn earliest(&self) -> Option<(usize, Nanos)> {
        let mut best: Option<(usize, Nanos)> = None;
        for (i, s) in self.stages.iter().enumerate() {
            if let Some(t) = s.next_due() {
                // Ties go to the later stage: a packet leaving the pipeline frees nothing
                // upstream, but processing downstream first keeps hand-over order FIFO.
                if best.is_none_or(|(_, b)| t <= b) {
                    best = Some((i, t));
                }
            }
        }
        best
    }

    /// Processes the single earliest event if it is due at or before `now`: either a
    /// packet moves to the next stage (which may drop it: reported), or it leaves the
    /// pipeline (reported), or a stage reports a drop or mark of a packet it held. Returns `None` when nothing is due by `now`; callers loop
    /// while [`Pipeline::next_due`] is `<= now`.
    pub fn step(&mut self, now: Nanos) -> Option<PipelineEvent<P>> {
        loop {
            let (i, t) = self.earliest()?;
            if t > now {
                return None;
            }
            if let Some(n) = self.stages[i].take_notice(t) {
                return Some(match n {
                    Notice::Dropped { packet, reason, at } => PipelineEvent::Dropped {
                        packet,
                        at,
                        reason,
                        stage: i,
                    },
                    Notice::Marked { mark, at } => PipelineEvent::Marked { mark, at, stage: i },
                });
            }
            // `None`: the stage processed an internal event (its link took a packet) that
            // hands nothing on.
            let Some((packet, at)) = self.stages[i].dequeue(t) else {
                continue;
            };
            if i + 1 == self.stages.len() {
                return Some(PipelineEvent::Departed { packet, at });
            }
            if let Some(ev) = self.offer(i + 1, packet, at) {
                return Some(ev);
            }
        }
    }

    /// The scenario's time 0 ([`Stage::set_origin`] of every stage).
    pub fn set_origin(&mut self, t0: Nanos) {
        for s in &mut self.stages {
            s.set_origin(t0);
        }
    }

    /// Packets held in the whole pipeline.
    pub fn len(&self) -> usize {
        self.stages.iter().map(|s| s.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
