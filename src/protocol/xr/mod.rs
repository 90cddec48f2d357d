//! The headset page: armsim serves a WebXR page over HTTPS so a Quest, Pico or Vision
//! Pro drives the arm from its browser with nothing to install. One origin serves the page
//! (`web/`, compiled in), `/scene.json` (what the page draws), the robot's mesh buffers
//! (`/meshes/<mesh>/<part>.bin`, built here once at start) and revA over TLS (`wss://…/ws`)
//! fed into the same teleop sessions as the plain `ws://` listener: same roles, limits, alerts
//! and heartbeats. `tls` makes or loads the certificate, `https` is the listener, `web` the
//! embedded files. A pairing key, random per start unless `--xr-key` fixes one, guards the page,
//! the scene, the mesh buffers and the WebSocket.

pub mod https;
pub mod tls;
pub mod web;

use std::net::{IpAddr, SocketAddr};

use anyhow::Context;
use bevy::prelude::*;

use crate::protocol::registry::{Connections, Protocol};
use crate::protocol::teleop::plugin::TeleopServer;
use crate::sim::SimScene;
use armsim_core::protocol::teleop::mesh_buffers::MeshBuffers;
pub use tls::CertSource;

/// The default HTTPS port of the headset page.
pub const DEFAULT_PORT: u16 = 8443;

/// Settings of the headset page.
#[derive(Clone, Debug)]
pub struct XrOptions {
    /// Where the page listens (`--xr-bind`, default 127.0.0.1), apart from the other listeners:
    /// opening the page to a headset on the network opens nothing else.
    pub bind: IpAddr,
    /// The port (0 = any free one).
    pub port: u16,
    /// The pairing key (the same one the plain ws:// listener asks of peers beyond loopback).
    pub key: String,
    pub cert: CertSource,
}

/// What the panel shows of the page: where to open it, and how to trust it.
#[derive(Resource, Clone, Debug)]
pub struct XrInfo {
    pub addr: SocketAddr,
    pub key: String,
    /// `https://ADDR:PORT/?key=KEY`, one per address a headset can reach.
    pub urls: Vec<String>,
    pub fingerprint: String,
    /// `adb reverse tcp:PORT tcp:PORT`: a Quest on USB then opens `https://localhost:PORT/…`.
    pub adb: String,
}

/// A pairing key a person can read and type: 16 hex digits (64 random bits).
pub fn random_key() -> String {
    let n = getrandom::u64().unwrap_or_else(|_| {
        // No OS randomness: the session id's fallback is as good as it gets.
        u64::from_str_radix(&crate::protocol::teleop::wire::new_session_id()[..8], 16).unwrap_or(0)
    });
    format!("{n:016x}")
}

/// Checks a `--xr-key`: URL-safe characters only (it travels in a query string), 8..=128 long.
pub fn check_key(key: &str) -> Result<(), String> {
    let ok_chars = key
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !(8..=128).contains(&key.len()) || !ok_chars {
        return Err(format!(
            "--xr-key must be 8 to 128 characters of A-Z, a-z, 0-9, '-' and '_', got {key:?}"
        ));
    }
    Ok(())
}

/// The URLs a headset can open for a listener bound to `addr`: every interface address when
/// it is bound to all of them (IPv4 for 0.0.0.0, both families for ::), else the address itself.
pub fn urls(addr: SocketAddr, key: &str) -> Vec<String> {
    let ip = addr.ip();
    let ips: Vec<IpAddr> = if ip.is_unspecified() {
        let all = tls::interface_addrs();
        let mut ips: Vec<IpAddr> = all
            .into_iter()
            .filter(|a| ip.is_ipv6() || a.is_ipv4())
            .collect();
        // Loopback last: the network addresses are the ones a headset needs.
        ips.sort_by_key(|a| a.is_loopback());
        ips
    } else {
        vec![ip]
    };
    ips.into_iter()
        .map(|ip| format!("https://{}/?key={key}", SocketAddr::new(ip, addr.port())))
        .collect()
}

/// Starts the page's listener beside the teleop server (which must be added first) and logs
/// where to open it. Errors say what to do (a port in use, an unreadable certificate).
pub fn add(app: &mut App, options: XrOptions) -> anyhow::Result<XrInfo> {
    let hub = app
        .world()
        .get_resource::<TeleopServer>()
        .context("the headset page needs the teleop server (drop --no-teleop)")?
        .hub()
        .clone();
    let tls = tls::load(&options.cert)?;
    let key = options.key;
    let (scene_json, meshes) = {
        let scene = &app.world().resource::<SimScene>().0;
        let world = crate::sim::sim_view(app.world());
        let info = armsim_core::protocol::teleop::scene_info::scene_info(scene, &world);
        let json = serde_json::to_vec(&info).context("encoding /scene.json")?;
        (json, MeshBuffers::new(&world.robot.meshes))
    };
    let parts: usize = meshes.meshes.iter().map(Vec::len).sum();
    if parts > 0 {
        let (raw, sent) = meshes.sizes();
        info!(
            "xr: serving {} mesh files as {parts} buffers: {raw} bytes, {sent} gzipped",
            meshes.meshes.len()
        );
    }
    let bind = SocketAddr::new(options.bind, options.port);
    let addr = https::start(
        bind,
        hub,
        tls.config.clone(),
        key.clone(),
        scene_json,
        meshes,
    )
    .with_context(|| {
        format!(
            "cannot serve the headset page on {bind} (another armsim running? use \
             --xr-port or --no-xr)"
        )
    })?;
    info!("xr: listening on {addr} (the headset page, /scene.json and wss; pairing key needed)");
    let urls = urls(addr, &key);
    let adb = format!("adb reverse tcp:{0} tcp:{0}", addr.port());
    info!(
        "xr: certificate {} (SHA-256 {})",
        tls.origin, tls.fingerprint
    );
    if !tls.names.is_empty() {
        info!("xr: certificate names: {}", tls.names.join(", "));
    }
    for url in &urls {
        info!("xr: headset page: {url}");
    }
    info!(
        "xr: Quest over USB: `{adb}`, then open https://localhost:{}/?key={key}",
        addr.port()
    );
    if !crate::protocol::net::exposed(addr) {
        info!(
            "xr: the page is on loopback only; --bind 0.0.0.0 (alias of --xr-bind) opens it, \
             and nothing else, to a headset on the network"
        );
    }
    // One line in the panel for both teleop listeners: their connections are one list.
    app.init_resource::<Connections>();
    let mut conns = app.world_mut().resource_mut::<Connections>();
    let plain = conns
        .listeners()
        .find(|(p, _)| *p == Protocol::Teleop)
        .map(|(_, l)| format!("{} + ", l.label))
        .unwrap_or_default();
    conns.listen(
        Protocol::Teleop,
        format!("{plain}wss://{addr}/ws (headset page https://{addr}/)"),
    );
    let info = XrInfo {
        addr,
        key,
        urls,
        fingerprint: tls.fingerprint,
        adb,
    };
    app.insert_resource(info.clone());
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_checked_and_random_ones_pass() {
        assert!(check_key(&random_key()).is_ok());
        assert_ne!(random_key(), random_key());
        assert!(check_key("short").is_err());
        assert!(check_key("has space in it").is_err());
        assert!(check_key("a&b=cdefgh").is_err());
        assert!(check_key("fixed-key_01").is_ok());
    }

    #[test]
    fn urls_name_the_bound_address_or_every_interface() {
        let one = urls("127.0.0.1:8443".parse().unwrap(), "k");
        assert_eq!(one, vec!["https://127.0.0.1:8443/?key=k".to_string()]);
        let v6 = urls("[::1]:9".parse().unwrap(), "k");
        assert_eq!(v6, vec!["https://[::1]:9/?key=k".to_string()]);
        let all = urls("0.0.0.0:8443".parse().unwrap(), "k");
        assert!(all.iter().any(|u| u.starts_with("https://127.0.0.1:8443/")));
        assert!(all.iter().all(|u| !u.contains('[')), "IPv4 only: {all:?}");
    }
}
