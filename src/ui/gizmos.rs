//! Markers in the 3D view, drawn with gizmos each frame: the teleop workspace box, the goal
//! zone, the teleop target and the clamped setpoint the arm follows, and (on request) each
//! joint's axis. Toggles live in the panel (`ViewOptions`).

use bevy::prelude::*;

use crate::protocol::teleop::plugin::TeleopServer;
use crate::robot::JointKind;
use crate::sim::{SimRef, SimScene};

/// What the 3D view draws besides the scene.
#[derive(Resource, Clone, Debug)]
pub struct ViewOptions {
    pub workspace: bool,
    pub goal_zone: bool,
    pub teleop_target: bool,
    pub joint_axes: bool,
}

impl Default for ViewOptions {
    fn default() -> Self {
        Self {
            workspace: true,
            goal_zone: true,
            teleop_target: true,
            joint_axes: false,
        }
    }
}

pub(super) fn plugin(app: &mut App) {
    app.init_resource::<ViewOptions>()
        .add_systems(Update, draw_markers);
}

fn draw_markers(
    mut gizmos: Gizmos,
    options: Res<ViewOptions>,
    scene: Res<SimScene>,
    sim: SimRef,
    teleop: Option<Res<TeleopServer>>,
) {
    let cfg = &scene.0.config;
    let world = sim.view();
    if options.workspace {
        let ws = &cfg.control.limits.workspace_aabb_m;
        let (min, max) = (Vec3::from_array(ws.min), Vec3::from_array(ws.max));
        gizmos.cube(
            Transform::from_translation((min + max) / 2.0).with_scale(max - min),
            Color::srgba(0.3, 0.6, 1.0, 0.6),
        );
    }
    if options.goal_zone
        && let Some(zone) = &cfg.extensions.armsim.goal_zone
    {
        let c = zone.center_xy_m;
        let h = zone.half_size_m;
        let z = world.table_top_z + 0.001;
        let corners = [
            Vec3::new(c[0] - h[0], c[1] - h[1], z),
            Vec3::new(c[0] + h[0], c[1] - h[1], z),
            Vec3::new(c[0] + h[0], c[1] + h[1], z),
            Vec3::new(c[0] - h[0], c[1] + h[1], z),
        ];
        gizmos.linestrip(
            corners.iter().chain(corners.first()).copied(),
            Color::srgb(1.0, 0.85, 0.1),
        );
    }
    if options.teleop_target
        && let Some(teleop) = teleop
        && let Some(setpoint) = teleop.setpoint()
    {
        // The clamped setpoint the arm follows (green) and where the hand asked (magenta).
        gizmos.sphere(
            Isometry3d::from_translation(setpoint),
            0.015,
            Color::srgb(0.2, 0.9, 0.3),
        );
        if let Some(target) = teleop.raw_target() {
            gizmos.sphere(
                Isometry3d::from_translation(target),
                0.02,
                Color::srgb(0.9, 0.2, 0.9),
            );
            gizmos.line(target, setpoint, Color::srgb(0.9, 0.2, 0.9));
        }
    }
    if options.joint_axes {
        for joint in &world.robot.joints {
            let pose = world.body_pose(world.link_bodies[joint.link]);
            let anchor = pose.transform_point(joint.anchor);
            let axis = pose.rotation * joint.axis;
            let colour = match joint.kind {
                JointKind::Revolute => Color::srgb(1.0, 0.3, 0.2),
                JointKind::Prismatic => Color::srgb(0.2, 0.8, 1.0),
            };
            gizmos.arrow(anchor, anchor + axis * 0.08, colour);
        }
    }
}
