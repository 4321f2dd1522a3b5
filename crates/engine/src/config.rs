//! The engine's configuration: written by the Python side, never by hand. The engine
//! knows hosts only as TUN file descriptors it inherited and addresses it routes to.

use std::net::Ipv4Addr;
use std::path::PathBuf;

use linkem::spec::DirectionSpec;
use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Where the packet event log goes (format: docs/packet-log.md).
    pub log_path: PathBuf,
    /// Where the run statistics go (JSON, written at exit).
    pub stats_path: PathBuf,
    /// How long before a due time the engine stops sleeping and spins (ns). The kernel's
    /// timer wake-up is tens of microseconds late on a VM; spinning the last stretch
    /// trades CPU for punctuality.
    #[serde(default = "default_spin_ns")]
    pub spin_ns: u64,
    /// Packets read from one TUN device per turn, so one busy host cannot starve others.
    #[serde(default = "default_read_batch")]
    pub read_batch: usize,
    /// SCHED_FIFO priority for the forwarding thread (None: normal scheduling). Other
    /// work on the machine (agents, a compiler) then cannot delay a due packet by a
    /// scheduler time slice; the kernel's RT throttling still bounds its CPU share.
    #[serde(default)]
    pub realtime_priority: Option<i32>,
    pub hosts: Vec<HostConfig>,
    pub directions: Vec<DirectionConfig>,
    pub routes: Vec<RouteConfig>,
}

fn default_spin_ns() -> u64 {
    20_000
}

fn default_read_batch() -> usize {
    64
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    pub name: String,
    /// An open TUN descriptor (IFF_TUN | IFF_NO_PI) inherited from the parent.
    pub tun_fd: i32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectionConfig {
    /// e.g. "bottleneck.forward"; used in statistics only.
    pub name: String,
    pub seed: u64,
    pub spec: DirectionSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteConfig {
    /// Index into `hosts` of the host whose TUN the packet comes out of.
    pub ingress: usize,
    pub dst: Ipv4Addr,
    /// Indices into `directions`, in the order the packet crosses them.
    pub directions: Vec<usize>,
    /// Index into `hosts` of the host the packet is delivered to.
    pub egress: usize,
}

impl Config {
    pub fn load(path: &std::path::Path) -> Result<Config, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let cfg: Config = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        cfg.check().map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(cfg)
    }

    fn check(&self) -> Result<(), String> {
        if self.hosts.len() >= u16::MAX as usize || self.directions.len() >= u16::MAX as usize {
            return Err("too many hosts or directions".into());
        }
        for (i, r) in self.routes.iter().enumerate() {
            if r.ingress >= self.hosts.len() || r.egress >= self.hosts.len() {
                return Err(format!("routes[{i}]: host index out of range"));
            }
            if let Some(d) = r.directions.iter().find(|&&d| d >= self.directions.len()) {
                return Err(format!("routes[{i}].directions: no direction {d}"));
            }
        }
        Ok(())
    }
}
