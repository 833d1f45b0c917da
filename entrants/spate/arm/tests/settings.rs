//! The binary itself: it refuses a misspelt setting before it reads its
//! pipeline file, and prints its settings as the registry spatec commits.

use std::process::Command;

fn arm() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_spate-arm"));
    // Only the settings a test gives it.
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with(spate_arm::settings::PREFIX) {
            cmd.env_remove(k);
        }
    }
    cmd
}

#[test]
fn a_misspelt_setting_is_refused_at_start() {
    let out = arm()
        .arg("/nonexistent/pipeline.yaml")
        .env("SPATEC_DROP_UNIT", "drop")
        .env("SPATEC_QUALITY_FLOOR", "0.2")
        .env("SPATEC_QUALITY_FLOR", "0.3")
        .output()
        .expect("running spate-arm");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(
        stderr.contains(
            "SPATEC_QUALITY_FLOR is not a setting of this arm; did you mean SPATEC_QUALITY_FLOOR?"
        ),
        "stderr: {stderr}"
    );
}

#[test]
fn settings_json_is_the_table() {
    let out = arm()
        .arg("--settings-json")
        .output()
        .expect("running spate-arm");
    assert!(out.status.success());
    let reg: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let keys: Vec<_> = reg["options"]
        .as_array()
        .expect("options")
        .iter()
        .map(|o| o["key"].as_str().expect("key").to_owned())
        .collect();
    let table: Vec<_> = spate_arm::settings::SETTINGS
        .iter()
        .map(|s| s.name.to_owned())
        .collect();
    assert_eq!(keys, table);
    assert_eq!(reg["system"], "spate-arm");
}
