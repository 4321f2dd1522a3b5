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
        DropReason::QueueFull | DropReason::RandomLoss | DropReason::MergeDiscard | DropReason::AqmDrop => {
            DropReason::ALL.contains(&reason)
        }
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

/// The queue disciplines and the parameters each takes, as the scenario schema reads them
/// from the contract: the same names in the same order as `DISCIPLINES`; every parameter
/// any discipline has is accepted by exactly the disciplines the contract lists it for;
/// `ecn` exactly by those it calls `aqm`.
#[cfg(feature = "serde")]
#[test]
fn queue_disciplines_match_the_contract() {
    use linkem::spec::queue::DISCIPLINES;
    use linkem::spec::QueueSpec;

    let contract = contract();
    let entries = contract["queue_disciplines"]
        .as_array()
        .expect("queue_disciplines is a list");
    let names: Vec<&str> = entries.iter().map(|e| e["name"].as_str().unwrap()).collect();
    let ours: Vec<&str> = DISCIPLINES.iter().map(|c| c.name).collect();
    assert_eq!(names, ours);
    // A value in range for every parameter any discipline has.
    let samples = [
        ("min_th", "3"),
        ("max_th", "9"),
        ("max_p", "0.2"),
        ("w_q", "0.01"),
        ("gentle", "false"),
        ("avpkt_bytes", "1200"),
        ("target_ns", "2000000"),
        ("interval_ns", "50000000"),
        ("mtu_bytes", "1500"),
        ("t_update_ns", "10000000"),
        ("alpha", "0.1"),
        ("beta", "1.0"),
        ("max_burst_ns", "100000000"),
        ("mean_packet_bytes", "1000"),
        ("mark_ecnth", "0.2"),
        ("flows", "64"),
        ("quantum_bytes", "300"),
        ("k", "2.5"),
        ("l_threshold_ns", "1000000"),
        ("l_range_ns", "0"),
        ("tshift_ns", "30000000"),
    ];
    let parse = |json: String| {
        serde_json::from_str::<QueueSpec>(&json).and_then(|q| {
            q.validate().map_err(serde::de::Error::custom)?;
            Ok(q)
        })
    };
    let mut listed = HashSet::new();
    for (e, class) in entries.iter().zip(DISCIPLINES) {
        let name = e["name"].as_str().unwrap();
        let params: Vec<&str> = e["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap())
            .collect();
        assert_eq!(params, class.parameters, "{e}");
        assert_eq!(e["description"].as_str(), Some(class.description), "{e}");
        assert_eq!(e["aqm"].as_bool(), Some(class.aqm), "{e}");
        listed.extend(params.iter().copied());
        for (field, value) in samples {
            let got = parse(format!(
                r#"{{"discipline": "{name}", "packets": 100, "{field}": {value}}}"#
            ));
            assert_eq!(got.is_ok(), params.contains(&field), "{name} with {field}: {got:?}");
        }
        let aqm = e["aqm"].as_bool().unwrap();
        let got = parse(format!(r#"{{"discipline": "{name}", "packets": 100, "ecn": true}}"#));
        assert_eq!(got.is_ok(), aqm, "{name} with ecn: {got:?}");
    }
    let sampled: HashSet<&str> = samples.iter().map(|s| s.0).collect();
    assert_eq!(listed, sampled, "every parameter in the contract has a sample here");
}

/// docs/engine-config.md's table of disciplines: one row per registered discipline, in
/// registry order, with its default limit and exactly its parameters.
#[cfg(feature = "serde")]
#[test]
fn the_docs_table_of_disciplines_matches_the_registry() {
    use linkem::spec::queue::{all_parameters, DISCIPLINES};
    use linkem::spec::QueueLimit;

    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/engine-config.md");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip_while(|l| !l.starts_with("| discipline | default limit |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.trim_matches('|').split(" | ").map(str::trim).collect())
        .collect();
    let ticked = |cell: &str| -> Vec<String> { cell.split('`').skip(1).step_by(2).map(String::from).collect() };
    let names: Vec<String> = rows.iter().map(|r| ticked(r[0])[0].clone()).collect();
    let ours: Vec<&str> = DISCIPLINES.iter().map(|c| c.name).collect();
    assert_eq!(names, ours, "{path}: the rows of the disciplines table");
    let every = all_parameters();
    for (row, class) in rows.iter().zip(DISCIPLINES) {
        let limit = match class.default_limit {
            QueueLimit::Unlimited => "unlimited".to_string(),
            QueueLimit::Packets(n) => format!("{n} packets"),
            QueueLimit::Bytes(n) => format!("{n} bytes"),
        };
        assert_eq!(row[1], limit, "{path}: default limit of {}", class.name);
        let mut params: Vec<String> = ticked(row[2])
            .into_iter()
            .filter(|p| every.contains(&p.as_str()))
            .collect();
        params.dedup();
        assert_eq!(params, class.parameters, "{path}: parameters of {}", class.name);
    }
}
