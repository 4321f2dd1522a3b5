//! The engine's packet log against contracts/contract.json, the file the Python reader
//! takes the log's version, record size and drop reasons from: a log written by the
//! engine's own writer carries that version and record size in its header, the engine's
//! drop reasons are the file's `engine` ones. (The Rust-written sample a Python test
//! reads, tests/data/packets_v<version>.tlog, is checked by the writer's own unit test in
//! src/log.rs.)

use std::path::{Path, PathBuf};

use engine::log::{self, reason, Event, PacketLog, NO_DIRECTION, RECORD_SIZE};
use linkem::DropReason;
use serde_json::Value;
use wire::FlowKey;

const HEADER_SIZE: usize = 16;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn contract() -> Value {
    let path = repo().join("contracts/contract.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The contract's list `list` as (the entry's `number` field, its name), in its order.
fn numbered_names(list: &str, number: &str) -> Vec<(u64, String)> {
    let what = |e: &Value| format!("{list} entry {e}");
    contract()[list]
        .as_array()
        .unwrap_or_else(|| panic!("{list} is a list"))
        .iter()
        .map(|e| {
            let n = e[number].as_u64().unwrap_or_else(|| panic!("{}: no {number}", what(e)));
            let name = e["name"].as_str().unwrap_or_else(|| panic!("{}: no name", what(e)));
            (n, name.to_string())
        })
        .collect()
}

fn temp_log(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("tlab-contract-{name}-{}.tlog", std::process::id()))
}

/// Writes `records` with the engine's writer and returns the file's bytes.
fn written(name: &str, records: &[Record]) -> Vec<u8> {
    let path = temp_log(name);
    let mut log = PacketLog::create(&path).unwrap();
    for r in records {
        log.record(
            r.t_ns,
            // The hand-over a little after the model's due time, as the engine records it.
            r.t_ns + 100,
            r.packet_id,
            &r.key,
            r.size,
            r.direction,
            r.event,
            r.reason,
            log::flag::copy(r.copy),
        );
    }
    log.close().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    bytes
}

struct Record {
    t_ns: u64,
    packet_id: u64,
    key: FlowKey,
    size: u32,
    direction: u16,
    event: Event,
    reason: u8,
    copy: bool,
}

fn ip(a: u8, b: u8, c: u8, d: u8) -> u32 {
    u32::from_be_bytes([a, b, c, d])
}

/// One record of every event, every drop reason, a copy, an engine-level drop off any
/// direction, TCP, UDP and ICMP keys, and a size above u16 (the log clamps it).
fn sample_records() -> Vec<Record> {
    let tcp = FlowKey {
        src: ip(10, 0, 0, 1),
        dst: ip(10, 0, 1, 1),
        sport: 40000,
        dport: 5201,
        proto: 6,
        tcp_seq: 1000,
        payload_len: 1448,
    };
    let udp = FlowKey {
        src: ip(10, 0, 0, 2),
        dst: ip(10, 0, 1, 2),
        sport: 5000,
        dport: 6000,
        proto: 17,
        tcp_seq: 0,
        payload_len: 1200,
    };
    let icmp = FlowKey {
        src: ip(10, 0, 0, 3),
        dst: ip(10, 0, 1, 3),
        sport: 0,
        dport: 0,
        proto: 1,
        tcp_seq: 0,
        payload_len: 56,
    };
    let rec = |t_ns, packet_id, key, size, direction, event, reason, copy| Record {
        t_ns,
        packet_id,
        key,
        size,
        direction,
        event,
        reason,
        copy,
    };
    vec![
        rec(1_000, 1, tcp, 1500, 0, Event::Arrival, 0, false),
        rec(21_000_000, 1, tcp, 1500, 0, Event::Departure, 0, false),
        rec(21_000_001, 1, tcp, 1500, 0, Event::Departure, 0, true),
        rec(2_000, 2, udp, 1200, 1, Event::Arrival, 0, false),
        rec(2_000, 2, udp, 1200, 1, Event::Drop, DropReason::QueueFull.code(), false),
        rec(3_000, 3, udp, 1200, 1, Event::Arrival, 0, false),
        rec(
            3_000,
            3,
            udp,
            1200,
            1,
            Event::Drop,
            DropReason::RandomLoss.code(),
            false,
        ),
        rec(4_000, 4, tcp, 1500, 2, Event::Arrival, 0, false),
        rec(
            9_000_000,
            4,
            tcp,
            1500,
            2,
            Event::Drop,
            DropReason::MergeDiscard.code(),
            false,
        ),
        rec(5_000, 5, icmp, 84, NO_DIRECTION, Event::Drop, reason::NO_ROUTE, false),
        rec(6_000, 6, udp, 1200, 0, Event::Drop, reason::HOST_WRITE_FAILED, false),
        rec(
            7_000,
            7,
            FlowKey::default(),
            70_000,
            NO_DIRECTION,
            Event::Drop,
            reason::NOT_IPV4,
            false,
        ),
    ]
}

#[test]
fn a_written_log_carries_the_contract_version_and_record_size() {
    let contract = contract();
    let version = contract["packet_log_version"].as_u64().expect("packet_log_version");
    let record_size = contract["packet_log_record_size"]
        .as_u64()
        .expect("packet_log_record_size");
    assert_eq!(
        RECORD_SIZE as u64, record_size,
        "the writer's RECORD_SIZE vs the contract"
    );

    let records = sample_records();
    let bytes = written("header", &records);
    assert_eq!(&bytes[..8], b"TLABLOG\0");
    assert_eq!(
        u64::from(u32::from_le_bytes(bytes[8..12].try_into().unwrap())),
        version,
        "header version"
    );
    assert_eq!(
        u64::from(u32::from_le_bytes(bytes[12..16].try_into().unwrap())),
        record_size,
        "header record size"
    );
    assert_eq!(bytes.len(), HEADER_SIZE + records.len() * RECORD_SIZE);
}

#[test]
fn flags_match_the_contract() {
    let ours = [(log::flag::COPY, "copy"), (log::flag::CE_MARKED, "ce_marked")];
    let ours: Vec<(u64, String)> = ours
        .iter()
        .map(|&(b, n)| (u64::from(b.trailing_zeros()), n.into()))
        .collect();
    assert_eq!(numbered_names("packet_log_flags", "bit"), ours);
    assert_eq!(log::flag::copy(true), log::flag::COPY);
    assert_eq!(log::flag::copy(false), 0);
}

#[test]
fn engine_reasons_match_the_contract() {
    let contract = contract();
    let file: Vec<(u64, &str, bool)> = contract["drop_reasons"]
        .as_array()
        .expect("drop_reasons is a list")
        .iter()
        .filter(|e| e["origin"] == "engine")
        .map(|e| {
            (
                e["code"].as_u64().unwrap(),
                e["name"].as_str().unwrap(),
                e["unintended"].as_bool().unwrap(),
            )
        })
        .collect();
    let code = [
        (reason::NO_ROUTE, "no_route"),
        (reason::HOST_WRITE_FAILED, "host_write_failed"),
        (reason::NOT_IPV4, "not_ipv4"),
        (reason::OVERSIZE, "oversize"),
        (reason::MEMORY_LIMIT, "memory_limit"),
    ]
    .map(|(c, name)| (u64::from(c), name, true));
    assert_eq!(
        file, code,
        "the engine's reasons (code, name, unintended) in contracts/contract.json vs log::reason"
    );
}

/// The log's event codes are the contract's `packet_log_events`.
#[test]
fn events_match_the_contract() {
    let code = [
        (Event::Arrival, "arrival"),
        (Event::Departure, "departure"),
        (Event::Drop, "drop"),
    ]
    .map(|(e, name)| (e as u64, name.to_string()));
    assert_eq!(
        numbered_names("packet_log_events", "code"),
        code,
        "packet_log_events in contracts/contract.json vs log::Event"
    );
}
