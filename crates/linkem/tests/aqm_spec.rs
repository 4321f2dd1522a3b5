//! The queue of a direction as the engine's configuration carries it (JSON; serde
//! feature, on in the workspace build: `cargo test -p linkem --features serde`), its
//! validation, and drop-head.
mod common;
use common::*;

use linkem::queue::codel::CodelParams;
use linkem::queue::pie::PieParams;
use linkem::queue::QueueLimit;
use linkem::spec::{build_pipeline, validate, DirectionSpec, DisciplineSpec, QueueSpec, RateSpec};
use linkem::DropReason;

#[cfg(feature = "serde")]
mod json {
    use super::*;
    use linkem::queue::fq_codel::FqCodelParams;
    use linkem::queue::red::RedParams;

    const MS: u64 = 1_000_000;

    fn queue(json: &str) -> Result<QueueSpec, String> {
        let spec: DirectionSpec =
            serde_json::from_str(&format!(r#"{{"queue": {json}}}"#)).map_err(|e| e.to_string())?;
        validate(&spec)?;
        Ok(spec.queue)
    }

    /// The forms from before disciplines existed are drop-tail, exactly as before.
    #[test]
    fn old_forms_are_drop_tail() {
        assert_eq!(queue(r#""unlimited""#), Ok(QueueSpec::drop_tail(QueueLimit::Unlimited)));
        assert_eq!(
            queue(r#"{"packets": 100}"#),
            Ok(QueueSpec::drop_tail(QueueLimit::Packets(100)))
        );
        assert_eq!(
            queue(r#"{"bytes": 150000}"#),
            Ok(QueueSpec::drop_tail(QueueLimit::Bytes(150000)))
        );
        let spec: DirectionSpec = serde_json::from_str("{}").unwrap();
        assert_eq!(spec.queue, QueueSpec::drop_tail(QueueLimit::Unlimited));
        assert_eq!(
            queue(r#"{"discipline": "drop_tail", "packets": 100}"#),
            queue(r#"{"packets": 100}"#)
        );
        // And they are written back in the same forms.
        for s in [r#""unlimited""#, r#"{"packets":100}"#, r#"{"bytes":150000}"#] {
            assert_eq!(serde_json::to_string(&queue(s).unwrap()).unwrap(), s);
        }
    }

    #[test]
    fn disciplines_with_parameters_and_defaults() {
        let codel = queue(
            r#"{"discipline": "codel", "packets": 1000, "target_ns": 5000000, "interval_ns": 100000000, "ecn": true}"#,
        );
        assert_eq!(
            codel,
            Ok(QueueSpec::new(DisciplineSpec::Codel(CodelParams::default())).with_ecn(true))
        );
        let c = queue(r#"{"discipline": "codel", "target_ns": 1000000}"#).unwrap();
        assert_eq!(c.limit, QueueLimit::Packets(1000));
        assert!(!c.ecn);
        assert_eq!(
            c.discipline,
            DisciplineSpec::Codel(CodelParams {
                target: MS,
                ..CodelParams::default()
            })
        );
        let fq =
            queue(r#"{"discipline": "fq_codel", "flows": 64, "quantum_bytes": 300, "interval_ns": 50000000}"#).unwrap();
        assert_eq!(fq.limit, QueueLimit::Packets(10240));
        assert_eq!(
            fq.discipline,
            DisciplineSpec::FqCodel(FqCodelParams {
                flows: 64,
                quantum: 300,
                codel: CodelParams {
                    interval: 50 * MS,
                    ..CodelParams::default()
                }
            })
        );
        let pie =
            queue(r#"{"discipline": "pie", "bytes": 300000, "alpha": 0.25, "max_burst_ns": 0, "mark_ecnth": 0.2}"#)
                .unwrap();
        assert_eq!(pie.limit, QueueLimit::Bytes(300_000));
        assert_eq!(
            pie.discipline,
            DisciplineSpec::Pie(PieParams {
                alpha: 0.25,
                max_burst: 0,
                mark_ecnth: 0.2,
                ..PieParams::default()
            })
        );
        let red = queue(r#"{"discipline": "red", "min_th": 10, "max_th": 30, "gentle": false}"#).unwrap();
        assert_eq!(
            red.discipline,
            DisciplineSpec::Red(RedParams {
                min_th: 10.0,
                max_th: 30.0,
                gentle: false,
                ..RedParams::default()
            })
        );
        assert_eq!(
            queue(r#"{"discipline": "drop_head", "packets": 5}"#)
                .unwrap()
                .discipline,
            DisciplineSpec::DropHead(Default::default())
        );
        // Every discipline round-trips through its JSON.
        for q in [codel.unwrap(), fq, pie, red] {
            let json = serde_json::to_string(&q).unwrap();
            assert_eq!(queue(&json), Ok(q), "{json}");
        }
    }

    /// Mistakes are refused with the field named.
    #[test]
    fn errors_name_the_field() {
        let err = |json: &str, needle: &str| {
            let e = queue(json).unwrap_err();
            assert!(e.contains(needle), "{json}: {e:?} does not mention {needle:?}");
        };
        err(r#"{"discipline": "codel", "intervl_ns": 5}"#, "intervl_ns");
        err(
            r#"{"discipline": "red", "interval_ns": 5}"#,
            "`interval_ns` is not a parameter of discipline red",
        );
        err(r#"{"discipline": "cdoel"}"#, "cdoel");
        err(r#"{"packets": 5, "bytes": 5}"#, "not both");
        err(r#"{"target_ns": 5}"#, "needs a `discipline`");
        err(r#"{"packets": 5, "ecn": true}"#, "ecn");
        err(r#"{"discipline": "drop_tail", "ecn": true}"#, "queue.ecn");
        err(r#""codel""#, "codel");
        err(r#"{}"#, "give `packets`");
        err(
            r#"{"discipline": "codel", "interval_ns": 0}"#,
            "queue.interval_ns must be > 0",
        );
        err(r#"{"discipline": "pie", "t_update_ns": 0}"#, "queue.t_update_ns");
        // The shared checks' whole messages.
        for (discipline, field, message) in [
            ("pie", r#""beta": -1"#, "queue.beta must be a number ≥ 0 (1/s), got -1"),
            (
                "red",
                r#""min_th": -2"#,
                "queue.min_th must be a number ≥ 0 (packets), got -2",
            ),
            ("red", r#""w_q": 0"#, "queue.w_q must be in (0, 1], got 0"),
            ("red", r#""avpkt_bytes": 0"#, "queue.avpkt_bytes must be > 0, got 0"),
        ] {
            err(&format!(r#"{{"discipline": "{discipline}", {field}}}"#), message);
        }
        err(r#"{"discipline": "red", "min_th": 20, "max_th": 10}"#, "queue.max_th");
        err(r#"{"discipline": "red", "max_p": 1.5}"#, "queue.max_p");
        err(r#"{"discipline": "fq_codel", "flows": 0}"#, "queue.flows");
        err(
            r#"{"discipline": "fq_codel", "quantum_bytes": 0}"#,
            "queue.quantum_bytes",
        );
        err(r#"{"discipline": "codel", "packets": 0}"#, "0 packets");
        err(
            r#"{"discipline": "codel", "target_ns": "5ms"}"#,
            "queue.target_ns: invalid type",
        );
        err(r#"{"discipline": "codel", "packets": -1}"#, "queue.packets");
        err(
            r#"{"discipline": "codel", "ecn": true, "ecn": false}"#,
            "queue.ecn: given twice",
        );
    }
}

/// Each discipline's class: whether it is an AQM, serves in arrival order, marks L4S,
/// and the limit it has when none is given.
#[test]
fn classes_of_the_disciplines() {
    use linkem::spec::queue::DISCIPLINES;
    let mut got: Vec<_> = DISCIPLINES
        .iter()
        .map(|c| (c.name, c.aqm, c.fifo, c.l4s, c.default_limit))
        .collect();
    let packets = QueueLimit::Packets;
    let unlimited = QueueLimit::Unlimited;
    let mut want = vec![
        ("drop_tail", false, true, false, unlimited),
        ("drop_head", false, true, false, unlimited),
        ("codel", true, true, false, packets(1000)),
        ("fq_codel", true, false, false, packets(10_240)),
        ("pie", true, true, false, packets(1000)),
        ("red", true, true, false, packets(1000)),
        ("dualpi2", true, false, true, packets(10_000)),
    ];
    got.sort_by_key(|c| c.0);
    want.sort_by_key(|c| c.0);
    assert_eq!(got, want);
}

/// An AQM needs a limit; drop-tail and drop-head may be unlimited.
#[test]
fn validation_without_json() {
    let spec = |queue: QueueSpec| DirectionSpec {
        rate: Some(RateSpec::Constant {
            bits_per_sec: 1_000_000,
        }),
        queue,
        ..Default::default()
    };
    let codel = QueueSpec::new(DisciplineSpec::Codel(CodelParams::default()));
    assert!(validate(&spec(codel.clone())).is_ok());
    let e = validate(&spec(codel.with_limit(QueueLimit::Unlimited))).unwrap_err();
    assert!(e.contains("codel needs a limit"), "{e}");
    assert!(validate(&spec(QueueSpec::new(DisciplineSpec::DropHead(Default::default())))).is_ok());
    let e = validate(&spec(QueueSpec::drop_tail(QueueLimit::Packets(5)).with_ecn(true))).unwrap_err();
    assert!(e.contains("queue.ecn"), "{e}");
    assert!(build_pipeline::<()>(
        &spec(QueueSpec::new(DisciplineSpec::Pie(PieParams {
            alpha: f64::NAN,
            ..PieParams::default()
        }))),
        0
    )
    .is_err());
}

/// Drop-head: a full queue drops its oldest waiting packet to admit the newcomer. 10 Mbit/s
/// (1.2 ms per packet), limit 5 (the packet on the wire counts): of a burst of 20 at 0,
/// packet 0 goes on the wire, 1–4 wait; each of 5–19 pushes the oldest waiting one out
/// (1, 2, … 15, at 0, queue-full), so 0 and 16–19 depart, at 1.2, 2.4, … 6 ms.
#[test]
fn drop_head_drops_the_oldest() {
    let spec = DirectionSpec {
        rate: Some(RateSpec::Constant {
            bits_per_sec: 10_000_000,
        }),
        queue: QueueSpec::new(DisciplineSpec::DropHead(Default::default())).with_limit(QueueLimit::Packets(5)),
        ..Default::default()
    };
    let ev = run_pipeline(
        &mut build_pipeline::<()>(&spec, 1).unwrap(),
        &(0..20).map(|i| (i, 1500, 0)).collect::<Vec<_>>(),
    );
    assert_eq!(
        pipeline_drops(&ev),
        (1..=15).map(|i| (i, DropReason::QueueFull, 0)).collect::<Vec<_>>()
    );
    let want: Vec<_> = [0, 16, 17, 18, 19]
        .iter()
        .enumerate()
        .map(|(k, &id)| (id, false, (k as u64 + 1) * 1_200_000))
        .collect();
    assert_eq!(departures(&ev), want);
    // Drop-tail keeps the first five instead.
    let tail = DirectionSpec {
        queue: QueueLimit::Packets(5).into(),
        ..spec
    };
    let ev = run_pipeline(
        &mut build_pipeline::<()>(&tail, 1).unwrap(),
        &(0..20).map(|i| (i, 1500, 0)).collect::<Vec<_>>(),
    );
    assert_eq!(
        departures(&ev).iter().map(|d| d.0).collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4]
    );
}
