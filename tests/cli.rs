//! The `armsim` binary as a user runs it: headless runs print their report, bad scenes exit
//! non-zero with every validation error, `--help` documents the flags.

use std::process::Command;

/// Never collide with a running armsim (or a parallel test) on the default ports.
const ANY_PORTS: [&str; 7] = [
    "--no-xr",
    "--teleop-port",
    "0",
    "--agent-port",
    "0",
    "--monitor-port",
    "0",
];

fn armsim() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_armsim"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd.args(ANY_PORTS);
    cmd
}

/// Writes the default scene, changed by `edit`, to a fresh temporary file, runs one headless step
/// on it and returns the run's output.
fn one_step_on_edited_scene(
    name: &str,
    edit: impl FnOnce(&mut serde_json::Value, &std::path::Path),
) -> std::process::Output {
    let dir = std::env::temp_dir().join(format!("armsim-cli-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.json"));
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut scene: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("assets/scenes/default_scene.json")).unwrap(),
    )
    .unwrap();
    edit(&mut scene, root);
    std::fs::write(&path, scene.to_string()).unwrap();
    armsim()
        .args(["--headless", "--steps", "1", "--scene"])
        .arg(&path)
        .output()
        .expect("armsim runs")
}

/// Runs `armsim args…`, asserts it succeeded (showing its stderr if not) and returns its stdout.
fn run_ok(args: &[&str]) -> String {
    let out = armsim().args(args).output().expect("armsim runs");
    assert!(
        out.status.success(),
        "armsim {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn headless_run_prints_its_report() {
    let stdout = run_ok(&["--headless", "--steps", "480", "--fast"]);
    let line = stdout.lines().last().unwrap_or_default();
    assert!(line.starts_with("480 steps, 2.0 s sim, "), "report: {line}");
    assert!(line.ends_with(" steps/s"), "report: {line}");
}

#[test]
fn headless_duration_stops_at_sim_time() {
    let stdout = run_ok(&[
        "--headless",
        "--duration",
        "0.5",
        "--scene",
        "assets/scenes/gripper4.json",
    ]);
    assert!(stdout.contains("120 steps, 0.5 s sim"), "report: {stdout}");
}

#[test]
fn bad_scene_exits_non_zero_with_its_errors() {
    let out = one_step_on_edited_scene("bad", |scene, _| {
        scene["schema_version"] = "0.9".into();
        scene["surprise"] = true.into();
    });
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
        "--xr-port",
        "--no-xr",
        "--xr-key",
        "--tls-cert",
        "--tls-key",
        "--start",
        "trajectory",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}:\n{help}");
    }
    let out = armsim()
        .args(["trajectory", "recover", "--help"])
        .output()
        .expect("armsim runs");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("partial.jsonl"), "{help}");
}

/// Starts `armsim` with `args` under a shell that first runs `pre` (e.g. `ulimit -n 128`),
/// reading its log until `marker` shows; returns the child, the matching line and a thread
/// that gathers the rest of the log.
fn spawn_logging(
    pre: &str,
    args: &[&str],
    marker: &str,
) -> (
    std::process::Child,
    String,
    std::thread::JoinHandle<Vec<String>>,
) {
    use std::io::BufRead;
    let bin = env!("CARGO_BIN_EXE_armsim");
    let mut cmd = Command::new("sh");
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
        .arg("-c")
        .arg(format!("{pre}; exec \"$0\" \"$@\""))
        .arg(bin)
        .args(ANY_PORTS)
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("armsim starts");
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let found = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.contains(marker))
        .unwrap_or_else(|| panic!("armsim never logged {marker:?}"));
    let rest = std::thread::spawn(move || lines.map_while(Result::ok).collect());
    (child, found, rest)
}

#[test]
fn out_of_descriptors_the_accept_loop_backs_off_and_logs_once_a_second() {
    // "Once a second" is a rule of wall time, and 4 s of sim time in real time take longer on a
    // loaded machine: the bound is counted in the run's own wall time.
    let started = std::time::Instant::now();
    let (child, line, rest) = spawn_logging(
        "ulimit -n 128",
        &["--headless", "--duration", "4", "--realtime"],
        "monitor: listening on ",
    );
    let addr: std::net::SocketAddr = line
        .rsplit("listening on ")
        .next()
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    // Far more connections than 128 descriptors allow the server to take.
    let held: Vec<_> = (0..300)
        .filter_map(|_| std::net::TcpStream::connect(addr).ok())
        .collect();
    let out = child.wait_with_output().expect("armsim exits");
    let wall = started.elapsed().as_secs_f64();
    drop(held);
    let log = rest.join().unwrap();
    let failures = log
        .iter()
        .filter(|l| l.contains("accept failed") || l.contains("cannot serve"))
        .count();
    // One line at the first failure, then at most one per second after it, until the exit.
    let most = wall.ceil() as usize + 1;
    assert!(
        (1..=most).contains(&failures),
        "{failures} failed-accept lines in a run of {wall:.1} s (want one a second at most):\n{}",
        log.iter()
            .filter(|l| l.contains("accept failed") || l.contains("cannot serve"))
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(out.status.success(), "{}", log.join("\n"));
}

#[test]
fn a_recording_that_cannot_be_written_makes_the_exit_an_error() {
    let dir = std::env::temp_dir().join(format!("armsim-lost-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let target = dir.join("run.json");
    let target_arg = target.to_str().unwrap().to_string();
    let (child, _, rest) = spawn_logging(
        ":",
        &["--headless", "--duration", "1.5", "--record", &target_arg],
        "recording to ",
    );
    // The folder goes away under the running recording: the file can no longer be written.
    std::fs::remove_dir_all(&dir).unwrap();
    let out = child.wait_with_output().expect("armsim exits");
    let log = rest.join().unwrap().join("\n");
    assert!(
        !out.status.success(),
        "exit 0 with a lost recording:\n{log}"
    );
    assert!(log.contains("recording"), "{log}");
    assert!(!target.exists());
}

#[test]
fn benchmarks_run_from_the_command() {
    // Tiny runs: the figures mean nothing here, only that each benchmark runs to its report.
    let step = run_ok(&["bench", "step", "--steps", "24"]);
    assert!(
        step.contains("ECS / bare") && step.contains("arm at rest"),
        "{step}"
    );
    let moving = run_ok(&["bench", "step", "--steps", "24", "--motion", "sines"]);
    assert!(moving.contains("arm moving (sines)"), "{moving}");
    let lockstep = run_ok(&[
        "bench",
        "lockstep",
        "--steps",
        "24",
        "--scene",
        "assets/scenes/gripper4.json",
    ]);
    assert!(lockstep.contains("lockstep client loop"), "{lockstep}");
    let agent = run_ok(&["bench", "agent", "--steps", "10"]);
    assert!(agent.contains("sync cycles"), "{agent}");
}

#[test]
fn help_names_protocols_as_users_know_them() {
    for args in [&["--help"][..], &["bench", "--help"]] {
        let out = armsim().args(args).output().expect("armsim runs");
        assert!(out.status.success());
        let help = String::from_utf8_lossy(&out.stdout);
        let lower = help.to_lowercase();
        for internal in ["spec 00", "spec-00", "spec00"] {
            assert!(
                !lower.contains(internal),
                "{args:?} speaks of {internal:?}:\n{help}"
            );
        }
        if args == ["--help"] {
            for name in ["RCSSServerMJ", "TeleSpace", "lockstep", "MetaSim"] {
                assert!(help.contains(name), "--help lacks {name}:\n{help}");
            }
        }
    }
}

#[test]
fn logs_to_a_pipe_carry_no_colour() {
    let out = armsim()
        .args(["--headless", "--steps", "10", "--fast"])
        .env_remove("NO_COLOR")
        .output()
        .expect("armsim runs");
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("INFO"), "something was logged: {stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "ANSI escapes in piped logs: {stderr:?}"
    );
}

#[test]
fn telespace_scene_forms_load_with_a_note() {
    // TeleSpace's own scene_config.json writes the anchor transform flat (16 numbers, row by row)
    // and leaves out the filter's d_cutoff.
    let out = one_step_on_edited_scene("telespace_like", |scene, root| {
        scene["robot"]["mjcf_path"] = root
            .join("assets/robots/arm6.xml")
            .to_string_lossy()
            .into_owned()
            .into();
        scene["frames"]["vp_operator_anchor"]["t_sim_from_vp_anchor"] =
            serde_json::json!([1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
        scene["control"]["filter"]["params"]
            .as_object_mut()
            .unwrap()
            .remove("d_cutoff");
    });
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("$.control.filter.params.d_cutoff: missing"),
        "the default is logged: {stderr}"
    );
}

/// A fresh, empty folder: no `assets/` anywhere below it.
fn empty_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("armsim-anywhere-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The `state hash` line of a headless run's stdout.
fn state_hash(stdout: &str) -> String {
    stdout
        .lines()
        .find(|l| l.starts_with("state hash "))
        .unwrap_or_else(|| panic!("no state hash in:\n{stdout}"))
        .to_owned()
}

/// The binary runs from a folder with no `assets/` (as after `cargo install`): the default scene
/// and the shipped robots are built in, and give exactly the run of the source tree's files.
#[test]
fn the_binary_runs_from_any_folder_on_its_built_in_scenes() {
    let dir = empty_dir("headless");
    let run_in = |cwd: &std::path::Path, args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_armsim"))
            .current_dir(cwd)
            .args(ANY_PORTS)
            .args(["--headless", "--steps", "240", "--fast"])
            .args(args)
            .output()
            .expect("armsim runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "armsim {args:?} in {cwd:?}: {stderr}");
        (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
    };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for (name, file) in [
        ("default_scene", "assets/scenes/default_scene.json"),
        ("gripper4", "assets/scenes/gripper4.json"),
    ] {
        let (tree, _) = run_in(root, &["--scene", file]);
        let (by_name, _) = run_in(&dir, &["--scene", name]);
        assert_eq!(state_hash(&tree), state_hash(&by_name), "{name}");
        // The README's commands name the source tree's path; outside it the built-in copy
        // stands in, and says so.
        let (by_path, stderr) = run_in(&dir, &["--scene", file]);
        assert_eq!(state_hash(&tree), state_hash(&by_path), "{name}");
        assert!(
            stderr.contains(&format!("using the built-in scene {name}")),
            "{stderr}"
        );
        if name == "default_scene" {
            let (default, _) = run_in(&dir, &[]);
            assert_eq!(state_hash(&tree), state_hash(&default));
        }
    }
    // --help says where the default scene comes from.
    let out = Command::new(env!("CARGO_BIN_EXE_armsim"))
        .current_dir(&dir)
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("built-in default_scene"), "{help}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A user's scene names its robot relative to the scene file, wherever armsim is started from;
/// a robot that is not there is an error that lists every path tried.
#[test]
fn paths_inside_a_scene_resolve_relative_to_the_scene_file() {
    let dir = empty_dir("user-scene");
    let project = dir.join("project");
    std::fs::create_dir_all(project.join("scenes")).unwrap();
    std::fs::create_dir_all(project.join("models")).unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(
        root.join("assets/robots/arm6.xml"),
        project.join("models/my_arm.xml"),
    )
    .unwrap();
    let mut scene: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("assets/scenes/default_scene.json")).unwrap(),
    )
    .unwrap();
    scene["robot"]["mjcf_path"] = "../models/my_arm.xml".into();
    let path = project.join("scenes/mine.json");
    std::fs::write(&path, scene.to_string()).unwrap();
    let elsewhere = empty_dir("elsewhere");
    let run = |scene: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_armsim"))
            .current_dir(&elsewhere)
            .args(ANY_PORTS)
            .args(["--headless", "--steps", "10", "--scene"])
            .arg(scene)
            .output()
            .expect("armsim runs")
    };
    let out = run(&path);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_file(project.join("models/my_arm.xml")).unwrap();
    let out = run(&path);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("$.robot.mjcf_path")
            && stderr.contains("project/scenes/../models/my_arm.xml"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&elsewhere);
}

/// A shipped scene whose robot file is not on this machine (the Panda of MuJoCo Menagerie, the
/// SO-101 of SO-ARM100): the error says which `git clone` brings it, to where the scene looks.
#[test]
fn a_missing_shipped_robot_file_says_which_git_clone_brings_it() {
    let home = empty_dir("no-menagerie");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for (scene, clone) in [
        (
            "panda.json",
            "git clone --depth 1 https://github.com/google-deepmind/mujoco_menagerie ~/mujoco_menagerie",
        ),
        (
            "so101.json",
            "git clone --depth 1 https://github.com/TheRobotStudio/SO-ARM100 ~/SO-ARM100",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_armsim"))
            .current_dir(&home)
            .env("HOME", &home)
            .args(ANY_PORTS)
            .args(["--headless", "--steps", "1", "--scene"])
            .arg(root.join("assets/scenes").join(scene))
            .output()
            .expect("armsim runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{scene}: {stderr}");
        assert!(
            stderr.contains("$.robot.mjcf_path") && stderr.contains("not found"),
            "{scene}: {stderr}"
        );
        assert!(stderr.contains(clone), "{scene}: {stderr}");
        assert!(stderr.contains("$HOME"), "{scene}: {stderr}");
    }
    let _ = std::fs::remove_dir_all(&home);
}
