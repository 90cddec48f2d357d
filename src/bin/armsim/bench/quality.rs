//! `armsim bench quality`: what each physics setting buys and costs, side by side, so a faster
//! setting is never taken without seeing what it does to the motion. For every
//! setting asked for (`solver_iterations` + the arm's `arm_extra_iterations`, the scene's
//! `extensions.armsim.physics` keys), on fresh worlds of the scene (bare `SimWorld`, the physics
//! the ECS steps):
//! - cost: µs per step (median of 3 runs of 2400 steps) and its ratio to the scene's own setting;
//! - tracking: RMS and worst joint error while the arm follows a 1.5 s smoothstep of position
//!   targets from home to a pose above the first cube, and the error 0.5 s after it stops;
//! - rest: the cubes' deepest penetration into the table and how far they drift between 0.25 s
//!   and 2 s with the arm holding still;
//! - grasp: the grasp of tests/grasp.rs (above, descend, close, lift, hold 2 s): whether the cube
//!   stays between the jaws and off the table; then carried: the same after a 36 cm move sideways
//!   in 0.75 s (what a pick-and-place asks of the grip);
//! - free swing: the arm's mechanical energy (kinetic + gravitational) over 1 s of an elbow
//!   pendulum with no joint damping and the table out of reach (see `free_swing`): the largest
//!   change as a share of the largest kinetic energy reached (0 % = energy conserved).

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use armsim::scene::{ArmJoints, Scene};
use armsim::sim::{JointCommand, SIM_DT, SimWorld, gripper_commands};
use glam::Vec3;

use super::{BenchError, median};

/// arm6 geometry, as tests/grasp.rs: shoulder axis height, link lengths, wrist to tool centre.
const SHOULDER_Z: f32 = 0.16;
const UPPER_ARM: f32 = 0.33;
const FOREARM: f32 = 0.28;
const WRIST_TO_TCP: f32 = 0.217;
/// Where the held cube is carried to, from above its start (robot base frame).
const CARRY: Vec3 = Vec3::new(-0.1, 0.35, 0.0);

/// One physics setting: `solver_iterations`, `arm_extra_iterations`, `pgs_iterations` and
/// `arm_joints`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    pub iterations: usize,
    pub extra: usize,
    pub pgs: usize,
    pub joints: ArmJoints,
}

impl Setting {
    /// The scene's own setting.
    pub fn of(scene: &Scene) -> Self {
        let p = &scene.config.extensions.armsim.physics;
        Setting {
            iterations: p.solver_iterations,
            extra: p.arm_extra_iterations,
            pgs: p.pgs_iterations,
            joints: p.arm_joints,
        }
    }

    /// The settings compared when none are asked for: the scene's own, then fewer substeps,
    /// more PGS passes and the other arm representations.
    pub fn defaults(scene: &Scene) -> Vec<Setting> {
        let mut s = vec![Setting::of(scene)];
        let (m, h, i) = (ArmJoints::Multibody, ArmJoints::Hybrid, ArmJoints::Impulse);
        for (iterations, extra, pgs, joints) in [
            (6, 0, 1, m),
            (3, 0, 1, m),
            (2, 0, 1, m),
            (2, 0, 2, m),
            (4, 0, 1, h),
            (3, 0, 2, h),
            (6, 0, 1, i),
        ] {
            let d = Setting {
                iterations,
                extra,
                pgs,
                joints,
            };
            if !s.contains(&d) {
                s.push(d);
            }
        }
        s
    }
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (n, e, p, j) = (self.iterations, self.extra, self.pgs, self.joints.name());
        write!(f, "{n}+{e}x{p}/{j}")
    }
}

/// One setting's figures.
#[derive(Clone, Debug)]
pub struct Quality {
    pub setting: Setting,
    pub step: Duration,
    pub track_rms_mrad: f64,
    pub track_max_mrad: f64,
    pub settled_mrad: f64,
    pub penetration_mm: f64,
    pub drift_mm: f64,
    pub grasp_held: bool,
    pub grasp_offset_mm: f64,
    pub carry_held: bool,
    pub carry_offset_mm: f64,
    pub energy_drift: f64,
}

#[derive(Clone, Debug)]
pub struct QualityReport {
    pub scene_id: String,
    /// The scene's own setting: the reference for the cost ratio.
    pub reference: Setting,
    pub rows: Vec<Quality>,
}

impl fmt::Display for QualityReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let reference = self
            .rows
            .iter()
            .find(|r| r.setting == self.reference)
            .map(|r| r.step.as_secs_f64());
        writeln!(
            f,
            "scene {}: physics quality against cost per solver_iterations+arm_extra_iterations/arm_joints (scene's own: {})",
            self.scene_id, self.reference
        )?;
        writeln!(
            f,
            "  setting            | µs/step | cost vs own | track rms/max mrad | settled mrad | penetration mm | rest drift mm | grasp (offset mm) | carried (offset mm) | energy drift"
        )?;
        for (i, r) in self.rows.iter().enumerate() {
            let ratio = reference.map_or(f64::NAN, |t| r.step.as_secs_f64() / t);
            write!(
                f,
                "  {:<18} | {:>7.1} | {:>10.2}x | {:>8.1} / {:>6.1} | {:>12.2} | {:>14.2} | {:>13.2} | {:>5} ({:>6.1}) | {:>7} ({:>6.1})   | {:>11.1}%",
                r.setting.to_string(),
                r.step.as_secs_f64() * 1e6,
                ratio,
                r.track_rms_mrad,
                r.track_max_mrad,
                r.settled_mrad,
                r.penetration_mm,
                r.drift_mm,
                if r.grasp_held { "holds" } else { "slips" },
                r.grasp_offset_mm,
                if r.carry_held { "holds" } else { "slips" },
                r.carry_offset_mm,
                r.energy_drift * 100.0
            )?;
            if i + 1 < self.rows.len() {
                writeln!(f)?;
            }
        }
        Ok(())
    }
}

/// Joint angles (the six arm joints) that put the tool centre point at `p` (robot base frame),
/// gripper pointing down.
fn top_down(p: Vec3) -> [f32; 6] {
    let pan = p.y.atan2(p.x);
    let r = p.x.hypot(p.y);
    let (wr, wz) = (r, p.z + WRIST_TO_TCP - SHOULDER_Z);
    let c = ((wr * wr + wz * wz - UPPER_ARM * UPPER_ARM - FOREARM * FOREARM)
        / (2.0 * UPPER_ARM * FOREARM))
        .clamp(-1.0, 1.0);
    let elbow = c.acos();
    let lift = wr.atan2(wz) - (FOREARM * elbow.sin()).atan2(UPPER_ARM + FOREARM * elbow.cos());
    [
        pan,
        lift,
        elbow,
        std::f32::consts::PI - lift - elbow,
        0.0,
        -pan,
    ]
}

fn position(target: f32) -> JointCommand {
    JointCommand::Position {
        target,
        velocity: 0.0,
    }
}

/// Moves the arm joints to `goal` along a smoothstep over `secs`; returns the squared errors
/// summed, their count and the worst error (radians).
fn move_to(world: &mut SimWorld, arm: &[usize], goal: [f32; 6], secs: f32) -> (f64, usize, f64) {
    let start: Vec<f32> = arm
        .iter()
        .map(|&j| match world.commands()[j] {
            JointCommand::Position { target, .. } => target,
            _ => world.view().joint_positions()[j],
        })
        .collect();
    let steps = (secs / SIM_DT as f32) as u32;
    let (mut sq, mut n, mut worst) = (0.0, 0, 0.0f64);
    for s in 1..=steps {
        let t = s as f32 / steps as f32;
        let t = t * t * (3.0 - 2.0 * t);
        let mut targets = [0.0; 6];
        for (k, &j) in arm.iter().enumerate() {
            targets[k] = start[k] + (goal[k] - start[k]) * t;
            let _ = world.set_command(j, position(targets[k]));
        }
        world.step();
        let q = world.view().joint_positions();
        for (k, &j) in arm.iter().enumerate() {
            let e = f64::from(q[j] - targets[k]);
            sq += e * e;
            n += 1;
            worst = worst.max(e.abs());
        }
    }
    (sq, n, worst)
}

fn set_gripper(world: &mut SimWorld, leader: usize, closed: f32) {
    let robot = world.robot.clone();
    for (j, cmd) in gripper_commands(&robot, leader, closed) {
        let _ = world.set_command(j, cmd);
    }
}

fn steps(world: &mut SimWorld, n: u32) {
    for _ in 0..n {
        world.step();
    }
}

fn measure(scene: &Scene, setting: Setting) -> Result<Quality, BenchError> {
    let mut scene = scene.clone();
    let physics = &mut scene.config.extensions.armsim.physics;
    physics.solver_iterations = setting.iterations;
    physics.arm_extra_iterations = setting.extra;
    physics.arm_joints = setting.joints;
    physics.pgs_iterations = setting.pgs;
    let arm = scene.arm_joints();
    let leader = scene
        .gripper_joint()
        .ok_or_else(|| BenchError::Client("the quality benchmark needs a gripper".into()))?;
    if arm.len() != 6 || scene.config.objects.is_empty() {
        return Err(BenchError::Client(
            "the quality benchmark needs a six-joint arm (arm6) and a cube".into(),
        ));
    }

    let step = median(
        (0..3)
            .map(|_| {
                let mut w = SimWorld::new(&scene);
                let t0 = Instant::now();
                steps(&mut w, 2400);
                t0.elapsed() / 2400
            })
            .collect(),
    );

    // Tracking, then the grasp, on one world.
    let mut w = SimWorld::new(&scene);
    let base = w.base_pose.translation;
    let top = w.table_top_z;
    let cube = w.objects[0].body;
    let grasp = w.physics.bodies[cube].translation() - base;
    let above = grasp + Vec3::new(0.0, 0.0, 0.15);
    set_gripper(&mut w, leader, 0.0);
    let (sq, n, worst) = move_to(&mut w, &arm, top_down(above), 1.5);
    steps(&mut w, 120);
    let q = w.view().joint_positions();
    let settled = arm
        .iter()
        .zip(top_down(above))
        .map(|(&j, g)| f64::from((q[j] - g).abs()))
        .fold(0.0, f64::max);
    move_to(&mut w, &arm, top_down(grasp), 1.5);
    steps(&mut w, 60);
    set_gripper(&mut w, leader, 1.0);
    steps(&mut w, 180);
    move_to(&mut w, &arm, top_down(above), 1.5);
    steps(&mut w, 480);
    let cube_p = w.physics.bodies[cube].translation();
    let offset = (cube_p - w.view().ee_position()).length();
    let grasp_held = offset < 0.03 && cube_p.z - 0.025 >= top + 0.05;
    // Then carried 36 cm sideways in 0.75 s, as a pick-and-place does, and held 0.5 s there.
    move_to(&mut w, &arm, top_down(above + CARRY), 0.75);
    steps(&mut w, 120);
    let cube_p = w.physics.bodies[cube].translation();
    let carry = (cube_p - w.view().ee_position()).length();
    let carry_held = carry < 0.03 && cube_p.z - 0.025 >= top + 0.05;

    // Rest: the arm holds home, the cubes lie where the scene puts them.
    let mut w = SimWorld::new(&scene);
    let mut penetration = 0.0f32;
    let mut settled_at = Vec::new();
    for s in 1..=480 {
        w.step();
        for o in &w.objects {
            let z = w.physics.bodies[o.body].translation().z;
            penetration = penetration.max(top + o.half_extent - z);
        }
        if s == 60 {
            settled_at = w
                .objects
                .iter()
                .map(|o| w.physics.bodies[o.body].translation())
                .collect();
        }
    }
    let drift = w
        .objects
        .iter()
        .zip(&settled_at)
        .map(|(o, p0)| (w.physics.bodies[o.body].translation() - *p0).length())
        .fold(0.0f32, f32::max);

    Ok(Quality {
        setting,
        step,
        track_rms_mrad: (sq / n.max(1) as f64).sqrt() * 1e3,
        track_max_mrad: worst * 1e3,
        settled_mrad: settled * 1e3,
        penetration_mm: f64::from(penetration.max(0.0)) * 1e3,
        drift_mm: f64::from(drift) * 1e3,
        grasp_held,
        grasp_offset_mm: f64::from(offset) * 1e3,
        carry_held,
        carry_offset_mm: f64::from(carry) * 1e3,
        energy_drift: free_swing(&scene, &arm),
    })
}

/// The largest change of the arm's mechanical energy over 1 s of an elbow pendulum, as a share
/// of the largest kinetic energy reached: the table is moved out of reach, joint damping is
/// zeroed, the elbow has no motor and swings from 0.8 rad with the upper arm held level (its
/// motors hold every other joint, so they do a little work too; 0 % = energy conserved).
fn free_swing(scene: &Scene, arm: &[usize]) -> f64 {
    let mut w = SimWorld::new(scene);
    let mut q = w.view().joint_positions();
    for &j in arm {
        q[j] = 0.0;
    }
    q[arm[1]] = std::f32::consts::FRAC_PI_2;
    q[arm[2]] = 0.8;
    let qd = vec![0.0; q.len()];
    w.view_mut().set_joint_state(&q, &qd);
    for (j, &target) in q.iter().enumerate() {
        let cmd = if j == arm[2] {
            JointCommand::Effort { torque: 0.0 }
        } else {
            position(target)
        };
        let _ = w.set_command(j, cmd);
    }
    let table = w.table;
    if let Some(rb) = w.physics.bodies.get_mut(table) {
        rb.set_translation(Vec3::new(0.0, 0.0, -100.0), true);
    }
    let links: Vec<_> = w.link_bodies[1..].to_vec();
    w.view_mut().set_passive_damping(false);
    let energy = |w: &SimWorld| -> (f64, f64) {
        let (mut kinetic, mut potential) = (0.0, 0.0);
        for &h in &links {
            let rb = &w.physics.bodies[h];
            kinetic += f64::from(rb.kinetic_energy());
            potential +=
                f64::from(rb.gravitational_potential_energy(SIM_DT as f32, w.physics.gravity));
        }
        (kinetic, kinetic + potential)
    };
    // Mass properties reach the bodies in the first step: the energy is measured from there.
    w.step();
    let (_, e0) = energy(&w);
    let (mut worst, mut kinetic_max) = (0.0f64, 0.0f64);
    for _ in 0..240 {
        w.step();
        let (k, e) = energy(&w);
        kinetic_max = kinetic_max.max(k);
        worst = worst.max((e - e0).abs());
    }
    if kinetic_max > 0.0 {
        worst / kinetic_max
    } else {
        0.0
    }
}

/// Measures every setting on `scene`.
pub fn run(scene: Arc<Scene>, settings: &[Setting]) -> Result<QualityReport, BenchError> {
    if settings.is_empty() || settings.iter().any(|s| s.iterations == 0) {
        return Err(BenchError::Client(
            "--iterations needs one or more settings with positive solver_iterations".into(),
        ));
    }
    let rows = settings
        .iter()
        .map(|&setting| measure(&scene, setting))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(QualityReport {
        scene_id: scene.config.scene_id.clone(),
        reference: Setting::of(&scene),
        rows,
    })
}

/// Parses `--iterations` items: `N[+E][xP][/multibody|/hybrid|/impulse]`; what an item leaves
/// out is the scene's own (`arm_extra_iterations`, `pgs_iterations`, `arm_joints`).
pub fn parse_settings(items: &[String], scene: &Scene) -> Result<Vec<Setting>, String> {
    let own = Setting::of(scene);
    items
        .iter()
        .map(|item| {
            let bad = || {
                format!(
                    "--iterations: {item:?} is not N[+E][xP][/multibody|/hybrid|/impulse] (solver_iterations 1..=1000, arm_extra_iterations 0..=1000, pgs_iterations 1..=100)"
                )
            };
            let (counts, joints) = item.split_once('/').unwrap_or((item, ""));
            let joints = match joints.trim() {
                "" => own.joints,
                j => ArmJoints::parse(j).ok_or_else(bad)?,
            };
            let (counts, pgs) = counts.split_once('x').unwrap_or((counts, ""));
            let pgs = match pgs.trim() {
                "" => own.pgs,
                p => p.parse::<usize>().ok().filter(|p| (1..=100).contains(p)).ok_or_else(bad)?,
            };
            let (n, e) = counts.split_once('+').unwrap_or((counts, ""));
            let n = n.trim().parse::<usize>().ok().filter(|&n| n >= 1);
            let e = if e.is_empty() {
                Some(own.extra)
            } else {
                e.trim().parse::<usize>().ok()
            };
            match (n, e) {
                (Some(n), Some(e)) if n <= 1000 && e <= 1000 => Ok(Setting {
                    iterations: n,
                    extra: e,
                    pgs,
                    joints,
                }),
                _ => Err(bad()),
            }
        })
        .collect()
}
