//! The physics in the ECS: bevy_rapier3d's `RapierPhysicsPlugin`, its context entity, and one
//! entity per body of the scene (the table, each object, each robot link) carrying
//! bevy_rapier's components (`RigidBody`, `Collider`, `ColliderMassProperties`, `Velocity`,
//! `MultibodyJoint` / `ImpulseJoint`) and armsim's markers (`Table`, `SceneObject`, `RobotLink`,
//! `RobotJoint`).
//!
//! **Who owns what.** The Rapier sets (bodies, colliders, joints, islands, broad and narrow
//! phase) belong to the [`Sim`] resource's `SimWorld` between steps: every reader (state
//! snapshots, the protocols, the referee, the panel) and every writer of joint motors and
//! teleports goes through it. In `SimSystems::Physics` they move (an O(1) swap, never a copy)
//! into bevy_rapier's context entity; bevy_rapier's own systems run in [`RapierStep`]:
//! - `SyncBackend`: bodies and colliders the user spawned (`RigidBody` + `Collider`) or changed
//!   are created or updated, despawned ones removed;
//! - `StepSimulation`: one 240 Hz step by bevy_rapier's `step_simulation`, which calls Rapier's
//!   `PhysicsPipeline::step` with the same arguments `SimWorld::step` does, so the ECS step and
//!   the bare one give the same state bit for bit;
//! - `Writeback`: the bodies' poses and velocities go back into `Transform` and `Velocity`.
//!
//! Then the sets move back. The joints' data (motors, limits) is the `SimWorld`'s: a link's
//! `MultibodyJoint` component describes the joint as it was built and is never written again
//! (bevy_rapier would rewrite the whole joint from it).
//!
//! **Reset** builds a new `SimWorld` from the scene; [`sync_entities`] notices the new world,
//! despawns the scene's entities, gives the context fresh maps and spawns them again in the
//! same order, so a reset world is bit for bit a fresh one. Bodies the user added stay: their
//! bevy_rapier handles are dropped, so bevy_rapier builds them again in the new world at the
//! pose their `Transform` has, at rest.

use bevy::ecs::schedule::{
    ScheduleCleanupPolicy, ScheduleConfigs, ScheduleLabel, SingleThreadedExecutor,
};
use bevy::ecs::system::ScheduleSystem;
use bevy::prelude::*;
use bevy_rapier3d::plugin::systems::sync_removals;
use bevy_rapier3d::prelude::*;
use bevy_rapier3d::rapier::prelude::{PhysicsWorld, RigidBodyHandle};

use super::{BodyRole, JointHandle, SIM_DT, Sim, SimClock};

/// bevy_rapier3d's `StepSimulation` set: one 240 Hz step, run once per step from
/// `SimSystems::Physics`, between lending the sets to the context and taking them back.
#[derive(ScheduleLabel, Debug, Clone, PartialEq, Eq, Hash)]
pub struct RapierStep;

/// bevy_rapier3d's `SyncBackend` set (bodies, colliders and joints the user spawned, changed or
/// despawned go into the Rapier sets), run once before each batch of steps (see
/// [`crate::sim::begin_batch`]).
#[derive(ScheduleLabel, Debug, Clone, PartialEq, Eq, Hash)]
pub struct RapierSync;

/// bevy_rapier3d's `Writeback` set (the bodies' poses and velocities into `Transform` and
/// `Velocity`), run once after each batch of steps (see [`crate::sim::end_batch`]).
#[derive(ScheduleLabel, Debug, Clone, PartialEq, Eq, Hash)]
pub struct RapierWriteback;

/// Where your systems that use bevy_rapier's context (`ReadRapierContext`, `WriteRapierContext`:
/// ray casts, shape casts, contact queries) go: a set of the [`RapierStep`] schedule that runs
/// right after bevy_rapier's step, while the context holds the sets, once per step. Between
/// steps the context is empty (the sets are the `SimWorld`'s); read the `Sim` resource there.
/// Within a batch of steps the entities' `Transform`s are those of the batch's start (they are
/// written back at its end); the bodies' poses in the context are the step's own.
#[derive(SystemSet, Debug, Clone, PartialEq, Eq, Hash)]
pub struct WithContext;

/// bevy_rapier's removal of despawned bodies, run every frame (a body despawned while the
/// session is paused leaves Rapier at once).
#[derive(ScheduleLabel, Debug, Clone, PartialEq, Eq, Hash)]
struct RapierRemovals;

/// The entity holding bevy_rapier's context (the `DefaultRapierContext`).
#[derive(Resource, Clone, Copy, Debug)]
pub struct PhysicsContext(pub Entity);

/// A body of the scene (not one the user added), with its role.
#[derive(Component, Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimBody(pub BodyRole);

/// The table.
#[derive(Component, Clone, Copy, Debug)]
pub struct Table;

/// One of the scene's free objects (a cube, ...), scene order.
#[derive(Component, Clone, Debug)]
pub struct SceneObject {
    pub index: usize,
    pub name: String,
}

/// One of the robot's links, robot link order.
#[derive(Component, Clone, Debug)]
pub struct RobotLink {
    pub index: usize,
    pub name: String,
}

/// The actuated joint (robot joint order) that moves this link relative to its parent.
#[derive(Component, Clone, Debug)]
pub struct RobotJoint {
    pub index: usize,
    pub name: String,
}

/// Which `SimWorld` the scene's entities stand for (`SimWorld::instance`), and whether
/// bevy_rapier's systems have seen them yet (`prime`).
#[derive(Resource, Default)]
struct SpawnedFor {
    instance: Option<u64>,
    primed: bool,
}

/// Adds bevy_rapier3d's plugin, its three sets each in its own schedule ([`RapierSync`],
/// [`RapierStep`], [`RapierWriteback`]), and the scene's entities.
pub(super) fn plugin(app: &mut App) {
    app.add_plugins(
        RapierPhysicsPlugin::<NoUserData>::default()
            // Only where its PostUpdate removal system goes (replaced below): the sets are
            // added here, each to the schedule that runs it.
            .in_schedule(RapierStep)
            .with_default_system_setup(false)
            .with_custom_initialization(RapierContextInitialization::NoAutomaticRapierContext),
    )
    // Rapier steps exactly SIM_DT, once, however long the frame was.
    .insert_resource(TimestepMode::Fixed {
        dt: SIM_DT as f32,
        substeps: 1,
    })
    // bevy_rapier's step reads `Time` (only for the interpolated and variable modes); the
    // headless app has no TimePlugin.
    .init_resource::<Time>()
    // bevy_rapier propagates its entities' transforms itself; Bevy's propagation reads this
    // (the window's TransformPlugin adds it too).
    .init_resource::<bevy::transform::StaticTransformOptimizations>()
    .init_resource::<SpawnedFor>();
    // Each schedule lends the sets to the context first and takes them back last: systems, not
    // a `resource_scope` around the schedule, so the `SimWorld` (which holds them inline) is
    // never moved out of its storage and back (that move cost 2.5 % of a step).
    let lent = |label: fn() -> Schedule, systems: ScheduleConfigs<ScheduleSystem>| {
        let mut s = label();
        s.set_executor(SingleThreadedExecutor::new());
        s.add_systems((lend_sets, systems, take_back_sets).chain());
        s
    };
    let mut sync = lent(
        || Schedule::new(RapierSync),
        RapierPhysicsPlugin::<NoUserData>::get_systems(PhysicsSet::SyncBackend),
    );
    sync.configure_sets((
        RapierTransformPropagateSet.in_set(PhysicsSet::SyncBackend),
        RapierBevyComponentApply.in_set(PhysicsSet::SyncBackend),
    ));
    let mut step = Schedule::new(RapierStep);
    step.set_executor(SingleThreadedExecutor::new());
    step.configure_sets(WithContext.after(PhysicsSet::StepSimulation));
    step.add_systems((
        lend_sets.before(PhysicsSet::StepSimulation),
        RapierPhysicsPlugin::<NoUserData>::get_systems(PhysicsSet::StepSimulation),
        take_back_sets.after(WithContext),
    ));
    let writeback = lent(
        || Schedule::new(RapierWriteback),
        RapierPhysicsPlugin::<NoUserData>::get_systems(PhysicsSet::Writeback),
    );
    app.add_schedule(sync)
        .add_schedule(step)
        .add_schedule(writeback);
    // The plugin also removes despawned bodies in PostUpdate, where the sets are not in the
    // context (they are the `SimWorld`'s between steps): that copy is replaced by one that
    // borrows them.
    app.world_mut()
        .schedule_scope(PostUpdate, |world, schedule| {
            schedule.remove_systems_in_set(
                sync_removals,
                world,
                ScheduleCleanupPolicy::RemoveSystemsOnly,
            )
        })
        .expect("bevy_rapier3d adds its removal system to PostUpdate");
    let mut removals = Schedule::new(RapierRemovals);
    removals.set_executor(SingleThreadedExecutor::new());
    removals.add_systems((lend_sets, sync_removals, take_back_sets).chain());
    app.add_schedule(removals);
    app.add_systems(PostUpdate, removals_between_steps);
    let gravity = app.world().resource::<Sim>().0.physics.gravity;
    let mut config = RapierConfiguration::new(1.0);
    config.gravity = gravity;
    let context = app
        .world_mut()
        .spawn((
            Name::new("physics context"),
            RapierContextSimulation::default(),
            config,
            DefaultRapierContext,
        ))
        .id();
    app.insert_resource(PhysicsContext(context));
    // The entities exist as soon as the app does; bevy_rapier first sees them at the first
    // frame or step, once every plugin has added its resources.
    spawn_for_current_world(app.world_mut());
    // A reset (a new world) shows at once, stepping or not.
    app.add_systems(Update, sync_entities.before(super::ClockSystems));
}

/// One physics step through bevy_rapier3d: commands into the motors, then its step, with the
/// sets lent to the context.
pub(super) fn physics_step(world: &mut World) {
    sync_entities(world);
    world.resource_mut::<Sim>().0.prepare_step();
    world.run_schedule(RapierStep);
    world.resource_mut::<Sim>().0.finish_step();
    world.resource_mut::<SimClock>().advance();
}

/// Before a batch of steps: what the user spawned, changed or despawned goes into the sets.
pub(super) fn sync_backend(world: &mut World) {
    sync_entities(world);
    world.run_schedule(RapierSync);
}

/// After a batch of steps: the bodies' poses and velocities go into their entities.
pub(super) fn writeback(world: &mut World) {
    world.run_schedule(RapierWriteback);
}

fn removals_between_steps(world: &mut World) {
    world.run_schedule(RapierRemovals);
}

/// bevy_rapier's context components that hold the Rapier sets.
type ContextSets = (
    &'static mut RapierContextSimulation,
    &'static mut RapierRigidBodySet,
    &'static mut RapierContextColliders,
    &'static mut RapierContextJoints,
);

/// First in bevy_rapier's schedules: the `SimWorld`'s sets move into the context.
fn lend_sets(sim: ResMut<Sim>, context: Query<ContextSets, With<DefaultRapierContext>>) {
    swap_sets(sim, context);
}

/// Last in bevy_rapier's schedules: the sets move back into the `SimWorld`.
fn take_back_sets(sim: ResMut<Sim>, context: Query<ContextSets, With<DefaultRapierContext>>) {
    swap_sets(sim, context);
}

/// Swaps the `SimWorld`'s Rapier sets with those in bevy_rapier's context: done twice, it lends
/// them and takes them back. Moves, no copies, and no change ticks on either side. What holds
/// no state of the world (the pipeline's buffers, the CCD solver's cache) stays in the context,
/// and the context's integration parameters are the world's, copied when it was made
/// ([`fresh_context`]): moving those large structs twice a step cost 1 % of a step.
fn swap_sets(mut sim: ResMut<Sim>, mut context: Query<ContextSets, With<DefaultRapierContext>>) {
    use std::mem::swap;
    let Ok((mut s, mut b, mut c, mut j)) = context.single_mut() else {
        return;
    };
    let p = &mut sim.bypass_change_detection().0.physics;
    let s = s.bypass_change_detection();
    swap(&mut p.islands, &mut s.islands);
    swap(&mut p.broad_phase, &mut s.broad_phase);
    swap(&mut p.narrow_phase, &mut s.narrow_phase);
    swap(&mut p.bodies, &mut b.bypass_change_detection().bodies);
    swap(&mut p.colliders, &mut c.bypass_change_detection().colliders);
    let j = j.bypass_change_detection();
    swap(&mut p.impulse_joints, &mut j.impulse_joints);
    swap(&mut p.multibody_joints, &mut j.multibody_joints);
}

/// Makes the scene's entities stand for the current `SimWorld`: nothing to do while it is the
/// one they were spawned for; after a reset (a new world), they are spawned again.
pub fn sync_entities(world: &mut World) {
    spawn_for_current_world(world);
    if !world.resource::<SpawnedFor>().primed {
        world.resource_mut::<SpawnedFor>().primed = true;
        prime(world);
        release_user_bodies(world);
        // ... and built again now, not at the next batch: a reset may come within one.
        world.run_schedule(RapierSync);
    }
}

fn spawn_for_current_world(world: &mut World) {
    let instance = world.resource::<Sim>().0.instance();
    if world.resource::<SpawnedFor>().instance == Some(instance) {
        return;
    }
    *world.resource_mut::<SpawnedFor>() = SpawnedFor {
        instance: Some(instance),
        primed: false,
    };
    let context = world.resource::<PhysicsContext>().0;
    let old: Vec<Entity> = world
        .query_filtered::<Entity, With<SimBody>>()
        .iter(world)
        .collect();
    for e in old {
        world.despawn(e);
    }
    fresh_context(world);
    spawn_scene_entities(world, context);
}

/// Gives bevy_rapier's context fresh maps (a new world's handles mean other bodies) and the
/// world's integration parameters (solver iterations, PGS passes, dt).
fn fresh_context(world: &mut World) {
    let context = world.resource::<PhysicsContext>().0;
    let mut simulation = RapierContextSimulation::default();
    simulation.integration_parameters = world.resource::<Sim>().0.physics.integration_parameters;
    world.entity_mut(context).insert((
        simulation,
        RapierRigidBodySet::default(),
        RapierContextColliders::default(),
        RapierContextJoints::default(),
    ));
}

fn release_user_bodies(world: &mut World) {
    // The user's bodies are built again in the new world by bevy_rapier at the next step
    // (after the priming, which must not build them into its throwaway copies).
    drop_from_users::<RapierRigidBodyHandle>(world);
    drop_from_users::<RapierColliderHandle>(world);
    drop_from_users::<RapierImpulseJointHandle>(world);
    drop_from_users::<RapierMultibodyJointHandle>(world);
}

/// Removes handle component `C` from every entity that is not one of the scene's bodies.
fn drop_from_users<C: Component>(world: &mut World) {
    let users: Vec<Entity> = world
        .query_filtered::<Entity, (With<C>, Without<SimBody>)>()
        .iter(world)
        .collect();
    for e in users {
        world.entity_mut(e).remove::<C>();
    }
}

/// Spawns one entity per body of the `SimWorld`, bound to its Rapier body.
fn spawn_scene_entities(world: &mut World, context: Entity) {
    world.resource_scope(|world, mut sim: Mut<Sim>| {
        let sim = &mut sim.bypass_change_detection().0;
        let roles: Vec<(BodyRole, RigidBodyHandle)> = sim.bodies().collect();
        let mut link_entities = vec![Entity::PLACEHOLDER; sim.robot.links.len()];
        for (role, handle) in roles {
            let rb = &sim.physics.bodies[handle];
            let pose = rb.position();
            let transform =
                Transform::from_translation(pose.translation).with_rotation(pose.rotation);
            let mass = rb.mass_properties().local_mprops;
            let colliders = rb.colliders().to_vec();
            let shapes: Vec<_> = colliders
                .iter()
                .filter_map(|&c| sim.physics.colliders.get(c))
                .map(|co| {
                    (
                        *co.position_wrt_parent().unwrap_or(co.position()),
                        co.shared_shape().clone(),
                    )
                })
                .collect();
            // One collider: its shape. Several (a link with more than one geom): a compound
            // that describes them; the Rapier colliders stay separate.
            // A link without collision geoms (a massless tool frame) has no collider.
            let collider = match shapes.as_slice() {
                [] => None,
                [(offset, shape)] if *offset == Default::default() => {
                    Some(Collider::from(shape.clone()))
                }
                _ => Some(Collider::from(
                    bevy_rapier3d::rapier::prelude::SharedShape::compound(shapes),
                )),
            };
            let mut e = world.spawn((
                SimBody(role),
                RigidBody::from(rb.body_type()),
                // The body's mass properties as Rapier computed them when the world was built.
                ColliderMassProperties::MassProperties(MassProperties::from_rapier(mass)),
                Velocity {
                    linear: rb.linvel(),
                    angular: rb.angvel(),
                },
                transform,
                GlobalTransform::from(transform),
                RapierRigidBodyHandle(handle),
                RapierContextEntityLink(context),
            ));
            if let (Some(collider), Some(&c)) = (collider, colliders.first()) {
                e.insert((collider, RapierColliderHandle(c)));
            }
            match role {
                BodyRole::Table => {
                    e.insert((Table, Name::new("table")));
                }
                BodyRole::Object(i) => {
                    let name = sim.objects[i].name.clone();
                    e.insert((
                        SceneObject {
                            index: i,
                            name: name.clone(),
                        },
                        Name::new(name),
                    ));
                }
                BodyRole::Link(i) => {
                    let name = sim.robot.links[i].name.clone();
                    e.insert((
                        RobotLink {
                            index: i,
                            name: name.clone(),
                        },
                        Name::new(name),
                    ));
                    link_entities[i] = e.id();
                }
            }
            let entity = e.id();
            // bevy_rapier finds an entity from its body and colliders by their user data.
            let bits = u128::from(entity.to_bits());
            if let Some(rb) = sim.physics.bodies.get_mut(handle) {
                rb.user_data = bits;
            }
            for c in colliders {
                if let Some(co) = sim.physics.colliders.get_mut(c) {
                    co.user_data = bits;
                }
            }
        }
        for joint in sim.actuated_joints() {
            let name = sim.robot.joints[joint.index].name.clone();
            let parent = link_entities[joint.parent_link];
            let marker = RobotJoint {
                index: joint.index,
                name,
            };
            let child = link_entities[joint.child_link];
            match joint.handle {
                JointHandle::Multibody(h) => {
                    let data = sim
                        .physics
                        .multibody_joints
                        .get(h)
                        .and_then(|(mb, id)| mb.link(id))
                        .map(|l| l.joint.data);
                    if let Some(raw) = data {
                        world.entity_mut(child).insert((
                            marker,
                            MultibodyJoint::new(
                                parent,
                                TypedJoint::GenericJoint(GenericJoint { raw }),
                            ),
                            RapierMultibodyJointHandle(h),
                        ));
                    }
                }
                JointHandle::Impulse(h) => {
                    if let Some(ij) = sim.physics.impulse_joints.get(h) {
                        world.entity_mut(child).insert((
                            marker,
                            ImpulseJoint::new(
                                parent,
                                TypedJoint::GenericJoint(GenericJoint { raw: ij.data }),
                            ),
                            RapierImpulseJointHandle(h),
                        ));
                    }
                }
            }
        }
    });
}

/// Runs bevy_rapier's systems once over throwaway copies of the sets, physics off: they see the
/// new entities' components as changed once (and would write them into the bodies, rounded
/// through `GlobalTransform`), so the first real step finds nothing changed and the world stays
/// exactly as built.
///
/// bevy_rapier keeps its entity-to-handle maps private, and an entity missing from them is
/// taken for one moving into the context: the priming drops the scene entities' handles and
/// builds copies of their bodies. Those copies go with the throwaway sets; the entities get
/// their handles back and the context fresh maps.
fn prime(world: &mut World) {
    let context = world.resource::<PhysicsContext>().0;
    type Handles = (
        Entity,
        RapierRigidBodyHandle,
        Option<RapierColliderHandle>,
        Option<RapierMultibodyJointHandle>,
        Option<RapierImpulseJointHandle>,
    );
    let handles: Vec<Handles> = world
        .query_filtered::<(
            Entity,
            &RapierRigidBodyHandle,
            Option<&RapierColliderHandle>,
            Option<&RapierMultibodyJointHandle>,
            Option<&RapierImpulseJointHandle>,
        ), With<SimBody>>()
        .iter(world)
        .map(|(e, b, c, m, i)| (e, *b, c.copied(), m.copied(), i.copied()))
        .collect();
    let mut copy = {
        let p = &world.resource::<Sim>().0.physics;
        PhysicsWorld {
            gravity: p.gravity,
            integration_parameters: p.integration_parameters,
            bodies: p.bodies.clone(),
            colliders: p.colliders.clone(),
            impulse_joints: p.impulse_joints.clone(),
            multibody_joints: p.multibody_joints.clone(),
            islands: p.islands.clone(),
            broad_phase: p.broad_phase.clone(),
            narrow_phase: p.narrow_phase.clone(),
            ..Default::default()
        }
    };
    // The copy stands in for the world's sets while bevy_rapier's systems run on it.
    let swap_copy = |world: &mut World, copy: &mut PhysicsWorld| {
        let mut sim = world.resource_mut::<Sim>();
        std::mem::swap(&mut sim.bypass_change_detection().0.physics, copy);
    };
    swap_copy(world, &mut copy);
    let active = |world: &mut World, on: bool| {
        if let Some(mut config) = world.get_mut::<RapierConfiguration>(context) {
            config.physics_pipeline_active = on;
        }
    };
    active(world, false);
    world.run_schedule(RapierSync);
    world.run_schedule(RapierStep);
    world.run_schedule(RapierWriteback);
    active(world, true);
    swap_copy(world, &mut copy);
    fresh_context(world);
    for (entity, body, collider, multibody, impulse) in handles {
        let mut e = world.entity_mut(entity);
        e.insert(body);
        if let Some(c) = collider {
            e.insert(c);
        }
        if let Some(m) = multibody {
            e.insert(m);
        }
        if let Some(i) = impulse {
            e.insert(i);
        }
    }
}
