//! The agent's QUIC controllers against contracts/contract.json, the file the Python side
//! validates `cc` with: the names `--cc` accepts are exactly the file's
//! `controllers.quic`, in order, and each is implemented where the file says — quinn's own
//! take no `--cc-param`, the `congestion` crate's name their known keys. Asked of the
//! built binary, so this is what a run really accepts. And the titles the agent's and the
//! simulator's quinn-proto qlogs get begin as the file's `quinn_qlog_title_prefixes`.

use std::process::{Command, Stdio};

use serde_json::Value;

const AGENT: &str = env!("CARGO_BIN_EXE_agent");

fn contract() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../contracts/contract.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Runs a quic-client that cannot start (its `--cc` choice is refused before any
/// connection) and returns its exit code and its one line of stderr.
fn refused(cc: &str, params: &[&str]) -> (i32, String) {
    let summary = std::env::temp_dir().join(format!("agent-contract-{}.json", std::process::id()));
    let mut cmd = Command::new(AGENT);
    cmd.args(["quic-client", "--connect", "127.0.0.1:9", "--bytes", "1MB", "--cc", cc]);
    for p in params {
        cmd.args(["--cc-param", p]);
    }
    cmd.arg("--summary").arg(&summary);
    let out = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).output().unwrap();
    let _ = std::fs::remove_file(&summary);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).trim().to_string(),
    )
}

#[test]
fn quic_controllers_the_agent_accepts_are_the_contracts() {
    let (code, err) = refused("no-such-controller", &[]);
    assert_eq!(code, 2, "{err}");
    let known = err
        .split_once("(known: ")
        .and_then(|(_, rest)| rest.strip_suffix(')'))
        .unwrap_or_else(|| panic!("the refusal lists the known controllers: {err}"));
    let agent: Vec<&str> = known.split(", ").collect();
    let contract = contract();
    let file: Vec<&str> = contract["controllers"]["quic"]
        .as_array()
        .expect("controllers.quic is a list")
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(agent, file, "`--cc` names of the agent vs controllers.quic");
}

#[test]
fn each_quic_controller_is_implemented_where_the_contract_says() {
    let contract = contract();
    for c in contract["controllers"]["quic"].as_array().unwrap() {
        let name = c["name"].as_str().unwrap();
        let (code, err) = refused(name, &["no_such_key=1"]);
        assert_eq!(code, 2, "{name}: {err}");
        match c["implementation"].as_str() {
            Some("quinn") => assert!(err.contains("takes no parameters"), "{name} is quinn's: {err}"),
            Some("congestion") => assert!(err.contains(&format!("unknown parameter for {name}")), "{name}: {err}"),
            other => panic!("{name}: implementation {other:?} is not a QUIC one"),
        }
    }
}

#[test]
fn quinn_qlog_titles_begin_as_the_contract_says() {
    let contract = contract();
    let file: Vec<&str> = contract["quinn_qlog_title_prefixes"]
        .as_array()
        .expect("quinn_qlog_title_prefixes is a list")
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    let writers: Vec<&str> = agent::transport::QlogWriter::ALL
        .iter()
        .map(|w| w.title_prefix())
        .collect();
    assert_eq!(
        writers, file,
        "QlogWriter's title prefixes vs quinn_qlog_title_prefixes"
    );
}
