//! The receiving half: reassembly (in-order data for the application, out-of-order
//! segments kept and reported in SACK blocks, most recent first, as Linux orders them),
//! the advertised window, and Linux's ACK policy (`tcp_event_data_recv`,
//! `__tcp_ack_snd_check`, `tcp_send_delayed_ack`): quick ACKs for the first segments
//! (up to 16), then an ACK for every second full segment or after the delayed-ACK
//! timeout (40 ms at its minimum, adapted to the arrival gaps as Linux's `ato`), an
//! immediate ACK when a hole fills or a duplicate arrives, and out-of-order segments
//! ACKed at once for the first three then compressed (at most 44, or for 5 % of the RTT
//! up to 1 ms: `tcp_comp_sack_*`).

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

/// An ACK that went out in the middle of a segment's processing, before its SACK block
/// pushed the oldest one out (`tcp_sack_compress_send_ack`): what it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlyAck {
    /// The window it advertises (bytes, before scaling).
    pub window: u64,
    /// Its SACK blocks, most recent first.
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
    /// ACKs sent while a segment was processed, to go out before anything it causes.
    pub early_acks: Vec<EarlyAck>,
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
    /// `rcvbuf`: the receive buffer's limit (tcp_rmem's maximum) in bytes; `advmss`:
    /// the MSS this end announces.
    pub fn new(rcvbuf: u64, advmss: u64) -> Receiver {
        // Linux's initial window: half the default buffer (131072, tcp_win_from_space at
        // its default 50 % ratio) rounded down to whole segments; the window scale
        // covers the largest buffer (ilog2 − 15).
        let initial = (131_072 / 2) / advmss * advmss;
        let wscale = (63 - rcvbuf.max(212_992).leading_zeros() as i32 - 15).clamp(0, 14) as u8;
        let window_clamp = (rcvbuf / 2).max(2 * advmss);
        Receiver {
            rcv_nxt: 0,
            ofo: BTreeMap::new(),
            fin_at: None,
            fin_received: false,
            sack_blocks: Vec::new(),
            early_acks: Vec::new(),
            ready: VecDeque::new(),
            read_total: 0,
            rcv_wnd: initial.min(window_clamp),
            rcv_wup: 0,
            rcv_ssthresh: initial.min(window_clamp),
            window_clamp,
            wscale,
            advmss,
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

    /// Moves up to `buf.len()` in-order bytes to the application.
    pub fn read(&mut self, buf: &mut [u8]) -> usize {
        let n = buf.len().min(self.ready.len());
        for (d, s) in buf.iter_mut().zip(self.ready.drain(..n)) {
            *d = s;
        }
        self.read_total += n as u64;
        n
    }

    /// Discards up to `max` in-order bytes as read.
    pub fn consume(&mut self, max: usize) -> usize {
        let n = max.min(self.ready.len());
        self.ready.drain(..n);
        self.read_total += n as u64;
        n
    }

    /// SACK blocks to send, most recent first.
    pub fn sack_blocks(&self) -> &[(u64, u64)] {
        &self.sack_blocks
    }

    /// `tcp_sack_new_ofo_skb`: the block joins (and coalesces) those it touches, or goes
    /// first; when that pushes out the oldest of four while ACKs are being compressed,
    /// the ACK owed goes out first, so no block the sender has not seen is forgotten.
    fn sack_add(&mut self, mut s: u64, mut e: u64) {
        let joins = self.sack_blocks.iter().any(|&(bs, be)| !(be < s || bs > e));
        if !joins && self.sack_blocks.len() >= SACK_BLOCKS && self.compressed_ack > 0 {
            let sack = self.sack_blocks.clone();
            let window = self.ack_sent();
            self.early_acks.push(EarlyAck { window, sack });
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
            return a;
        }
        if start <= self.rcv_nxt {
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
            self.grow_window();
        }
    }

    /// `tcp_grow_window`: the window may open 2 segments per full segment received.
    fn grow_window(&mut self) {
        if self.rcv_ssthresh < self.window_clamp {
            self.rcv_ssthresh = (self.rcv_ssthresh + 2 * self.advmss).min(self.window_clamp);
        }
    }

    /// Out-of-order or duplicate data: schedule an ACK (`inet_csk_schedule_ack`); a
    /// duplicate is answered at once with quick ACKs turned back on (`tcp_send_dupack`).
    pub fn event_other_data(&mut self, duplicate: bool, len: u64) {
        self.pending = true;
        if duplicate {
            self.incr_quickack(MAX_QUICKACKS);
            self.ack_now = true;
        } else if len >= 128 {
            self.grow_window();
        }
    }

    /// `__tcp_ack_snd_check` after a segment's data were processed at `now`; `srtt_us`
    /// is this end's smoothed RTT (0: none).
    pub fn ack_check(&mut self, now: Nanos, clock: Jiffies, srtt_us: u64) {
        if !self.pending {
            return;
        }
        if (self.rcv_nxt - self.rcv_wup > self.rcv_mss) || self.quick > 0 || self.ack_now {
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

    /// `tcp_select_window`: never shrinks the right edge already offered.
    fn select_window(&mut self) -> u64 {
        let space = self.window_clamp.saturating_sub(self.ready.len() as u64);
        let unit = 1u64 << self.wscale;
        let mut new = space.min(self.rcv_ssthresh).div_ceil(unit) * unit;
        let cur = (self.rcv_wup + self.rcv_wnd).saturating_sub(self.rcv_nxt);
        if new < cur {
            new = cur.div_ceil(unit) * unit;
        }
        self.rcv_wnd = new;
        self.rcv_wup = self.rcv_nxt;
        new
    }
}
