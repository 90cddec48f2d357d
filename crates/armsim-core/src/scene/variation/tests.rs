//! Unit tests of the varied episodes: the draw's rules (in the region, on the table, apart, in
//! range), its determinism, and the `randomize` block's validation.

use std::path::Path;

use serde_json::{Value, json};

use super::*;
use crate::scene::config::{SceneErrors, parse_scene};

fn scenes_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/scenes")
}

fn default_value() -> Value {
    let text = std::fs::read_to_string(scenes_dir().join("default_scene.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn parse(v: &Value) -> Result<Scene, SceneErrors> {
    parse_scene(&v.to_string(), &scenes_dir())
}

/// The default scene with `randomize` as its block.
fn scene_with(randomize: Value) -> Scene {
    let mut v = default_value();
    v["extensions"]["armsim"]["randomize"] = randomize;
    parse(&v).unwrap_or_else(|e| panic!("{e}"))
}

fn full_block() -> Value {
    json!({
        "seed": 7,
        "objects": {
            "region": {"center_xy_m": [0.5, 0.0], "half_size_m": [0.1, 0.15]},
            "yaw_rad": [-3.0, 3.0],
            "min_gap_m": 0.01,
            "mass_scale": [0.5, 2.0],
            "size_scale": [0.8, 1.2],
            "friction": [0.4, 1.2]
        },
        "arm": {"home_q_jitter": 0.1}
    })
}

#[test]
fn the_same_seed_draws_the_same_episodes_and_episodes_differ() {
    let scene = scene_with(full_block());
    let a: Vec<_> = (0..5)
        .map(|k| start_of(&scene, k).unwrap().unwrap().1)
        .collect();
    let b: Vec<_> = (0..5)
        .map(|k| start_of(&scene, k).unwrap().unwrap().1)
        .collect();
    assert_eq!(a, b);
    for k in 1..5 {
        assert_ne!(a[k].objects[0].pos_m, a[k - 1].objects[0].pos_m);
        assert_ne!(a[k].episode_seed, a[k - 1].episode_seed);
    }
    let mut other = full_block();
    other["seed"] = json!(8);
    let c = start_of(&scene_with(other), 0).unwrap().unwrap().1;
    assert_ne!(c.objects[0].pos_m, a[0].objects[0].pos_m);
    // An episode's seed draws its start again, whichever episode asks.
    let again = draw(&scene, 99, a[3].episode_seed.unwrap()).unwrap().1;
    assert_eq!(again.objects, a[3].objects);
    assert_eq!(again.home_q, a[3].home_q);
}

#[test]
fn every_draw_rests_in_the_region_apart_and_in_range() {
    let scene = scene_with(full_block());
    let top = scene.config.table.top_height_m;
    let home = scene.home_q_full();
    let arm = scene.arm_joints();
    for k in 0..200 {
        let (varied, start) = start_of(&scene, k).unwrap().unwrap();
        assert_eq!(start.episode, k);
        assert!(start.episode_seed.is_some_and(|s| s <= MAX_SEED));
        for (o, (cfg, file)) in start
            .objects
            .iter()
            .zip(varied.config.objects.iter().zip(&scene.config.objects))
        {
            assert!((o.pos_m[0] - 0.5).abs() <= 0.1 + 1e-6, "{o:?}");
            assert!(o.pos_m[1].abs() <= 0.15 + 1e-6, "{o:?}");
            // Resting on the table: its lowest point on the top.
            let bottom = o.pos_m[2] - cfg.shape.depth_below_center(cfg.pose.rotation());
            assert!((bottom - top).abs() < 1e-5, "{o:?}");
            let edge = o.size_m[0] / 0.05;
            assert!((0.8 - 1e-6..=1.2 + 1e-6).contains(&edge), "{o:?}");
            // The file's 0.08 kg, times 0.5..2.
            assert!((0.04 - 1e-6..=0.16 + 1e-6).contains(&o.mass_kg), "{o:?}");
            assert!((0.4..=1.2).contains(&o.friction), "{o:?}");
            assert_eq!(cfg.extensions.friction, Some(o.friction));
            assert_eq!(o.name, file.name);
        }
        for i in 0..start.objects.len() {
            for j in 0..i {
                let (a, b) = (&varied.config.objects[i], &varied.config.objects[j]);
                let d = (Vec3::from(a.pose.pos_m) - Vec3::from(b.pose.pos_m))
                    .truncate()
                    .length();
                assert!(
                    d + 1e-5 >= footprint_radius(a) + footprint_radius(b) + 0.01,
                    "episode {k}: objects {i} and {j} {d} m apart"
                );
            }
        }
        for (j, (&q, &h)) in start.home_q.iter().zip(&home).enumerate() {
            if arm.contains(&j) {
                assert!((q - h).abs() <= 0.1 + 1e-6, "joint {j}: {q} from {h}");
            } else {
                assert_eq!(q, h, "the gripper's joint {j} keeps its start");
            }
        }
        assert_eq!(varied.config.robot.home_q, start.home_q);
        assert_eq!(varied.home_q_full(), start.home_q);
    }
}

#[test]
fn without_mass_kg_the_mass_follows_the_drawn_size() {
    let mut v = default_value();
    for o in v["objects"].as_array_mut().unwrap() {
        o["extensions"].as_object_mut().unwrap().remove("mass_kg");
    }
    v["extensions"]["armsim"]["randomize"] = json!({
        "seed": 1,
        "objects": {"region": {"center_xy_m": [0.5, 0.0], "half_size_m": [0.1, 0.15]},
                    "size_scale": [0.5, 2.0]}
    });
    let scene = parse(&v).unwrap();
    let start = start_of(&scene, 0).unwrap().unwrap().1;
    for o in &start.objects {
        let volume: f32 = o.size_m.iter().product();
        assert!(
            (o.mass_kg - DEFAULT_OBJECT_DENSITY * volume).abs() < 1e-6,
            "{o:?}"
        );
        // Nothing turns without a yaw range.
        assert_eq!(o.quat_xyzw, [0.0, 0.0, 0.0, 1.0]);
    }
}

#[test]
fn a_fixed_episode_seed_starts_every_episode_alike() {
    let mut block = full_block();
    block["episode_seed"] = json!(12345);
    let scene = scene_with(block);
    let first = start_of(&scene, 0).unwrap().unwrap().1;
    let later = start_of(&scene, 17).unwrap().unwrap().1;
    assert_eq!(first.objects, later.objects);
    assert_eq!(first.episode_seed, Some(12345));
}

#[test]
fn a_scene_without_the_block_starts_as_the_file_says() {
    let scene = parse(&default_value()).unwrap();
    assert_eq!(start_of(&scene, 3), Ok(None));
    assert!(check(&scene).is_ok());
}

#[test]
fn a_region_too_small_for_the_objects_is_an_error_at_load() {
    let scene = scene_with(json!({
        "seed": 1,
        "objects": {"region": {"center_xy_m": [0.5, 0.0], "half_size_m": [0.02, 0.02]}}
    }));
    let e = check(&scene).unwrap_err();
    assert_eq!(e.0[0].path, "$.extensions.armsim.randomize.objects.region");
    assert!(e.0[0].message.contains("do not fit"), "{e}");
}

#[test]
fn the_block_is_checked_with_its_paths() {
    let bad = |block: Value, path: &str, needle: &str| {
        let mut v = default_value();
        v["extensions"]["armsim"]["randomize"] = block;
        let e = parse(&v).expect_err("scene unexpectedly valid");
        assert!(
            e.0.iter()
                .any(|e| e.path == path && e.message.contains(needle)),
            "expected {needle:?} at {path}; got:\n{e}"
        );
    };
    let p = "$.extensions.armsim.randomize";
    bad(
        json!({"objects": {}}),
        &format!("{p}.seed"),
        "missing required",
    );
    bad(
        json!({"seed": -1, "arm": {"home_q_jitter": 0.1}}),
        &format!("{p}.seed"),
        "non-negative integer",
    );
    bad(
        json!({"seed": 1u64 << 60, "arm": {"home_q_jitter": 0.1}}),
        &format!("{p}.seed"),
        "2^53",
    );
    bad(json!({"seed": 1}), p, "nothing to vary");
    bad(
        json!({"seed": 1, "arm": {"home_q_jitter": -0.1}}),
        &format!("{p}.arm.home_q_jitter"),
        ">= 0",
    );
    let region = json!({"center_xy_m": [0.5, 0.0], "half_size_m": [0.1, 0.1]});
    bad(
        json!({"seed": 1, "objects": {"region": region, "mass_scale": [2.0, 1.0]}}),
        &format!("{p}.objects.mass_scale"),
        "low <= high",
    );
    bad(
        json!({"seed": 1, "objects": {"region": region, "size_scale": [0.0, 1.0]}}),
        &format!("{p}.objects.size_scale"),
        "> 0",
    );
    bad(
        json!({"seed": 1, "objects": {"region": {"center_xy_m": [0.9, 0.0], "half_size_m": [0.1, 0.1]}}}),
        &format!("{p}.objects.region"),
        "past the table edge along x",
    );
    bad(
        json!({"seed": 1, "objects": {"region": {"center_xy_m": [0.5, 0.0], "half_size_m": [-0.1, 0.1]}}}),
        &format!("{p}.objects.region.half_size_m"),
        ">= 0",
    );
}

#[test]
fn the_block_survives_a_write_back() {
    let scene = scene_with(full_block());
    let again = parse_scene(&scene.config.to_json_pretty(), &scenes_dir()).unwrap();
    assert_eq!(again.config, scene.config);
    assert!(again.config.extensions.armsim.randomize.is_some());
}
