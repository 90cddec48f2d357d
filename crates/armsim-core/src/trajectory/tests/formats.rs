//! Trajectory file formats: Python-made fixtures, Python reading our files, round trips in
//! every format, and shape errors with their paths.

use super::*;

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
fn state_joint_errors_carry_the_joint_path() {
    let mut v = sample(false).to_value();
    edit(
        &mut v,
        &["arm6", "0", "states", "3", "arm6", "dof_pos", "joint2"],
        Value::from("x"),
    );
    assert_eq!(
        shape_error(&v),
        "$.arm6[0].states[3].arm6.dof_pos.joint2: expected a number, found a string"
    );
}

#[test]
fn typed_shapes_deserialize_from_json_directly() {
    // The typed shapes are serde `Deserialize`: a JSON string reads straight into them, the
    // same as through the value tree, with ints widened to floats and extra keys kept.
    let t = sample(false);
    let json = serde_json::to_string(&t.to_value()).unwrap();
    let direct: Trajectories = serde_json::from_str(&json).unwrap();
    assert_eq!(direct, t);
    let body: BodyState =
        serde_json::from_str(r#"{"pos": [1, 2, 3], "rot": [1, 0, 0, 0], "vel": null, "m": 5}"#)
            .unwrap();
    assert_eq!(body.pos, [1.0, 2.0, 3.0]);
    assert_eq!(body.vel, None);
    assert_eq!(body.other, vec![("m".to_owned(), Value::Int(5))]);
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
