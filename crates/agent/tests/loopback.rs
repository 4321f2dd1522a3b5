//! End-to-end tests of the agent binary on 127.0.0.1 (no namespaces needed). Servers bind
//! port 0 and announce the chosen port with `READY <port>`. Every child is killed if it
//! overruns its deadline, so each test ends by itself within seconds.

mod common;
use common::*;

use std::time::Duration;

#[test]
fn tcp_upload_20mb_both_ends_agree() {
    let d = TempDir::new("upload");
    let (srv_ser, cli_ser) = (d.file("srv.arrow"), d.file("cli.arrow"));
    let (s, c) = server_and_client(
        &d,
        &format!("tcp-server --bind 127.0.0.1:0 --once --series {srv_ser}"),
        &format!("tcp-client --connect ADDR --bytes 20MB --series {cli_ser}"),
    );
    assert_eq!(c["subcommand"], "tcp-client");
    assert_eq!(c["results"]["mode"], "upload");
    assert_eq!(c["results"]["bytes"], 20_000_000);
    assert_eq!(c["results"]["complete"], true);
    assert!(c["results"]["completion_s"].as_f64().unwrap() > 0.0);
    assert!(c["results"]["throughput_bps"].as_f64().unwrap() > 0.0);
    assert!(c["results"]["retransmits"].is_u64());
    assert_eq!(s["stopped_by"], "once");
    let conn = &s["results"]["connections"][0];
    assert_eq!(conn["mode"], "upload");
    assert_eq!(conn["bytes_received"], 20_000_000);
    assert_eq!(conn["complete"], true);
    assert!(is_arrow_file(&cli_ser) && is_arrow_file(&srv_ser));
}

#[test]
fn tcp_download_by_bytes() {
    let d = TempDir::new("download");
    let (s, c) = server_and_client(
        &d,
        "tcp-server --bind 127.0.0.1:0 --once",
        "tcp-client --connect ADDR --bytes 5MB --direction download",
    );
    assert_eq!(c["results"]["sender"], "server");
    assert_eq!(c["results"]["bytes_received"], 5_000_000);
    assert_eq!(c["results"]["complete"], true);
    let conn = &s["results"]["connections"][0];
    assert_eq!(conn["bytes_sent"], 5_000_000);
    assert!(conn["retransmits"].is_u64());
    // Both ends report their process's CPU time (getrusage): moving 5 MB takes some.
    assert_spent_cpu(&c["results"]);
    assert_spent_cpu(&s["results"]);
}

#[test]
fn tcp_objects() {
    let d = TempDir::new("objects");
    let (s, c) = server_and_client(
        &d,
        "tcp-server --bind 127.0.0.1:0 --once",
        "tcp-client --connect ADDR --objects 10 --object-size 64KiB",
    );
    let r = &c["results"];
    assert_eq!(r["mode"], "objects");
    assert_eq!(r["complete"], true);
    assert_eq!(r["objects_completed"], 10);
    assert_eq!(r["bytes"], 10 * 65536);
    let objs = r["objects"].as_array().unwrap();
    assert_eq!(objs.len(), 10);
    for o in objs {
        let ttfb = o["ttfb_s"].as_f64().unwrap();
        let done = o["completion_s"].as_f64().unwrap();
        assert!(ttfb > 0.0 && ttfb <= done, "ttfb {ttfb} completion {done}");
    }
    assert_eq!(r["ttfb"]["count"], 10);
    let conn = &s["results"]["connections"][0];
    assert_eq!(conn["objects_served"], 10);
    assert_eq!(conn["complete"], true);
}

#[test]
fn udp_send_recv_count() {
    let d = TempDir::new("udp");
    let rser = d.file("recv.arrow");
    let (r, s) = server_and_client(
        &d,
        &format!("udp-recv --bind 127.0.0.1:0 --idle-timeout 500ms --duration 10s --series {rser}"),
        "udp-send --to ADDR --size 1200 --rate 24Mbit --count 1000",
    );
    assert_eq!(s["results"]["sent"], 1000);
    assert_eq!(s["stopped_by"], "count");
    // 1000 × 1200 B at 24 Mbit/s = one datagram per 400 µs, so 999 intervals ≈ 0.4 s.
    let span = s["results"]["duration_s"].as_f64().unwrap();
    assert!((0.39..0.5).contains(&span), "send span {span}");
    assert_eq!(r["stopped_by"], "idle_timeout");
    assert_eq!(r["results"]["received"], 1000);
    assert_eq!(r["results"]["lost"], 0);
    assert_eq!(r["results"]["duplicates"], 0);
    assert!(r["results"]["owd"]["mean_ms"].as_f64().unwrap() < 5.0);
    assert!(r["results"]["jitter_rfc3550_ms"].is_f64());
    assert!(r["results"]["ipdv_rfc3393_ms"].is_f64());
    assert!(is_arrow_file(&rser));
    // Both ends report their process's CPU time (getrusage), as tcp's and quic's do:
    // 1000 sends and receives take some.
    assert_spent_cpu(&s["results"]);
    assert_spent_cpu(&r["results"]);
}

#[test]
fn probe_against_echo() {
    let d = TempDir::new("probe");
    let (es, ps, pser) = (d.file("echo.json"), d.file("probe.json"), d.file("probe.arrow"));
    let (echo, port) = start_server(&cmd(
        "echo --bind 127.0.0.1:0 --stamp --duration 10s --summary {}",
        &[&es],
    ));
    let to = format!("127.0.0.1:{port}");
    let rc = run(
        &cmd(
            "probe --to {} --interval 2ms --count 200 --summary {} --series {}",
            &[&to, &ps, &pser],
        ),
        LIMIT,
    );
    assert_eq!(rc, 0);
    // SIGTERM ends the echo early and it still writes its summary.
    unsafe { libc::kill(echo.id() as i32, libc::SIGTERM) };
    assert_eq!(wait(echo, LIMIT), 0);
    let r = &summary(&ps)["results"];
    assert_eq!(r["sent"], 200);
    assert_eq!(r["received"], 200);
    assert_eq!(r["lost"], 0);
    let p50 = r["rtt"]["p50_ms"].as_f64().unwrap();
    let mean = r["rtt"]["mean_ms"].as_f64().unwrap();
    assert!(p50 > 0.0 && p50 < 5.0 && mean < 5.0, "rtt p50 {p50} mean {mean}");
    assert_eq!(r["owd_forward"]["count"], 200);
    let e = summary(&es);
    assert_eq!(e["stopped_by"], "signal");
    assert_eq!(e["results"]["packets"], 200);
    assert!(is_arrow_file(&pser));
}

#[test]
fn sigterm_writes_summary() {
    let d = TempDir::new("sigterm");
    let rs = d.file("recv.json");
    let (recv, _port) = start_server(&cmd("udp-recv --bind 127.0.0.1:0 --summary {}", &[&rs]));
    std::thread::sleep(Duration::from_millis(100));
    unsafe { libc::kill(recv.id() as i32, libc::SIGTERM) };
    assert_eq!(wait(recv, LIMIT), 0);
    let r = summary(&rs);
    assert_eq!(r["stopped_by"], "signal");
    assert_eq!(r["results"]["received"], 0);
}

#[test]
fn exit_codes() {
    let d = TempDir::new("exit");
    let s = d.file("x.json");
    // Bad arguments: 2.
    for line in [
        "tcp-client --connect 127.0.0.1:9 --bytes 10Mbit --summary {}",
        "udp-send --to 127.0.0.1:9 --size 8 --count 1 --rate 1Mbit --summary {}",
        "probe --to 127.0.0.1:9 --interval 1ms --summary {}",
    ] {
        assert_fails(&cmd(line, &[&s]), 2, "");
    }
    // Runtime failures: 1, with a one-line message naming the problem.
    let err = assert_fails(
        &cmd("tcp-client --connect 127.0.0.1:1 --bytes 1MB --summary {}", &[&s]),
        1,
        "cannot connect",
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let line = "tcp-client --connect 127.0.0.1:1 --bytes 1MB --cc no-such-cc --summary {}";
    assert_fails(&cmd(line, &[&s]), 1, "no-such-cc");
}

#[test]
fn tcp_tls_upload_and_objects() {
    let d = TempDir::new("tls");
    let (ss, cs) = (d.file("srv.json"), d.file("cli.json"));
    let (srv, port) = start_server(&cmd("tcp-server --bind 127.0.0.1:0 --tls --summary {}", &[&ss]));
    let connect = format!("127.0.0.1:{port}");
    let c = &connect;
    assert_eq!(
        run(
            &cmd("tcp-client --connect {} --tls --bytes 10MB --summary {}", &[c, &cs]),
            LIMIT
        ),
        0
    );
    let up = summary(&cs);
    assert_eq!(up["results"]["complete"], true);
    assert_eq!(up["results"]["tls"], true);
    assert!(up["results"]["tls_handshake_s"].as_f64().unwrap() > 0.0);
    assert_eq!(up["results"]["bytes"], 10_000_000);
    assert_eq!(
        run(
            &cmd(
                "tcp-client --connect {} --tls --objects 5 --object-size 300kB --summary {}",
                &[c, &cs]
            ),
            LIMIT
        ),
        0
    );
    let obj = summary(&cs);
    assert_eq!(obj["results"]["complete"], true);
    assert_eq!(obj["results"]["objects_completed"], 5);
    assert_eq!(
        run(
            &cmd(
                "tcp-client --connect {} --tls --direction download --bytes 3MB --summary {}",
                &[c, &cs]
            ),
            LIMIT
        ),
        0
    );
    assert_eq!(summary(&cs)["results"]["bytes"], 3_000_000);
    unsafe { libc::kill(srv.id() as i32, libc::SIGTERM) };
    assert_eq!(wait(srv, LIMIT), 0);
    let s = summary(&ss);
    let conns = s["results"]["connections"].as_array().unwrap();
    assert_eq!(conns.len(), 3);
    for conn in conns {
        assert_eq!(conn["tls"], true);
        assert_eq!(conn["complete"], true, "{conn}");
    }
    assert_eq!(conns[0]["bytes"], 10_000_000);
}
