//! When the arm sleeps. Rapier puts an island (bodies joined by contacts and joints) to sleep
//! once every body in it has moved less than its threshold for half a second, and a sleeping
//! island costs nothing until something wakes it. A driven arm must not sleep by Rapier's rule
//! alone: Rapier's threshold is 5 cm/s at a body's far end, and a servo still closing on its
//! target can move that slowly; and Rapier does not see a new motor target as a disturbance.
//!
//! So the arm's links are built unable to sleep, and armsim lets them sleep only while the arm
//! *rests*: its commands have not changed and every joint has moved slower than
//! [`REST_SPEED`] for [`REST_STEPS`] steps. Then Rapier's own rule decides, with whatever the
//! arm touches: a cube held in the hand sleeps with it, a cube still sliding keeps it awake.
//!
//! Anything that could move a resting arm wakes it, and it must rest again before it sleeps:
//! a command that differs from the one it rests under, a teleport of the arm or a placement of
//! any object (the panel, a referee, a protocol) through [`ArmRest::disturb`]; a contact, by
//! Rapier (a body that starts touching a sleeping island wakes it). A reset builds a new world,
//! awake. While it sleeps, the joints' velocities are zero (they are cleared when it falls
//! asleep, so it wakes from rest), and its motors are not rewritten: they hold what they had.

use rapier3d::prelude::{RigidBodyActivation, RigidBodyHandle};

use super::sets::{Sets, SetsMut};

/// The fastest a joint may move (rad/s, or m/s for a prismatic one) while the arm counts as
/// resting: MuJoCo's default `sleep_tolerance` (1e-4) scaled to the joint rates a servo-held arm
/// settles to in f32 (a few 1e-5 rad/s).
pub const REST_SPEED: f32 = 1e-3;
/// How long (steps) the arm must rest before its links may sleep: half a second at 240 Hz,
/// Rapier's own `time_until_sleep`.
pub const REST_STEPS: u32 = 120;

/// The arm's sleep bookkeeping, kept with the world's model.
#[derive(Clone, Debug)]
pub(super) struct ArmRest {
    /// The scene lets the arm sleep (`physics.arm_sleeps`).
    enabled: bool,
    /// Steps the arm has rested so far.
    still_steps: u32,
    /// The links' activation lets Rapier put them to sleep.
    sleepable: bool,
    /// The links were asleep after the last step.
    asleep: bool,
    /// A command changed, the arm was teleported or an object placed since the last step.
    disturbed: bool,
}

impl ArmRest {
    pub(super) fn new(enabled: bool) -> Self {
        Self {
            enabled,
            still_steps: 0,
            sleepable: false,
            asleep: false,
            disturbed: false,
        }
    }

    /// Something that could move the arm happened: it wakes before the next step.
    pub(super) fn disturb(&mut self) {
        self.disturbed = true;
    }

    /// Whether the arm slept after the last step.
    pub(super) fn asleep(&self) -> bool {
        self.asleep
    }

    /// Before a step. Wakes a disturbed arm. Returns whether the arm sleeps on through this
    /// step (its motors need no writing).
    pub(super) fn before_step(
        &mut self,
        physics: &mut SetsMut<'_>,
        links: &[RigidBodyHandle],
    ) -> bool {
        if !self.enabled {
            return false;
        }
        // Rapier may have woken it since (a contact in the last step, a body the user moved).
        self.asleep = links_asleep(physics.as_ref(), links);
        if std::mem::take(&mut self.disturbed) {
            self.still_steps = 0;
            if self.sleepable || self.asleep {
                set_sleepable(physics, links, false);
                self.sleepable = false;
                self.asleep = false;
            }
            return false;
        }
        self.asleep
    }

    /// After a step, with a reader of the joints' largest speed (read only while the arm is
    /// awake). Clears the joints' velocities of an arm that just fell asleep, and lets a rested
    /// arm sleep.
    pub(super) fn after_step(
        &mut self,
        physics: &mut SetsMut<'_>,
        links: &[RigidBodyHandle],
        max_joint_speed: impl FnOnce(Sets<'_>) -> f32,
    ) {
        if !self.enabled {
            return;
        }
        let was_asleep = self.asleep;
        self.asleep = links_asleep(physics.as_ref(), links);
        if self.asleep {
            if !was_asleep {
                clear_joint_velocities(physics, links);
            }
            return;
        }
        if was_asleep && self.sleepable {
            // Woken by Rapier (a contact): it rests again before it sleeps.
            set_sleepable(physics, links, false);
            self.sleepable = false;
            self.still_steps = 0;
            return;
        }
        if max_joint_speed(physics.as_ref()) < REST_SPEED {
            self.still_steps = self.still_steps.saturating_add(1);
        } else {
            self.still_steps = 0;
            if self.sleepable {
                set_sleepable(physics, links, false);
                self.sleepable = false;
            }
        }
        if self.still_steps >= REST_STEPS && !self.sleepable {
            set_sleepable(physics, links, true);
            self.sleepable = true;
        }
    }
}

/// Whether the arm's links sleep (they sleep and wake as one: a multibody is one unit for
/// Rapier's islands, and impulse-joined links share their island).
fn links_asleep(physics: Sets<'_>, links: &[RigidBodyHandle]) -> bool {
    links
        .iter()
        .filter_map(|&h| physics.bodies.get(h))
        .find(|rb| rb.is_dynamic())
        .is_some_and(|rb| rb.is_sleeping())
}

/// Lets the links sleep by Rapier's rule (already still for its `time_until_sleep`: the arm
/// rested that long), or keeps them from sleeping and wakes them.
fn set_sleepable(physics: &mut SetsMut<'_>, links: &[RigidBodyHandle], sleepable: bool) {
    for &h in links {
        let Some(rb) = physics.bodies.get_mut(h) else {
            continue;
        };
        if !rb.is_dynamic() {
            continue;
        }
        let a = rb.activation_mut();
        if sleepable {
            a.normalized_linear_threshold =
                RigidBodyActivation::default_normalized_linear_threshold();
            a.angular_threshold = RigidBodyActivation::default_angular_threshold();
            a.time_since_can_sleep = a.time_until_sleep;
        } else {
            let never = RigidBodyActivation::cannot_sleep();
            a.normalized_linear_threshold = never.normalized_linear_threshold;
            a.angular_threshold = never.angular_threshold;
            rb.wake_up(true);
        }
    }
}

/// Zeroes the multibody's joint velocities (Rapier zeroes the sleeping links' own).
fn clear_joint_velocities(physics: &mut SetsMut<'_>, links: &[RigidBodyHandle]) {
    let Some(link) = links
        .iter()
        .find_map(|&h| physics.multibody_joints.rigid_body_link(h))
        .copied()
    else {
        return;
    };
    if let Some(mb) = physics.multibody_joints.get_multibody_mut(link.multibody) {
        mb.generalized_velocity_mut().fill(0.0);
    }
}
