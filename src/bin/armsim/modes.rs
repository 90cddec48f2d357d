//! The two ways the app runs: headless, to its stop condition, then its report and exit code
//! (a replay's divergence, the state hash, a recording or dataset that could not be written),
//! or in the window until it closes.

use std::process::ExitCode;
use std::sync::Arc;

use armsim::SimOptions;
use armsim::app::AppSetup;
use armsim::headless::{self, StopAfter};
use armsim::scene::Scene;
use armsim::trajectory::plugin as trajectory;

use crate::cli::Cli;
use crate::setup::render_profile;

/// Runs headless until `--steps`, `--duration`, a replay's end or a stop request.
pub fn headless(
    cli: &Cli,
    scene: Arc<Scene>,
    options: &SimOptions,
    setup: &AppSetup,
) -> anyhow::Result<ExitCode> {
    let stop = match (cli.steps, cli.duration) {
        (Some(n), _) => StopAfter::Steps(n),
        (None, Some(s)) => StopAfter::SimSeconds(s),
        (None, None) => StopAfter::Never,
    };
    let cameras = armsim::offscreen::HeadlessCameras {
        // Images for ROS 2 need the offscreen renderer, as a recording's do.
        cameras: cli.cameras || !cli.ros2_flags.ros2_cameras.is_empty(),
        recording: cli.lerobot_flags.record_lerobot.is_some(),
        snapshots: cli.camera_snapshots.clone(),
    };
    let (mut app, rendering) =
        armsim::offscreen::headless_cli_app(scene.clone(), options, &cameras)
            .map_err(anyhow::Error::msg)?;
    setup.add_to(&mut app, &scene)?;
    headless::stop_on_signals().map_err(anyhow::Error::msg)?;
    let report = if rendering {
        armsim::offscreen::run(&mut app, stop)
    } else {
        headless::run(&mut app, stop)
    };
    let recording = trajectory::recording_outcome(app.world_mut());
    let dataset = armsim::lerobot::outcome(app.world_mut());
    let mut code = ExitCode::SUCCESS;
    if let Some(replay) = app.world().get_resource::<trajectory::Replay>() {
        println!("{}", replay.report());
        if replay.failed.is_some() {
            code = ExitCode::FAILURE;
        }
    }
    if let Some(report) = armsim::lerobot::replay::report(app.world()) {
        println!("{report}");
    }
    // The determinism fingerprint of the final world (`SimView::state_hash`): equal hashes
    // mean bit-identical physical states, e.g. against the Python package stepping the same inputs.
    println!(
        "state hash {:016x}",
        armsim::sim::sim_view(app.world()).state_hash()
    );
    println!("{report}");
    // A recording of nothing has said why in its one error line already.
    let world = app.world();
    if let Some(Err(e)) = recording {
        if !world.resource::<trajectory::Recording>().nothing_recorded {
            eprintln!("armsim: the recording could not be written: {e}");
        }
        code = ExitCode::FAILURE;
    }
    match dataset {
        Some(Ok(summary)) => println!("LeRobot dataset {summary}"),
        Some(Err(e)) => {
            if !world
                .resource::<armsim::lerobot::LeRobotRecording>()
                .nothing_recorded
            {
                eprintln!("armsim: the LeRobot dataset could not be written: {e}");
            }
            code = ExitCode::FAILURE;
        }
        None => {}
    }
    Ok(code)
}

/// Runs the window until it closes (or a stop request closes it).
pub fn window(
    cli: &Cli,
    scene: Arc<Scene>,
    options: &SimOptions,
    setup: &AppSetup,
) -> anyhow::Result<ExitCode> {
    let render = render_profile(cli)?;
    let ui_options = armsim::ui::UiOptions {
        screenshot: cli.screenshot.clone(),
        frame_log_secs: Some(cli.frame_log_secs),
    };
    let mut app = armsim::window_app(scene.clone(), options, ui_options, render);
    if cli.cameras {
        bevy::log::info!("--cameras is for --headless: the window renders its cameras anyway");
    }
    if let Some(dir) = &cli.camera_snapshots {
        app.insert_resource(armsim::ui::camera_snapshots::CameraSnapshots::new(dir));
    }
    setup.add_to(&mut app, &scene)?;
    // Ctrl-C, SIGTERM and SIGHUP close the window through AppExit; recordings and datasets
    // finish on it, and one that cannot be written makes the exit an error.
    headless::stop_on_signals().map_err(anyhow::Error::msg)?;
    app.add_systems(bevy::app::Update, headless::exit_on_stop_request);
    Ok(match app.run().is_error() {
        true => ExitCode::FAILURE,
        false => ExitCode::SUCCESS,
    })
}
