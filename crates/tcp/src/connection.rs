//! One TCP connection, sans-IO: `receive` a segment at a time, `poll` for what is due at
//! a time (timers, then retransmissions, new data and ACKs), `next_timeout` for when to
//! poll again. Sender and receiver logic follow Linux's `tcp_input.c`/`tcp_output.c`/
//! `tcp_timer.c` function by function (their names are given where they are ported).

use crate::cc::{self, CaState, CongestionOps, Context, Window, INFINITE_SSTHRESH};
use crate::receiver::{AckFields, Receiver};
use crate::rtt::{RttEstimator, RTO_INITIAL_US, RTO_MAX_US, RTO_MIN_US};
use crate::scoreboard::{Delivery, Scoreboard, RACK_RECOVERY_THRESH};
use crate::segment::{flags, SackBlocks, Segment, TcpRepr, MAX_SACK_BLOCKS_WITH_TIMESTAMPS};
use crate::send_buffer::SendBuffer;
use crate::time::{Jiffies, Nanos};
use crate::undo::Undo;

/// `TCP_INIT_CWND`.
pub const INITIAL_WINDOW: u32 = 10;
/// `TCP_TIMEOUT_MIN_US`: added to the probe timeout with more than one segment out.
const TIMEOUT_MIN_US: u64 = 2_000;
/// `TCP_TIMEOUT_MIN` (jiffies): added to RACK's reordering timer.
const TIMEOUT_MIN_J: u64 = 2;
/// `tcp_reordering`: the reordering (in segments) assumed before any is seen.
const REORDERING: u32 = 3;
/// `tcp_max_reordering`.
const MAX_REORDERING: u32 = 300;
/// Option bytes a timestamp costs each data segment.
const TIMESTAMP_BYTES: u32 = 12;

/// A connection's settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Congestion control by name ([`cc::NAMES`]).
    pub cc: String,
    /// The path MTU (IP packet bytes).
    pub mtu: u16,
    /// `TCP_MAXSEG` set before connecting: the MSS announced and the largest sent.
    pub mss_clamp: Option<u16>,
    /// The receive buffer a connection starts with (`tcp_rmem[1]`) and its limit
    /// (`tcp_rmem[2]`), to which autotuning may grow it: the window is half the buffer.
    /// (`tcp_rmem[0]` is the floor Linux keeps under TCP memory pressure, which one
    /// connection never reaches; it has no field.)
    pub rcvbuf_initial: u64,
    pub rcvbuf: u64,
    /// The send buffer (`tcp_wmem[2]`): unacknowledged plus unsent data.
    pub sndbuf: u64,
    /// Linux's timer tick rate (HZ).
    pub hz: u64,
    pub local_port: u16,
    pub remote_port: u16,
    pub isn: u32,
    /// Offset of this end's timestamp clock (Linux randomises it per connection).
    pub ts_offset: u32,
}

impl Config {
    pub fn new(cc: &str, local_port: u16, remote_port: u16) -> Config {
        Config {
            cc: cc.into(),
            mtu: 1500,
            mss_clamp: None,
            rcvbuf_initial: 131_072,
            rcvbuf: 6 << 20,
            sndbuf: 4 << 20,
            hz: 250,
            local_port,
            remote_port,
            isn: 0,
            ts_offset: 0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Listen,
    SynSent,
    SynReceived,
    Established,
    Closed,
}

/// The retransmission timer's one slot (`icsk_pending`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimerKind {
    Retransmit,
    ReorderTimeout,
    LossProbe,
}

/// Counters as `tcp_info` names them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    pub segs_out: u64,
    pub data_segs_out: u64,
    /// Segments sent again (fast, RTO and probe retransmissions): `tcpi_total_retrans`.
    pub total_retrans: u64,
    pub timeouts: u64,
    pub loss_probes: u64,
    pub recoveries: u64,
    pub bytes_acked: u64,
    /// Times the path was seen reordering (`tcpi_reord_seen`).
    pub reord_seen: u64,
    /// Window reductions undone as spurious (Linux's TCPFullUndo, TCPPartialUndo,
    /// TCPDSACKUndo and TCPLossUndo together).
    pub undos: u64,
    /// Timeouts F-RTO found spurious (`TCPSpuriousRTOs`).
    pub spurious_rtos: u64,
}

// ACK flags (`FLAG_*` of tcp_input.c) this port needs.
const FLAG_DATA_ACKED: u32 = 0x04;
const FLAG_WIN_UPDATE: u32 = 0x02;
const FLAG_DATA_SACKED: u32 = 0x20;
const FLAG_SND_UNA_ADVANCED: u32 = 0x400;
const FLAG_SET_XMIT_TIMER: u32 = 0x1000;
const FLAG_LOST_RETRANS: u32 = 0x80;
const FLAG_DATA: u32 = 0x01;
const FLAG_DSACKING_ACK: u32 = 0x800;
const FLAG_DSACK_TLP: u32 = 0x20000;
const FLAG_ORIG_SACK_ACKED: u32 = 0x200;

pub struct Connection {
    cfg: Config,
    clock: Jiffies,
    state: State,
    irs: u32,
    // Send side (sequence offsets from our ISN: the SYN is 0, data start at 1).
    snd_una: u64,
    snd_nxt: u64,
    snd_wnd: u64,
    snd_wscale: u8,
    mss: u32,
    advmss: u32,
    ts_ok: bool,
    sack_ok: bool,
    ts_recent: u32,
    send: SendBuffer,
    fin_queued: bool,
    fin_sent: bool,
    sb: Scoreboard,
    /// `tp->reordering`: the reordering (segments) the sender allows for.
    reordering: u32,
    rtt: RttEstimator,
    cc: Box<dyn CongestionOps>,
    win: Window,
    ca_state: CaState,
    high_seq: u64,
    prior_cwnd: u32,
    undo: Undo,
    /// The timestamp echo of the ACK being processed (`rx_opt.rcv_tsecr`).
    rcv_tsecr: Option<u32>,
    prr_delivered: u32,
    prr_out: u32,
    tlp_high_seq: Option<u64>,
    tlp_retrans: bool,
    /// `icsk_rto` (jiffies) including backoff.
    rto_j: u64,
    /// `icsk_retransmits`.
    retransmits: u32,
    /// F-RTO (RFC 5682, `tp->frto`; Linux's default `tcp_frto = 2`) is testing this
    /// timeout.
    frto: bool,
    /// F-RTO step 2.b: this ACK's answer is new data, not the segments marked lost
    /// (`REXMIT_NEW`).
    rexmit_new: bool,
    timer: Option<(TimerKind, Nanos)>,
    is_cwnd_limited: bool,
    /// `sk_pacing_rate` (bytes/s): set at the end of each ACK's `tcp_cong_control`, so
    /// an ACK's `pkts_acked` sees the rate of the ACK before (nothing paces with it here;
    /// HyStart reads it).
    pacing_rate: u64,
    max_packets_out: u32,
    cwnd_usage_seq: u64,
    lsndtime: Nanos,
    /// The SYN (or SYN-ACK): when last sent, and whether it was sent more than once.
    syn_xmit: Option<Nanos>,
    syn_retransmitted: bool,
    syn_due: bool,
    rst_due: bool,
    rcv: Receiver,
    stats: Stats,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("state", &self.state)
            .field("snd_una", &self.snd_una)
            .field("snd_nxt", &self.snd_nxt)
            .field("cwnd", &self.win.cwnd)
            .field("ca_state", &self.ca_state)
            .finish()
    }
}

/// An unknown congestion control name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownCc(pub String);

impl std::fmt::Display for UnknownCc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cc {:?}: this TCP has {}", self.0, cc::NAMES.join(" and "))
    }
}

impl Connection {
    fn new(cfg: Config, state: State) -> Result<Connection, UnknownCc> {
        let cc = cc::build(&cfg.cc).ok_or_else(|| UnknownCc(cfg.cc.clone()))?;
        let clock = Jiffies::new(cfg.hz);
        let advmss = u32::from(cfg.mtu - 40).min(cfg.mss_clamp.map_or(u32::MAX, u32::from));
        let rcv = Receiver::new(cfg.rcvbuf_initial, cfg.rcvbuf, u64::from(advmss));
        Ok(Connection {
            send: SendBuffer::new(cfg.sndbuf),
            clock,
            state,
            irs: 0,
            snd_una: 0,
            snd_nxt: 0,
            snd_wnd: 0,
            snd_wscale: 0,
            mss: advmss,
            advmss,
            ts_ok: false,
            sack_ok: false,
            ts_recent: 0,
            fin_queued: false,
            fin_sent: false,
            sb: Scoreboard::default(),
            reordering: REORDERING,
            rtt: RttEstimator::default(),
            cc,
            win: Window::new(INITIAL_WINDOW),
            ca_state: CaState::Open,
            high_seq: 0,
            prior_cwnd: 0,
            undo: Undo::default(),
            rcv_tsecr: None,
            prr_delivered: 0,
            prr_out: 0,
            tlp_high_seq: None,
            tlp_retrans: false,
            rto_j: clock.from_us(RTO_INITIAL_US),
            retransmits: 0,
            frto: false,
            rexmit_new: false,
            timer: None,
            is_cwnd_limited: false,
            pacing_rate: 0,
            max_packets_out: 0,
            cwnd_usage_seq: 0,
            lsndtime: 0,
            syn_xmit: None,
            syn_retransmitted: false,
            syn_due: state == State::SynSent,
            rst_due: false,
            rcv,
            stats: Stats::default(),
            cfg,
        })
    }

    /// An end that opens the connection: its SYN goes out at the first `poll`.
    pub fn connect(cfg: Config) -> Result<Connection, UnknownCc> {
        Connection::new(cfg, State::SynSent)
    }

    /// An end that waits for a SYN.
    pub fn listen(cfg: Config) -> Result<Connection, UnknownCc> {
        Connection::new(cfg, State::Listen)
    }

    // ---- What the application and the driver see. ----

    pub fn state(&self) -> State {
        self.state
    }

    pub fn is_established(&self) -> bool {
        self.state == State::Established
    }

    /// Room in the send buffer.
    pub fn send_room(&self) -> u64 {
        if self.fin_queued {
            0
        } else {
            self.send.room()
        }
    }

    pub fn write(&mut self, data: &[u8]) -> usize {
        if self.fin_queued {
            return 0;
        }
        self.send.write(data)
    }

    /// Writes up to `n` zero bytes (a bulk sender's payload).
    pub fn write_zeros(&mut self, n: u64) -> u64 {
        if self.fin_queued {
            return 0;
        }
        self.send.write_zeros(n)
    }

    /// Ends the stream after what was written (FIN).
    pub fn close(&mut self) {
        self.fin_queued = true;
    }

    /// Sends a reset at the next poll and closes.
    pub fn abort(&mut self) {
        if matches!(self.state, State::Established | State::SynReceived | State::SynSent) {
            self.rst_due = true;
        } else {
            self.state = State::Closed;
        }
    }

    pub fn readable(&self) -> usize {
        self.rcv.readable()
    }

    /// The receiving half (window, autotuning and ACK state), to inspect.
    pub fn receiver(&self) -> &Receiver {
        &self.rcv
    }

    /// The application reads up to `buf.len()` bytes at `now` (the read drives receive-
    /// buffer autotuning, as `tcp_recvmsg` does).
    pub fn read(&mut self, now: Nanos, buf: &mut [u8]) -> usize {
        self.rcv.read(now, buf)
    }

    /// Reads and discards up to `max` bytes at `now`.
    pub fn consume(&mut self, now: Nanos, max: usize) -> usize {
        self.rcv.consume(now, max)
    }

    /// The peer ended its stream and everything before its FIN was received.
    pub fn peer_closed(&self) -> bool {
        self.rcv.fin_received
    }

    /// Everything written, and the FIN if queued, is acknowledged.
    pub fn all_acked(&self) -> bool {
        self.snd_una == self.snd_nxt && self.send.end() + 1 + u64::from(self.fin_sent) == self.snd_nxt
    }

    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Congestion window (segments).
    pub fn cwnd(&self) -> u32 {
        self.win.cwnd
    }

    pub fn ssthresh(&self) -> Option<u32> {
        (self.win.ssthresh < INFINITE_SSTHRESH).then_some(self.win.ssthresh)
    }

    pub fn ca_state(&self) -> CaState {
        self.ca_state
    }

    /// The reordering (segments) the sender allows for (`tcpi_reordering`).
    pub fn reordering(&self) -> u32 {
        self.reordering
    }

    /// The payload bytes per full segment.
    pub fn mss(&self) -> u32 {
        self.mss
    }

    pub fn srtt_us(&self) -> Option<u64> {
        self.rtt.srtt_us()
    }

    pub fn rttvar_us(&self) -> u64 {
        self.rtt.rttvar_us()
    }

    pub fn min_rtt_us(&self) -> Option<u64> {
        self.rtt.min_rtt_us()
    }

    /// The RTO now, backoff included (µs).
    pub fn rto_us(&self) -> u64 {
        self.clock.to_us(self.rto_j)
    }

    pub fn packets_in_flight(&self) -> u32 {
        self.sb.in_flight()
    }

    pub fn bytes_in_flight(&self) -> u64 {
        self.snd_nxt.saturating_sub(self.snd_una)
    }

    pub fn congestion(&self) -> &dyn CongestionOps {
        self.cc.as_ref()
    }

    pub fn timer(&self) -> Option<(TimerKind, Nanos)> {
        self.timer
    }

    /// The advertised receive window last sent (bytes).
    pub fn rcv_wnd(&self) -> u64 {
        self.rcv.rcv_wnd
    }

    /// When `poll` must next run (besides after every `receive`).
    pub fn next_timeout(&self) -> Option<Nanos> {
        [self.timer.map(|t| t.1), self.rcv.delack_at, self.rcv.comp_at]
            .into_iter()
            .flatten()
            .min()
    }

    // ---- Helpers. ----

    fn ctx(&self, now: Nanos) -> Context {
        Context {
            now_us: now / 1000,
            jiffies: self.clock.at(now),
            clock: self.clock,
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            cwnd_limited: self.tcp_is_cwnd_limited(),
            pacing_rate: self.pacing_rate,
        }
    }

    /// `tcp_update_pacing_rate`: 200 % of cwnd·mss/srtt in slow start (below half of
    /// ssthresh), 120 % after.
    fn update_pacing_rate(&mut self) {
        self.pacing_rate = self.current_pacing_rate();
    }

    fn current_pacing_rate(&self) -> u64 {
        let srtt8 = self.rtt.srtt8();
        if srtt8 == 0 {
            return 0;
        }
        let ratio = if self.win.cwnd < self.win.ssthresh / 2 {
            200
        } else {
            120
        };
        let rate = u64::from(self.mss) * ((1_000_000 / 100) << 3) * ratio;
        rate * u64::from(self.win.cwnd.max(self.sb.packets_out())) / srtt8
    }

    fn tcp_is_cwnd_limited(&self) -> bool {
        if self.is_cwnd_limited {
            return true;
        }
        self.win.in_slow_start() && self.win.cwnd < 2 * self.max_packets_out
    }

    fn in_cwnd_reduction(&self) -> bool {
        matches!(self.ca_state, CaState::Cwr | CaState::Recovery)
    }

    /// A peer sequence number as an offset from its ISN (near `rcv_nxt`).
    fn rcv_off(&self, seq: u32) -> u64 {
        let base = self.rcv.rcv_nxt;
        let d = seq.wrapping_sub(self.irs.wrapping_add(base as u32)) as i32;
        (base as i64 + i64::from(d)).max(0) as u64
    }

    /// An acknowledgement number as an offset from our ISN (near `snd_una`).
    fn snd_off(&self, ack: u32) -> u64 {
        let base = self.snd_una;
        let d = ack.wrapping_sub(self.cfg.isn.wrapping_add(base as u32)) as i32;
        (base as i64 + i64::from(d)).max(0) as u64
    }

    fn tsval(&self, now: Nanos) -> u32 {
        ((now / 1_000_000) as u32).wrapping_add(self.cfg.ts_offset)
    }

    fn set_state(&mut self, s: CaState, now: Nanos) {
        let ctx = self.ctx(now);
        self.cc.set_state(&self.win, s, &ctx);
        self.ca_state = s;
    }

    /// A segment with the current acknowledgement, window and options.
    fn segment(&mut self, now: Nanos, seq_off: u64, fl: u8, payload: Vec<u8>) -> Segment {
        self.stats.segs_out += 1;
        let ack = self.rcv.ack_fields();
        self.segment_with(now, seq_off, fl, payload, &ack)
    }

    /// A segment carrying `ack` (acknowledgement, window, SACK blocks); the caller counts
    /// it as sent.
    fn segment_with(&self, now: Nanos, seq_off: u64, fl: u8, payload: Vec<u8>, ack: &AckFields) -> Segment {
        let syn = fl & flags::SYN != 0;
        let window = if syn {
            ack.window.min(65535) as u16
        } else {
            (ack.window >> self.rcv.wscale).min(65535) as u16
        };
        let mut h = TcpRepr {
            src_port: self.cfg.local_port,
            dst_port: self.cfg.remote_port,
            seq: self.cfg.isn.wrapping_add(seq_off as u32),
            ack: if fl & flags::ACK != 0 {
                self.irs.wrapping_add(ack.rcv_nxt as u32)
            } else {
                0
            },
            flags: fl,
            window,
            ..TcpRepr::default()
        };
        if self.ts_ok || (syn && self.state == State::SynSent) {
            h.timestamps = Some((self.tsval(now), if fl & flags::ACK != 0 { self.ts_recent } else { 0 }));
        }
        if syn {
            h.mss = Some(self.advmss as u16);
            if self.state == State::SynSent || self.rcv.wscale > 0 {
                h.window_scale = Some(self.rcv.wscale);
            }
            h.sack_permitted = self.state == State::SynSent || self.sack_ok;
        } else if self.sack_ok {
            let irs = self.irs;
            let blocks: Vec<(u32, u32)> = ack
                .sack
                .iter()
                .take(MAX_SACK_BLOCKS_WITH_TIMESTAMPS)
                .map(|&(l, r)| (irs.wrapping_add(l as u32), irs.wrapping_add(r as u32)))
                .collect();
            h.sack = SackBlocks::new(&blocks).expect("at most MAX_SACK_BLOCKS SACK blocks");
        }
        Segment {
            header: h,
            payload,
            ecn: 0,
        }
    }

    // ---- Receiving. ----

    /// A segment for this connection arrived at `now`.
    pub fn receive(&mut self, now: Nanos, seg: &Segment) {
        if seg.has(flags::RST) {
            if self.state != State::Listen {
                self.state = State::Closed;
                self.timer = None;
            }
            return;
        }
        match self.state {
            State::Closed => {}
            State::Listen => {
                if seg.has(flags::SYN) && !seg.has(flags::ACK) {
                    self.irs = seg.header.seq;
                    self.peer_options(seg);
                    self.rcv.start(1);
                    self.state = State::SynReceived;
                    self.syn_due = true;
                }
            }
            State::SynSent => {
                if seg.has(flags::SYN) && seg.has(flags::ACK) && self.snd_off(seg.header.ack) == 1 {
                    self.irs = seg.header.seq;
                    self.peer_options(seg);
                    self.rcv.start(1);
                    self.handshake_done(now, seg);
                    self.rcv.ack_now = true;
                }
            }
            State::SynReceived => {
                if seg.has(flags::SYN) && !seg.has(flags::ACK) {
                    // Our SYN-ACK was lost: send it again.
                    self.syn_due = true;
                    return;
                }
                if seg.has(flags::ACK) && self.snd_off(seg.header.ack) == 1 {
                    self.handshake_done(now, seg);
                    self.established_segment(now, seg);
                }
            }
            State::Established => self.established_segment(now, seg),
        }
    }

    /// Options of the peer's SYN or SYN-ACK.
    fn peer_options(&mut self, seg: &Segment) {
        self.ts_ok = seg.header.timestamps.is_some();
        self.sack_ok = seg.header.sack_permitted;
        if let Some((val, _)) = seg.header.timestamps {
            self.ts_recent = val;
        }
        match seg.header.window_scale {
            Some(ws) => self.snd_wscale = ws.min(14),
            None => {
                self.snd_wscale = 0;
                self.rcv.wscale = 0;
            }
        }
        let peer = u32::from(seg.header.mss.unwrap_or(536));
        let clamp = self.cfg.mss_clamp.map_or(u32::MAX, u32::from);
        let mss = u32::from(self.cfg.mtu - 40).min(peer).min(clamp);
        self.mss = mss - if self.ts_ok { TIMESTAMP_BYTES } else { 0 };
        self.snd_wnd = u64::from(seg.header.window);
    }

    fn handshake_done(&mut self, now: Nanos, seg: &Segment) {
        self.snd_una = 1;
        self.snd_nxt = self.snd_nxt.max(1);
        if let Some(sent) = self.syn_xmit {
            let sample = if !self.syn_retransmitted {
                Some((now - sent) / 1000)
            } else {
                self.ts_rtt_us(now, seg)
            };
            if let Some(us) = sample {
                self.rtt.sample_min(us);
                self.rtt.sample(us, self.snd_una, self.snd_nxt);
                self.rto_j = self.clock.from_us(self.rtt.rto_us());
            }
        }
        self.timer = None;
        self.retransmits = 0;
        if self.state == State::SynReceived {
            // The passive end sets its pacing rate on the handshake's ACK
            // (tcp_rcv_state_process); the active end first at its first ACK of data.
            self.update_pacing_rate();
        }
        self.state = State::Established;
        self.rcv.init_buffer_space(now);
        self.high_seq = self.snd_nxt;
        self.cwnd_usage_seq = self.snd_nxt;
        let ctx = self.ctx(now);
        self.cc.init(&mut self.win, &ctx);
        self.lsndtime = now;
    }

    /// RTT from the timestamp echo (ms resolution), as Linux's fallback.
    fn ts_rtt_us(&self, now: Nanos, seg: &Segment) -> Option<u64> {
        let (_, ecr) = seg.header.timestamps?;
        if ecr == 0 {
            return None;
        }
        let d = self.tsval(now).wrapping_sub(ecr);
        (d < 1 << 30).then(|| u64::from(d.max(1)) * 1000)
    }

    fn established_segment(&mut self, now: Nanos, seg: &Segment) {
        let start = self.rcv_off(seg.header.seq);
        if let Some((val, _)) = seg.header.timestamps {
            if start <= self.rcv.rcv_wup {
                self.ts_recent = val;
            }
        }
        let has_data = !seg.payload.is_empty() || seg.has(flags::FIN);
        if seg.has(flags::ACK) {
            self.tcp_ack(now, seg, has_data);
        }
        if has_data {
            // Linux ACKs each segment as its processing ends (`tcp_ack_snd_check`): an
            // ACK still owed when the next segment arrives at the same instant goes out
            // before that one is processed, or a burst (a merge releasing what it held)
            // would be answered by one ACK whose few SACK blocks hide the rest.
            if self.rcv.ack_now {
                self.rcv.send_ack_early();
            }
            if let Some((_, ecr)) = seg.header.timestamps {
                let ts_now = self.tsval(now);
                self.rcv.rtt_measure_ts(ecr, ts_now, seg.payload.len() as u64);
            }
            let fin = seg.has(flags::FIN);
            let a = self.rcv.data(start, &seg.payload, fin);
            if a.in_order > 0 {
                self.rcv.event_data_recv(now, a.in_order, self.clock, self.rto_j);
            } else {
                self.rcv.event_other_data(a.duplicate, seg.payload.len() as u64);
            }
            if fin && self.rcv.fin_received {
                self.rcv.ack_now = true;
            }
            self.rcv.ack_check(now, self.clock, self.rtt.srtt_us().unwrap_or(0));
        }
    }

    /// `tcp_ack`.
    fn tcp_ack(&mut self, now: Nanos, seg: &Segment, has_data: bool) {
        let ack = self.snd_off(seg.header.ack);
        if ack < self.snd_una || ack > self.snd_nxt {
            return;
        }
        let mut flag = if has_data { FLAG_DATA } else { 0 };
        let nwin = u64::from(seg.header.window) << self.snd_wscale;
        if ack > self.snd_una || has_data || nwin > self.snd_wnd {
            flag |= FLAG_WIN_UPDATE;
        }
        self.snd_wnd = nwin;
        if ack > self.snd_una {
            flag |= FLAG_SND_UNA_ADVANCED;
            self.retransmits = 0;
        }
        self.rcv_tsecr = seg.header.timestamps.map(|(_, ecr)| ecr);
        let prior_snd_una = self.snd_una;
        let min_rtt = self.rtt.min_rtt_us();
        let prior_fack = self.sb.highest_sack_seq(self.snd_una);
        let mut sacked = Delivery::default();
        if self.sack_ok {
            let blocks: Vec<(u64, u64)> = seg
                .header
                .sack
                .as_slice()
                .iter()
                .map(|&(l, r)| (self.snd_off(l), self.snd_off(r)))
                .collect();
            let dsack = self.check_dsack(&blocks, ack, prior_snd_una, &mut flag);
            for (i, &(lo, hi)) in blocks.iter().enumerate() {
                // tcp_is_sackblock_valid: nonsense, and what lies below the cumulative
                // ACK (a D-SACK there was counted above), are skipped.
                if lo >= hi || hi > self.snd_nxt || lo < ack {
                    continue;
                }
                self.sb.sack(lo, hi, dsack && i == 0, now, min_rtt, &mut sacked);
            }
            if sacked.dsacked_retrans > 0 {
                // Still queued, they lie above any undo marker: snd_nxt stands for their end.
                self.undo.spurious(self.snd_nxt, sacked.dsacked_retrans);
            }
        }
        if sacked.segments > 0 {
            flag |= FLAG_DATA_SACKED;
        }
        if let Some(low) = sacked.reord {
            if self.ca_state != CaState::Loss || self.undo.marker.is_some() {
                self.check_sack_reordering(low);
            }
        }
        let mut acked = Delivery::default();
        self.sb.ack(ack, now, min_rtt, &mut acked);
        if acked.cum_acked > 0 {
            flag |= FLAG_DATA_ACKED | FLAG_SET_XMIT_TIMER;
        }
        // F-RTO's test: data sent before `high_seq` and never retransmitted, (s)acked.
        if [&sacked, &acked]
            .iter()
            .any(|d| d.orig_min_end.is_some_and(|e| e <= self.high_seq))
        {
            flag |= FLAG_ORIG_SACK_ACKED;
        }
        self.stats.bytes_acked += ack - self.snd_una;
        self.snd_una = ack;
        // A hole the original filled (not a retransmission): the path reordered.
        if let Some(low) = acked.reord.filter(|&low| low < prior_fack) {
            self.check_sack_reordering(low);
        }
        self.send.release(ack.saturating_sub(1));

        // tcp_ack_update_rtt.
        let mut seq_rtt = None;
        let mut ca_rtt = None;
        if let (Some(first), false) = (acked.first_xmit, acked.retrans_delivered) {
            seq_rtt = Some((now - first) / 1000);
            ca_rtt = Some((now - acked.last_xmit.unwrap_or(first)) / 1000);
        }
        if let Some(first) = sacked.first_xmit {
            seq_rtt = seq_rtt.or(Some((now - first) / 1000));
            ca_rtt = Some((now - sacked.last_xmit.unwrap_or(first)) / 1000);
        }
        if seq_rtt.is_none() && acked.cum_acked > 0 {
            if let Some(us) = self.ts_rtt_us(now, seg) {
                seq_rtt = Some(us);
                ca_rtt = Some(us);
            }
        }
        if let Some(m) = seq_rtt {
            self.rtt.sample_min(ca_rtt.unwrap_or(m));
            self.rtt.sample(m, self.snd_una, self.snd_nxt);
            self.rto_j = self.clock.from_us(self.rtt.rto_us());
        }
        let ctx = self.ctx(now);
        self.cc.pkts_acked(&mut self.win, &ctx, ca_rtt);

        let prior_delivered = [&sacked, &acked]
            .into_iter()
            .filter_map(|d| d.prior_delivered.map(|p| (d.latest_order(), p)))
            .max()
            .map(|(_, p)| p);
        self.sb.rack.update_reo_wnd(prior_delivered, self.sb.delivered);
        if let Some(h) = self.tlp_high_seq {
            self.process_tlp_ack(now, ack, h, flag);
        }
        let not_dup = flag & (FLAG_DATA | FLAG_WIN_UPDATE | FLAG_DATA_ACKED) != 0;
        let prior_lost = self.sb.lost_events;
        if !not_dup || flag & (FLAG_DATA_SACKED | FLAG_DSACKING_ACK) != 0 || self.ca_state != CaState::Open {
            let dupack = !not_dup && flag & (FLAG_SND_UNA_ADVANCED | FLAG_DSACKING_ACK) == 0;
            self.fastretrans_alert(now, prior_snd_una, dupack, &mut flag);
        }
        if flag & FLAG_SET_XMIT_TIMER != 0 {
            self.set_xmit_timer(now);
        }
        let delivered = sacked.segments + acked.segments;
        let newly_lost = (self.sb.lost_events - prior_lost) as u32;
        self.cong_control(now, delivered, newly_lost, flag);
    }

    /// `tcp_check_dsack` with `tcp_dsack_seen`: whether the first SACK block reports
    /// data received twice (it lies below the cumulative `ack`, or inside the second
    /// block). One that does not match what was retransmitted is ignored; one that does
    /// counts as delivered, counts retransmissions below `prior_snd_una` spurious, and
    /// (once the path was seen reordering, and not for a loss probe) asks RACK to widen
    /// its window.
    fn check_dsack(&mut self, blocks: &[(u64, u64)], ack: u64, prior_snd_una: u64, flag: &mut u32) -> bool {
        let Some(&(lo, hi)) = blocks.first() else {
            return false;
        };
        let inside_second = blocks.get(1).is_some_and(|&(l1, h1)| lo >= l1 && hi <= h1);
        if !(lo < ack || inside_second) || lo >= hi {
            return false;
        }
        let len = hi - lo;
        let mss = u64::from(self.mss);
        let mut tlp = false;
        let dup_segs = if len > mss {
            len.div_ceil(mss)
        } else {
            tlp = self.tlp_high_seq == Some(hi);
            1
        };
        if tlp {
            *flag |= FLAG_DSACK_TLP;
        }
        self.undo.dsack_dups += dup_segs;
        if self.undo.dsack_dups > self.stats.total_retrans {
            return false;
        }
        if self.stats.reord_seen > 0 && !tlp {
            self.sb.rack.dsack_seen = true;
        }
        *flag |= FLAG_DSACKING_ACK;
        self.sb.delivered += dup_segs;
        if hi <= prior_snd_una {
            self.undo.spurious(hi, dup_segs as u32);
        }
        true
    }

    /// `tcp_process_tlp_ack`.
    fn process_tlp_ack(&mut self, now: Nanos, ack: u64, high: u64, flag: u32) {
        if ack < high {
            return;
        }
        if !self.tlp_retrans || flag & FLAG_DSACK_TLP != 0 {
            // New data probed, or the probe and the original both arrived: no loss.
            self.tlp_high_seq = None;
        } else if ack > high {
            // The probe repaired a loss: reduce the window once.
            self.init_cwnd_reduction(now);
            self.set_state(CaState::Cwr, now);
            self.end_cwnd_reduction();
            self.try_keep_open(now);
        } else if flag & (FLAG_SND_UNA_ADVANCED | FLAG_DATA | FLAG_WIN_UPDATE | FLAG_DATA_ACKED | FLAG_DATA_SACKED) == 0
        {
            self.tlp_high_seq = None;
        }
    }

    /// `tcp_fastretrans_alert` for a SACK connection with RACK; `dupack`: the ACK is a
    /// duplicate (`num_dupack` 1).
    fn fastretrans_alert(&mut self, now: Nanos, prior_snd_una: u64, dupack: bool, flag: &mut u32) {
        if self.ca_state == CaState::Open {
            self.undo.retrans_stamp = None;
        } else if self.snd_una >= self.high_seq {
            match self.ca_state {
                CaState::Cwr if self.snd_una != self.high_seq => {
                    self.end_cwnd_reduction();
                    self.set_state(CaState::Open, now);
                }
                CaState::Recovery => {
                    self.try_undo_recovery(now);
                    self.end_cwnd_reduction();
                }
                _ => {}
            }
        }
        match self.ca_state {
            CaState::Recovery => {
                if *flag & FLAG_SND_UNA_ADVANCED != 0 && self.try_undo_partial(now, prior_snd_una) {
                    return;
                }
                if self.try_undo_dsack() {
                    self.try_to_open(now);
                }
                self.identify_packet_loss(now, flag);
                if self.ca_state != CaState::Recovery && self.sb.lost_out > 0 {
                    // Undone, but a loss is evident: a new recovery.
                    self.enter_recovery(now);
                }
                return;
            }
            CaState::Loss => {
                self.process_loss(now, *flag, dupack);
                self.identify_packet_loss(now, flag);
                if !(self.ca_state == CaState::Open || *flag & FLAG_LOST_RETRANS != 0) {
                    return;
                }
            }
            _ => {}
        }
        if self.ca_state <= CaState::Disorder {
            self.try_undo_dsack();
        }
        self.identify_packet_loss(now, flag);
        if self.sb.lost_out == 0 {
            self.try_to_open(now);
            return;
        }
        self.enter_recovery(now);
    }

    /// `tcp_process_loss` with F-RTO (RFC 5682 section 3.1, SACK-enhanced): a timeout is
    /// undone if an ACK shows it spurious — by timestamp, or by never-retransmitted data
    /// (s)acked; the first ACK that advances `snd_una` is answered with new data
    /// (`rexmit_new`), and a SACK or duplicate ACK after that shows the loss real; over
    /// once `high_seq` is acknowledged.
    fn process_loss(&mut self, now: Nanos, flag: u32, dupack: bool) {
        let recovered = self.snd_una >= self.high_seq;
        if flag & FLAG_SND_UNA_ADVANCED != 0 && self.try_undo_loss(now, false) {
            return;
        }
        if self.frto {
            if flag & FLAG_ORIG_SACK_ACKED != 0 && self.try_undo_loss(now, true) {
                return;
            }
            if self.snd_nxt > self.high_seq {
                if flag & FLAG_DATA_SACKED != 0 || dupack {
                    self.frto = false;
                }
            } else if flag & FLAG_SND_UNA_ADVANCED != 0 && !recovered {
                self.high_seq = self.snd_nxt;
                if self.can_send_new() && self.snd_una + self.snd_wnd > self.snd_nxt {
                    self.rexmit_new = true;
                    return;
                }
                self.frto = false;
            }
        }
        if recovered {
            self.try_undo_recovery(now);
        }
    }

    /// `tcp_any_retrans_done`.
    fn any_retrans_done(&self) -> bool {
        self.sb.retrans_out > 0 || self.sb.head().is_some_and(|h| h.ever_retrans)
    }

    /// `tcp_retrans_stamp_cleanup`: with no retransmission left, the next episode's first
    /// retransmission starts a new stamp.
    fn retrans_stamp_cleanup(&mut self) {
        if !self.any_retrans_done() {
            self.undo.retrans_stamp = None;
        }
    }

    /// `tcp_current_ssthresh`.
    fn current_ssthresh(&self) -> u32 {
        if self.in_cwnd_reduction() {
            self.win.ssthresh
        } else {
            self.win.ssthresh.max((self.win.cwnd >> 1) + (self.win.cwnd >> 2))
        }
    }

    /// `tcp_undo_cwnd_reduction`: the window and ssthresh as before the reduction
    /// (Reno's and CUBIC's `undo_cwnd` alike: `tcp_reno_undo_cwnd`).
    fn undo_cwnd_reduction(&mut self, unmark_loss: bool) {
        if unmark_loss {
            self.sb.unmark_lost();
        }
        if self.undo.prior_ssthresh != 0 {
            self.win.cwnd = self.win.cwnd.max(self.prior_cwnd);
            self.win.ssthresh = self.win.ssthresh.max(self.undo.prior_ssthresh);
        }
        self.undo.marker = None;
        self.sb.rack.advanced = true;
        self.stats.undos += 1;
    }

    /// `tcp_try_undo_recovery`: recovery is over; undone if it proved spurious.
    fn try_undo_recovery(&mut self, now: Nanos) {
        if self.undo.may_undo(self.rcv_tsecr) {
            self.undo_cwnd_reduction(false);
        } else if self.sb.rack.reo_wnd_persist > 0 {
            self.sb.rack.reo_wnd_persist -= 1;
        }
        self.set_state(CaState::Open, now);
    }

    /// `tcp_try_undo_dsack`: D-SACKs reported every retransmission received twice.
    fn try_undo_dsack(&mut self) -> bool {
        if self.undo.marker.is_some() && self.undo.retrans == 0 {
            self.sb.rack.reo_wnd_persist = (self.sb.rack.reo_wnd_persist + 1).min(RACK_RECOVERY_THRESH);
            self.undo_cwnd_reduction(false);
            return true;
        }
        false
    }

    /// `tcp_try_undo_loss`: the timeout's reduction undone if a timestamp shows it
    /// spurious, or F-RTO did (`frto_undo`).
    fn try_undo_loss(&mut self, now: Nanos, frto_undo: bool) -> bool {
        if !frto_undo && !self.undo.may_undo(self.rcv_tsecr) {
            return false;
        }
        self.undo_cwnd_reduction(true);
        if frto_undo {
            self.stats.spurious_rtos += 1;
        }
        self.retransmits = 0;
        self.set_state(CaState::Open, now);
        true
    }

    /// `tcp_try_undo_partial`: an ACK in recovery echoes a timestamp from before the first
    /// retransmission, so the hole was filled by the delayed original: the path reorders
    /// more than allowed for. With no retransmission out the reduction is undone; true
    /// when one is still out (Linux then sends no retransmission on this ACK, which this
    /// port does not model).
    fn try_undo_partial(&mut self, now: Nanos, prior_snd_una: u64) -> bool {
        if self.undo.marker.is_none() || !self.undo.packet_delayed(self.rcv_tsecr) {
            return false;
        }
        self.check_sack_reordering(prior_snd_una);
        if self.sb.retrans_out > 0 {
            return true;
        }
        self.retrans_stamp_cleanup();
        self.undo_cwnd_reduction(true);
        self.try_keep_open(now);
        false
    }

    fn try_to_open(&mut self, now: Nanos) {
        self.retrans_stamp_cleanup();
        if self.ca_state != CaState::Cwr {
            self.try_keep_open(now);
        }
    }

    fn try_keep_open(&mut self, now: Nanos) {
        let any_retrans = self.any_retrans_done();
        let state = if self.sb.sacked_out + self.sb.lost_out > 0 || any_retrans {
            CaState::Disorder
        } else {
            CaState::Open
        };
        if self.ca_state != state {
            self.set_state(state, now);
            self.high_seq = self.snd_nxt;
        }
    }

    /// `tcp_enter_recovery`.
    fn enter_recovery(&mut self, now: Nanos) {
        self.retrans_stamp_cleanup();
        self.stats.recoveries += 1;
        self.undo.prior_ssthresh = 0;
        self.undo.init(self.snd_una, self.sb.retrans_out);
        if !self.in_cwnd_reduction() {
            self.undo.prior_ssthresh = self.current_ssthresh();
            self.init_cwnd_reduction(now);
        }
        self.set_state(CaState::Recovery, now);
    }

    /// `tcp_init_cwnd_reduction`.
    fn init_cwnd_reduction(&mut self, _now: Nanos) {
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = None;
        self.win.cwnd_cnt = 0;
        self.prior_cwnd = self.win.cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.win.ssthresh = self.cc.ssthresh(&self.win);
    }

    /// `tcp_end_cwnd_reduction`: cwnd = ssthresh, unless the reduction was undone.
    fn end_cwnd_reduction(&mut self) {
        if self.win.ssthresh < INFINITE_SSTHRESH && (self.ca_state == CaState::Cwr || self.undo.marker.is_some()) {
            self.win.cwnd = self.win.ssthresh;
        }
    }

    /// `tcp_cwnd_reduction`: Proportional Rate Reduction (RFC 6937) with Linux's
    /// slow-start reduction bound.
    fn cwnd_reduction(&mut self, delivered: u32, newly_lost: u32, flag: u32) {
        if delivered == 0 || self.prior_cwnd == 0 {
            return;
        }
        let in_flight = i64::from(self.sb.in_flight());
        let delta = i64::from(self.win.ssthresh) - in_flight;
        self.prr_delivered += delivered;
        let mut sndcnt: i64 = if delta < 0 {
            let dividend =
                u64::from(self.win.ssthresh) * u64::from(self.prr_delivered) + u64::from(self.prior_cwnd) - 1;
            (dividend / u64::from(self.prior_cwnd)) as i64 - i64::from(self.prr_out)
        } else {
            let mut s = (i64::from(self.prr_delivered) - i64::from(self.prr_out)).max(i64::from(delivered));
            if flag & FLAG_SND_UNA_ADVANCED != 0 && newly_lost == 0 {
                s += 1;
            }
            s.min(delta)
        };
        sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        self.win.cwnd = (in_flight + sndcnt).max(1) as u32;
    }

    /// `tcp_cong_control` (without a `cong_control` hook).
    fn cong_control(&mut self, now: Nanos, delivered: u32, newly_lost: u32, flag: u32) {
        if self.in_cwnd_reduction() {
            self.cwnd_reduction(delivered, newly_lost, flag);
        } else if flag & FLAG_DATA_ACKED != 0 {
            let ctx = self.ctx(now);
            self.cc.cong_avoid(&mut self.win, &ctx, delivered);
        }
        self.update_pacing_rate();
    }

    /// `tcp_check_sack_reordering`: a segment below the highest SACK was delivered
    /// by its original transmission. The reordering allowed for grows to the distance
    /// (segments), and from the first such event on RACK keeps its reordering window
    /// open (`reord_seen`).
    fn check_sack_reordering(&mut self, low: u64) {
        let fack = self.sb.highest_sack_seq(self.snd_una);
        if low >= fack {
            return;
        }
        let metric = fack - low;
        let mss = u64::from(self.mss);
        if metric > u64::from(self.reordering) * mss {
            self.reordering = metric.div_ceil(mss).min(u64::from(MAX_REORDERING)) as u32;
        }
        self.stats.reord_seen += 1;
    }

    /// `tcp_rack_reo_wnd`: until the path has been seen reordering, 0 in recovery or once
    /// `reordering` segments are SACKed; otherwise min RTT / 4 times the steps D-SACKs
    /// widened it by, at most the smoothed RTT.
    fn reo_wnd_us(&self) -> u64 {
        if self.stats.reord_seen == 0 && (self.ca_state >= CaState::Recovery || self.sb.sacked_out >= self.reordering) {
            return 0;
        }
        let min_rtt = self.rtt.min_rtt_us().unwrap_or(0);
        ((min_rtt >> 2) * u64::from(self.sb.rack.reo_wnd_steps)).min(self.rtt.srtt_us().unwrap_or(0))
    }

    /// `tcp_identify_packet_loss` → `tcp_rack_mark_lost`.
    fn identify_packet_loss(&mut self, now: Nanos, flag: &mut u32) {
        if self.sb.is_empty() || !self.sb.rack.advanced {
            return;
        }
        let prior_retrans = self.sb.retrans_out;
        self.sb.rack.advanced = false;
        if let Some(us) = self.sb.rack_detect_loss(now, self.reo_wnd_us()) {
            let j = (self.clock.from_us(us) + TIMEOUT_MIN_J).min(self.rto_j);
            self.timer = Some((TimerKind::ReorderTimeout, self.clock.expiry(now, j)));
            *flag &= !FLAG_SET_XMIT_TIMER;
        }
        if prior_retrans > self.sb.retrans_out {
            *flag |= FLAG_LOST_RETRANS;
        }
    }

    // ---- Timers. ----

    /// µs until the RTO counted from the head segment's transmission (may be ≤ 0).
    fn rto_delta_us(&self, now: Nanos) -> i64 {
        let head = self.sb.head().map_or(now, |h| h.xmit);
        (head / 1000 + self.clock.to_us(self.rto_j)) as i64 - (now / 1000) as i64
    }

    /// `tcp_rearm_rto`.
    fn rearm_rto(&mut self, now: Nanos) {
        if self.sb.is_empty() {
            self.timer = None;
            return;
        }
        let mut rto = self.rto_j;
        if matches!(self.timer, Some((TimerKind::ReorderTimeout | TimerKind::LossProbe, _))) {
            rto = self.clock.from_us(self.rto_delta_us(now).max(1) as u64);
        }
        self.timer = Some((TimerKind::Retransmit, self.clock.expiry(now, rto)));
    }

    /// `tcp_schedule_loss_probe`.
    fn schedule_loss_probe(&mut self, now: Nanos, advancing_rto: bool) -> bool {
        if self.sb.is_empty() || !self.sack_ok || !matches!(self.ca_state, CaState::Open | CaState::Cwr) {
            return false;
        }
        let mut timeout = match self.rtt.srtt8() {
            0 => self.clock.from_us(RTO_INITIAL_US),
            srtt8 => {
                let extra = if self.sb.packets_out() == 1 {
                    RTO_MIN_US
                } else {
                    TIMEOUT_MIN_US
                };
                self.clock.from_us((srtt8 >> 2) + extra)
            }
        };
        let rto_delta = if advancing_rto {
            self.clock.to_us(self.rto_j) as i64
        } else {
            self.rto_delta_us(now)
        };
        if rto_delta > 0 {
            timeout = timeout.min(self.clock.from_us(rto_delta as u64));
        }
        self.timer = Some((TimerKind::LossProbe, self.clock.expiry(now, timeout)));
        true
    }

    /// `tcp_set_xmit_timer`.
    fn set_xmit_timer(&mut self, now: Nanos) {
        if !self.schedule_loss_probe(now, true) {
            self.rearm_rto(now);
        }
    }

    fn on_timer(&mut self, now: Nanos, kind: TimerKind, out: &mut Vec<Segment>) {
        match kind {
            TimerKind::Retransmit => self.retransmit_timer(now, out),
            TimerKind::LossProbe => self.send_loss_probe(now, out),
            TimerKind::ReorderTimeout => self.rack_reo_timeout(now),
        }
    }

    /// `tcp_retransmit_timer`.
    fn retransmit_timer(&mut self, now: Nanos, out: &mut Vec<Segment>) {
        if matches!(self.state, State::SynSent | State::SynReceived) {
            self.syn_retransmitted = true;
            self.syn_due = true;
            self.rto_j = (self.rto_j << 1).min(self.clock.from_us(RTO_MAX_US));
            return;
        }
        if self.sb.is_empty() {
            self.timer = None;
            return;
        }
        self.stats.timeouts += 1;
        self.enter_loss(now);
        self.retransmits += 1;
        if let Some(head) = self.sb.head().copied() {
            self.retransmit(now, head.start, head.end, false, out);
        }
        self.rto_j = (self.rto_j << 1).min(self.clock.from_us(RTO_MAX_US));
        self.timer = Some((TimerKind::Retransmit, self.clock.expiry(now, self.rto_j)));
    }

    /// `tcp_enter_loss`.
    fn enter_loss(&mut self, now: Nanos) {
        let new_recovery = self.ca_state < CaState::Recovery;
        self.sb.timeout_mark_lost(now);
        if self.ca_state <= CaState::Disorder
            || self.high_seq <= self.snd_una
            || (self.ca_state == CaState::Loss && self.retransmits == 0)
        {
            self.undo.prior_ssthresh = self.current_ssthresh();
            self.prior_cwnd = self.win.cwnd;
            self.win.ssthresh = self.cc.ssthresh(&self.win);
            self.undo.init(self.snd_una, self.sb.retrans_out);
        }
        self.win.cwnd = self.sb.in_flight() + 1;
        self.win.cwnd_cnt = 0;
        self.set_state(CaState::Loss, now);
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = None;
        // F-RTO tests a first timeout, or one recurring on the same snd_una (RFC 5682
        // section 3.2), never one that interrupts a fast recovery.
        self.frto = new_recovery || self.retransmits > 0;
    }

    /// `tcp_send_loss_probe`.
    fn send_loss_probe(&mut self, now: Nanos, out: &mut Vec<Segment>) {
        if self.tlp_high_seq.is_some() {
            self.timer = None;
            self.rearm_rto(now);
            return;
        }
        self.tlp_retrans = false;
        let before = self.sb.packets_out();
        if self.can_send_new() {
            self.send_new(now, out);
        }
        if self.sb.packets_out() == before {
            let Some(last) = self.sb.last().copied() else {
                self.timer = None;
                return;
            };
            self.retransmit(now, last.start, last.end, true, out);
            self.tlp_retrans = true;
        }
        self.stats.loss_probes += 1;
        self.tlp_high_seq = Some(self.snd_nxt);
        self.timer = None;
        self.rearm_rto(now);
    }

    /// `tcp_rack_reo_timeout`.
    fn rack_reo_timeout(&mut self, now: Nanos) {
        let prior = self.sb.in_flight();
        self.sb.rack_detect_loss(now, self.reo_wnd_us());
        if prior != self.sb.in_flight() && self.ca_state != CaState::Recovery {
            self.enter_recovery(now);
            self.cwnd_reduction(1, 0, 0);
        }
        // Still the reordering slot: turn it back into the RTO, counted from the head.
        self.timer = Some((TimerKind::ReorderTimeout, now));
        self.rearm_rto(now);
    }

    // ---- Sending. ----

    /// Data offset of the end of what the application wrote, in sequence offsets.
    fn data_end(&self) -> u64 {
        self.send.end() + 1
    }

    fn can_send_new(&self) -> bool {
        self.snd_nxt < self.data_end() || (self.fin_queued && !self.fin_sent)
    }

    /// One new segment (up to an MSS, the FIN with the last data); false if the peer's
    /// window has no room.
    fn send_new(&mut self, now: Nanos, out: &mut Vec<Segment>) -> bool {
        let start = self.snd_nxt;
        let len = (self.data_end() - start).min(u64::from(self.mss));
        if len > 0 && start + len > self.snd_una + self.snd_wnd {
            return false;
        }
        let fin = self.fin_queued && start + len == self.data_end();
        let payload = self.send.read(start - 1, len as usize);
        let fl = flags::ACK | if fin { flags::FIN } else { 0 } | if len > 0 { flags::PSH } else { 0 };
        if self.sb.in_flight() == 0 {
            let idle = self.clock.at(now).saturating_sub(self.clock.at(self.lsndtime));
            let ctx = self.ctx(now);
            self.cc.tx_start(&ctx, idle);
        }
        let seg = self.segment(now, start, fl, payload);
        out.push(seg);
        let end = start + len + u64::from(fin);
        let prior_packets = self.sb.packets_out();
        self.sb.push(start, end, now);
        self.snd_nxt = end;
        self.fin_sent |= fin;
        self.stats.data_segs_out += 1;
        self.lsndtime = now;
        if self.in_cwnd_reduction() {
            self.prr_out += 1;
        }
        if prior_packets == 0 || matches!(self.timer, Some((TimerKind::LossProbe, _))) {
            self.rearm_rto(now);
        }
        true
    }

    /// Sends `[start, end)` again; `probe`: as the tail loss probe (`__tcp_retransmit_skb`,
    /// which does not start the episode's `retrans_stamp`).
    fn retransmit(&mut self, now: Nanos, start: u64, end: u64, probe: bool, out: &mut Vec<Segment>) {
        if !probe {
            let ts = self.tsval(now);
            self.undo.retransmitted(ts);
        }
        let fin = self.fin_sent && end == self.snd_nxt && end == self.data_end() + 1;
        let len = end - start - u64::from(fin);
        let payload = self.send.read(start - 1, len as usize);
        let fl = flags::ACK | if fin { flags::FIN } else { 0 };
        let seg = self.segment(now, start, fl, payload);
        out.push(seg);
        self.sb.retransmitted(start, now);
        self.stats.total_retrans += 1;
        self.stats.data_segs_out += 1;
        if self.in_cwnd_reduction() {
            self.prr_out += 1;
        }
    }

    /// `tcp_xmit_retransmit_queue`.
    fn xmit_retransmit_queue(&mut self, now: Nanos, out: &mut Vec<Segment>) {
        if self.sb.lost_out == 0 {
            return;
        }
        let mut rearm = false;
        while self.sb.in_flight() < self.win.cwnd {
            let Some(s) = self.sb.next_to_retransmit() else { break };
            let is_head = self.sb.head().is_some_and(|h| h.start == s.start);
            self.retransmit(now, s.start, s.end, false, out);
            if is_head && !matches!(self.timer, Some((TimerKind::ReorderTimeout, _))) {
                rearm = true;
            }
        }
        if rearm {
            self.timer = Some((TimerKind::Retransmit, self.clock.expiry(now, self.rto_j)));
        }
    }

    /// `tcp_write_xmit`.
    fn write_xmit(&mut self, now: Nanos, out: &mut Vec<Segment>) {
        let mut sent = 0;
        let mut cwnd_limited = false;
        while self.can_send_new() {
            let fin_only = self.snd_nxt == self.data_end();
            if !fin_only && self.sb.in_flight() >= self.win.cwnd {
                cwnd_limited = true;
                break;
            }
            if !self.send_new(now, out) {
                break;
            }
            sent += 1;
        }
        if sent > 0 {
            self.schedule_loss_probe(now, false);
            cwnd_limited |= self.sb.in_flight() >= self.win.cwnd;
            self.cwnd_validate(cwnd_limited);
        }
    }

    /// `tcp_cwnd_validate` (without the idle decay of `tcp_slow_start_after_idle`).
    fn cwnd_validate(&mut self, cwnd_limited: bool) {
        let packets_out = self.sb.packets_out();
        if self.snd_una >= self.cwnd_usage_seq
            || cwnd_limited
            || (!self.is_cwnd_limited && packets_out > self.max_packets_out)
        {
            self.is_cwnd_limited = cwnd_limited;
            self.max_packets_out = packets_out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
    }

    /// Runs what is due at `now` and appends the segments to send now to `out`.
    pub fn poll(&mut self, now: Nanos, out: &mut Vec<Segment>) {
        if self.rst_due {
            self.rst_due = false;
            let seq = self.snd_nxt;
            let seg = self.segment(now, seq, flags::RST | flags::ACK, Vec::new());
            out.push(seg);
            self.state = State::Closed;
            self.timer = None;
            return;
        }
        match self.state {
            State::Closed | State::Listen => return,
            State::SynSent | State::SynReceived => {
                if let Some((_, at)) = self.timer {
                    if at <= now {
                        self.timer = None;
                        self.retransmit_timer(now, out);
                    }
                }
                if self.syn_due {
                    self.syn_due = false;
                    let fl = if self.state == State::SynSent {
                        flags::SYN
                    } else {
                        flags::SYN | flags::ACK
                    };
                    let seg = self.segment(now, 0, fl, Vec::new());
                    out.push(seg);
                    self.syn_xmit = Some(now);
                    self.snd_nxt = 1;
                    self.timer = Some((TimerKind::Retransmit, self.clock.expiry(now, self.rto_j)));
                }
                return;
            }
            State::Established => {}
        }
        // ACKs sent while segments were processed (one still owed when the next arrived,
        // the compressed-SACK flush) come first.
        for early in std::mem::take(&mut self.rcv.early_acks) {
            let seq = self.snd_nxt;
            let seg = self.segment_with(now, seq, flags::ACK, Vec::new(), &early);
            self.stats.segs_out += 1;
            out.push(seg);
        }
        // Whether this poll's data carried the ACK is judged after them.
        let first = out.len();
        if let Some((kind, at)) = self.timer {
            if at <= now {
                self.on_timer(now, kind, out);
            }
        }
        if self.rcv.delack_at.is_some_and(|t| t <= now) {
            self.rcv.delack_timer(self.rto_j);
        }
        if self.rcv.comp_at.is_some_and(|t| t <= now) {
            self.rcv.comp_timer();
        }
        if std::mem::take(&mut self.rexmit_new) {
            // `tcp_xmit_recovery` with `REXMIT_NEW`: new data first; the segments marked
            // lost only if none could go.
            self.write_xmit(now, out);
            if self.snd_nxt <= self.high_seq {
                self.frto = false;
                self.xmit_retransmit_queue(now, out);
            }
        } else {
            self.xmit_retransmit_queue(now, out);
        }
        self.write_xmit(now, out);
        if out.len() == first && self.rcv.ack_now {
            let seq = self.snd_nxt;
            let seg = self.segment(now, seq, flags::ACK, Vec::new());
            out.push(seg);
        }
    }
}
