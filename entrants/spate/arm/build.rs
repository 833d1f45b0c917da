//! Records which spate the arm links, for `--version`: the version of
//! spate-core that Cargo.lock (beside this file, committed) resolves, and
//! the compiler that built it. The lock file is the only place that says
//! what was linked; a version typed elsewhere could say something else.

use std::path::Path;
use std::process::Command;

fn main() {
    // Read when the script runs, not when it was compiled: a target
    // directory shared by checkouts at other paths keeps the compiled
    // script, and cargo runs it again for each.
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let lock = Path::new(&dir).join("Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let text = std::fs::read_to_string(&lock)
        .unwrap_or_else(|e| panic!("reading {}: {e}", lock.display()));
    let version = locked_version(&text, "spate-core")
        .unwrap_or_else(|| panic!("{} does not lock spate-core", lock.display()));
    println!("cargo:rustc-env=SPATE_ARM_SPATE_VERSION={version}");

    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let toolchain = Command::new(rustc)
        .arg("-V")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "rustc (unknown)".into());
    println!("cargo:rustc-env=SPATE_ARM_TOOLCHAIN={toolchain}");
}

/// The version Cargo.lock gives the package `name`: the `version` line of
/// its `[[package]]` entry.
fn locked_version(lock: &str, name: &str) -> Option<String> {
    let want = format!("name = \"{name}\"");
    let mut lines = lock.lines().map(str::trim);
    while let Some(line) = lines.next() {
        if line == want {
            let version = lines.next()?.strip_prefix("version = \"")?;
            return Some(version.trim_end_matches('"').to_owned());
        }
    }
    None
}
