//! The paced-records workload on 127.0.0.1: the server sends COBS-framed records, the
//! client receives them ordered (socket stream) and unordered (also a packet tap, which
//! needs CAP_NET_RAW: as another user the client must refuse with that reason). Loss and
//! the head-of-line case are tested in namespaces (tests/test_records_e2e.py).

mod common;
use common::*;

fn records_run(delivery: &str) -> (serde_json::Value, serde_json::Value, i32, String) {
    let d = TempDir::new(&format!("records-{delivery}"));
    let cli_rec = d.file("rec.arrow");
    let (rc, stderr) = run_pair(
        &d,
        "tcp-server --bind 127.0.0.1:0 --once",
        &format!("tcp-client --connect ADDR --record-size 1448 --record-interval 10ms --duration 300ms --delivery {delivery} --record-series {cli_rec}"),
    );
    if rc != 0 {
        return (serde_json::Value::Null, serde_json::Value::Null, rc, stderr);
    }
    assert!(is_arrow_file(&cli_rec));
    (summary(&d.file("cli.json")), summary(&d.file("srv.json")), rc, stderr)
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

/// A server that answers a records request with hand-made frames: two good records
/// around a frame that is no COBS encoding and a record shorter than its header, then
/// closes. The client counts both bad frames, skips them, and delivers the good ones.
fn malformed_run(delivery: &str) -> (i32, String, serde_json::Value) {
    use records::frame::frame;
    use records::RecordHeader;
    use std::io::{Read, Write};

    let d = TempDir::new(&format!("records-malformed-{delivery}"));
    let cli_sum = d.file("cli.json");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut request = [0u8; 56];
        s.read_exact(&mut request).unwrap();
        let mut out = Vec::new();
        out.extend(RecordHeader { id: 0, send_ns: 1 }.framed(100).unwrap());
        out.extend([0x00, 0x09, 0x41, 0x42, 0x00]); // code 9 runs past the frame's end
        out.extend(frame(&[1, 2, 3])); // decodes, but shorter than a header
        out.extend(RecordHeader { id: 1, send_ns: 2 }.framed(100).unwrap());
        s.write_all(&out).unwrap();
        s.shutdown(std::net::Shutdown::Write).unwrap();
        let _ = s.read_to_end(&mut Vec::new());
    });
    let (rc, stderr) = exit_and_stderr(
        &cmd(
            "tcp-client --connect {} --record-size 100 --record-interval 10ms --duration 1s --delivery {} --summary {}",
            &[&format!("127.0.0.1:{port}"), delivery, &cli_sum],
        ),
        LIMIT,
    );
    server.join().unwrap();
    let s = if rc == 0 {
        summary(&cli_sum)
    } else {
        serde_json::Value::Null
    };
    (rc, stderr, s)
}

#[test]
fn malformed_frames_are_counted_and_skipped_by_the_client() {
    let deliveries: &[&str] = if unsafe { libc_geteuid() } == 0 {
        &["ordered", "unordered"]
    } else {
        &["ordered"]
    };
    for delivery in deliveries {
        let (rc, err, c) = malformed_run(delivery);
        assert_eq!(rc, 0, "{delivery}: {err}");
        let r = &c["results"]["records"];
        assert_eq!(r["delivered"], 2, "{delivery}");
        assert_eq!(r["malformed"], 2, "{delivery}");
        assert_eq!(r["missing"], 0);
        assert_eq!(r["duplicate_ids"], 0);
        assert_eq!(c["results"]["complete"], true);
    }
}

/// Web pages on 127.0.0.1, both framings (unordered, msTCP, needs the packet tap: it runs
/// as root only, as the records' unordered test checks the refusal otherwise).
fn page_run(delivery: &str) -> (serde_json::Value, serde_json::Value) {
    let d = TempDir::new(&format!("page-{delivery}"));
    let cli_page = d.file("page.arrow");
    let (s, c) = server_and_client(
        &d,
        "tcp-server --bind 127.0.0.1:0 --once",
        &format!("tcp-client --connect ADDR --page-primary 30000 --page-secondaries 5000,70000,1 --duration 300ms --delivery {delivery} --page-series {cli_page}"),
    );
    assert!(is_arrow_file(&cli_page));
    (c, s)
}

fn check_pages(c: &serde_json::Value, s: &serde_json::Value, framing: &str) {
    let p = &c["results"]["page"];
    let conn = &s["results"]["connections"][0];
    assert_eq!(c["results"]["mode"], "page");
    assert_eq!(c["results"]["complete"], true);
    assert_eq!(p["framing"], framing);
    assert_eq!(conn["page"]["framing"], framing);
    let pages = p["pages_completed"].as_u64().unwrap();
    assert!(pages >= 1);
    assert_eq!(p["pages_started"], pages, "every page asked for completed");
    assert_eq!(conn["page"]["primaries_sent"], pages);
    assert_eq!(conn["page"]["secondaries_sent"], 3 * pages);
    assert_eq!(p["object_ttfb"]["count"], 4 * pages);
    assert_eq!(p["page_time"]["count"], pages);
    assert_eq!(p["malformed"], 0);
    if framing == "plain" {
        assert_eq!(c["results"]["bytes"], 105_001 * pages, "exactly the objects' bytes");
    }
}

#[test]
fn pages_plain_load_every_object_of_every_page() {
    let (c, s) = page_run("ordered");
    check_pages(&c, &s, "plain");
}

#[test]
fn pages_mstcp_unordered_when_the_tap_is_allowed() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc_geteuid() } != 0 {
        return;
    }
    let (c, s) = page_run("unordered");
    check_pages(&c, &s, "mstcp");
    assert!(c["results"]["page"]["tap"]["isn_seen"].as_bool().unwrap());
}
