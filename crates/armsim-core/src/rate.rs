//! The fixed step rate of every armsim world, a module of its own because the scene (which
//! checks a camera's rate against it) and the world (which steps by it) both build on it, and
//! the world builds on the scene.

/// The fixed physics rate of every armsim world.
pub const SIM_HZ: f64 = 240.0;
/// One physics step, seconds.
pub const SIM_DT: f64 = 1.0 / SIM_HZ;
