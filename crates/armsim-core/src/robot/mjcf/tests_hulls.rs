//! Unit tests of the hulls an MJCF's meshes collide as: `maxhullvert` (the mesh's own, or its
//! default class's) caps them as in MuJoCo, and big hulls are simplified within 1 mm.

use std::path::{Path, PathBuf};

use super::parse_mjcf_file;
use crate::robot::hull::HULL_TOLERANCE_M;
use crate::robot::mesh::LoadOptions;
use crate::robot::model::{RobotModel, Shape};

/// A folder of its own under the target dir with `ball.obj`: the full hull of `n` points on a
/// ball of radius 5 cm (in millimetres, as STL and OBJ robot meshes often are).
fn ball_dir(tag: &str, n: usize) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("armsim-mjcf-hulls-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pts = crate::robot::hull::sphere_points(n, 50.0);
    let (v, f) = rapier3d::parry::transformation::try_convex_hull(&pts).unwrap();
    let mut obj = String::new();
    for p in &v {
        obj.push_str(&format!("v {} {} {}\n", p.x, p.y, p.z));
    }
    for t in &f {
        obj.push_str(&format!("f {} {} {}\n", t[0] + 1, t[1] + 1, t[2] + 1));
    }
    std::fs::write(dir.join("ball.obj"), obj).unwrap();
    dir
}

fn load(dir: &Path, assets: &str, defaults: &str) -> RobotModel {
    let xml = format!(
        r#"<mujoco>
          <default>{defaults}</default>
          <asset>{assets}</asset>
          <worldbody><body name="base">
            <body name="l1"><joint name="j1"/>
              <inertial mass="1" diaginertia="0.01 0.01 0.01"/>
              <geom type="mesh" mesh="ball"/>
            </body>
          </body></worldbody>
        </mujoco>"#
    );
    let path = dir.join("robot.xml");
    std::fs::write(&path, &xml).unwrap();
    parse_mjcf_file(&xml, Some(&path), &LoadOptions::default()).unwrap_or_else(|e| panic!("{e}"))
}

/// The hull of the one mesh geom: (vertices kept, vertices of the full hull, error in file units).
fn hull(m: &RobotModel) -> (usize, usize, f32) {
    let Shape::Mesh { mesh, .. } = m.links[1].collisions[0].shape else {
        panic!("a mesh geom");
    };
    let h = m.meshes[mesh].parts[0].hull.as_ref().expect("a hull");
    (h.points.len(), h.full_vertices, h.error)
}

#[test]
fn maxhullvert_caps_the_hull_own_or_by_default() {
    let dir = ball_dir("cap", 600);
    let m = load(
        &dir,
        r#"<mesh name="ball" file="ball.obj" scale="0.001 0.001 0.001" maxhullvert="12"/>"#,
        "",
    );
    let (kept, full, error) = hull(&m);
    assert!(full > 500, "{full}");
    assert!(kept <= 12, "{kept}");
    assert!(error > 0.0);
    // The cap and what it cost are in the load log.
    assert!(
        m.notes.iter().any(|n| n.contains("maxhullvert 12")),
        "{:?}",
        m.notes
    );
    let m = load(
        &dir,
        r#"<mesh name="ball" file="ball.obj" scale="0.001 0.001 0.001"/>"#,
        r#"<mesh maxhullvert="8"/>"#,
    );
    assert!(hull(&m).0 <= 8, "{:?}", hull(&m));
    // -1 is MuJoCo's "no cap"; below 4 is refused.
    let dir_bad = ball_dir("bad", 40);
    let xml = r#"<mujoco><asset><mesh name="ball" file="ball.obj" maxhullvert="3"/></asset>
        <worldbody><body name="b"/></worldbody></mujoco>"#;
    let e = parse_mjcf_file(xml, Some(&dir_bad.join("r.xml")), &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("maxhullvert"), "{e}");
}

#[test]
fn a_big_hull_is_simplified_within_a_millimetre_at_its_scale() {
    let dir = ball_dir("big", 3000);
    let m = load(
        &dir,
        r#"<mesh name="ball" file="ball.obj" scale="0.001 0.001 0.001" maxhullvert="-1"/>"#,
        "",
    );
    let (kept, full, error) = hull(&m);
    assert!(full > 2500, "{full}");
    assert!(kept < full / 4, "{kept} of {full}");
    // The error is in the file's units (mm here): within 1 mm once scaled.
    assert!(error * 0.001 <= HULL_TOLERANCE_M, "{error}");
    assert!(error > 0.1, "{error}");
    assert!(
        m.notes
            .iter()
            .any(|n| n.contains(&format!("from {full} to {kept} vertices"))),
        "{:?}",
        m.notes
    );
}
