//! The simulator's input (written by the Python runner, `transportlab.run.simulate`): the
//! engine's own configuration for the network (hosts `{"kind": "simulated"}`), the hosts'
//! addresses, and the flows and probes as the endpoints need them. Times are virtual
//! nanoseconds; the run's time 0 is `t0_ns`.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimConfig {
    /// The engine configuration (crates/engine/src/config.rs) of the network.
    pub network: serde_json::Value,
    /// IPv4 address of each host, in the network's host order.
    pub addresses: Vec<Ipv4Addr>,
    /// Seed of every random choice the endpoints make (QUIC's connection IDs).
    pub seed: u64,
    /// Virtual time of the scenario's time 0 (the packet log's times count from it).
    pub t0_ns: u64,
    pub duration_ns: u64,
    /// End when every flow has finished (`true`) or at the duration.
    #[serde(default)]
    pub stop_when_flows_done: bool,
    /// Folder of the agents' summaries (`<flow>-client.json`, `<flow>-server.json`,
    /// `<probe>.json`).
    pub raw_dir: PathBuf,
    #[serde(default)]
    pub flows: Vec<FlowConfig>,
    #[serde(default)]
    pub probes: Vec<ProbeConfig>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    pub name: String,
    /// "quic", "tcp" or "udp" (the runner refuses the others before writing this file).
    pub protocol: String,
    /// Host indices.
    pub client: usize,
    pub server: usize,
    pub port: u16,
    pub start_ns: u64,
    pub end_ns: u64,
    /// "upload" (client → server) or "download".
    #[serde(default = "upload")]
    pub direction: String,
    /// A transfer of this many bytes instead of a bulk transfer until `end_ns`.
    #[serde(default)]
    pub bytes: Option<u64>,
    /// QUIC: the congestion controller and its parameters (as `agent quic-* --cc`).
    #[serde(default)]
    pub cc: Option<String>,
    #[serde(default)]
    pub cc_params: BTreeMap<String, String>,
    /// QUIC: fixed datagram size (UDP payload); UDP: the datagram payload size; TCP: the
    /// MSS.
    #[serde(default)]
    pub size: Option<u32>,
    /// QUIC: constant-rate messages of this many bytes every `interval_ns` (upload).
    #[serde(default)]
    pub message_size: Option<u32>,
    /// TCP: which stack plays it, "transportlab-tcp" (the default) or "smoltcp".
    #[serde(default)]
    pub stack: Option<String>,
    /// TCP: the hosts' socket-buffer settings (bytes) — the receiving end's `tcp_rmem`
    /// (min, default, max), the sending end's `tcp_wmem[2]` — as the emulated hosts set them.
    #[serde(default)]
    pub rmem: Option<[u64; 3]>,
    #[serde(default)]
    pub sndbuf: Option<u64>,
    /// QUIC: both ends write their connection's qlog into the raw directory.
    #[serde(default)]
    pub qlog: bool,
    /// QUIC: the bulk transfer's streams, or the objects in flight at once.
    #[serde(default = "one")]
    pub streams: u32,
    /// QUIC: objects mode, `objects` objects of `object_size` bytes (a download).
    #[serde(default)]
    pub objects: Option<u64>,
    #[serde(default)]
    pub object_size: Option<u64>,
    /// UDP: `burst` datagrams every `interval_ns`, at most `count` in all.
    #[serde(default)]
    pub interval_ns: Option<u64>,
    #[serde(default = "one")]
    pub burst: u32,
    #[serde(default)]
    pub count: Option<u64>,
}

/// The stacks a TCP flow may run on, the default first.
pub const TCP_STACKS: [&str; 2] = [tcp::STACK_NAME, "smoltcp"];

fn one() -> u32 {
    1
}

fn upload() -> String {
    "upload".into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeConfig {
    pub name: String,
    pub client: usize,
    pub server: usize,
    pub port: u16,
    pub interval_ns: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    #[serde(default)]
    pub count: Option<u64>,
    pub size: u32,
    /// A probe without its echo after this long is lost.
    #[serde(default = "probe_timeout")]
    pub timeout_ns: u64,
}

fn probe_timeout() -> u64 {
    1_000_000_000
}

impl SimConfig {
    pub fn load(path: &std::path::Path) -> Result<SimConfig, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let cfg: SimConfig = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        for (i, f) in cfg.flows.iter().enumerate() {
            let hosts = cfg.addresses.len();
            if f.client >= hosts || f.server >= hosts {
                return Err(format!("flows[{i}] ({}): host index out of range", f.name));
            }
            if !matches!(f.protocol.as_str(), "quic" | "tcp" | "udp") {
                return Err(format!(
                    "flows[{i}] ({}): protocol {:?}: the simulator runs quic, tcp and udp flows",
                    f.name, f.protocol
                ));
            }
            if f.objects.is_some() != f.object_size.is_some() {
                return Err(format!("flows[{i}] ({}): objects and object_size go together", f.name));
            }
            if let Some(stack) = &f.stack {
                if f.protocol != "tcp" || !TCP_STACKS.contains(&stack.as_str()) {
                    return Err(format!(
                        "flows[{i}] ({}): stack {stack:?}: tcp flows are {}",
                        f.name,
                        TCP_STACKS.join(" or ")
                    ));
                }
            }
            if f.streams == 0 {
                return Err(format!("flows[{i}] ({}): streams 0: at least 1", f.name));
            }
            if !matches!(f.direction.as_str(), "upload" | "download") {
                return Err(format!("flows[{i}] ({}): direction {:?}", f.name, f.direction));
            }
        }
        Ok(cfg)
    }
}
