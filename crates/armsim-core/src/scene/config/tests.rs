//! Unit tests of the revA scene config: parsing, every validation rule with its JSON path, and the
//! shipped scenes.

use super::*;
use crate::robot::kinematics::tool_axis;
use crate::robot::model::Shape;
use serde_json::json;

pub(super) fn scenes_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/scenes")
}

pub(super) fn default_value() -> Value {
    let text = std::fs::read_to_string(scenes_dir().join("default_scene.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

pub(super) fn parse_value(v: &Value) -> Result<Scene, SceneErrors> {
    parse_scene(&v.to_string(), &scenes_dir())
}

/// The default scene with `mutate` applied, which must fail.
pub(super) fn errors_for(mutate: impl FnOnce(&mut Value)) -> SceneErrors {
    let mut v = default_value();
    mutate(&mut v);
    match parse_value(&v) {
        Ok(_) => panic!("scene unexpectedly valid"),
        Err(e) => e,
    }
}

#[track_caller]
pub(super) fn assert_has(errors: &SceneErrors, path: &str, needle: &str) {
    assert!(
        errors
            .0
            .iter()
            .any(|e| e.path == path && e.message.contains(needle)),
        "expected an error at {path} containing {needle:?}; got:\n{errors}"
    );
}

pub(super) fn default_scene() -> Scene {
    load_scene(&scenes_dir().join("default_scene.json")).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn default_scene_loads() {
    let scene = default_scene();
    let c = &scene.config;
    assert_eq!(c.schema_version, SCHEMA_VERSION);
    assert_eq!(c.scene_id, "default_scene");
    assert_eq!(c.networking.ws_port, 8765);
    assert_eq!(c.networking.ws_path, "/ws");
    assert_eq!(c.table.top_height_m, 1.0);
    assert_eq!(c.objects.len(), 3);
    assert_eq!(c.control.pause_behavior, PauseBehavior::Hold);
    assert_eq!(c.extensions.armsim.episode_time_limit_s, Some(120.0));
    assert!(c.extensions.armsim.goal_zone.is_some());
    assert_eq!(c.objects[0].extensions.rgba.map(|c| c[0] > 0.5), Some(true));
    assert_eq!(scene.path, scenes_dir().join("default_scene.json"));
    assert!(scene.robot_path.is_file());

    let gripper = scene.gripper_joint().expect("gripper actuator");
    let full = scene.home_q_full();
    assert_eq!(full.len(), scene.robot.joints.len());
    assert_eq!(scene.arm_joints().len(), c.robot.home_q.len());
    for (&j, &q) in scene.arm_joints().iter().zip(&c.robot.home_q) {
        assert_eq!(full[j], q);
    }
    assert_eq!(
        full[gripper],
        gripper_open_position(&scene.robot.joints[gripper])
    );
}

#[test]
fn gripper4_scene_loads() {
    let scene = load_scene(&scenes_dir().join("gripper4.json")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scene.config.scene_id, "gripper4");
    assert_eq!(scene.robot.joints.len(), 10);
    assert_eq!(scene.home_q_full().len(), 10);
}

#[test]
fn write_back_round_trips() {
    let scene = default_scene();
    let text = scene.config.to_json_pretty();
    let again = parse_scene(&text, &scenes_dir()).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(again.config, scene.config);
    assert!(text.contains("\"type\": \"box\""), "{text}");
    assert!(text.contains("0.05"), "{text}");
    assert!(
        !text.contains("0.0500000"),
        "f32 values must print short: {text}"
    );
}

#[test]
fn robot_extensions_survive_a_write_back() {
    let mut v = default_value();
    v["extensions"]["armsim"]["robot"] = json!({
        "package_paths": {"franka_description": "meshes/franka", "so": "../so"},
        "tool": {"frame": "upper_arm_link", "offset_m": [0.0, 0.0, 0.1], "axis": [1.0, 0.0, 0.0]},
        "gripper_positions": {"open": 0.035, "closed": 0.001},
        "collide_geoms": ["forearm", "wrist_1"]
    });
    let scene = parse_value(&v).unwrap_or_else(|e| panic!("{e}"));
    let robot = &scene.config.extensions.armsim.robot;
    assert_eq!(robot.package_paths.len(), 2);
    assert_eq!(robot.collide_geoms, ["forearm", "wrist_1"]);
    let text = scene.config.to_json_pretty();
    let again = parse_scene(&text, &scenes_dir()).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(again.config, scene.config, "{text}");
    assert!(
        text.contains("\"franka_description\": \"meshes/franka\""),
        "{text}"
    );
}

#[test]
fn extensions_are_free_and_kept() {
    let mut v = default_value();
    v["extensions"]["vendor"] = json!({"anything": [1, 2, 3]});
    v["extensions"]["armsim"]["future_knob"] = json!(true);
    v["objects"][0]["extensions"]["label"] = json!("heavy");
    v["networking"]["extensions"] = json!({"note": "ignored"});
    let scene = parse_value(&v).unwrap_or_else(|e| panic!("{e}"));
    let text = scene.config.to_json_pretty();
    assert!(text.contains("\"vendor\""), "{text}");
    assert!(text.contains("\"future_knob\""), "{text}");
    assert!(text.contains("\"label\""), "{text}");
}

#[test]
fn a_lerobot_robot_type_survives_a_write_back_with_its_neighbours() {
    let mut v = default_value();
    v["extensions"]["armsim"]["lerobot"] = json!({"robot": "so101_follower", "note": 1});
    let scene = parse_value(&v).unwrap_or_else(|e| panic!("{e}"));
    let ext = &scene.config.extensions.armsim;
    assert_eq!(ext.lerobot_robot.as_deref(), Some("so101_follower"));
    let text = scene.config.to_json_pretty();
    let again = parse_scene(&text, &scenes_dir()).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(again.config, scene.config, "{text}");
    assert!(text.contains("\"note\": 1"), "{text}");
    v["extensions"]["armsim"]["lerobot"]["robot"] = json!(101);
    let errors = parse_value(&v).expect_err("a number is no robot type");
    assert_has(
        &errors,
        "$.extensions.armsim.lerobot.robot",
        "expected a string",
    );
}

#[test]
fn pretty_output_keeps_number_arrays_on_one_line() {
    let text = default_scene().config.to_json_pretty();
    assert!(text.contains("\"pos_m\": [0.5, -0.12, 1.025]"), "{text}");
    assert!(text.contains("[1.0, 0.0, 0.0, 0.0],"), "{text}");

    let tricky =
        "{\n  \"s\": \"a[1,\\\"\\n 2]\",\n  \"n\": [\n    [\n      1\n    ],\n    []\n  ]\n}";
    let collapsed = collapse_scalar_arrays(tricky);
    assert!(collapsed.contains("\"a[1,\\\"\\n 2]\""), "{collapsed}");
    assert!(collapsed.contains("[1],"), "{collapsed}");
    let a: Value = serde_json::from_str(tricky).unwrap();
    let b: Value = serde_json::from_str(&collapsed).unwrap();
    assert_eq!(a, b);
}

#[test]
fn armsim_defaults_apply_when_absent() {
    let mut v = default_value();
    v.as_object_mut().unwrap().remove("extensions");
    let scene = parse_value(&v).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scene.config.extensions.armsim, ArmsimExtensions::default());
    assert!(!scene.config.to_json_pretty().contains("armsim"));
}

#[test]
fn sphere_objects_are_accepted() {
    let mut v = default_value();
    v["objects"][0]["type"] = json!("sphere");
    v["objects"][0]["size_m"] = json!([0.025]);
    let scene = parse_value(&v).unwrap_or_else(|e| panic!("{e}"));
    let o = &scene.config.objects[0];
    assert_eq!(o.shape, ObjectShape::Sphere { radius_m: 0.025 });
    assert_eq!(o.shape.to_shape(), Shape::Sphere { radius: 0.025 });
    let again = parse_scene(&scene.config.to_json_pretty(), &scenes_dir()).unwrap();
    assert_eq!(again.config, scene.config);
}

#[test]
fn json_syntax_error_has_line_and_column() {
    let e = parse_scene(
        "{\n  \"schema_version\": \"1.0.0-revA\",\n  oops\n}",
        &scenes_dir(),
    )
    .unwrap_err();
    assert_has(&e, "$", "line 3 column");
}

#[test]
fn unreadable_file_is_reported_at_root() {
    let e = load_scene(&scenes_dir().join("no_such_scene.json")).unwrap_err();
    assert_has(&e, "$", "cannot read scene file");
}

#[test]
fn wrong_schema_version() {
    let e = errors_for(|v| v["schema_version"] = json!("0.9.0"));
    assert_has(
        &e,
        "$.schema_version",
        "expected \"1.0.0-revA\", found \"0.9.0\"",
    );
}

#[test]
fn missing_required_field() {
    let e = errors_for(|v| {
        v["robot"].as_object_mut().unwrap().remove("home_q");
    });
    assert_has(&e, "$.robot.home_q", "missing required field");
}

#[test]
fn wrong_type() {
    let e = errors_for(|v| v["table"]["top_height_m"] = json!("high"));
    assert_has(
        &e,
        "$.table.top_height_m",
        "expected a number, found a string",
    );
    let e = errors_for(|v| v["objects"] = json!({}));
    assert_has(&e, "$.objects", "expected an array, found an object");
}

#[test]
fn unknown_fields_outside_extensions() {
    let e = errors_for(|v| {
        v["colour"] = json!("red");
        v["objects"][1]["pose"]["scale"] = json!(2);
    });
    assert_has(&e, "$.colour", "unknown field `colour`");
    assert_has(&e, "$.objects[1].pose.scale", "unknown field `scale`");
}

#[test]
fn non_finite_numbers() {
    let e = errors_for(|v| v["objects"][2]["pose"]["pos_m"][0] = json!(1e39));
    assert_has(&e, "$.objects[2].pose.pos_m[0]", "finite");
}

#[test]
fn ws_port_range() {
    let e = errors_for(|v| v["networking"]["ws_port"] = json!(70000));
    assert_has(&e, "$.networking.ws_port", "out of range");
    let e = errors_for(|v| v["networking"]["ws_port"] = json!(-1));
    assert_has(&e, "$.networking.ws_port", "non-negative integer");
}

#[test]
fn ws_path_starts_with_slash() {
    let e = errors_for(|v| v["networking"]["ws_path"] = json!("ws"));
    assert_has(&e, "$.networking.ws_path", "must start with '/'");
}

#[test]
fn quaternions_are_normalised_or_rejected() {
    let mut v = default_value();
    v["robot"]["base_pose"]["quat_xyzw"] = json!([0.0, 0.0, 0.0, 1.0005]);
    let scene = parse_value(&v).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(scene.config.robot.base_pose.quat_xyzw, [0.0, 0.0, 0.0, 1.0]);

    let e = errors_for(|v| v["objects"][0]["pose"]["quat_xyzw"] = json!([0.0, 0.0, 0.0, 2.0]));
    assert_has(&e, "$.objects[0].pose.quat_xyzw", "unit quaternion");
}

#[test]
fn anchor_transform_must_be_rigid() {
    const P: &str = "$.frames.vp_operator_anchor.t_sim_from_vp_anchor";
    let set = |m: Value| {
        move |v: &mut Value| v["frames"]["vp_operator_anchor"]["t_sim_from_vp_anchor"] = m
    };
    let scaled = json!([[2, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]);
    assert_has(&errors_for(set(scaled)), P, "not orthonormal");
    let mirrored = json!([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, -1, 0], [0, 0, 0, 1]]);
    assert_has(&errors_for(set(mirrored)), P, "determinant");
    let projective = json!([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1]]);
    assert_has(&errors_for(set(projective)), P, "last row");
    let short = json!([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]);
    assert_has(&errors_for(set(short)), P, "expected 4 rows");
    let flat_short = json!([1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0]);
    assert_has(&errors_for(set(flat_short)), P, "or 16 numbers");
    let flat_scaled = json!([2, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]);
    assert_has(&errors_for(set(flat_scaled)), P, "not orthonormal");
    let flat_text = json!([1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, "x", 0, 0, 0, 1]);
    assert_has(
        &errors_for(set(flat_text)),
        &format!("{P}[11]"),
        "expected a number",
    );

    // A proper rotation about z with a translation is fine.
    let mut v = default_value();
    v["frames"]["vp_operator_anchor"]["t_sim_from_vp_anchor"] = json!([
        [0, -1, 0, 0.4],
        [1, 0, 0, 0.0],
        [0, 0, 1, 1.0],
        [0, 0, 0, 1]
    ]);
    let scene = parse_value(&v).unwrap_or_else(|e| panic!("{e}"));
    let p = scene
        .config
        .frames
        .vp_operator_anchor
        .to_sim([1.0, 0.0, 0.0]);
    assert_eq!(p, [0.4, 1.0, 1.0]);

    // TeleSpace writes the same matrix flat, row by row.
    v["frames"]["vp_operator_anchor"]["t_sim_from_vp_anchor"] =
        json!([0, -1, 0, 0.4, 1, 0, 0, 0.0, 0, 0, 1, 1.0, 0, 0, 0, 1]);
    let flat = parse_value(&v).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(flat.config.frames, scene.config.frames);
}

#[test]
fn table_height_positive() {
    let e = errors_for(|v| v["table"]["top_height_m"] = json!(0.0));
    assert_has(&e, "$.table.top_height_m", "must be > 0");
}

#[test]
fn object_sizes_positive() {
    let e = errors_for(|v| v["objects"][0]["size_m"] = json!([0.05, 0.0, 0.05]));
    assert_has(&e, "$.objects[0].size_m[1]", "must be > 0");
    let e = errors_for(|v| v["objects"][0]["size_m"] = json!([0.05, 0.05]));
    assert_has(&e, "$.objects[0].size_m", "expected 3 numbers, found 2");
}

#[test]
fn duplicate_object_names() {
    let e = errors_for(|v| v["objects"][2]["name"] = json!("cube_red"));
    assert_has(
        &e,
        "$.objects[2].name",
        "duplicate object name \"cube_red\"",
    );
}

#[test]
fn object_below_table() {
    let e = errors_for(|v| v["objects"][1]["pose"]["pos_m"][2] = json!(1.02));
    assert_has(&e, "$.objects[1].pose.pos_m", "below the table top");
    // A cube resting on an edge reaches lower than one resting on a face.
    let e = errors_for(|v| {
        v["objects"][1]["pose"]["quat_xyzw"] = json!([0.38268343, 0.0, 0.0, 0.92387953]);
    });
    assert_has(&e, "$.objects[1].pose.pos_m", "below the table top");
}

#[test]
fn workspace_min_below_max() {
    let e = errors_for(|v| v["control"]["limits"]["workspace_aabb_m"]["min"][2] = json!(1.6));
    assert_has(
        &e,
        "$.control.limits.workspace_aabb_m",
        "min.z (1.6) must be less than max.z (1.6)",
    );
}

#[test]
fn speed_limits_positive() {
    let e = errors_for(|v| {
        v["control"]["limits"]["max_ee_speed_mps"] = json!(0);
        v["control"]["limits"]["max_joint_speed_rad_s"] = json!(-1.5);
    });
    assert_has(&e, "$.control.limits.max_ee_speed_mps", "must be > 0");
    assert_has(&e, "$.control.limits.max_joint_speed_rad_s", "must be > 0");
}

#[test]
fn heartbeat_timeout_exceeds_period() {
    let e = errors_for(|v| v["heartbeat"]["timeout_ms"] = json!(1000));
    assert_has(
        &e,
        "$.heartbeat.timeout_ms",
        "must be greater than period_ms (1000)",
    );
    let e = errors_for(|v| v["heartbeat"]["period_ms"] = json!(0));
    assert_has(&e, "$.heartbeat.period_ms", "must be > 0");
}

#[test]
fn filter_must_be_one_euro_with_positive_params() {
    let e = errors_for(|v| {
        v["control"]["filter"]["type"] = json!("kalman");
        v["control"]["filter"]["params"]["min_cutoff"] = json!(0.0);
    });
    assert_has(
        &e,
        "$.control.filter.type",
        "unsupported filter type \"kalman\"",
    );
    assert_has(&e, "$.control.filter.params.min_cutoff", "must be > 0");
}

#[test]
fn a_missing_d_cutoff_defaults_with_a_note() {
    let mut v = default_value();
    let params = v["control"]["filter"]["params"].as_object_mut().unwrap();
    params.remove("d_cutoff");
    let scene = parse_value(&v).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        scene.config.control.filter.params.d_cutoff,
        DEFAULT_D_CUTOFF
    );
    assert_eq!(scene.notes.len(), 1, "{:?}", scene.notes);
    assert!(
        scene.notes[0].starts_with("$.control.filter.params.d_cutoff: missing"),
        "{:?}",
        scene.notes
    );
    assert!(
        default_scene().notes.is_empty(),
        "a complete scene has no notes"
    );
    // Present but wrong is still an error.
    let e = errors_for(|v| v["control"]["filter"]["params"]["d_cutoff"] = json!(0.0));
    assert_has(&e, "$.control.filter.params.d_cutoff", "must be > 0");
}

#[test]
fn pause_behavior_is_hold_or_damp() {
    let e = errors_for(|v| v["control"]["pause_behavior"] = json!("freeze"));
    assert_has(
        &e,
        "$.control.pause_behavior",
        "expected \"hold\" or \"damp\"",
    );
}

#[test]
fn missing_robot_file_lists_paths_tried() {
    let e = errors_for(|v| v["robot"]["mjcf_path"] = json!("../robots/nope.xml"));
    assert_has(&e, "$.robot.mjcf_path", "not found (tried: ");
    let err = e.at("$.robot.mjcf_path").unwrap();
    assert!(err.message.contains("scenes"), "{err}");
}

#[test]
fn unloadable_robot_file() {
    // The scene file itself exists but is no robot description.
    let e = errors_for(|v| v["robot"]["mjcf_path"] = json!("default_scene.json"));
    assert_has(&e, "$.robot.mjcf_path", "cannot load robot");
}

#[test]
fn home_q_length_matches_robot() {
    let e = errors_for(|v| v["robot"]["home_q"] = json!([0.0, 0.0]));
    assert_has(&e, "$.robot.home_q", "has 2 values");
    assert_has(&e, "$.robot.home_q", "(arm joints only)");
}

#[test]
fn home_q_full_length_is_accepted_verbatim() {
    let scene = default_scene();
    let full = scene.home_q_full();
    let mut v = default_value();
    v["robot"]["home_q"] = json!(full);
    let again = parse_value(&v).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again.home_q_full(), full);
}

#[test]
fn home_q_within_joint_limits() {
    let scene = default_scene();
    let arm = scene.arm_joints();
    let (slot, hi) = arm
        .iter()
        .enumerate()
        .find_map(|(i, &j)| scene.robot.joints[j].limits.map(|(_, hi)| (i, hi)))
        .expect("the default robot has a limited arm joint");
    let e = errors_for(|v| v["robot"]["home_q"][slot] = json!(hi + 0.5));
    assert_has(&e, &format!("$.robot.home_q[{slot}]"), "outside the limits");
}

#[test]
fn gripper_actuator_must_exist() {
    let e = errors_for(|v| v["robot"]["gripper"]["actuator_name"] = json!("no_such_actuator"));
    assert_has(
        &e,
        "$.robot.gripper.actuator_name",
        "no actuator named \"no_such_actuator\"",
    );
}

#[test]
fn robot_base_below_table() {
    let e = errors_for(|v| v["robot"]["base_pose"]["pos_m"][2] = json!(0.5));
    assert_has(&e, "$.robot.base_pose.pos_m", "below the table top");
}

#[test]
fn goal_zone_inside_table() {
    let e =
        errors_for(|v| v["extensions"]["armsim"]["goal_zone"]["center_xy_m"] = json!([0.45, 0.38]));
    assert_has(
        &e,
        "$.extensions.armsim.goal_zone",
        "past the table edge along y",
    );
}

#[test]
fn every_error_is_reported() {
    let e = errors_for(|v| {
        v["schema_version"] = json!("2.0");
        v["networking"]["ws_port"] = json!("8765");
        v["objects"][1]["size_m"][0] = json!(-0.05);
    });
    assert_eq!(e.0.len(), 3, "{e}");
    assert_has(&e, "$.schema_version", "expected \"1.0.0-revA\"");
    assert_has(&e, "$.networking.ws_port", "non-negative integer");
    assert_has(&e, "$.objects[1].size_m[0]", "must be > 0");
    let text = e.to_string();
    assert_eq!(text.lines().count(), 3);
    assert!(text.lines().all(|l| l.starts_with("$.")), "{text}");
}

/// The physics settings `v` parses to.
fn physics_of(v: &Value) -> PhysicsExt {
    parse_value(v)
        .unwrap_or_else(|e| panic!("{e}"))
        .config
        .extensions
        .armsim
        .physics
}

#[test]
fn arm_extra_iterations_is_read_defaulted_and_bounded() {
    let mut v = default_value();
    v["extensions"]["armsim"]["physics"]["arm_extra_iterations"] = json!(2);
    assert_eq!(physics_of(&v).arm_extra_iterations, 2);
    let p = v["extensions"]["armsim"]["physics"]
        .as_object_mut()
        .unwrap();
    p.remove("arm_extra_iterations");
    assert_eq!(
        physics_of(&v).arm_extra_iterations,
        PhysicsExt::default().arm_extra_iterations
    );
    let e =
        errors_for(|v| v["extensions"]["armsim"]["physics"]["arm_extra_iterations"] = json!(1001));
    assert_has(
        &e,
        "$.extensions.armsim.physics.arm_extra_iterations",
        "must be in 0..=1000",
    );
}

#[test]
fn arm_joints_is_read_defaulted_and_checked() {
    let mut v = default_value();
    for (text, joints) in [
        ("multibody", ArmJoints::Multibody),
        ("impulse", ArmJoints::Impulse),
        ("hybrid", ArmJoints::Hybrid),
    ] {
        v["extensions"]["armsim"]["physics"]["arm_joints"] = json!(text);
        assert_eq!(physics_of(&v).arm_joints, joints);
    }
    let p = v["extensions"]["armsim"]["physics"]
        .as_object_mut()
        .unwrap();
    p.remove("arm_joints");
    assert_eq!(physics_of(&v).arm_joints, ArmJoints::Multibody);
    let e = errors_for(|v| v["extensions"]["armsim"]["physics"]["arm_joints"] = json!("soft"));
    assert_has(
        &e,
        "$.extensions.armsim.physics.arm_joints",
        "expected \"multibody\", \"impulse\" or \"hybrid\", found \"soft\"",
    );
}

#[test]
fn pgs_iterations_is_read_defaulted_and_bounded() {
    let mut v = default_value();
    v["extensions"]["armsim"]["physics"]["pgs_iterations"] = json!(4);
    assert_eq!(physics_of(&v).pgs_iterations, 4);
    let p = v["extensions"]["armsim"]["physics"]
        .as_object_mut()
        .unwrap();
    p.remove("pgs_iterations");
    assert_eq!(physics_of(&v).pgs_iterations, 12);
    for bad in [0, 101] {
        let e = errors_for(|v| v["extensions"]["armsim"]["physics"]["pgs_iterations"] = json!(bad));
        assert_has(
            &e,
            "$.extensions.armsim.physics.pgs_iterations",
            "must be in 1..=100",
        );
    }
}

#[test]
fn robot_extensions_tool_package_paths_contact_hz_and_an_optional_gripper() {
    // A tool frame the robot lacks, and contacts out of range, are errors at their paths.
    let e = errors_for(|v| {
        v["extensions"]["armsim"]["robot"] = json!({"tool": {"frame": "nowhere"}});
    });
    assert_has(
        &e,
        "$.extensions.armsim.robot.tool.frame",
        "no site or link named \"nowhere\"",
    );
    let e = errors_for(|v| v["extensions"]["armsim"]["physics"]["contact_hz"] = json!(0.0));
    assert_has(&e, "$.extensions.armsim.physics.contact_hz", "1..=240");
    let e = errors_for(|v| {
        v["extensions"]["armsim"]["robot"] = json!({"package_paths": {"pkg": 3}});
    });
    assert!(
        e.0.iter().any(|e| e
            .path
            .starts_with("$.extensions.armsim.robot.package_paths")),
        "{e}"
    );

    // The tool point moves the end effector; package paths resolve against the scene's folder;
    // without `robot.gripper` nothing is the gripper and home_q covers every joint.
    let mut v = default_value();
    v["extensions"]["armsim"]["robot"] = json!({
        "tool": {"frame": "wrist_3_link", "offset_m": [0.0, 0.0, 0.2]},
        "package_paths": {"arm": "../robots"}
    });
    v["extensions"]["armsim"]["physics"]["contact_hz"] = json!(100.0);
    v["robot"].as_object_mut().unwrap().remove("gripper");
    v["robot"]["home_q"] = json!([0.0, 0.5451, 0.9369, 1.6596, 0.0, 0.0, 0.04, 0.04]);
    let scene = parse_value(&v).unwrap();
    let ext = &scene.config.extensions.armsim;
    assert_eq!(ext.physics.contact_hz, Some(100.0));
    assert_eq!(
        ext.robot.package_paths,
        vec![("arm".to_string(), PathBuf::from("../robots"))]
    );
    let (link, _) = scene.robot.frame("wrist_3_link").unwrap();
    assert_eq!(scene.robot.ee_link, link);
    assert_eq!(scene.robot.ee_offset, Vec3::new(0.0, 0.0, 0.2));
    assert_eq!(scene.robot.ee_axis, None);
    assert_eq!(
        tool_axis(&scene.robot),
        Vec3::Z,
        "from the link origin to the tool point"
    );
    assert!(scene.config.robot.gripper.is_none() && scene.gripper_joints().is_empty());
    assert_eq!(scene.home_q_full().len(), scene.robot.joints.len());
}

#[test]
fn a_tool_axis_is_the_direction_teleop_points_down() {
    // Given in the tool's frame, any length; the IK gets it in the tool link's frame.
    let mut v = default_value();
    v["extensions"]["armsim"]["robot"]["tool"] =
        json!({"frame": "wrist_3_link", "offset_m": [0.0, 0.0, 0.2], "axis": [0.0, 2.0, 0.0]});
    let scene = parse_value(&v).unwrap_or_else(|e| panic!("{e}"));
    let (_, pose) = scene.robot.frame("wrist_3_link").unwrap();
    let expected = pose.rotation * Vec3::Y;
    assert!(tool_axis(&scene.robot).abs_diff_eq(expected, 1e-6));
    // A zero axis points nowhere: an error naming the key.
    v["extensions"]["armsim"]["robot"]["tool"]["axis"] = json!([0.0, 0.0, 0.0]);
    let e = parse_value(&v).unwrap_err();
    assert_has(&e, "$.extensions.armsim.robot.tool.axis", "non-zero");
}

#[test]
fn gripper_positions_set_where_the_jaws_open_and_close() {
    // arm6's fingers slide over 0..=0.04 m; by convention they open at 0.04 and close at 0.
    let scene = default_scene();
    let g = scene.gripper_joint().unwrap();
    assert_eq!(
        crate::sim::gripper_range(&scene.robot.joints[g]),
        (0.04, 0.0)
    );

    let mut v = default_value();
    v["extensions"]["armsim"]["robot"] =
        json!({"gripper_positions": {"open": 0.03, "closed": 0.005}});
    let scene = parse_value(&v).unwrap();
    let g = scene.gripper_joint().unwrap();
    assert_eq!(scene.robot.joints[g].grip, Some((0.03, 0.005)));
    assert_eq!(
        crate::sim::gripper_range(&scene.robot.joints[g]),
        (0.03, 0.005)
    );
    assert_eq!(scene.home_q_full()[g], 0.03);
    let closed = crate::sim::gripper_commands(&scene.robot, g, 1.0);
    assert!(
        closed.iter().any(|&(j, c)| j == g
            && matches!(c, crate::sim::JointCommand::Position { target, .. }
                if (target - 0.005).abs() < 1e-6)),
        "{closed:?}"
    );

    // Outside the joint's range, equal, missing a field, or with no gripper: errors at the key.
    let p = "$.extensions.armsim.robot.gripper_positions";
    let e = errors_for(|v| {
        v["extensions"]["armsim"]["robot"] =
            json!({"gripper_positions": {"open": 0.1, "closed": 0.0}});
    });
    assert_has(&e, &format!("{p}.open"), "outside joint");
    let e = errors_for(|v| {
        v["extensions"]["armsim"]["robot"] =
            json!({"gripper_positions": {"open": 0.02, "closed": 0.02}});
    });
    assert_has(&e, p, "both 0.02");
    let e = errors_for(|v| {
        v["extensions"]["armsim"]["robot"] = json!({"gripper_positions": {"open": 0.02}});
    });
    assert!(e.0.iter().any(|e| e.path.starts_with(p)), "{e}");
    let e = errors_for(|v| {
        v["extensions"]["armsim"]["robot"] =
            json!({"gripper_positions": {"open": 0.03, "closed": 0.0}});
        v["robot"].as_object_mut().unwrap().remove("gripper");
        v["robot"]["home_q"] = json!([0.0, 0.5451, 0.9369, 1.6596, 0.0, 0.0, 0.04, 0.04]);
    });
    assert_has(&e, p, "no robot.gripper");
}

#[test]
fn collide_geoms_must_name_geoms_of_the_robot() {
    let p = "$.extensions.armsim.robot.collide_geoms";
    let e = errors_for(|v| {
        v["extensions"]["armsim"]["robot"] = json!({"collide_geoms": ["no_such_pad"]});
    });
    assert_has(&e, &format!("{p}[0]"), "no geom named \"no_such_pad\"");
    let e = errors_for(|v| {
        v["extensions"]["armsim"]["robot"] = json!({"collide_geoms": "pad"});
    });
    assert_has(&e, p, "array of geom names");
    let e = errors_for(|v| {
        v["extensions"]["armsim"]["robot"] = json!({"collide_geoms": [""]});
    });
    assert_has(&e, &format!("{p}[0]"), "must not be empty");
}

#[test]
fn self_collision_is_on_unless_the_scene_turns_it_off() {
    assert!(default_scene().robot.self_collision.enabled());
    let mut v = default_value();
    v["extensions"]["armsim"]["robot"] = json!({"self_collision": false});
    let scene = parse_value(&v).unwrap_or_else(|e| panic!("{e}"));
    assert!(!scene.robot.self_collision.enabled());
    let text = scene.config.to_json_pretty();
    assert!(text.contains("\"self_collision\": false"), "{text}");
    let e = errors_for(|v| {
        v["extensions"]["armsim"]["robot"] = json!({"self_collision": "no"});
    });
    let p = "$.extensions.armsim.robot.self_collision";
    assert_has(&e, p, "expected true or false, found a string");
}

#[test]
fn a_scene_without_physics_gets_the_shipped_scenes_settings() {
    // The shipped arm scenes all step with the same settings; a scene that says nothing must
    // get them, not 8 substeps + 4 for the arm (12 substeps a step with a multibody).
    let d = PhysicsExt::default();
    for name in ["default_scene.json", "panda.json", "so101.json"] {
        let text = std::fs::read_to_string(scenes_dir().join(name)).unwrap();
        let v: Value = serde_json::from_str(&text).unwrap();
        let p = &v["extensions"]["armsim"]["physics"];
        for (key, want) in [
            ("solver_iterations", d.solver_iterations),
            ("arm_extra_iterations", d.arm_extra_iterations),
            ("pgs_iterations", d.pgs_iterations),
        ] {
            assert_eq!(p[key].as_u64(), Some(want as u64), "{name}: {key}");
        }
    }
    let mut v = default_value();
    v["extensions"]["armsim"]
        .as_object_mut()
        .unwrap()
        .remove("physics");
    assert_eq!(physics_of(&v), physics_of(&default_value()));
}
