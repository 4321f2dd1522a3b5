//! Helpers shared by the end-to-end tests: temp dirs, starting a server and reading its
//! `READY <port>` line, waiting with a deadline, reading summaries.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
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

pub fn summary(path: &str) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

pub fn is_arrow_file(path: &str) -> bool {
    let b = std::fs::read(Path::new(path)).unwrap();
    b.len() > 12 && &b[..6] == b"ARROW1" && &b[b.len() - 6..] == b"ARROW1"
}

pub const LIMIT: Duration = Duration::from_secs(20);
