//! Reading `cc_params`: each controller takes the keys it knows, range-checks them, and
//! refuses whatever is left over. The reader also records what it was asked for, so the
//! parameters a controller takes are described by the very code that reads them
//! ([`crate::parameters`]).

use crate::{ConfigError, Params};
use std::fmt::Display;
use std::ops::RangeInclusive;
use std::str::FromStr;

/// What kind of value a parameter takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A whole number.
    Integer,
    /// A decimal number.
    Number,
    /// One of a fixed set of words.
    Choice,
}

/// One `cc_params` key a controller reads. Values are written as a scenario writes them
/// (`cc_params` values are strings to the controller).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parameter {
    pub key: &'static str,
    pub kind: Kind,
    /// The value taken when the key is absent.
    pub default: String,
    /// Inclusive bounds of an `Integer` or `Number`.
    pub range: Option<(String, String)>,
    /// The words a `Choice` accepts.
    pub options: Vec<&'static str>,
}

/// Numbers a parameter can hold, with the kind they are described as.
pub(crate) trait Numeric: FromStr + PartialOrd + Display + Copy {
    const KIND: Kind;
}

impl Numeric for f64 {
    const KIND: Kind = Kind::Number;
}

impl Numeric for u64 {
    const KIND: Kind = Kind::Integer;
}

impl Numeric for usize {
    const KIND: Kind = Kind::Integer;
}

/// A cursor over one controller's parameters that remembers which keys it asked for,
/// so [`ParamReader::finish`] can name the unknown ones and list the known ones.
pub(crate) struct ParamReader<'a> {
    params: &'a Params,
    asked: Vec<Parameter>,
}

pub(crate) fn param_error(key: &str, value: &str, problem: String) -> ConfigError {
    ConfigError {
        field: format!("cc_params.{key}"),
        value: value.into(),
        problem,
    }
}

impl<'a> ParamReader<'a> {
    pub fn new(params: &'a Params) -> Self {
        ParamReader {
            params,
            asked: Vec::new(),
        }
    }

    /// Reads `algorithm`'s parameters from `params` with `read` (its `from_reader`), then
    /// refuses any key it did not ask for: what every controller's `from_params` does.
    pub fn read_all<T>(
        params: &'a Params,
        algorithm: &str,
        read: impl FnOnce(&mut ParamReader<'a>) -> Result<T, ConfigError>,
    ) -> Result<T, ConfigError> {
        let mut reader = ParamReader::new(params);
        let value = read(&mut reader)?;
        reader.finish(algorithm)?;
        Ok(value)
    }

    /// The text given for `key`, if any.
    pub fn given(&self, key: &str) -> Option<&'a str> {
        self.params.get(key).map(String::as_str)
    }

    /// Every parameter asked for so far, in the order asked.
    pub fn into_parameters(self) -> Vec<Parameter> {
        self.asked
    }

    /// A number in `range`, or `default` when the key is absent.
    pub fn number<T: Numeric>(
        &mut self,
        key: &'static str,
        default: T,
        range: RangeInclusive<T>,
    ) -> Result<T, ConfigError> {
        self.asked.push(Parameter {
            key,
            kind: T::KIND,
            default: default.to_string(),
            range: Some((range.start().to_string(), range.end().to_string())),
            options: Vec::new(),
        });
        let Some(text) = self.params.get(key) else {
            return Ok(default);
        };
        let value: T = text
            .trim()
            .parse()
            .map_err(|_| param_error(key, text, "not a number of the expected kind".into()))?;
        if !range.contains(&value) {
            return Err(param_error(
                key,
                text,
                format!("out of range {}..={}", range.start(), range.end()),
            ));
        }
        Ok(value)
    }

    /// One of `options`, or `default` when the key is absent.
    pub fn choice(
        &mut self,
        key: &'static str,
        default: &'static str,
        options: &[&'static str],
    ) -> Result<&'static str, ConfigError> {
        self.asked.push(Parameter {
            key,
            kind: Kind::Choice,
            default: default.into(),
            range: None,
            options: options.to_vec(),
        });
        let Some(text) = self.params.get(key) else {
            return Ok(default);
        };
        options
            .iter()
            .find(|&&option| option == text.trim())
            .copied()
            .ok_or_else(|| param_error(key, text, format!("must be one of {}", options.join(", "))))
    }

    /// Refuses the first key `algorithm` did not ask for.
    pub fn finish(self, algorithm: &str) -> Result<(), ConfigError> {
        match self
            .params
            .iter()
            .find(|(key, _)| !self.asked.iter().any(|p| p.key == key.as_str()))
        {
            None => Ok(()),
            Some((key, value)) => {
                let known: Vec<&str> = self.asked.iter().map(|p| p.key).collect();
                let known = if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                };
                Err(param_error(
                    key,
                    value,
                    format!("unknown parameter for {algorithm} (known: {known})"),
                ))
            }
        }
    }
}
