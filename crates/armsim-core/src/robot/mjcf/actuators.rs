//! MJCF actuators and equalities, as MuJoCo defines them:
//! - a position actuator on a joint becomes a [`Servo`] in force units (a spring-damper clamped
//!   to its force range);
//! - a position actuator on a fixed tendon (the Panda's fingers) becomes a [`TendonServo`]: the
//!   same servo on the tendon's length, its force shared out by the tendon's coefficients;
//! - velocity and motor actuators become joint motors with gains scaled by effective inertia;
//! - `<equality><joint>` becomes a mimic (its `polycoef`, up to the fourth power) held by a
//!   [`Coupling`], MuJoCo's soft constraint from its `solref`, not by a motor of the follower's.

use roxmltree::Node;

use super::parser::{El, JointExtra, Parser};
use crate::rate::SIM_DT;
use crate::robot::error::RobotError;
use crate::robot::inertia::effective_inertia;
use crate::robot::model::{
    Actuator, ActuatorKind, Coupling, Mimic, RobotModel, Servo, TendonServo,
};

/// MuJoCo's default `solref` of a constraint: time constant 0.02 s, damping ratio 1.
const DEFAULT_SOLREF: [f32; 2] = [0.02, 1.0];
/// MuJoCo's default `solimp` impedance at zero violation (`dmin`).
const DEFAULT_DMIN: f32 = 0.9;
/// The largest `h²·k/I` and `h·b/I` of a joint equality's coupling (`apply_couplings`).
const MAX_COUPLING_STIFFNESS: f32 = 0.5;
const MAX_COUPLING_DAMPING: f32 = 1.0;

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

    /// `<tendon><fixed>`: which joints a tendon sums, with their coefficients.
    pub(super) fn tendons(&mut self, node: Node<'a, 'input>) -> Result<(), RobotError> {
        for t in node.children().filter(Node::is_element) {
            let el = self.el(t, "main")?;
            if el.tag() != "fixed" {
                self.ignored.insert(format!("<tendon><{}>", el.tag()));
                continue;
            }
            let name = el
                .own("name")
                .ok_or_else(|| el.missing("name"))?
                .to_string();
            let mut joints = Vec::new();
            for j in t.children().filter(|n| n.has_tag_name("joint")) {
                let jel = self.el(j, "main")?;
                let index = self.joint_ref(&jel, "joint", &format!("tendon `{name}`"))?;
                joints.push((index, jel.f32("coef")?.unwrap_or(1.0)));
            }
            self.tendons.insert(name, joints);
        }
        Ok(())
    }

    pub(super) fn actuators(
        &mut self,
        node: Node<'a, 'input>,
        actuated: &mut [Option<ActuatorSpec>],
        mimics: &mut Vec<Mimic>,
    ) -> Result<(), RobotError> {
        for child in node.children().filter(Node::is_element) {
            let el = self.el(child, "main")?;
            // `<general>` is what the shortcuts expand to: an affine bias with a position term
            // is a position servo (kp = -biasprm[1], kv = -biasprm[2]), one with only a velocity
            // term a velocity servo, no bias a motor.
            let (kind, general_gains) = match el.tag() {
                "position" => (ActuatorKind::Position, None),
                "velocity" => (ActuatorKind::Velocity, None),
                "motor" => (ActuatorKind::Motor, None),
                "general" => {
                    let bias = el.floats("biasprm", 1, 10)?.unwrap_or_default();
                    let b = |i: usize| bias.get(i).copied().unwrap_or(0.0);
                    match el.get("biastype").unwrap_or("none") {
                        "affine" if b(1) < 0.0 => {
                            (ActuatorKind::Position, Some((Some(-b(1)), Some(-b(2)))))
                        }
                        "affine" if b(2) < 0.0 => {
                            (ActuatorKind::Velocity, Some((None, Some(-b(2)))))
                        }
                        "none" | "affine" => (ActuatorKind::Motor, Some((None, None))),
                        other => {
                            return Err(el.unsupported(format!(
                                "actuator biastype `{other}` (only none and affine)"
                            )));
                        }
                    }
                }
                other => {
                    return Err(el.unsupported(format!(
                        "actuator <{other}> (only general, position, velocity and motor)"
                    )));
                }
            };
            let referrer = match el.own("name") {
                Some(n) => format!("actuator `{n}`"),
                None => format!("line {}: <{}>", el.line, el.tag()),
            };
            // The joint it drives, and how far that joint moves per unit of what the actuator
            // pulls (a tendon's length).
            let tendon = el.own("joint").is_none();
            let gear = el.floats("gear", 1, 6)?.map_or(1.0, |g| g[0]);
            let (j, ratio) = match (el.own("joint"), el.own("tendon")) {
                (Some(_), _) => (self.joint_ref(&el, "joint", &referrer)?, 1.0),
                (None, Some(tendon)) => {
                    let (j, ratio) = self.tendon_leader(tendon, &referrer, mimics)?;
                    (j, ratio * gear)
                }
                (None, None) => {
                    let t = ["site", "body", "jointinparent", "cranksite"]
                        .into_iter()
                        .find(|t| el.own(t).is_some())
                        .unwrap_or("none");
                    return Err(el.unsupported(format!(
                        "actuator transmission `{t}` (only joint and fixed tendon)"
                    )));
                }
            };
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
            let max_abs = |(lo, hi): (f32, f32)| lo.abs().max(hi.abs());
            let max_effort = forcerange.map(|r| max_abs(r) * ratio.abs()).or(match kind {
                ActuatorKind::Motor => ctrlrange.map(|r| max_abs(r) * gear.abs()),
                _ => None,
            });
            let max_velocity = match kind {
                ActuatorKind::Velocity if general_gains.is_none() => ctrlrange.map(max_abs),
                _ => None,
            };
            // A gain on a tendon's length is ratio² on the joint.
            let (kp, kv) = match general_gains {
                Some(g) => g,
                None => (
                    match kind {
                        ActuatorKind::Position => el.f32("kp")?,
                        _ => None,
                    },
                    match kind {
                        ActuatorKind::Motor => None,
                        _ => el.f32("kv")?,
                    },
                ),
            };
            // A position servo on a tendon is simulated on the tendon's length, with the file's
            // gains and force range (`TendonServo`).
            if let (Some(tendon), ActuatorKind::Position, Some(kp)) =
                (el.own("tendon"), kind, kp.filter(|&k| k > 0.0))
            {
                // What one unit of ctrl asks of the length: gainprm[0] of a `general`, kp of a
                // `position` (whose ctrl is the length itself).
                let gain = match general_gains {
                    Some(_) => el
                        .floats("gainprm", 1, 10)?
                        .and_then(|g| g.first().copied())
                        .unwrap_or(1.0),
                    None => kp,
                };
                let joints = self.tendons[tendon]
                    .iter()
                    .map(|&(j, coef)| (j, coef * gear))
                    .collect();
                let length_range = ctrlrange.map(|(lo, hi)| {
                    let (a, b) = (lo * gain / kp, hi * gain / kp);
                    (a.min(b), a.max(b))
                });
                if forcerange.is_some_and(|(lo, hi)| (lo + hi).abs() > 1e-6 * (hi - lo).abs()) {
                    self.notes.push(format!(
                        "{referrer}: its force range is not symmetric; armsim clamps the \
                         tendon's force to ± its larger bound"
                    ));
                }
                self.tendon_servos.push(TendonServo {
                    name: el
                        .own("name")
                        .map_or_else(|| tendon.to_string(), str::to_string),
                    leader: j,
                    joints,
                    servo: Servo {
                        kp,
                        kv: kv.unwrap_or(0.0).max(0.0),
                        max_force: forcerange.map_or(f32::INFINITY, max_abs),
                    },
                    length_range,
                });
            }
            let squared = ratio * ratio;
            actuated[j] = Some(ActuatorSpec {
                name: el
                    .own("name")
                    .map_or_else(|| self.joints[j].name.clone(), str::to_string),
                kind,
                kp: kp.map(|k| k * squared),
                kv: kv.map(|k| k * squared),
                max_effort,
                max_velocity,
                tendon,
            });
        }
        Ok(())
    }

    /// The joint a tendon actuator drives: the tendon's joint that the others follow (by
    /// `<equality joint>`), with d(length)/d(joint). Tendon joints that follow nothing are made
    /// to follow it one to one, and a note says so.
    fn tendon_leader(
        &mut self,
        tendon: &str,
        referrer: &str,
        mimics: &mut Vec<Mimic>,
    ) -> Result<(usize, f32), RobotError> {
        let joints =
            self.tendons
                .get(tendon)
                .cloned()
                .ok_or_else(|| RobotError::UnknownReference {
                    kind: "tendon",
                    name: tendon.to_string(),
                    referrer: referrer.to_string(),
                })?;
        let follows = |j: usize, mimics: &[Mimic]| mimics.iter().find(|m| m.joint == j).cloned();
        let Some(&(leader, _)) = joints.iter().find(|(j, _)| follows(*j, mimics).is_none()) else {
            return Err(RobotError::Unsupported {
                what: format!("{referrer}: every joint of tendon `{tendon}` follows another"),
                line: None,
            });
        };
        let mut ratio = 0.0;
        for &(j, coef) in &joints {
            let m = match follows(j, mimics) {
                Some(m) if m.leader == leader => m.slope(0.0),
                Some(_) => {
                    return Err(RobotError::Unsupported {
                        what: format!(
                            "{referrer}: joint `{}` of tendon `{tendon}` follows a joint outside it",
                            self.joints[j].name
                        ),
                        line: None,
                    });
                }
                None if j == leader => 1.0,
                None => {
                    self.notes.push(format!(
                        "tendon `{tendon}`: joint `{}` has no <equality> with `{}`; it follows it \
                         one to one",
                        self.joints[j].name, self.joints[leader].name
                    ));
                    // Kinematics only (where the joint is when the gripper is at a target): the
                    // tendon's force moves each joint on its own, as in MuJoCo.
                    mimics.push(Mimic::linear(j, leader, 1.0, 0.0));
                    1.0
                }
            };
            ratio += coef * m;
        }
        if ratio.abs() < 1e-6 {
            return Err(RobotError::Unsupported {
                what: format!("{referrer}: tendon `{tendon}` does not move with its joints"),
                line: None,
            });
        }
        Ok((leader, ratio))
    }

    pub(super) fn equalities(
        &mut self,
        node: Node<'a, 'input>,
        mimics: &mut Vec<Mimic>,
    ) -> Result<(), RobotError> {
        for child in node.children().filter(Node::is_element) {
            let el = self.el(child, "main")?;
            if el.tag() == "connect" || el.tag() == "weld" {
                // A kinematic loop (the xArm7's gripper linkage): the tree simulates without it.
                self.notes.push(format!(
                    "WARNING: equality <{}> `{}` (line {}) closes a kinematic loop, which armsim \
                     does not simulate: the linkage moves as an open tree",
                    el.tag(),
                    el.own("name").unwrap_or("unnamed"),
                    el.line
                ));
                continue;
            }
            if el.tag() != "joint" {
                return Err(el.unsupported(format!(
                    "equality <{}> (only joint, connect and weld)",
                    el.tag()
                )));
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
            // Like MuJoCo, a short polycoef keeps the defaults (0 1 0 0 0) for the rest:
            // joint1 = c0 + c1·joint2 + c2·joint2² + c3·joint2³ + c4·joint2⁴.
            let mut c = [0.0, 1.0, 0.0, 0.0, 0.0];
            if let Some(given) = el.own_floats("polycoef", 1, 5)? {
                c[..given.len()].copy_from_slice(&given);
            }
            // solref: (time constant, damping ratio), or (−stiffness, −damping) when negative.
            let mut solref = DEFAULT_SOLREF;
            if let Some(given) = el.own_floats("solref", 2, 2)? {
                solref.copy_from_slice(&given);
            }
            if !(solref[0] != 0.0 && solref[1] != 0.0 && (solref[0] > 0.0) == (solref[1] > 0.0)) {
                let raw = el.own("solref").unwrap_or("");
                return Err(el.invalid(
                    "solref",
                    raw,
                    "expected two positive values (time constant, damping ratio) or two \
                     negative ones (−stiffness, −damping)",
                ));
            }
            // solimp's dmin: the impedance while the violation is small, as an equality's is.
            let dmin = match el.own_floats("solimp", 1, 5)? {
                Some(v) => v[0],
                None => DEFAULT_DMIN,
            };
            if !(dmin > 0.0 && dmin < 1.0) {
                return Err(el.invalid(
                    "solimp",
                    el.own("solimp").unwrap_or(""),
                    "its first value (dmin) must lie between 0 and 1",
                ));
            }
            mimics.push(Mimic {
                joint,
                leader,
                offset: c[0],
                multiplier: c[1],
                higher: [c[2], c[3], c[4]],
                // Set by `apply_couplings` once the inertia is known.
                coupling: None,
            });
            self.couplings.push((joint, [solref[0], solref[1], dmin]));
        }
        Ok(())
    }
}

#[derive(Clone, Debug)]
pub(super) struct ActuatorSpec {
    pub(super) name: String,
    pub(super) kind: ActuatorKind,
    pub(super) kp: Option<f32>,
    pub(super) kv: Option<f32>,
    pub(super) max_effort: Option<f32>,
    pub(super) max_velocity: Option<f32>,
    /// It pulls a tendon (split over several joints), not one joint.
    pub(super) tendon: bool,
}

pub(super) fn apply_actuators(
    model: &mut RobotModel,
    actuated: &[Option<ActuatorSpec>],
    extra: &[JointExtra],
) {
    for (j, spec) in actuated.iter().enumerate() {
        let Some(spec) = spec else { continue };
        let inertia = effective_inertia(model, j) + model.joints[j].armature;
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
        // A position servo on one joint is simulated in the file's own units (see
        // `sim::actuator`): kp, kv and the force range as MuJoCo applies them. A tendon's servo
        // (the Panda's fingers) keeps the acceleration gains: its force is shared between
        // joints that armsim drives one motor each.
        if let (ActuatorKind::Position, Some(kp), false) = (spec.kind, spec.kp, spec.tendon)
            && kp > 0.0
        {
            joint.servo = Some(Servo {
                kp,
                kv: spec.kv.unwrap_or(0.0).max(0.0),
                max_force: match spec.max_effort {
                    Some(e) => e,
                    None if extra[j].explicit_effort => joint.max_effort,
                    None => f32::INFINITY,
                },
            });
        }
        joint.actuator = Some(Actuator {
            name: spec.name.clone(),
            kind: spec.kind,
        });
    }
    // A follower without an actuator of its own is driven through its leader's, so it gets the
    // leader's motor: otherwise the two jaws of a gripper close at different speeds and forces
    // and shove the object sideways. (A tendon's joints are moved by the tendon's force, and a
    // follower held by a joint equality by its constraint; this is what their velocity commands
    // use.)
    for m in model.mimics.clone() {
        if m.joint == m.leader || actuated[m.joint].is_some() {
            continue;
        }
        let leader = model.joints[m.leader].clone();
        let follower = &mut model.joints[m.joint];
        follower.kp = leader.kp;
        follower.kd = leader.kd;
        follower.servo = leader.servo;
        follower.max_velocity = leader.max_velocity * m.multiplier.abs().max(1e-3);
        if !extra[m.joint].explicit_effort {
            follower.max_effort = leader.max_effort;
        }
    }
}

/// Each joint equality's [`Coupling`]: MuJoCo's soft constraint on the residual `r = q₁ −
/// poly(q₂)`. MuJoCo solves for the constraint force that gives the residual the acceleration
/// `(1 − d)·a₀ − d·(b·ṙ + k·r)`, with `a₀` its acceleration without the constraint, `d` the
/// impedance (`solimp`'s dmin at small violations), `b = 2/τ` and `k = 1/(τζ)²` (`solref` = τ,
/// ζ; τ no shorter than two steps, MuJoCo's `refsafe`), or `k`, `b` themselves when `solref` is
/// negative. That is a spring-damper of `d/(1 − d)·m·(k, b)` on the pair's effective inertia
/// `m = 1/(1/I₁ + slope²/I₂)` (joint inertia plus armature, at the home pose): the same
/// deflection under a steady load, and the same relaxation time.
pub(super) fn apply_couplings(model: &mut RobotModel, couplings: &[(usize, [f32; 3])]) {
    for &(joint, [a, b, d]) in couplings {
        let Some(k) = model.mimics.iter().position(|m| m.joint == joint) else {
            continue;
        };
        let m = &model.mimics[k];
        let inertia = |j: usize| (effective_inertia(model, j) + model.joints[j].armature).max(1e-6);
        let slope = m.slope(0.0);
        let mass = 1.0 / (1.0 / inertia(m.joint) + slope * slope / inertia(m.leader));
        let (stiffness, damping) = if a > 0.0 {
            let tau = a.max(2.0 * SIM_DT as f32);
            (1.0 / (tau * b).powi(2), 2.0 / tau)
        } else {
            (-a, -b)
        };
        let gain = d / (1.0 - d) * mass;
        // The sim takes each joint's own share of the spring implicitly and the other joint's
        // from the start of the step: stable while h²·k and h·b over the lighter joint's
        // inertia stay small, so the coupling is capped there (a note says by how much).
        let lighter = inertia(m.joint).min(inertia(m.leader));
        let h = SIM_DT as f32;
        let (stiff, damp) = (gain * stiffness, gain * damping);
        let coupling = Coupling {
            stiffness: stiff.min(MAX_COUPLING_STIFFNESS * lighter / (h * h)),
            damping: damp.min(MAX_COUPLING_DAMPING * lighter / h),
        };
        if coupling.stiffness < stiff || coupling.damping < damp {
            model.notes.push(format!(
                "joint equality on `{}`: its constraint is simulated {:.1}× softer and {:.1}× \
                 less damped than MuJoCo's (stable at the 240 Hz step); under a steady load \
                 of 1 N its joints part by {:.2} mm",
                model.joints[joint].name,
                stiff / coupling.stiffness,
                damp / coupling.damping,
                1e3 / coupling.stiffness,
            ));
        }
        model.mimics[k].coupling = Some(coupling);
    }
}
