//! `armsim bench record`: the cost of recording (ECS steps/s of the default scene with and
//! without a recording, a state every step) and the load time of a 100-demo trajectory file in
//! each format (1000 actions of 8 joints and 250 states of 4 bodies per demo).

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use armsim::headless::finish_setup;
use armsim::scene::Scene;
use armsim::session::{SessionCommand, SessionRequest};
use armsim::sim;
use armsim::trajectory::plugin::{finish_recording, start_recording};
use armsim::trajectory::{
    ActionFrame, BodyState, Demo, JointValues, StateFrame, Trajectories, load, save,
};
use armsim::{SimOptions, headless_app};

use super::{BenchError, ROUNDS, median};

#[derive(Clone, Debug)]
pub struct RecordBenchReport {
    pub scene_id: String,
    pub steps: u64,
    pub plain: Duration,
    pub recording: Duration,
    pub finish: Duration,
    /// (extension, file bytes, median load time)
    pub loads: Vec<(&'static str, u64, Duration)>,
}

impl fmt::Display for RecordBenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rate = |d: Duration| self.steps as f64 / d.as_secs_f64();
        writeln!(
            f,
            "scene {}: {} steps per round, median of {ROUNDS} rounds",
            self.scene_id, self.steps
        )?;
        writeln!(f, "  without recording : {:>8.0} steps/s", rate(self.plain))?;
        writeln!(
            f,
            "  recording .json.gz: {:>8.0} steps/s (an action and a state every step; {:.0}% of the rate), finish {:.0} ms",
            rate(self.recording),
            100.0 * rate(self.recording) / rate(self.plain),
            self.finish.as_secs_f64() * 1e3
        )?;
        write!(
            f,
            "  load a 100-demo file (100 × 1000 actions of 8 joints, 250 states of 4 bodies):"
        )?;
        for (ext, bytes, d) in &self.loads {
            write!(
                f,
                "\n    {ext:<8} {:>6.1} MB  {:>7.0} ms",
                *bytes as f64 / 1e6,
                d.as_secs_f64() * 1e3
            )?;
        }
        Ok(())
    }
}

fn demo_file() -> Trajectories {
    let joints: Vec<String> = (0..8).map(|j| format!("joint_{j}")).collect();
    let mut t = Trajectories::default();
    for d in 0..100 {
        let state = |k: usize| {
            let mut frame = StateFrame::default();
            for b in 0..4 {
                let x = (d * 1000 + k * 4 + b) as f64 * 1e-4;
                let mut body = BodyState::new([x, x + 0.1, 1.0 + x], [1.0, 0.0, 0.0, 0.0]);
                if b == 0 {
                    body.dof_pos = Some(joints.iter().map(|j| (j.clone(), x)).collect());
                }
                frame.set(&format!("body_{b}"), body);
            }
            frame
        };
        let actions = (0..1000)
            .map(|k| {
                ActionFrame::new(
                    joints
                        .iter()
                        .enumerate()
                        .map(|(j, n)| (n.clone(), (k * 8 + j) as f64 * 1e-3))
                        .collect::<JointValues>(),
                )
            })
            .collect();
        t.push_demo(
            "arm6",
            Demo {
                init_state: state(0),
                actions,
                states: (0..250).map(state).collect(),
                extra: None,
                other: Vec::new(),
            },
        );
    }
    t
}

pub fn run(scene: Arc<Scene>, steps: u64) -> Result<RecordBenchReport, BenchError> {
    if steps == 0 {
        return Err(BenchError::NoSteps);
    }
    let dir = std::env::temp_dir().join(format!("armsim-bench-record-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut plain = Vec::new();
    let mut recording = Vec::new();
    let mut finish = Vec::new();
    for round in 0..ROUNDS {
        for record in [false, true] {
            let mut app = headless_app(scene.clone(), &SimOptions::default());
            finish_setup(&mut app);
            let path = dir.join(format!("run{round}.json.gz"));
            if record {
                start_recording(app.world_mut(), &path, 1)
                    .map_err(|e| BenchError::Client(e.to_string()))?;
            }
            app.world_mut()
                .write_message(SessionRequest(SessionCommand::Start));
            app.update();
            let t0 = Instant::now();
            sim::run_steps(&mut app, steps);
            let took = t0.elapsed();
            if record {
                recording.push(took);
                let t1 = Instant::now();
                finish_recording(app.world_mut())
                    .transpose()
                    .map_err(BenchError::Client)?;
                finish.push(t1.elapsed());
                let _ = std::fs::remove_file(&path);
            } else {
                plain.push(took);
            }
        }
    }
    let file = demo_file();
    let mut loads = Vec::new();
    for ext in ["json", "json.gz", "pkl", "pkl.gz"] {
        let path = dir.join(format!("demos.{ext}"));
        save(&file, &path).map_err(|e| BenchError::Client(e.to_string()))?;
        let bytes = std::fs::metadata(&path)?.len();
        let mut times = Vec::new();
        for _ in 0..3 {
            let t0 = Instant::now();
            let loaded = load(&path).map_err(|e| BenchError::Client(e.to_string()))?;
            times.push(t0.elapsed());
            if loaded.demos("arm6").map_or(0, |d| d.len()) != 100 {
                return Err(BenchError::Client(format!(
                    "{ext}: the file did not load back"
                )));
            }
        }
        let _ = std::fs::remove_file(&path);
        loads.push((ext, bytes, median(times)));
    }
    let _ = std::fs::remove_dir(&dir);
    Ok(RecordBenchReport {
        scene_id: scene.config.scene_id.clone(),
        steps,
        plain: median(plain),
        recording: median(recording),
        finish: median(finish),
        loads,
    })
}
