//! The engine's configuration: written by the Python side, never by hand. The engine
//! knows hosts only as their interfaces (inherited TUN descriptors or veth ends) and addresses it routes to.
//! Format with a complete example: docs/engine-config.md.
//!
//! A direction's `spec` is either a plain linkem `DirectionSpec` or a multipath one
//! (recognised by its `legs` field):
//!
//! ```json
//! {"name": "dc.down", "seed": 7, "leg_names": ["dc.down.master", "dc.down.secondary"],
//!  "spec": {"legs": [DirectionSpec, DirectionSpec],
//!           "split": {"mode": "batch", "batch": 100, "ratio": 0.5},
//!           "merge": {"enabled": true, "t_reordering_ns": 200000000}}}
//! ```
//!
//! `ratio` is leg 1's share (two legs) or a list of one share per leg; `{"mode":
//! "duplicate"}` sends every packet on every leg; `merge` may be omitted (on, 200 ms).
//! Each leg is logged and counted as a direction of its own, numbered after all
//! configured directions in config order ([`Config::leg_indices`]).

use std::net::Ipv4Addr;
use std::path::PathBuf;

use linkem::spec::{validate_any, AnyDirectionSpec, DirectionSpec, MultipathSpec};
use serde::{Deserialize, Deserializer};

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
    /// Packets read from one host interface per turn, so one busy host cannot starve others.
    #[serde(default = "default_read_batch")]
    pub read_batch: usize,
    /// SCHED_FIFO priority for the forwarding thread (None: normal scheduling). Other
    /// work on the machine (agents, a compiler) then cannot delay a due packet by a
    /// scheduler time slice; the kernel's RT throttling still bounds its CPU share.
    #[serde(default)]
    pub realtime_priority: Option<i32>,
    /// Pin the forwarding thread to this CPU (None: anywhere). With veth hosts whose
    /// receive processing is steered to the other CPUs (RPS, set by the runner), the
    /// receiving hosts' network stacks no longer run inside the engine's hand-over.
    #[serde(default)]
    pub cpu: Option<usize>,
    /// Measure the engine's own timer lateness at start and spin at least its p99
    /// before each due time.
    #[serde(default = "default_true")]
    pub calibrate_spin: bool,
    /// While no packet has come or gone for this long (ns), the engine sends each veth host
    /// a frame its stack discards on arrival (`attach::Egress::send_warm`), once per
    /// interval: a hand-over path left idle for 100 ms or more costs the next packet tens
    /// of µs more on a VM (docs/architecture.md, "What this machine kind does"). 0: off.
    #[serde(default)]
    pub warm_interval_ns: u64,
    /// A network namespace (a name under /run/netns, or a path) the engine enters before
    /// opening the hosts' veth ends, so no other stack sees them.
    #[serde(default)]
    pub netns: Option<String>,
    /// Largest IP packet a host may send; a larger one is an unintended drop (counted).
    #[serde(default = "default_mtu")]
    pub mtu: u32,
    /// Most bytes of packets the engine holds at once (in every queue and delay line,
    /// each counted with `forwarder::PACKET_OVERHEAD`); an arrival beyond it is refused,
    /// an unintended drop. An unlimited queue fed faster than its rate grows until
    /// then, instead of until the kernel's OOM killer ends the run.
    #[serde(default = "default_memory_limit")]
    pub memory_limit_bytes: u64,
    /// pcapng capture of the packets leaving some directions (off when absent).
    #[serde(default)]
    pub capture: Option<CaptureConfig>,
    pub hosts: Vec<HostConfig>,
    pub directions: Vec<DirectionConfig>,
    pub routes: Vec<RouteConfig>,
}

/// `{"path", "snaplen", "directions": [index, …]}`: the packets leaving each listed
/// configured direction, their first `snaplen` bytes, one pcapng interface per direction.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureConfig {
    pub path: PathBuf,
    #[serde(default = "default_snaplen")]
    pub snaplen: u32,
    pub directions: Vec<usize>,
}

fn default_snaplen() -> u32 {
    128
}

fn default_spin_ns() -> u64 {
    20_000
}

fn default_read_batch() -> usize {
    64
}

fn default_true() -> bool {
    true
}

fn default_mtu() -> u32 {
    1500
}

fn default_memory_limit() -> u64 {
    2 << 30
}

/// A host: `{"name", "attach": {"kind": "tun", "fd": N}}`, `{"name", "attach": {"kind":
/// "veth", "ifname", "mac", "peer_mac"}}`, or the first format's `{"name", "tun_fd": N}`.
#[derive(Debug, Deserialize)]
#[serde(try_from = "HostConfigRaw")]
pub struct HostConfig {
    pub name: String,
    pub attach: Attach,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Attach {
    /// An open TUN descriptor (IFF_TUN | IFF_NO_PI) inherited from the parent.
    Tun { fd: i32 },
    /// The engine's end of a veth pair (in the engine's namespace): read through an
    /// AF_PACKET receive ring with kernel timestamps, written with Ethernet frames from
    /// `mac` to `peer_mac` (the host's end).
    Veth {
        ifname: String,
        #[serde(deserialize_with = "mac")]
        mac: [u8; 6],
        #[serde(deserialize_with = "mac")]
        peer_mac: [u8; 6],
    },
    /// A host of the simulator (`tlab-sim`): its endpoints live in the simulator's
    /// process, in virtual time. The real-time engine refuses it.
    Simulated,
}

impl Attach {
    pub fn kind(&self) -> &'static str {
        match self {
            Attach::Tun { .. } => "tun",
            Attach::Veth { .. } => "veth",
            Attach::Simulated => "simulated",
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HostConfigRaw {
    name: String,
    #[serde(default)]
    tun_fd: Option<i32>,
    #[serde(default)]
    attach: Option<Attach>,
}

impl TryFrom<HostConfigRaw> for HostConfig {
    type Error = String;
    fn try_from(r: HostConfigRaw) -> Result<HostConfig, String> {
        let attach = match (r.tun_fd, r.attach) {
            (Some(fd), None) => Attach::Tun { fd },
            (None, Some(a)) => a,
            _ => return Err(format!("host {:?}: give exactly one of `attach` and `tun_fd`", r.name)),
        };
        Ok(HostConfig { name: r.name, attach })
    }
}

/// "02:00:00:00:01:01" → bytes.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut parts = s.split(':');
    for b in &mut out {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}

fn mac<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 6], D::Error> {
    use serde::de::Error;
    let s = String::deserialize(d)?;
    parse_mac(&s).ok_or_else(|| D::Error::custom(format!("not a MAC address: {s:?}")))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectionConfig {
    /// e.g. "bottleneck.forward"; used in statistics only.
    pub name: String,
    /// The direction's seed; a multipath direction derives one per leg from it.
    pub seed: u64,
    #[serde(deserialize_with = "any_direction_spec")]
    pub spec: AnyDirectionSpec,
    /// Multipath only, optional: the legs' names in statistics (default
    /// "<name>.leg1", "<name>.leg2", …).
    #[serde(default)]
    pub leg_names: Option<Vec<String>>,
}

impl DirectionConfig {
    /// Number of legs (0 for a plain direction).
    pub fn legs(&self) -> usize {
        match &self.spec {
            AnyDirectionSpec::Single(_) => 0,
            AnyDirectionSpec::Multipath(m) => m.legs.len(),
        }
    }

    /// The name of leg `leg` (0-based) in statistics.
    pub fn leg_name(&self, leg: usize) -> String {
        match &self.leg_names {
            Some(names) => names[leg].clone(),
            None => format!("{}.leg{}", self.name, leg + 1),
        }
    }
}

/// A multipath spec is recognised by its `legs` field. Dispatching on it (rather than
/// letting serde try each kind in turn) keeps the error of the kind that was meant,
/// e.g. "unknown field `ratoi`", instead of "did not match any variant".
fn any_direction_spec<'de, D: Deserializer<'de>>(d: D) -> Result<AnyDirectionSpec, D::Error> {
    use serde::de::Error;
    let v = serde_json::Value::deserialize(d)?;
    if v.get("legs").is_some() {
        serde_json::from_value::<MultipathSpec>(v)
            .map(AnyDirectionSpec::Multipath)
            .map_err(|e| D::Error::custom(format!("multipath spec: {e}")))
    } else {
        serde_json::from_value::<DirectionSpec>(v)
            .map(AnyDirectionSpec::Single)
            .map_err(D::Error::custom)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteConfig {
    /// Index into `hosts` of the host whose interface the packet comes out of.
    pub ingress: usize,
    pub dst: Ipv4Addr,
    /// Indices into `directions`, in the order the packet crosses them.
    pub directions: Vec<usize>,
    /// Optional, one entry per hop: `null`, or a leg index (0-based) of that hop's
    /// multipath direction on which this route's packets ride alone, bypassing its split
    /// and merge (a single-leg user sharing the leg with the split traffic).
    #[serde(default)]
    pub legs: Option<Vec<Option<usize>>>,
    /// Index into `hosts` of the host the packet is delivered to.
    pub egress: usize,
}

impl Config {
    pub fn load(path: &std::path::Path) -> Result<Config, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Config::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses and checks a configuration.
    pub fn parse(text: &str) -> Result<Config, String> {
        let cfg: Config = serde_json::from_str(text).map_err(|e| e.to_string())?;
        cfg.check()?;
        Ok(cfg)
    }

    /// Direction index (in the packet log and in the statistics' `directions`) of each
    /// leg of each configured direction: `[d][k]` for leg k of direction d (empty for a
    /// plain direction). Legs are numbered after all configured directions, in config
    /// order: the first multipath direction's legs are N, N+1, …, with N =
    /// `directions.len()`.
    pub fn leg_indices(&self) -> Vec<Vec<usize>> {
        let mut next = self.directions.len();
        self.directions
            .iter()
            .map(|d| {
                let first = next;
                next += d.legs();
                (first..next).collect()
            })
            .collect()
    }

    /// Configured directions plus legs: every index the log and the statistics use.
    pub fn log_directions(&self) -> usize {
        self.directions.len() + self.directions.iter().map(|d| d.legs()).sum::<usize>()
    }

    fn check(&self) -> Result<(), String> {
        if self.hosts.len() >= u16::MAX as usize || self.log_directions() >= u16::MAX as usize {
            return Err("too many hosts or directions (legs of multipath directions included)".into());
        }
        for (i, d) in self.directions.iter().enumerate() {
            validate_any(&d.spec).map_err(|e| format!("directions[{i}] ({}): {e}", d.name))?;
            match &d.leg_names {
                Some(names) if names.len() != d.legs() => {
                    return Err(format!(
                        "directions[{i}] ({}): leg_names has {} names for {} legs",
                        d.name,
                        names.len(),
                        d.legs()
                    ))
                }
                _ => {}
            }
        }
        if let Some(c) = &self.capture {
            if !(20..=65_535).contains(&c.snaplen) {
                return Err(format!(
                    "capture.snaplen: {} is not 20 (an IPv4 header) to 65535 bytes",
                    c.snaplen
                ));
            }
            if let Some(d) = c.directions.iter().find(|&&d| d >= self.directions.len()) {
                return Err(format!("capture.directions: no direction {d}"));
            }
            if c.directions.is_empty() {
                return Err("capture.directions: empty (leave capture out to capture nothing)".into());
            }
        }
        for (i, r) in self.routes.iter().enumerate() {
            if r.ingress >= self.hosts.len() || r.egress >= self.hosts.len() {
                return Err(format!("routes[{i}]: host index out of range"));
            }
            if let Some(d) = r.directions.iter().find(|&&d| d >= self.directions.len()) {
                return Err(format!("routes[{i}].directions: no direction {d}"));
            }
            if let Some(legs) = &r.legs {
                if legs.len() != r.directions.len() {
                    return Err(format!(
                        "routes[{i}].legs: {} entries for {} hops",
                        legs.len(),
                        r.directions.len()
                    ));
                }
                for (&d, leg) in r.directions.iter().zip(legs) {
                    let Some(leg) = leg else { continue };
                    let have = self.directions[d].legs();
                    if *leg >= have {
                        return Err(format!(
                            "routes[{i}].legs: direction {d} ({}) has no leg {leg} (it has {have} legs{})",
                            self.directions[d].name,
                            if have == 0 { ": not a multipath direction" } else { "" }
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linkem::spec::{Ratio, SplitSpec};

    /// The complete example of docs/engine-config.md (its ```json block), so the
    /// documentation cannot drift from the parser.
    pub(crate) fn documented_example() -> String {
        let doc = include_str!("../../../docs/engine-config.md");
        let start = doc.find("```json\n").expect("a json example") + "```json\n".len();
        let end = start + doc[start..].find("```").unwrap();
        doc[start..end].to_string()
    }

    #[test]
    fn documented_multipath_example_parses() {
        let cfg = Config::parse(&documented_example()).unwrap();
        assert_eq!(cfg.directions.len(), 2);
        assert_eq!(cfg.leg_indices(), vec![vec![2, 3], vec![]]);
        assert_eq!(cfg.log_directions(), 4);
        let AnyDirectionSpec::Multipath(m) = &cfg.directions[0].spec else {
            panic!("multipath")
        };
        assert_eq!(m.legs.len(), 2);
        assert_eq!(
            m.split,
            SplitSpec::Batch {
                batch: 100,
                ratio: Ratio::FirstLeg(0.5)
            }
        );
        assert!(m.merge.enabled);
        assert_eq!(m.merge.t_reordering_ns, 200_000_000);
        assert_eq!(cfg.directions[0].leg_name(1), "dc.down.secondary");
        assert!(matches!(cfg.directions[1].spec, AnyDirectionSpec::Single(_)));
    }

    fn with_spec(spec: &str, extra: &str) -> Result<Config, String> {
        Config::parse(&format!(
            r#"{{"log_path": "l", "stats_path": "s", "hosts": [], "routes": [],
                "directions": [{{"name": "p", "seed": 1, "spec": {{"delay": 5}}}},
                               {{"name": "m", "seed": 2, "spec": {spec}{extra}}}]}}"#
        ))
    }

    #[test]
    fn multipath_variants_and_defaults() {
        let cfg = with_spec(
            r#"{"legs": [{}, {}, {}], "split": {"mode": "batch", "batch": 10, "ratio": [0.2, 0.5, 0.3]}}"#,
            "",
        )
        .unwrap();
        assert_eq!(cfg.leg_indices(), vec![vec![], vec![2, 3, 4]]);
        assert_eq!(cfg.directions[1].leg_name(2), "m.leg3");
        let AnyDirectionSpec::Multipath(m) = &cfg.directions[1].spec else {
            panic!()
        };
        assert_eq!(m.merge, linkem::spec::MergeSpec::default());
        let cfg = with_spec(
            r#"{"legs": [{}, {}], "split": {"mode": "duplicate"}, "merge": {"enabled": false}}"#,
            "",
        )
        .unwrap();
        let AnyDirectionSpec::Multipath(m) = &cfg.directions[1].spec else {
            panic!()
        };
        assert_eq!(
            (m.split.clone(), m.merge.enabled, m.merge.t_reordering_ns),
            (SplitSpec::Duplicate, false, 200_000_000)
        );
    }

    #[test]
    fn multipath_errors_name_the_problem() {
        let cases = [
            (
                r#"{"legs": [{}, {}], "split": {"mode": "batch", "batch": 10, "ratoi": 0.5}}"#,
                "",
                "ratoi",
            ),
            (r#"{"legs": [{}, {}], "split": {"mode": "spray"}}"#, "", "spray"),
            (
                r#"{"legs": [{}, {"dealy": 1}], "split": {"mode": "duplicate"}}"#,
                "",
                "dealy",
            ),
            (
                r#"{"legs": [{}, {}], "split": {"mode": "batch", "batch": 10, "ratio": [0.5, 0.6]}}"#,
                "",
                "sum to 1",
            ),
            (
                r#"{"legs": [{}], "split": {"mode": "duplicate"}}"#,
                "",
                "at least 2 legs",
            ),
            (
                r#"{"legs": [{}, {}], "split": {"mode": "batch", "batch": 0, "ratio": 0.5}}"#,
                "",
                "at least 1",
            ),
            (
                r#"{"legs": [{}, {}], "split": {"mode": "duplicate"}}"#,
                r#", "leg_names": ["a"]"#,
                "1 names for 2 legs",
            ),
            (
                r#"{"legs": [{}, {}], "split": {"mode": "duplicate"}, "merge": {"t_reordering": 5}}"#,
                "",
                "t_reordering",
            ),
        ];
        for (spec, extra, want) in cases {
            let e = with_spec(spec, extra).unwrap_err();
            assert!(e.contains(want), "{spec}: {e:?} should mention {want:?}");
        }
        let e = with_spec(
            r#"{"legs": [{}, {}], "split": {"mode": "batch", "batch": 10, "ratio": 0.5}}"#,
            "",
        )
        .map(|_| ());
        assert_eq!(e, Ok(()));
    }

    /// A direction's queue: the old drop-tail forms, a discipline with parameters (on a
    /// plain direction or a leg), and errors that name the field.
    #[test]
    fn queues_with_disciplines() {
        use linkem::spec::{DisciplineSpec, QueueSpec};
        let queue_of = |cfg: &Config| match &cfg.directions[1].spec {
            AnyDirectionSpec::Single(d) => d.queue.clone(),
            AnyDirectionSpec::Multipath(m) => m.legs[1].queue.clone(),
        };
        let cfg = with_spec(
            r#"{"rate": {"constant": {"bits_per_sec": 1000000}}, "queue": {"packets": 50}}"#,
            "",
        )
        .unwrap();
        assert_eq!(queue_of(&cfg), linkem::queue::QueueLimit::Packets(50).into());
        let codel =
            r#"{"discipline": "codel", "packets": 1000, "target_ns": 5000000, "interval_ns": 100000000, "ecn": true}"#;
        let cfg = with_spec(
            &format!(r#"{{"rate": {{"constant": {{"bits_per_sec": 1000000}}}}, "queue": {codel}}}"#),
            "",
        )
        .unwrap();
        let want = QueueSpec::new(DisciplineSpec::Codel(Default::default())).with_ecn(true);
        assert_eq!(queue_of(&cfg), want);
        let leg = format!(r#"{{"legs": [{{}}, {{"queue": {codel}}}], "split": {{"mode": "duplicate"}}}}"#);
        assert_eq!(queue_of(&with_spec(&leg, "").unwrap()), want);
        for (queue, needle) in [
            (
                r#"{"discipline": "red", "interval_ns": 5}"#,
                "`interval_ns` is not a parameter of discipline red",
            ),
            (r#"{"discipline": "codel", "interval_ns": 0}"#, "queue.interval_ns"),
            (r#"{"discipline": "fq_codel", "quantum": 5}"#, "quantum"),
        ] {
            let e = with_spec(&format!(r#"{{"queue": {queue}}}"#), "").unwrap_err();
            assert!(e.contains(needle), "{queue}: {e:?} should mention {needle:?}");
        }
    }

    #[test]
    fn hosts_attach_by_tun_or_veth() {
        let hosts = |h: &str| {
            Config::parse(&format!(
                r#"{{"log_path": "l", "stats_path": "s", "hosts": [{h}], "directions": [], "routes": []}}"#
            ))
        };
        assert_eq!(
            hosts(r#"{"name": "a", "tun_fd": 3}"#).unwrap().hosts[0].attach,
            Attach::Tun { fd: 3 }
        );
        assert_eq!(
            hosts(r#"{"name": "a", "attach": {"kind": "tun", "fd": 4}}"#)
                .unwrap()
                .hosts[0]
                .attach,
            Attach::Tun { fd: 4 }
        );
        let v = hosts(r#"{"name": "a", "attach": {"kind": "veth", "ifname": "tlabx0", "mac": "02:00:00:00:00:01", "peer_mac": "02:00:00:00:00:0a"}}"#)
            .unwrap();
        assert_eq!(
            v.hosts[0].attach,
            Attach::Veth {
                ifname: "tlabx0".into(),
                mac: [2, 0, 0, 0, 0, 1],
                peer_mac: [2, 0, 0, 0, 0, 10]
            }
        );
        for (h, want) in [
            (r#"{"name": "a"}"#, "exactly one"),
            (
                r#"{"name": "a", "tun_fd": 3, "attach": {"kind": "tun", "fd": 3}}"#,
                "exactly one",
            ),
            (
                r#"{"name": "a", "attach": {"kind": "veth", "ifname": "x", "mac": "02:00", "peer_mac": "02:00:00:00:00:0a"}}"#,
                "MAC",
            ),
            (r#"{"name": "a", "attach": {"kind": "tap", "fd": 3}}"#, "tap"),
        ] {
            let e = hosts(h).unwrap_err();
            assert!(e.contains(want), "{h}: {e:?} should mention {want:?}");
        }
    }

    #[test]
    fn routes_may_pin_a_hop_to_a_leg() {
        let cfg = |legs: &str| {
            Config::parse(&format!(
                r#"{{"log_path": "l", "stats_path": "s", "hosts": [{{"name": "a", "tun_fd": 3}}, {{"name": "b", "tun_fd": 4}}],
                    "directions": [{{"name": "p", "seed": 1, "spec": {{}}}},
                                   {{"name": "m", "seed": 2, "spec": {{"legs": [{{}}, {{}}], "split": {{"mode": "duplicate"}}}}}}],
                    "routes": [{{"ingress": 0, "dst": "10.0.0.2", "directions": [0, 1], "egress": 1{legs}}}]}}"#
            ))
        };
        assert_eq!(cfg("").unwrap().routes[0].legs, None);
        assert_eq!(
            cfg(r#", "legs": [null, 1]"#).unwrap().routes[0].legs,
            Some(vec![None, Some(1)])
        );
        for (legs, want) in [
            (r#", "legs": [null, 2]"#, "has no leg 2 (it has 2 legs)"),
            (r#", "legs": [0, null]"#, "not a multipath direction"),
            (r#", "legs": [null]"#, "1 entries for 2 hops"),
        ] {
            let e = cfg(legs).unwrap_err();
            assert!(e.contains(want), "{e:?} should mention {want:?}");
        }
    }
}
