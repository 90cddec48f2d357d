//! Validation of the two direct ROS 2 command topics, `/joint_command` (sensor_msgs/JointState
//! by name) and `/forward_position_controller/commands` (std_msgs/Float64MultiArray in robot
//! joint order), into per-joint goals. Sans-IO and all-or-nothing: a message with one bad
//! field is refused whole with a typed error the bridge logs, so bad input never moves half
//! the arm. Joint limits are not known here; the bridge clamps.

use super::msgs::{Float64MultiArray, JointState};

/// At most this many joint names in one message. No robot of ours comes near it; the cap keeps
/// a hostile message from costing a name lookup per entry, and its error from listing them.
pub const MAX_NAMES: usize = 256;

/// Names and values in error messages are cut to this many characters: they come off the
/// network and end up in a log line.
const SHOWN_CHARS: usize = 64;

/// What one joint of a `/joint_command` message asks for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum JointGoal {
    /// Target position (rad or m).
    Position(f64),
    /// Target velocity (rad/s or m/s).
    Velocity(f64),
    /// Torque or force (N·m or N).
    Effort(f64),
}

/// Why a list of joint names was refused; shared by commands and trajectories, so the two
/// topics word it alike.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum JointNameError {
    #[error("{got} joint names; at most {max} are accepted")]
    TooMany { got: usize, max: usize },
    #[error("unknown joint {name:?} (this robot's joints: {known})")]
    Unknown { name: String, known: String },
    #[error("joint {0:?} is named twice")]
    Duplicate(String),
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CommandError {
    #[error(transparent)]
    Name(#[from] JointNameError),
    #[error("empty command: `name` lists no joints")]
    Empty,
    #[error(
        "`{field}` has {got} values for {names} names; each of position, velocity and effort \
         must be empty or have one value per name"
    )]
    WrongLength {
        field: &'static str,
        names: usize,
        got: usize,
    },
    #[error("no values: position, velocity and effort are all empty")]
    NoValues,
    #[error("`{field}` of joint {joint:?} is {value}, not a finite number")]
    NotFinite {
        joint: String,
        field: &'static str,
        value: f64,
    },
    #[error(
        "`data` has {got} values, but the robot has {expected} joints (one per joint, in the \
         order /joint_states lists them)"
    )]
    WrongCount { expected: usize, got: usize },
    #[error("data[{index}] is {value}, not a finite number")]
    NotFiniteData { index: usize, value: f64 },
}

/// `s` cut to [`SHOWN_CHARS`] characters (with an ellipsis when cut), for error messages.
pub(super) fn shown(s: &str) -> String {
    match s.char_indices().nth(SHOWN_CHARS) {
        Some((end, _)) => format!("{}…", &s[..end]),
        None => s.to_owned(),
    }
}

/// The robot joint index of each name, in the order given: every name known, none twice, at
/// most [`MAX_NAMES`], counted before any lookup so that a huge list costs nothing. Emptiness
/// is the caller's to judge (the message field differs).
pub(super) fn resolve_names(
    names: &[String],
    joints: &[&str],
) -> Result<Vec<usize>, JointNameError> {
    if names.len() > MAX_NAMES {
        return Err(JointNameError::TooMany {
            got: names.len(),
            max: MAX_NAMES,
        });
    }
    let mut indices = Vec::with_capacity(names.len());
    // Indexed by robot joint: two names that resolve to the same joint are a duplicate, and
    // this costs one flag per joint rather than a set of strings.
    let mut seen = vec![false; joints.len()];
    for name in names {
        let Some(index) = joints.iter().position(|j| j == name) else {
            return Err(JointNameError::Unknown {
                name: shown(name),
                known: shown(&joints.join(", ")),
            });
        };
        if std::mem::replace(&mut seen[index], true) {
            return Err(JointNameError::Duplicate(shown(name)));
        }
        indices.push(index);
    }
    Ok(indices)
}

/// The constructor of a [`JointGoal`] kind.
type GoalOf = fn(f64) -> JointGoal;

/// `/joint_command` (sensor_msgs/JointState by name) as goals for the named joints only; the
/// others keep their targets. Per joint, the first non-empty of `position`, `velocity`,
/// `effort` wins. Since each array is either empty or one value per name, that choice is the
/// same for every joint of a message. Every value of every array must
/// be finite, even in an array that does not win, because a NaN anywhere is a broken sender.
/// `joints` are the robot's joint names in robot order; the result pairs robot joint indices
/// with goals, in the message's order.
pub fn joint_command(
    msg: &JointState,
    joints: &[&str],
) -> Result<Vec<(usize, JointGoal)>, CommandError> {
    if msg.name.is_empty() {
        return Err(CommandError::Empty);
    }
    let indices = resolve_names(&msg.name, joints)?;
    let arrays: [(&'static str, &[f64], GoalOf); 3] = [
        ("position", &msg.position, JointGoal::Position),
        ("velocity", &msg.velocity, JointGoal::Velocity),
        ("effort", &msg.effort, JointGoal::Effort),
    ];
    for (field, values, _) in &arrays {
        if !values.is_empty() && values.len() != msg.name.len() {
            return Err(CommandError::WrongLength {
                field,
                names: msg.name.len(),
                got: values.len(),
            });
        }
        if let Some((i, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(CommandError::NotFinite {
                joint: shown(&msg.name[i]),
                field,
                value,
            });
        }
    }
    let Some((_, values, goal)) = arrays.iter().find(|(_, values, _)| !values.is_empty()) else {
        return Err(CommandError::NoValues);
    };
    Ok(indices
        .into_iter()
        .zip(values.iter())
        .map(|(index, &value)| (index, goal(value)))
        .collect())
}

/// `/forward_position_controller/commands` (std_msgs/Float64MultiArray): one finite position
/// per robot joint, in robot joint order, as ros2_control's forward command controller takes
/// them. `layout` is ignored, as that controller ignores it.
pub fn forward_positions(
    msg: &Float64MultiArray,
    joint_count: usize,
) -> Result<Vec<f64>, CommandError> {
    if msg.data.len() != joint_count {
        return Err(CommandError::WrongCount {
            expected: joint_count,
            got: msg.data.len(),
        });
    }
    if let Some((index, &value)) = msg.data.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(CommandError::NotFiniteData { index, value });
    }
    Ok(msg.data.clone())
}

#[cfg(test)]
mod tests;
