//! The physics in the ECS: bevy_rapier3d's `RapierPhysicsPlugin`, its context entity, and one
//! entity per body of the scene (the table, each object, each robot link) carrying
//! bevy_rapier's components (`RigidBody`, `Collider`, `ColliderMassProperties`, `Velocity`,
//! `MultibodyJoint` / `ImpulseJoint`) and armsim's markers (`Table`, `SceneObject`, `RobotLink`,
//! `RobotJoint`).
//!
//! **Who owns what.** bevy_rapier's context entity owns the Rapier sets (bodies, colliders,
//! joints, islands, broad and narrow phase) in its components, always. The [`Sim`] resource
//! holds the rest of the world (`SimModel`: the robot, the handles, the joints' commands).
//! Everything that reads or writes the physics (state snapshots, the protocols, the referee,
//! the panel, joint motors, joint readings, teleports) goes through the context, by
//! [`SimRef`](super::SimRef) / [`SimMut`] (system parameters: the resource plus the context's components, as
//! bevy_rapier's `ReadRapierContext` / `WriteRapierContext` reach them) or [`sim_view`] /
//! [`with_sim_mut`] (exclusive systems). So a user's system can use bevy_rapier's context
//! anywhere, like in any bevy_rapier app.
//!
//! **A joint's data** (its motor, limits, damping) lives in the context's multibody (or
//! impulse) joint set and nowhere else: motors are written there before each step by
//! `push_commands`, positions and velocities are read from there. A link's `MultibodyJoint`
//! component describes the joint as it was built and is never written again (bevy_rapier would
//! rewrite the whole joint from it, motors and all).
//!
//! **bevy_rapier's systems** run in three schedules: [`RapierSync`] (its `SyncBackend`: bodies
//! the user spawned, changed or despawned) once before each batch of steps, [`RapierStep`]
//! (`StepSimulation`: Rapier's `PhysicsPipeline::step` with the arguments `SimWorld::step`
//! passes, so the ECS step and the bare one give the same state bit for bit) every step, and
//! [`RapierWriteback`] (`Transform`, `Velocity`) once after each batch. Its removal of
//! despawned bodies stays where it puts it, in `PostUpdate`.
//!
//! **Reset** builds a new world from the scene and installs it ([`SimMut::install`]): its model
//! into the resource, its sets into the context with fresh maps. [`sync_entities`] notices the
//! new world, despawns the scene's entities and spawns them again in the same order, so a reset
//! world is bit for bit a fresh one. Bodies the user added stay: their bevy_rapier handles are
//! dropped, so bevy_rapier builds them again in the new world at the pose their `Transform`
//! has, at rest.

use bevy::ecs::schedule::{ScheduleConfigs, ScheduleLabel, SingleThreadedExecutor};
use bevy::ecs::system::ScheduleSystem;
use bevy::prelude::*;
use bevy_rapier3d::prelude::*;
use bevy_rapier3d::rapier::prelude::{PhysicsWorld, RigidBodyHandle, SharedShape};

use super::access::{
    PhysicsContext, Sim, SimMut, SimRef, context_components, put_sets, sim_view, take_sets,
    with_sim_mut,
};
use super::clock::{ClockSystems, SimClock};
use armsim_core::sim::{BodyRole, BoundedHull, JointHandle, SIM_DT, SimView};

/// bevy_rapier3d's `StepSimulation` set: one 240 Hz step, run once per step from
/// `SimSystems::Physics`, after the joints' commands are pushed into their motors.
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

/// A set of the [`RapierStep`] schedule that runs right after bevy_rapier's step, once per
/// step: for your systems that must see every step (contact queries through
/// `ReadRapierContext`, forces through `WriteRapierContext`). bevy_rapier's context can be used
/// from any other system too; it always holds the world. Within a batch of steps the entities'
/// `Transform`s are those of the batch's start (they are written back at its end); the bodies'
/// poses in the context are the step's own.
#[derive(SystemSet, Debug, Clone, PartialEq, Eq, Hash)]
pub struct WithContext;

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

/// Which world the scene's entities stand for (`SimModel::instance`), and whether
/// bevy_rapier's systems have seen them yet (`prime`).
#[derive(Resource, Default)]
struct SpawnedFor {
    instance: Option<u64>,
    primed: bool,
}

/// Adds bevy_rapier3d's plugin, its three sets each in its own schedule ([`RapierSync`],
/// [`RapierStep`], [`RapierWriteback`]), its context entity holding `physics`'s sets, and the
/// scene's entities.
pub(super) fn plugin(app: &mut App, physics: PhysicsWorld) {
    app.add_plugins(
        RapierPhysicsPlugin::<NoUserData>::default()
            // Only where its removal system goes (it stays in PostUpdate, where bevy_rapier
            // puts it for any other schedule): the sets are added below, each to the schedule
            // that runs it.
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
    .init_resource::<SpawnedFor>()
    .init_resource::<SyncedChanges>();
    let single = |label: fn() -> Schedule, systems: ScheduleConfigs<ScheduleSystem>| {
        let mut s = label();
        s.set_executor(SingleThreadedExecutor::new());
        s.add_systems(systems);
        s
    };
    let mut sync = single(
        || Schedule::new(RapierSync),
        RapierPhysicsPlugin::<NoUserData>::get_systems(PhysicsSet::SyncBackend),
    );
    sync.configure_sets((
        RapierTransformPropagateSet.in_set(PhysicsSet::SyncBackend),
        RapierBevyComponentApply.in_set(PhysicsSet::SyncBackend),
    ));
    let mut step = single(
        || Schedule::new(RapierStep),
        RapierPhysicsPlugin::<NoUserData>::get_systems(PhysicsSet::StepSimulation),
    );
    step.configure_sets((
        WithContext.after(PhysicsSet::StepSimulation),
        // A world asleep steps for nothing: skip Rapier's step (its cost with nothing awake is
        // most of a resting scene's). After a sync of the user's changes it runs once anyway.
        PhysicsSet::StepSimulation.run_if(rapier_has_work),
    ));
    step.add_systems((
        push_commands.before(PhysicsSet::StepSimulation),
        joints_stepped.after(WithContext),
    ));
    let writeback = single(
        || Schedule::new(RapierWriteback),
        RapierPhysicsPlugin::<NoUserData>::get_systems(PhysicsSet::Writeback),
    );
    app.add_schedule(sync)
        .add_schedule(step)
        .add_schedule(writeback);
    let mut config = RapierConfiguration::new(1.0);
    config.gravity = physics.gravity;
    let context = app
        .world_mut()
        .spawn((
            Name::new("physics context"),
            context_components(physics),
            config,
            DefaultRapierContext,
        ))
        .id();
    app.insert_resource(PhysicsContext(context));
    // The entities exist as soon as the app does; bevy_rapier first sees them at the first
    // frame or step, once every plugin has added its resources.
    spawn_for_current_world(app.world_mut());
    // A reset (a new world) shows at once, stepping or not.
    app.add_systems(Update, sync_entities.before(ClockSystems));
}

/// One physics step through bevy_rapier3d: the joints' commands into their motors, its step,
/// the joints' bookkeeping.
pub(super) fn physics_step(world: &mut World) {
    sync_entities(world);
    world.run_schedule(RapierStep);
    world.resource_mut::<SimClock>().advance();
}

/// Before a batch of steps: what the user spawned, changed or despawned goes into the sets.
pub(super) fn sync_backend(world: &mut World) {
    sync_entities(world);
    world.run_schedule(RapierSync);
    world.resource_mut::<SyncedChanges>().0 = true;
}

/// The user's changes were synced into the sets since Rapier last stepped: the next step runs
/// whether anything is awake or not, so Rapier takes them in (a collider spawned into a sleeping
/// cube wakes it there).
#[derive(Resource, Default)]
struct SyncedChanges(bool);

/// Whether Rapier's step would do anything: some body that can move is awake (see
/// [`armsim_core::sim::Sets::all_asleep`]), or changes were just synced. `SimWorld::step`
/// skips alike, so the two stay bit for bit the same.
fn rapier_has_work(sim: SimRef, synced: Res<SyncedChanges>) -> bool {
    synced.0 || !sim.view().physics.all_asleep()
}

/// After a batch of steps: the bodies' poses and velocities go into their entities.
pub(super) fn writeback(world: &mut World) {
    world.run_schedule(RapierWriteback);
}

/// Before bevy_rapier's step: the joints' commands go into their motors (and effort commands
/// into the links' torques), in the context's joint set.
fn push_commands(mut sim: SimMut) {
    sim.view_mut().prepare_step();
}

/// After bevy_rapier's step: what the robot's joints keep between steps is brought up to date,
/// and a resting arm is let sleep; synced changes have been stepped.
fn joints_stepped(mut sim: SimMut, mut synced: ResMut<SyncedChanges>) {
    sim.view_mut().finish_step();
    synced.0 = false;
}

/// Makes the scene's entities stand for the current world: nothing to do while it is the one
/// they were spawned for; after a reset (a new world), they are spawned again.
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
    let old: Vec<Entity> = world
        .query_filtered::<Entity, With<SimBody>>()
        .iter(world)
        .collect();
    for e in old {
        world.despawn(e);
    }
    spawn_scene_entities(world);
}

fn release_user_bodies(world: &mut World) {
    // The user's bodies are built again in the new world by bevy_rapier at the next sync
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

/// One scene body as its entity needs it.
struct BodySpawn {
    role: BodyRole,
    handle: RigidBodyHandle,
    body: RigidBody,
    transform: Transform,
    mass: MassProperties,
    velocity: Velocity,
    collider: Option<(Collider, RapierColliderHandle)>,
    name: String,
}

/// One actuated joint as its link's entity needs it.
struct JointSpawn {
    marker: RobotJoint,
    parent_link: usize,
    child_link: usize,
    joint: TypedJoint,
    handle: JointHandle,
}

/// What the scene's entities are made of, read from the world.
fn scene_bodies(sim: &SimView<'_>) -> (Vec<BodySpawn>, Vec<JointSpawn>) {
    let sets = sim.physics;
    let bodies = sim
        .bodies()
        .map(|(role, handle)| {
            let rb = &sets.bodies[handle];
            let pose = rb.position();
            let transform =
                Transform::from_translation(pose.translation).with_rotation(pose.rotation);
            let colliders = rb.colliders();
            let shapes: Vec<_> = colliders
                .iter()
                .filter_map(|&c| sets.colliders.get(c))
                .map(|co| {
                    (
                        *co.position_wrt_parent().unwrap_or(co.position()),
                        ecs_shape(co.shared_shape()),
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
            let name = match role {
                BodyRole::Table => "table".to_string(),
                BodyRole::Object(i) => sim.objects[i].name.clone(),
                BodyRole::Link(i) => sim.robot.links[i].name.clone(),
            };
            BodySpawn {
                role,
                handle,
                body: RigidBody::from(rb.body_type()),
                transform,
                // The body's mass properties as Rapier computed them when the world was built.
                mass: MassProperties::from_rapier(rb.mass_properties().local_mprops),
                velocity: Velocity {
                    linear: rb.linvel(),
                    angular: rb.angvel(),
                },
                collider: collider.zip(colliders.first().map(|&c| RapierColliderHandle(c))),
                name,
            }
        })
        .collect();
    let joints = sim
        .actuated_joints()
        .into_iter()
        .filter_map(|joint| {
            let raw = match joint.handle {
                JointHandle::Multibody(h) => sets
                    .multibody_joints
                    .get(h)
                    .and_then(|(mb, id)| mb.link(id))
                    .map(|l| l.joint.data)?,
                JointHandle::Impulse(h) => sets.impulse_joints.get(h)?.data,
            };
            Some(JointSpawn {
                marker: RobotJoint {
                    index: joint.index,
                    name: sim.robot.joints[joint.index].name.clone(),
                },
                parent_link: joint.parent_link,
                child_link: joint.child_link,
                joint: TypedJoint::GenericJoint(GenericJoint { raw }),
                handle: joint.handle,
            })
        })
        .collect();
    (bodies, joints)
}

/// Spawns one entity per body of the world, bound to its Rapier body.
fn spawn_scene_entities(world: &mut World) {
    let context = world.resource::<PhysicsContext>().0;
    let (bodies, joints) = scene_bodies(&sim_view(world));
    let links = world.resource::<Sim>().0.robot.links.len();
    let mut link_entities = vec![Entity::PLACEHOLDER; links];
    let mut spawned = Vec::with_capacity(bodies.len());
    for b in bodies {
        let mut e = world.spawn((
            SimBody(b.role),
            b.body,
            ColliderMassProperties::MassProperties(b.mass),
            b.velocity,
            b.transform,
            GlobalTransform::from(b.transform),
            RapierRigidBodyHandle(b.handle),
            RapierContextEntityLink(context),
            Name::new(b.name.clone()),
        ));
        if let Some(collider) = b.collider {
            e.insert(collider);
        }
        match b.role {
            BodyRole::Table => {
                e.insert(Table);
            }
            BodyRole::Object(index) => {
                e.insert(SceneObject {
                    index,
                    name: b.name,
                });
            }
            BodyRole::Link(index) => {
                e.insert(RobotLink {
                    index,
                    name: b.name,
                });
                link_entities[index] = e.id();
            }
        }
        spawned.push((e.id(), b.handle));
    }
    for j in joints {
        let (parent, child) = (link_entities[j.parent_link], link_entities[j.child_link]);
        let mut e = world.entity_mut(child);
        match j.handle {
            JointHandle::Multibody(h) => {
                e.insert((
                    j.marker,
                    MultibodyJoint::new(parent, j.joint),
                    RapierMultibodyJointHandle(h),
                ));
            }
            JointHandle::Impulse(h) => {
                e.insert((
                    j.marker,
                    ImpulseJoint::new(parent, j.joint),
                    RapierImpulseJointHandle(h),
                ));
            }
        }
    }
    // bevy_rapier finds an entity from its body and colliders by their user data.
    with_sim_mut(world, |sim| {
        let sets = &mut sim.physics;
        for (entity, handle) in spawned {
            let bits = u128::from(entity.to_bits());
            let Some(rb) = sets.bodies.get_mut(handle) else {
                continue;
            };
            rb.user_data = bits;
            for &c in rb.colliders() {
                if let Some(co) = sets.colliders.get_mut(c) {
                    co.user_data = bits;
                }
            }
        }
    });
}

/// Runs bevy_rapier's sync and writeback once over throwaway copies of the sets: they see the
/// new entities' components as changed once (and would write them into the bodies, rounded
/// through `GlobalTransform`), so the first real sync finds nothing changed and the world stays
/// exactly as built.
///
/// bevy_rapier keeps its entity-to-handle maps private, and an entity missing from them is
/// taken for one moving into the context: the priming drops the scene entities' handles and
/// builds copies of their bodies. Those copies go with the throwaway sets; the entities get
/// their handles back and the context its real sets with fresh maps.
fn prime(world: &mut World) {
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
    let real = take_sets(world);
    let copy = PhysicsWorld {
        integration_parameters: real.integration_parameters,
        bodies: real.bodies.clone(),
        colliders: real.colliders.clone(),
        impulse_joints: real.impulse_joints.clone(),
        multibody_joints: real.multibody_joints.clone(),
        islands: real.islands.clone(),
        broad_phase: real.broad_phase.clone(),
        narrow_phase: real.narrow_phase.clone(),
        ..Default::default()
    };
    put_sets(world, copy);
    world.run_schedule(RapierSync);
    world.run_schedule(RapierWriteback);
    // The writeback may round a pose through `GlobalTransform`: one more sync, still on the
    // copies, so that the real sets' first sync does not take it for a teleport.
    world.run_schedule(RapierSync);
    put_sets(world, real);
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

/// The shape a link's `Collider` component shows: the Rapier collider's own, except that a
/// [`BoundedHull`] (armsim's hull with an O(1) bounding box, a custom parry shape) shows its
/// exact convex hull. bevy_rapier's `ColliderView` has no custom shapes (it would panic on one,
/// in `Debug` or `as_typed_shape`), and the hull is the same solid.
fn ecs_shape(shape: &SharedShape) -> SharedShape {
    match shape.as_shape::<BoundedHull>() {
        Some(bounded) => SharedShape::new(bounded.hull().clone()),
        None => shape.clone(),
    }
}
