//! ECN in the link model: a queue with `ecn` on marks ECN-capable packets (ECT(0), ECT(1),
//! CE) where it would drop them, and drops not-ECT packets as before; the mark is an event
//! of its own (pipeline, plain direction, leg of a multipath direction) and the packet
//! departs with CE.
mod common;
use common::*;

use linkem::queue::codel::CodelParams;
use linkem::queue::fq_codel::FqCodelParams;
use linkem::queue::pie::PieParams;
use linkem::queue::red::RedParams;
use linkem::spec::{
    build_direction, build_pipeline, AnyDirectionSpec, DirectionSpec, DisciplineSpec, MergeSpec, MultipathSpec,
    QueueSpec, RateSpec, SplitSpec,
};
use linkem::{DirectionEvent, DropReason, Ecn, Mark, Packet, PipelineEvent};

const MS: u64 = 1_000_000;

/// The CoDel scenario of tests/aqm_codel.rs: a burst of 21 packets, then one per ms to
/// 1000 ms, at 12 Mbit/s (1 ms per packet).
fn standing_queue() -> Vec<(u64, u32, u64)> {
    let mut a: Vec<_> = (0..21).map(|i| (i, 1500, 0)).collect();
    a.extend((1..=1000).map(|k| (20 + k, 1500, k * MS)));
    a
}

fn link(discipline: DisciplineSpec, ecn: bool) -> DirectionSpec {
    DirectionSpec {
        rate: Some(RateSpec::Constant {
            bits_per_sec: 12_000_000,
        }),
        queue: QueueSpec::new(discipline).with_ecn(ecn),
        ..Default::default()
    }
}

fn disciplines() -> Vec<DisciplineSpec> {
    vec![
        DisciplineSpec::Codel(CodelParams::default()),
        DisciplineSpec::FqCodel(FqCodelParams::default()),
        DisciplineSpec::Pie(PieParams {
            alpha: 10_000.0,
            beta: 0.0,
            mark_ecnth: 1.0,
            ..PieParams::default()
        }),
        DisciplineSpec::Red(RedParams {
            w_q: 0.2,
            ..RedParams::default()
        }),
    ]
}

/// Packets with the codepoints in turn: ECT(0), not-ECT, ECT(1), not-ECT, CE.
fn mixed(id: u64, size: u32) -> Packet<()> {
    let ecn = [Ecn::Ect0, Ecn::NotEct, Ecn::Ect1, Ecn::NotEct, Ecn::Ce][(id % 5) as usize];
    Packet::new(id, size, ()).with_ecn(ecn)
}

/// For each AQM: with mixed traffic, every AQM drop is of a not-ECT packet and every mark
/// of an ECN-capable one; both happen; a marked packet departs with CE (a CE packet
/// stays CE, its mark says it came as CE), the others with their own codepoint.
#[test]
fn marks_for_ect_drops_for_not_ect() {
    for d in disciplines() {
        let name = d.name();
        let ev = run_pipeline_of(
            &mut build_pipeline::<()>(&link(d, true), 3).unwrap(),
            &standing_queue(),
            mixed,
        );
        let dropped = drops_with(&ev, DropReason::AqmDrop);
        let marked: Vec<Mark> = ev
            .iter()
            .filter_map(|e| match e {
                PipelineEvent::Marked { mark, stage: 0, .. } => Some(*mark),
                PipelineEvent::Marked { .. } => panic!("marked by another stage"),
                _ => None,
            })
            .collect();
        assert!(
            !dropped.is_empty() && !marked.is_empty(),
            "{name}: {} drops, {} marks",
            dropped.len(),
            marked.len()
        );
        assert!(
            dropped.iter().all(|&(id, _)| mixed(id, 0).ecn == Ecn::NotEct),
            "{name}: an ECN-capable packet dropped"
        );
        assert!(
            marked
                .iter()
                .all(|m| m.from == mixed(m.id, 0).ecn && m.from.is_capable()),
            "{name}: {marked:?}"
        );
        let mut seen = std::collections::HashSet::new();
        assert!(
            marked.iter().all(|m| seen.insert(m.id)),
            "{name}: a packet marked twice"
        );
        for (id, _, ecn) in departed(&ev) {
            let want = if seen.contains(&id) { Ecn::Ce } else { mixed(id, 0).ecn };
            assert_eq!(ecn, want, "{name}: packet {id}");
        }
        assert!(
            marked.iter().any(|m| m.from == Ecn::Ce) && marked.iter().any(|m| m.from == Ecn::Ect1),
            "{name}"
        );
    }
}

/// ECN on changes nothing for not-ECT traffic: the same events, drop for drop.
#[test]
fn ecn_on_without_ect_packets_is_ecn_off() {
    for d in disciplines() {
        let run = |ecn| {
            run_pipeline(
                &mut build_pipeline::<()>(&link(d.clone(), ecn), 3).unwrap(),
                &standing_queue(),
            )
        };
        let off = run(false);
        assert!(!drops_with(&off, DropReason::AqmDrop).is_empty(), "{}", d.name());
        assert_eq!(run(true), off, "{}", d.name());
    }
}

/// With ECN off, ECT packets are dropped like any other (the same events as not-ECT
/// traffic, codepoints aside).
#[test]
fn ecn_off_drops_ect_packets() {
    for d in disciplines() {
        let spec = link(d.clone(), false);
        let plain = run_pipeline(&mut build_pipeline::<()>(&spec, 3).unwrap(), &standing_queue());
        let ect = run_pipeline_of(
            &mut build_pipeline::<()>(&spec, 3).unwrap(),
            &standing_queue(),
            |id, size| Packet::new(id, size, ()).with_ecn(Ecn::Ect0),
        );
        assert!(marks(&ect).is_empty());
        assert_eq!(
            drops_with(&ect, DropReason::AqmDrop),
            drops_with(&plain, DropReason::AqmDrop),
            "{}",
            d.name()
        );
    }
}

/// A plain direction reports `Marked`, a leg of a multipath direction `LegMarked` with the
/// leg; the marked packet leaves the direction CE.
#[test]
fn directions_report_marks() {
    let codel = link(DisciplineSpec::Codel(CodelParams::default()), true);
    let ect = |id: u64, at: u64| (Packet::new(id, 1500, ()).with_ecn(Ecn::Ect0), at);
    let drive = |spec: AnyDirectionSpec| {
        let mut d = build_direction::<()>(&spec, 3).unwrap();
        let mut ev = Vec::new();
        for (id, _, at) in standing_queue() {
            while let Some(e) = d.step(at) {
                ev.push(e);
            }
            let (p, at) = ect(id, at);
            d.push(p, at);
        }
        while let Some(e) = d.step(u64::MAX) {
            ev.push(e);
        }
        ev
    };
    let ev = drive(AnyDirectionSpec::Single(codel.clone()));
    let m: Vec<u64> = ev
        .iter()
        .filter_map(|e| {
            if let DirectionEvent::Marked { mark, .. } = e {
                Some(mark.id)
            } else {
                None
            }
        })
        .collect();
    assert_eq!(m.len(), 28, "the marks of tests/aqm_codel.rs");
    let ce = ev
        .iter()
        .filter(|e| matches!(e, DirectionEvent::Departed { packet, .. } if packet.ecn == Ecn::Ce))
        .count();
    assert_eq!(ce, 28);

    // The same CoDel leg as leg 2 of a multipath direction whose split sends it everything.
    let spec = MultipathSpec {
        legs: vec![DirectionSpec::default(), codel],
        split: SplitSpec::Batch {
            batch: 1,
            ratio: linkem::spec::Ratio::FirstLeg(0.0),
        },
        merge: MergeSpec::default(),
    };
    let ev = drive(AnyDirectionSpec::Multipath(spec));
    let leg_marks: Vec<u64> = ev
        .iter()
        .filter_map(|e| match e {
            DirectionEvent::LegMarked { leg: 1, mark, .. } => Some(mark.id),
            DirectionEvent::LegMarked { .. } | DirectionEvent::Marked { .. } => panic!("{e:?}"),
            _ => None,
        })
        .collect();
    assert_eq!(leg_marks, m);
    let ce = ev
        .iter()
        .filter(|e| matches!(e, DirectionEvent::Departed { packet, .. } if packet.ecn == Ecn::Ce))
        .count();
    assert_eq!(ce, 28);
}
