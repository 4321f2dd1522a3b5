//! A direction's queue: its discipline, hard limit and ECN switch, as the engine's
//! configuration carries it (docs/engine-config.md).
//!
//! JSON forms of `queue`:
//!
//! * `"unlimited"`, `{"packets": N}`, `{"bytes": N}`: drop-tail, exactly as before
//!   disciplines existed;
//! * `{"discipline": NAME, …}` with NAME one of [`DISCIPLINES`], the limit as
//!   `"packets": N` or `"bytes": N` (default: the discipline's), `"ecn": bool` for the
//!   AQMs (default false), and the discipline's own parameters, each optional with its
//!   RFC's default.
//!
//! Each discipline declares itself in its own module under [`crate::queue`], as
//! Mahimahi's queue classes do: its [`Class`] (name, what it is, its parameters, its
//! default limit) and how its options are read, written, checked and built
//! ([`Options`]). They are registered once, in the `registry!` call below; the enum, the
//! list and the JSON forms all come from there. A field that is not a parameter of the
//! discipline is an error naming it.

mod fields;

#[cfg(feature = "serde")]
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use self::fields::{FieldType, Fields, Value};
use super::QueueLimit;
use crate::link::Link;
use crate::queue::codel::CodelParams;
use crate::queue::drop_head::DropHeadParams;
use crate::queue::drop_tail::DropTailParams;
use crate::queue::dualpi2::DualPi2Params;
use crate::queue::fq_codel::FqCodelParams;
use crate::queue::pie::PieParams;
use crate::queue::red::RedParams;
use crate::queue::Discipline;

/// What a discipline is, as its module declares it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Class {
    /// Its name in the configuration (`"discipline": NAME`).
    pub name: &'static str,
    /// One line: what it is and where it comes from.
    pub description: &'static str,
    /// The JSON names of its parameters, in the order it writes them.
    pub parameters: &'static [&'static str],
    /// Whether it drops (or marks) before the queue is full; only these take `ecn`.
    pub aqm: bool,
    /// Whether packets leave in arrival order.
    pub fifo: bool,
    /// Whether it marks L4S packets (ECT(1), CE) whatever `ecn` says.
    pub l4s: bool,
    /// The limit it has when none is given.
    pub default_limit: QueueLimit,
}

impl Class {
    /// A discipline that drops only when full and serves in arrival order (no AQM, no
    /// L4S), unlimited unless a limit is given.
    pub const fn tail(name: &'static str, description: &'static str, parameters: &'static [&'static str]) -> Class {
        Class {
            name,
            description,
            parameters,
            aqm: false,
            fifo: true,
            l4s: false,
            default_limit: QueueLimit::Unlimited,
        }
    }

    /// An AQM (drops or marks before it is full, takes `ecn`) serving in arrival order,
    /// without L4S; `fifo`/`l4s` are overridden where a discipline differs.
    pub const fn aqm(
        name: &'static str,
        description: &'static str,
        parameters: &'static [&'static str],
        default_limit: QueueLimit,
    ) -> Class {
        Class {
            aqm: true,
            default_limit,
            ..Class::tail(name, description, parameters)
        }
    }
}

/// A discipline's options: read from and written to a queue's JSON fields, checked, and
/// built into the discipline. Implemented in each discipline's module.
///
/// The provided `PARAMETERS`, `read`, `write` and `check` are those of a discipline
/// without parameters; one with parameters has them from [`parameters!`] and its own
/// `check`.
pub trait Options: Sized + Default {
    const CLASS: Class;
    /// The JSON names of its parameters, in the order it writes them.
    const PARAMETERS: &'static [&'static str] = &[];
    /// Takes its parameters out of `f` (the ones not given keep their defaults).
    fn read(_f: &mut Fields) -> Result<Self, String> {
        Ok(Self::default())
    }
    /// Puts every parameter into `f`.
    fn write(&self, _f: &mut Fields) {}
    /// Checks the values; errors name the field (`queue.<field>`).
    fn check(&self) -> Result<(), String> {
        Ok(())
    }
    /// The discipline for a queue of `limit` in front of `link`; the options are valid.
    fn build<P: Send + 'static>(&self, limit: QueueLimit, ecn: bool, link: &Link) -> Box<dyn Discipline<P>>;
}

/// Inside `impl Options for X`: `PARAMETERS`, `read` and `write` from one list of the
/// options' fields and their JSON names (`target => "target_ns"`), so a discipline names
/// each parameter once.
macro_rules! parameters {
    ($($field:ident => $key:literal),* $(,)?) => {
        const PARAMETERS: &'static [&'static str] = &[$($key),*];
        fn read(f: &mut $crate::spec::queue::Fields) -> Result<Self, String> {
            let d = Self::default();
            Ok(Self { $($field: f.get($key, d.$field)?),* })
        }
        fn write(&self, f: &mut $crate::spec::queue::Fields) {
            $(f.put($key, self.$field);)*
        }
    };
}
pub(crate) use parameters;

/// `Ok` if `ok`, else `queue.<field> must be <what>, got <got>`.
pub fn require(ok: bool, field: &str, what: &str, got: impl std::fmt::Display) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("queue.{field} must be {what}, got {got}"))
    }
}

/// `queue.<field>` must be above zero (a time, a size).
pub fn require_positive<T: PartialOrd + Default + std::fmt::Display>(field: &str, value: T) -> Result<(), String> {
    require(value > T::default(), field, "> 0", value)
}

/// `queue.<field>` must be a finite number ≥ 0, in `unit` (a gain, a threshold).
pub fn require_non_negative(field: &str, value: f64, unit: &str) -> Result<(), String> {
    let ok = value.is_finite() && value >= 0.0;
    require(ok, field, &format!("a number ≥ 0 ({unit})"), value)
}

/// `queue.<field>` must be a fraction in (0, 1] (a probability that is not 0, a weight).
pub fn require_fraction(field: &str, value: f64) -> Result<(), String> {
    require(value > 0.0 && value <= 1.0, field, "in (0, 1]", value)
}

macro_rules! registry {
    ($($variant:ident($options:ty)),* $(,)?) => {
        /// Which discipline, with its options.
        #[derive(Debug, Clone, PartialEq)]
        pub enum DisciplineSpec {
            $($variant($options)),*
        }

        /// Every discipline, in the order of contracts/contract.json.
        pub const DISCIPLINES: &[Class] = &[$(<$options as Options>::CLASS),*];

        impl DisciplineSpec {
            pub fn class(&self) -> &'static Class {
                match self {
                    $(DisciplineSpec::$variant(_) => &<$options as Options>::CLASS),*
                }
            }

            /// The discipline called `name`, its options read from `f`; `None` if no
            /// discipline has that name.
            fn read(name: &str, f: &mut Fields) -> Option<Result<Self, String>> {
                $(if name == <$options as Options>::CLASS.name {
                    return Some(<$options as Options>::read(f).map(DisciplineSpec::$variant));
                })*
                None
            }

            fn write(&self, f: &mut Fields) {
                match self {
                    $(DisciplineSpec::$variant(o) => o.write(f)),*
                }
            }

            fn check(&self) -> Result<(), String> {
                match self {
                    $(DisciplineSpec::$variant(o) => o.check()),*
                }
            }

            fn build<P: Send + 'static>(&self, limit: QueueLimit, ecn: bool, link: &Link) -> Box<dyn Discipline<P>> {
                match self {
                    $(DisciplineSpec::$variant(o) => o.build(limit, ecn, link)),*
                }
            }
        }
    };
}

registry! {
    DropTail(DropTailParams),
    DropHead(DropHeadParams),
    Red(RedParams),
    Codel(CodelParams),
    Pie(PieParams),
    FqCodel(FqCodelParams),
    DualPi2(DualPi2Params),
}

impl DisciplineSpec {
    pub fn name(&self) -> &'static str {
        self.class().name
    }

    /// The limit a queue of this discipline has when none is given.
    pub fn default_limit(&self) -> QueueLimit {
        self.class().default_limit
    }

    /// Whether it drops (or marks) before the queue is full.
    pub fn is_aqm(&self) -> bool {
        self.class().aqm
    }

    /// Whether packets leave in arrival order (all but FQ-CoDel and DualPI2's two queues).
    pub fn is_fifo(&self) -> bool {
        self.class().fifo
    }
}

/// The names of the disciplines that are AQMs, for messages.
fn aqm_names() -> String {
    let names: Vec<&str> = DISCIPLINES.iter().filter(|c| c.aqm).map(|c| c.name).collect();
    names.join(", ")
}

fn discipline_names() -> String {
    let names: Vec<&str> = DISCIPLINES.iter().map(|c| c.name).collect();
    names.join(", ")
}

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
            discipline: DisciplineSpec::DropTail(DropTailParams),
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
    /// marks ECN-capable packets; an L4S discipline (DualPI2) marks its L4S packets
    /// (ECT(1), CE) always — L4S senders ask for it by their codepoint.
    pub fn may_mark(&self, ecn: crate::Ecn) -> bool {
        let l4s = self.discipline.class().l4s && matches!(ecn, crate::Ecn::Ect1 | crate::Ecn::Ce);
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
                "queue.ecn: {name} never drops early, so there is nothing to mark instead (ecn applies to {})",
                aqm_names()
            ));
        }
        self.discipline.check()
    }

    /// The discipline for a queue in front of `link` (RED ages its average in units of
    /// the link's time to send a packet). The spec must be valid.
    pub fn build<P: Send + 'static>(&self, link: &Link) -> Box<dyn Discipline<P>> {
        self.discipline.build(self.limit, self.ecn, link)
    }

    /// The spec from a JSON object's fields.
    pub fn from_fields(mut f: Fields) -> Result<QueueSpec, String> {
        let name: Option<String> = f.take("discipline")?;
        let packets: Option<u32> = f.take("packets")?;
        let bytes: Option<u64> = f.take("bytes")?;
        let ecn: Option<bool> = f.take("ecn")?;
        if let Some(unknown) = f.left().find(|k| !all_parameters().contains(k)) {
            return Err(format!(
                "queue: unknown field `{unknown}`, expected one of discipline, packets, bytes, ecn, {}",
                all_parameters().join(", ")
            ));
        }
        let Some(name) = name else {
            // The forms without a discipline: drop-tail with a limit.
            if let Some(field) = f.left().next().or(ecn.map(|_| "ecn")) {
                return Err(format!(
                    "queue: `{field}` needs a `discipline` (one of {}); without one the queue is drop-tail, which takes only `packets` or `bytes`",
                    discipline_names()
                ));
            }
            return match (packets, bytes) {
                (Some(n), None) => Ok(QueueSpec::drop_tail(QueueLimit::Packets(n))),
                (None, Some(n)) => Ok(QueueSpec::drop_tail(QueueLimit::Bytes(n))),
                (Some(_), Some(_)) => Err("queue: give `packets` or `bytes`, not both".into()),
                (None, None) => Err(format!(
                    "queue: give `packets`, `bytes` or a `discipline` (one of {}), or write \"unlimited\"",
                    discipline_names()
                )),
            };
        };
        let discipline = DisciplineSpec::read(&name, &mut f).unwrap_or_else(|| {
            Err(format!(
                "queue.discipline: unknown discipline {name:?}; one of {}",
                discipline_names()
            ))
        })?;
        let class = discipline.class();
        if let Some(field) = f.left().next() {
            let takes = if class.parameters.is_empty() {
                "none".to_string()
            } else {
                class.parameters.join(", ")
            };
            return Err(format!(
                "queue: `{field}` is not a parameter of discipline {name} (its parameters: {takes}; and `packets` or `bytes`{})",
                if class.aqm { ", `ecn`" } else { "" }
            ));
        }
        let limit = match (packets, bytes) {
            (Some(n), None) => QueueLimit::Packets(n),
            (None, Some(n)) => QueueLimit::Bytes(n),
            (None, None) => class.default_limit,
            (Some(_), Some(_)) => return Err("queue: give `packets` or `bytes`, not both".into()),
        };
        Ok(QueueSpec {
            discipline,
            limit,
            ecn: ecn.unwrap_or(false),
        })
    }

    /// Its JSON fields: the discipline, the limit, `ecn` for an AQM and every parameter,
    /// in [`field_order`].
    pub fn to_fields(&self) -> Vec<(&'static str, Value)> {
        let mut f = Fields::default();
        f.put("discipline", self.discipline.name().to_string());
        match self.limit {
            QueueLimit::Packets(n) => f.put("packets", n),
            QueueLimit::Bytes(n) => f.put("bytes", n),
            QueueLimit::Unlimited => {}
        }
        if self.discipline.is_aqm() {
            f.put("ecn", self.ecn);
        }
        self.discipline.write(&mut f);
        field_order()
            .into_iter()
            .filter_map(|k| f.get_value(k).map(|v| (k, v.clone())))
            .collect()
    }
}

/// Every parameter any discipline takes, each once, in registry order.
pub fn all_parameters() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for p in DISCIPLINES.iter().flat_map(|c| c.parameters.iter()) {
        if !out.contains(p) {
            out.push(p);
        }
    }
    out
}

/// The order fields are written in: the discipline, the limit, `ecn`, then the parameters.
pub fn field_order() -> Vec<&'static str> {
    let mut out = vec!["discipline", "packets", "bytes", "ecn"];
    out.extend(all_parameters());
    out
}

// ---------------------------------------------------------------------------------------
// JSON

#[cfg(feature = "serde")]
impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{self, Visitor};
        struct V;
        impl Visitor<'_> for V {
            type Value = Value;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number, a boolean or a string")
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
                Ok(Value::Bool(b))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Value, E> {
                Ok(Value::UInt(n))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Value, E> {
                Ok(u64::try_from(n).map_or(Value::Int(n), Value::UInt))
            }
            fn visit_f64<E: de::Error>(self, x: f64) -> Result<Value, E> {
                Ok(Value::Float(x))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
                Ok(Value::Str(s.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(feature = "serde")]
impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Bool(b) => s.serialize_bool(*b),
            Value::UInt(n) => s.serialize_u64(*n),
            Value::Int(n) => s.serialize_i64(*n),
            Value::Float(x) => s.serialize_f64(*x),
            Value::Str(v) => s.serialize_str(v),
        }
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
            /// Reads the fields one by one, so that a repeated or mistyped field is an
            /// error that names it (`queue.<field>: …`).
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<QueueSpec, A::Error> {
                let mut f = Fields::default();
                while let Some(key) = map.next_key::<String>()? {
                    let value: Value = map
                        .next_value()
                        .map_err(|e| de::Error::custom(format!("queue.{key}: {e}")))?;
                    f.insert(key, value).map_err(de::Error::custom)?;
                }
                QueueSpec::from_fields(f).map_err(de::Error::custom)
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
        use serde::ser::SerializeMap;
        match (&self.discipline, self.limit) {
            (DisciplineSpec::DropTail(_), QueueLimit::Unlimited) if !self.ecn => s.serialize_str("unlimited"),
            (DisciplineSpec::DropTail(_), limit) if !self.ecn => limit.serialize(s),
            _ => {
                let fields = self.to_fields();
                let mut m = s.serialize_map(Some(fields.len()))?;
                for (k, v) in &fields {
                    m.serialize_entry(k, v)?;
                }
                m.end()
            }
        }
    }
}
