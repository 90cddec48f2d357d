//! Recording: every format on finish, the journal, crash recovery (a killed recorder, SIGKILL).

use super::*;

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
    // Like SIGKILL: the buffer is lost, the file closed; only flushed lines remain.
    let path = dir.join("every.pkl");
    record_sample(&path, RecorderOptions::default(), 10).kill();
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
    record_sample(&path, RecorderOptions { flush_every: 4 }, 10).kill();
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
fn a_journal_recovers_by_its_own_name_unless_its_recorder_is_live() {
    let dir = TempDir::new();
    let path = dir.join("live.pkl");
    let mut live = record_sample(&path, RecorderOptions::default(), 3);
    let journal = journal_path(&path);
    assert_eq!(journal_target(&journal), Some(path.clone()));
    let err = recover_journal(&journal, None).unwrap_err();
    assert!(
        matches!(err, TrajectoryError::JournalInUse { .. }),
        "{err:?}"
    );
    assert!(leftover_journals(&dir.0).unwrap().is_empty());
    live.push_action(&ActionFrame::new(joints(3))).unwrap();
    live.kill();
    assert_eq!(leftover_journals(&dir.0).unwrap(), vec![journal.clone()]);
    // Into another file, in another format.
    let other = dir.join("elsewhere.json.gz");
    let r = recover_journal(&journal, Some(&other)).unwrap();
    assert_eq!((r.path.clone(), r.actions, r.states), (other.clone(), 4, 1));
    assert_eq!(
        load(&other).unwrap().demos("arm6").unwrap()[0]
            .actions
            .len(),
        4
    );
    assert!(!journal.exists() && !path.exists());
    let err = recover_journal(&dir.join("run.pkl"), None).unwrap_err();
    assert!(
        matches!(err, TrajectoryError::NotAJournal { .. }),
        "{err:?}"
    );
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
    // While the child records, its journal is locked: no recovery takes it from under it.
    let path = dir.join("killed.pkl.gz");
    let err = recover(&path).unwrap_err();
    assert!(
        matches!(err, TrajectoryError::JournalInUse { .. }),
        "{err:?}"
    );
    assert_eq!(leftover_journals(&dir.0).unwrap(), Vec::<PathBuf>::new());
    child.kill().unwrap();
    assert!(!child.wait().unwrap().success());
    assert!(!path.exists());
    // The kernel dropped the lock with the process: the journal is a leftover now.
    assert_eq!(
        leftover_journals(&dir.0).unwrap(),
        vec![journal_path(&path)]
    );
    let r = recover(&path).unwrap();
    assert_eq!((r.demos, r.actions, r.states), (1, 100, 25));
    assert_eq!(
        load(&path).unwrap().demos("arm6").unwrap()[0].actions[99],
        ActionFrame::new(joints(99))
    );
}
