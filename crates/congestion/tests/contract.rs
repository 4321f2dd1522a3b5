//! The congestion controllers against contracts/contract.json, the file the Python side
//! validates scenarios with: the QUIC controllers implemented here are exactly
//! [`congestion::NAMES`], in order, and each one's parameters are exactly what its code
//! reads ([`congestion::parameters`]): names, kinds, defaults, bounds and choices. The
//! file's values, written as the Python side writes `cc_params`, are accepted by `build`.

use congestion::{build, parameters, Kind, Params, NAMES};
use serde_json::Value;

const MSS: u64 = 1200;

fn contract() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../contracts/contract.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn quic_controllers(contract: &Value) -> &Vec<Value> {
    contract["controllers"]["quic"]
        .as_array()
        .expect("controllers.quic is a list")
}

/// The QUIC controllers this crate implements (implementation "congestion"), each with its
/// name.
fn ours(contract: &Value) -> Vec<(&str, &Value)> {
    quic_controllers(contract)
        .iter()
        .filter(|c| c["implementation"] == "congestion")
        .map(|c| (c["name"].as_str().unwrap_or_else(|| panic!("name of {c}")), c))
        .collect()
}

/// A JSON value as the Python side passes it in `--cc-param key=value` (`str(value)`).
fn as_param_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => panic!("a parameter value is a number or a word, not {other}"),
    }
}

/// Whether the code's text of a value (`Display` of the number it reads) means the same
/// value as the file's. Integers compare exactly (a u64 seed does not fit an f64).
fn same_value(code: &str, file: &Value) -> bool {
    match file {
        Value::String(s) => code == s,
        Value::Number(n) => match (n.as_u64(), code.parse::<u64>()) {
            (Some(a), Ok(b)) => a == b,
            _ => n.as_f64().is_some_and(|a| code.parse::<f64>() == Ok(a)),
        },
        _ => false,
    }
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Integer => "integer",
        Kind::Number => "number",
        Kind::Choice => "choice",
    }
}

#[test]
fn quic_controllers_here_are_exactly_names() {
    let contract = contract();
    let names: Vec<&str> = ours(&contract).into_iter().map(|(name, _)| name).collect();
    assert_eq!(
        names, NAMES,
        "controllers.quic with implementation \"congestion\" vs congestion::NAMES"
    );
    for c in quic_controllers(&contract) {
        let name = c["name"].as_str().unwrap();
        match c["implementation"].as_str() {
            Some("congestion") => {}
            // quinn's own controllers take no parameters and must not shadow one of ours.
            Some("quinn") => {
                assert!(!NAMES.contains(&name), "{name} is both quinn's and ours");
                assert_eq!(c["parameters"], Value::Array(vec![]), "{name}");
            }
            other => panic!("{name}: implementation {other:?} is not congestion or quinn"),
        }
    }
    let mut all: Vec<&str> = quic_controllers(&contract)
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    all.sort_unstable();
    let n = all.len();
    all.dedup();
    assert_eq!(all.len(), n, "a QUIC controller is listed twice");
}

#[test]
fn parameters_match_the_code_that_reads_them() {
    let contract = contract();
    for (name, c) in ours(&contract) {
        let file = c["parameters"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: parameters is a list"));
        let code = parameters(name).unwrap_or_else(|| panic!("{name} is not a controller of this crate"));
        let file_keys: Vec<&str> = file
            .iter()
            .map(|p| p["name"].as_str().expect("parameter name"))
            .collect();
        let code_keys: Vec<&str> = code.iter().map(|p| p.key).collect();
        assert_eq!(
            file_keys, code_keys,
            "{name}: parameter names (in the order the code reads them)"
        );
        for (f, p) in file.iter().zip(&code) {
            let what = format!("{name}.{}", p.key);
            assert_eq!(f["type"], kind_name(p.kind), "{what}: type");
            assert!(
                same_value(&p.default, &f["default"]),
                "{what}: default {} in the file, {} in the code",
                f["default"],
                p.default
            );
            assert!(
                f.get("unit").is_some() && f["meaning"].is_string(),
                "{what}: unit and meaning are documented"
            );
            match &p.range {
                Some((min, max)) => {
                    assert!(
                        same_value(min, &f["min"]),
                        "{what}: min {} in the file, {min} in the code",
                        f["min"]
                    );
                    assert!(
                        same_value(max, &f["max"]),
                        "{what}: max {} in the file, {max} in the code",
                        f["max"]
                    );
                    assert!(f.get("options").is_none(), "{what}: a number has no options");
                }
                None => {
                    let options: Vec<&str> = f["options"]
                        .as_array()
                        .expect("options")
                        .iter()
                        .map(|o| o.as_str().unwrap())
                        .collect();
                    assert_eq!(options, p.options, "{what}: options");
                    assert!(
                        f.get("min").is_none() && f.get("max").is_none(),
                        "{what}: a choice has no bounds"
                    );
                }
            }
        }
    }
}

/// What the file promises, `build` keeps: each default, bound and option, written as the
/// Python side writes it, is accepted on its own.
#[test]
fn every_value_the_file_allows_builds() {
    let contract = contract();
    for (name, c) in ours(&contract) {
        build(name, &Params::new(), MSS, 0).unwrap_or_else(|e| panic!("{name}: {e}"));
        for p in c["parameters"].as_array().unwrap() {
            let key = p["name"].as_str().unwrap();
            let mut values = vec![&p["default"]];
            for k in ["min", "max"] {
                values.extend(p.get(k));
            }
            values.extend(p.get("options").and_then(Value::as_array).into_iter().flatten());
            for v in values {
                let text = as_param_text(v);
                let params: Params = [(key.to_string(), text.clone())].into_iter().collect();
                // Vegas needs alpha ≤ beta: a bound of one is checked with the other at
                // the same bound.
                let params = match (name, key) {
                    ("vegas", "alpha" | "beta") => [("alpha", &text), ("beta", &text)]
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v.clone()))
                        .collect(),
                    _ => params,
                };
                build(name, &params, MSS, 0).unwrap_or_else(|e| panic!("{name} {key}={text}: {e}"));
            }
        }
    }
}

#[test]
fn kernel_tcp_controllers_are_the_kernels_or_the_labs_bpf_programs() {
    let contract = contract();
    let tcp = contract["controllers"]["tcp"]
        .as_array()
        .expect("controllers.tcp is a list");
    let quic = contract["controllers"]["quic"]
        .as_array()
        .expect("controllers.quic is a list");
    assert!(!tcp.is_empty());
    for c in tcp {
        match c["implementation"].as_str() {
            Some("kernel") => assert_eq!(
                c["parameters"],
                Value::Array(vec![]),
                "the kernel's own TCP controls take no cc_params: {c}"
            ),
            // The lab's BPF programs (bpf/) implement a `congestion` controller for kernel
            // TCP with the same parameters, less CUBIC's `variant` (the kernel's CUBIC
            // underneath has fixed constants).
            Some("bpf") => {
                let twin = quic
                    .iter()
                    .find(|q| q["name"] == c["name"] && q["implementation"] == "congestion")
                    .unwrap_or_else(|| panic!("{}: a bpf controller has a congestion twin", c["name"]));
                let expected: Vec<&Value> = twin["parameters"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|p| p["name"] != "variant")
                    .collect();
                let given: Vec<&Value> = c["parameters"].as_array().unwrap().iter().collect();
                assert_eq!(
                    given, expected,
                    "{}: parameters differ from controllers.quic",
                    c["name"]
                );
            }
            other => panic!("{c}: implementation {other:?} is not kernel or bpf"),
        }
    }
}
