//! The receiving half: reassembly (in-order data for the application, out-of-order
//! segments kept and reported in SACK blocks, most recent first, as Linux orders them),
//! the advertised window, and Linux's ACK policy (`tcp_event_data_recv`,
//! `__tcp_ack_snd_check`, `tcp_send_delayed_ack`): quick ACKs for the first segments
//! (up to 16), then an ACK for every second full segment or after the delayed-ACK
//! timeout (40 ms at its minimum, adapted to the arrival gaps as Linux's `ato`), an
//! immediate ACK when a hole fills or a duplicate arrives, and out-of-order segments
//! ACKed at once for the first three then compressed (at most 44, or for 5 % of the RTT
//! up to 1 ms: `tcp_comp_sack_*`). The receive buffer grows as Linux 6.18's autotuning
//! (DRS: `tcp_rcv_space_adjust`, `tcp_rcvbuf_grow`, the receiver's RTT from
//! `tcp_rcv_rtt_measure[_ts]`), and the window's growth toward it turns quick ACKs on
//! (`tcp_grow_window`: `icsk_ack.quick |= 1`).

use std::collections::{BTreeMap, VecDeque};

use crate::time::{Jiffies, Nanos};

/// `TCP_MAX_QUICKACKS`.
const MAX_QUICKACKS: u32 = 16;
/// `TCP_FASTRETRANS_THRESH`: out-of-order ACKs sent at once before compression.
const FASTRETRANS_THRESH: u32 = 3;
/// `tcp_comp_sack_nr`, `tcp_comp_sack_delay_ns`.
const COMP_SACK_NR: u32 = 44;
const COMP_SACK_DELAY_NS: u64 = 1_000_000;
/// Most SACK blocks remembered (Linux's `selective_acks[4]`).
const SACK_BLOCKS: usize = 4;
/// `TCP_INIT_CWND`: the first `rcvq_space.space` is this many segments at most.
const INIT_CWND: u64 = 10;

/// `tcp_win_from_space` at the default `scaling_ratio` (50 %): the window a buffer of
/// `space` bytes holds (skb overhead is the other half). The truesize of arriving
/// segments, from which Linux refines the ratio, is not modelled.
fn win_from_space(space: u64) -> u64 {
    space / 2
}

/// `tcp_space_from_win`, its inverse.
fn space_from_win(win: u64) -> u64 {
    win * 2
}

/// What one arriving segment's data did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Arrival {
    /// Bytes it added to the in-order stream.
    pub in_order: u64,
    /// It was (partly) beyond a hole.
    pub out_of_order: bool,
    /// Nothing in it was new.
    pub duplicate: bool,
}

/// What an ACK carries from the receiving side, fixed when it is sent: a segment's
/// processing may send one (`tcp_send_ack` within it) before later segments of the same
/// instant move `rcv_nxt` on or push a SACK block out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckFields {
    /// The acknowledgement (`rcv_nxt`, a sequence offset).
    pub rcv_nxt: u64,
    /// The window it advertises (bytes, before scaling).
    pub window: u64,
    /// Its SACK blocks, most recent first (a D-SACK block first).
    pub sack: Vec<(u64, u64)>,
}

#[derive(Debug, Clone)]
pub struct Receiver {
    /// Next sequence offset expected.
    pub rcv_nxt: u64,
    /// Out-of-order data by start offset (non-overlapping).
    ofo: BTreeMap<u64, Vec<u8>>,
    /// Offset of the peer's FIN, once seen.
    fin_at: Option<u64>,
    pub fin_received: bool,
    sack_blocks: Vec<(u64, u64)>,
    /// The duplicate data the next ACK reports first (`rx_opt.dsack`,
    /// `duplicate_sack[0]`; RFC 2883).
    dsack: Option<(u64, u64)>,
    /// ACKs sent while a segment was processed, to go out before anything it causes.
    pub early_acks: Vec<AckFields>,
    ready: VecDeque<u8>,
    /// Bytes the application has read in all.
    pub read_total: u64,

    // Window.
    /// The window last advertised (bytes) and `rcv_nxt` then (`rcv_wup`).
    pub rcv_wnd: u64,
    pub rcv_wup: u64,
    rcv_ssthresh: u64,
    window_clamp: u64,
    pub wscale: u8,
    advmss: u64,
    /// Out-of-order payload bytes held (part of `sk_rmem_alloc`).
    ofo_bytes: u64,

    // Receive-buffer autotuning.
    /// `sk_rcvbuf`, and `tcp_rmem[2]`, the most autotuning may grow it to.
    rcvbuf: u64,
    rmem_max: u64,
    /// `rcvq_space`: bytes read in the last measured RTT, and where and when the
    /// measurement began (`read_total` then).
    rcvq_space: u64,
    rcvq_seq: u64,
    rcvq_time: Nanos,
    /// `rcv_rtt_est.rtt_us` (µs << 3; 0: no sample yet), the window-based
    /// measurement's end (`rcv_rtt_est.seq`) and start, and the last `tsecr` sampled.
    rcv_rtt_us8: u64,
    rcv_rtt_seq: u64,
    rcv_rtt_time: Option<Nanos>,
    rcv_rtt_last_tsecr: u32,

    // ACK policy.
    /// Data arrived that no ACK has covered yet (`ICSK_ACK_SCHED`).
    pending: bool,
    /// An ACK must go out at once (`ICSK_ACK_NOW` or a decision to send now).
    pub ack_now: bool,
    quick: u32,
    /// `icsk_ack.ato` in jiffies (0: no data yet).
    ato: u64,
    lrcvtime: u64,
    rcv_mss: u64,
    /// When the delayed-ACK timer fires.
    pub delack_at: Option<Nanos>,
    dup_ack_counter: u32,
    compressed_ack: u32,
    compressed_rcv_nxt: u64,
    /// When the compressed-SACK timer fires.
    pub comp_at: Option<Nanos>,
}

impl Receiver {
    /// `initial`: the buffer a connection starts with (`tcp_rmem[1]`, Linux's default
    /// 131072) in bytes; `rcvbuf`: its limit (`tcp_rmem[2]`); `advmss`: the MSS this end
    /// announces.
    pub fn new(initial: u64, rcvbuf: u64, advmss: u64) -> Receiver {
        // Linux's initial window: half the starting buffer (tcp_win_from_space at its
        // default 50 % ratio) rounded down to whole segments; the window scale covers
        // the largest buffer (ilog2 − 15, at least rmem_max's default 212992). The clamp
        // is the largest buffer's window until `init_buffer_space` lowers it to the
        // starting buffer's.
        let start = initial.min(rcvbuf.max(2 * advmss));
        let initial = win_from_space(start) / advmss * advmss;
        let wscale = (63 - rcvbuf.max(212_992).leading_zeros() as i32 - 15).clamp(0, 14) as u8;
        let window_clamp = win_from_space(rcvbuf).max(2 * advmss);
        Receiver {
            rcv_nxt: 0,
            ofo: BTreeMap::new(),
            fin_at: None,
            fin_received: false,
            sack_blocks: Vec::new(),
            dsack: None,
            early_acks: Vec::new(),
            ready: VecDeque::new(),
            read_total: 0,
            rcv_wnd: initial.min(window_clamp),
            rcv_wup: 0,
            rcv_ssthresh: initial.min(window_clamp),
            window_clamp,
            wscale,
            advmss,
            ofo_bytes: 0,
            rcvbuf: start,
            rmem_max: rcvbuf,
            rcvq_space: 0,
            rcvq_seq: 0,
            rcvq_time: 0,
            rcv_rtt_us8: 0,
            rcv_rtt_seq: 0,
            rcv_rtt_time: None,
            rcv_rtt_last_tsecr: 0,
            pending: false,
            ack_now: false,
            quick: 0,
            ato: 0,
            lrcvtime: 0,
            rcv_mss: advmss.min(536),
            delack_at: None,
            dup_ack_counter: 0,
            compressed_ack: 0,
            compressed_rcv_nxt: 0,
            comp_at: None,
        }
    }

    /// The peer's SYN occupied `isn_offset` (0): data start after it.
    pub fn start(&mut self, rcv_nxt: u64) {
        self.rcv_nxt = rcv_nxt;
        self.rcv_wup = rcv_nxt;
        self.compressed_rcv_nxt = rcv_nxt;
    }

    pub fn readable(&self) -> usize {
        self.ready.len()
    }

    /// Moves up to `buf.len()` in-order bytes to the application at `now`.
    pub fn read(&mut self, now: Nanos, buf: &mut [u8]) -> usize {
        let n = buf.len().min(self.ready.len());
        for (d, s) in buf.iter_mut().zip(self.ready.drain(..n)) {
            *d = s;
        }
        self.was_read(now, n as u64);
        n
    }

    /// Discards up to `max` in-order bytes as read at `now`.
    pub fn consume(&mut self, now: Nanos, max: usize) -> usize {
        let n = max.min(self.ready.len());
        self.ready.drain(..n);
        self.was_read(now, n as u64);
        n
    }

    fn was_read(&mut self, now: Nanos, n: u64) {
        self.read_total += n;
        self.space_adjust(now);
        self.cleanup_rbuf(n);
    }

    /// `tcp_cleanup_rbuf` after the application read `copied` bytes: the ACK held back
    /// while more than a full segment waited goes now, and so does a window update that
    /// at least doubles a window fallen to half the clamp or less. (The `ICSK_ACK_PUSHED`
    /// rule for small segments is not modelled: bulk transfers send full ones.)
    fn cleanup_rbuf(&mut self, copied: u64) {
        if self.pending && self.rcv_nxt - self.rcv_wup > self.rcv_mss {
            self.ack_now = true;
            return;
        }
        if copied > 0 && !self.fin_received {
            let left = self.window_left();
            if 2 * left <= self.window_clamp {
                let new = self.window_now();
                if new > 0 && new >= 2 * left {
                    self.ack_now = true;
                }
            }
        }
    }

    /// `tcp_init_buffer_space`, when the connection is established at `now`: the clamp
    /// comes down to the starting buffer's window and the first measurement begins.
    pub fn init_buffer_space(&mut self, now: Nanos) {
        self.rcvq_time = now;
        self.rcvq_seq = self.read_total;
        self.window_clamp = self.window_clamp.min(win_from_space(self.rcvbuf));
        self.rcv_ssthresh = self.rcv_ssthresh.min(self.window_clamp);
        self.rcvq_space = self.rcv_ssthresh.min(self.rcv_wnd).min(INIT_CWND * self.advmss);
    }

    /// `tcp_space`: the window the buffer has room for beyond what it holds.
    fn space(&self) -> u64 {
        let held = self.ready.len() as u64 + self.ofo_bytes;
        win_from_space(self.rcvbuf).saturating_sub(held)
    }

    /// `tcp_rcv_space_adjust` (Linux 6.18), run after each read: once per receiver
    /// RTT, if the application read more than in the RTT before (less what still waits
    /// in the queue), the buffer grows (`tcp_rcvbuf_grow`).
    fn space_adjust(&mut self, now: Nanos) {
        if self.rcv_rtt_us8 == 0 || (now - self.rcvq_time) / 1000 < self.rcv_rtt_us8 >> 3 {
            return;
        }
        let inq = self.ready.len() as u64;
        let copied = (self.read_total - self.rcvq_seq).saturating_sub(inq);
        if copied > self.rcvq_space {
            self.rcvbuf_grow(copied);
        }
        self.rcvq_seq = self.read_total;
        self.rcvq_time = now;
    }

    /// `tcp_rcvbuf_grow` (6.18, with "tcp: fix too slow tcp_rcvbuf_grow() action"):
    /// `newval` bytes read in the last RTT against `oldval` in the one before: room for
    /// twice `newval` ("DRS is always one RTT late") plus twice its growth ratio over
    /// that (slow start doubles), plus the out-of-order span, up to `tcp_rmem[2]`; the
    /// clamp follows the buffer.
    fn rcvbuf_grow(&mut self, newval: u64) {
        let oldval = self.rcvq_space;
        self.rcvq_space = newval;
        let mut rcvwin = newval << 1;
        // oldval is never 0 once established (at least 10 segments); 0 adds nothing.
        let grow = (rcvwin * newval.saturating_sub(oldval))
            .checked_div(oldval)
            .unwrap_or(0);
        rcvwin += grow << 1;
        if let Some((&s, b)) = self.ofo.last_key_value() {
            rcvwin += s + b.len() as u64 - self.rcv_nxt;
        }
        let rcvbuf = space_from_win(rcvwin).min(self.rmem_max);
        if rcvbuf > self.rcvbuf {
            self.rcvbuf = rcvbuf;
            self.window_clamp = win_from_space(rcvbuf);
        }
    }

    /// `tcp_rcv_rtt_measure_ts`: a segment of `len` bytes echoing `tsecr`, our clock
    /// reading `ts_now` (ms): one sample per new echo, from full segments only.
    pub fn rtt_measure_ts(&mut self, tsecr: u32, ts_now: u32, len: u64) {
        if tsecr == self.rcv_rtt_last_tsecr {
            return;
        }
        self.rcv_rtt_last_tsecr = tsecr;
        if len >= self.rcv_mss {
            let delta = ts_now.wrapping_sub(tsecr);
            // tcp_rtt_tsopt_us with min 0: a 0 ms sample is no sample (6.16+).
            if delta > 0 && delta < 1 << 30 {
                self.rtt_update(u64::from(delta) * 1000, false);
            }
        }
    }

    /// `tcp_rcv_rtt_measure`: one sample per window's worth of data, its time to arrive.
    fn rtt_measure(&mut self, now: Nanos) {
        if let Some(start) = self.rcv_rtt_time {
            if self.rcv_nxt < self.rcv_rtt_seq {
                return;
            }
            self.rtt_update(((now - start) / 1000).max(1), true);
        }
        self.rcv_rtt_seq = self.rcv_nxt + self.rcv_wnd;
        self.rcv_rtt_time = Some(now);
    }

    /// `tcp_rcv_rtt_update` (6.16+: always seeks the minimum): a smaller sample replaces
    /// the estimate; a larger one is ignored if window-based or while data wait to be
    /// read, else averaged in at 1/8.
    fn rtt_update(&mut self, sample_us: u64, win_dep: bool) {
        let m = sample_us << 3;
        let old = self.rcv_rtt_us8;
        if old == 0 || m < old {
            self.rcv_rtt_us8 = m;
        } else if !win_dep && self.ready.is_empty() {
            self.rcv_rtt_us8 = old - (old >> 3) + sample_us;
        }
    }

    /// The receiver's RTT estimate in µs (0: none yet).
    pub fn rcv_rtt_us(&self) -> u64 {
        self.rcv_rtt_us8 >> 3
    }

    /// `rcv_ssthresh`, the window's current ceiling, and `window_clamp` (bytes).
    pub fn rcv_ssthresh(&self) -> u64 {
        self.rcv_ssthresh
    }

    /// What autotuning last measured the application to read in a receiver RTT
    /// (`rcvq_space.space`, `tcpi_rcv_space`).
    pub fn rcv_space(&self) -> u64 {
        self.rcvq_space
    }

    pub fn window_clamp(&self) -> u64 {
        self.window_clamp
    }

    /// SACK blocks to send, most recent first.
    pub fn sack_blocks(&self) -> &[(u64, u64)] {
        &self.sack_blocks
    }

    /// The blocks of the SACK option of the segment going out now: the D-SACK block
    /// first, if one is owed (and then no longer: Linux reports a duplicate once), then
    /// the SACK blocks.
    pub fn sack_option(&mut self) -> Vec<(u64, u64)> {
        self.dsack
            .take()
            .into_iter()
            .chain(self.sack_blocks.iter().copied())
            .collect()
    }

    /// An ACK goes out now: what it carries (`tcp_event_ack_sent` included).
    pub fn ack_fields(&mut self) -> AckFields {
        let sack = self.sack_option();
        let window = self.ack_sent();
        AckFields {
            rcv_nxt: self.rcv_nxt,
            window,
            sack,
        }
    }

    /// The ACK owed goes out now, in the middle of segment processing.
    pub fn send_ack_early(&mut self) {
        let a = self.ack_fields();
        self.early_acks.push(a);
    }

    /// `tcp_sack_new_ofo_skb`: the block joins (and coalesces) those it touches, or goes
    /// first; when that pushes out the oldest of four while ACKs are being compressed,
    /// the ACK owed goes out first, so no block the sender has not seen is forgotten.
    fn sack_add(&mut self, mut s: u64, mut e: u64) {
        let joins = self.sack_blocks.iter().any(|&(bs, be)| !(be < s || bs > e));
        if !joins && self.sack_blocks.len() >= SACK_BLOCKS && self.compressed_ack > 0 {
            self.send_ack_early();
        }
        self.sack_blocks.retain(|&(bs, be)| {
            if be < s || bs > e {
                true
            } else {
                s = s.min(bs);
                e = e.max(be);
                false
            }
        });
        self.sack_blocks.insert(0, (s, e));
        self.sack_blocks.truncate(SACK_BLOCKS);
    }

    /// `tcp_dsack_set`: `[start, end)` arrived again.
    fn dsack_set(&mut self, start: u64, end: u64) {
        if start < end {
            self.dsack = Some((start, end));
        }
    }

    fn deliver(&mut self, bytes: &[u8]) {
        self.ready.extend(bytes);
    }

    /// Data (`payload` at sequence offset `start`, `fin`) arrived.
    pub fn data(&mut self, start: u64, payload: &[u8], fin: bool) -> Arrival {
        let end = start + payload.len() as u64;
        if fin {
            self.fin_at = Some(end);
        }
        let mut a = Arrival::default();
        let limit = self.rcv_nxt + self.window_clamp.max(self.rcv_wnd) + 1;
        if end <= self.rcv_nxt && !(fin && end == self.rcv_nxt && !self.fin_received) {
            a.duplicate = true;
            self.dsack_set(start, end);
            return a;
        }
        if start <= self.rcv_nxt {
            // tcp_data_queue: a partial duplicate reports its old head.
            self.dsack_set(start, self.rcv_nxt);
            let skip = (self.rcv_nxt - start) as usize;
            self.deliver(&payload[skip..]);
            a.in_order += (payload.len() - skip) as u64;
            self.rcv_nxt = end;
            let had_ofo = !self.ofo.is_empty();
            while let Some((&s, _)) = self.ofo.first_key_value() {
                if s > self.rcv_nxt {
                    break;
                }
                let (s, bytes) = self.ofo.pop_first().expect("a first entry");
                self.ofo_bytes -= bytes.len() as u64;
                let e = s + bytes.len() as u64;
                if e > self.rcv_nxt {
                    let skip = (self.rcv_nxt - s) as usize;
                    self.deliver(&bytes[skip..]);
                    a.in_order += (bytes.len() - skip) as u64;
                    self.rcv_nxt = e;
                }
            }
            if self.fin_at == Some(self.rcv_nxt) && !self.fin_received {
                self.fin_received = true;
                self.rcv_nxt += 1;
            }
            let nxt = self.rcv_nxt;
            self.sack_blocks.retain(|&(_, e)| e > nxt);
            if had_ofo && self.ofo.is_empty() {
                // RFC 5681 4.2: ACK at once when a hole fills.
                self.ack_now = true;
            }
            a.out_of_order = !self.ofo.is_empty();
        } else if start < limit {
            a.out_of_order = true;
            // tcp_data_queue_ofo: what was already held is reported (one block spanning
            // the overlaps, as tcp_dsack_extend grows it).
            let from = self.ofo.range(..=start).next_back().map_or(start, |(&os, _)| os);
            let held = self
                .ofo
                .range(from..end)
                .map(|(&os, ob)| (os.max(start), (os + ob.len() as u64).min(end)))
                .filter(|&(lo, hi)| lo < hi)
                .fold(None, |acc: Option<(u64, u64)>, (lo, hi)| {
                    Some(acc.map_or((lo, hi), |(l, h)| (l.min(lo), h.max(hi))))
                });
            if let Some((lo, hi)) = held {
                self.dsack_set(lo, hi);
            }
            // Keep only the bytes not already held.
            let mut s = start;
            let mut e = end;
            if let Some((&ps, pb)) = self.ofo.range(..=s).next_back() {
                s = s.max(ps + pb.len() as u64);
            }
            if let Some((&ns, _)) = self.ofo.range(s..).next() {
                e = e.min(ns);
            }
            if s < e {
                self.ofo
                    .insert(s, payload[(s - start) as usize..(e - start) as usize].to_vec());
                self.ofo_bytes += e - s;
            } else if s >= end {
                a.duplicate = true;
            }
            self.sack_add(start, end);
        }
        a
    }

    fn incr_quickack(&mut self, max: u32) {
        let q = ((self.rcv_wnd / (2 * self.rcv_mss.max(1))) as u32).max(2).min(max);
        self.quick = self.quick.max(q);
    }

    /// `tcp_event_data_recv` for in-order data of `len` bytes at `now`; `rto_j` is the
    /// connection's RTO in jiffies.
    pub fn event_data_recv(&mut self, now: Nanos, len: u64, clock: Jiffies, rto_j: u64) {
        self.pending = true;
        if len >= self.rcv_mss {
            self.rcv_mss = len.min(self.advmss);
        }
        self.rtt_measure(now);
        let ato_min = clock.hz() / 25;
        let j = clock.at(now);
        if self.ato == 0 {
            self.incr_quickack(MAX_QUICKACKS);
            self.ato = ato_min;
        } else {
            let m = j - self.lrcvtime;
            if m <= ato_min / 2 {
                self.ato = (self.ato >> 1) + ato_min / 2;
            } else if m < self.ato {
                self.ato = ((self.ato >> 1) + m).min(rto_j);
            } else if m > rto_j {
                self.incr_quickack(MAX_QUICKACKS);
            }
        }
        self.lrcvtime = j;
        if len >= 128 {
            self.grow_window(len);
        }
    }

    /// `tcp_grow_window` for a segment of `len` bytes: while the buffer has room beyond
    /// `rcv_ssthresh`, the window may open 2 segments per segment received, and each
    /// such step turns quick-ACK mode on (`icsk_ack.quick |= 1`): the ACK goes out at
    /// once instead of every second segment.
    fn grow_window(&mut self, len: u64) {
        let room = self.window_clamp.min(self.space()).saturating_sub(self.rcv_ssthresh);
        if room == 0 {
            return;
        }
        let incr = (2 * self.advmss).max(2 * len);
        self.rcv_ssthresh += room.min(incr);
        self.quick |= 1;
    }

    /// Out-of-order or duplicate data: schedule an ACK (`inet_csk_schedule_ack`); a
    /// duplicate is answered at once with quick ACKs turned back on (`tcp_send_dupack`).
    pub fn event_other_data(&mut self, duplicate: bool, len: u64) {
        self.pending = true;
        if duplicate {
            self.incr_quickack(MAX_QUICKACKS);
            self.ack_now = true;
        } else {
            // tcp_data_queue_ofo: the segment was queued (all of it or what was new).
            if len >= 128 {
                self.grow_window(len);
            }
            self.rcvbuf_grow(self.rcvq_space);
        }
    }

    /// `__tcp_ack_snd_check` after a segment's data were processed at `now`; `srtt_us`
    /// is this end's smoothed RTT (0: none).
    pub fn ack_check(&mut self, now: Nanos, clock: Jiffies, srtt_us: u64) {
        if !self.pending {
            return;
        }
        // More than one full segment, and (with data still unread: `sk_rcvlowat` 1) the
        // window's right edge not pulled back by it; else the read's ACK goes
        // (`cleanup_rbuf`).
        let full =
            self.rcv_nxt - self.rcv_wup > self.rcv_mss && (self.ready.is_empty() || self.window_now() >= self.rcv_wnd);
        if full || self.quick > 0 || self.ack_now {
            self.ack_now = true;
            return;
        }
        if self.ofo.is_empty() {
            self.send_delayed_ack(now, clock, srtt_us);
            return;
        }
        if self.compressed_ack >= COMP_SACK_NR {
            self.ack_now = true;
            return;
        }
        if self.compressed_rcv_nxt != self.rcv_nxt {
            self.compressed_rcv_nxt = self.rcv_nxt;
            self.dup_ack_counter = 0;
        }
        if self.dup_ack_counter < FASTRETRANS_THRESH {
            self.dup_ack_counter += 1;
            self.ack_now = true;
            return;
        }
        self.compressed_ack += 1;
        if self.comp_at.is_none() {
            let delay = COMP_SACK_DELAY_NS.min(srtt_us * 1000 / 20);
            self.comp_at = Some(now + delay);
        }
    }

    /// `tcp_send_delayed_ack`.
    fn send_delayed_ack(&mut self, now: Nanos, clock: Jiffies, srtt_us: u64) {
        let delack_min = clock.hz() / 25;
        let mut ato = self.ato;
        if ato > delack_min {
            let mut max_ato = clock.hz() / 2;
            if srtt_us > 0 {
                let rtt = clock.from_us(srtt_us).max(delack_min);
                max_ato = max_ato.min(rtt);
            }
            ato = ato.min(max_ato);
        }
        ato = ato.min(clock.hz() / 5);
        let timeout = clock.expiry(now, ato);
        if let Some(at) = self.delack_at {
            // About to fire anyway: ACK now.
            if at <= clock.expiry(now, ato >> 2) {
                self.ack_now = true;
                return;
            }
            if at <= timeout {
                return;
            }
        }
        self.delack_at = Some(timeout);
    }

    /// The delayed-ACK timer fired: Linux inflates `ato` (the ACK was late) and ACKs.
    pub fn delack_timer(&mut self, rto_j: u64) {
        self.delack_at = None;
        if self.pending {
            self.ato = (self.ato << 1).min(rto_j);
            self.ack_now = true;
        }
    }

    /// The compressed-SACK timer fired.
    pub fn comp_timer(&mut self) {
        self.comp_at = None;
        if self.compressed_ack > 0 {
            self.ack_now = true;
        }
    }

    /// An ACK went out (`tcp_event_ack_sent`): returns the window to advertise in it
    /// (bytes, before scaling).
    pub fn ack_sent(&mut self) -> u64 {
        if self.quick > 0 {
            let pkts = u32::from(self.pending);
            if pkts >= self.quick {
                self.quick = 0;
            } else {
                self.quick -= pkts;
            }
        }
        self.pending = false;
        self.ack_now = false;
        self.delack_at = None;
        self.compressed_ack = 0;
        self.comp_at = None;
        self.select_window()
    }

    /// `__tcp_select_window`: the window the buffer's room offers now (bytes), up to
    /// `rcv_ssthresh`, in window-scale units.
    fn window_now(&self) -> u64 {
        let space = self.window_clamp.min(self.space());
        let unit = 1u64 << self.wscale;
        space.min(self.rcv_ssthresh).div_ceil(unit) * unit
    }

    /// `tcp_receive_window`: what is left of the window last offered.
    fn window_left(&self) -> u64 {
        (self.rcv_wup + self.rcv_wnd).saturating_sub(self.rcv_nxt)
    }

    /// `tcp_select_window`: never shrinks the right edge already offered.
    fn select_window(&mut self) -> u64 {
        let unit = 1u64 << self.wscale;
        let mut new = self.window_now();
        let cur = self.window_left();
        if new < cur {
            new = cur.div_ceil(unit) * unit;
        }
        self.rcv_wnd = new;
        self.rcv_wup = self.rcv_nxt;
        new
    }
}
