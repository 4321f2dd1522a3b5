//! The merge point of a multipath direction: the 3GPP PDCP receive procedure (TS 38.323
//! §5.2.2) that puts the legs' packets back in sequence-number order.
//!
//! State, all COUNTs: `RX_NEXT` (one past the highest received), `RX_DELIV` (the first
//! not yet delivered), `RX_REORD` (RX_NEXT when the reordering timer started), and the
//! timer t-Reordering.
//!
//! * Receive: COUNT = (HFN << 16) | SN with the HFN inferred from RX_DELIV (the COUNT
//!   within ±2^15 of RX_DELIV); drop it if COUNT < RX_DELIV or it is already buffered
//!   (this removes duplicates); buffer it; RX_NEXT = max(RX_NEXT, COUNT + 1); if COUNT ==
//!   RX_DELIV deliver the consecutive run from RX_DELIV and advance RX_DELIV past it; if
//!   the timer runs and RX_DELIV ≥ RX_REORD stop it; if it does not run (now) and
//!   RX_DELIV < RX_NEXT, RX_REORD = RX_NEXT and start it.
//! * Expiry: deliver every buffered COUNT < RX_REORD in order (the missing ones are given
//!   up as lost: a gap skip), then the consecutive run from RX_REORD; RX_DELIV = the first
//!   COUNT not delivered; if RX_DELIV < RX_NEXT, RX_REORD = RX_NEXT and restart the timer.
//!
//! Choices where the standard leaves room or does not fit an emulator:
//! * COUNT is a `u64` (a 48-bit HFN) instead of 32 bits, so it never wraps in a run.
//! * An SN that would need HFN −1 (possible only before RX_DELIV reached 2^15) is older
//!   than anything this merge can still deliver: it is discarded as too late.
//! * The timer starts at the time of the packet that starts it (or at the expiry that
//!   restarts it) and expires exactly `t_reordering` later; `t_reordering = 0` expires at
//!   once, at that same instant.
//! * Time is an argument: [`Reorder::timer`] says when the timer expires and the driver
//!   calls [`Reorder::expire`] then.

use std::collections::VecDeque;

use crate::{Nanos, Packet};

/// Half the 16-bit SN space: the HFN inference window (3GPP `Window_Size`).
pub const WINDOW: u64 = 1 << 15;

/// The default t-Reordering of S1 (docs/algorithms.md): 200 ms.
pub const DEFAULT_T_REORDERING: Nanos = 200_000_000;

/// What the merge hands back to its driver, all at the time of the call that produced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeOutput<P> {
    /// Delivered to the upper layer, in COUNT order.
    Delivered(Packet<P>),
    /// Dropped: a duplicate of a buffered or delivered packet, or too late (COUNT <
    /// RX_DELIV: given up on at a timer expiry).
    Discarded(Packet<P>),
    /// At a timer expiry, this many missing COUNTs below RX_REORD were given up as lost.
    GapSkipped(u64),
}

/// Counters over the merge's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct MergeStats {
    pub delivered: u64,
    /// Duplicates and packets too late.
    pub discarded: u64,
    /// Missing COUNTs given up at timer expiries.
    pub gap_skipped: u64,
    pub timer_expiries: u64,
    /// Most packets held in the reordering buffer (measured after each receive or expiry
    /// is processed, i.e. packets waiting for a missing one).
    pub max_buffered: u64,
}

pub struct Reorder<P> {
    t_reordering: Nanos,
    rx_next: u64,
    rx_deliv: u64,
    rx_reord: u64,
    /// When the running t-Reordering expires.
    timer: Option<Nanos>,
    /// `buffer[i]` holds COUNT `rx_deliv + i` if it was received. `buffer[0]` is always
    /// empty at rest (else it would have been delivered), and the length is `rx_next −
    /// rx_deliv` (≤ 2^15 by the HFN window), so the deque stops growing once warmed up.
    buffer: VecDeque<Option<Packet<P>>>,
    buffered: u64,
    stats: MergeStats,
}

impl<P> Reorder<P> {
    /// A merge with all state variables at 0 (the split's first SN is 0) and a
    /// t-Reordering of `t_reordering` ns.
    pub fn new(t_reordering: Nanos) -> Self {
        Reorder {
            t_reordering,
            rx_next: 0,
            rx_deliv: 0,
            rx_reord: 0,
            timer: None,
            buffer: VecDeque::new(),
            buffered: 0,
            stats: MergeStats::default(),
        }
    }

    pub fn rx_next(&self) -> u64 {
        self.rx_next
    }
    pub fn rx_deliv(&self) -> u64 {
        self.rx_deliv
    }
    pub fn rx_reord(&self) -> u64 {
        self.rx_reord
    }
    /// When the running t-Reordering expires; `None` when it does not run.
    pub fn timer(&self) -> Option<Nanos> {
        self.timer
    }
    /// Packets in the reordering buffer.
    pub fn buffered(&self) -> u64 {
        self.buffered
    }
    pub fn stats(&self) -> MergeStats {
        self.stats
    }

    /// The COUNT of a received SN: HFN inferred so that COUNT lies within ±2^15 of
    /// RX_DELIV. `None` when that would need an HFN below 0.
    pub fn count_of(&self, sn: u16) -> Option<u64> {
        let sn = u64::from(sn);
        let deliv_sn = self.rx_deliv & 0xFFFF;
        let deliv_hfn = self.rx_deliv >> 16;
        let hfn = if sn + WINDOW < deliv_sn {
            deliv_hfn + 1
        } else if sn >= deliv_sn + WINDOW {
            deliv_hfn.checked_sub(1)?
        } else {
            deliv_hfn
        };
        Some((hfn << 16) | sn)
    }

    /// A packet with sequence number `sn` reaches the merge at `at`.
    pub fn receive(&mut self, sn: u16, packet: Packet<P>, at: Nanos, out: &mut impl FnMut(MergeOutput<P>)) {
        let Some(count) = self.count_of(sn).filter(|&c| c >= self.rx_deliv) else {
            return self.discard(packet, out);
        };
        let i = (count - self.rx_deliv) as usize;
        if i >= self.buffer.len() {
            self.buffer.resize_with(i + 1, || None);
        } else if self.buffer[i].is_some() {
            return self.discard(packet, out);
        }
        self.buffer[i] = Some(packet);
        self.buffered += 1;
        if count >= self.rx_next {
            self.rx_next = count + 1;
        }
        if count == self.rx_deliv {
            self.deliver_run(out);
        }
        if self.timer.is_some() && self.rx_deliv >= self.rx_reord {
            self.timer = None;
        }
        if self.timer.is_none() && self.rx_deliv < self.rx_next {
            self.rx_reord = self.rx_next;
            self.timer = Some(at.saturating_add(self.t_reordering));
        }
        self.note_occupancy();
    }

    /// t-Reordering expires at `at` (the driver calls this at [`Reorder::timer`]).
    pub fn expire(&mut self, at: Nanos, out: &mut impl FnMut(MergeOutput<P>)) {
        debug_assert!(self.timer.is_some_and(|t| t <= at), "expire called with no timer due");
        self.timer = None;
        self.stats.timer_expiries += 1;
        // Everything below RX_REORD: buffered ones are delivered, missing ones given up.
        // The gap skip is reported before the deliveries it unblocks.
        let below = (self.rx_reord - self.rx_deliv) as usize;
        let gaps = below as u64 - self.buffer.iter().take(below).filter(|s| s.is_some()).count() as u64;
        if gaps > 0 {
            self.stats.gap_skipped += gaps;
            out(MergeOutput::GapSkipped(gaps));
        }
        while self.rx_deliv < self.rx_reord {
            if let Some(p) = self.buffer.pop_front().flatten() {
                self.deliver(p, out);
            }
            self.rx_deliv += 1;
        }
        self.deliver_run(out);
        if self.rx_deliv < self.rx_next {
            self.rx_reord = self.rx_next;
            self.timer = Some(at.saturating_add(self.t_reordering));
        }
        self.note_occupancy();
    }

    /// Delivers the consecutive run of buffered COUNTs from RX_DELIV and advances
    /// RX_DELIV past it.
    fn deliver_run(&mut self, out: &mut impl FnMut(MergeOutput<P>)) {
        while let Some(Some(_)) = self.buffer.front() {
            let p = self.buffer.pop_front().flatten().expect("front is a packet");
            self.rx_deliv += 1;
            self.deliver(p, out);
        }
    }

    fn deliver(&mut self, p: Packet<P>, out: &mut impl FnMut(MergeOutput<P>)) {
        self.buffered -= 1;
        self.stats.delivered += 1;
        out(MergeOutput::Delivered(p));
    }

    fn discard(&mut self, p: Packet<P>, out: &mut impl FnMut(MergeOutput<P>)) {
        self.stats.discarded += 1;
        out(MergeOutput::Discarded(p));
    }

    fn note_occupancy(&mut self) {
        self.stats.max_buffered = self.stats.max_buffered.max(self.buffered);
    }
}
