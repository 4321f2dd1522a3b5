"""The uTP agent: real uTP transfers between two host namespaces, run as
`python -m transportlab.utp_agent server|client …` (docs/agent.md, "uTP"). One end
seeds a torrent of deterministic bytes, the other downloads it over uTP only; each end
writes a summary (JSON) and a series (Arrow IPC) as the Rust agents do.

It imports no stage of the pipeline: it runs inside a namespace, started by the runner
like the `agent` binary."""
