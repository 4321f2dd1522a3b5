//! The paced-records workload on 127.0.0.1: the server sends COBS-framed records, the
//! client receives them ordered (socket stream) and unordered (also a packet tap, which
//! needs CAP_NET_RAW: as another user the client must refuse with that reason). Loss and
//! the head-of-line case are tested in namespaces (tests/test_records_e2e.py).

mod common;
use common::*;

use std::process::{Command, Stdio};

fn records_run(delivery: &str) -> (serde_json::Value, serde_json::Value, i32, String) {
    let d = TempDir::new(&format!("records-{delivery}"));
    let (srv_sum, cli_sum, cli_rec) = (d.file("srv.json"), d.file("cli.json"), d.file("rec.arrow"));
    let (srv, port) = start_server(&["tcp-server", "--bind", "127.0.0.1:0", "--once", "--summary", &srv_sum]);
    let to = format!("127.0.0.1:{port}");
    let out = Command::new(AGENT)
        .args([
            "tcp-client",
            "--connect",
            &to,
            "--record-size",
            "1448",
            "--record-interval",
            "10ms",
            "--duration",
            "300ms",
            "--delivery",
            delivery,
            "--summary",
            &cli_sum,
            "--record-series",
            &cli_rec,
        ])
        .stderr(Stdio::piped())
        .output()
        .expect("spawn agent");
    let rc = out.status.code().unwrap_or(-1);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    if rc != 0 {
        let _ = wait(srv, LIMIT);
        return (serde_json::Value::Null, serde_json::Value::Null, rc, stderr);
    }
    assert_eq!(wait(srv, LIMIT), 0);
    assert!(is_arrow_file(&cli_rec));
    (summary(&cli_sum), summary(&srv_sum), rc, stderr)
}

fn check_every_record_once(c: &serde_json::Value, s: &serde_json::Value) {
    let conn = &s["results"]["connections"][0];
    assert_eq!(conn["mode"], "records");
    assert_eq!(conn["complete"], true);
    let sent = conn["records"]["records_sent"].as_u64().unwrap();
    assert_eq!(sent, 30, "300 ms at 10 ms");
    assert_eq!(conn["bytes_sent"], 30 * 1448);
    let r = &c["results"]["records"];
    assert_eq!(c["results"]["mode"], "records");
    assert_eq!(c["results"]["complete"], true);
    assert_eq!(c["results"]["bytes"], 30 * 1448);
    assert_eq!(r["delivered"], sent);
    assert_eq!(r["missing"], 0);
    assert_eq!(r["duplicate_ids"], 0);
    assert_eq!(r["malformed"], 0);
    assert_eq!(r["latency"]["count"], sent);
    assert_eq!(
        r["stream_latency"]["count"], sent,
        "the stream alone completes every record too"
    );
    assert!(r["latency"]["max_ms"].as_f64().unwrap() < 1000.0);
    assert_eq!(
        r["via_packet"].as_u64().unwrap() + r["via_stream"].as_u64().unwrap(),
        sent
    );
}

#[test]
fn records_ordered_come_from_the_stream() {
    let (c, s, rc, err) = records_run("ordered");
    assert_eq!(rc, 0, "{err}");
    check_every_record_once(&c, &s);
    assert_eq!(c["results"]["records"]["via_stream"], 30);
    assert!(c["results"]["records"]["tap"].is_null());
}

#[test]
fn records_unordered_read_the_packets_too() {
    let (c, s, rc, err) = records_run("unordered");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc_geteuid() } != 0 {
        assert_eq!(rc, 1);
        assert!(err.contains("CAP_NET_RAW"), "{err}");
        return;
    }
    assert_eq!(rc, 0, "{err}");
    check_every_record_once(&c, &s);
    let tap = &c["results"]["records"]["tap"];
    assert_eq!(tap["isn_seen"], true);
    assert_eq!(tap["before_isn"], 0);
    assert_eq!(
        tap["payload_bytes"],
        30 * 1448,
        "every segment seen once (outgoing copies skipped)"
    );
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}
