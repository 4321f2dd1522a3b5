//! The engine configuration Python writes, parsed by the engine's own parser: the sample
//! tests/data/engine-config.json (a shipped multipath scenario, kept current by
//! tests/test_contracts.py) must load, and say what that scenario builds.

use std::net::Ipv4Addr;
use std::path::Path;

use engine::config::Config;
use linkem::spec::{AnyDirectionSpec, Ratio, SplitSpec};

fn sample() -> Config {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/engine-config.json");
    Config::load(&path).unwrap_or_else(|e| panic!("the engine refuses what Python writes: {e}"))
}

#[test]
fn python_engine_config_parses() {
    let cfg = sample();
    assert_eq!(cfg.hosts.len(), 6);
    assert_eq!(cfg.routes.len(), 30);
    // 14 configured directions, one of them multipath with 2 legs numbered after them.
    assert_eq!(cfg.directions.len(), 14);
    assert_eq!(cfg.log_directions(), 16);
    let multipath: Vec<usize> = (0..cfg.directions.len())
        .filter(|&d| cfg.directions[d].legs() > 0)
        .collect();
    assert_eq!(multipath, vec![6]);
    let mut legs = vec![vec![]; 14];
    legs[6] = vec![14, 15];
    assert_eq!(cfg.leg_indices(), legs);
}

#[test]
fn python_multipath_direction_has_its_legs() {
    let cfg = sample();
    let d = &cfg.directions[6];
    assert_eq!(d.name, "radio.forward");
    assert_eq!(d.legs(), 2);
    assert_eq!(d.leg_name(0), "radio.forward.master");
    assert_eq!(d.leg_name(1), "radio.forward.secondary");
    let AnyDirectionSpec::Multipath(m) = &d.spec else {
        panic!("radio.forward is not parsed as multipath: {:?}", d.spec)
    };
    assert_eq!(m.legs.len(), 2);
    for leg in &m.legs {
        assert_eq!(leg.delay, 10_000_000);
    }
    assert_eq!(
        m.split,
        SplitSpec::Batch {
            batch: 100,
            ratio: Ratio::Shares(vec![0.0, 1.0])
        }
    );
    assert!(m.merge.enabled);
    assert_eq!(m.merge.t_reordering_ns, 200_000_000);
    // Its reverse is a plain direction.
    assert_eq!(cfg.directions[7].name, "radio.reverse");
    assert!(matches!(cfg.directions[7].spec, AnyDirectionSpec::Single(_)));
}

#[test]
fn python_routes_pin_single_leg_users_to_their_leg() {
    let cfg = sample();
    let pinned: Vec<_> = cfg.routes.iter().filter(|r| r.legs.is_some()).collect();
    // From each of the 3 hosts on the far side, one route to each leg's own host.
    assert_eq!(pinned.len(), 6);
    for r in &pinned {
        let legs = r.legs.as_ref().unwrap();
        assert_eq!(legs.len(), r.directions.len());
        // Only the multipath hop is pinned: leg 0 (master) towards .5, leg 1 towards .6.
        let want = match r.dst {
            d if d == Ipv4Addr::new(198, 18, 0, 5) => 0,
            d if d == Ipv4Addr::new(198, 18, 0, 6) => 1,
            d => panic!("a route to {d} pins a leg"),
        };
        let hops: Vec<_> = r.directions.iter().zip(legs).filter(|(_, l)| l.is_some()).collect();
        assert_eq!(hops, vec![(&6, &Some(want))], "route to {}", r.dst);
    }
    // Routes through the multipath direction without a pin use its split.
    assert!(cfg.routes.iter().any(|r| r.legs.is_none() && r.directions.contains(&6)));
}
