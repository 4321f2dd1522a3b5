//! The composed pipeline built from a spec: exact timelines, validation, seeds.
mod common;
use common::*;

use linkem::rng::derive_seed;
use linkem::spec::{build_pipeline, validate, DirectionSpec, Distribution, JitterSpec, LossSpec, QueueLimit, RateSpec};
use linkem::{DropReason, Packet, PipelineEvent};

const MS: u64 = 1_000_000;

#[test]
fn ideal_spec_is_an_empty_pipeline() {
    let mut p = build_pipeline::<()>(&DirectionSpec::default(), 1).unwrap();
    assert_eq!(p.next_due(), None);
    assert_eq!(
        p.push(Packet::new(1, 1500, ()), 42),
        Some(PipelineEvent::Departed {
            packet: Packet::new(1, 1500, ()),
            at: 42
        })
    );
    // Ideal values of present fields are omitted too (loss 0, jitter 0, queue w/o rate).
    let spec = DirectionSpec {
        loss: Some(LossSpec::Bernoulli { p: 0.0 }),
        jitter: Some(JitterSpec {
            amount: 0,
            distribution: Distribution::Normal,
            reorder: false,
        }),
        queue: QueueLimit::Packets(10).into(),
        ..Default::default()
    };
    let mut p = build_pipeline::<()>(&spec, 1).unwrap();
    assert!(matches!(
        p.push(Packet::new(1, 1500, ()), 42),
        Some(PipelineEvent::Departed { at: 42, .. })
    ));
}

/// Rate + queue + delay: due = serialisation finish + delay, exactly.
#[test]
fn departure_is_finish_plus_delay() {
    let spec = DirectionSpec {
        rate: Some(RateSpec::Constant {
            bits_per_sec: 7_000_000,
        }),
        queue: QueueLimit::Packets(100).into(),
        delay: 20 * MS + 3,
        ..Default::default()
    };
    let mut p = build_pipeline::<()>(&spec, 5).unwrap();
    // A burst of 10 at t0, then an isolated packet much later.
    let t0 = 1_000;
    let mut arrivals: Vec<_> = (0..10).map(|i| (i, 1500, t0)).collect();
    arrivals.push((10, 700, 500 * MS));
    let ev = run_pipeline(&mut p, &arrivals);
    // Finish of the k-th 1500 B packet at 7 Mbit/s: t0 + ⌊k·12 000·10⁹/(7·10⁶)⌋.
    let mut want: Vec<_> = (0..10u64)
        .map(|i| {
            (
                i,
                false,
                t0 + ((i as u128 + 1) * 12_000_000_000_000 / 7_000_000) as u64 + 20 * MS + 3,
            )
        })
        .collect();
    want.push((
        10,
        false,
        500 * MS + (5600u128 * 1_000_000_000 / 7_000_000) as u64 + 20 * MS + 3,
    ));
    assert_eq!(departures(&ev), want);
}

/// Trace + delay, through the pipeline.
#[test]
fn trace_then_delay() {
    let spec = DirectionSpec {
        rate: Some(RateSpec::Trace {
            opportunities_ms: vec![10, 20, 30],
            offset_ns: 0,
        }),
        delay: 5 * MS,
        ..Default::default()
    };
    let mut p = build_pipeline::<()>(&spec, 5).unwrap();
    let ev = run_pipeline(&mut p, &[(0, 1000, 0), (1, 1000, 0), (2, 1000, 0), (3, 100, 25 * MS)]);
    assert_eq!(
        departures(&ev),
        vec![
            (0, false, 15 * MS),
            (1, false, 25 * MS),
            (2, false, 25 * MS),
            (3, false, 35 * MS)
        ]
    );
}

/// The driver may step late: departures keep their model times.
#[test]
fn late_stepping_does_not_change_the_timeline() {
    let spec = DirectionSpec {
        rate: Some(RateSpec::Constant {
            bits_per_sec: 10_000_000,
        }),
        delay: 10 * MS,
        ..Default::default()
    };
    let mut p = build_pipeline::<()>(&spec, 5).unwrap();
    for i in 0..5 {
        assert!(p.push(Packet::new(i, 1500, ()), 0).is_none());
    }
    let mut out = Vec::new();
    while let Some(PipelineEvent::Departed { packet, at }) = p.step(1_000 * MS) {
        out.push((packet.id, at));
    }
    assert_eq!(
        out,
        (0..5).map(|i| (i, (i + 1) * 1_200_000 + 10 * MS)).collect::<Vec<_>>()
    );
}

/// Drops are attributed to the right stage index in the built pipeline.
#[test]
fn drops_name_their_stage() {
    let spec = DirectionSpec {
        loss: Some(LossSpec::Bernoulli { p: 0.5 }),
        rate: Some(RateSpec::Constant {
            bits_per_sec: 1_000_000,
        }),
        queue: QueueLimit::Packets(5).into(),
        delay: MS,
        ..Default::default()
    };
    let mut p = build_pipeline::<()>(&spec, 8).unwrap();
    let ev = run_pipeline(&mut p, &(0..200).map(|i| (i, 1500, 0)).collect::<Vec<_>>());
    let d = pipeline_drops(&ev);
    assert!(d.iter().any(|&(_, r, s)| r == DropReason::RandomLoss && s == 0));
    assert!(d.iter().any(|&(_, r, s)| r == DropReason::QueueFull && s == 1));
    assert!(d.iter().all(|&(_, r, s)| (r == DropReason::RandomLoss) == (s == 0)));
    assert_eq!(departures(&ev).len(), 5);
}

fn impaired() -> DirectionSpec {
    DirectionSpec {
        rate: Some(RateSpec::Constant {
            bits_per_sec: 50_000_000,
        }),
        queue: QueueLimit::Packets(30).into(),
        delay: 10 * MS,
        jitter: Some(JitterSpec {
            amount: 2 * MS,
            distribution: Distribution::Paretonormal,
            reorder: true,
        }),
        loss: Some(LossSpec::GilbertElliott {
            p: 0.02,
            r: 0.3,
            h: 0.4,
            k: 0.995,
        }),
        duplicate: 0.05,
    }
}

#[test]
fn same_seed_same_decisions_different_seed_different() {
    let arrivals: Vec<_> = (0..20_000).map(|i| (i, 1200, i * 150_000)).collect();
    let run = |seed| {
        let mut p = build_pipeline::<()>(&impaired(), seed).unwrap();
        run_pipeline(&mut p, &arrivals)
    };
    let a = run(derive_seed(1, 0));
    assert_eq!(a, run(derive_seed(1, 0)));
    assert_ne!(a, run(derive_seed(1, 1)));
    assert_ne!(a, run(derive_seed(2, 0)));
    // Sanity: every kind of event happened.
    assert!(departures(&a).iter().any(|d| d.1), "a copy departed");
    assert!(pipeline_drops(&a).iter().any(|d| d.1 == DropReason::RandomLoss));
}

/// Stage streams are independent: removing duplication does not change loss decisions.
#[test]
fn stage_streams_do_not_shift_each_other() {
    let arrivals: Vec<_> = (0..20_000).map(|i| (i, 1200, i * 150_000)).collect();
    let lost = |spec: &DirectionSpec| {
        let mut p = build_pipeline::<()>(spec, 3).unwrap();
        let mut v: Vec<u64> = pipeline_drops(&run_pipeline(&mut p, &arrivals))
            .into_iter()
            .filter(|d| d.1 == DropReason::RandomLoss)
            .map(|d| d.0)
            .collect();
        v.dedup();
        v
    };
    let a = impaired();
    let b = DirectionSpec {
        duplicate: 0.0,
        jitter: None,
        ..impaired()
    };
    assert_eq!(lost(&a), lost(&b));
}

#[test]
fn invalid_specs_are_refused_with_a_reason() {
    let bad = [
        DirectionSpec {
            duplicate: 1.5,
            ..Default::default()
        },
        DirectionSpec {
            duplicate: f64::NAN,
            ..Default::default()
        },
        DirectionSpec {
            loss: Some(LossSpec::Bernoulli { p: -0.1 }),
            ..Default::default()
        },
        DirectionSpec {
            loss: Some(LossSpec::GilbertElliott {
                p: 0.1,
                r: 2.0,
                h: 0.0,
                k: 1.0,
            }),
            ..Default::default()
        },
        DirectionSpec {
            rate: Some(RateSpec::Constant { bits_per_sec: 0 }),
            ..Default::default()
        },
        DirectionSpec {
            rate: Some(RateSpec::Trace {
                opportunities_ms: vec![],
                offset_ns: 0,
            }),
            ..Default::default()
        },
        DirectionSpec {
            rate: Some(RateSpec::Trace {
                opportunities_ms: vec![0],
                offset_ns: 0,
            }),
            ..Default::default()
        },
        DirectionSpec {
            rate: Some(RateSpec::Trace {
                opportunities_ms: vec![5, 3],
                offset_ns: 0,
            }),
            ..Default::default()
        },
        DirectionSpec {
            rate: Some(RateSpec::Constant { bits_per_sec: 1 }),
            queue: QueueLimit::Packets(0).into(),
            ..Default::default()
        },
    ];
    for s in &bad {
        let e = validate(s).unwrap_err();
        assert!(!e.is_empty());
        assert_eq!(build_pipeline::<()>(s, 0).err(), Some(e));
    }
    assert!(validate(&impaired()).is_ok());
}
