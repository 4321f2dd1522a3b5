//! The fields of a JSON `queue` object as plain values, so that each discipline reads the
//! parameters it takes (in its own module) and every error names the field.

use std::collections::BTreeMap;
use std::fmt;

/// One JSON scalar.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Bool(bool),
    UInt(u64),
    Int(i64),
    Float(f64),
    Str(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "boolean `{b}`"),
            Value::UInt(n) => write!(f, "integer `{n}`"),
            Value::Int(n) => write!(f, "integer `{n}`"),
            Value::Float(x) => write!(f, "floating point `{x}`"),
            Value::Str(s) => write!(f, "string {s:?}"),
        }
    }
}

/// A value of one Rust type read from a [`Value`].
pub trait FieldType: Sized {
    /// What the field expects, for errors.
    const EXPECTED: &'static str;
    fn from_value(v: &Value) -> Option<Self>;
    fn into_value(self) -> Value;
}

/// A type held in one [`Value`] variant as it is.
macro_rules! field_type {
    ($t:ty, $expected:literal, $variant:ident) => {
        impl FieldType for $t {
            const EXPECTED: &'static str = $expected;
            fn from_value(v: &Value) -> Option<Self> {
                match v {
                    Value::$variant(x) => Some(x.to_owned()),
                    _ => None,
                }
            }
            fn into_value(self) -> Value {
                Value::$variant(self)
            }
        }
    };
}

field_type!(u64, "u64", UInt);
field_type!(bool, "a boolean", Bool);
field_type!(String, "a string", Str);

impl FieldType for u32 {
    const EXPECTED: &'static str = "u32";
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::UInt(n) => u32::try_from(*n).ok(),
            _ => None,
        }
    }
    fn into_value(self) -> Value {
        Value::UInt(u64::from(self))
    }
}

impl FieldType for f64 {
    const EXPECTED: &'static str = "f64";
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Float(x) => Some(*x),
            Value::UInt(n) => Some(*n as f64),
            Value::Int(n) => Some(*n as f64),
            _ => None,
        }
    }
    fn into_value(self) -> Value {
        Value::Float(self)
    }
}

/// The fields of one `queue` object. Reading takes a field out, so what is left after
/// the discipline has read its parameters is what it does not take.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fields(BTreeMap<String, Value>);

impl Fields {
    /// Adds a field as read from JSON; a repeated one is an error naming it.
    pub fn insert(&mut self, key: String, value: Value) -> Result<(), String> {
        if self.0.contains_key(&key) {
            return Err(format!("queue.{key}: given twice"));
        }
        self.0.insert(key, value);
        Ok(())
    }

    /// Takes `key` out, if given; a value of another type is an error naming it.
    pub fn take<T: FieldType>(&mut self, key: &str) -> Result<Option<T>, String> {
        match self.0.remove(key) {
            None => Ok(None),
            Some(v) => T::from_value(&v)
                .map(Some)
                .ok_or_else(|| format!("queue.{key}: invalid type: {v}, expected {}", T::EXPECTED)),
        }
    }

    /// Takes `key` out, or `default` when it is not given.
    pub fn get<T: FieldType>(&mut self, key: &str, default: T) -> Result<T, String> {
        Ok(self.take(key)?.unwrap_or(default))
    }

    /// Sets a field to write.
    pub fn put<T: FieldType>(&mut self, key: &str, value: T) {
        self.0.insert(key.to_string(), value.into_value());
    }

    /// The names of the fields not taken yet.
    pub fn left(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    pub fn get_value(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }
}
