//! The receiving end's ACKs under virtual time (Linux's delayed-ACK rules, HZ = 250).

use tcp::{flags, Config, Connection, Nanos, Segment, TcpRepr};

const MS: Nanos = 1_000_000;
const CLIENT_ISN: u32 = 100;

fn data(n: u32, tsval: u32) -> Segment {
    Segment {
        header: TcpRepr {
            src_port: 40000,
            dst_port: 5201,
            seq: CLIENT_ISN + 1 + (n - 1) * 1448,
            ack: 0, // filled in
            flags: flags::ACK,
            window: 1000,
            timestamps: Some((tsval, 0)),
            ..TcpRepr::default()
        },
        payload: vec![0; 1448],
        ..Segment::default()
    }
}

/// What the ACK `a` acknowledges, as a count of the client's segments.
fn acked(a: &Segment) -> u32 {
    (a.header.ack - CLIENT_ISN - 1) / 1448
}

/// A server that accepted a connection at 0–20 ms (RTT 20 ms); returns it and its ISN.
fn accepted() -> (Connection, u32) {
    accepted_with(Config::new("cubic", 5201, 40000))
}

/// The client's SYN (MSS 1460, window scale 7, SACK, timestamps).
fn syn() -> Segment {
    Segment {
        header: TcpRepr {
            src_port: 40000,
            dst_port: 5201,
            seq: CLIENT_ISN,
            flags: flags::SYN,
            window: 64240,
            mss: Some(1460),
            window_scale: Some(7),
            sack_permitted: true,
            timestamps: Some((1, 0)),
            ..TcpRepr::default()
        },
        ..Segment::default()
    }
}

/// A listening server given `syn()` at 0: it and its SYN-ACK.
fn syn_acked(cfg: Config) -> (Connection, Segment) {
    let mut server = Connection::listen(cfg).unwrap();
    server.receive(0, &syn());
    let mut out = Vec::new();
    server.poll(0, &mut out);
    let synack = out.pop().unwrap();
    (server, synack)
}

fn accepted_with(cfg: Config) -> (Connection, u32) {
    let syn = syn();
    let (mut server, synack) = syn_acked(cfg);
    assert!(synack.has(flags::SYN) && synack.has(flags::ACK));
    let ack = Segment {
        header: TcpRepr {
            seq: CLIENT_ISN + 1,
            ack: synack.header.seq.wrapping_add(1),
            flags: flags::ACK,
            timestamps: Some((21, synack.header.timestamps.unwrap().0)),
            ..syn.header
        },
        ..syn
    };
    server.receive(20 * MS, &ack);
    assert!(server.is_established());
    (server, synack.header.seq.wrapping_add(1))
}

/// Segment `n` arrives at `at` (not yet read, nothing sent in answer yet).
fn arrive(server: &mut Connection, una: u32, n: u32, at: Nanos) {
    let mut s = data(n, (at / MS) as u32);
    s.header.ack = una;
    server.receive(at, &s);
}

/// Delivers segment `n` at `at`, the application reading it at once; returns the ACK
/// numbers (as segment counts) sent then.
fn deliver(server: &mut Connection, una: u32, n: u32, at: Nanos) -> Vec<u32> {
    arrive(server, una, n, at);
    server.consume(at, usize::MAX);
    let mut out = Vec::new();
    server.poll(at, &mut out);
    out.iter().map(acked).collect()
}

/// Linux's receiver: the first 16 segments are each ACKed at once (quick ACKs: the
/// initial window of 64240 bytes / (2 · 1448) = 22, capped at 16); then a segment alone
/// waits, the next (two full segments unacknowledged) is ACKed at once; a lone segment
/// is ACKed when the delayed-ACK timer fires: `ato` = 40 ms (HZ/25), armed at its tick.
#[test]
fn quick_acks_then_every_second_segment_then_the_40_ms_timer() {
    let (mut server, una) = accepted();
    let mut t = 100 * MS;
    for n in 1..=16 {
        assert_eq!(deliver(&mut server, una, n, t), vec![n], "segment {n}");
        t += MS;
    }
    assert_eq!(deliver(&mut server, una, 17, t), Vec::<u32>::new());
    assert_eq!(server.next_timeout(), Some((t / 4_000_000 + 10) * 4_000_000));
    t += MS;
    assert_eq!(deliver(&mut server, una, 18, t), vec![18]);
    assert_eq!(server.next_timeout(), None);
    // A lone segment at 200 ms (a tick boundary): ACKed 40 ms later, not before.
    assert_eq!(deliver(&mut server, una, 19, 200 * MS), Vec::<u32>::new());
    assert_eq!(server.next_timeout(), Some(240 * MS));
    let mut out = Vec::new();
    server.poll(239 * MS, &mut out);
    assert!(out.is_empty());
    server.poll(240 * MS, &mut out);
    assert_eq!(out.iter().map(acked).collect::<Vec<_>>(), vec![19]);
}

/// Segments 1–16 delivered 1 ms apart from 100 ms (all quick-ACKed); returns when the
/// next would be due.
fn sixteen_in_order(server: &mut Connection, una: u32) -> Nanos {
    let mut t = 100 * MS;
    for n in 1..=16 {
        deliver(server, una, n, t);
        t += MS;
    }
    t
}

/// A segment beyond a hole is ACKed at once (with its SACK block), for the first three;
/// the segment that fills the hole is ACKed at once too.
#[test]
fn out_of_order_segments_are_acked_at_once_with_sack() {
    let (mut server, una) = accepted();
    let mut t = sixteen_in_order(&mut server, una);
    // 17 lost; 18 and 19 arrive.
    for n in [18, 19] {
        let mut s = data(n, 0);
        s.header.ack = una;
        server.receive(t, &s);
        let mut out = Vec::new();
        server.poll(t, &mut out);
        assert_eq!(out.len(), 1);
        let first = CLIENT_ISN + 1 + 17 * 1448;
        assert_eq!(out[0].header.sack.as_slice(), [(first, first + (n - 17) * 1448)]);
        assert_eq!(acked(&out[0]), 16);
        t += MS;
    }
    assert_eq!(deliver(&mut server, una, 17, t), vec![19]);
}

/// Segments that arrive at one instant (a merge releasing what it held) are each
/// answered as Linux answers them, one by one as it processes them: 17 lost, 18 and 20
/// arrive, then 17 itself, all at once. 18 and 20 are out of order (each ACKed at once,
/// its block first); 17 fills the hole up to 18 and, with 20 still held, is ACKed at
/// once too (a new `rcv_nxt` restarts the count of three) — each ACK with the
/// acknowledgement and blocks of its own moment, not those after the last segment.
#[test]
fn segments_arriving_at_one_instant_are_each_acked_as_processed() {
    let (mut server, una) = accepted();
    let t = sixteen_in_order(&mut server, una);
    let block = |n: u32| {
        let s = CLIENT_ISN + 1 + (n - 1) * 1448;
        (s, s + 1448)
    };
    for n in [18, 20, 17] {
        arrive(&mut server, una, n, t);
    }
    server.consume(t, usize::MAX);
    let mut out = Vec::new();
    server.poll(t, &mut out);
    let acks: Vec<_> = out
        .iter()
        .map(|a| (acked(a), a.header.sack.as_slice().to_vec()))
        .collect();
    assert_eq!(
        acks,
        vec![
            (16, vec![block(18)]),
            (16, vec![block(20), block(18)]),
            (18, vec![block(20)]),
        ]
    );
}

/// In-order segments wait for the application's read when they pull the window's edge
/// back (`__tcp_ack_snd_check`: two full segments ACK at once only if the window is not
/// shrinking, or nothing is left unread): after the quick ACKs, rcv_ssthresh is 64240
/// and the window offered 64256; 17–20 arrive at one instant, unread, and leave room
/// for 65536 − 2 · 1448 = 62640 < 64256 from the second on. The read (`tcp_cleanup_rbuf`:
/// more than a segment unacknowledged) sends one ACK, for all four.
#[test]
fn an_unread_burst_is_acked_once_by_the_read() {
    let (mut server, una) = accepted();
    let t = sixteen_in_order(&mut server, una);
    for n in 17..=20 {
        arrive(&mut server, una, n, t);
    }
    let mut out = Vec::new();
    server.poll(t, &mut out);
    assert!(out.is_empty(), "nothing is ACKed before the read");
    server.consume(t, usize::MAX);
    server.poll(t, &mut out);
    let acks: Vec<_> = out.iter().map(acked).collect();
    assert_eq!(acks, vec![20]);
}

/// Data that arrives twice is reported once, as the first SACK block of the ACK sent at
/// once (a D-SACK, RFC 2883; `tcp_dsack_set`): below the cumulative ACK for a segment
/// already delivered, inside the block that holds it for one still out of order; the
/// ACK after that carries the plain SACK blocks again.
#[test]
fn data_received_twice_is_reported_once_in_a_d_sack_block() {
    let (mut server, una) = accepted();
    let mut t = sixteen_in_order(&mut server, una);
    let block = |from: u32, to: u32| (CLIENT_ISN + 1 + (from - 1) * 1448, CLIENT_ISN + 1 + to * 1448);
    let mut arrive = |n: u32, t: Nanos| {
        let mut s = data(n, (t / MS) as u32);
        s.header.ack = una;
        server.receive(t, &s);
        let mut out = Vec::new();
        server.poll(t, &mut out);
        out.iter()
            .map(|a| (acked(a), a.header.sack.as_slice().to_vec()))
            .collect::<Vec<_>>()
    };
    // 17 missing; 18 and 19 held out of order.
    arrive(18, t);
    arrive(19, t);
    t += MS;
    assert_eq!(arrive(16, t), vec![(16, vec![block(16, 16), block(18, 19)])]);
    assert_eq!(arrive(19, t), vec![(16, vec![block(19, 19), block(18, 19)])]);
    assert_eq!(arrive(20, t), vec![(16, vec![block(18, 20)])]);
}

/// Every other segment lost (a queue overflowing in slow start): each arrival starts a
/// SACK block of its own. Segments 18, 20, 22 are ACKed at once (the first three beyond
/// the hole); 24 is compressed (no ACK; the 1 ms timer armed, srtt/20 = 1 ms). 26 makes a
/// fifth block: the ACK owed goes out first, with the blocks before it — 24, 22, 20 —
/// (Linux keeps 4, sends 3 with timestamps), so 24's block reaches the sender; then 26 is
/// compressed again. Without that flush the sender would first hear of 24 in no ACK at
/// all once 28 and 30 came (only the newest three fit), and RACK would resend it.
#[test]
fn a_fifth_sack_block_flushes_the_compressed_ack_first() {
    let (mut server, una) = accepted();
    let mut t = sixteen_in_order(&mut server, una);
    let block = |n: u32| {
        let s = CLIENT_ISN + 1 + (n - 1) * 1448;
        (s, s + 1448)
    };
    // 17 lost; then only even segments arrive, 10 µs apart (inside the 1 ms timer).
    let mut sent = Vec::new();
    for n in [18, 20, 22, 24, 26] {
        let mut s = data(n, (t / MS) as u32);
        s.header.ack = una;
        server.receive(t, &s);
        let mut out = Vec::new();
        server.poll(t, &mut out);
        sent.push((
            n,
            out.iter()
                .map(|a| a.header.sack.as_slice().to_vec())
                .collect::<Vec<_>>(),
        ));
        t += 10_000;
    }
    assert_eq!(
        sent,
        vec![
            (18, vec![vec![block(18)]]),
            (20, vec![vec![block(20), block(18)]]),
            (22, vec![vec![block(22), block(20), block(18)]]),
            (24, vec![]),
            (26, vec![vec![block(24), block(22), block(20)]]),
        ]
    );
    // The flush cancelled the timer 24 armed; 26 armed it anew, 1 ms after its arrival.
    assert_eq!(server.next_timeout(), Some(t - 10_000 + MS));
}

/// Segment `n` arrives at 39 + n ms echoing the server's SYN-ACK timestamp `synack_ts`;
/// the application reads everything then. Returns what the server sent.
fn deliver_and_read(server: &mut Connection, una: u32, synack_ts: u32, n: u32) -> Vec<Segment> {
    let at = (39 + u64::from(n)) * MS;
    let mut s = data(n, (at / MS) as u32);
    s.header.ack = una;
    s.header.timestamps = Some(((at / MS) as u32, synack_ts));
    server.receive(at, &s);
    let mut out = Vec::new();
    server.poll(at, &mut out);
    server.consume(at, usize::MAX);
    out
}

/// Receive-buffer autotuning turns quick ACKs on while the window grows (Linux 6.18's
/// `tcp_rcv_space_adjust` / `tcp_rcvbuf_grow` and `tcp_grow_window`'s `quick |= 1`).
/// The server announces an MSS of 1460 (advmss): rcv_wnd = rcv_ssthresh = 65536 rounded
/// down to 1460s = 64240. Established at 20 ms, so `rcvq_space` = min(64240, 64240,
/// 10 · 1460) = 14600, measured from 20 ms; the buffer starts at 131072 (clamp 65536).
/// Segment n (1448 bytes) arrives at 39 + n ms echoing the server's SYN-ACK timestamp
/// (sent at 0): the first gives a 40 ms receiver RTT (the later echoes are the same, so
/// no more TS samples; the window-based sample, 45 ms at segment 46, is larger and
/// ignored). The application reads everything after each segment.
/// - Segments 1–16: quick ACKs (as above); 17–21: every second one (18, 20).
///   rcv_ssthresh cannot grow: room = min(65536, 65536 − 1448 held) − 64240 < 0.
/// - Read at 60 ms (after segment 21, 40 ms after the measure began): 21 · 1448 = 30408
///   read > 14600: rcvwin = 2 · 30408 + 2 · ⌊60816 · (30408 − 14600) / 14600⌋
///   = 60816 + 2 · 65847 = 192510: buffer 385020, clamp 192510.
/// - From segment 22 the window has room (192510 − 1448 − rcv_ssthresh ≥ 2920 up to
///   segment 61): each grows rcv_ssthresh by 2 · 1460 and is ACKed at once.
/// - Read at 100 ms (segment 61): 40 · 1448 = 57920 read > 30408: rcvwin = 115840
///   + 2 · ⌊115840 · 27512 / 30408⌋ = 115840 + 2 · 104807 = 325454, the clamp.
/// - Segments 62–80 go on growing it: rcv_ssthresh = 64240 + 59 · 2920 = 236520, and
///   every segment from 22 on was ACKed at once (without autotuning: every second).
#[test]
fn autotuning_opens_the_window_with_an_ack_for_every_segment() {
    // The server's clock reads 1000 ms at 0 (an echo of 0 would count as none).
    let mut cfg = Config::new("cubic", 5201, 40000);
    cfg.ts_offset = 1000;
    let synack_ts = cfg.ts_offset;
    let (mut server, una) = accepted_with(cfg);
    let mut acks = Vec::new();
    for n in 1..=80u32 {
        let out = deliver_and_read(&mut server, una, synack_ts, n);
        acks.extend(out.iter().map(acked));
    }
    let mut want: Vec<u32> = (1..=16).collect();
    want.extend([18, 20]);
    want.extend(22..=80);
    assert_eq!(acks, want);
    let rcv = server.receiver();
    assert_eq!(rcv.rcv_rtt_us(), 40_000);
    assert_eq!(rcv.window_clamp(), 325_454);
    assert_eq!(rcv.rcv_ssthresh(), 236_520);
}

/// A host's `tcp_rmem` sets where the buffer starts and how far autotuning may take it
/// (here "4096 65536 262144", where Linux's defaults are 131072 and 6291456).
/// - The SYN-ACK offers half the starting buffer in whole segments of the announced
///   1460, ⌊32768 / 1460⌋ · 1460 = 32120, rounded up to the window scale's unit as
///   every window this TCP sends, where the scale covers the largest buffer:
///   ilog2(max(262144, 212992)) − 15 = 3, unit 8: 32120. With the defaults: 64240
///   rounded up to ilog2(6291456) − 15 = 7's unit 128: 64256.
/// - Established, the clamp comes down to the starting buffer's window, 32768.
/// - The same 80 segments as in the test above: the read at 60 ms (after segment 21)
///   asks for 385020 bytes of buffer (worked out there), capped at 262144: the clamp is
///   131072. No later read can raise it (the buffer is at the limit), though the
///   receiver's RTT falls to the smaller window's own sample.
#[test]
fn tcp_rmem_sets_the_starting_buffer_and_the_autotuning_limit() {
    let syn_ack = |cfg: Config| {
        let s = syn_acked(cfg).1;
        (s.header.window, s.header.window_scale)
    };
    let mut cfg = Config::new("cubic", 5201, 40000);
    assert_eq!(syn_ack(cfg.clone()), (64256, Some(7)));
    cfg.rcvbuf_initial = 65_536;
    cfg.rcvbuf = 262_144;
    assert_eq!(syn_ack(cfg.clone()), (32120, Some(3)));

    cfg.ts_offset = 1000;
    let synack_ts = cfg.ts_offset;
    let (mut server, una) = accepted_with(cfg);
    assert_eq!(server.receiver().window_clamp(), 32_768);
    for n in 1..=80u32 {
        deliver_and_read(&mut server, una, synack_ts, n);
        if n == 21 {
            assert_eq!(server.receiver().window_clamp(), 131_072);
        }
    }
    assert_eq!(server.receiver().window_clamp(), 131_072);
}
