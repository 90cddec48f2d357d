//! Tests across the trajectory module: Python-made fixtures in every format, Python reading our
//! files, typed round trips, shape errors with paths, and recording with crash recovery.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;

use super::pickle::PickleError;
use super::*;

/// A fresh directory under the system temp dir, removed on drop.
pub(super) struct TempDir(PathBuf);

impl TempDir {
    pub(super) fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("armsim-trajectory-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub(super) fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    fn files(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/trajectories")
        .join(name)
}

/// Values of any shape; floats include -0.0, NaN and infinities unless `finite_only`.
pub(super) fn arb_value(finite_only: bool) -> impl Strategy<Value = Value> {
    let float = if finite_only {
        prop_oneof![
            Just(-0.0),
            Just(0.0),
            Just(f64::MIN_POSITIVE),
            any::<f64>().prop_filter("finite", |x| x.is_finite())
        ]
        .boxed()
    } else {
        prop_oneof![
            Just(-0.0),
            Just(f64::NAN),
            Just(f64::NEG_INFINITY),
            any::<u64>().prop_map(f64::from_bits),
            any::<f64>()
        ]
        .boxed()
    };
    let leaf = prop_oneof![
        Just(Value::None),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        (-70_000i64..70_000).prop_map(Value::Int),
        float.prop_map(Value::Float),
        "\\PC{0,12}".prop_map(Value::Str),
        prop_oneof![Just("pos"), Just("rot"), Just("dof_pos")].prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::List),
            prop::collection::vec(("[a-z]{0,3}", inner), 0..8).prop_map(Value::dict_from_entries),
        ]
    })
}

fn joints(t: usize) -> JointValues {
    (0..8)
        .map(|j| (format!("joint{j}"), (t as f64 * 0.01 + j as f64).sin()))
        .collect()
}

fn frame(t: usize, nan: bool) -> StateFrame {
    let mut arm = BodyState::new([0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]);
    arm.dof_pos = Some(joints(t));
    let mut cube = BodyState::new(
        [0.5, -0.0, 0.025 + t as f64 * 1e-3],
        [0.9238795, 0.0, 0.0, 0.3826834],
    );
    cube.vel = Some([if nan { f64::NAN } else { 0.1 }, 0.0, f64::MIN_POSITIVE]);
    cube.ang_vel = Some([0.0, 0.0, 1e300]);
    cube.other.push(("mass".into(), Value::Float(0.05)));
    StateFrame(vec![("arm6".into(), arm), ("cube_red".into(), cube)])
}

/// A MetaSim-shaped demo: more actions than states, as MetaSim records states at a decimation.
fn demo(actions: usize, decimation: usize, nan: bool) -> Demo {
    Demo {
        init_state: frame(0, false),
        actions: (0..actions).map(|t| ActionFrame::new(joints(t))).collect(),
        states: (0..actions)
            .step_by(decimation)
            .map(|t| frame(t, nan))
            .collect(),
        extra: Some(Value::Dict(vec![("success".into(), Value::Bool(true))])),
        other: vec![("task".into(), Value::from("pick"))],
    }
}

fn sample(nan: bool) -> Trajectories {
    let mut t = Trajectories::default();
    t.push_demo("arm6", demo(20, 4, nan));
    t.push_demo("arm6", demo(3, 1, false));
    t.push_demo("gripper4", Demo::default());
    t
}

const ALL: [&str; 4] = ["t.json", "t.json.gz", "t.pkl", "t.pkl.gz"];

mod formats;
mod record;
