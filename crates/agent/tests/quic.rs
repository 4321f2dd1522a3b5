//! End-to-end tests of quic-server / quic-client on 127.0.0.1.

mod common;
use common::*;

use std::process::Command;
use std::time::Duration;

/// Runs a `--once` server and a client with the given extra arguments; returns both
/// summaries after checking both exited 0.
fn transfer(name: &str, server_args: &str, client_args: &str) -> (serde_json::Value, serde_json::Value, TempDir) {
    let d = TempDir::new(name);
    let (ser, cser) = (d.file("srv.arrow"), d.file("cli.arrow"));
    let server = format!("quic-server --bind 127.0.0.1:0 --once --series {ser} {server_args}");
    let client = format!("quic-client --connect ADDR --series {cser} {client_args}");
    let (s, c) = server_and_client(&d, &server, &client);
    assert!(is_arrow_file(&ser) && is_arrow_file(&cser));
    (s, c, d)
}

#[test]
fn quic_upload_by_bytes_completes() {
    let (s, c, _d) = transfer("quic-upload", "--cc bbr", "--cc cubic --bytes 20MB");
    let r = &c["results"];
    assert_eq!(c["subcommand"], "quic-client");
    assert_eq!(c["stopped_by"], "bytes");
    assert_eq!(r["complete"], true);
    assert_eq!(r["bytes"], 20_000_000);
    assert_eq!(r["bytes_received_by_server"], 20_000_000);
    assert_eq!(r["sender"], "client");
    assert_eq!(r["cc"], "cubic");
    assert!(r["goodput_bps"].as_f64().unwrap() > 0.0);
    assert!(r["quic"]["packets_sent"].as_u64().unwrap() > 20_000_000 / 1500);
    assert!(r["cpu_user_s"].as_f64().is_some());
    let conn = &s["results"]["connections"][0];
    assert_eq!(s["stopped_by"], "once");
    assert_eq!(conn["complete"], true);
    assert_eq!(conn["bytes"], 20_000_000);
}

#[test]
fn quic_download_fixed_datagram_size() {
    let (s, c, _d) = transfer(
        "quic-download",
        "--cc newreno --datagram-size 1300",
        "--cc newreno --datagram-size 1300 --direction download --bytes 5MB",
    );
    assert_eq!(c["results"]["complete"], true);
    assert_eq!(c["results"]["bytes"], 5_000_000);
    assert_eq!(s["results"]["connections"][0]["quic"]["mtu"], 1300);
}

/// A bulk transfer on 2 streams of one connection, each way: `--bytes` split exactly
/// (the odd byte on the first, the control stream), both streams carrying their share,
/// and the server's count the sum over both.
#[test]
fn quic_bulk_on_two_streams_splits_bytes() {
    for direction in ["upload", "download"] {
        let (s, c, _d) = transfer(
            &format!("quic-streams-{direction}"),
            "",
            &format!("--direction {direction} --bytes 6000001 --streams 2"),
        );
        let r = &c["results"];
        assert_eq!(c["params"]["streams"], 2, "{direction}");
        assert_eq!(c["stopped_by"], "bytes", "{direction}");
        assert_eq!(r["complete"], true, "{direction}: {r}");
        assert_eq!(r["mode"], direction);
        assert_eq!(r["bytes"], 6_000_001, "{direction}");
        assert!(r["goodput_bps"].as_f64().unwrap() > 0.0, "{direction}");
        assert!(r["completion_s"].as_f64().unwrap() > 0.0, "{direction}");
        let conn = &s["results"]["connections"][0];
        assert_eq!(conn["complete"], true, "{direction}: {conn}");
        assert_eq!(conn["request"]["streams"], 2, "{direction}");
        assert_eq!(conn["bytes"], 6_000_001, "{direction}");
        // What each end wrote or read per stream: exactly the split, at both ends.
        let split = serde_json::json!([3_000_001, 3_000_000]);
        assert_eq!(r["stream_bytes"], split, "{direction}: client");
        assert_eq!(conn["stream_bytes"], split, "{direction}: server");
        let (sent, received) = if direction == "upload" {
            (&r["bytes_sent"], &s["results"]["bytes_received"])
        } else {
            (&s["results"]["bytes_sent"], &r["bytes_received"])
        };
        assert_eq!((sent, received), (&6_000_001.into(), &6_000_001.into()), "{direction}");
    }
}

/// A bulk transfer on 2 streams until `--duration`: the streams share the connection (the
/// sender writes to them in turn, so neither fills the send window alone), and the
/// receiver's count is the sum over both.
#[test]
fn quic_bulk_on_two_streams_until_duration_shares_the_connection() {
    for direction in ["upload", "download"] {
        let (s, c, _d) = transfer(
            &format!("quic-streams-dur-{direction}"),
            "",
            &format!("--direction {direction} --duration 300ms --streams 2"),
        );
        let r = &c["results"];
        assert_eq!(c["stopped_by"], "duration", "{direction}");
        assert_eq!(r["ended_by_duration"], true, "{direction}");
        let conn = &s["results"]["connections"][0];
        let receiver = if direction == "upload" { conn } else { r };
        let per_stream: Vec<u64> = receiver["stream_bytes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        let total: u64 = per_stream.iter().sum();
        assert_eq!(per_stream.len(), 2, "{direction}");
        assert_eq!(receiver["bytes"], total, "{direction}");
        assert_eq!(r["bytes"], total, "{direction}: the client's count is the receiver's");
        assert!(
            per_stream.iter().all(|&b| b >= total / 4),
            "{direction}: one stream starved: {per_stream:?}"
        );
    }
}

/// `--streams` is refused with messages, and more than the request can carry.
#[test]
fn quic_streams_out_of_range_exit_2() {
    let d = TempDir::new("quic-streams-bad");
    let s = d.file("x.json");
    for extra in [
        "--message-size 100 --message-rate 10 --duration 1s --streams 2",
        "--bytes 1MB --streams 0",
        "--bytes 1MB --streams 10000",
    ] {
        let line = format!("quic-client --connect 127.0.0.1:9 --summary {{}} {extra}");
        assert_fails(&cmd(&line, &[&s]), 2, "--streams");
    }
}

#[test]
fn quic_objects_on_parallel_streams_complete() {
    let (s, c, _d) = transfer(
        "quic-objects",
        "--cc bbr",
        "--objects 12 --object-size 100kB --streams 4",
    );
    let r = &c["results"];
    assert_eq!(r["complete"], true);
    assert_eq!(r["objects_completed"], 12);
    assert_eq!(r["bytes"], 1_200_000);
    assert_eq!(r["objects"].as_array().unwrap().len(), 12);
    assert!(r["completion_s"].as_f64().unwrap() > 0.0);
    assert_eq!(s["results"]["connections"][0]["objects_served"], 12);
}

#[test]
fn quic_messages_record_one_way_delay() {
    let (s, c, d) = transfer(
        "quic-messages",
        "--message-series /dev/null",
        "--message-size 200 --message-rate 100 --duration 500ms",
    );
    let _ = d;
    assert_eq!(c["results"]["messages_sent"], 50);
    let conn = &s["results"]["connections"][0];
    assert_eq!(conn["messages_received"], 50);
    assert_eq!(conn["owd"]["count"], 50);
}

/// Every controller of the `congestion` crate (and quinn's BBR) carries a transfer.
#[test]
fn quic_every_controller_builds() {
    for name in congestion::NAMES.iter().chain(&["bbr"]) {
        let (s, c, _d) = transfer(
            &format!("quic-cc-{name}"),
            &format!("--cc {name}"),
            &format!("--cc {name} --bytes 2MB"),
        );
        assert_eq!(c["results"]["complete"], true, "{name}");
        assert_eq!(c["params"]["cc"], *name);
        assert_eq!(s["results"]["cc"], *name);
    }
}

#[test]
fn quic_bad_cc_exits_2_naming_the_flag() {
    let d = TempDir::new("quic-badcc");
    let s = d.file("x.json");
    let line = "quic-client --connect 127.0.0.1:9 --bytes 1MB --cc nope --summary {}";
    let err = assert_fails(&cmd(line, &[&s]), 2, "--cc nope: unknown congestion controller");
    assert_eq!(err.lines().count(), 1, "{err}");
    for (line, wanted) in [
        (
            "quic-server --bind 127.0.0.1:0 --cc cubic --cc-param nonsense=1 --summary {}",
            "--cc-param nonsense=1",
        ),
        (
            "quic-server --bind 127.0.0.1:0 --datagram-size 1000 --summary {}",
            "--datagram-size 1000",
        ),
    ] {
        assert_fails(&cmd(line, &[&s]), 2, wanted);
    }
}

#[test]
fn quic_sigterm_writes_summary() {
    let d = TempDir::new("quic-sigterm");
    let (ss, cs) = (d.file("srv.json"), d.file("cli.json"));
    let (srv, port) = start_server(&cmd("quic-server --bind 127.0.0.1:0 --summary {}", &[&ss]));
    let connect = format!("127.0.0.1:{port}");
    let cli = Command::new(AGENT)
        .args(cmd(
            "quic-client --connect {} --duration 30s --summary {}",
            &[&connect, &cs],
        ))
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    unsafe { libc::kill(cli.id() as i32, libc::SIGTERM) };
    assert_eq!(wait(cli, LIMIT), 0);
    unsafe { libc::kill(srv.id() as i32, libc::SIGTERM) };
    assert_eq!(wait(srv, LIMIT), 0);
    let c = summary(&cs);
    assert_eq!(c["stopped_by"], "signal");
    assert_eq!(c["results"]["complete"], false);
    assert!(c["results"]["bytes_sent"].as_u64().unwrap() > 0);
    let s = summary(&ss);
    assert_eq!(s["stopped_by"], "signal");
    assert_eq!(s["results"]["connections"].as_array().unwrap().len(), 1);
}

/// `--qlog` on both ends: each writes a JSON-SEQ qlog (records after an RS byte) whose
/// first record names the format and whose events include packets sent and received and
/// the congestion controller's metrics updates.
#[test]
fn quic_qlog_is_json_seq_with_packet_and_metrics_events() {
    let d = TempDir::new("qlog-files");
    let (sq, cq) = (d.file("server.sqlog"), d.file("client.sqlog"));
    let (_, client, _d) = transfer("qlog", &format!("--qlog {sq}"), &format!("--qlog {cq} --bytes 300000"));
    assert_eq!(client["results"]["complete"], true);
    for path in [&sq, &cq] {
        let text = std::fs::read_to_string(path).unwrap();
        let records: Vec<serde_json::Value> = text
            .split('\u{1e}')
            .filter(|r| !r.trim().is_empty())
            .map(|r| serde_json::from_str(r.trim()).unwrap_or_else(|e| panic!("{path}: {e}: {r}")))
            .collect();
        assert!(records[0]["qlog_format"] == "JSON-SEQ", "{path}: {}", records[0]);
        let names: std::collections::HashSet<&str> = records[1..].iter().filter_map(|r| r["name"].as_str()).collect();
        for want in [
            "transport:packet_sent",
            "transport:packet_received",
            "recovery:metrics_updated",
        ] {
            assert!(names.contains(want), "{path}: no {want} in {names:?}");
        }
    }
}
