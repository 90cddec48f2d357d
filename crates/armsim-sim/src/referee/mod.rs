//! The referee: the rule books (`armsim_core::referee`, re-exported here) and, in `plugin`, the
//! ECS side that runs the active book after every step and keeps the numbered event log.

pub use armsim_core::referee::*;

pub mod plugin;
