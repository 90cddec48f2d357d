//! MetaSim trajectory v2 as typed Rust: the demos, their frames and bodies, and how each becomes
//! a file's value tree again ([`Trajectories::to_value`]); reading one out of a tree is `de.rs`.
//!
//! The shape (docs/protocols/metasim.md): `{robot: [{init_state, actions: [{dof_pos_target:
//! {joint: v}}], states: [{name: {pos, rot (w x y z), dof_pos: {joint: v}}}], extra?}]}`.
//! `actions` and `states` need not have the same length (MetaSim records states at a decimation).
//! Keys this module gives no type to are kept in `other` fields and written back, so a load/save
//! cycle does not lose what MetaSim or a later version adds.

use thiserror::Error;

use super::value::Value;

/// Joint name → value, in the order the file (or the recorder) gave them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct JointValues(pub Vec<(String, f64)>);

impl JointValues {
    pub fn get(&self, joint: &str) -> Option<f64> {
        self.0
            .iter()
            .find(|(name, _)| name == joint)
            .map(|&(_, v)| v)
    }

    /// Sets `joint`, keeping its place if it is already present.
    pub fn set(&mut self, joint: &str, value: f64) {
        match self.0.iter_mut().find(|(name, _)| name == joint) {
            Some(entry) => entry.1 = value,
            None => self.0.push((joint.to_owned(), value)),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.0.iter().map(|(name, v)| (name.as_str(), *v))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The entries sorted by joint name: MetaSim's order for vector (tensor) actions.
    pub fn alphabetical(&self) -> Vec<(&str, f64)> {
        let mut out: Vec<_> = self.iter().collect();
        out.sort_by(|a, b| a.0.cmp(b.0));
        out
    }
}

impl<S: Into<String>> FromIterator<(S, f64)> for JointValues {
    fn from_iter<I: IntoIterator<Item = (S, f64)>>(iter: I) -> Self {
        JointValues(iter.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}

/// One object's or robot's state in a frame. `rot` is a quaternion w first, as MetaSim writes it.
#[derive(Clone, Debug, PartialEq)]
pub struct BodyState {
    pub pos: [f64; 3],
    pub rot: [f64; 4],
    pub vel: Option<[f64; 3]>,
    pub ang_vel: Option<[f64; 3]>,
    pub dof_pos: Option<JointValues>,
    pub dof_vel: Option<JointValues>,
    /// Keys without a type here (e.g. `dof_pos_target`), written back unchanged.
    pub other: Vec<(String, Value)>,
}

impl BodyState {
    /// A body at `pos` with orientation `rot` (w x y z) and nothing else.
    pub fn new(pos: [f64; 3], rot: [f64; 4]) -> Self {
        BodyState {
            pos,
            rot,
            vel: None,
            ang_vel: None,
            dof_pos: None,
            dof_vel: None,
            other: Vec::new(),
        }
    }
}

/// Every body's state at one instant, by name in a stable order. `init_state` has this shape too.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StateFrame(pub Vec<(String, BodyState)>);

impl StateFrame {
    pub fn get(&self, name: &str) -> Option<&BodyState> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, b)| b)
    }

    /// Sets `name`'s state, keeping its place if it is already present.
    pub fn set(&mut self, name: &str, body: BodyState) {
        match self.0.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 = body,
            None => self.0.push((name.to_owned(), body)),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &BodyState)> {
        self.0.iter().map(|(n, b)| (n.as_str(), b))
    }
}

/// One control step's command: joint position targets (MetaSim's basic action).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActionFrame {
    pub dof_pos_target: JointValues,
    pub other: Vec<(String, Value)>,
}

impl ActionFrame {
    pub fn new(dof_pos_target: JointValues) -> Self {
        ActionFrame {
            dof_pos_target,
            other: Vec::new(),
        }
    }
}

/// One recorded episode of one robot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Demo {
    pub init_state: StateFrame,
    pub actions: Vec<ActionFrame>,
    pub states: Vec<StateFrame>,
    /// MetaSim's free-form `extra`, present iff the file had the key.
    pub extra: Option<Value>,
    pub other: Vec<(String, Value)>,
}

/// A whole trajectory file: demos grouped by robot name, in file order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trajectories {
    pub robots: Vec<(String, Vec<Demo>)>,
}

impl Trajectories {
    pub fn demos(&self, robot: &str) -> Option<&[Demo]> {
        self.robots
            .iter()
            .find(|(n, _)| n == robot)
            .map(|(_, d)| d.as_slice())
    }

    /// Appends `demo` to `robot`'s list, creating it at the end if it is new.
    pub fn push_demo(&mut self, robot: &str, demo: Demo) {
        match self.robots.iter_mut().find(|(n, _)| n == robot) {
            Some((_, demos)) => demos.push(demo),
            None => self.robots.push((robot.to_owned(), vec![demo])),
        }
    }

    /// The file's value tree. Typed keys come first in a fixed order, then `other` keys.
    pub fn to_value(&self) -> Value {
        Value::Dict(
            self.robots
                .iter()
                .map(|(robot, demos)| {
                    (
                        robot.clone(),
                        Value::List(demos.iter().map(demo_to_value).collect()),
                    )
                })
                .collect(),
        )
    }
}

/// Why a value tree is not a v2 trajectory.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ShapeError {
    #[error("{robot} demo {demo}: {field} is required")]
    Missing {
        robot: String,
        demo: usize,
        field: &'static str,
    },
    /// `path` is JSONPath-like: `$.arm6[0].states[12].cube_red.rot`.
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

fn floats(xs: &[f64]) -> Value {
    Value::List(xs.iter().map(|&x| Value::Float(x)).collect())
}

fn joints_to_value(j: &JointValues) -> Value {
    Value::Dict(
        j.0.iter()
            .map(|(k, v)| (k.clone(), Value::Float(*v)))
            .collect(),
    )
}

fn body_to_value(b: &BodyState) -> Value {
    let mut out = vec![
        ("pos".to_owned(), floats(&b.pos)),
        ("rot".to_owned(), floats(&b.rot)),
    ];
    if let Some(v) = &b.vel {
        out.push(("vel".to_owned(), floats(v)));
    }
    if let Some(v) = &b.ang_vel {
        out.push(("ang_vel".to_owned(), floats(v)));
    }
    if let Some(j) = &b.dof_pos {
        out.push(("dof_pos".to_owned(), joints_to_value(j)));
    }
    if let Some(j) = &b.dof_vel {
        out.push(("dof_vel".to_owned(), joints_to_value(j)));
    }
    out.extend(b.other.iter().cloned());
    Value::Dict(out)
}

pub(super) fn state_to_value(s: &StateFrame) -> Value {
    Value::Dict(
        s.0.iter()
            .map(|(n, b)| (n.clone(), body_to_value(b)))
            .collect(),
    )
}

pub(super) fn action_to_value(a: &ActionFrame) -> Value {
    let mut out = vec![(
        "dof_pos_target".to_owned(),
        joints_to_value(&a.dof_pos_target),
    )];
    out.extend(a.other.iter().cloned());
    Value::Dict(out)
}

fn demo_to_value(d: &Demo) -> Value {
    let mut out = vec![
        ("init_state".to_owned(), state_to_value(&d.init_state)),
        (
            "actions".to_owned(),
            Value::List(d.actions.iter().map(action_to_value).collect()),
        ),
        (
            "states".to_owned(),
            Value::List(d.states.iter().map(state_to_value).collect()),
        ),
    ];
    if let Some(extra) = &d.extra {
        out.push(("extra".to_owned(), extra.clone()));
    }
    out.extend(d.other.iter().cloned());
    Value::Dict(out)
}
