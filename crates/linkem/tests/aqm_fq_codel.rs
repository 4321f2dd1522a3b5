//! FQ-CoDel (RFC 8290) in virtual time: deficit round robin between flow queues gives
//! two bulk flows of different packet sizes the same bytes, a sparse flow is served
//! before the bulk ones, an overflow drops from the fattest queue, and each queue has its
//! own CoDel.
mod common;
use common::*;

use linkem::queue::codel::CodelParams;
use linkem::queue::fq_codel::FqCodelParams;
use linkem::queue::QueueLimit;
use linkem::spec::{build_pipeline, DirectionSpec, DisciplineSpec, QueueSpec, RateSpec};
use linkem::{DropReason, Packet, PipelineEvent};

const MS: u64 = 1_000_000;
/// Flow hashes; with 1024 queues, flow f goes to queue f.
const A: u32 = 1;
const B: u32 = 2;
const C: u32 = 3;

/// 12 Mbit/s (1500 B in 1 ms, 500 B in ⅓ ms, 100 B in 66.667 µs), FQ-CoDel with a
/// quantum of 1500 bytes.
fn fq_link(limit: QueueLimit) -> DirectionSpec {
    let params = FqCodelParams {
        quantum: 1500,
        ..FqCodelParams::default()
    };
    DirectionSpec {
        rate: Some(RateSpec::Constant {
            bits_per_sec: 12_000_000,
        }),
        queue: QueueSpec::new(DisciplineSpec::FqCodel(params)).with_limit(limit),
        ..Default::default()
    }
}

/// The flow of each packet id in these tests: A 0–99, B 100–999, C from 1000.
fn flow_of(id: u64) -> u32 {
    match id {
        0..100 => A,
        100..1000 => B,
        _ => C,
    }
}

fn packet(id: u64, size: u32) -> Packet<()> {
    Packet::new(id, size, ()).with_flow(flow_of(id))
}

/// Both bulk flows backlogged at 0: 40 packets of 1500 B on flow A (ids 0–39), then 120 of
/// 500 B on flow B (ids 100–219): 60 000 bytes each.
fn two_bulk_flows() -> Vec<(u64, u32, u64)> {
    let mut a: Vec<_> = (0..40).map(|i| (i, 1500, 0)).collect();
    a.extend((100..220).map(|i| (i, 500, 0)));
    a
}

/// By hand. A0 reaches the idle link first and is sent at once (A: new list, deficit
/// 1500 → 0). B0 makes B a new queue (deficit 1500): new = [A, B]. At 1 ms A, still first
/// in the new list, has no deficit left: +1500 and to the old list; B sends B0, B1, B2
/// (500 B each, deficit 1500 → 0) at 1, 1⅓, 1⅔ ms; then B gets +1500 and goes to the
/// old list behind A, and A sends A1 at 2 ms; then A (deficit 0) gets +1500 and moves
/// behind B, which sends three packets… Every 2 ms one A packet and three B packets,
/// 1500 bytes each: A_k departs at (2k + 1) ms, B_{3k+j} at (2k + 1 + (j + 1)/3) ms
/// (truncated to ns), and after each round both flows have sent the same bytes.
#[test]
fn two_bulk_flows_share_the_link_byte_fairly() {
    let mut p = build_pipeline::<()>(&fq_link(QueueLimit::Packets(10240)), 1).unwrap();
    let ev = run_pipeline_of(&mut p, &two_bulk_flows(), packet);
    assert!(pipeline_drops(&ev).is_empty());
    let deps = departures(&ev);
    let mut want = Vec::new();
    for k in 0..40u64 {
        want.push((k, false, (2 * k + 1) * MS));
        for j in 0..3u64 {
            want.push((100 + 3 * k + j, false, (2 * k + 1) * MS + (j + 1) * MS / 3));
        }
    }
    assert_eq!(deps, want);
    let (mut a, mut b) = (0i64, 0i64);
    for &(id, _, _) in &deps {
        if flow_of(id) == A {
            a += 1500;
        } else {
            b += 500;
        }
        assert!((a - b).abs() <= 1500, "after {id}: A {a} B {b} bytes");
    }
    // Drop-tail, for contrast: first come, first served, all of A before any of B.
    let fifo = DirectionSpec {
        queue: QueueLimit::Packets(10240).into(),
        ..fq_link(QueueLimit::Packets(10240))
    };
    let deps = departures(&run_pipeline(
        &mut build_pipeline::<()>(&fifo, 1).unwrap(),
        &two_bulk_flows(),
    ));
    assert_eq!(
        deps.iter().take(40).map(|d| d.0).collect::<Vec<_>>(),
        (0..40).collect::<Vec<_>>()
    );
}

/// A single 100-byte packet of flow C arrives at 10.5 ms, while A5 is on the wire (10 to
/// 11 ms) and 34 A and 105 B packets wait. C's queue is new, so at 11 ms it is served
/// first: it departs at 11 ms + 66 666.67 ns = 11 066 666 ns. Behind drop-tail it would
/// wait for all 139 packets and leave at 80 ms + 66 666 ns.
#[test]
fn a_sparse_flow_goes_first() {
    let mut arrivals = two_bulk_flows();
    arrivals.push((1000, 100, 10 * MS + MS / 2));
    let mut p = build_pipeline::<()>(&fq_link(QueueLimit::Packets(10240)), 1).unwrap();
    let deps = departures(&run_pipeline_of(&mut p, &arrivals, packet));
    let c = deps.iter().position(|d| d.0 == 1000).unwrap();
    assert_eq!(deps[c].2, 11 * MS + 66_666);
    assert_eq!(deps[c - 1], (5, false, 11 * MS), "right after A5");
    // Everything that departs after it arrived before it (at 0): the 34 A and 105 B
    // packets that were waiting.
    assert_eq!(deps.len() - c - 1, 34 + 105);

    let fifo = DirectionSpec {
        queue: QueueLimit::Packets(10240).into(),
        ..fq_link(QueueLimit::Packets(10240))
    };
    let deps = departures(&run_pipeline(&mut build_pipeline::<()>(&fifo, 1).unwrap(), &arrivals));
    assert_eq!(*deps.last().unwrap(), (1000, false, 80 * MS + 66_666));
}

/// Limit 10 packets (counting the one on the wire). At 0: A0 goes on the wire, A1–A6 wait
/// (9000 B), B100–B102 wait (1500 B): 10 packets. Each further arrival makes 11, and the
/// head of the queue holding the most bytes is dropped:
///
/// | arrival            | queues then (bytes)           | dropped |
/// |--------------------|-------------------------------|---------|
/// | B103, 500 B        | A 9000, B 2000                | A1      |
/// | C1000, 100 B       | A 7500, B 2000, C 100         | A2      |
/// | C1001, 9000 B      | A 6000, B 2000, C 9100        | C1000   |
/// | B104, 65 535 B     | A 6000, B 67 535, C 9000      | B100    |
///
/// All are queue-full drops at the arrival instant; everything else departs.
#[test]
fn overflow_drops_the_head_of_the_fattest_queue() {
    let mut arrivals: Vec<_> = (0..7).map(|i| (i, 1500, 0)).collect();
    arrivals.extend((100..104).map(|i| (i, 500, 0)));
    arrivals.push((1000, 100, 0));
    arrivals.push((1001, 9000, 0));
    arrivals.push((104, 65_535, 0));
    let mut p = build_pipeline::<()>(&fq_link(QueueLimit::Packets(10)), 1).unwrap();
    let ev = run_pipeline_of(&mut p, &arrivals, packet);
    assert_eq!(
        pipeline_drops(&ev),
        vec![
            (1, DropReason::QueueFull, 0),
            (2, DropReason::QueueFull, 0),
            (1000, DropReason::QueueFull, 0),
            (100, DropReason::QueueFull, 0)
        ]
    );
    assert!(ev
        .iter()
        .all(|e| !matches!(e, PipelineEvent::Dropped { at, .. } if *at != 0)));
    assert_eq!(departures(&ev).len(), arrivals.len() - 4);

    // The arriving packet itself goes when its own queue, holding only it, is the fattest.
    let arrivals = vec![(0, 1500, 0), (1, 1500, 0), (1000, 9000, 0)];
    let mut p = build_pipeline::<()>(&fq_link(QueueLimit::Packets(2)), 1).unwrap();
    let ev = run_pipeline_of(&mut p, &arrivals, packet);
    assert_eq!(pipeline_drops(&ev), vec![(1000, DropReason::QueueFull, 0)]);
}

/// Each queue has its own CoDel: bulk flow A keeps a standing queue (a burst of 21 at 0,
/// then one packet per ms to 900 ms, the link's rate: the CoDel test's scenario) and CoDel
/// drops from it, while flow C (100 B every 50 ms) is never dropped and never waits more
/// than the packet on the wire plus its own 66.7 µs.
#[test]
fn codel_per_queue_drops_the_bulk_flow_only() {
    let mut arrivals: Vec<(u64, u32, u64)> = (0..21).map(|i| (i, 1500, 0)).collect();
    let bulk = (1..=900).map(|k| (20 + k, 1500, k * MS));
    let sparse = (1..=18u64).map(|k| (1000 + k, 100, k * 50 * MS + MS / 4));
    arrivals.extend(bulk.chain(sparse));
    arrivals.sort_by_key(|a| (a.2, a.0));
    let spec = DirectionSpec {
        rate: Some(RateSpec::Constant {
            bits_per_sec: 12_000_000,
        }),
        queue: QueueSpec::new(DisciplineSpec::FqCodel(FqCodelParams {
            quantum: 1500,
            codel: CodelParams::default(),
            flows: 1024,
        })),
        ..Default::default()
    };
    let flow =
        |id: u64| Packet::new(id, if id >= 1000 { 100 } else { 1500 }, ()).with_flow(if id >= 1000 { C } else { A });
    let ev = run_pipeline_of(&mut build_pipeline::<()>(&spec, 1).unwrap(), &arrivals, |id, _| {
        flow(id)
    });
    let drops = drops_with(&ev, DropReason::AqmDrop);
    assert!(!drops.is_empty() && drops.iter().all(|d| d.0 < 1000), "{drops:?}");
    for &(id, _, at) in departures(&ev).iter().filter(|d| d.0 >= 1000) {
        let arrived = arrivals.iter().find(|a| a.0 == id).unwrap().2;
        assert!(
            at - arrived <= MS + 66_667,
            "sparse packet {id} waited {} ns",
            at - arrived
        );
    }
}
