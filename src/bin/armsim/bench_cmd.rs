//! `armsim bench KIND`: runs the benchmark the subcommand names on the loaded scene and prints
//! its report.

use std::sync::Arc;

use anyhow::Context;
use armsim::robot::LoadOptions;
use armsim::scene::{Scene, SceneSource};

use crate::bench;
use crate::cli::{BenchArgs, BenchKind, Cli};

/// Runs the benchmark `args` names; `source` and `load` are how the scene was found, for `load`.
pub fn run(
    args: &BenchArgs,
    cli: &Cli,
    scene: Arc<Scene>,
    source: &SceneSource,
    load_options: &LoadOptions,
) -> anyhow::Result<()> {
    let BenchArgs {
        kind,
        steps,
        motion,
        seconds,
        iterations,
        observers,
        protocol,
        n,
        clicks,
        breakdown,
    } = args.clone();
    let seconds = seconds.unwrap_or(match kind {
        BenchKind::Window => 20.0,
        _ => 3.0,
    });
    if !(seconds.is_finite() && seconds > 0.0 && seconds <= 3600.0) {
        anyhow::bail!("--seconds must be between 0 and 3600, got {seconds}");
    }
    match kind {
        BenchKind::Window => {
            let options = bench::window::Options {
                scene: cli.scene.clone(),
                seconds,
                clicks,
                breakdown,
            };
            let report = bench::window::run(&options).context("window benchmark failed")?;
            println!("{report}");
        }
        BenchKind::Step => {
            let report =
                bench::run(scene, steps.unwrap_or(24_000), motion).context("benchmark failed")?;
            println!("{report}");
        }
        BenchKind::Lockstep => {
            let report = bench::lockstep::run(scene, steps.unwrap_or(10_000))
                .context("lockstep benchmark failed")?;
            println!("{report}");
        }
        BenchKind::Agent => {
            let report = bench::agent::run(scene, steps.unwrap_or(5_000), cli.cycle_steps)
                .context("agent benchmark failed")?;
            println!("{report}");
        }
        BenchKind::Record => {
            let report = bench::record::run(scene, steps.unwrap_or(24_000))
                .context("record benchmark failed")?;
            println!("{report}");
        }
        BenchKind::Quality => {
            let settings = if iterations.is_empty() {
                bench::quality::Setting::defaults(&scene)
            } else {
                bench::quality::parse_settings(&iterations, &scene).map_err(anyhow::Error::msg)?
            };
            let report =
                bench::quality::run(scene, &settings).context("quality benchmark failed")?;
            println!("{report}");
        }
        BenchKind::Load => match bench::load::run(source, load_options) {
            Ok(report) => println!("{report}"),
            Err(errors) => anyhow::bail!("scene {} is not valid:\n{errors}", source.describe()),
        },
        BenchKind::Idle => {
            let report = bench::idle::run(scene, std::time::Duration::from_secs_f64(seconds))
                .context("idle benchmark failed")?;
            println!("{report}");
        }
        BenchKind::Observers => {
            let wall = std::time::Duration::from_secs_f64(seconds);
            let report = bench::observers::run(scene, protocol, n, wall)
                .context("observers benchmark failed")?;
            println!("{report}");
        }
        #[cfg(feature = "ros2")]
        BenchKind::Ros2 => {
            let wall = std::time::Duration::from_secs_f64(seconds);
            let rate = armsim::protocol::ros2::options::Ros2Options::rate(cli.ros2_flags.ros2_rate)
                .context("--ros2-rate")?;
            // `None`: it ran (and printed) in its own network namespace.
            if let Some(report) =
                bench::ros2::run(scene, rate, wall).context("ros2 benchmark failed")?
            {
                println!("{report}");
            }
        }
        #[cfg(feature = "ros2")]
        BenchKind::Ros2Peer => bench::ros2::peer().context("ros2 benchmark's subscriber")?,
        #[cfg(not(feature = "ros2"))]
        BenchKind::Ros2 | BenchKind::Ros2Peer => {
            anyhow::bail!("bench ros2: this armsim was built without the ros2 feature")
        }
        BenchKind::Teleop => {
            let samples = usize::try_from(steps.unwrap_or(600)).unwrap_or(usize::MAX);
            let report =
                bench::teleop::run(scene, observers, samples).context("teleop benchmark failed")?;
            println!("{report}");
        }
    }
    Ok(())
}
