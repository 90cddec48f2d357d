//! The ECS side of the RCSSServerMJ ports: the one `add` that starts the agent port
//! ([`super::agent`]) and the monitor port ([`super::monitor`]), with their options
//! ([`SexpOptions`], defined in [`super::options`] and re-exported here with the ports' public
//! types).

use std::io;
use std::net::SocketAddr;

use bevy::prelude::*;

pub use super::agent::{
    AgentConn, AgentPort, AgentRole, EffectorCodec, JointState, MAX_AGENT_CONNECTIONS,
    MAX_PENDING_AGENTS, PROTOCOL, TorqueAdapter,
};
pub use super::monitor::{MAX_MONITOR_COMMANDS, MAX_MONITOR_CONNECTIONS, MonitorConn, MonitorPort};
pub use super::options::SexpOptions;

/// Starts the ports `options` names and wires them into the app. Returns the bound addresses
/// (agent, monitor), or the first bind error (e.g. a port in use).
pub fn add(
    app: &mut App,
    options: SexpOptions,
) -> io::Result<(Option<SocketAddr>, Option<SocketAddr>)> {
    let agent = match options.agent {
        Some(addr) => Some(super::agent::add(app, &options, addr)?),
        None => None,
    };
    let monitor = match options.monitor {
        Some(addr) => Some(super::monitor::add(app, &options, addr)?),
        None => None,
    };
    Ok((agent, monitor))
}
