//! Small parsers of `armsim`'s command line that need no `Cli`: the replay mode's flag, the
//! `--package-path` pairs and the scene's host name. Kept apart so `cli.rs` stays the flags.

use std::path::PathBuf;

use anyhow::Context;
use armsim::trajectory::plugin::ReplayMode;

/// `--replay-mode`: how a replay drives the world (the simulation crate's `ReplayMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ReplayArg {
    /// Set the world to each recorded state (kinematic, exact).
    State,
    /// Drive the physics with the recorded actions and measure the divergence.
    Action,
}

impl From<ReplayArg> for ReplayMode {
    fn from(arg: ReplayArg) -> Self {
        match arg {
            ReplayArg::State => ReplayMode::State,
            ReplayArg::Action => ReplayMode::Action,
        }
    }
}

/// The scene's `ws_host` as an address to bind ("localhost" is loopback).
pub fn resolve_host(host: &str) -> anyhow::Result<std::net::IpAddr> {
    use std::net::ToSocketAddrs;
    if let Ok(ip) = host.parse() {
        return Ok(ip);
    }
    (host, 0)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve networking.ws_host {host:?}"))?
        .map(|a| a.ip())
        .find(|ip| ip.is_ipv4())
        .with_context(|| format!("networking.ws_host {host:?} has no IPv4 address"))
}

/// `NAME=DIR` of `--package-path`.
pub fn parse_package_path(s: &str) -> Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((name, dir)) if !name.is_empty() && !dir.is_empty() => {
            Ok((name.to_string(), PathBuf::from(dir)))
        }
        _ => Err(format!(
            "expected NAME=DIR (a ROS package name and its folder), got `{s}`"
        )),
    }
}
