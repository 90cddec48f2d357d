//! armsim's core without Bevy: robot models and their loaders and kinematics, the revA scene and
//! its validation, simulated cameras (where they are and how they project; no rendering), the
//! Rapier world of one scene (`SimWorld`), MetaSim states, actions and trajectory files, the
//! referee's rule books, the control authority (the session's transitions and the arm's owner),
//! and the sans-IO protocol codecs.
//!
//! The `armsim` app builds its ECS plugins, socket servers and window on this crate, and the
//! Python package builds on it alone, so the same inputs step the same physics in both. The
//! split follows rapier / bevy_rapier and quinn-proto / quinn: everything here is plain data and
//! functions, testable without an app, a socket or a clock.

pub mod camera;
pub mod geometry;
pub mod protocol;
pub mod rate;
pub mod referee;
pub mod robot;
pub mod scene;
pub mod session;
pub mod sim;
pub mod state;
pub mod trajectory;

/// The Rapier this crate steps, for code that needs its handle types.
pub use rapier3d as rapier;
