//! The engine's control input: lines the runner writes to the engine's stdin while it
//! runs (docs/engine-config.md, "Control"). One command today:
//!
//! * `t0 NS` — the scenario's time 0 is `NS` (CLOCK_MONOTONIC): trace-driven links start
//!   their trace there. The engine answers `T0 NS` on stdout once it has.

/// A command from the control input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    T0(u64),
}

/// Assembles control lines from reads of any size.
#[derive(Default)]
pub struct Control {
    partial: Vec<u8>,
}

impl Control {
    /// The commands completed by `bytes`; a line that is not a command is an error naming
    /// it.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Result<Command, String>> {
        self.partial.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(end) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=end).collect();
            let text = String::from_utf8_lossy(&line[..end]);
            let text = text.trim();
            if !text.is_empty() {
                out.push(parse(text));
            }
        }
        out
    }
}

fn parse(line: &str) -> Result<Command, String> {
    match line.split_whitespace().collect::<Vec<_>>().as_slice() {
        ["t0", ns] => ns
            .parse()
            .map(Command::T0)
            .map_err(|_| format!("control line {line:?}: t0 takes nanoseconds (an integer)")),
        _ => Err(format!("control line {line:?}: unknown command (known: `t0 NS`)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_across_reads_and_bad_lines_are_named() {
        let mut c = Control::default();
        assert!(c.feed(b"t0 12").is_empty());
        assert_eq!(
            c.feed(b"34\n\nt0 5\nt0"),
            vec![Ok(Command::T0(1234)), Ok(Command::T0(5))]
        );
        assert_eq!(c.feed(b" 7\n"), vec![Ok(Command::T0(7))]);
        let e = c.feed(b"t0 x\ngo\n");
        assert!(e[0].as_ref().unwrap_err().contains("\"t0 x\""), "{e:?}");
        assert!(e[1].as_ref().unwrap_err().contains("unknown command"), "{e:?}");
    }
}
