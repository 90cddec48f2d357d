//! The `armsim` binary as a user runs it: headless runs print their report, bad scenes exit
//! non-zero with every validation error, `--help` documents the flags.

use std::process::Command;

fn armsim() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_armsim"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    // Never collide with a running armsim (or a parallel test) on the default ports.
    cmd.args([
        "--teleop-port",
        "0",
        "--agent-port",
        "0",
        "--monitor-port",
        "0",
    ]);
    cmd
}

#[test]
fn headless_run_prints_its_report() {
    let out = armsim()
        .args(["--headless", "--steps", "480", "--fast"])
        .output()
        .expect("armsim runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    assert!(line.starts_with("480 steps, 2.0 s sim, "), "report: {line}");
    assert!(line.ends_with(" steps/s"), "report: {line}");
}

#[test]
fn headless_duration_stops_at_sim_time() {
    let out = armsim()
        .args([
            "--headless",
            "--duration",
            "0.5",
            "--scene",
            "assets/scenes/gripper4.json",
        ])
        .output()
        .expect("armsim runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("120 steps, 0.5 s sim"), "report: {stdout}");
}

#[test]
fn bad_scene_exits_non_zero_with_its_errors() {
    let dir = std::env::temp_dir().join(format!("armsim-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.json");
    let mut scene: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("assets/scenes/default_scene.json"),
        )
        .unwrap(),
    )
    .unwrap();
    scene["schema_version"] = "0.9".into();
    scene["surprise"] = true.into();
    std::fs::write(&path, scene.to_string()).unwrap();
    let out = armsim()
        .args(["--headless", "--steps", "1", "--scene"])
        .arg(&path)
        .output()
        .expect("armsim runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("$.schema_version"), "{stderr}");
    assert!(stderr.contains("$.surprise"), "{stderr}");
}

#[test]
fn help_lists_the_flags() {
    let out = armsim().arg("--help").output().expect("armsim runs");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--headless",
        "--scene",
        "--steps",
        "--duration",
        "--realtime",
        "--fast",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}:\n{help}");
    }
}
