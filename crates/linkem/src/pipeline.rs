//! A link direction: stages composed in order, processed as a discrete-event system.

use crate::{DropReason, Nanos, Packet, Stage};

/// What a pipeline reports when it is stepped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PipelineEvent<P> {
    /// The packet left the last stage (the link direction) at `at`.
    Departed { packet: Packet<P>, at: Nanos },
    /// A stage refused the packet at `at`.
    Dropped {
        packet: Packet<P>,
        at: Nanos,
        reason: DropReason,
        stage: usize,
    },
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
    /// pipeline (reported). Returns `None` when nothing is due by `now`; callers loop
    /// while [`Pipeline::next_due`] is `<= now`.
    pub fn step(&mut self, now: Nanos) -> Option<PipelineEvent<P>> {
        loop {
            let (i, t) = self.earliest()?;
            if t > now {
                return None;
            }
            let (packet, at) = self.stages[i].dequeue(t).expect("stage reported a due packet");
            if i + 1 == self.stages.len() {
                return Some(PipelineEvent::Departed { packet, at });
            }
            if let Some(ev) = self.offer(i + 1, packet, at) {
                return Some(ev);
            }
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
