//! The engine's configuration parser, and what the engine does with a configuration it
//! accepted before forwarding anything.
//!
//! Input: the configuration text (JSON, as Python writes it). `Config::parse` must refuse
//! bad text with an error, never panic. A configuration it accepts must go through the
//! engine's start-up without a panic or an error: every direction builds, leg indices
//! cover exactly the log's directions, every leg has a name, every route's pinned leg
//! exists; and every built direction carries packets (split and pinned) to the end of
//! time, ending empty.
#![no_main]

use engine::config::Config;
use libfuzzer_sys::fuzz_target;
use linkem::{build_direction, Direction, Packet};

/// Packets pushed through each direction: enough to fill small queues and cross legs.
const PACKETS: u64 = 32;
/// Sizes cycled through: a small packet, a full MTU, the largest IPv4 packet.
const SIZES: [u32; 3] = [64, 1500, 65_535];
const GAP_NS: u64 = 100_000;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(cfg) = Config::parse(text) else { return };

    let legs = cfg.leg_indices();
    assert_eq!(legs.len(), cfg.directions.len());
    let numbered: Vec<usize> = legs.iter().flatten().copied().collect();
    let expected: Vec<usize> = (cfg.directions.len()..cfg.log_directions()).collect();
    assert_eq!(numbered, expected, "legs are numbered after the directions, in order");
    assert!(
        cfg.log_directions() < usize::from(u16::MAX),
        "the log's direction field holds every index"
    );

    let mut models = Vec::new();
    for (i, d) in cfg.directions.iter().enumerate() {
        let model: Direction<()> = build_direction(&d.spec, d.seed)
            .unwrap_or_else(|e| panic!("directions[{i}] passed the parser but does not build: {e}"));
        for k in 0..d.legs() {
            let _ = d.leg_name(k);
        }
        models.push(model);
    }
    for r in &cfg.routes {
        assert!(r.ingress < cfg.hosts.len() && r.egress < cfg.hosts.len());
        for (hop, &d) in r.directions.iter().enumerate() {
            assert!(d < models.len());
            if let Some(Some(leg)) = r.legs.as_ref().map(|l| l[hop]) {
                assert!(
                    leg < cfg.directions[d].legs(),
                    "route pinned to a leg its direction lacks"
                );
            }
        }
    }

    for (i, (model, d)) in models.iter_mut().zip(&cfg.directions).enumerate() {
        let mut last = 0;
        let mut step = |model: &mut Direction<()>, now: u64| {
            while let Some(e) = model.step(now) {
                assert!(
                    e.at() >= last && e.at() <= now,
                    "directions[{i}]: event {e:?} out of time order"
                );
                last = e.at();
            }
        };
        for id in 0..PACKETS {
            let at = id * GAP_NS;
            step(model, at);
            let packet = Packet::new(id, SIZES[id as usize % SIZES.len()], ());
            // Every fourth packet rides a leg alone, as a route's pinned traffic does.
            if d.legs() > 0 && id % 4 == 3 {
                model.push_on_leg(packet, id as usize % d.legs(), at);
            } else {
                model.push(packet, at);
            }
            step(model, at);
        }
        step(model, u64::MAX);
        assert!(
            model.is_empty(),
            "directions[{i}] still holds {} packets at the end of time",
            model.len()
        );
    }
});
