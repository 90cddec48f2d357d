//! The referee on a `SimWorld`: the views a rule book reads, built from the world after a step,
//! and its actions applied back. Shared by the app's `Referee` phase and the Python package, so
//! both judge (and put cubes back) in exactly the same way and stay bit for bit in step.

use super::{
    FreePlay, ObjectView, PickAndPlace, RefereeAction, RefereeEvent, RuleBook, RuleBookConfig,
    StepView, TableView, ZoneRect, rule_book_by_name,
};
use crate::scene::Scene;
use crate::sim::{SIM_DT, SimViewMut};

/// What the scene says about the rules.
pub fn config_of(scene: &Scene) -> RuleBookConfig {
    let ext = &scene.config.extensions.armsim;
    RuleBookConfig {
        goal_zone: ext.goal_zone.as_ref().map(|g| ZoneRect {
            center_xy: g.center_xy_m,
            half_size: g.half_size_m,
        }),
        time_limit_s: ext.episode_time_limit_s.map(f64::from),
    }
}

/// The scene's default rule book: pick-and-place where the scene has a goal zone, else free play.
pub fn default_rule_book(scene: &Scene) -> Box<dyn RuleBook> {
    let config = config_of(scene);
    let name = if config.goal_zone.is_some() {
        PickAndPlace::NAME
    } else {
        FreePlay::NAME
    };
    rule_book_by_name(name, &config).unwrap_or_else(|_| Box::new(FreePlay::new()))
}

/// Runs `book` once after a physics step of `world`: appends its events to `events` and applies
/// the actions it asks for (cubes put back). `actions` is a scratch buffer, drained here. Returns
/// the objects that could not be put back, with why, for the caller to log.
pub fn judge(
    book: &mut dyn RuleBook,
    world: &mut SimViewMut<'_>,
    events: &mut Vec<RefereeEvent>,
    actions: &mut Vec<RefereeAction>,
) -> Vec<(usize, String)> {
    let (min_xy, max_xy) = world.table_bounds();
    let table = TableView {
        top_z: world.table_top_z,
        min_xy,
        max_xy,
    };
    let view = world.view();
    let views: Vec<ObjectView<'_>> = view
        .objects
        .iter()
        .map(|o| {
            let pose = view.body_pose(o.body);
            let (lin_vel, ang_vel) = view.body_velocity(o.body);
            ObjectView {
                name: &o.name,
                pos: pose.translation,
                lin_vel,
                ang_vel,
                half_extent: o.half_extent,
            }
        })
        .collect();
    let step = StepView {
        dt: SIM_DT,
        table: &table,
        objects: &views,
    };
    book.step(&step, events, actions);
    drop(views);
    let mut failed = Vec::new();
    for action in actions.drain(..) {
        match action {
            RefereeAction::ReplaceObject { object } => {
                if let Err(e) = world.reset_object(object) {
                    failed.push((object, e.to_string()));
                }
            }
        }
    }
    failed
}
