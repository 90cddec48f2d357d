//! Spec 004 (revA): headset teleoperation over WebSocket JSON. `envelope` is the sans-IO wire
//! format, `filter` and `control` the control pipeline, `server` the socket threads, `sessions`
//! the connections' state machine (roles, START, heartbeats) and `plugin` the ECS bridge.
pub mod control;
pub mod envelope;
pub mod filter;
pub mod plugin;
pub mod server;
pub mod sessions;
