//! MetaSim states and actions (spec 002): the Bevy-free snapshot, views and action mapping
//! from `armsim_core::state`, plus the snapshot of a running app with its session, clock and
//! referee filled in.

pub use armsim_core::state::*;

/// The snapshot of a running app, with `extras` filled from the session and the referee:
/// `session` (state), `sim_time_s`, `steps`, and `referee` (rule book, play mode, score, play
/// time). What a tool embedding armsim asks for.
pub fn snapshot_app(world: &bevy::prelude::World) -> TensorState {
    let mut state = snapshot(&crate::sim::sim_view(world));
    if let Some(session) = world.get_resource::<crate::session::Session>() {
        state
            .extras
            .insert("session".into(), session.state().as_str().into());
    }
    if let Some(clock) = world.get_resource::<crate::sim::SimClock>() {
        state
            .extras
            .insert("sim_time_s".into(), clock.sim_time.into());
        state.extras.insert("steps".into(), clock.steps.into());
    }
    if let Some(referee) = world.get_resource::<crate::referee::plugin::Referee>() {
        let book = &referee.book;
        state.extras.insert(
            "referee".into(),
            serde_json::json!({
                "rules": book.name(),
                "play_mode": book.play_mode().as_str(),
                "score": book.score(),
                "play_time_s": book.play_time(),
            }),
        );
    }
    state
}
