//! The contact forces on a free object over the last step, from the solver's impulses: what a
//! grasp's force balance and grip force are measured with (the grasp suite, `Sim.contacts` in
//! Python).

use glam::Vec3;
use rapier3d::prelude::{ColliderHandle, IntegrationParameters, NarrowPhase};

use super::world::{BodyRole, SimView};

/// The forces on one object at the end of the last step (N, world frame): each contact point's
/// normal and friction impulse in the step's last substep over the substep's length.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ObjectContacts {
    /// From everything it touches (the robot, the table, other objects).
    pub total: Vec3,
    /// From the robot's links alone.
    pub from_robot: Vec3,
    /// The sum of the normal forces' magnitudes from the robot's links: a parallel gripper's
    /// squeeze counted once per pad (two pads pressing with 1.25 N each give 2.5 N).
    pub robot_normal: f32,
    /// How many contact points the robot's links press with.
    pub robot_points: usize,
}

/// The contact forces on object `index` (scene order), or `None` for an index the world lacks.
/// `narrow_phase` and `integration` are the world's (a [`super::SimWorld`]'s `physics`, or
/// bevy_rapier's simulation context).
pub fn object_contacts(
    view: &SimView<'_>,
    narrow_phase: &NarrowPhase,
    integration: &IntegrationParameters,
    index: usize,
) -> Option<ObjectContacts> {
    let body = view.objects.get(index)?.body;
    let is_robot = |c: ColliderHandle| {
        view.physics
            .colliders
            .get(c)
            .and_then(|c| c.parent())
            .and_then(|b| view.role_of(b))
            .is_some_and(|r| matches!(r, BodyRole::Link(_)))
    };
    let dt = integration.dt / integration.num_solver_iterations.max(1) as f32;
    let mut out = ObjectContacts::default();
    for &collider in view.colliders_of(body) {
        for pair in narrow_phase.contact_pairs_with(collider) {
            // The solver pushes the second collider along the normal and the first against it;
            // its friction impulse (in the world frame) is the one on the first collider.
            let (sign, other) = if pair.collider2 == collider {
                (1.0, pair.collider1)
            } else {
                (-1.0, pair.collider2)
            };
            let robot = is_robot(other);
            for manifold in pair.solver_manifolds() {
                let normal = manifold.data.normal;
                for point in &manifold.points {
                    let d = &point.data;
                    let force =
                        sign * (normal * d.warmstart_impulse - d.warmstart_tangent_world) / dt;
                    out.total += force;
                    if robot {
                        out.from_robot += force;
                        out.robot_normal += d.warmstart_impulse / dt;
                        out.robot_points += usize::from(d.warmstart_impulse > 0.0);
                    }
                }
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::scene::load_scene;
    use crate::sim::SimWorld;

    #[test]
    fn a_cube_at_rest_on_the_table_is_held_up_by_its_weight() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/scenes/default_scene.json");
        let mut world = SimWorld::new(&load_scene(&path).unwrap_or_else(|e| panic!("{e}")));
        for _ in 0..240 {
            world.step();
        }
        let (physics, view) = (&world.physics, world.view());
        let contacts = |i| {
            object_contacts(
                &view,
                &physics.narrow_phase,
                &physics.integration_parameters,
                i,
            )
        };
        for (i, o) in view.objects.iter().enumerate() {
            let weight = physics.bodies[o.body].mass() * 9.81;
            let c = contacts(i).unwrap();
            assert!(
                (c.total.z - weight).abs() < 0.02 * weight,
                "{}: {c:?}, weight {weight} N",
                o.name
            );
            assert!(c.total.truncate().length() < 0.02 * weight, "{c:?}");
            assert_eq!(
                (c.from_robot, c.robot_normal, c.robot_points),
                (Vec3::ZERO, 0.0, 0)
            );
        }
        assert_eq!(contacts(view.objects.len()), None);
    }
}
