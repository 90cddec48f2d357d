//! Unit tests of the state types' wire shape: the dict view keeps MetaSim's flat robot entry
//! (the root's `pos`/`rot`/`vel`/`ang_vel` beside the joint maps), both ways.

use super::*;

#[test]
fn a_dict_robot_keeps_its_root_fields_at_the_top_level() {
    let mut tensor = TensorState::default();
    tensor.robots.insert(
        "arm".into(),
        RobotState {
            root_state: [
                1.0, 2.0, 3.0, 1.0, 0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.0, 0.0, 0.25,
            ],
            body_names: Vec::new(),
            body_state: Vec::new(),
            joint_names: vec!["elbow".into()],
            joint_pos: vec![0.5],
            joint_vel: vec![-0.25],
            joint_pos_target: vec![0.5],
            joint_vel_target: vec![0.0],
            joint_effort_target: vec![0.0],
        },
    );
    let dict = tensor.to_dict();
    let json = serde_json::to_value(&dict).unwrap();
    let arm = &json["robots"]["arm"];
    assert_eq!(arm["pos"], serde_json::json!([1.0, 2.0, 3.0]));
    assert_eq!(arm["rot"], serde_json::json!([1.0, 0.0, 0.0, 0.0]));
    assert_eq!(arm["vel"], serde_json::json!([0.5, 0.0, 0.0]));
    assert_eq!(arm["ang_vel"], serde_json::json!([0.0, 0.0, 0.25]));
    assert_eq!(arm["dof_pos"]["elbow"], serde_json::json!(0.5));
    assert!(arm.get("root").is_none(), "{arm}");
    let back: DictEnvState = serde_json::from_value(json).unwrap();
    assert_eq!(back, dict);
}

#[test]
fn a_dict_robot_reads_without_velocities() {
    let json = serde_json::json!({
        "objects": {"cube": {"pos": [0, 0, 1], "rot": [1, 0, 0, 0]}},
        "robots": {"arm": {"pos": [0, 0, 1], "rot": [1, 0, 0, 0], "dof_pos": {"elbow": 0.5}}},
    });
    let dict: DictEnvState = serde_json::from_value(json).unwrap();
    let arm = &dict.robots["arm"];
    assert_eq!(arm.root.pos, [0.0, 0.0, 1.0]);
    assert_eq!(arm.root.vel, None);
    assert_eq!(arm.dof_pos.as_ref().unwrap()["elbow"], 0.5);
    assert_eq!(dict.objects["cube"].rot, [1.0, 0.0, 0.0, 0.0]);
}
