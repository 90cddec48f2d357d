//! RCSSServerMJ's S-expression ports (docs/protocols/rcss.md), sans-IO: the expression type with
//! its tolerant parser and printer (re-exported here), the length-prefixed `framing`, the
//! `messages` both ports exchange (perceptions, world frames, effectors, monitor commands), what
//! a connection did ([`ConnEvent`]) and the agent connections' state machine (`agents`).

pub mod agents;
mod expr;
pub mod framing;
pub mod messages;

pub use expr::*;

use std::net::SocketAddr;

/// What a port's connection did, as its threads report it (the app's `NetEvent`) and as
/// the agents' machine takes it in: one type for both, so a message or a close passes from one
/// to the other as it is. `O` is what an opening brings besides the peer: the connection's two
/// sides for an ECS bridge, nothing for the machine.
#[derive(Clone, Debug)]
pub enum ConnEvent<O> {
    Opened {
        conn: u64,
        peer: SocketAddr,
        with: O,
    },
    /// One frame's well-formed expressions, in order (possibly none: the frame still counts as
    /// the client's message for sync mode).
    Message {
        conn: u64,
        exprs: Vec<Sexp>,
    },
    Closed {
        conn: u64,
        reason: String,
    },
}
