//! LeRobot v3.0 datasets from a session (`armsim::lerobot`, `--record-lerobot`): rows only while
//! the session runs, an episode per reset and per `Success`, the rule book's task, and a headless
//! armsim stopped by SIGTERM that still leaves a dataset whose metadata adds up. The full loading
//! rules (pyarrow, datasets, PyAV) are checked in `python/tests/test_lerobot.py`.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use armsim::referee::PlayMode;
use armsim::referee::plugin::Referee;
use armsim::session::SessionCommand;
use armsim::sim::run_steps;
use common::child::Armsim;
use common::sexp::Peer;
use common::{app_for, command, default_scene, lerobot_info};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("armsim-lerobot-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn episodes_follow_resets_and_success_and_rows_only_run_while_running() {
    let root = scratch("episodes");
    let mut app = app_for(default_scene());
    armsim::lerobot::plugin(&mut app);
    armsim::lerobot::start(app.world_mut(), &root, 30).expect("recording starts");

    // IDLE: nothing is recorded.
    run_steps(&mut app, 240);
    let (_, episodes, frames) = app
        .world()
        .resource::<armsim::lerobot::LeRobotRecording>()
        .progress()
        .map(|(p, e, f)| (p.to_path_buf(), e, f))
        .unwrap();
    assert_eq!((episodes, frames), (0, 0), "nothing while IDLE");

    // Episode 0: one second running, 30 frames; a reset ends it.
    command(&mut app, SessionCommand::Start);
    run_steps(&mut app, 240);
    command(&mut app, SessionCommand::Reset);
    // Episode 1: 1.5 s, then the referee's Success ends it and rows stop.
    command(&mut app, SessionCommand::Start);
    run_steps(&mut app, 360);
    app.world_mut()
        .resource_mut::<Referee>()
        .set_play_mode(PlayMode::Success, 0.0);
    run_steps(&mut app, 240);
    // A quarter of a second after a reset is not a demonstration: dropped.
    command(&mut app, SessionCommand::Reset);
    command(&mut app, SessionCommand::Start);
    run_steps(&mut app, 60);
    let outcome = armsim::lerobot::finish(app.world_mut())
        .expect("a recording ran")
        .expect("the dataset is written");
    assert!(outcome.contains("2 episodes"), "{outcome}");

    let info = lerobot_info(&root);
    assert_eq!(info["codebase_version"], "v3.0");
    assert_eq!(info["fps"], 30);
    assert_eq!(info["robot_type"], "arm6");
    assert_eq!(info["total_episodes"], 2);
    let total = info["total_frames"].as_u64().unwrap();
    // 30 + 45 frames, give or take the frame the start or the verdict lands on.
    assert!((74..=77).contains(&total), "{total} frames");
    let names = info["features"]["observation.state"]["names"]
        .as_array()
        .unwrap();
    assert_eq!(names[0], "shoulder_pan.pos");
    assert_eq!(
        info["features"]["action"]["names"]
            .as_array()
            .unwrap()
            .len(),
        names.len()
    );
    assert!(root.join("data/chunk-000/file-000.parquet").is_file());
    assert!(root.join("meta/tasks.parquet").is_file());
    assert!(
        root.join("meta/episodes/chunk-000/file-000.parquet")
            .is_file()
    );
    let stats = std::fs::read_to_string(root.join("meta/stats.json")).unwrap();
    assert!(stats.contains("observation.state"), "{stats}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn refuses_a_folder_that_holds_files_and_a_rate_that_does_not_divide_240() {
    let root = scratch("refuse");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("keep.txt"), "mine").unwrap();
    let mut app = app_for(default_scene());
    armsim::lerobot::plugin(&mut app);
    let e = armsim::lerobot::start(app.world_mut(), &root, 30).unwrap_err();
    assert!(!e.is_empty());
    assert_eq!(
        std::fs::read_to_string(root.join("keep.txt")).unwrap(),
        "mine"
    );
    let e = armsim::lerobot::start(app.world_mut(), &scratch("rate"), 25).unwrap_err();
    assert!(e.contains("divide"), "{e}");
    let _ = std::fs::remove_dir_all(&root);

    // The command line says so before anything runs.
    let out = Command::new(env!("CARGO_BIN_EXE_armsim"))
        .args([
            "--headless",
            "--steps",
            "10",
            "--no-teleop",
            "--no-agent-ports",
        ])
        .args(["--lerobot-fps", "25", "--record-lerobot"])
        .arg(scratch("cli"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("divide"), "{err}");
}

/// A headless armsim recording while an agent holds the arm, stopped by SIGTERM the way a service
/// manager stops it: the open episode is finished and the dataset's metadata is complete.
#[test]
fn a_session_stopped_by_sigterm_leaves_a_complete_dataset() {
    let root = scratch("sigterm");
    let root_arg = root.display().to_string();
    let mut sim = Armsim::start(
        "lerobot",
        &[
            "--no-teleop",
            "--agent-port",
            "0",
            "--monitor-port",
            "0",
            "--record-lerobot",
            &root_arg,
        ],
    );
    let agent = sim.listening("agent");
    // An agent's (init) starts the session; its perceptions keep coming while it runs.
    let mut peer = Peer::agent(agent);
    let t0 = Instant::now();
    let mut perceptions = 0;
    while t0.elapsed() < Duration::from_secs(2) {
        if peer.recv().is_some() {
            perceptions += 1;
        }
    }
    assert!(perceptions > 10, "{perceptions} perceptions");
    let status = Command::new("sh")
        .args(["-c", &format!("kill -TERM {}", sim.child.id())])
        .status()
        .unwrap();
    assert!(status.success());
    let line = sim.wait_for("LeRobot dataset written");
    assert!(
        line.contains("1 episodes") || line.contains("1 episode"),
        "{line}"
    );
    let exit = sim.child.wait().unwrap();
    assert!(exit.success(), "exit status {exit:?}");
    let info = lerobot_info(&root);
    assert_eq!(info["total_episodes"], 1);
    // About 2 s at 30 fps, with a wide margin for a slow start.
    let frames = info["total_frames"].as_u64().unwrap();
    assert!(frames >= 15, "{frames} frames");
    let _ = std::fs::remove_dir_all(&root);
}
