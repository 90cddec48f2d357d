//! TeleSpace revA teleoperation (docs/protocols/teleop.md), sans-IO: the JSON `envelope`, the 1€
//! `filter`, `control` (the codec that validates control frames and the adapter that turns
//! them into joint motion under the workspace, clearance and speed limits), and `sessions`, the
//! connections' state machine (roles, START, heartbeats, hand-overs).

pub mod control;
pub mod envelope;
pub mod filter;
pub mod mesh_buffers;
pub mod scene_info;
pub mod sessions;
