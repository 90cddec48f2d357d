//! Reading and writing the world: the `Sim` resource's model together with the Rapier sets
//! that bevy_rapier3d's context entity owns (see [`super::physics`]). Systems take [`SimRef`] /
//! [`SimMut`]; exclusive code calls [`sim_view`] / [`with_sim_mut`]; a reset or a replay
//! installs a new world with [`SimMut::install`] / [`install`].

use bevy::ecs::system::SystemParam;
use bevy::prelude::*;
use bevy_rapier3d::prelude::*;
use bevy_rapier3d::rapier::prelude::PhysicsWorld;

use armsim_core::sim::{
    ObjectContacts, Sets, SetsMut, SimModel, SimView, SimViewMut, SimWorld, object_contacts,
};

/// The running world but its Rapier sets, which bevy_rapier3d's context owns: the robot, the
/// handles of its links, objects and table, the joints' commands. Read and write the whole
/// world through [`SimRef`] / [`SimMut`] (or [`sim_view`] / [`with_sim_mut`]).
#[derive(Resource)]
pub struct Sim(pub SimModel);

/// The entity holding bevy_rapier's context (the `DefaultRapierContext`), which the physics
/// (`super::physics`) spawns.
#[derive(Resource, Clone, Copy, Debug)]
pub struct PhysicsContext(pub Entity);

/// The context's components that hold the world's sets, to read.
type ContextSets = (
    &'static RapierRigidBodySet,
    &'static RapierContextColliders,
    &'static RapierContextJoints,
);

/// The context's components that hold the world's sets, to write.
type ContextSetsMut = (
    &'static mut RapierContextSimulation,
    &'static mut RapierRigidBodySet,
    &'static mut RapierContextColliders,
    &'static mut RapierContextJoints,
);

const NO_CONTEXT: &str =
    "armsim's physics context entity (`PhysicsContext`) is missing: it must not be despawned";

fn sets<'a>(
    b: &'a RapierRigidBodySet,
    c: &'a RapierContextColliders,
    j: &'a RapierContextJoints,
) -> Sets<'a> {
    Sets {
        bodies: &b.bodies,
        colliders: &c.colliders,
        impulse_joints: &j.impulse_joints,
        multibody_joints: &j.multibody_joints,
    }
}

fn sets_mut<'a>(
    b: &'a mut RapierRigidBodySet,
    c: &'a mut RapierContextColliders,
    j: &'a mut RapierContextJoints,
) -> SetsMut<'a> {
    SetsMut {
        bodies: &mut b.bodies,
        colliders: &mut c.colliders,
        impulse_joints: &mut j.impulse_joints,
        multibody_joints: &mut j.multibody_joints,
    }
}

/// The world to read, from a system: the `Sim` resource's model and the sets in bevy_rapier's
/// context.
#[derive(SystemParam)]
pub struct SimRef<'w, 's> {
    sim: Res<'w, Sim>,
    context: Query<'w, 's, ContextSets, With<DefaultRapierContext>>,
}

impl SimRef<'_, '_> {
    pub fn view(&self) -> SimView<'_> {
        let (b, c, j) = self.context.single().expect(NO_CONTEXT);
        SimView {
            model: &self.sim.0,
            physics: sets(b, c, j),
        }
    }

    /// The world without its sets (the robot, the objects' names, the commands).
    pub fn model(&self) -> &SimModel {
        &self.sim.0
    }
}

/// The world to write, from a system (joint motors, teleports, a reset).
#[derive(SystemParam)]
pub struct SimMut<'w, 's> {
    sim: ResMut<'w, Sim>,
    context: Query<'w, 's, ContextSetsMut, With<DefaultRapierContext>>,
}

impl SimMut<'_, '_> {
    pub fn view(&self) -> SimView<'_> {
        let (_, b, c, j) = self.context.single().expect(NO_CONTEXT);
        SimView {
            model: &self.sim.0,
            physics: sets(b, c, j),
        }
    }

    pub fn view_mut(&mut self) -> SimViewMut<'_> {
        let (_, b, c, j) = self.context.single_mut().expect(NO_CONTEXT);
        SimViewMut {
            model: &mut self.sim.0,
            physics: sets_mut(b.into_inner(), c.into_inner(), j.into_inner()),
        }
    }

    /// The world without its sets.
    pub fn model(&self) -> &SimModel {
        &self.sim.0
    }

    /// Makes `world` the simulated one (a reset): its model goes into the `Sim` resource, its
    /// sets into bevy_rapier's context with fresh maps (a new world's handles mean other
    /// bodies). The scene's entities are spawned again for it by [`sync_entities`](super::sync_entities).
    pub fn install(&mut self, world: SimWorld) {
        let SimWorld { physics, model } = world;
        self.sim.0 = model;
        let (mut s, mut b, mut c, mut j) = self.context.single_mut().expect(NO_CONTEXT);
        let (s2, b2, c2, j2) = context_components(physics);
        (*s, *b, *c, *j) = (s2, b2, c2, j2);
    }
}

/// The world to read, from an exclusive system or a `&World`.
pub fn sim_view(world: &World) -> SimView<'_> {
    let context = world.resource::<PhysicsContext>().0;
    let (b, c, j) = world
        .entity(context)
        .get_components::<ContextSets>()
        .expect(NO_CONTEXT);
    SimView {
        model: &world.resource::<Sim>().0,
        physics: sets(b, c, j),
    }
}

/// The contact forces on object `index` (scene order) at the end of the last step, from the
/// solver's impulses in bevy_rapier's simulation context; `None` for an index the world lacks.
pub fn contacts_of_object(world: &World, index: usize) -> Option<ObjectContacts> {
    let context = world.resource::<PhysicsContext>().0;
    let simulation = world
        .entity(context)
        .get::<RapierContextSimulation>()
        .expect(NO_CONTEXT);
    object_contacts(
        &sim_view(world),
        &simulation.narrow_phase,
        &simulation.integration_parameters,
        index,
    )
}

/// Runs `f` on the world to write, from an exclusive system or a `&mut World`.
pub fn with_sim_mut<R>(world: &mut World, f: impl FnOnce(&mut SimViewMut<'_>) -> R) -> R {
    let context = world.resource::<PhysicsContext>().0;
    world.resource_scope(|world, mut sim: Mut<Sim>| {
        let (b, c, j) = world
            .entity_mut(context)
            .into_components_mut::<(
                &mut RapierRigidBodySet,
                &mut RapierContextColliders,
                &mut RapierContextJoints,
            )>()
            .expect(NO_CONTEXT);
        let mut view = SimViewMut {
            model: &mut sim.0,
            physics: sets_mut(b.into_inner(), c.into_inner(), j.into_inner()),
        };
        f(&mut view)
    })
}

/// [`SimMut::install`] from an exclusive system: `world` becomes the simulated one.
pub fn install(ecs: &mut World, world: SimWorld) {
    let SimWorld { physics, model } = world;
    ecs.resource_mut::<Sim>().0 = model;
    put_sets(ecs, physics);
}

/// bevy_rapier's context components holding `physics`'s sets, with fresh maps, and its
/// integration parameters (solver iterations, PGS passes, dt). The pipeline (its buffers) and
/// the CCD solver (its cache) are the context's own.
pub(super) fn context_components(
    physics: PhysicsWorld,
) -> (
    RapierContextSimulation,
    RapierRigidBodySet,
    RapierContextColliders,
    RapierContextJoints,
) {
    let mut s = RapierContextSimulation::default();
    s.integration_parameters = physics.integration_parameters;
    s.islands = physics.islands;
    s.broad_phase = physics.broad_phase;
    s.narrow_phase = physics.narrow_phase;
    let mut b = RapierRigidBodySet::default();
    b.bodies = physics.bodies;
    let mut c = RapierContextColliders::default();
    c.colliders = physics.colliders;
    let mut j = RapierContextJoints::default();
    j.impulse_joints = physics.impulse_joints;
    j.multibody_joints = physics.multibody_joints;
    (s, b, c, j)
}

/// The context's sets, moved out (the context is left with empty ones), in a `PhysicsWorld`.
pub(super) fn take_sets(world: &mut World) -> PhysicsWorld {
    use std::mem::take;
    let context = world.resource::<PhysicsContext>().0;
    let (mut s, mut b, mut c, mut j) = world
        .entity_mut(context)
        .into_components_mut::<ContextSetsMut>()
        .expect(NO_CONTEXT);
    PhysicsWorld {
        integration_parameters: s.integration_parameters,
        islands: take(&mut s.islands),
        broad_phase: take(&mut s.broad_phase),
        narrow_phase: take(&mut s.narrow_phase),
        bodies: take(&mut b.bodies),
        colliders: take(&mut c.colliders),
        impulse_joints: take(&mut j.impulse_joints),
        multibody_joints: take(&mut j.multibody_joints),
        ..Default::default()
    }
}

/// Puts `physics`'s sets into the context, with fresh maps.
pub(super) fn put_sets(world: &mut World, physics: PhysicsWorld) {
    let context = world.resource::<PhysicsContext>().0;
    world
        .entity_mut(context)
        .insert(context_components(physics));
}
