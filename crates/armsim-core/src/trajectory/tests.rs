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

#[test]
fn python_made_fixtures_load_identically_in_every_format() {
    let expected = read_value(fixture("metasim.json")).unwrap();
    assert_eq!(expected.as_dict().unwrap().len(), 2, "franka and arm6");
    for name in [
        "metasim.json.gz",
        "metasim_p2.pkl",
        "metasim_p3.pkl",
        "metasim_p4.pkl",
        "metasim_p5.pkl",
        "metasim_p2.pkl.gz",
        "metasim_p4.pkl.gz",
    ] {
        let v = read_value(fixture(name)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(v, expected, "{name}");
    }
}

#[test]
fn python_made_fixture_has_the_metasim_shape() {
    let t = load(fixture("metasim_p4.pkl")).unwrap();
    let names: Vec<&str> = t.robots.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["franka", "arm6"]);
    let franka = t.demos("franka").unwrap();
    assert_eq!(franka.len(), 2);
    let d = &franka[0];
    assert_eq!((d.actions.len(), d.states.len()), (12, 3));
    assert_eq!((franka[1].actions.len(), franka[1].states.len()), (5, 3));
    let bodies: Vec<&str> = d.init_state.iter().map(|(n, _)| n).collect();
    assert_eq!(bodies, ["franka", "cube_red", "table"]);
    let arm = d.init_state.get("franka").unwrap();
    assert_eq!(arm.pos, [0.0; 3], "ints read as numbers");
    assert_eq!(arm.rot, [1.0, 0.0, 0.0, 0.0]);
    let dof = arm.dof_pos.as_ref().unwrap();
    assert_eq!(dof.0[0].0, "panda_joint1", "file order, not alphabetical");
    assert_eq!(dof.get("panda_joint2"), Some(0.841471));
    assert_eq!(dof.alphabetical()[0].0, "panda_finger_joint1");
    let cube = d.states[2].get("cube_red").unwrap();
    assert_eq!(cube.pos, [0.5, 0.0, 0.025 + 0.001 * 8.0]);
    assert_eq!(cube.vel.unwrap()[0], 0.008);
    assert_eq!(cube.ang_vel.unwrap()[2].to_bits(), (-0.0f64).to_bits());
    assert!(
        d.states[0].get("table").unwrap().dof_pos.is_none(),
        "None reads as absent"
    );
    assert_eq!(d.actions[11].dof_pos_target.len(), 9);
    let extra = d.extra.as_ref().unwrap();
    assert_eq!(
        extra.get("big"),
        Some(&Value::List(vec![
            Value::Int(1 << 40),
            Value::Int(i64::MIN),
            Value::Int(i64::MAX)
        ]))
    );
    assert_eq!(extra.get("note"), Some(&Value::from("Würfel ✓")));
    assert_eq!(d.other, vec![("task".to_owned(), Value::from("pick_cube"))]);
}

#[test]
fn multi_frame_python_pickles_load() {
    let p4 = load(fixture("large_p4.pkl.gz")).unwrap();
    let p2 = load(fixture("large_p2.pkl.gz")).unwrap();
    assert_eq!(p4.to_value(), p2.to_value());
    let d = &p4.demos("franka").unwrap()[0];
    assert_eq!((d.actions.len(), d.states.len()), (600, 150));
    assert_eq!(
        d.states[149].get("cube_red").unwrap().pos[2],
        0.025 + 0.001 * 596.0
    );
}

#[test]
fn missing_init_state_names_robot_and_demo() {
    let err = load(fixture("missing_init_state.json")).unwrap_err();
    assert!(
        matches!(&err, TrajectoryError::Shape { source: ShapeError::Missing { robot, demo: 1, field: "init_state" }, .. } if robot == "franka"),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .ends_with("franka demo 1: init_state is required"),
        "{err}"
    );
}

#[test]
fn object_pickles_are_refused_with_opcode_and_offset() {
    let err = load(fixture("object_stack_global_p4.pkl")).unwrap_err();
    let TrajectoryError::Codec {
        source: CodecError::Pickle(PickleError::ObjectOpcode { name, offset }),
        ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(*name, "STACK_GLOBAL");
    assert!(*offset > 0);
    let text = err.to_string();
    assert!(
        text.contains("object_stack_global_p4.pkl: pickle opcode STACK_GLOBAL at byte"),
        "{text}"
    );
    assert!(
        text.contains("numpy/torch objects cannot be loaded; save plain lists"),
        "{text}"
    );

    let err = read_value(fixture("object_global_p2.pkl")).unwrap_err();
    assert!(
        matches!(
            err,
            TrajectoryError::Codec {
                source: CodecError::Pickle(PickleError::ObjectOpcode { name: "GLOBAL", .. }),
                ..
            }
        ),
        "{err:?}"
    );
}

/// Replaces the value at a path of dict keys / list indices.
fn edit(v: &mut Value, path: &[&str], new: Value) {
    let mut at = v;
    for seg in path {
        at = match at {
            Value::Dict(entries) => &mut entries.iter_mut().find(|(k, _)| k == seg).unwrap().1,
            Value::List(items) => &mut items[seg.parse::<usize>().unwrap()],
            _ => panic!("bad path"),
        };
    }
    *at = new;
}

fn shape_error(v: &Value) -> String {
    Trajectories::from_value(v).unwrap_err().to_string()
}

#[test]
fn type_errors_carry_a_path() {
    let good = sample(false).to_value();
    let cases: [(&[&str], Value, &str); 7] = [
        (
            &["arm6", "0", "states", "3", "cube_red", "rot"],
            Value::List(vec![Value::Float(1.0); 3]),
            "$.arm6[0].states[3].cube_red.rot: expected 4 numbers, found a list of 3",
        ),
        (
            &["arm6", "0", "states", "1", "arm6", "pos"],
            Value::List(vec![Value::Float(1.0), Value::from("x"), Value::Float(1.0)]),
            "$.arm6[0].states[1].arm6.pos[1]: expected a number, found a string",
        ),
        (
            &["arm6", "1", "actions", "2", "dof_pos_target", "joint3"],
            Value::Bool(true),
            "$.arm6[1].actions[2].dof_pos_target.joint3: expected a number, found a bool",
        ),
        (
            &["arm6", "0", "actions", "0", "dof_pos_target"],
            Value::List(vec![]),
            "$.arm6[0].actions[0].dof_pos_target: expected a dict of joint name to number, found a list of 0",
        ),
        (
            &["arm6", "0", "init_state", "cube_red"],
            Value::Dict(vec![("pos".into(), Value::List(vec![Value::Int(0); 3]))]),
            "$.arm6[0].init_state.cube_red: rot is required",
        ),
        (
            &["gripper4"],
            Value::Dict(vec![]),
            "$.gripper4: expected a list of demos, found a dict of 0",
        ),
        (
            &["arm6", "0", "actions"],
            Value::None,
            "arm6 demo 0: actions is required",
        ),
    ];
    for (path, new, message) in cases {
        let mut v = good.clone();
        edit(&mut v, path, new);
        assert_eq!(shape_error(&v), message);
    }
    assert_eq!(
        shape_error(&Value::List(vec![])),
        "$: expected a dict of robot name to a list of demos, found a list of 0"
    );
    let mut odd = good.clone();
    let Value::Dict(robots) = &mut odd else {
        unreachable!()
    };
    robots[0].0 = "arm 6".into();
    edit(
        &mut odd,
        &["arm 6", "0", "states", "0", "cube_red", "vel"],
        Value::Int(1),
    );
    assert_eq!(
        shape_error(&odd),
        "$[\"arm 6\"][0].states[0].cube_red.vel: expected 3 numbers, found an int"
    );
}

#[test]
fn every_format_round_trips() {
    let dir = TempDir::new();
    let t = sample(false);
    for name in ALL {
        let path = dir.join(name);
        save(&t, &path).unwrap();
        let back = load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(back.to_value(), t.to_value(), "{name}");
        assert_eq!(back, t, "{name}");
    }
    assert_eq!(
        dir.files(),
        ["t.json", "t.json.gz", "t.pkl", "t.pkl.gz"],
        "no .tmp left behind"
    );
}

#[test]
fn pickle_keeps_non_finite_floats_and_json_refuses_them() {
    let dir = TempDir::new();
    let t = sample(true);
    for name in ["t.pkl", "t.pkl.gz"] {
        save(&t, dir.join(name)).unwrap();
        assert_eq!(
            load(dir.join(name)).unwrap().to_value(),
            t.to_value(),
            "{name}"
        );
    }
    // A failed save leaves the file that was there before.
    save(&sample(false), dir.join("t.json")).unwrap();
    let err = save(&t, dir.join("t.json")).unwrap_err();
    assert!(
        err.to_string()
            .contains("$.arm6[0].states[0].cube_red.vel[0] is NaN, which JSON cannot hold"),
        "{err}"
    );
    assert_eq!(load(dir.join("t.json")).unwrap(), sample(false));
    assert_eq!(dir.files(), ["t.json", "t.pkl", "t.pkl.gz"]);
}

#[test]
fn format_is_chosen_by_extension() {
    let f = |p: &str| Format::from_path(Path::new(p));
    assert_eq!(f("a/b.json").unwrap(), Format::Json);
    assert_eq!(f("b.JSON.GZ").unwrap(), Format::JsonGz);
    assert_eq!(f("b.pkl").unwrap(), Format::Pickle);
    assert_eq!(f("x.y.pkl.gz").unwrap(), Format::PickleGz);
    for bad in ["b.yaml", "b.gz", "b.pickle", ".pkl", "pkl", "b.pkl.tmp"] {
        let err = f(bad).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("expected one of .json, .json.gz, .pkl, .pkl.gz"),
            "{bad}: {err}"
        );
    }
    for (name, format) in [("a.json.gz", Format::JsonGz), ("a.pkl", Format::Pickle)] {
        assert!(name.ends_with(format.extension()));
    }
}

#[test]
fn bad_files_are_errors_naming_the_file() {
    let dir = TempDir::new();
    let missing = load(dir.join("nope.pkl")).unwrap_err();
    assert!(matches!(missing, TrajectoryError::Io { .. }), "{missing:?}");
    std::fs::write(dir.join("bad.pkl.gz"), b"not gzip").unwrap();
    let err = load(dir.join("bad.pkl.gz")).unwrap_err();
    assert!(
        matches!(
            err,
            TrajectoryError::Codec {
                source: CodecError::Gzip(_),
                ..
            }
        ),
        "{err:?}"
    );
    std::fs::write(dir.join("bad.json"), b"{\"a\": [1,").unwrap();
    let err = load(dir.join("bad.json")).unwrap_err();
    assert!(err.to_string().contains("bad.json: invalid JSON"), "{err}");
}

/// Runs python3, or fails with a hint: Python's reading our files is the point of the format.
fn python(args: &[&str]) -> String {
    if std::env::var_os("ARMSIM_SKIP_PYTHON").is_some() {
        return String::new();
    }
    let out = Command::new("python3").args(args).output().expect(
        "python3 is needed to check our pickles against CPython (ARMSIM_SKIP_PYTHON=1 skips)",
    );
    assert!(
        out.status.success(),
        "python3 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Every opcode choice the writer makes: int widths, string lengths, memo past 256 entries,
/// batches past 1000 items, single-item containers, several frames.
fn tricky_value() -> Value {
    let ints = [
        0,
        255,
        256,
        65535,
        65536,
        -1,
        i32::MIN as i64,
        i32::MAX as i64 + 1,
        i64::MIN,
        i64::MAX,
    ];
    Value::Dict(vec![
        (
            "ints".into(),
            Value::List(ints.into_iter().map(Value::Int).collect()),
        ),
        (
            "floats".into(),
            Value::List(
                [-0.0, 0.1, 1e-310, f64::MAX]
                    .into_iter()
                    .map(Value::Float)
                    .collect(),
            ),
        ),
        (
            "strings".into(),
            Value::List((0..300).map(|i| Value::Str(format!("name_{i}"))).collect()),
        ),
        (
            "again".into(),
            Value::List(
                (0..300)
                    .rev()
                    .map(|i| Value::Str(format!("name_{i}")))
                    .collect(),
            ),
        ),
        ("long".into(), Value::Str("ü".repeat(300))),
        (
            "one".into(),
            Value::Dict(vec![("k".into(), Value::List(vec![Value::None]))]),
        ),
        (
            "empty".into(),
            Value::Dict(vec![("".into(), Value::List(vec![]))]),
        ),
        (
            "bools".into(),
            Value::List(vec![Value::Bool(true), Value::Bool(false)]),
        ),
        (
            "many".into(),
            Value::List((0..25_000).map(|i| Value::Float(i as f64 / 7.0)).collect()),
        ),
    ])
}

#[test]
fn python_reads_what_we_write() {
    const READ: &str = "import gzip,io,json,pickle,sys\n\
        p = sys.argv[1]\n\
        raw = open(p, 'rb').read()\n\
        raw = gzip.decompress(raw) if p.endswith('.gz') else raw\n\
        if '.pkl' in p:\n\
        \x20   v = pickle.loads(raw)\n\
        \x20   assert v == pickle._Unpickler(io.BytesIO(raw)).load(), 'pure-Python unpickler differs'\n\
        else:\n\
        \x20   v = json.loads(raw)\n\
        print(json.dumps(v))\n";
    let dir = TempDir::new();
    let cases = [
        ("tricky.pkl", tricky_value()),
        ("tricky.pkl.gz", tricky_value()),
        ("tricky.json.gz", tricky_value()),
        ("sample.pkl", sample(false).to_value()),
        ("sample.json", sample(false).to_value()),
    ];
    for (name, value) in cases {
        let path = dir.join(name);
        write_value(&value, &path).unwrap();
        let out = python(&["-c", READ, path.to_str().unwrap()]);
        if out.is_empty() {
            continue;
        }
        let back: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(back, value, "{name}");
    }
    // The exact check from the task, on a plain pickle.
    let path = dir.join("sample.pkl");
    let out = python(&[
        "-c",
        "import pickle,json,sys; print(json.dumps(pickle.load(open(sys.argv[1],'rb'))))",
        path.to_str().unwrap(),
    ]);
    if !out.is_empty() {
        assert_eq!(
            serde_json::from_str::<Value>(&out).unwrap(),
            sample(false).to_value()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn json_round_trips_finite_values(v in arb_value(true)) {
        let mut bytes = Vec::new();
        Format::JsonGz.encode(&v, &mut bytes).unwrap();
        prop_assert_eq!(Format::JsonGz.decode(&bytes).unwrap(), v);
    }

    #[test]
    fn pickle_gz_round_trips_any_value(v in arb_value(false)) {
        let mut bytes = Vec::new();
        Format::PickleGz.encode(&v, &mut bytes).unwrap();
        prop_assert_eq!(Format::PickleGz.decode(&bytes).unwrap(), v);
    }

    #[test]
    fn typed_shape_never_panics(v in arb_value(false)) {
        let _ = Trajectories::from_value(&Value::Dict(vec![("r".into(), Value::List(vec![v]))]));
    }
}

// Recording.

#[test]
fn recorder_can_live_in_an_ecs_resource() {
    fn send_sync<T: Send + Sync + 'static>() {}
    send_sync::<Recorder>();
    send_sync::<Trajectories>();
    send_sync::<TrajectoryError>();
}

fn record_sample(path: &Path, options: RecorderOptions, actions: usize) -> Recorder {
    let mut rec = Recorder::create_with(path, "arm6", &frame(0, false), options).unwrap();
    for t in 0..actions {
        rec.push_action(&ActionFrame::new(joints(t))).unwrap();
        if t % 4 == 0 {
            rec.push_state(&frame(t, false)).unwrap();
        }
    }
    rec
}

#[test]
fn recorder_finish_writes_every_format() {
    let dir = TempDir::new();
    for name in ALL {
        let path = dir.join(name);
        let mut rec = Recorder::create(&path, "arm6", &frame(0, false)).unwrap();
        let d = demo(20, 4, false);
        for (t, a) in d.actions.iter().enumerate() {
            rec.push_action(a).unwrap();
            if t % 4 == 0 {
                rec.push_state(&d.states[t / 4]).unwrap();
            }
        }
        rec.set_extra(d.extra.as_ref().unwrap()).unwrap();
        rec.new_demo(&frame(1, false)).unwrap();
        rec.push_action(&ActionFrame::new(joints(1))).unwrap();
        assert!(rec.journal_path().exists());
        let summary = rec.finish().unwrap();
        assert_eq!(
            (
                summary.demos,
                summary.actions,
                summary.states,
                summary.dropped_partial_line
            ),
            (2, 21, 5, false)
        );
        assert!(
            !journal_path(&path).exists(),
            "journal removed after finish"
        );
        let t = load(&path).unwrap();
        let demos = t.demos("arm6").unwrap();
        let want = Demo { other: vec![], ..d };
        assert_eq!(demos[0], want, "{name}");
        assert_eq!(demos[1].init_state, frame(1, false));
        assert_eq!(demos[1].actions, vec![ActionFrame::new(joints(1))]);
    }
    assert_eq!(dir.files(), ALL);
}

#[test]
fn journal_keeps_non_finite_floats() {
    let dir = TempDir::new();
    let path = dir.join("nan.pkl.gz");
    let mut rec = Recorder::create(&path, "arm6", &frame(0, false)).unwrap();
    rec.push_state(&frame(1, true)).unwrap();
    let mut inf = frame(2, false);
    inf.0[1].1.vel = Some([f64::INFINITY, f64::NEG_INFINITY, -0.0]);
    rec.push_state(&inf).unwrap();
    rec.finish().unwrap();
    let t = load(&path).unwrap();
    let d = &t.demos("arm6").unwrap()[0];
    assert!(d.states[0].get("cube_red").unwrap().vel.unwrap()[0].is_nan());
    assert_eq!(
        d.states[1]
            .get("cube_red")
            .unwrap()
            .vel
            .unwrap()
            .map(f64::to_bits),
        [f64::INFINITY, f64::NEG_INFINITY, -0.0].map(f64::to_bits)
    );
}

#[test]
fn a_killed_recorder_leaves_the_flushed_frames() {
    let dir = TempDir::new();
    // Forgetting the recorder skips every destructor, like SIGKILL: only flushed lines remain.
    let path = dir.join("every.pkl");
    std::mem::forget(record_sample(&path, RecorderOptions::default(), 10));
    let r = recover(&path).unwrap();
    assert_eq!(
        (r.demos, r.actions, r.states, r.dropped_partial_line),
        (1, 10, 3, false)
    );
    let t = load(&path).unwrap();
    let d = &t.demos("arm6").unwrap()[0];
    assert_eq!(d.actions[9], ActionFrame::new(joints(9)));
    assert_eq!(d.states[2], frame(8, false));
    assert!(!journal_path(&path).exists());

    // flush_every = 4: the 13 frames pushed (10 actions, 3 states) were flushed at 4, 8 and 12.
    let path = dir.join("batched.json");
    std::mem::forget(record_sample(&path, RecorderOptions { flush_every: 4 }, 10));
    let r = recover(&path).unwrap();
    assert_eq!(r.actions + r.states, 12);

    // A plain drop (a panic unwinding, an early return) flushes everything.
    let path = dir.join("dropped.json.gz");
    drop(record_sample(
        &path,
        RecorderOptions { flush_every: 100 },
        10,
    ));
    assert_eq!(recover(&path).unwrap().actions, 10);
}

#[test]
fn recovery_drops_a_line_cut_short() {
    let dir = TempDir::new();
    let path = dir.join("torn.pkl");
    drop(record_sample(&path, RecorderOptions::default(), 5));
    let journal = journal_path(&path);
    let mut bytes = std::fs::read(&journal).unwrap();
    bytes.extend_from_slice(b"{\"action\":{\"dof_pos_target\":{\"joint0\":0.");
    std::fs::write(&journal, &bytes).unwrap();
    let (t, dropped) = read_journal(&journal).unwrap();
    assert!(dropped);
    assert_eq!(t.demos("arm6").unwrap()[0].actions.len(), 5);
    let r = recover(&path).unwrap();
    assert_eq!((r.actions, r.states, r.dropped_partial_line), (5, 2, true));

    // A damaged line in the middle is corruption, not a kill: an error with its line number.
    let path = dir.join("corrupt.pkl");
    drop(record_sample(&path, RecorderOptions::default(), 5));
    let journal = journal_path(&path);
    let text = std::fs::read_to_string(&journal)
        .unwrap()
        .replacen("\"action\"", "\"acton\"", 1);
    std::fs::write(&journal, text).unwrap();
    let err = recover(&path).unwrap_err();
    assert!(
        err.to_string().contains("line 3: unknown entry \"acton\""),
        "{err}"
    );
    assert!(journal.exists(), "a failed recovery keeps the journal");
}

#[test]
fn an_unfinished_journal_is_never_overwritten() {
    let dir = TempDir::new();
    let path = dir.join("run.pkl.gz");
    drop(record_sample(&path, RecorderOptions::default(), 2));
    let err = Recorder::create(&path, "arm6", &frame(0, false))
        .err()
        .unwrap();
    assert!(
        matches!(err, TrajectoryError::JournalExists { .. }),
        "{err:?}"
    );
    assert_eq!(recover(&path).unwrap().actions, 2);
    let err = recover(&path).unwrap_err();
    assert!(matches!(err, TrajectoryError::NoJournal { .. }), "{err:?}");
    let err = Recorder::create(dir.join("run.yaml"), "arm6", &frame(0, false))
        .err()
        .unwrap();
    assert!(
        matches!(err, TrajectoryError::UnsupportedExtension { .. }),
        "{err:?}"
    );
}

#[test]
fn a_failed_finish_keeps_the_journal() {
    let dir = TempDir::new();
    let path = dir.join("nan.json");
    let mut rec = Recorder::create(&path, "arm6", &frame(0, false)).unwrap();
    rec.push_state(&frame(1, true)).unwrap();
    let err = rec.finish().unwrap_err();
    assert!(err.to_string().contains("which JSON cannot hold"), "{err}");
    let (t, _) = read_journal(journal_path(&path)).unwrap();
    save(&t, dir.join("nan.pkl")).unwrap();
    assert!(
        load(dir.join("nan.pkl")).unwrap().demos("arm6").unwrap()[0].states[0]
            .get("cube_red")
            .unwrap()
            .vel
            .unwrap()[0]
            .is_nan()
    );
    assert!(!path.exists());
}

const CHILD_DIR: &str = "ARMSIM_TRAJECTORY_KILL_CHILD";

/// A real SIGKILL: this test re-runs itself as a child process that records and then waits to
/// be killed.
#[test]
fn sigkill_leaves_a_recoverable_journal() {
    if let Some(dir) = std::env::var_os(CHILD_DIR) {
        let path = Path::new(&dir).join("killed.pkl.gz");
        let rec = record_sample(&path, RecorderOptions::default(), 100);
        println!("recorded");
        std::thread::sleep(std::time::Duration::from_secs(60));
        drop(rec);
        return;
    }
    let dir = TempDir::new();
    let name = concat!(module_path!(), "::sigkill_leaves_a_recoverable_journal");
    let name = name.split_once("::").map_or(name, |(_, rest)| rest);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_DIR, &dir.0)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        let n = std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
        assert!(n > 0, "the child exited before recording");
        if line.contains("recorded") {
            break;
        }
    }
    child.kill().unwrap();
    assert!(!child.wait().unwrap().success());
    let path = dir.join("killed.pkl.gz");
    assert!(!path.exists());
    let r = recover(&path).unwrap();
    assert_eq!((r.demos, r.actions, r.states), (1, 100, 25));
    assert_eq!(
        load(&path).unwrap().demos("arm6").unwrap()[0].actions[99],
        ActionFrame::new(joints(99))
    );
}
