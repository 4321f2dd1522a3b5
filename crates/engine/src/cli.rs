//! The command line of both binaries that run a network (`tlab-engine`, `tlab-sim`): one
//! argument, the run's config file, and the same exit codes.

use std::path::Path;

/// Runs `NAME CONFIG.json`: `load` reads the config, `run` runs it. Exits 2 on a usage or
/// config error and 1 when the run fails, each with one line on stderr that names `name`.
pub fn main_with_config<C>(
    name: &str,
    load: impl FnOnce(&Path) -> Result<C, String>,
    run: impl FnOnce(C) -> Result<(), String>,
) {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 2 {
        eprintln!("usage: {name} CONFIG.json");
        std::process::exit(2);
    }
    let cfg = match load(Path::new(&args[1])) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{name}: config error: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(cfg) {
        eprintln!("{name}: {e}");
        std::process::exit(1);
    }
}
