//! MJCF actuators and equalities: `<position|velocity|motor>` turned into joint motors with gains
//! scaled by effective inertia, and `<equality><joint>` into mimics that share their leader's
//! motor.

use super::*;

impl<'a, 'input> Parser<'a, 'input> {
    pub(super) fn joint_ref(
        &self,
        el: &El,
        attribute: &str,
        referrer: &str,
    ) -> Result<usize, RobotError> {
        let name = el.own(attribute).ok_or_else(|| el.missing(attribute))?;
        self.joints
            .iter()
            .position(|j| j.name == name)
            .ok_or_else(|| RobotError::UnknownJoint {
                joint: name.to_string(),
                referrer: referrer.to_string(),
            })
    }

    pub(super) fn actuators(
        &self,
        node: Node<'a, 'input>,
        actuated: &mut [Option<ActuatorSpec>],
    ) -> Result<(), RobotError> {
        for child in node.children().filter(Node::is_element) {
            let el = self.el(child, "main")?;
            let kind = match el.tag() {
                "position" => ActuatorKind::Position,
                "velocity" => ActuatorKind::Velocity,
                "motor" => ActuatorKind::Motor,
                other => {
                    return Err(el.unsupported(format!(
                        "actuator <{other}> (only position, velocity and motor)"
                    )));
                }
            };
            if el.own("joint").is_none() {
                for t in ["tendon", "site", "body", "jointinparent", "cranksite"] {
                    if el.own(t).is_some() {
                        return Err(
                            el.unsupported(format!("actuator transmission `{t}` (only joint)"))
                        );
                    }
                }
            }
            let referrer = match el.own("name") {
                Some(n) => format!("actuator `{n}`"),
                None => format!("line {}: <{}>", el.line, el.tag()),
            };
            let j = self.joint_ref(&el, "joint", &referrer)?;
            if let Some(prev) = &actuated[j] {
                return Err(el.unsupported(format!(
                    "a second actuator on joint `{}` (already driven by `{}`)",
                    self.joints[j].name, prev.name
                )));
            }
            let forcerange = match el.tristate("forcelimited")? {
                Some(false) => None,
                _ => el.pair("forcerange")?,
            };
            let ctrlrange = match el.tristate("ctrllimited")? {
                Some(false) => None,
                _ => el.pair("ctrlrange")?,
            };
            let gear = el.floats("gear", 1, 6)?.map_or(1.0, |g| g[0]);
            let max_abs = |(lo, hi): (f32, f32)| lo.abs().max(hi.abs());
            let max_effort = forcerange.map(max_abs).or(match kind {
                ActuatorKind::Motor => ctrlrange.map(|r| max_abs(r) * gear.abs()),
                _ => None,
            });
            let max_velocity = match kind {
                ActuatorKind::Velocity => ctrlrange.map(max_abs),
                _ => None,
            };
            actuated[j] = Some(ActuatorSpec {
                name: el
                    .own("name")
                    .map_or_else(|| self.joints[j].name.clone(), str::to_string),
                kind,
                kp: match kind {
                    ActuatorKind::Position => el.f32("kp")?,
                    _ => None,
                },
                kv: match kind {
                    ActuatorKind::Motor => None,
                    _ => el.f32("kv")?,
                },
                max_effort,
                max_velocity,
            });
        }
        Ok(())
    }

    pub(super) fn equalities(
        &self,
        node: Node<'a, 'input>,
        mimics: &mut Vec<Mimic>,
    ) -> Result<(), RobotError> {
        for child in node.children().filter(Node::is_element) {
            let el = self.el(child, "main")?;
            if el.tag() != "joint" {
                return Err(el.unsupported(format!("equality <{}> (only joint)", el.tag())));
            }
            if el.tristate("active")? == Some(false) {
                continue;
            }
            let referrer = match el.own("name") {
                Some(n) => format!("equality `{n}`"),
                None => format!("line {}: <equality><joint>", el.line),
            };
            let joint = self.joint_ref(&el, "joint1", &referrer)?;
            if el.own("joint2").is_none() {
                return Err(el.unsupported(
                    "a joint equality without joint2 (locking a joint to a constant)",
                ));
            }
            let leader = self.joint_ref(&el, "joint2", &referrer)?;
            // Like MuJoCo, a short polycoef keeps the defaults (0 1 0 0 0) for the rest.
            let mut c = [0.0, 1.0, 0.0, 0.0, 0.0];
            if let Some(given) = el.floats("polycoef", 1, 5)? {
                c[..given.len()].copy_from_slice(&given);
            }
            if c.iter().skip(2).any(|&v| v != 0.0) {
                let raw = el.get("polycoef").unwrap_or("");
                return Err(el.invalid(
                    "polycoef",
                    raw,
                    "only linear couplings (c0 + c1·joint2) are supported",
                ));
            }
            mimics.push(Mimic {
                joint,
                leader,
                offset: c[0],
                multiplier: c[1],
            });
        }
        Ok(())
    }
}

pub(super) struct JointExtra {
    /// Added to the effective inertia for gain scaling.
    pub(super) armature: f32,
    /// `actuatorfrcrange` was given.
    pub(super) explicit_effort: bool,
}

#[derive(Clone, Debug)]
pub(super) struct ActuatorSpec {
    pub(super) name: String,
    pub(super) kind: ActuatorKind,
    pub(super) kp: Option<f32>,
    pub(super) kv: Option<f32>,
    pub(super) max_effort: Option<f32>,
    pub(super) max_velocity: Option<f32>,
}

pub(super) fn apply_actuators(
    model: &mut RobotModel,
    actuated: &[Option<ActuatorSpec>],
    extra: &[JointExtra],
) {
    for (j, spec) in actuated.iter().enumerate() {
        let Some(spec) = spec else { continue };
        let inertia = effective_inertia(model, j) + extra[j].armature;
        let scale = |force_gain: f32| (inertia > 1e-9).then(|| force_gain / inertia);
        let joint = &mut model.joints[j];
        if let Some(kp) = spec.kp.and_then(scale) {
            joint.kp = kp;
            joint.kd = 2.0 * kp.sqrt();
        }
        if let Some(kd) = spec.kv.and_then(scale) {
            joint.kd = kd;
        }
        if let Some(e) = spec.max_effort {
            joint.max_effort = e;
        }
        if let Some(v) = spec.max_velocity {
            joint.max_velocity = v;
        }
        joint.actuator = Some(Actuator {
            name: spec.name.clone(),
            kind: spec.kind,
        });
    }
    // A follower without an actuator of its own is driven through its leader's, so it gets the
    // leader's motor: otherwise the two jaws of a gripper close at different speeds and forces
    // and shove the object sideways.
    for m in model.mimics.clone() {
        if m.joint == m.leader || actuated[m.joint].is_some() {
            continue;
        }
        let leader = model.joints[m.leader].clone();
        let follower = &mut model.joints[m.joint];
        follower.kp = leader.kp;
        follower.kd = leader.kd;
        follower.max_velocity = leader.max_velocity * m.multiplier.abs().max(1e-3);
        if !extra[m.joint].explicit_effort {
            follower.max_effort = leader.max_effort;
        }
    }
}

/// Mass (slide) or moment of inertia about the axis (hinge) of everything joint `j` moves, at
/// q = 0. Links without an inertial count their collision geoms at their density (MuJoCo's
/// default when unset).
pub(super) fn effective_inertia(model: &RobotModel, j: usize) -> f32 {
    let joint = &model.joints[j];
    let poses = kinematics::forward_kinematics(model, &[]);
    let axis = poses[joint.link].rotation * joint.axis;
    let anchor = poses[joint.link].transform_point(joint.anchor);
    let mut in_subtree = vec![false; model.links.len()];
    let mut total = 0.0;
    for (i, link) in model.links.iter().enumerate() {
        in_subtree[i] = i == joint.link || link.parent.is_some_and(|p| in_subtree[p]);
        if !in_subtree[i] {
            continue;
        }
        let pose = poses[i];
        // (mass, centre in base frame, principal moments, their axes in base frame)
        let mut parts: Vec<(f32, Vec3, Vec3, Quat)> = Vec::new();
        match &link.inertial {
            Some(inertial) => parts.push((
                inertial.mass,
                pose.transform_point(inertial.com),
                inertial.principal_inertia,
                pose.rotation,
            )),
            None => {
                for g in &link.collisions {
                    let mass = g.density.unwrap_or(MUJOCO_DENSITY) * shape_volume(&g.shape);
                    let frame = pose.mul(&g.pose);
                    parts.push((
                        mass,
                        frame.translation,
                        shape_inertia(&g.shape, mass),
                        frame.rotation,
                    ));
                }
            }
        }
        for (mass, centre, moments, rot) in parts {
            total += match joint.kind {
                JointKind::Prismatic => mass,
                JointKind::Revolute => {
                    let r = centre - anchor;
                    let perp = r - axis * r.dot(axis);
                    let local = rot.inverse() * axis;
                    mass * perp.length_squared() + (moments * local * local).element_sum()
                }
            };
        }
    }
    total
}
