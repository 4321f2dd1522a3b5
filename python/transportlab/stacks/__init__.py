"""Third-party QUIC stacks as quic flows' `implementation` (docs/stacks.md)."""
