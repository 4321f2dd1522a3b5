//! A multipath link direction: split → legs → merge (dual connectivity, docs/algorithms.md).
//!
//! The split numbers each packet and puts it on one leg (batch mode) or on all of them
//! (duplication mode); each leg is a full [`Pipeline`] (rate, queue, delay, loss); the
//! merge reorders by sequence number with the PDCP procedure ([`Reorder`]), or, when
//! off, hands packets on as they come off the legs (reordered).
//!
//! Everything is processed in exact due-time order, like [`Pipeline::step`]: the legs'
//! stage hand-overs and the reordering timer. Ties: legs before the timer (a packet
//! reaching the merge at the instant the timer expires still counts as in time), and
//! lower leg index first.
//!
//! A packet may also be *pinned* to one leg ([`Multipath::push_on_leg`]): it bypasses the
//! split and the merge, gets no sequence number, and leaves the direction when it leaves
//! its leg — traffic of a single-leg user sharing that leg with the split traffic.
//!
//! Duplication mode clones the packet for every leg but the last; all copies keep the
//! original's `copy` flag (they are the same packet on several paths, and each leg is
//! logged on its own), and the merge keeps the first to arrive.

use std::collections::VecDeque;

use crate::direction::{DirectionEvent, PacketInfo, Summarize};
use crate::merge::{MergeOutput, MergeStats, Reorder};
use crate::split::{Route, Split};
use crate::{Nanos, Packet, Pipeline, PipelineEvent};

/// A packet's payload inside a leg: the payload plus its sequence number, which travels
/// beside the packet, never in it. `None`: pinned to the leg, bypassing split and merge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Numbered<P> {
    pub sn: Option<u16>,
    pub payload: P,
}

fn numbered<P>(p: Packet<P>, sn: Option<u16>) -> Packet<Numbered<P>> {
    p.map_payload(|payload| Numbered { sn, payload })
}

fn unnumbered<P>(p: Packet<Numbered<P>>) -> (Option<u16>, Packet<P>) {
    let sn = p.payload.sn;
    (sn, p.map_payload(|n| n.payload))
}

pub struct Multipath<P: Summarize> {
    split: Split,
    legs: Vec<Pipeline<Numbered<P>>>,
    /// `None`: merge off.
    merge: Option<Reorder<P>>,
    /// Events already produced and not yet handed out; all due at or before the time
    /// being processed, so they come out first.
    pending: VecDeque<DirectionEvent<P>>,
    /// Packets handed on by a merge that is off.
    passed: u64,
}

impl<P: Summarize + Clone> Multipath<P> {
    /// `legs.len()` must equal `split.legs()`; `merge` `None` turns the merge off.
    pub fn new(split: Split, legs: Vec<Pipeline<Numbered<P>>>, merge: Option<Reorder<P>>) -> Self {
        assert_eq!(split.legs(), legs.len(), "the split must know every leg");
        Multipath {
            split,
            legs,
            merge,
            pending: VecDeque::new(),
            passed: 0,
        }
    }

    /// The scenario's time 0, for every leg ([`Pipeline::set_origin`]).
    pub fn set_origin(&mut self, t0: Nanos) {
        for leg in &mut self.legs {
            leg.set_origin(t0);
        }
    }

    pub fn legs(&self) -> usize {
        self.legs.len()
    }

    /// The merge's counters (merge off: only `delivered`, the packets handed on).
    pub fn merge_stats(&self) -> MergeStats {
        match &self.merge {
            Some(m) => m.stats(),
            None => MergeStats {
                delivered: self.passed,
                ..Default::default()
            },
        }
    }

    /// A packet enters the direction (the split) at `at`. Its consequences are reported
    /// by [`Multipath::step`].
    pub fn push(&mut self, packet: Packet<P>, at: Nanos) {
        let (sn, route) = self.split.assign();
        match route {
            Route::One(leg) => self.push_leg(leg, packet, Some(sn), at),
            Route::All => {
                let last = self.legs.len() - 1;
                for leg in 0..last {
                    self.push_leg(leg, packet.clone(), Some(sn), at);
                }
                self.push_leg(last, packet, Some(sn), at);
            }
        }
    }

    /// A packet pinned to `leg` enters the direction at `at`: it rides that leg only,
    /// unnumbered, and departs the direction as it leaves the leg (no merge).
    pub fn push_on_leg(&mut self, packet: Packet<P>, leg: usize, at: Nanos) {
        assert!(
            leg < self.legs.len(),
            "leg {leg} of a direction with {} legs",
            self.legs.len()
        );
        self.push_leg(leg, packet, None, at);
    }

    fn push_leg(&mut self, leg: usize, packet: Packet<P>, sn: Option<u16>, at: Nanos) {
        self.pending.push_back(DirectionEvent::LegArrived {
            leg,
            info: PacketInfo::of(&packet),
            at,
        });
        if let Some(ev) = self.legs[leg].push(numbered(packet, sn), at) {
            self.leg_event(leg, ev);
        }
    }

    fn leg_event(&mut self, leg: usize, ev: PipelineEvent<Numbered<P>>) {
        match ev {
            PipelineEvent::Departed { packet, at } => {
                let (sn, packet) = unnumbered(packet);
                self.pending.push_back(DirectionEvent::LegDeparted {
                    leg,
                    info: PacketInfo::of(&packet),
                    at,
                });
                match sn {
                    Some(sn) => self.merge_receive(leg, sn, packet, at),
                    None => self.pending.push_back(DirectionEvent::Departed { packet, at }),
                }
            }
            PipelineEvent::Dropped {
                packet,
                at,
                reason,
                stage,
            } => {
                let (_, packet) = unnumbered(packet);
                self.pending.push_back(DirectionEvent::LegDropped {
                    leg,
                    packet,
                    at,
                    reason,
                    stage,
                });
            }
            PipelineEvent::Marked { mark, at, stage } => {
                self.pending
                    .push_back(DirectionEvent::LegMarked { leg, mark, at, stage });
            }
        }
    }

    fn merge_receive(&mut self, leg: usize, sn: u16, packet: Packet<P>, at: Nanos) {
        let pending = &mut self.pending;
        match &mut self.merge {
            None => {
                self.passed += 1;
                pending.push_back(DirectionEvent::Departed { packet, at });
            }
            Some(m) => m.receive(sn, packet, at, &mut |o| pending.push_back(merge_event(o, leg, at))),
        }
    }

    /// When the next event is due.
    pub fn next_due(&self) -> Option<Nanos> {
        if let Some(e) = self.pending.front() {
            return Some(e.at());
        }
        self.earliest().map(|(_, t)| t)
    }

    /// The earliest leg hand-over or timer expiry: (`Some(leg)` or `None` for the timer,
    /// due time).
    fn earliest(&self) -> Option<(Option<usize>, Nanos)> {
        let mut best: Option<(Option<usize>, Nanos)> = None;
        for (i, leg) in self.legs.iter().enumerate() {
            if let Some(t) = leg.next_due() {
                if best.is_none_or(|(_, b)| t < b) {
                    best = Some((Some(i), t));
                }
            }
        }
        if let Some(t) = self.merge.as_ref().and_then(|m| m.timer()) {
            if best.is_none_or(|(_, b)| t < b) {
                best = Some((None, t));
            }
        }
        best
    }

    /// The next event due at or before `now`: processes leg hand-overs and timer
    /// expiries in due-time order until one produces an event. Returns `None` when
    /// nothing is due by `now`; callers loop while [`Multipath::next_due`] is `<= now`.
    pub fn step(&mut self, now: Nanos) -> Option<DirectionEvent<P>> {
        loop {
            if let Some(e) = self.pending.front() {
                return if e.at() <= now { self.pending.pop_front() } else { None };
            }
            let (source, t) = self.earliest()?;
            if t > now {
                return None;
            }
            match source {
                // `t` is the earliest due time anywhere, so the leg moves only what is
                // due at exactly `t`.
                Some(leg) => {
                    if let Some(ev) = self.legs[leg].step(t) {
                        self.leg_event(leg, ev);
                    }
                }
                None => {
                    let pending = &mut self.pending;
                    let merge = self.merge.as_mut().expect("only a merge has a timer");
                    merge.expire(t, &mut |o| pending.push_back(merge_event(o, usize::MAX, t)));
                }
            }
        }
    }

    /// Packets held in the legs and the merge's buffer.
    pub fn len(&self) -> usize {
        self.legs.iter().map(|l| l.len()).sum::<usize>() + self.merge.as_ref().map_or(0, |m| m.buffered() as usize)
    }

    /// Nothing held and nothing left to report.
    pub fn is_empty(&self) -> bool {
        self.len() == 0 && self.pending.is_empty()
    }
}

/// `leg` is the leg the packet came off (only a receive can discard, so an expiry never
/// uses it).
fn merge_event<P: Summarize>(o: MergeOutput<P>, leg: usize, at: Nanos) -> DirectionEvent<P> {
    match o {
        MergeOutput::Delivered(packet) => DirectionEvent::Departed { packet, at },
        MergeOutput::Discarded(packet) => DirectionEvent::MergeDiscarded { leg, packet, at },
        MergeOutput::GapSkipped(count) => DirectionEvent::GapSkipped { count, at },
    }
}
