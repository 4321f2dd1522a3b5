//! Helpers shared by the end-to-end tests: temp dirs, starting a server and reading its
//! `READY <port>` line, waiting with a deadline, reading summaries.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const AGENT: &str = env!("CARGO_BIN_EXE_agent");

pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("agent-it-{}-{}", name, std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn file(&self, name: &str) -> String {
        self.0.join(name).to_str().unwrap().to_string()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A command line as a shell line reads: `line`'s words, each `{}` replaced by the next
/// of `values` (the paths and addresses made at run time).
pub fn cmd(line: &str, values: &[&str]) -> Vec<String> {
    let mut values = values.iter();
    let args = line
        .split_whitespace()
        .map(|w| match w {
            "{}" => values.next().expect("a value for every {}").to_string(),
            _ => w.to_string(),
        })
        .collect();
    assert!(values.next().is_none(), "more values than {{}} in {line:?}");
    args
}

/// Starts a server and returns it with the port from its `READY <port>` line.
pub fn start_server(args: &[impl AsRef<OsStr>]) -> (Child, u16) {
    let mut child = Command::new(AGENT)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn agent");
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(l) => l,
        Err(_) => {
            let _ = child.kill();
            panic!("server did not print READY");
        }
    };
    let port = line
        .strip_prefix("READY ")
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    (child, port)
}

/// Waits for a child, killing it and failing after `limit`.
pub fn wait(mut child: Child, limit: Duration) -> i32 {
    let t0 = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st.code().unwrap_or(-1);
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("agent did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn run(args: &[impl AsRef<OsStr>], limit: Duration) -> i32 {
    wait(Command::new(AGENT).args(args).spawn().expect("spawn agent"), limit)
}

/// Runs the agent with `args` and returns its exit code and what it wrote to stderr; it is
/// killed and the test fails after `limit`.
pub fn exit_and_stderr(args: &[impl AsRef<OsStr>], limit: Duration) -> (i32, String) {
    let mut child = Command::new(AGENT)
        .args(args)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn agent");
    let mut stderr = child.stderr.take().unwrap();
    // Read while it runs, so a full pipe cannot stall it.
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let code = wait(child, limit);
    (code, reader.join().unwrap())
}

/// Runs the agent with `args`, which must fail with exit code `code` and a message on
/// stderr containing `wanted`; returns the message.
pub fn assert_fails(args: &[String], code: i32, wanted: &str) -> String {
    let (got, stderr) = exit_and_stderr(args, LIMIT);
    assert_eq!(got, code, "{args:?}: {stderr}");
    assert!(stderr.contains(wanted), "{args:?}: no {wanted:?} in {stderr}");
    stderr
}

/// Runs a server and a client against it on 127.0.0.1, each from a command line as `cmd`
/// reads it, without `{}`. The server binds port 0 and announces its port; in the client's
/// line the word `ADDR` stands for the server's address. Each end writes its summary into
/// `d` (srv.json, cli.json). Returns the client's exit code and stderr; the server must
/// exit 0 after a client that did (after one that failed, it is only waited for).
pub fn run_pair(d: &TempDir, server: &str, client: &str) -> (i32, String) {
    let mut server_args = cmd(server, &[]);
    server_args.extend(["--summary".to_string(), d.file("srv.json")]);
    let (srv, port) = start_server(&server_args);
    let addr = format!("127.0.0.1:{port}");
    let mut client_args: Vec<String> = cmd(client, &[])
        .into_iter()
        .map(|w| if w == "ADDR" { addr.clone() } else { w })
        .collect();
    client_args.extend(["--summary".to_string(), d.file("cli.json")]);
    let (code, stderr) = exit_and_stderr(&client_args, LIMIT);
    let server_code = wait(srv, LIMIT);
    if code == 0 {
        assert_eq!(server_code, 0, "server of `{client}`");
    }
    (code, stderr)
}

/// `run_pair` where the client must succeed: the server's and the client's summaries.
pub fn server_and_client(d: &TempDir, server: &str, client: &str) -> (Value, Value) {
    let (code, stderr) = run_pair(d, server, client);
    assert_eq!(code, 0, "`{client}`: {stderr}");
    (summary(&d.file("srv.json")), summary(&d.file("cli.json")))
}

pub fn summary(path: &str) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

/// The summary's `results` report some CPU time of the process (getrusage), none negative.
pub fn assert_spent_cpu(results: &Value) {
    let user = results["cpu_user_s"].as_f64().unwrap();
    let sys = results["cpu_sys_s"].as_f64().unwrap();
    assert!(user >= 0.0 && sys >= 0.0 && user + sys > 0.0, "{results}");
}

pub fn is_arrow_file(path: &str) -> bool {
    let b = std::fs::read(Path::new(path)).unwrap();
    b.len() > 12 && &b[..6] == b"ARROW1" && &b[b.len() - 6..] == b"ARROW1"
}

pub const LIMIT: Duration = Duration::from_secs(20);
