//! LeRobot v3.0 datasets from a session (`armsim::lerobot`, `--record-lerobot`): rows only while
//! the session runs, an episode per reset and per `Success`, the rule book's task, a headless
//! armsim stopped by SIGTERM (once, or twice within microseconds as GNU `timeout` does) that
//! still leaves a dataset whose metadata adds up, `--start` recording without a client, and a
//! recording of nothing that fails, says why and leaves no folder. The full loading rules
//! (pyarrow, datasets, PyAV) are checked in `python/tests/test_lerobot.py`.

mod common;

use std::path::PathBuf;
use std::process::Command;

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
    // An agent's (init) starts the session; its perceptions keep coming while it runs. Two
    // seconds of sim time from its first perception, read off the perceptions themselves: on a
    // busy machine a real-time run falls behind the wall clock, and two wall seconds held under
    // one second of episode (dropped by design, leaving no dataset).
    let mut peer = Peer::agent(agent);
    let first = peer.until_sim_time(0.0);
    let seen = peer.until_sim_time(first + 2.0);
    assert!(seen >= first + 2.0);
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
    // At least the 2 s of sim time the agent saw, at 30 fps (60 rows), with a wide margin.
    let frames = info["total_frames"].as_u64().unwrap();
    assert!(frames >= 15, "{frames} frames");
    let _ = std::fs::remove_dir_all(&root);
}

/// GNU `timeout` delivers its signal twice within microseconds: to armsim, then to the whole
/// process group. The two are one stop request: the dataset is finished with its episode and the
/// trajectory file is written (a second signal used to exit at once, leaving neither).
#[test]
fn two_sigterms_from_gnu_timeout_are_one_stop_and_lose_nothing() {
    let root = scratch("timeout");
    // Beside the dataset, not in the shared temporary folder: a --record recovers the leftover
    // journals next to its target.
    let trajectory = scratch("timeout-trajectory").join("run.pkl");
    std::fs::create_dir_all(trajectory.parent().unwrap()).unwrap();
    let journal = armsim::trajectory::journal_path(&trajectory);
    let (root_arg, trajectory_arg) = (root.display().to_string(), trajectory.display().to_string());
    let mut sim = Armsim::start_under(
        "lerobot-timeout",
        // Long enough never to fire: the test signals `timeout` itself, which relays the signal
        // exactly as it does when its time is up (to armsim, then to its process group).
        &["timeout", "-s", "TERM", "600"],
        &[
            "--start",
            "--no-teleop",
            "--agent-port",
            "0",
            "--monitor-port",
            "0",
            "--record-lerobot",
            &root_arg,
            "--record",
            &trajectory_arg,
        ],
    );
    let monitor = sim.listening("monitor");
    // --start runs the session without any client: 1.6 s of it is one episode of 48 rows.
    let seen = Peer::open(monitor).until_sim_time(1.6);
    assert!(seen >= 1.6);
    let status = Command::new("sh")
        .args(["-c", &format!("kill -TERM {}", sim.child.id())])
        .status()
        .unwrap();
    assert!(status.success());
    let line = sim.wait_for("LeRobot dataset written");
    assert!(line.contains("1 episode"), "{line}");
    let exit = sim.child.wait().unwrap();
    sim.wait_for("steps/s");
    assert!(
        exit.success(),
        "exit status {exit:?}:\n{}",
        sim.log.join("\n")
    );
    let info = lerobot_info(&root);
    assert_eq!(info["total_episodes"], 1);
    let frames = info["total_frames"].as_u64().unwrap();
    assert!(frames >= 40, "{frames} frames");
    let t = armsim::trajectory::load(&trajectory).expect("the trajectory file is written");
    let demo = &t.demos("arm6").unwrap()[0];
    assert!(demo.actions.len() >= 384, "{} actions", demo.actions.len());
    assert!(
        !journal.exists(),
        "the journal is gone once the file is written"
    );
    let _ = std::fs::remove_dir_all(&root);
    let _ = std::fs::remove_dir_all(trajectory.parent().unwrap());
}

/// `--start`: a headless session runs from the first step without a client, so a recording of
/// the scene alone has its episode.
#[test]
fn start_records_an_episode_without_a_client() {
    let root = scratch("start");
    let out = Command::new(env!("CARGO_BIN_EXE_armsim"))
        .args(["--headless", "--start", "--steps", "480"])
        .args(["--no-teleop", "--no-agent-ports", "--record-lerobot"])
        .arg(&root)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let info = lerobot_info(&root);
    assert_eq!(info["total_episodes"], 1, "{err}");
    // 2 s at 30 fps, give or take the first and last row.
    let frames = info["total_frames"].as_u64().unwrap();
    assert!((55..=61).contains(&frames), "{frames} frames");
    let _ = std::fs::remove_dir_all(&root);
}

/// With no client and no `--start` the session never runs, so nothing is recorded: the run says
/// why in one error line, exits non-zero and leaves no folder that nothing could open (a folder
/// that was there before stays, empty, as it was).
#[test]
fn a_recording_of_nothing_fails_says_why_and_leaves_no_folder() {
    let created = scratch("nothing");
    let existing = scratch("nothing-existing");
    std::fs::create_dir_all(&existing).unwrap();
    for root in [&created, &existing] {
        let out = Command::new(env!("CARGO_BIN_EXE_armsim"))
            .env("NO_COLOR", "1")
            .args(["--headless", "--steps", "480"])
            .args(["--no-teleop", "--no-agent-ports", "--record-lerobot"])
            .arg(root)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success(),
            "exit 0 for a recording of nothing:\n{err}"
        );
        let why: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("no LeRobot episode was recorded"))
            .collect();
        assert_eq!(why.len(), 1, "one line says why:\n{err}");
        assert!(
            why[0].contains("ERROR") && why[0].contains("never ran") && why[0].contains("--start"),
            "{}",
            why[0]
        );
        assert!(!err.contains("could not be written"), "{err}");
    }
    assert!(!created.exists(), "the folder armsim made is removed");
    assert_eq!(
        std::fs::read_dir(&existing).unwrap().count(),
        0,
        "the folder that was there stays, empty"
    );
    let _ = std::fs::remove_dir_all(&existing);
}
