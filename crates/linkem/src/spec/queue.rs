//! A direction's queue: its discipline, hard limit and ECN switch, as the engine's
//! configuration carries it (docs/engine-config.md).
//!
//! JSON forms of `queue`:
//!
//! * `"unlimited"`, `{"packets": N}`, `{"bytes": N}`: drop-tail, exactly as before
//!   disciplines existed;
//! * `{"discipline": NAME, …}` with NAME one of `drop_tail`, `drop_head`, `red`, `codel`,
//!   `pie`, `fq_codel`, the limit as `"packets": N` or `"bytes": N` (default: unlimited
//!   for drop-tail and drop-head, 1000 packets for RED, CoDel and PIE, 10240 for
//!   FQ-CoDel), `"ecn": bool` for the AQMs (default false), and the discipline's own
//!   parameters, each optional with its RFC's default:
//!   - `red`: `min_th`, `max_th` (packets), `max_p`, `w_q`, `gentle`, `avpkt_bytes`;
//!   - `codel`: `target_ns`, `interval_ns`, `mtu_bytes`;
//!   - `pie`: `target_ns`, `t_update_ns`, `alpha`, `beta`, `max_burst_ns`,
//!     `mean_packet_bytes`, `mark_ecnth`;
//!   - `fq_codel`: `flows`, `quantum_bytes`, `target_ns`, `interval_ns`, `mtu_bytes`;
//!   - `dualpi2`: `target_ns`, `t_update_ns`, `alpha`, `beta`, `k`, `l_threshold_ns`,
//!     `l_range_ns`, `tshift_ns`.
//!
//! A field that is not a parameter of the discipline is an error naming it.

#[cfg(feature = "serde")]
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::QueueLimit;
use crate::link::Link;
use crate::queue::codel::{self, Codel, CodelParams};
use crate::queue::dualpi2::{self, DualPi2, DualPi2Params};
use crate::queue::fq_codel::{self, FqCodel, FqCodelParams, MAX_FLOWS};
use crate::queue::pie::{self, Pie, PieParams};
use crate::queue::red::{self, Red, RedParams};
use crate::queue::{Discipline, DropHead, DropTail};
use crate::Nanos;

/// The queue of a direction (ahead of its rate stage).
#[derive(Debug, Clone, PartialEq)]
pub struct QueueSpec {
    pub discipline: DisciplineSpec,
    /// Hard limit; counts the packet on the wire too (see [`crate::queue`]).
    pub limit: QueueLimit,
    /// An AQM marks ECN-capable packets (ECT(0), ECT(1), CE) instead of dropping them;
    /// not-ECT packets are dropped as without it. Hard-limit drops stay drops.
    pub ecn: bool,
}

/// Which discipline, with its parameters.
#[derive(Debug, Clone, PartialEq)]
pub enum DisciplineSpec {
    DropTail,
    DropHead,
    Red(RedParams),
    Codel(CodelParams),
    Pie(PieParams),
    FqCodel(FqCodelParams),
    DualPi2(DualPi2Params),
}

/// The disciplines' names in JSON.
pub const DISCIPLINES: [&str; 7] = ["drop_tail", "drop_head", "red", "codel", "pie", "fq_codel", "dualpi2"];

impl DisciplineSpec {
    pub fn name(&self) -> &'static str {
        match self {
            DisciplineSpec::DropTail => "drop_tail",
            DisciplineSpec::DropHead => "drop_head",
            DisciplineSpec::Red(_) => "red",
            DisciplineSpec::Codel(_) => "codel",
            DisciplineSpec::Pie(_) => "pie",
            DisciplineSpec::FqCodel(_) => "fq_codel",
            DisciplineSpec::DualPi2(_) => "dualpi2",
        }
    }

    /// The limit a queue of this discipline has when none is given.
    pub fn default_limit(&self) -> QueueLimit {
        match self {
            DisciplineSpec::DropTail | DisciplineSpec::DropHead => QueueLimit::Unlimited,
            DisciplineSpec::Red(_) => red::DEFAULT_LIMIT,
            DisciplineSpec::Codel(_) => codel::DEFAULT_LIMIT,
            DisciplineSpec::Pie(_) => pie::DEFAULT_LIMIT,
            DisciplineSpec::FqCodel(_) => fq_codel::DEFAULT_LIMIT,
            DisciplineSpec::DualPi2(_) => dualpi2::DEFAULT_LIMIT,
        }
    }

    /// Whether it drops (or marks) before the queue is full.
    pub fn is_aqm(&self) -> bool {
        !matches!(self, DisciplineSpec::DropTail | DisciplineSpec::DropHead)
    }

    /// Whether packets leave in arrival order (all but FQ-CoDel and DualPI2's two queues).
    pub fn is_fifo(&self) -> bool {
        !matches!(self, DisciplineSpec::FqCodel(_) | DisciplineSpec::DualPi2(_))
    }
}

impl Default for QueueSpec {
    fn default() -> Self {
        QueueSpec::drop_tail(QueueLimit::Unlimited)
    }
}

impl From<QueueLimit> for QueueSpec {
    fn from(limit: QueueLimit) -> Self {
        QueueSpec::drop_tail(limit)
    }
}

impl QueueSpec {
    pub fn drop_tail(limit: QueueLimit) -> Self {
        QueueSpec {
            discipline: DisciplineSpec::DropTail,
            limit,
            ecn: false,
        }
    }

    /// `discipline` with its default limit, ECN off.
    pub fn new(discipline: DisciplineSpec) -> Self {
        QueueSpec {
            limit: discipline.default_limit(),
            discipline,
            ecn: false,
        }
    }

    pub fn with_limit(self, limit: QueueLimit) -> Self {
        QueueSpec { limit, ..self }
    }

    /// Whether this queue may ECN-mark a packet of codepoint `ecn`: an AQM with `ecn` on
    /// marks ECN-capable packets; DualPI2 marks its L4S packets (ECT(1), CE) always —
    /// L4S senders ask for it by their codepoint.
    pub fn may_mark(&self, ecn: crate::Ecn) -> bool {
        let l4s =
            matches!(self.discipline, DisciplineSpec::DualPi2(_)) && matches!(ecn, crate::Ecn::Ect1 | crate::Ecn::Ce);
        l4s || (self.ecn && self.discipline.is_aqm() && ecn.is_capable())
    }

    pub fn with_ecn(self, ecn: bool) -> Self {
        QueueSpec { ecn, ..self }
    }

    /// Checks the limit and the parameters; errors name the field (`queue.<field>`).
    pub fn validate(&self) -> Result<(), String> {
        let name = self.discipline.name();
        match self.limit {
            QueueLimit::Packets(0) => return Err("queue limit of 0 packets would drop every packet".into()),
            QueueLimit::Bytes(0) => return Err("queue limit of 0 bytes would drop every packet".into()),
            QueueLimit::Unlimited if self.discipline.is_aqm() => {
                return Err(format!("queue: {name} needs a limit (`packets` or `bytes`)"))
            }
            _ => {}
        }
        if self.ecn && !self.discipline.is_aqm() {
            return Err(format!(
                "queue.ecn: {name} never drops early, so there is nothing to mark instead (ecn applies to red, codel, pie and fq_codel)"
            ));
        }
        fn check(ok: bool, field: &str, what: &str, got: impl std::fmt::Display) -> Result<(), String> {
            if ok {
                Ok(())
            } else {
                Err(format!("queue.{field} must be {what}, got {got}"))
            }
        }
        let codel = |c: &CodelParams| -> Result<(), String> {
            check(c.target > 0, "target_ns", "> 0", c.target)?;
            check(c.interval > 0, "interval_ns", "> 0", c.interval)
        };
        // The PI controller both PIE and DualPI2 run.
        let pi = |target: Nanos, t_update: Nanos, alpha: f64, beta: f64| -> Result<(), String> {
            check(target > 0, "target_ns", "> 0", target)?;
            check(
                t_update >= pie::MIN_T_UPDATE,
                "t_update_ns",
                "≥ 100000 (100 µs)",
                t_update,
            )?;
            check(alpha.is_finite() && alpha >= 0.0, "alpha", "a number ≥ 0 (1/s)", alpha)?;
            check(beta.is_finite() && beta >= 0.0, "beta", "a number ≥ 0 (1/s)", beta)
        };
        match &self.discipline {
            DisciplineSpec::DropTail | DisciplineSpec::DropHead => Ok(()),
            DisciplineSpec::Red(r) => {
                check(
                    r.min_th.is_finite() && r.min_th >= 0.0,
                    "min_th",
                    "a number ≥ 0 (packets)",
                    r.min_th,
                )?;
                check(
                    r.max_th.is_finite() && r.max_th > r.min_th,
                    "max_th",
                    "a number > min_th (packets)",
                    r.max_th,
                )?;
                check(r.max_p > 0.0 && r.max_p <= 1.0, "max_p", "in (0, 1]", r.max_p)?;
                check(r.w_q > 0.0 && r.w_q <= 1.0, "w_q", "in (0, 1]", r.w_q)?;
                check(r.avpkt_bytes > 0, "avpkt_bytes", "> 0", r.avpkt_bytes)
            }
            DisciplineSpec::Codel(c) => codel(c),
            DisciplineSpec::Pie(p) => {
                pi(p.target, p.t_update, p.alpha, p.beta)?;
                check(
                    (0.0..=1.0).contains(&p.mark_ecnth),
                    "mark_ecnth",
                    "a probability in [0, 1]",
                    p.mark_ecnth,
                )
            }
            DisciplineSpec::FqCodel(f) => {
                check(
                    (1..=MAX_FLOWS).contains(&f.flows),
                    "flows",
                    &format!("in 1..={MAX_FLOWS}"),
                    f.flows,
                )?;
                check(f.quantum > 0, "quantum_bytes", "> 0", f.quantum)?;
                codel(&f.codel)
            }
            DisciplineSpec::DualPi2(d) => {
                pi(d.target, d.t_update, d.alpha, d.beta)?;
                check(d.k.is_finite() && d.k > 0.0, "k", "a number > 0", d.k)
            }
        }
    }

    /// The discipline for a queue in front of `link` (RED ages its average in units of
    /// the link's time to send a packet). The spec must be valid.
    pub fn build<P: Send + 'static>(&self, link: &Link) -> Box<dyn Discipline<P>> {
        let (limit, ecn) = (self.limit, self.ecn);
        match &self.discipline {
            DisciplineSpec::DropTail => Box::new(DropTail::new(limit)),
            DisciplineSpec::DropHead => Box::new(DropHead::new(limit)),
            DisciplineSpec::Red(r) => Box::new(Red::new(*r, limit, ecn, link.mean_tx_ns(r.avpkt_bytes))),
            DisciplineSpec::Codel(c) => Box::new(Codel::new(*c, limit, ecn)),
            DisciplineSpec::Pie(p) => Box::new(Pie::new(*p, limit, ecn)),
            DisciplineSpec::FqCodel(f) => Box::new(FqCodel::new(*f, limit, ecn)),
            DisciplineSpec::DualPi2(d) => Box::new(DualPi2::new(*d, limit, ecn)),
        }
    }
}

// ---------------------------------------------------------------------------------------
// JSON

/// Every field any form of `queue` may have, flat; which ones a discipline takes is
/// checked after parsing, so errors name the field.
#[cfg(feature = "serde")]
#[derive(Debug, Default, Serialize)]
struct RawQueue {
    #[serde(skip_serializing_if = "Option::is_none")]
    discipline: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    packets: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ecn: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    min_th: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_th: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    w_q: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    gentle: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    avpkt_bytes: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    target_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    interval_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mtu_bytes: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    t_update_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    alpha: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    beta: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_burst_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mean_packet_bytes: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mark_ecnth: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flows: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    quantum_bytes: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    k: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    l_threshold_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    l_range_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tshift_ns: Option<u64>,
}

/// The JSON names of [`RawQueue`]'s fields.
#[cfg(feature = "serde")]
const FIELDS: [&str; 25] = [
    "discipline",
    "packets",
    "bytes",
    "ecn",
    "min_th",
    "max_th",
    "max_p",
    "w_q",
    "gentle",
    "avpkt_bytes",
    "target_ns",
    "interval_ns",
    "mtu_bytes",
    "t_update_ns",
    "alpha",
    "beta",
    "max_burst_ns",
    "mean_packet_bytes",
    "mark_ecnth",
    "flows",
    "quantum_bytes",
    "k",
    "l_threshold_ns",
    "l_range_ns",
    "tshift_ns",
];

#[cfg(feature = "serde")]
impl RawQueue {
    /// Reads the fields of a JSON object one by one, so that an unknown, repeated or
    /// mistyped field is an error that names it (`queue.<field>: …`).
    fn read<'de, A: serde::de::MapAccess<'de>>(mut map: A) -> Result<RawQueue, A::Error> {
        use serde::de::Error;
        fn value<'de, T: Deserialize<'de>, A: serde::de::MapAccess<'de>>(
            map: &mut A,
            slot: &mut Option<T>,
            key: &str,
        ) -> Result<(), A::Error> {
            if slot.is_some() {
                return Err(A::Error::custom(format!("queue.{key}: given twice")));
            }
            *slot = Some(
                map.next_value()
                    .map_err(|e| A::Error::custom(format!("queue.{key}: {e}")))?,
            );
            Ok(())
        }
        let mut r = RawQueue::default();
        while let Some(key) = map.next_key::<String>()? {
            let m = &mut map;
            match key.as_str() {
                "discipline" => value(m, &mut r.discipline, &key)?,
                "packets" => value(m, &mut r.packets, &key)?,
                "bytes" => value(m, &mut r.bytes, &key)?,
                "ecn" => value(m, &mut r.ecn, &key)?,
                "min_th" => value(m, &mut r.min_th, &key)?,
                "max_th" => value(m, &mut r.max_th, &key)?,
                "max_p" => value(m, &mut r.max_p, &key)?,
                "w_q" => value(m, &mut r.w_q, &key)?,
                "gentle" => value(m, &mut r.gentle, &key)?,
                "avpkt_bytes" => value(m, &mut r.avpkt_bytes, &key)?,
                "target_ns" => value(m, &mut r.target_ns, &key)?,
                "interval_ns" => value(m, &mut r.interval_ns, &key)?,
                "mtu_bytes" => value(m, &mut r.mtu_bytes, &key)?,
                "t_update_ns" => value(m, &mut r.t_update_ns, &key)?,
                "alpha" => value(m, &mut r.alpha, &key)?,
                "beta" => value(m, &mut r.beta, &key)?,
                "max_burst_ns" => value(m, &mut r.max_burst_ns, &key)?,
                "mean_packet_bytes" => value(m, &mut r.mean_packet_bytes, &key)?,
                "mark_ecnth" => value(m, &mut r.mark_ecnth, &key)?,
                "flows" => value(m, &mut r.flows, &key)?,
                "quantum_bytes" => value(m, &mut r.quantum_bytes, &key)?,
                "k" => value(m, &mut r.k, &key)?,
                "l_threshold_ns" => value(m, &mut r.l_threshold_ns, &key)?,
                "l_range_ns" => value(m, &mut r.l_range_ns, &key)?,
                "tshift_ns" => value(m, &mut r.tshift_ns, &key)?,
                other => {
                    return Err(A::Error::custom(format!(
                        "queue: unknown field `{other}`, expected one of {}",
                        FIELDS.join(", ")
                    )))
                }
            }
        }
        Ok(r)
    }

    /// The parameter fields that are present.
    fn present(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        macro_rules! note {
            ($($f:ident),*) => { $( if self.$f.is_some() { v.push(stringify!($f)); } )* };
        }
        note!(
            min_th,
            max_th,
            max_p,
            w_q,
            gentle,
            avpkt_bytes,
            target_ns,
            interval_ns,
            mtu_bytes,
            t_update_ns,
            alpha,
            beta,
            max_burst_ns,
            mean_packet_bytes,
            mark_ecnth,
            flows,
            quantum_bytes,
            k,
            l_threshold_ns,
            l_range_ns,
            tshift_ns
        );
        v
    }

    fn into_spec(self) -> Result<QueueSpec, String> {
        let Some(name) = self.discipline.clone() else {
            // The forms without a discipline: drop-tail with a limit.
            if let Some(field) = self.present().first().copied().or(self.ecn.map(|_| "ecn")) {
                return Err(format!(
                    "queue: `{field}` needs a `discipline` (one of {}); without one the queue is drop-tail, which takes only `packets` or `bytes`",
                    DISCIPLINES.join(", ")
                ));
            }
            return match (self.packets, self.bytes) {
                (Some(n), None) => Ok(QueueSpec::drop_tail(QueueLimit::Packets(n))),
                (None, Some(n)) => Ok(QueueSpec::drop_tail(QueueLimit::Bytes(n))),
                (Some(_), Some(_)) => Err("queue: give `packets` or `bytes`, not both".into()),
                (None, None) => Err(format!(
                    "queue: give `packets`, `bytes` or a `discipline` (one of {}), or write \"unlimited\"",
                    DISCIPLINES.join(", ")
                )),
            };
        };
        let (discipline, params): (DisciplineSpec, &[&str]) = match name.as_str() {
            "drop_tail" => (DisciplineSpec::DropTail, &[]),
            "drop_head" => (DisciplineSpec::DropHead, &[]),
            "red" => {
                let d = RedParams::default();
                let r = RedParams {
                    min_th: self.min_th.unwrap_or(d.min_th),
                    max_th: self.max_th.unwrap_or(d.max_th),
                    max_p: self.max_p.unwrap_or(d.max_p),
                    w_q: self.w_q.unwrap_or(d.w_q),
                    gentle: self.gentle.unwrap_or(d.gentle),
                    avpkt_bytes: self.avpkt_bytes.unwrap_or(d.avpkt_bytes),
                };
                (
                    DisciplineSpec::Red(r),
                    &["min_th", "max_th", "max_p", "w_q", "gentle", "avpkt_bytes"],
                )
            }
            "codel" => (
                DisciplineSpec::Codel(self.codel()),
                &["target_ns", "interval_ns", "mtu_bytes"],
            ),
            "pie" => {
                let d = PieParams::default();
                let p = PieParams {
                    target: self.target_ns.unwrap_or(d.target),
                    t_update: self.t_update_ns.unwrap_or(d.t_update),
                    alpha: self.alpha.unwrap_or(d.alpha),
                    beta: self.beta.unwrap_or(d.beta),
                    max_burst: self.max_burst_ns.unwrap_or(d.max_burst),
                    mean_packet_bytes: self.mean_packet_bytes.unwrap_or(d.mean_packet_bytes),
                    mark_ecnth: self.mark_ecnth.unwrap_or(d.mark_ecnth),
                };
                let fields: &[&str] = &[
                    "target_ns",
                    "t_update_ns",
                    "alpha",
                    "beta",
                    "max_burst_ns",
                    "mean_packet_bytes",
                    "mark_ecnth",
                ];
                (DisciplineSpec::Pie(p), fields)
            }
            "fq_codel" => {
                let d = FqCodelParams::default();
                let f = FqCodelParams {
                    flows: self.flows.unwrap_or(d.flows),
                    quantum: self.quantum_bytes.unwrap_or(d.quantum),
                    codel: self.codel(),
                };
                let fields: &[&str] = &["flows", "quantum_bytes", "target_ns", "interval_ns", "mtu_bytes"];
                (DisciplineSpec::FqCodel(f), fields)
            }
            "dualpi2" => {
                let d = DualPi2Params::default();
                let p = DualPi2Params {
                    target: self.target_ns.unwrap_or(d.target),
                    t_update: self.t_update_ns.unwrap_or(d.t_update),
                    alpha: self.alpha.unwrap_or(d.alpha),
                    beta: self.beta.unwrap_or(d.beta),
                    k: self.k.unwrap_or(d.k),
                    l_threshold: self.l_threshold_ns.unwrap_or(d.l_threshold),
                    l_range: self.l_range_ns.unwrap_or(d.l_range),
                    tshift: self.tshift_ns.unwrap_or(d.tshift),
                };
                let fields: &[&str] = &[
                    "target_ns",
                    "t_update_ns",
                    "alpha",
                    "beta",
                    "k",
                    "l_threshold_ns",
                    "l_range_ns",
                    "tshift_ns",
                ];
                (DisciplineSpec::DualPi2(p), fields)
            }
            other => {
                return Err(format!(
                    "queue.discipline: unknown discipline {other:?}; one of {}",
                    DISCIPLINES.join(", ")
                ))
            }
        };
        if let Some(field) = self.present().into_iter().find(|f| !params.contains(f)) {
            let takes = if params.is_empty() {
                "none".to_string()
            } else {
                params.join(", ")
            };
            return Err(format!(
                "queue: `{field}` is not a parameter of discipline {name} (its parameters: {takes}; and `packets` or `bytes`{})",
                if discipline.is_aqm() { ", `ecn`" } else { "" }
            ));
        }
        let limit = match (self.packets, self.bytes) {
            (Some(n), None) => QueueLimit::Packets(n),
            (None, Some(n)) => QueueLimit::Bytes(n),
            (None, None) => discipline.default_limit(),
            (Some(_), Some(_)) => return Err("queue: give `packets` or `bytes`, not both".into()),
        };
        Ok(QueueSpec {
            discipline,
            limit,
            ecn: self.ecn.unwrap_or(false),
        })
    }

    fn codel(&self) -> CodelParams {
        let d = CodelParams::default();
        CodelParams {
            target: self.target_ns.unwrap_or(d.target),
            interval: self.interval_ns.unwrap_or(d.interval),
            mtu_bytes: self.mtu_bytes.unwrap_or(d.mtu_bytes),
        }
    }

    fn of(spec: &QueueSpec) -> RawQueue {
        let mut r = RawQueue {
            discipline: Some(spec.discipline.name().to_string()),
            ..Default::default()
        };
        match spec.limit {
            QueueLimit::Packets(n) => r.packets = Some(n),
            QueueLimit::Bytes(n) => r.bytes = Some(n),
            QueueLimit::Unlimited => {}
        }
        if spec.discipline.is_aqm() {
            r.ecn = Some(spec.ecn);
        }
        let codel = |r: &mut RawQueue, c: &CodelParams| {
            r.target_ns = Some(c.target);
            r.interval_ns = Some(c.interval);
            r.mtu_bytes = Some(c.mtu_bytes);
        };
        match &spec.discipline {
            DisciplineSpec::DropTail | DisciplineSpec::DropHead => {}
            DisciplineSpec::Red(p) => {
                r.min_th = Some(p.min_th);
                r.max_th = Some(p.max_th);
                r.max_p = Some(p.max_p);
                r.w_q = Some(p.w_q);
                r.gentle = Some(p.gentle);
                r.avpkt_bytes = Some(p.avpkt_bytes);
            }
            DisciplineSpec::Codel(c) => codel(&mut r, c),
            DisciplineSpec::Pie(p) => {
                r.target_ns = Some(p.target);
                r.t_update_ns = Some(p.t_update);
                r.alpha = Some(p.alpha);
                r.beta = Some(p.beta);
                r.max_burst_ns = Some(p.max_burst);
                r.mean_packet_bytes = Some(p.mean_packet_bytes);
                r.mark_ecnth = Some(p.mark_ecnth);
            }
            DisciplineSpec::FqCodel(f) => {
                r.flows = Some(f.flows);
                r.quantum_bytes = Some(f.quantum);
                codel(&mut r, &f.codel);
            }
            DisciplineSpec::DualPi2(d) => {
                r.target_ns = Some(d.target);
                r.t_update_ns = Some(d.t_update);
                r.alpha = Some(d.alpha);
                r.beta = Some(d.beta);
                r.k = Some(d.k);
                r.l_threshold_ns = Some(d.l_threshold);
                r.l_range_ns = Some(d.l_range);
                r.tshift_ns = Some(d.tshift);
            }
        }
        r
    }
}

#[cfg(feature = "serde")]
impl<'de> Deserialize<'de> for QueueSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{self, MapAccess, Visitor};
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = QueueSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(r#"a queue: "unlimited", {"packets": N}, {"bytes": N} or {"discipline": NAME, …}"#)
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<QueueSpec, E> {
                match s {
                    "unlimited" => Ok(QueueSpec::default()),
                    other => Err(E::custom(format!(
                        r#"queue: {other:?} is not a queue; the only string form is "unlimited" (a discipline is {{"discipline": "{other}", …}})"#
                    ))),
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<QueueSpec, A::Error> {
                RawQueue::read(map)?.into_spec().map_err(de::Error::custom)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(feature = "serde")]
impl Serialize for QueueSpec {
    /// Drop-tail in its old forms (`"unlimited"`, `{"packets": N}`, `{"bytes": N}`),
    /// anything else as `{"discipline": …}` with every parameter.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match (&self.discipline, self.limit) {
            (DisciplineSpec::DropTail, QueueLimit::Unlimited) if !self.ecn => s.serialize_str("unlimited"),
            (DisciplineSpec::DropTail, limit) if !self.ecn => limit.serialize(s),
            _ => RawQueue::of(self).serialize(s),
        }
    }
}
