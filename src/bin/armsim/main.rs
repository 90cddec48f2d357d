//! The `armsim` command: parse the command line (`cli.rs`), load and validate the scene, then run
//! a subcommand (a benchmark, a trajectory tool), or build the app the flags describe
//! (`setup.rs`, into the library's `armsim::app::AppSetup`) and run it headless or in the window
//! (`modes.rs`).

// The benchmarks belong to the command, not to the library: `armsim bench …` is their only user.
mod bench;
mod bench_cmd;
mod cli;
mod cli_parse;
mod lerobot_cli;
mod modes;
mod ros2_cli;
mod ros2_types;
mod scene_cli;
mod setup;
mod trajectory_cmd;

use std::process::ExitCode;
use std::sync::Arc;

use armsim::scene::SceneSource;
use clap::Parser;

use cli::{Cli, Command};

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("armsim: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    match &cli.command {
        Some(Command::Trajectory { command }) => return trajectory_cmd::run(command),
        Some(Command::Ros2Types { dump }) => {
            let n = ros2_types::dump(dump)?;
            println!("wrote {n} ROS 2 types to {}", dump.display());
            return Ok(ExitCode::SUCCESS);
        }
        Some(Command::Bench(_)) | None => {}
    }
    setup::check_run_flags(&cli)?;
    let source = SceneSource::choose(cli.scene.as_deref());
    let load_options = armsim::robot::LoadOptions {
        package_paths: cli.package_path.clone(),
        ..Default::default()
    };
    let scene = match source
        .load_with(&load_options)
        .map_err(|errors| format!("is not valid:\n{errors}"))
        .and_then(|mut scene| match cli.scene_flags.apply(&mut scene) {
            Ok(()) => Ok(scene),
            Err(e) => Err(format!("cannot vary its episodes: {e}")),
        }) {
        Ok(scene) => Arc::new(scene),
        Err(e) => {
            eprintln!("armsim: scene {} {e}", source.describe());
            return Ok(ExitCode::from(2));
        }
    };
    // Logging starts with the app; until then the choice is a plain line on stderr, and only
    // where a named file was not found and the built-in copy stands in for it.
    if let (Some(asked), SceneSource::Bundled(name)) = (&cli.scene, &source)
        && asked.as_os_str() != *name
    {
        let (asked, used) = (asked.display(), source.describe());
        eprintln!("armsim: {asked} is not a file here; using the {used}");
    }
    if let Some(Command::Bench(args)) = &cli.command {
        bench_cmd::run(args, &cli, scene, &source, &load_options)?;
        return Ok(ExitCode::SUCCESS);
    }
    let options = setup::sim_options(&cli);
    let app = setup::app_setup(&cli, &scene)?;
    match cli.headless {
        true => modes::headless(&cli, scene, &options, &app),
        false => modes::window(&cli, scene, &options, &app),
    }
}
