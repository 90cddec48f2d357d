//! `armsim bench load`: how long a scene takes to load, robot file, meshes and convex hulls
//! included (the median of `ROUNDS` loads), and how big the loaded robot is, so a real robot's
//! load time can be set beside MuJoCo's (`benches/mujoco_compare.py --robot FILE`).

use std::fmt;
use std::time::Instant;

use armsim::robot::LoadOptions;
use armsim::scene::{Scene, SceneErrors, SceneSource};

use super::{ROUNDS, median};

pub struct Report {
    pub scene: String,
    pub robot: String,
    pub load_ms: f64,
    pub links: usize,
    pub joints: usize,
    pub mesh_files: usize,
    pub vertices: usize,
    pub hull_points: usize,
}

/// Loads `source` `ROUNDS` times and reports the median.
pub fn run(source: &SceneSource, options: &LoadOptions) -> Result<Report, SceneErrors> {
    let mut times = Vec::with_capacity(ROUNDS);
    let mut scene: Option<Scene> = None;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        let loaded = source.load_with(options)?;
        times.push(start.elapsed());
        scene = Some(loaded);
    }
    let scene = scene.expect("ROUNDS > 0");
    let robot = &scene.robot;
    let parts = || robot.meshes.iter().flat_map(|m| &m.parts);
    Ok(Report {
        scene: source.describe(),
        robot: scene.robot_path.display().to_string(),
        load_ms: median(times).as_secs_f64() * 1e3,
        links: robot.links.len(),
        joints: robot.joints.len(),
        mesh_files: robot.meshes.len(),
        vertices: parts().map(|p| p.positions.len()).sum(),
        hull_points: parts()
            .filter_map(|p| p.hull.as_ref())
            .map(|h| h.points.len())
            .sum(),
    })
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "scene {} (robot {})", self.scene, self.robot)?;
        writeln!(
            f,
            "  {} links, {} joints, {} mesh files, {} vertices, {} hull points",
            self.links, self.joints, self.mesh_files, self.vertices, self.hull_points
        )?;
        write!(
            f,
            "load_ms {:.1} (median of {ROUNDS}: scene, robot file, meshes, hulls)",
            self.load_ms
        )
    }
}
