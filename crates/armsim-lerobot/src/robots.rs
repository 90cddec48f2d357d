//! The robot schemas of LeRobot's own recorder: what `observation.state` and `action` hold for a
//! LeRobot robot type (`so101_follower`, `so100_follower`, and LeRobot 0.4's `so_follower`), and
//! the units between a robot file's joints (radians) and that robot's motors.
//!
//! LeRobot's SO-100 and SO-101 followers (`use_degrees: true`, their default) record the
//! five body motors in degrees about the middle of each motor's calibrated range, and the gripper
//! as 0–100 over its calibrated range, from closed to open. Their features are
//! `shoulder_pan.pos … gripper.pos`, float32, in that order, and `robot_type` is the robot's
//! type. Here a body joint's degrees are its file position in degrees: the SO-101 files' joint
//! zeros are meant to sit at the middle of LeRobot's newer calibration, and
//! [`Schema::notes`] says where a file's range is not centred on its zero. The gripper's 0–100
//! runs over the joint's range in the file, 0 at the closed end.

use std::fmt;

/// A LeRobot robot type whose features armsim writes as LeRobot's own recorder does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeRobotRobot {
    So101Follower,
    So100Follower,
    /// LeRobot 0.4's one name for both SO followers (their class's `name`), the same motors and
    /// units: what `lerobot-record` 0.4 writes as `robot_type`.
    SoFollower,
}

/// Every robot type [`LeRobotRobot::parse`] knows.
pub const LEROBOT_ROBOTS: [LeRobotRobot; 3] = [
    LeRobotRobot::So101Follower,
    LeRobotRobot::So100Follower,
    LeRobotRobot::SoFollower,
];

/// The SO-100's and SO-101's motors, in the order LeRobot's recorder writes them.
const SO_MOTORS: [&str; 6] = [
    "shoulder_pan",
    "shoulder_lift",
    "elbow_flex",
    "wrist_flex",
    "wrist_roll",
    "gripper",
];

/// The SO arms' gripper motor, recorded 0–100.
const SO_GRIPPER: &str = "gripper";

/// A file range whose middle is further than this from the joint's zero gets a note: LeRobot's
/// degrees are centred on the calibrated range's middle.
const OFF_CENTRE_NOTE_DEG: f32 = 1.0;

impl LeRobotRobot {
    /// Parses a LeRobot robot type (`so101_follower`, `so100_follower`).
    pub fn parse(name: &str) -> Result<Self, String> {
        LEROBOT_ROBOTS
            .into_iter()
            .find(|r| r.name() == name)
            .ok_or_else(|| {
                format!(
                    "unknown LeRobot robot type {name:?} (known: {})",
                    LEROBOT_ROBOTS.map(|r| r.name()).join(", ")
                )
            })
    }

    /// LeRobot's name for it, `info.json`'s `robot_type`.
    pub fn name(self) -> &'static str {
        match self {
            LeRobotRobot::So101Follower => "so101_follower",
            LeRobotRobot::So100Follower => "so100_follower",
            LeRobotRobot::SoFollower => "so_follower",
        }
    }

    /// Its motors, in the order of `observation.state` and `action`.
    pub fn motors(self) -> &'static [&'static str] {
        &SO_MOTORS
    }

    /// The motor recorded 0–100 (closed to open).
    pub fn gripper(self) -> &'static str {
        SO_GRIPPER
    }
}

impl fmt::Display for LeRobotRobot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A joint of the robot file, as a schema needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct FileJoint {
    pub name: String,
    /// A hinge (radians); a slide is metres and has no degrees.
    pub revolute: bool,
    /// `(lower, upper)` in the file; `None` = unlimited.
    pub limits: Option<(f32, f32)>,
}

/// One entry of `observation.state` and `action`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Unit {
    /// The file's own unit (radians or metres).
    Native,
    /// The file's radians in degrees.
    Degrees,
    /// 0 at `closed`, 100 at `open` (file positions).
    Percent { closed: f32, open: f32 },
}

impl Unit {
    fn encode(self, q: f32) -> f32 {
        match self {
            Unit::Native => q,
            Unit::Degrees => q.to_degrees(),
            Unit::Percent { closed, open } => (q - closed) / (open - closed) * 100.0,
        }
    }

    fn decode(self, v: f32) -> f32 {
        match self {
            Unit::Native => v,
            Unit::Degrees => v.to_radians(),
            Unit::Percent { closed, open } => closed + v / 100.0 * (open - closed),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Unit::Native => "file units",
            Unit::Degrees => "deg",
            Unit::Percent { .. } => "% of range",
        }
    }
}

/// How a dataset's `observation.state` and `action` map onto the robot file's joints: names,
/// order, units and `robot_type`.
#[derive(Clone, Debug, PartialEq)]
pub struct Schema {
    robot_type: String,
    /// The LeRobot robot this follows; `None`: the file's joints as they are.
    robot: Option<LeRobotRobot>,
    /// Per dataset entry: its name (without `.pos`), the file joint it holds, its unit.
    entries: Vec<(String, usize, Unit)>,
    /// The file's joint count.
    joints: usize,
    notes: Vec<String>,
}

impl Schema {
    /// The file's joints as they are: `<joint>.pos` in the file's units (radians, metres), in
    /// file order, under the file's own robot name.
    pub fn native(robot_type: &str, joint_names: &[String]) -> Self {
        Self {
            robot_type: robot_type.to_string(),
            robot: None,
            entries: joint_names
                .iter()
                .enumerate()
                .map(|(i, n)| (n.clone(), i, Unit::Native))
                .collect(),
            joints: joint_names.len(),
            notes: Vec::new(),
        }
    }

    /// `robot`'s schema on a file with these actuated joints. Each motor takes the file joint of
    /// its name; a file joint that is no motor, a motor without a joint, a body motor on a slide
    /// and a gripper without a range are errors that say what the file has. `closed` is the
    /// gripper joint's closed position where the scene gives one (its range's end nearer to it
    /// is 0); without one, the lower end.
    pub fn for_robot(
        robot: LeRobotRobot,
        joints: &[FileJoint],
        closed: Option<f32>,
    ) -> Result<Self, String> {
        let motors = robot.motors();
        let file_names = || {
            joints
                .iter()
                .map(|j| j.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let fit_error = |what: String| {
            format!(
                "the robot does not fit {robot}: {what} ({robot}'s motors: {}; the file's \
                 actuated joints: {})",
                motors.join(", "),
                file_names()
            )
        };
        if let Some(extra) = joints.iter().find(|j| !motors.contains(&j.name.as_str())) {
            return Err(fit_error(format!(
                "the file's joint {:?} is none of its motors",
                extra.name
            )));
        }
        let mut entries = Vec::with_capacity(motors.len());
        let mut notes = Vec::new();
        for &motor in motors {
            let Some(index) = joints.iter().position(|j| j.name == motor) else {
                return Err(fit_error(format!("the file has no joint {motor:?}")));
            };
            let joint = &joints[index];
            let unit = if motor == robot.gripper() {
                let Some((lo, hi)) = joint.limits.filter(|(lo, hi)| hi > lo) else {
                    return Err(fit_error(format!(
                        "its gripper {motor:?} has no range in the file, and 0–100 runs over it"
                    )));
                };
                let closed_end = match closed {
                    Some(c) if (c - hi).abs() < (c - lo).abs() => hi,
                    _ => lo,
                };
                let open_end = if closed_end == lo { hi } else { lo };
                Unit::Percent {
                    closed: closed_end,
                    open: open_end,
                }
            } else {
                if !joint.revolute {
                    return Err(fit_error(format!(
                        "its motor {motor:?} is a slide joint in the file, and LeRobot records \
                         it in degrees"
                    )));
                }
                if let Some((lo, hi)) = joint.limits {
                    let middle = (0.5 * (lo + hi)).to_degrees();
                    if middle.abs() > OFF_CENTRE_NOTE_DEG {
                        notes.push(format!(
                            "{motor}: the file's range is centred {middle:+.1}° from its zero; \
                             LeRobot's degrees are centred on the calibrated range, so an arm \
                             calibrated over this range reads {:.1}° where the file says 0°",
                            -middle
                        ));
                    }
                }
                Unit::Degrees
            };
            entries.push((motor.to_string(), index, unit));
        }
        Ok(Self {
            robot_type: robot.name().to_string(),
            robot: Some(robot),
            entries,
            joints: joints.len(),
            notes,
        })
    }

    /// `info.json`'s `robot_type`.
    pub fn robot_type(&self) -> &str {
        &self.robot_type
    }

    /// The LeRobot robot it follows, `None` for [`Schema::native`].
    pub fn robot(&self) -> Option<LeRobotRobot> {
        self.robot
    }

    /// The entries' names without `.pos` (`DatasetSpec::joint_names`), in dataset order.
    pub fn names(&self) -> Vec<String> {
        self.entries.iter().map(|(n, _, _)| n.clone()).collect()
    }

    /// Each entry's unit, for reports: `deg`, `% of range` or `file units`.
    pub fn units(&self) -> Vec<&'static str> {
        self.entries.iter().map(|(_, _, u)| u.name()).collect()
    }

    /// What the mapping assumes where the file differs from LeRobot's calibration (one line
    /// each), for the log.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The file's joint positions (file order) as a dataset row (dataset order and units).
    pub fn row_of(&self, q: &[f32]) -> Vec<f32> {
        self.entries
            .iter()
            .map(|&(_, j, unit)| unit.encode(q.get(j).copied().unwrap_or(f32::NAN)))
            .collect()
    }

    /// A dataset row back in file order and units; a joint the row does not hold is NaN (every
    /// schema here holds every joint).
    pub fn joints_of(&self, row: &[f32]) -> Vec<f32> {
        let mut q = vec![f32::NAN; self.joints];
        for (k, &(_, j, unit)) in self.entries.iter().enumerate() {
            if let Some(&v) = row.get(k) {
                q[j] = unit.decode(v);
            }
        }
        q
    }

    /// A dataset difference in dataset units from a difference of `deg` degrees: degrees stay,
    /// a percentage is taken as is (1 % of the SO gripper's range is about 1.1°), file units
    /// (radians) are converted.
    pub fn threshold_of(&self, deg: f32) -> Vec<f32> {
        self.entries
            .iter()
            .map(|&(_, _, unit)| match unit {
                Unit::Native => deg.to_radians(),
                Unit::Degrees | Unit::Percent { .. } => deg,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hinge(name: &str, lo: f32, hi: f32) -> FileJoint {
        FileJoint {
            name: name.into(),
            revolute: true,
            limits: Some((lo, hi)),
        }
    }

    /// The SO-101 file's joints (so101_new_calib.xml), in its order.
    fn so101() -> Vec<FileJoint> {
        vec![
            hinge("shoulder_pan", -1.919_862_2, 1.919_862_2),
            hinge("shoulder_lift", -1.745_329_3, 1.745_329_3),
            hinge("elbow_flex", -1.69, 1.69),
            hinge("wrist_flex", -1.658_062_8, 1.658_062_7),
            hinge("wrist_roll", -2.743_847_3, 2.841_206_3),
            hinge("gripper", -0.174_533, 1.745_329_2),
        ]
    }

    #[test]
    fn so101_follower_is_degrees_and_a_gripper_from_closed_to_open() {
        let s = Schema::for_robot(LeRobotRobot::So101Follower, &so101(), Some(-0.17)).unwrap();
        assert_eq!(s.robot_type(), "so101_follower");
        assert_eq!(s.names(), SO_MOTORS.map(String::from).to_vec());
        let q = [0.5, -0.25, 1.0, 0.0, -1.5, -0.174_533];
        let row = s.row_of(&q);
        assert!((row[0] - 28.647_89).abs() < 1e-3, "{row:?}");
        assert!((row[4] + 85.943_67).abs() < 1e-3, "{row:?}");
        assert!(row[5].abs() < 1e-4, "closed is 0: {row:?}");
        let open = s.row_of(&[0.0, 0.0, 0.0, 0.0, 0.0, 1.745_329_2]);
        assert!((open[5] - 100.0).abs() < 1e-3, "open is 100: {open:?}");
        let back = s.joints_of(&row);
        for (a, b) in q.iter().zip(&back) {
            assert!((a - b).abs() < 1e-5, "{q:?} -> {row:?} -> {back:?}");
        }
        // The wrist roll's range is centred 2.8° off its zero: the log says what that means.
        assert_eq!(s.notes().len(), 1, "{:?}", s.notes());
        assert!(s.notes()[0].starts_with("wrist_roll: the file's range is centred +2.8°"));
    }

    #[test]
    fn the_motors_follow_lerobots_order_whatever_the_files_order() {
        let mut joints = so101();
        joints.reverse();
        let s = Schema::for_robot(LeRobotRobot::So100Follower, &joints, None).unwrap();
        assert_eq!(s.names()[0], "shoulder_pan");
        // File order reversed: the file's first joint is the gripper, the dataset's last.
        let mut q = [0.0; 6];
        q[5] = 1.0; // shoulder_pan
        q[0] = 1.745_329_2; // gripper open
        let row = s.row_of(&q);
        assert!((row[0] - 57.295_78).abs() < 1e-3 && (row[5] - 100.0).abs() < 1e-3);
        assert!((s.joints_of(&row)[5] - 1.0).abs() < 1e-6);
    }

    #[test]
    fn a_robot_that_does_not_fit_is_an_error_that_says_why() {
        let mut extra = so101();
        extra.push(hinge("finger2", 0.0, 1.0));
        let e = Schema::for_robot(LeRobotRobot::So101Follower, &extra, None).unwrap_err();
        assert!(
            e.contains("the file's joint \"finger2\" is none of its motors"),
            "{e}"
        );
        let missing: Vec<FileJoint> = so101().into_iter().take(5).collect();
        let e = Schema::for_robot(LeRobotRobot::So101Follower, &missing, None).unwrap_err();
        assert!(e.contains("the file has no joint \"gripper\""), "{e}");
        assert!(
            e.contains("the file's actuated joints: shoulder_pan"),
            "{e}"
        );
        let mut unlimited = so101();
        unlimited[5].limits = None;
        let e = Schema::for_robot(LeRobotRobot::So101Follower, &unlimited, None).unwrap_err();
        assert!(e.contains("has no range in the file"), "{e}");
        let mut slide = so101();
        slide[1].revolute = false;
        let e = Schema::for_robot(LeRobotRobot::So101Follower, &slide, None).unwrap_err();
        assert!(e.contains("\"shoulder_lift\" is a slide joint"), "{e}");
        let e = LeRobotRobot::parse("koch_follower").unwrap_err();
        assert!(
            e.contains("known: so101_follower, so100_follower, so_follower"),
            "{e}"
        );
    }

    #[test]
    fn a_gripper_closed_at_its_upper_end_reads_0_there() {
        let s = Schema::for_robot(LeRobotRobot::So101Follower, &so101(), Some(1.7)).unwrap();
        let row = s.row_of(&[0.0, 0.0, 0.0, 0.0, 0.0, 1.745_329_2]);
        assert!(row[5].abs() < 1e-3, "{row:?}");
    }

    #[test]
    fn native_rows_are_the_files_joints_as_they_are() {
        let names = vec!["a".to_string(), "b".to_string()];
        let s = Schema::native("arm6", &names);
        assert_eq!(s.robot_type(), "arm6");
        assert_eq!(s.robot(), None);
        assert_eq!(s.row_of(&[0.1, 0.2]), vec![0.1, 0.2]);
        assert_eq!(s.joints_of(&[0.1, 0.2]), vec![0.1, 0.2]);
        assert!((s.threshold_of(5.0)[0] - 0.087_266).abs() < 1e-5);
    }
}
