//! Reading `cc_params`: each controller takes the keys it knows, range-checks them, and
//! refuses whatever is left over.

use crate::{ConfigError, Params};
use std::fmt::Display;
use std::ops::RangeInclusive;
use std::str::FromStr;

/// A cursor over one controller's parameters that remembers which keys it asked for,
/// so [`ParamReader::finish`] can name the unknown ones and list the known ones.
pub(crate) struct ParamReader<'a> {
    params: &'a Params,
    known: Vec<&'static str>,
}

pub(crate) fn param_error(key: &str, value: &str, problem: String) -> ConfigError {
    ConfigError { field: format!("cc_params.{key}"), value: value.into(), problem }
}

impl<'a> ParamReader<'a> {
    pub fn new(params: &'a Params) -> Self {
        ParamReader { params, known: Vec::new() }
    }

    /// A number in `range`, or `default` when the key is absent.
    pub fn number<T>(&mut self, key: &'static str, default: T, range: RangeInclusive<T>) -> Result<T, ConfigError>
    where
        T: FromStr + PartialOrd + Display + Copy,
    {
        self.known.push(key);
        let Some(text) = self.params.get(key) else { return Ok(default) };
        let value: T = text
            .trim()
            .parse()
            .map_err(|_| param_error(key, text, "not a number of the expected kind".into()))?;
        if !range.contains(&value) {
            return Err(param_error(key, text, format!("out of range {}..={}", range.start(), range.end())));
        }
        Ok(value)
    }

    /// One of `options`, or `default` when the key is absent.
    pub fn choice(&mut self, key: &'static str, default: &'static str, options: &[&'static str]) -> Result<&'static str, ConfigError> {
        self.known.push(key);
        let Some(text) = self.params.get(key) else { return Ok(default) };
        options
            .iter()
            .find(|&&option| option == text.trim())
            .copied()
            .ok_or_else(|| param_error(key, text, format!("must be one of {}", options.join(", "))))
    }

    /// Refuses the first key `algorithm` did not ask for.
    pub fn finish(self, algorithm: &str) -> Result<(), ConfigError> {
        match self.params.iter().find(|(key, _)| !self.known.contains(&key.as_str())) {
            None => Ok(()),
            Some((key, value)) => {
                let known = if self.known.is_empty() { "none".to_string() } else { self.known.join(", ") };
                Err(param_error(key, value, format!("unknown parameter for {algorithm} (known: {known})")))
            }
        }
    }
}
