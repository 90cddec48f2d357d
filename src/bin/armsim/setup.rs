//! What the flags mean for the app: the clock, the render profile, and the [`AppSetup`] of
//! listeners, replays and recordings (each flag checked, with an error that names it).

use armsim::SimOptions;
use armsim::app::{AppSetup, LeRobotSetup, TrajectoryRecord, TrajectoryReplay};
use armsim::lerobot::replay::ReplayOptions;
use armsim::scene::Scene;
use armsim::sim::ClockMode;
use armsim::ui::render::RenderProfile;

use crate::cli::Cli;
use crate::cli_parse::resolve_host;

/// The flags checked before the scene loads.
pub fn check_run_flags(cli: &Cli) -> anyhow::Result<()> {
    if !(cli.speed.is_finite() && cli.speed > 0.0) {
        anyhow::bail!("--speed must be a positive number, got {}", cli.speed);
    }
    if let Some(d) = cli.duration
        && !(d.is_finite() && d > 0.0)
    {
        anyhow::bail!("--duration must be a positive number of seconds, got {d}");
    }
    Ok(())
}

/// The clock: a headless server (no stop condition) and the window serve clients in real time
/// (at `--speed`); headless batch runs race, as `--fast` asks everywhere.
pub fn sim_options(cli: &Cli) -> SimOptions {
    let clock = if cli.fast {
        ClockMode::Fast
    } else if cli.realtime
        || !cli.headless
        || (cli.steps.is_none() && cli.duration.is_none() && cli.replay.is_none())
    {
        ClockMode::RealTime { speed: cli.speed }
    } else {
        ClockMode::Fast
    };
    SimOptions { clock }
}

/// Every listener, replay and recording the flags ask for, on `scene`.
pub fn app_setup(cli: &Cli, scene: &Scene) -> anyhow::Result<AppSetup> {
    if !(cli.lockstep_timeout.is_finite() && cli.lockstep_timeout > 0.0) {
        anyhow::bail!("--lockstep-timeout must be a positive number of seconds");
    }
    if let Some(g) = cli.controller_grace
        && !(g.is_finite() && (0.0..=3600.0).contains(&g))
    {
        anyhow::bail!("--controller-grace must be in 0..=3600 seconds, got {g}");
    }
    if !(cli.state_rate.is_finite() && cli.state_rate > 0.0 && cli.state_rate <= 1000.0) {
        anyhow::bail!(
            "--state-rate must be in (0, 1000] Hz, got {}",
            cli.state_rate
        );
    }
    if cli.sync && cli.no_agent_ports {
        anyhow::bail!("--sync needs the agent port; drop --no-agent-ports");
    }
    // One pairing key for the page and for the ws:// listener's peers beyond loopback.
    if let Some(key) = &cli.xr_key {
        armsim::protocol::xr::check_key(key).map_err(anyhow::Error::msg)?;
    }
    let key = cli
        .xr_key
        .clone()
        .unwrap_or_else(armsim::protocol::xr::random_key);
    let teleop = if cli.no_teleop {
        None
    } else {
        let net = &scene.config.networking;
        let ip = match cli.teleop_bind {
            Some(ip) => ip,
            None => resolve_host(&net.ws_host)?,
        };
        Some(armsim::protocol::teleop::plugin::TeleopOptions {
            addr: std::net::SocketAddr::new(ip, cli.teleop_port.unwrap_or(net.ws_port)),
            state_rate_hz: cli.state_rate,
            controller_grace: cli.controller_grace.map(std::time::Duration::from_secs_f64),
            key: (!cli.teleop_no_key).then(|| key.clone()),
        })
    };
    let xr = if cli.no_teleop || cli.no_xr {
        None
    } else {
        let cert = match (&cli.tls_cert, &cli.tls_key) {
            (Some(cert), Some(key)) => armsim::protocol::xr::CertSource::Files {
                cert: cert.clone(),
                key: key.clone(),
            },
            _ => armsim::protocol::xr::CertSource::Generated {
                dir: armsim::protocol::xr::tls::config_dir()?,
            },
        };
        Some(armsim::protocol::xr::XrOptions {
            bind: cli.xr_bind,
            port: cli.xr_port,
            key: key.clone(),
            cert,
        })
    };
    let lockstep = cli.remote_control_port.map(|port| {
        (
            std::net::SocketAddr::new(cli.lockstep_bind, port),
            std::time::Duration::from_secs_f64(cli.lockstep_timeout),
        )
    });
    #[cfg_attr(not(feature = "ros2"), allow(unused_variables))]
    let ros2 = cli.ros2_flags.options()?;
    let sexp = (!cli.no_agent_ports).then(|| armsim::protocol::sexp::plugin::SexpOptions {
        agent: Some(std::net::SocketAddr::new(cli.agent_bind, cli.agent_port)),
        monitor: Some(std::net::SocketAddr::new(
            cli.monitor_bind,
            cli.monitor_port,
        )),
        sync: cli.sync,
        cycle_steps: cli.cycle_steps,
        ..Default::default()
    });
    let l = &cli.lerobot_flags;
    let lerobot = LeRobotSetup {
        fps: l.lerobot_fps,
        robot: l.lerobot_robot,
        replay: l.replay_lerobot.as_ref().map(|root| ReplayOptions {
            root: root.clone(),
            episode: l.episode,
            threshold_deg: l.replay_threshold,
            robot: l.lerobot_robot,
            exit_when_done: cli.headless,
        }),
        record: l.record_lerobot.clone(),
    };
    Ok(AppSetup {
        lockstep,
        rules: cli.rules.clone(),
        sexp,
        replay: cli.replay.as_ref().map(|path| TrajectoryReplay {
            path: path.clone(),
            mode: cli.replay_mode.into(),
            demo: cli.demo,
        }),
        record: cli.record.as_ref().map(|path| TrajectoryRecord {
            path: path.clone(),
            every: cli.record_every,
        }),
        lerobot,
        teleop,
        xr,
        #[cfg(feature = "ros2")]
        ros2,
        start: cli.start,
    })
}

/// The window's render profile from the command line.
pub fn render_profile(cli: &Cli) -> anyhow::Result<RenderProfile> {
    if !(cli.render_scale.is_finite() && (0.25..=1.0).contains(&cli.render_scale)) {
        anyhow::bail!(
            "--render-scale must be in 0.25..=1, got {}",
            cli.render_scale
        );
    }
    if !(cli.max_fps.is_finite() && (1.0..=1000.0).contains(&cli.max_fps)) {
        anyhow::bail!("--max-fps must be in 1..=1000, got {}", cli.max_fps);
    }
    if !(cli.frame_log_secs.is_finite() && cli.frame_log_secs >= 0.5) {
        anyhow::bail!("--frame-log-secs must be at least 0.5");
    }
    let mut render = RenderProfile {
        choice: cli.render_profile,
        ..Default::default()
    };
    render.lite.scale = cli.render_scale;
    render.lite.max_fps = cli.max_fps;
    for tweak in &cli.render_tweak {
        match tweak.as_str() {
            "tonemap" => render.lite.tonemapping = true,
            "pbr" => render.lite.pbr = true,
            "no-panel" => render.ablation.no_panel = true,
            "no-gizmos" => render.ablation.no_gizmos = true,
            other => anyhow::bail!(
                "unknown --render-tweak {other:?} (tonemap, pbr, no-panel, no-gizmos)"
            ),
        }
    }
    Ok(render)
}
