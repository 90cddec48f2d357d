//! armsim's shape: the table, the objects and the robot's links are entities stepped by
//! bevy_rapier3d inside `SimStep`, and the Bevy way of adding a body works.

use std::sync::Arc;

use armsim_sim::scene::{Scene, load_bundled_scene};
use armsim_sim::session::{SessionCommand, SessionRequest};
use armsim_sim::sim::{
    ClockMode, RobotJoint, RobotLink, SceneObject, SimBody, SimWorld, Table, run_steps, sim_view,
};
use armsim_sim::{SimOptions, headless_app};
use bevy::prelude::*;
use bevy_rapier3d::prelude::*;

fn scene() -> Arc<Scene> {
    Arc::new(
        load_bundled_scene("default_scene")
            .expect("bundled")
            .expect("loads"),
    )
}

fn new_app() -> App {
    let mut app = headless_app(
        scene(),
        &SimOptions {
            clock: ClockMode::Manual,
        },
    );
    app.finish();
    app.cleanup();
    app.update();
    app
}

fn hash(app: &App) -> u64 {
    sim_view(app.world()).state_hash()
}

fn count<F: bevy::ecs::query::QueryFilter>(app: &mut App) -> usize {
    app.world_mut()
        .query_filtered::<(), F>()
        .iter(app.world())
        .count()
}

#[test]
fn the_table_objects_and_links_are_entities_with_bevy_rapier_components() {
    let mut app = new_app();
    let (objects, links, joints) = {
        let sim = sim_view(app.world());
        (
            sim.objects.len(),
            sim.robot.links.len(),
            sim.robot.joints.len(),
        )
    };
    assert_eq!(count::<With<Table>>(&mut app), 1);
    assert_eq!(count::<With<SceneObject>>(&mut app), objects);
    assert_eq!(count::<With<RobotLink>>(&mut app), links);
    assert_eq!(count::<With<RobotJoint>>(&mut app), joints);
    let bodies = 1 + objects + links;
    // Every body with a collision shape carries it as a `Collider`.
    let shaped = {
        let sim = sim_view(app.world());
        sim.bodies()
            .filter(|(_, h)| !sim.colliders_of(*h).is_empty())
            .count()
    };
    assert_eq!(count::<(With<SimBody>, With<Collider>)>(&mut app), shaped);
    assert_eq!(
        count::<(
            With<SimBody>,
            With<RigidBody>,
            With<ColliderMassProperties>,
            With<RapierRigidBodyHandle>
        )>(&mut app),
        bodies
    );
    assert_eq!(
        count::<(
            With<RobotJoint>,
            Or<(With<MultibodyJoint>, With<ImpulseJoint>)>
        )>(&mut app),
        joints
    );
    // The cubes fall a little onto the table: bevy_rapier writes their poses back.
    let before: Vec<f32> = app
        .world_mut()
        .query_filtered::<&Transform, With<SceneObject>>()
        .iter(app.world())
        .map(|t| t.translation.z)
        .collect();
    run_steps(&mut app, 240);
    let sim_z: Vec<f32> = {
        let sim = sim_view(app.world());
        sim.objects
            .iter()
            .map(|o| sim.body_pose(o.body).translation.z)
            .collect()
    };
    let mut after: Vec<(usize, f32)> = app
        .world_mut()
        .query::<(&SceneObject, &Transform)>()
        .iter(app.world())
        .map(|(o, t)| (o.index, t.translation.z))
        .collect();
    after.sort_by_key(|(i, _)| *i);
    let after: Vec<f32> = after.into_iter().map(|(_, z)| z).collect();
    assert_eq!(
        after, sim_z,
        "the entities' transforms are the bodies' poses"
    );
    assert_eq!(before.len(), after.len());
}

#[test]
fn the_ecs_step_is_the_bare_rapier_step_bit_for_bit() {
    let mut app = new_app();
    let mut bare = SimWorld::new(&scene());
    assert_eq!(hash(&app), bare.view().state_hash(), "built alike");
    run_steps(&mut app, 480);
    for _ in 0..480 {
        bare.step();
    }
    assert_eq!(hash(&app), bare.view().state_hash());
}

/// Spawns a 6 cm box the Bevy way 15 cm above `cube_red`.
fn drop_box_on_red(app: &mut App) -> Entity {
    let red = {
        let sim = sim_view(app.world());
        let i = sim.object_index("cube_red").expect("cube_red");
        sim.body_pose(sim.objects[i].body).translation
    };
    app.world_mut()
        .spawn((
            RigidBody::Dynamic,
            Collider::cuboid(0.03, 0.03, 0.03),
            Transform::from_translation(red + Vec3::new(0.0, 0.0, 0.15)),
        ))
        .id()
}

#[test]
fn a_body_spawned_the_bevy_way_lands_on_a_cube() {
    let mut app = new_app();
    let body = drop_box_on_red(&mut app);
    run_steps(&mut app, 480);
    assert!(
        app.world().get::<RapierRigidBodyHandle>(body).is_some(),
        "bevy_rapier built the body"
    );
    let z = app
        .world()
        .get::<Transform>(body)
        .expect("transform")
        .translation
        .z;
    let sim = sim_view(app.world());
    let i = sim.object_index("cube_red").expect("cube_red");
    let red = sim.body_pose(sim.objects[i].body).translation;
    // Resting on the 5 cm cube (top at red.z + 0.025): its centre 3 cm above that.
    assert!(
        (z - (red.z + 0.025 + 0.03)).abs() < 0.005,
        "the box rests on the cube: box z {z}, cube z {}",
        red.z
    );
}

#[test]
fn reset_restores_the_scene_bit_for_bit_and_keeps_the_users_body() {
    let mut app = new_app();
    let fresh = hash(&app);
    let body = drop_box_on_red(&mut app);
    run_steps(&mut app, 240);
    assert_ne!(hash(&app), fresh);
    app.world_mut()
        .write_message(SessionRequest(SessionCommand::Reset));
    app.update();
    assert_eq!(hash(&app), fresh, "reset is a fresh world");
    run_steps(&mut app, 240);
    let mut again = new_app();
    let other = drop_box_on_red(&mut again);
    run_steps(&mut again, 240);
    assert!(app.world().get::<RapierRigidBodyHandle>(body).is_some());
    assert!(again.world().get::<RapierRigidBodyHandle>(other).is_some());
    // The kept box starts again at rest where it was, on the cube: the scene around it is the
    // fresh one.
    let z = app
        .world()
        .get::<Transform>(body)
        .expect("kept")
        .translation
        .z;
    assert!(z > 1.0, "the kept box is still above the table: z {z}");
}

/// The Python package's worlds: the app's `SimStep` schedule driven by explicit calls.
#[test]
fn an_embedded_world_steps_the_apps_schedule() {
    use armsim_sim::embed::EmbeddedSim;
    use armsim_sim::sim::JointCommand;

    fn send_sync<T: Send + Sync>() {}
    send_sync::<EmbeddedSim>();

    let mut a = EmbeddedSim::new(scene(), None);
    let fresh = a.sim().state_hash();
    let home = a.targets().to_vec();
    // The app, RUNNING with the same targets, steps to the same state.
    let mut app = new_app();
    app.world_mut()
        .write_message(SessionRequest(SessionCommand::Start));
    app.update();
    let target = JointCommand::Position {
        target: 0.4,
        velocity: 0.0,
    };
    a.set_target(0, target).expect("a finite target");
    app.world_mut()
        .resource_mut::<armsim_sim::sim::JointTargets>()
        .set(0, target)
        .expect("a finite target");
    assert_eq!(a.step(240), Ok(240));
    run_steps(&mut app, 240);
    assert_eq!(a.sim().state_hash(), hash(&app));
    assert_eq!(a.clock().steps, 240);
    assert!(
        a.sim().joint_positions()[0] > 0.2,
        "the target moved joint 0"
    );
    // Bad input is refused and changes nothing.
    let nan = JointCommand::Velocity { target: f32::NAN };
    assert!(a.set_target(1, nan).is_err());
    assert!(a.set_target(99, target).is_err());
    assert_eq!(a.targets()[1], home[1]);
    // Reset: the scene as loaded, bit for bit, targets home, time 0, still RUNNING.
    a.reset().expect("no recording to fail");
    assert_eq!(a.sim().state_hash(), fresh);
    assert_eq!(a.targets(), home.as_slice());
    assert_eq!(a.clock().steps, 0);
    assert_eq!(a.step(1), Ok(1));
    assert!(a.error().is_none());
    // The scene's entities were respawned for the new world.
    let world = a.world_mut();
    let links = world
        .query_filtered::<(), With<RobotLink>>()
        .iter(world)
        .count();
    assert_eq!(links, a.sim().robot.links.len());
}

/// `cube_red`'s entity and a point 30 cm above it, where a ray cast straight down starts.
fn red_and_above(app: &mut App) -> (Entity, Vec3) {
    app.world_mut()
        .query::<(Entity, &SceneObject, &Transform)>()
        .iter(app.world())
        .find(|(_, o, _)| o.name == "cube_red")
        .map(|(e, _, t)| (e, t.translation + Vec3::new(0.0, 0.0, 0.3)))
        .expect("the scene has cube_red")
}

/// What a ray cast straight down onto `cube_red` hit, from a system in `WithContext`.
#[derive(Resource, Default)]
struct RayHit(Option<Entity>);

/// A user's system reads bevy_rapier's context (`ReadRapierContext`) in `WithContext`, where
/// the context holds the sets: a ray cast down onto cube_red hits its entity.
#[test]
fn a_system_in_with_context_casts_rays_through_bevy_rapiers_context() {
    use armsim_sim::sim::{RapierStep, WithContext};

    let mut app = new_app();
    let (red, above) = red_and_above(&mut app);
    app.init_resource::<RayHit>();
    app.add_systems(
        RapierStep,
        (move |context: ReadRapierContext, mut hit: ResMut<RayHit>| {
            let Ok(context) = context.single() else {
                return;
            };
            hit.0 = context
                .with_query_pipeline(QueryFilter::default(), |q| {
                    q.cast_ray(above, Vec3::NEG_Z, 1.0, true)
                })
                .map(|(e, _)| e);
        })
        .in_set(WithContext),
    );
    run_steps(&mut app, 2);
    assert_eq!(app.world().resource::<RayHit>().0, Some(red));
    // The step path still matches the bare one bit for bit.
    let mut bare = SimWorld::new(&scene());
    for _ in 0..2 {
        bare.step();
    }
    assert_eq!(hash(&app), bare.view().state_hash());
}

/// Every scene entity's `Transform` is its Rapier body's pose once a batch of steps is done
/// (bevy_rapier's writeback runs once at the end of a batch, as it does once per frame).
#[test]
fn after_a_batch_of_steps_each_entity_has_its_bodys_pose() {
    let mut app = new_app();
    app.world_mut()
        .write_message(SessionRequest(SessionCommand::Start));
    app.update();
    let home: Vec<(Entity, Transform)> = app
        .world_mut()
        .query_filtered::<(Entity, &Transform), With<RobotLink>>()
        .iter(app.world())
        .map(|(e, t)| (e, *t))
        .collect();
    // Drive the first joint away from home so that the links move.
    {
        let mut targets = app
            .world_mut()
            .resource_mut::<armsim_sim::sim::JointTargets>();
        let cmd = armsim_sim::sim::JointCommand::Position {
            target: 0.8,
            velocity: 0.0,
        };
        targets.set(0, cmd).expect("a finite target");
    }
    run_steps(&mut app, 240);
    let world = app.world_mut();
    let mut moved = 0;
    let entities: Vec<(Entity, SimBody, Transform)> = world
        .query::<(Entity, &SimBody, &Transform)>()
        .iter(world)
        .map(|(e, b, t)| (e, *b, *t))
        .collect();
    let sim = sim_view(world);
    let handles: Vec<_> = sim.bodies().collect();
    for (e, body, t) in entities {
        let handle = handles
            .iter()
            .find(|(role, _)| *role == body.0)
            .expect("a body")
            .1;
        let pose = sim.body_pose(handle);
        assert_eq!(t.translation, pose.translation, "{body:?}: written back");
        assert_eq!(t.rotation, pose.rotation, "{body:?}: written back");
        if let Some((_, before)) = home.iter().find(|(h, _)| *h == e) {
            moved += usize::from(before.translation.distance(t.translation) > 1e-3);
        }
    }
    assert!(
        moved >= 3,
        "the first joint moved the links beyond it ({moved} moved)"
    );
}

/// Moving a scene object's `Transform` between steps teleports its body (bevy_rapier's
/// `SyncBackend` runs before each batch of steps).
#[test]
fn setting_a_cubes_transform_moves_its_body() {
    let mut app = new_app();
    let (red, index, at) = app
        .world_mut()
        .query::<(Entity, &SceneObject, &Transform)>()
        .iter(app.world())
        .find(|(_, o, _)| o.name == "cube_red")
        .map(|(e, o, t)| (e, o.index, t.translation))
        .expect("the scene has cube_red");
    // 10 cm over the table, beside where it was (the referee puts back what leaves the table).
    let goal = at + Vec3::new(0.0, 0.05, 0.1);
    app.world_mut()
        .get_mut::<Transform>(red)
        .expect("cube_red has a Transform")
        .translation = goal;
    run_steps(&mut app, 1);
    let sim = sim_view(app.world());
    let pos = sim.body_pose(sim.objects[index].body).translation;
    // Moved there, then one step of free fall.
    assert!(
        pos.distance(goal) < 1e-3,
        "cube_red is at {pos}, not near {goal}"
    );
}

/// What a user's `Update` system read from bevy_rapier's context between steps.
#[derive(Resource, Default)]
struct Seen {
    ray: Option<Entity>,
    motor_target: Option<f32>,
}

/// bevy_rapier's context owns the world: a system in `Update` (between steps, outside armsim's
/// schedules) casts a ray through `ReadRapierContext` and hits cube_red, and finds joint 1's
/// motor, in the context's multibody, driven to the target armsim was given.
#[test]
fn bevy_rapiers_context_holds_the_world_between_steps() {
    use armsim_sim::sim::{JointCommand, JointTargets};

    let mut app = new_app();
    let (red, above) = red_and_above(&mut app);
    app.init_resource::<Seen>();
    app.add_systems(
        Update,
        move |context: ReadRapierContext,
              joints: Query<(&RobotJoint, &RapierMultibodyJointHandle)>,
              mut seen: ResMut<Seen>| {
            let Ok(context) = context.single() else {
                return;
            };
            seen.ray = context
                .with_query_pipeline(QueryFilter::default(), |q| {
                    q.cast_ray(above, Vec3::NEG_Z, 1.0, true)
                })
                .map(|(e, _)| e);
            seen.motor_target = joints
                .iter()
                .find(|(j, _)| j.index == 1)
                .and_then(|(_, h)| context.joints.multibody_joints.get(h.0))
                .and_then(|(mb, id)| mb.link(id))
                .map(|l| {
                    l.joint
                        .data
                        .motors
                        .iter()
                        .map(|m| m.target_pos)
                        .fold(0.0, |a, t| if t != 0.0 { t } else { a })
                });
        },
    );
    app.world_mut()
        .write_message(SessionRequest(SessionCommand::Start));
    app.update();
    app.world_mut()
        .resource_mut::<JointTargets>()
        .set(
            1,
            JointCommand::Position {
                target: 0.8,
                velocity: 0.0,
            },
        )
        .expect("a finite target");
    run_steps(&mut app, 1);
    app.update();
    let seen = app.world().resource::<Seen>();
    assert_eq!(
        seen.ray,
        Some(red),
        "the ray cast between steps hits cube_red"
    );
    let target = seen
        .motor_target
        .expect("joint 1 is a multibody link with a motor");
    assert!(
        (target - 0.8).abs() < 1e-6,
        "joint 1's motor in the context drives to {target}, not 0.8"
    );
}

/// An embedded world syncs bevy_rapier lazily: the entities' `Transform`s are written back when
/// the ECS is looked at, and a `Transform` changed through `world_mut` moves the body at the
/// next step.
#[test]
fn an_embedded_world_syncs_the_ecs_when_it_is_looked_at_or_changed() {
    use armsim_sim::embed::EmbeddedSim;

    let mut a = EmbeddedSim::new(scene(), None);
    for _ in 0..120 {
        assert_eq!(a.step(1), Ok(1));
    }
    let (red, index, at) = {
        let world = a.world_mut();
        world
            .query::<(Entity, &SceneObject, &Transform)>()
            .iter(world)
            .find(|(_, o, _)| o.name == "cube_red")
            .map(|(e, o, t)| (e, o.index, t.translation))
            .expect("the scene has cube_red")
    };
    let body = a.sim().objects[index].body;
    assert_eq!(at, a.sim().body_pose(body).translation, "written back");
    let goal = at + Vec3::new(0.0, 0.05, 0.1);
    a.world_mut()
        .get_mut::<Transform>(red)
        .expect("cube_red has a Transform")
        .translation = goal;
    assert_eq!(a.step(1), Ok(1));
    let pos = a.sim().body_pose(body).translation;
    assert!(
        pos.distance(goal) < 1e-3,
        "cube_red is at {pos}, not near {goal}"
    );
}
