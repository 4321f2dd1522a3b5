//! `build`: every name, refused names, refused parameters, MTU handling.

mod common;

use common::*;
use congestion::{build, Params, NAMES};

fn params(pairs: &[(&str, &str)]) -> Params {
    pairs.iter().map(|&(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn builds_every_name_with_defaults() {
    // Initial windows: RFC 9002's min(10·1200, max(14720, 2400)) = 12000 for all but
    // LEDBAT, which starts at RFC 6817's INIT_CWND = 2 MSS = 2400.
    for &name in NAMES {
        let c = build(name, &Params::new(), MSS, 0).unwrap();
        assert_eq!(c.name(), name);
        let expected = if name == "ledbat" { 2_400 } else { 12_000 };
        assert_eq!(c.window(), expected, "{name}");
        assert_eq!(c.ssthresh(), None, "{name}");
        assert_eq!(c.pacing_rate(), None, "{name}");
        assert_eq!(c.box_clone().window(), expected);
    }
    assert_eq!(NAMES.len(), 5);
}

#[test]
fn builds_with_every_documented_key() {
    let cases: &[(&str, &[(&str, &str)])] = &[
        ("newreno", &[]),
        ("cubic", &[("variant", "chromium")]),
        ("cubic", &[("variant", "rfc9438")]),
        ("vegas", &[("alpha", "1"), ("beta", "3"), ("gamma", "0.5")]),
        ("ledbat", &[("flavour", "libtorrent"), ("target", "25")]),
        ("ledbat", &[("flavour", "libutp"), ("target", "100")]),
        (
            "delay-correlation",
            &[
                ("variant", "chromium"),
                ("window", "64"),
                ("threshold", "0.95"),
                ("seed", "42"),
                ("dither_small", "3"),
                ("dither_large_min", "8"),
                ("dither_large_divisor", "20"),
            ],
        ),
    ];
    for (name, pairs) in cases {
        build(name, &params(pairs), MSS, 0).unwrap_or_else(|e| panic!("{name} {pairs:?}: {e}"));
    }
}

#[test]
fn unknown_name_is_refused_on_field_cc() {
    let error = build("bbr", &Params::new(), MSS, 0).err().unwrap();
    assert_eq!((error.field.as_str(), error.value.as_str()), ("cc", "bbr"));
    assert!(
        error
            .problem
            .contains("newreno, cubic, vegas, ledbat, delay-correlation"),
        "{}",
        error.problem
    );
    assert_eq!(error.to_string(), format!("cc: {} (got \"bbr\")", error.problem));
}

#[test]
fn bad_parameters_are_refused_on_their_key() {
    let cases: &[(&str, (&str, &str), &str)] = &[
        ("newreno", ("alpha", "2"), "unknown parameter for newreno"),
        ("cubic", ("variant", "bic"), "must be one of rfc9438, chromium"),
        ("cubic", ("beta", "0.5"), "unknown parameter for cubic (known: variant)"),
        ("vegas", ("alpha", "-1"), "out of range"),
        ("vegas", ("gamma", "lots"), "not a number"),
        ("vegas", ("alpha", "5"), "must not exceed beta"),
        ("ledbat", ("flavour", "utorrent"), "must be one of libutp, libtorrent"),
        ("ledbat", ("target", "0"), "out of range"),
        ("delay-correlation", ("threshold", "1.5"), "out of range"),
        ("delay-correlation", ("window", "2"), "out of range"),
        ("delay-correlation", ("window", "3.5"), "not a number"),
        ("delay-correlation", ("seed", "-1"), "not a number"),
        ("delay-correlation", ("dither_large_divisor", "0"), "out of range"),
        (
            "delay-correlation",
            ("wlen", "32"),
            "unknown parameter for delay-correlation",
        ),
    ];
    for &(name, (key, value), problem) in cases {
        let error = build(name, &params(&[(key, value)]), MSS, 0)
            .err()
            .unwrap_or_else(|| panic!("{name} accepted {key}={value}"));
        assert_eq!(error.field, format!("cc_params.{key}"), "{name}");
        assert_eq!(error.value, value);
        assert!(
            error.problem.contains(problem),
            "{name} {key}={value}: {}",
            error.problem
        );
    }
}

#[test]
fn zero_mtu_is_refused() {
    let error = build("cubic", &Params::new(), 0, 0).err().unwrap();
    assert_eq!(error.field, "mtu");
}

#[test]
fn on_mtu_updates_the_segment_size() {
    // Before any traffic the initial window follows the new MSS (1460: 14600, Vegas
    // 10 packets × 1460, LEDBAT 2 × 1460 = 2920); afterwards the minimum window does:
    // persistent congestion leaves exactly 2·MSS = 2920.
    for &name in NAMES {
        let mut c = build(name, &Params::new(), MSS, 0).unwrap();
        c.on_mtu(mtu(1460));
        let expected = if name == "ledbat" { 2_920 } else { 14_600 };
        assert_eq!(c.window(), expected, "{name}");
        c.on_loss(&persistent_loss(SECOND, SECOND - 1));
        assert_eq!(c.window(), 2_920, "{name}");
    }
}

#[test]
fn only_layers_with_state_report_diagnostics() {
    assert!(build("newreno", &Params::new(), MSS, 0)
        .unwrap()
        .diagnostics()
        .is_empty());
    let dc = build("delay-correlation", &Params::new(), MSS, 0).unwrap();
    let keys: Vec<&str> = dc.diagnostics().iter().map(|(k, _)| *k).collect();
    assert_eq!(keys, ["clamp_active", "samples_taken"]);
}
