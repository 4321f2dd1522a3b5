//! Loss recovery under virtual time with outcomes computed by hand (see each test):
//! a receiver that ACKs every segment at once, 100 ms round trips, no rate limit.

mod common;

use common::{Path, Tx, MS};
use tcp::cc::CaState;
use tcp::Nanos;

fn numbers(txs: &[Tx]) -> Vec<u64> {
    txs.iter().map(|t| t.n).collect()
}

/// The segments each ACK arriving at `at` released, in order of the ACKs.
fn answers_at(p: &Path, at: Nanos) -> Vec<Vec<u64>> {
    p.answers
        .iter()
        .filter(|(t, _)| *t == at)
        .map(|(_, txs)| numbers(txs))
        .collect()
}

/// Reno, 30 segments, the first transmission of segment 2 lost.
///
/// t = 100 ms: segments 1–10 (IW10). t = 200 ms, the ACKs of 1, 3–10 in order:
/// - ACK 1: slow start 10 → 11, in flight 9: sends 11, 12;
/// - SACK 3, SACK 3–4: one and two SACKed, RACK waits min RTT/4 (Disorder): the
///   delivered segment frees one slot each: sends 13, then 14;
/// - SACK 3–5: three SACKed → RACK's window is 0, segment 2 is lost → Recovery,
///   ssthresh = 11/2 = 5, PRR: in flight 9 > 5, sndcnt = ⌈5·1/11⌉ − 0 = 1 → cwnd 10:
///   the fast retransmission of 2;
/// - then PRR's ⌈5·d/11⌉ − prr_out for d = 2..6: 0, 1, 0, 1, 0 → sends 15 and 16.
///
/// t = 300 ms: SACK 3–11: ⌈35/11⌉ − 3 = 1 → 17; SACK 3–12: 0; SACK 3–13: in flight 5
/// = ssthresh, no more; SACK 3–14: in flight 4 < 5 → 18; the ACK of the retransmission
/// covers up to 14 = high_seq: recovery ends, cwnd = ssthresh = 5, → 19; the ACKs of
/// 15 and 16 (congestion avoidance, +1/5 each) each free a slot → 20, 21.
#[test]
fn a_single_loss_is_repaired_by_fast_retransmit_with_prr() {
    let mut p = Path::new("reno", 50 * MS, 30, false);
    p.drop = Box::new(|n, count| n == 2 && count == 0);
    p.run(300 * MS);
    assert_eq!(
        answers_at(&p, 200 * MS),
        vec![
            vec![11, 12],
            vec![13],
            vec![14],
            vec![2],
            vec![],
            vec![15],
            vec![],
            vec![16],
            vec![]
        ]
    );
    assert_eq!(
        answers_at(&p, 300 * MS),
        vec![vec![17], vec![], vec![], vec![18], vec![19], vec![20], vec![21]]
    );
    assert_eq!(
        p.retransmissions(),
        vec![Tx {
            at: 200 * MS,
            n: 2,
            retransmission: true
        }]
    );
    assert_eq!((p.sender.cwnd(), p.sender.ssthresh()), (5, Some(5)));
    assert_eq!(p.sender.ca_state(), CaState::Open);
    let s = p.sender.stats();
    assert_eq!((s.total_retrans, s.timeouts, s.recoveries, s.loss_probes), (1, 0, 1, 0));
}

/// Reno, 60 segments; the first window (1–10) is delivered, so at t = 200 ms the window
/// is 20 and segments 11–30 leave; 12, 14 and 16 are lost. At t = 300 ms the ACK of 11
/// grows the window to 21; SACKs of 13 and 15 leave RACK waiting; the SACK of 17 makes
/// three SACKed: 12, 14 and 16 are all lost at once (each sent before 17, one RTT ago)
/// → Recovery with ssthresh 21/2 = 10, and PRR lets the three retransmissions go within
/// that same ACK train. Their ACKs come back at t = 400 ms and end the recovery: cwnd =
/// ssthresh = 10, no timeout.
#[test]
fn a_burst_of_losses_is_repaired_by_sack_within_one_round_trip() {
    let mut p = Path::new("reno", 50 * MS, 60, false);
    p.drop = Box::new(|n, count| matches!(n, 12 | 14 | 16) && count == 0);
    p.run(400 * MS);
    let rtx = p.retransmissions();
    assert_eq!(numbers(&rtx), vec![12, 14, 16]);
    assert!(rtx.iter().all(|t| t.at == 300 * MS), "{rtx:?}");
    assert_eq!(p.sender.ssthresh(), Some(10));
    assert_eq!(p.sender.ca_state(), CaState::Open);
    assert_eq!(p.sender.cwnd(), 10, "recovery ended at 400 ms with cwnd = ssthresh");
    let s = p.sender.stats();
    assert_eq!((s.total_retrans, s.timeouts, s.recoveries), (3, 0, 1));
}

/// Reno, 10 segments then nothing; 9 and 10 are lost. t = 200 ms: the ACKs of 1–8 leave
/// two segments out, so the probe timeout is 2·srtt + 2 ms = 202 ms = 51 jiffies
/// (HZ = 250, rounded up) from tick 50: t = 404 ms, before the RTO (300 ms from the
/// ACK). The probe resends the last segment, 10; its SACK at 504 ms shows 9 lost (RACK:
/// sent before 10, more than RTT + min RTT/4 ago) → Recovery (ssthresh 18/2 = 9), 9 is
/// retransmitted at once, its ACK at 604 ms completes the transfer. No timeout.
#[test]
fn a_tail_loss_is_repaired_by_the_loss_probe() {
    let mut p = Path::new("reno", 50 * MS, 10, false);
    p.drop = Box::new(|n, count| n >= 9 && count == 0);
    p.run(2000 * MS);
    assert_eq!(
        p.retransmissions(),
        vec![
            Tx {
                at: 404 * MS,
                n: 10,
                retransmission: true
            },
            Tx {
                at: 504 * MS,
                n: 9,
                retransmission: true
            },
        ]
    );
    assert!(p.sender.all_acked());
    assert_eq!(p.answers.last().map(|a| a.0), Some(604 * MS));
    let s = p.sender.stats();
    assert_eq!((s.loss_probes, s.timeouts, s.total_retrans), (1, 0, 2));
    assert_eq!((p.sender.cwnd(), p.sender.ssthresh()), (9, Some(9)));
}

/// One segment on a 10 ms path, every transmission lost. srtt 10 ms, mdev 20 ms → the
/// RTO is srtt + max(4·mdev/4… , 200 ms) = 210 ms = 53 jiffies (212 ms). Sent at 10 ms
/// (tick 2): with one segment out the probe timeout is min(2·srtt + 200 ms, RTO) → the
/// probe at tick 55 = 220 ms, then the RTO from there: 220 + 212 = 432 ms, then backoff
/// doubles it: +424 → 856 ms, +848 → 1704 ms.
#[test]
fn the_rto_is_200_ms_above_the_rtt_and_backs_off_exponentially() {
    let mut p = Path::new("reno", 5 * MS, 1, false);
    p.drop = Box::new(|_, _| true);
    p.run(1800 * MS);
    let times: Vec<u64> = p.sent.iter().map(|t| t.at / MS).collect();
    assert_eq!(times, vec![10, 220, 432, 856, 1704]);
    let s = p.sender.stats();
    assert_eq!((s.loss_probes, s.timeouts), (1, 3));
    assert_eq!(p.sender.rto_us(), 8 * 212_000);
    assert_eq!(p.sender.ca_state(), CaState::Loss);
}

/// Reno, 60 segments, no loss; the first transmission of each `(late, after)` reaches
/// the receiver right after `after`.
fn reordered(late: &[(u64, u64)]) -> Path {
    let mut p = Path::new("reno", 50 * MS, 60, false);
    p.late = late.to_vec();
    p.run(500 * MS);
    p
}

/// Segment 33 (third flight, sent at 300 ms) arrives behind 34–38. At 400 ms, after the
/// ACKs of 31 and 32 (slow start: cwnd 42), the SACKs of 34, 34–35, 34–36 make three
/// SACKed: with no reordering seen, RACK's window is 0 in that case, and 33 (sent with
/// 36, one RTT ago) is marked lost → Recovery (ssthresh 21) and its fast retransmission,
/// spurious. The original's cumulative ACK (after 34–38's) echoes its timestamp, from
/// before the retransmission, and the retransmission is acknowledged with it: Linux's
/// partial undo (`tcp_try_undo_partial`) takes the recovery back — cwnd 42 again and
/// ssthresh infinite, as before it — and counts the path reordering (6 segments). The
/// slow start goes on: +1 for that ACK and for each of the 22 after it (40–61) → 65.
#[test]
fn reordering_before_any_was_seen_is_taken_for_loss_then_undone() {
    let p = reordered(&[(33, 38)]);
    let s = p.sender.stats();
    assert_eq!(numbers(&p.retransmissions()), vec![33]);
    assert_eq!(
        (s.recoveries, s.undos, s.reord_seen, p.sender.reordering()),
        (1, 1, 1, 6)
    );
    assert_eq!(
        (p.sender.cwnd(), p.sender.ssthresh(), p.sender.ca_state()),
        (65, None, CaState::Open)
    );
}

/// Reno, 75 segments; the original of 33 (sent at 300 ms) arrives only right after its
/// fast retransmission (sent at 400 ms, as above, after 71–75). The retransmission fills
/// the hole at 450 ms, so the cumulative ACK echoes its timestamp: nothing shows the
/// recovery spurious when that ACK ends it at 500 ms (cwnd = ssthresh = 21). The
/// original, next, is data received twice: the receiver's D-SACK for 33 shows the one
/// retransmission unneeded (`undo_retrans` 1 → 0), and Linux undoes the finished
/// recovery on it (`tcp_try_undo_dsack`): cwnd max(21, 42) = 42, ssthresh infinite.
#[test]
fn a_d_sack_for_the_late_original_undoes_a_finished_recovery() {
    let mut p = Path::new("reno", 50 * MS, 75, false);
    p.late = vec![(33, 33)];
    p.run(500 * MS);
    let s = p.sender.stats();
    assert_eq!(numbers(&p.retransmissions()), vec![33]);
    assert_eq!((s.recoveries, s.undos, s.reord_seen), (1, 1, 0));
    assert_eq!(
        (p.sender.cwnd(), p.sender.ssthresh(), p.sender.ca_state()),
        (42, None, CaState::Open)
    );
}

/// Without the D-SACK (the original lost for good), the same recovery stands.
#[test]
fn a_real_loss_is_not_undone() {
    let mut p = Path::new("reno", 50 * MS, 75, false);
    p.drop = Box::new(|n, count| n == 33 && count == 0);
    p.run(500 * MS);
    let s = p.sender.stats();
    assert_eq!((s.recoveries, s.undos), (1, 0));
    assert_eq!(p.sender.ssthresh(), Some(21));
}

/// As above, but the second flight already reordered, shallowly: 12 arrived behind 13
/// and 14 (two SACKed, RACK waiting min RTT / 4), and the cumulative ACK its original
/// brought at 300 ms filled a hole below the highest SACK → the path reorders
/// (`reord_seen`, 3 segments: within `tcp_reordering`). From then on RACK keeps its
/// window (min RTT / 4 = 25 ms) even with three SACKed, so 33 behind 34–38 is waited for
/// — its original arrives right after 38 — and not retransmitted; the distance, 6
/// segments, becomes the reordering allowed for.
#[test]
fn once_the_path_was_seen_reordering_rack_waits_for_a_late_segment() {
    let p = reordered(&[(12, 14), (33, 38)]);
    let s = p.sender.stats();
    assert_eq!(p.retransmissions(), vec![]);
    assert_eq!((s.recoveries, s.reord_seen, p.sender.reordering()), (0, 2, 6));
    assert_eq!(p.sender.ca_state(), CaState::Open);
}

/// Reno, 20 segments, 50 ms each way: the first flight (1–10, at 100 ms) loses 1, and
/// 2–10 are held back 600 ms (a merge waiting on the hole) — as is 11, the loss probe's
/// new segment (at 304 ms: 2 · srtt + 2 jiffies after the flight), so that all ten arrive
/// together at 750 ms. The RTO, restarted by the probe, fires at 604 ms (+300 ms): every
/// segment is marked lost, cwnd = 1, and 1 is retransmitted.
fn held_back(lost_twice: bool) -> Path {
    let mut p = Path::new("reno", 50 * MS, 20, false);
    p.drop = Box::new(move |n, count| n == 1 && (count == 0 || (lost_twice && count == 1)));
    p.delay = Box::new(|n, count| match (n, count) {
        (2..=10, 0) => 600 * MS,
        (11, 0) => 396 * MS,
        _ => 0,
    });
    p.run(1500 * MS);
    p
}

/// F-RTO's step 2.b (RFC 5682): the retransmission of 1 is acknowledged at 704 ms, its
/// own timestamp echoed — nothing yet shows the timeout spurious — and Linux answers with
/// new data (12, 13: cwnd 2 in the loss state's slow start), not with 2 and 3, which
/// conventional recovery would resend although they are only held back. At 800 ms the
/// originals' ACKs echo their own timestamps, older than the retransmission: the timeout
/// is undone (Eifel, `tcp_try_undo_loss`): cwnd 10 again, ssthresh unset, and slow start
/// goes on (+19 for 2–20): 29. One retransmission in all.
#[test]
fn after_a_timeout_the_first_ack_is_answered_with_new_data() {
    let p = held_back(false);
    assert_eq!(
        p.retransmissions(),
        vec![Tx {
            at: 604 * MS,
            n: 1,
            retransmission: true
        }]
    );
    assert_eq!(answers_at(&p, 704 * MS), vec![vec![12, 13]]);
    let s = p.sender.stats();
    assert_eq!((s.timeouts, s.undos, s.spurious_rtos, s.recoveries), (1, 1, 0, 0));
    assert_eq!(
        (p.sender.cwnd(), p.sender.ssthresh(), p.sender.ca_state()),
        (29, None, CaState::Open)
    );
}

/// The same, but the retransmission of 1 is lost too: no ACK at 704 ms. At 800 ms the
/// SACKs of 2–11 report data that were never retransmitted and were sent before the
/// timeout: not everything in flight was lost, so F-RTO undoes it (`FLAG_ORIG_SACK_ACKED`,
/// `TCPSpuriousRTOs`) with no cumulative ACK to echo a timestamp: cwnd 10, and new data
/// 12–19 go out. Their SACKs at 900 ms show 1 (last sent at 604 ms) lost to RACK: a fast
/// retransmission in a recovery of its own (ssthresh 10 / 2 = 5), not a second timeout.
#[test]
fn a_timeout_is_undone_when_data_sent_before_it_are_sacked() {
    let p = held_back(true);
    assert_eq!(numbers(&p.retransmissions()), vec![1, 1]);
    assert_eq!(p.retransmissions()[1].at, 900 * MS);
    assert_eq!(answers_at(&p, 800 * MS).concat(), (12..=19).collect::<Vec<u64>>());
    let s = p.sender.stats();
    assert_eq!((s.timeouts, s.undos, s.spurious_rtos, s.recoveries), (1, 1, 1, 1));
    assert_eq!(p.sender.ssthresh(), Some(5));
}
