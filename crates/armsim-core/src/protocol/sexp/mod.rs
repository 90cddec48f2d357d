//! RCSSServerMJ's S-expression ports (docs/protocols/rcss.md), sans-IO: the expression type with
//! its tolerant parser and printer (re-exported here), the length-prefixed `framing`, and the
//! `messages` both ports exchange (perceptions, world frames, effectors, monitor commands).

mod expr;
pub mod framing;
pub mod messages;

pub use expr::*;
