//! Demos written for another name of the same arm. MetaSim and RoboVerse write Franka demos under
//! the robot `franka` with the URDF's joint names (`panda_joint1..7`, `panda_finger_joint1/2`),
//! while Menagerie's Panda calls its joints `joint1..7`, `finger_joint1/2`. When a file has no
//! demos under the scene robot's own name, the robot whose joint names all map onto the model's
//! is replayed, renamed: a recorded name maps to the model joint it equals, else to the longest
//! model joint name it ends with after an underscore (`panda_finger_joint1` → `finger_joint1`).

use std::collections::HashMap;

use crate::robot::RobotModel;

use super::{Demo, JointValues, StateFrame, Trajectories};

/// Recorded joint name → model joint name, when every recorded name maps to a distinct joint.
pub fn joint_map<'a>(
    names: impl IntoIterator<Item = &'a str>,
    model: &RobotModel,
) -> Option<HashMap<String, String>> {
    let mut map = HashMap::new();
    for name in names {
        let target = model
            .joints
            .iter()
            .map(|j| j.name.as_str())
            .filter(|m| {
                name == *m
                    || name
                        .strip_suffix(m)
                        .is_some_and(|prefix| prefix.ends_with('_'))
            })
            .max_by_key(|m| (name == *m, m.len()))?;
        map.insert(name.to_string(), target.to_string());
    }
    let mut targets: Vec<&String> = map.values().collect();
    targets.sort();
    targets.dedup();
    (targets.len() == map.len()).then_some(map)
}

/// The joint names a robot's demos record (initial states and actions).
fn recorded_joints<'a>(robot: &'a str, demos: &'a [Demo]) -> impl Iterator<Item = &'a str> {
    demos.iter().flat_map(move |d| {
        let init = d
            .init_state
            .get(robot)
            .and_then(|b| b.dof_pos.as_ref())
            .into_iter()
            .flat_map(JointValues::iter);
        let actions = d.actions.iter().flat_map(|a| a.dof_pos_target.iter());
        init.chain(actions).map(|(n, _)| n)
    })
}

/// The robot of `trajectories` to replay on `model`: its own name if present, else the only
/// robot whose recorded joints all map onto the model's, with that map.
pub fn pick_robot<'t>(
    trajectories: &'t Trajectories,
    model: &RobotModel,
) -> Option<(&'t str, Option<HashMap<String, String>>)> {
    if let Some((name, _)) = trajectories.robots.iter().find(|(n, _)| *n == model.name) {
        return Some((name.as_str(), None));
    }
    let mut found = trajectories.robots.iter().filter_map(|(name, demos)| {
        let map = joint_map(recorded_joints(name, demos), model)?;
        (!map.is_empty()).then_some((name.as_str(), Some(map)))
    });
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// `demo` of robot `from` as if recorded by `model`: the robot's body renamed to the model's
/// name and its joints renamed by `map`.
pub fn adapt(demo: &Demo, from: &str, to: &str, map: &HashMap<String, String>) -> Demo {
    let rename = |values: &JointValues| {
        JointValues(
            values
                .0
                .iter()
                .map(|(n, v)| (map.get(n).cloned().unwrap_or_else(|| n.clone()), *v))
                .collect(),
        )
    };
    let frame = |f: &StateFrame| {
        StateFrame(
            f.0.iter()
                .map(|(name, body)| {
                    if name != from {
                        return (name.clone(), body.clone());
                    }
                    let mut body = body.clone();
                    body.dof_pos = body.dof_pos.as_ref().map(rename);
                    body.dof_vel = body.dof_vel.as_ref().map(rename);
                    (to.to_string(), body)
                })
                .collect(),
        )
    };
    let mut out = demo.clone();
    out.init_state = frame(&demo.init_state);
    out.states = demo.states.iter().map(frame).collect();
    for a in &mut out.actions {
        a.dof_pos_target = rename(&a.dof_pos_target);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trajectory::{ActionFrame, BodyState};

    fn menagerie_names() -> RobotModel {
        let mut xml = String::from("<mujoco model=\"panda\"><worldbody><body name=\"b\">");
        let names = (1..=7)
            .map(|i| format!("joint{i}"))
            .chain(["finger_joint1".into(), "finger_joint2".into()]);
        for (i, n) in names.enumerate() {
            xml.push_str(&format!(
                "<body name=\"l{i}\"><joint name=\"{n}\"/><geom size=\"0.1\"/>"
            ));
        }
        xml.push_str(&"</body>".repeat(9));
        xml.push_str("</body></worldbody></mujoco>");
        crate::robot::mjcf::parse_mjcf(&xml).unwrap()
    }

    #[test]
    fn franka_demos_map_onto_menagerie_names() {
        let model = menagerie_names();
        let recorded: Vec<String> = (1..=7)
            .map(|i| format!("panda_joint{i}"))
            .chain(["panda_finger_joint1".into(), "panda_finger_joint2".into()])
            .collect();
        let map = joint_map(recorded.iter().map(String::as_str), &model).unwrap();
        assert_eq!(map["panda_joint1"], "joint1");
        assert_eq!(map["panda_finger_joint1"], "finger_joint1");
        assert_eq!(map["panda_finger_joint2"], "finger_joint2");
        // A name that maps nowhere, or two names onto one joint: no map.
        assert!(joint_map(["elbow"], &model).is_none());
        assert!(joint_map(["a_joint1", "b_joint1"], &model).is_none());

        let values: JointValues = recorded.iter().map(|n| (n.as_str(), 0.5)).collect();
        let mut body = BodyState::new([0.0; 3], [1.0, 0.0, 0.0, 0.0]);
        body.dof_pos = Some(values.clone());
        let demo = Demo {
            init_state: StateFrame(vec![("franka".into(), body)]),
            actions: vec![ActionFrame::new(values)],
            ..Demo::default()
        };
        let t = Trajectories {
            robots: vec![("franka".into(), vec![demo.clone()])],
        };
        let (robot, map) = pick_robot(&t, &model).unwrap();
        assert_eq!(robot, "franka");
        let adapted = adapt(&demo, robot, &model.name, &map.unwrap());
        let init = adapted.init_state.get("panda").unwrap();
        assert_eq!(init.dof_pos.as_ref().unwrap().get("joint7"), Some(0.5));
        assert_eq!(
            adapted.actions[0].dof_pos_target.get("finger_joint2"),
            Some(0.5)
        );
    }
}
