//! End-to-end tests of quic-server / quic-client on 127.0.0.1.

mod common;
use common::*;

use std::process::{Command, Stdio};
use std::time::Duration;

/// Runs a `--once` server and a client with the given extra arguments; returns both
/// summaries after checking both exited 0.
fn transfer(name: &str, server_args: &[&str], client_args: &[&str]) -> (serde_json::Value, serde_json::Value, TempDir) {
    let d = TempDir::new(name);
    let (ss, cs) = (d.file("srv.json"), d.file("cli.json"));
    let (ser, cser) = (d.file("srv.arrow"), d.file("cli.arrow"));
    let mut sa = vec![
        "quic-server",
        "--bind",
        "127.0.0.1:0",
        "--once",
        "--summary",
        &ss,
        "--series",
        &ser,
    ];
    sa.extend_from_slice(server_args);
    let (srv, port) = start_server(&sa);
    let connect = format!("127.0.0.1:{port}");
    let mut ca = vec![
        "quic-client",
        "--connect",
        &connect,
        "--summary",
        &cs,
        "--series",
        &cser,
    ];
    ca.extend_from_slice(client_args);
    assert_eq!(run(&ca, LIMIT), 0, "client of {name}");
    assert_eq!(wait(srv, LIMIT), 0, "server of {name}");
    assert!(is_arrow_file(&ser) && is_arrow_file(&cser));
    (summary(&ss), summary(&cs), d)
}

#[test]
fn quic_upload_by_bytes_completes() {
    let (s, c, _d) = transfer("quic-upload", &["--cc", "bbr"], &["--cc", "cubic", "--bytes", "20MB"]);
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
        &["--cc", "newreno", "--datagram-size", "1300"],
        &[
            "--cc",
            "newreno",
            "--datagram-size",
            "1300",
            "--direction",
            "download",
            "--bytes",
            "5MB",
        ],
    );
    assert_eq!(c["results"]["complete"], true);
    assert_eq!(c["results"]["bytes"], 5_000_000);
    assert_eq!(s["results"]["connections"][0]["quic"]["mtu"], 1300);
}

#[test]
fn quic_objects_on_parallel_streams_complete() {
    let (s, c, _d) = transfer(
        "quic-objects",
        &["--cc", "bbr"],
        &["--objects", "12", "--object-size", "100kB", "--streams", "4"],
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
        &["--message-series", "/dev/null"],
        &["--message-size", "200", "--message-rate", "100", "--duration", "500ms"],
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
            &["--cc", name],
            &["--cc", name, "--bytes", "2MB"],
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
    let stderr_of = |args: &[&str]| {
        let out = Command::new(AGENT).args(args).stderr(Stdio::piped()).output().unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = stderr_of(&[
        "quic-client",
        "--connect",
        "127.0.0.1:9",
        "--bytes",
        "1MB",
        "--cc",
        "nope",
        "--summary",
        &s,
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--cc nope: unknown congestion controller"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let (code, err) = stderr_of(&[
        "quic-server",
        "--bind",
        "127.0.0.1:0",
        "--cc",
        "cubic",
        "--cc-param",
        "nonsense=1",
        "--summary",
        &s,
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--cc-param nonsense=1"), "{err}");
    let (code, err) = stderr_of(&[
        "quic-server",
        "--bind",
        "127.0.0.1:0",
        "--datagram-size",
        "1000",
        "--summary",
        &s,
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--datagram-size 1000"), "{err}");
}

#[test]
fn quic_sigterm_writes_summary() {
    let d = TempDir::new("quic-sigterm");
    let (ss, cs) = (d.file("srv.json"), d.file("cli.json"));
    let (srv, port) = start_server(&["quic-server", "--bind", "127.0.0.1:0", "--summary", &ss]);
    let connect = format!("127.0.0.1:{port}");
    let cli = Command::new(AGENT)
        .args([
            "quic-client",
            "--connect",
            &connect,
            "--duration",
            "30s",
            "--summary",
            &cs,
        ])
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
