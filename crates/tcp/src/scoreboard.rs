//! The retransmission queue as Linux keeps it: one entry per segment sent and not yet
//! cumulatively acknowledged, each tagged SACKed, LOST and/or retransmitted (Linux's
//! S, L, R bits), with the counters `sacked_out`, `lost_out`, `retrans_out` and
//! `packets_in_flight` = packets_out − (sacked_out + lost_out) + retrans_out; and RACK
//! (RFC 8985, `tcp_recovery.c`): a segment is lost once one sent after it was delivered
//! and a reordering window has passed since it was sent.

use std::collections::VecDeque;

use crate::time::Nanos;

/// One segment in flight (sequence offsets from the ISN).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    pub start: u64,
    /// One past its last sequence number (a FIN counts one).
    pub end: u64,
    /// Its latest transmission.
    pub xmit: Nanos,
    /// The order of that transmission among all of the connection's: at one instant of
    /// virtual time several go out, and "sent after" must still be defined (Linux's
    /// microsecond clock always moves between them).
    pub order: u64,
    pub sacked: bool,
    pub lost: bool,
    /// Retransmitted and not since deemed lost (`TCPCB_SACKED_RETRANS`).
    pub retrans: bool,
    /// Ever retransmitted (`TCPCB_EVER_RETRANS`).
    pub ever_retrans: bool,
    /// The connection's delivered count when it was last sent (`tx.delivered`).
    pub delivered: u64,
}

/// What a SACK or a cumulative acknowledgement newly delivered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Delivery {
    /// Segments newly delivered (acknowledged or SACKed for the first time).
    pub segments: u32,
    /// Of those, segments SACKed.
    pub sacked: u32,
    /// A retransmitted segment was among them (Karn: no RTT from this ACK).
    pub retrans_delivered: bool,
    /// Transmission times of the oldest and newest never-retransmitted ones.
    pub first_xmit: Option<Nanos>,
    pub last_xmit: Option<Nanos>,
    /// Segments cumulatively acknowledged (SACKed before or not).
    pub cum_acked: u32,
    /// The lowest start of a never-retransmitted segment newly delivered behind one
    /// already SACKed (a SACK) or not SACKed before (a cumulative ACK): a hole filled
    /// by the original, so the path reordered (`state->reord` / `reord` of tcp_input.c).
    pub reord: Option<u64>,
    /// Retransmitted segments a D-SACK block reported received twice.
    pub dsacked_retrans: u32,
    /// The lowest end of a never-retransmitted segment newly delivered (F-RTO's test:
    /// `FLAG_ORIG_SACK_ACKED` when it is at or below `high_seq`).
    pub orig_min_end: Option<u64>,
    /// The delivered count when the most recently sent of the newly delivered segments
    /// was sent (`rs->prior_delivered`), and that transmission's order.
    pub prior_delivered: Option<u64>,
    latest_order: u64,
}

impl Delivery {
    /// The transmission order of the most recently sent segment newly delivered.
    pub fn latest_order(&self) -> u64 {
        self.latest_order
    }

    fn reordered(&mut self, start: u64) {
        self.reord = Some(self.reord.map_or(start, |r| r.min(start)));
    }

    fn count(&mut self, s: &Sent) {
        self.segments += 1;
        if s.order >= self.latest_order {
            self.latest_order = s.order;
            self.prior_delivered = Some(s.delivered);
        }
        if s.ever_retrans {
            self.retrans_delivered = true;
        } else {
            self.orig_min_end = Some(self.orig_min_end.map_or(s.end, |e| e.min(s.end)));
            self.first_xmit.get_or_insert(s.xmit);
            self.last_xmit = Some(s.xmit);
        }
    }
}

/// `TCP_RACK_RECOVERY_THRESH`: recoveries a widened reordering window outlasts.
pub const RACK_RECOVERY_THRESH: u32 = 16;

/// RACK's state: the most recently sent segment known delivered and its RTT, and the
/// reordering window's width in steps of min RTT / 4 (widened on D-SACKs).
#[derive(Debug, Clone, Copy)]
pub struct Rack {
    pub xmit: Nanos,
    pub order: u64,
    pub end_seq: u64,
    pub rtt_us: u64,
    /// Delivered something since the last loss scan.
    pub advanced: bool,
    /// `reo_wnd_steps`, `reo_wnd_persist`, `dsack_seen`, `last_delivered`.
    pub reo_wnd_steps: u32,
    pub reo_wnd_persist: u32,
    pub dsack_seen: bool,
    pub last_delivered: u64,
}

impl Default for Rack {
    fn default() -> Rack {
        Rack {
            xmit: 0,
            order: 0,
            end_seq: 0,
            rtt_us: 0,
            advanced: false,
            reo_wnd_steps: 1,
            reo_wnd_persist: 0,
            dsack_seen: false,
            last_delivered: 0,
        }
    }
}

impl Rack {
    /// `tcp_rack_update_reo_wnd` after an ACK whose newest delivered segment was sent
    /// when `prior_delivered` segments had been delivered (`delivered`: now): a D-SACK
    /// seen widens the window by a step, at most once a round trip, and the width
    /// persists for `RACK_RECOVERY_THRESH` recoveries.
    pub fn update_reo_wnd(&mut self, prior_delivered: Option<u64>, delivered: u64) {
        let Some(prior) = prior_delivered.filter(|&d| d != 0) else {
            return;
        };
        if prior < self.last_delivered {
            self.dsack_seen = false;
        }
        if self.dsack_seen {
            self.reo_wnd_steps = (self.reo_wnd_steps + 1).min(0xFF);
            self.dsack_seen = false;
            self.last_delivered = delivered;
            self.reo_wnd_persist = RACK_RECOVERY_THRESH;
        } else if self.reo_wnd_persist == 0 {
            self.reo_wnd_steps = 1;
        }
    }
}

/// `tcp_skb_sent_after`, on the transmission order (which the time only refines).
fn sent_after(order1: u64, order2: u64) -> bool {
    order1 > order2
}

#[derive(Debug, Clone, Default)]
pub struct Scoreboard {
    q: VecDeque<Sent>,
    pub sacked_out: u32,
    pub lost_out: u32,
    pub retrans_out: u32,
    /// No segment before this offset is lost and waiting for its retransmission.
    rtx_hint: u64,
    pub rack: Rack,
    /// Segments ever marked lost (Linux's `tp->lost`), for PRR's "newly lost".
    pub lost_events: u64,
    /// One past the highest SACKed sequence while anything is SACKed.
    highest_sack_end: u64,
    /// Transmissions so far (the next one's `order`).
    transmissions: u64,
    /// Segments delivered so far (`tp->delivered`), spurious retransmissions included.
    pub delivered: u64,
}

impl Scoreboard {
    pub fn packets_out(&self) -> u32 {
        self.q.len() as u32
    }

    pub fn in_flight(&self) -> u32 {
        self.packets_out() - (self.sacked_out + self.lost_out) + self.retrans_out
    }

    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// `tcp_highest_sack_seq`: one past the highest SACKed segment, `snd_una` when
    /// nothing is SACKed.
    pub fn highest_sack_seq(&self, snd_una: u64) -> u64 {
        if self.sacked_out == 0 {
            snd_una
        } else {
            self.highest_sack_end
        }
    }

    pub fn head(&self) -> Option<&Sent> {
        self.q.front()
    }

    pub fn last(&self) -> Option<&Sent> {
        self.q.back()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Sent> {
        self.q.iter()
    }

    /// A new segment went out.
    pub fn push(&mut self, start: u64, end: u64, xmit: Nanos) {
        self.transmissions += 1;
        self.q.push_back(Sent {
            start,
            end,
            xmit,
            order: self.transmissions,
            sacked: false,
            lost: false,
            retrans: false,
            ever_retrans: false,
            delivered: self.delivered,
        });
    }

    /// RACK's `tcp_rack_advance` for a segment newly delivered at `now`.
    fn rack_advance(&mut self, s: &Sent, now: Nanos, min_rtt_us: Option<u64>) {
        let rtt_us = now.saturating_sub(s.xmit) / 1000;
        if s.ever_retrans && min_rtt_us.is_some_and(|m| rtt_us < m) {
            // Ambiguous: the original may have been delivered (Linux's rule).
            return;
        }
        self.rack.advanced = true;
        self.rack.rtt_us = rtt_us;
        if sent_after(s.order, self.rack.order) {
            self.rack.xmit = s.xmit;
            self.rack.order = s.order;
            self.rack.end_seq = s.end;
        }
    }

    /// Tags the segments wholly inside one SACK block [left, right); `dup`: the block is
    /// a D-SACK (`tcp_sacktag_one` with `dup_sack`): its retransmitted segments were
    /// received twice, and one SACKed before shows the path reordered.
    pub fn sack(&mut self, left: u64, right: u64, dup: bool, now: Nanos, min_rtt_us: Option<u64>, d: &mut Delivery) {
        let mut i = self.q.partition_point(|s| s.end <= left);
        while i < self.q.len() {
            let s = self.q[i];
            if s.end > right {
                break;
            }
            if dup && s.start >= left && s.ever_retrans {
                d.dsacked_retrans += 1;
                if s.sacked {
                    d.reordered(s.start);
                }
            }
            if s.start >= left && !s.sacked {
                if !s.ever_retrans && self.sacked_out > 0 && s.start < self.highest_sack_end {
                    d.reordered(s.start);
                }
                if s.retrans {
                    self.retrans_out -= 1;
                }
                if s.lost {
                    self.lost_out -= 1;
                }
                self.sacked_out += 1;
                self.highest_sack_end = self.highest_sack_end.max(s.end);
                let e = &mut self.q[i];
                e.sacked = true;
                e.retrans = false;
                e.lost = false;
                d.count(&s);
                d.sacked += 1;
                self.delivered += 1;
                self.rack_advance(&s, now, min_rtt_us);
            }
            i += 1;
        }
    }

    /// Removes what `ack` (an offset) cumulatively acknowledges.
    pub fn ack(&mut self, ack: u64, now: Nanos, min_rtt_us: Option<u64>, d: &mut Delivery) {
        while let Some(&s) = self.q.front() {
            if s.end > ack {
                break;
            }
            self.q.pop_front();
            d.cum_acked += 1;
            if s.sacked {
                self.sacked_out -= 1;
                d.retrans_delivered |= s.ever_retrans;
                continue;
            }
            if s.retrans {
                self.retrans_out -= 1;
            }
            if s.lost {
                self.lost_out -= 1;
            }
            if !s.ever_retrans {
                d.reordered(s.start);
            }
            d.count(&s);
            self.delivered += 1;
            self.rack_advance(&s, now, min_rtt_us);
        }
    }

    /// `tcp_mark_skb_lost`.
    fn mark_lost_at(&mut self, i: usize) {
        let s = &mut self.q[i];
        if s.sacked {
            return;
        }
        if s.lost {
            if s.retrans {
                s.retrans = false;
                self.retrans_out -= 1;
                self.lost_events += 1;
            }
        } else {
            s.lost = true;
            self.lost_out += 1;
            self.lost_events += 1;
        }
        self.rtx_hint = self.rtx_hint.min(s.start);
    }

    /// `tcp_rack_detect_loss`: marks lost what RACK deems lost at `now` with reordering
    /// window `reo_wnd_us`; returns the time (µs) until the next segment would be, if one
    /// is waiting for the window to pass.
    pub fn rack_detect_loss(&mut self, now: Nanos, reo_wnd_us: u64) -> Option<u64> {
        let mut timeout: Option<u64> = None;
        let rack_order = self.rack.order;
        let wait_ns = (self.rack.rtt_us + reo_wnd_us) * 1000;
        for i in 0..self.q.len() {
            let s = self.q[i];
            if s.sacked || (s.lost && !s.retrans) {
                continue;
            }
            if !sent_after(rack_order, s.order) {
                if !s.ever_retrans {
                    // Every later never-retransmitted segment went out later still, and
                    // every later retransmitted one later than that.
                    break;
                }
                continue;
            }
            let elapsed = now.saturating_sub(s.xmit);
            if elapsed >= wait_ns {
                self.mark_lost_at(i);
            } else {
                let remaining = (wait_ns - elapsed).div_ceil(1000);
                timeout = Some(timeout.map_or(remaining, |t| t.max(remaining)));
            }
        }
        timeout
    }

    /// `tcp_timeout_mark_lost` at an RTO: every segment not SACKed is lost, except (RACK)
    /// those sent less than RACK's RTT ago, which may still arrive; the head always.
    pub fn timeout_mark_lost(&mut self, now: Nanos) {
        let rtt_ns = self.rack.rtt_us * 1000;
        for i in 0..self.q.len() {
            let s = self.q[i];
            if s.sacked {
                continue;
            }
            if i > 0 && s.xmit + rtt_ns > now {
                continue;
            }
            self.mark_lost_at(i);
        }
    }

    /// `tcp_undo_cwnd_reduction` with `unmark_loss`: no segment is deemed lost any more.
    pub fn unmark_lost(&mut self) {
        for s in self.q.iter_mut() {
            s.lost = false;
        }
        self.lost_out = 0;
        self.rtx_hint = u64::MAX;
    }

    /// The first segment that is lost, not SACKed and not yet retransmitted.
    pub fn next_to_retransmit(&mut self) -> Option<Sent> {
        let mut i = self.q.partition_point(|s| s.end <= self.rtx_hint);
        while let Some(s) = self.q.get(i) {
            if s.lost && !s.retrans && !s.sacked {
                self.rtx_hint = s.start;
                return Some(*s);
            }
            i += 1;
        }
        self.rtx_hint = u64::MAX;
        None
    }

    /// The segment starting at `start` was sent again at `now`.
    pub fn retransmitted(&mut self, start: u64, now: Nanos) {
        let i = self.q.partition_point(|s| s.start < start);
        let s = &mut self.q[i];
        debug_assert_eq!(s.start, start);
        if !s.retrans {
            s.retrans = true;
            self.retrans_out += 1;
        }
        let delivered = self.delivered;
        let s = &mut self.q[i];
        s.ever_retrans = true;
        s.delivered = delivered;
        s.xmit = now;
        self.transmissions += 1;
        s.order = self.transmissions;
    }
}
