//! linkem's drop reasons against contracts/contract.json, the file the Python side reads
//! them from: every reason here is listed there with the same code and name, as an
//! intended drop, and the file lists no linkem reason this crate lacks.

use std::collections::HashSet;

use linkem::DropReason;
use serde_json::Value;

fn contract() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../contracts/contract.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Fails to compile when a variant is added, so `DropReason::ALL` (and with it this test)
/// cannot silently miss one.
fn listed(reason: DropReason) -> bool {
    match reason {
        DropReason::QueueFull | DropReason::RandomLoss | DropReason::MergeDiscard => DropReason::ALL.contains(&reason),
    }
}

#[test]
fn drop_reasons_match_the_contract() {
    let contract = contract();
    let entries = contract["drop_reasons"].as_array().expect("drop_reasons is a list");
    let mut codes = HashSet::new();
    for e in entries {
        let code = e["code"].as_u64().unwrap_or_else(|| panic!("code of {e}"));
        assert!(codes.insert(code), "code {code} listed twice");
        assert!(e["name"].is_string() && e["unintended"].is_boolean(), "{e}");
    }
    let ours: Vec<(u64, &str, bool)> = entries
        .iter()
        .filter(|e| e["origin"] == "linkem")
        .map(|e| {
            (
                e["code"].as_u64().unwrap(),
                e["name"].as_str().unwrap(),
                e["unintended"].as_bool().unwrap(),
            )
        })
        .collect();
    let code: Vec<(u64, &str, bool)> = DropReason::ALL
        .iter()
        .map(|&r| {
            assert!(listed(r));
            (u64::from(r.code()), r.name(), false)
        })
        .collect();
    assert_eq!(
        ours, code,
        "linkem's reasons (code, name, unintended) in contracts/contract.json vs DropReason"
    );
}

/// The engine numbers its own reasons from 10 up, leaving 1..=9 to the model: a model
/// reason there would collide with an engine one in the log.
#[test]
fn model_reasons_stay_below_the_engines() {
    for r in DropReason::ALL {
        assert!((1..10).contains(&r.code()), "{r:?} has code {}", r.code());
    }
    for e in contract()["drop_reasons"].as_array().unwrap() {
        let code = e["code"].as_u64().unwrap();
        let origin = e["origin"].as_str().unwrap_or_else(|| panic!("origin of {e}"));
        match origin {
            "linkem" => assert!(code < 10, "{e}"),
            "engine" => assert!(code >= 10, "{e}"),
            other => panic!("unknown origin {other:?} in {e}"),
        }
    }
}
