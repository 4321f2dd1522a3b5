//! CoDel (RFC 8289) in virtual time, exact: drop spacing interval/√count once the sojourn
//! time has stayed above target for an interval, and the end of dropping when it falls
//! below target.
mod common;
use common::*;

use linkem::queue::codel::CodelParams;
use linkem::spec::{build_pipeline, DirectionSpec, DisciplineSpec, QueueSpec, RateSpec};
use linkem::{DropReason, Ecn, Packet, PipelineEvent};

const MS: u64 = 1_000_000;

/// 12 Mbit/s: a 1500-byte packet takes exactly 1 ms, so the link starts a packet (and
/// CoDel dequeues) at every whole millisecond while it is busy.
fn codel_link(ecn: bool) -> DirectionSpec {
    DirectionSpec {
        rate: Some(RateSpec::Constant {
            bits_per_sec: 12_000_000,
        }),
        queue: QueueSpec::new(DisciplineSpec::Codel(CodelParams::default())).with_ecn(ecn),
        ..Default::default()
    }
}

/// A burst of 21 packets at 0 (ids 0–20), then one packet per ms at 1 … `until` ms (id
/// 20 + k at k ms): arrivals at the link's rate, so without drops the queue stays as
/// long as the burst made it.
fn standing_queue(until: u64) -> Vec<(u64, u32, u64)> {
    let mut a: Vec<_> = (0..21).map(|i| (i, 1500, 0)).collect();
    a.extend((1..=until).map(|k| (20 + k, 1500, k * MS)));
    a
}

/// The drop times, by hand. Dequeues are at whole ms. Burst packet i is dequeued at i ms
/// with a sojourn of i ms; packet 20 + k (arrived at k ms) at 20 + k ms with a sojourn of
/// 20 ms. The sojourn first reaches target (5 ms: "not below") at 5 ms, so
/// first_above_time = 105 ms; at 105 ms CoDel may drop: it drops the head (packet 105,
/// arrived at 85 ms), serves the next (sojourn 19 ms), enters the dropping state with
/// count 1 and drop_next = 105 + 100/√1 = 205 ms. Every drop takes one packet out of a
/// queue fed at the service rate, so after the j-th drop the sojourn is 20 − j ms. Next
/// drops: at the first dequeue (whole ms) at or after drop_next, with
/// drop_next += 100 ms/√count (truncated to ns):
///
/// | count | drop_next (ms)                         | drop at |
/// |-------|----------------------------------------|---------|
/// | 2     | 205 + 70.710678 = 275.710678           | 276     |
/// | 3     | + 57.735026 = 333.445704               | 334     |
/// | 4     | + 50 = 383.445704                      | 384     |
/// | 5     | + 44.721359 = 428.167063               | 429     |
/// | 6     | + 40.824829 = 468.991892               | 469     |
/// | 7     | + 37.796447 = 506.788339               | 507     |
/// | 8     | + 35.355339 = 542.143678               | 543     |
/// | 9     | + 33.333333 = 575.477011               | 576     |
/// | 10    | + 31.622776 = 607.099787               | 608     |
/// | 11    | + 30.151134 = 637.250921               | 638     |
/// | 12    | + 28.867513 = 666.118434               | 667     |
/// | 13    | + 27.735009 = 693.853443               | 694     |
/// | 14    | + 26.726124 = 720.579567               | 721     |
/// | 15    | + 25.819889 = 746.399456               | 747     |
///
/// After the 16th drop (at 747 ms) the next packet's sojourn is 4 ms < target: CoDel
/// leaves the dropping state and drops nothing more, though arrivals go on to 1000 ms.
const DROP_MS: [u64; 16] = [
    105, 205, 276, 334, 384, 429, 469, 507, 543, 576, 608, 638, 667, 694, 721, 747,
];

#[test]
fn drops_follow_the_control_law_and_stop_below_target() {
    let ev = codel_run(1000);
    let drops = drops_with(&ev, DropReason::AqmDrop);
    assert_eq!(
        drops.iter().map(|d| d.1).collect::<Vec<_>>(),
        DROP_MS.map(|ms| ms * MS).to_vec()
    );
    // The packet dropped at t is the one that would have been served at t: after j − 1
    // drops, packet 20 + k is served at 20 + k − (j − 1) ms, so the j-th drop (1-based)
    // at t ms takes packet t + j − 1.
    let ids: Vec<u64> = DROP_MS.iter().enumerate().map(|(j, ms)| ms + j as u64).collect();
    assert_eq!(drops.iter().map(|d| d.0).collect::<Vec<_>>(), ids);
    assert_eq!(pipeline_drops(&ev).len(), 16, "no other drop");
    // Every other packet departs; the link never idles: 1021 − 16 packets by 1005 ms.
    let deps = departures(&ev);
    assert_eq!(deps.len(), 1021 - 16);
    assert_eq!(deps.last().unwrap().2, 1005 * MS);
    // Below target from the 16th drop on: departure k after it is at 747 + k + 1 ms.
    let after: Vec<_> = deps.iter().filter(|d| d.2 > 747 * MS).collect();
    for (k, d) in after.iter().enumerate() {
        assert_eq!(d.2, (748 + k as u64) * MS);
    }
}

/// Above target for less than an interval: no drop. The burst alone gives sojourns of
/// 0 … 20 ms, at or above 5 ms only from 5 to 20 ms (15 ms < 100 ms).
/// A standing queue with arrivals up to `until` ms through the CoDel link without ECN.
fn codel_run(until: u64) -> Vec<PipelineEvent<()>> {
    run_pipeline(
        &mut build_pipeline::<()>(&codel_link(false), 1).unwrap(),
        &standing_queue(until),
    )
}

#[test]
fn a_short_excursion_above_target_drops_nothing() {
    assert_eq!(departures(&codel_run(0)).len(), 21);
    // (arrivals to, CoDel's drops):
    // - 0 ms: the burst alone.
    // - 80 ms: the sojourn stays at 20 ms from 5 ms to 100 ms — 95 ms, still less than an
    //   interval (first_above_time = 105 ms) — and the queue empties at 101 ms.
    // - 85 ms: the packet dequeued at 105 ms has a sojourn of 20 ms, but only 0 bytes
    //   remain behind it (≤ one MTU), so CoDel keeps it.
    // - 86 ms: one 1500-byte packet remains behind it: still at most an MTU, kept.
    // - 87 ms: two remain (3000 B > 1500): the packet at 105 ms is dropped.
    for (until, dropped) in [
        (0, vec![]),
        (80, vec![]),
        (85, vec![]),
        (86, vec![]),
        (87, vec![(105, 105 * MS)]),
    ] {
        let ev = codel_run(until);
        assert_eq!(drops_with(&ev, DropReason::AqmDrop), dropped, "arrivals to {until} ms");
        assert_eq!(
            pipeline_drops(&ev).len(),
            dropped.len(),
            "arrivals to {until} ms: no other drop"
        );
    }
}

/// With ECN on and ECN-capable packets, CoDel marks where it would drop. A mark does not
/// shorten the queue, so the sojourn stays at 20 ms and marking goes on at the same
/// control-law times (the first 16 marks are exactly the drop times above) for as long
/// as the queue stands; no packet is dropped and every marked packet departs CE.
#[test]
fn ecn_marks_follow_the_same_control_law() {
    let mut p = build_pipeline::<()>(&codel_link(true), 1).unwrap();
    let ev = run_pipeline_of(&mut p, &standing_queue(1000), |id, size| {
        Packet::new(id, size, ()).with_ecn(Ecn::Ect0)
    });
    assert!(pipeline_drops(&ev).is_empty());
    let m = marks(&ev);
    assert_eq!(
        m[..16].iter().map(|d| d.1).collect::<Vec<_>>(),
        DROP_MS.map(|ms| ms * MS).to_vec()
    );
    // The 28th is at 1008 ms; the 29th would be due 100/√28 = 18.9 ms later, after the
    // last packet (arrived at 1000 ms, dequeued at 1020 ms). A Python model of RFC 8289
    // gave the same 28.
    assert_eq!((m.len(), m.last().unwrap().1), (28, 1008 * MS));
    // The marked packet is the head at the drop time: packet t (no packet removed).
    assert!(m.iter().all(|&(id, at)| id * MS == at), "{m:?}");
    // The mark times keep following drop_next += 100 ms/√count, to the ns.
    let mut drop_next = 205 * MS;
    for (j, &(_, at)) in m.iter().enumerate().skip(1) {
        assert_eq!(at, drop_next.div_ceil(MS) * MS, "mark {}", j + 1);
        drop_next += (100.0 * MS as f64 / ((j + 1) as f64).sqrt()) as u64;
    }
    let deps = departed(&ev);
    assert_eq!(deps.len(), 1021);
    let ce: Vec<u64> = deps.iter().filter(|d| d.2 == Ecn::Ce).map(|d| d.0).collect();
    assert_eq!(ce, m.iter().map(|d| d.0).collect::<Vec<_>>());
}
