//! Real robots pick up a cube the way a teleop user does: a revA client on a real WebSocket (as
//! in tests/teleop.rs) connects, starts and streams control frames for the model's tool point
//! (`extensions.armsim.robot.tool`) with a binary grip, through armsim's whole teleop chain
//! (sessions → 1€ filter → workspace / clearance / speed limits → IK with the tool pointing down
//! → joint targets → gripper commands). The sim runs headless on a manual clock: this thread
//! steps it in 60 Hz chunks of four steps, each once the client's control frame for that chunk
//! is in the server's queue (the client sends it followed by a heartbeat and waits for the
//! heartbeat's ack) and an app frame has taken it from there, so a run is the same on any
//! machine, whatever number of app frames the wait took
//! (`teleop_trajectory_does_not_depend_on_the_frames_between_chunks`).
//!
//! Script: above the cube with the gripper open, down to it, close, lift 10 cm, hold. The cube
//! must rise more than 5 cm and stay within 3 cm of the tool point horizontally.

mod common;

#[path = "../crates/armsim-core/tests/fixtures/mod.rs"]
mod fixtures;

use std::net::SocketAddr;
use std::path::Path;
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

/// Sim steps per control frame: a 60 Hz headset on the 240 Hz sim.
const CHUNK: u64 = 4;

/// `assets/scenes/<scene>.json` with its robot file replaced by `robot`, edited, loaded.
fn scene_with(scene: &str, robot: &Path, edit: impl FnOnce(&mut Value)) -> Arc<Scene> {
    let dir = asset("assets/scenes");
    let text = std::fs::read_to_string(dir.join(format!("{scene}.json"))).unwrap();
    let mut json: Value = serde_json::from_str(&text).unwrap();
    json["robot"]["mjcf_path"] = robot.display().to_string().into();
    edit(&mut json);
    let loaded = parse_scene(&json.to_string(), &dir)
        .unwrap_or_else(|e| panic!("{scene} with {}: {e}", robot.display()));
    Arc::new(loaded)
}

fn menagerie_panda() -> Arc<Scene> {
    scene_with(
        "panda",
        &fixtures::menagerie_panda_dir().join("panda.xml"),
        |_| {},
    )
}

/// example-robot-data's Panda: joints `panda_joint1..7`, fingers `panda_finger_joint1/2`.
fn urdf_panda() -> Arc<Scene> {
    let urdf = fixtures::example_robot_data().join("panda_description/urdf/panda.urdf");
    scene_with("panda", &urdf, |json| {
        json["robot"]["gripper"]["actuator_name"] = "panda_finger_joint1".into();
        json["extensions"]["armsim"]["robot"]["tool"] = json!({"frame": "panda_hand_tcp"});
    })
}

fn so101(edit: impl FnOnce(&mut Value)) -> Arc<Scene> {
    scene_with(
        "so101",
        &fixtures::so101_dir().join("so101_new_calib.xml"),
        edit,
    )
}

/// One leg of the operator's script: the hand held at `target` (world) with the grip closed or
/// not for `secs` of sim time.
#[derive(Clone, Copy, Debug)]
struct Leg {
    what: &'static str,
    target: Vec3,
    grip: bool,
    secs: f32,
}

/// The control frame the operator thread is to send next (`None`: disconnect).
type Frame = Option<(Vec3, bool)>;

/// The operator: connects (asking for `scene_id`) and starts, then sends each frame it is given,
/// clutch held, followed by a heartbeat, and reports once the heartbeat's ack is back: the frame,
/// read before the heartbeat on the same connection, is then in the server's queue.
fn operator(
    addr: SocketAddr,
    scene_id: String,
    frames: mpsc::Receiver<Frame>,
    ready: mpsc::Sender<()>,
) {
    let mut c = Client::open(addr);
    c.send(
        "ui_cmd",
        json!({"command": "CONNECT", "requested_scene_config_id": scene_id}),
    );
    let connected = c.event("CONNECTED");
    c.session = connected["session_id"].as_str().unwrap().to_string();
    assert_eq!(connected["payload"]["extensions"]["role"], "controller");
    assert_eq!(c.start()["payload"]["sim_state"], "RUNNING");
    ready.send(()).unwrap();
    while let Ok(Some((target, grip))) = frames.recv() {
        c.control(target.to_array().map(f64::from), u8::from(grip), true);
        c.heartbeat();
        c.until("heartbeat_ack", |v| v["msg_type"] == "heartbeat_ack");
        // State frames pile up over a long script.
        c.log.clear();
        ready.send(()).unwrap();
    }
    c.ui("DISCONNECT");
}

/// Runs app frames (which never step on the manual clock) until the operator reports, then one
/// more. The server's I/O thread queues the control frame and answers the heartbeat read after
/// it at once, without waiting for a frame; the sim takes the queue in its next frame. So the
/// frame the report came in may have run before the control frame was queued: stepping then
/// would run the chunk on the previous frame's target, or not, as the threads happened to
/// interleave. The frame after the report always applies it.
fn await_operator(app: &mut App, ready: &mpsc::Receiver<()>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        app.update();
        match ready.try_recv() {
            Ok(()) => {
                app.update();
                return;
            }
            Err(mpsc::TryRecvError::Empty) => {}
            Err(mpsc::TryRecvError::Disconnected) => panic!("the operator thread ended early"),
        }
        assert!(
            Instant::now() < deadline,
            "the operator did not answer in 30 s"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Where the tool point and the cube are (world).
#[derive(Clone, Copy, Debug)]
struct Sample {
    tool: Vec3,
    cube: Vec3,
}

struct Run {
    start: Sample,
    /// The state at the end of each leg.
    legs: Vec<Sample>,
    /// After every chunk of the last leg.
    last_leg: Vec<Sample>,
    /// The whole world's state hash after every chunk.
    hashes: Vec<u64>,
}

fn sample(app: &App, cube: usize) -> Sample {
    let s = sim(app);
    Sample {
        tool: s.ee_position(),
        cube: s.physics.bodies[s.objects[cube].body].translation(),
    }
}

/// Plays `legs` through a teleop session on `scene`, watching the object `cube`.
fn play(name: &str, scene: Arc<Scene>, cube: &str, legs: &[Leg]) -> Run {
    play_with_idle(name, scene, cube, legs, 0)
}

/// [`play`], with `idle` more app frames run before each chunk is stepped.
fn play_with_idle(name: &str, scene: Arc<Scene>, cube: &str, legs: &[Leg], idle: usize) -> Run {
    let scene_id = scene.config.scene_id.clone();
    let mut app = headless(scene, ClockMode::Manual);
    let addr = add_teleop(&mut app);
    armsim::headless::finish_setup(&mut app);
    app.update();
    let cube = sim(&app)
        .object_index(cube)
        .unwrap_or_else(|| panic!("{name}: no object {cube}"));
    let (to_operator, frames) = mpsc::channel();
    let (ready_tx, ready) = mpsc::channel();
    let client = std::thread::spawn(move || operator(addr, scene_id, frames, ready_tx));
    await_operator(&mut app, &ready);
    let mut run = Run {
        start: sample(&app, cube),
        legs: Vec::new(),
        last_leg: Vec::new(),
        hashes: Vec::new(),
    };
    eprintln!(
        "{name}: tool at {:.3?}, {} at {:.3?}",
        run.start.tool.to_array(),
        sim(&app).objects[cube].name,
        run.start.cube.to_array()
    );
    for (k, leg) in legs.iter().enumerate() {
        let chunks = (leg.secs * 240.0 / CHUNK as f32).round() as usize;
        for _ in 0..chunks {
            to_operator.send(Some((leg.target, leg.grip))).unwrap();
            await_operator(&mut app, &ready);
            for _ in 0..idle {
                app.update();
            }
            run_steps(&mut app, CHUNK);
            run.hashes.push(sim(&app).state_hash());
            if k + 1 == legs.len() {
                run.last_leg.push(sample(&app, cube));
            }
        }
        let s = sample(&app, cube);
        let q = sim(&app).joint_positions();
        eprintln!(
            "  {:<6} target {:.3?} grip {}: tool {:.4?}, cube {:.4?}, q {:.3?}",
            leg.what,
            leg.target.to_array(),
            u8::from(leg.grip),
            s.tool.to_array(),
            s.cube.to_array(),
            q
        );
        run.legs.push(s);
    }
    to_operator.send(None).unwrap();
    // Lets the operator's DISCONNECT through, and raises its panic if it had one.
    drive(&mut app, client, Duration::from_micros(200));
    run
}

/// The pick of `cube`: above it at `grasp_z + 0.10` with the gripper open, down to `grasp_z`
/// (the tool point's world z), close, lift 10 cm, hold 1 s.
fn pick(name: &str, scene: Arc<Scene>, cube: &str, grasp_z: f32) -> Run {
    let p = {
        let app = app_for(scene.clone());
        let s = sim(&app);
        let i = s.object_index(cube).unwrap();
        s.physics.bodies[s.objects[i].body].translation()
    };
    let above = Vec3::new(p.x, p.y, grasp_z + 0.10);
    let grasp = Vec3::new(p.x, p.y, grasp_z);
    let leg = |what, target, grip, secs| Leg {
        what,
        target,
        grip,
        secs,
    };
    let run = play(
        name,
        scene,
        cube,
        &[
            leg("above", above, false, 3.0),
            leg("down", grasp, false, 2.0),
            leg("close", grasp, true, 1.0),
            leg("lift", above, true, 2.0),
            leg("hold", above, true, 1.0),
        ],
    );
    let end = run.last_leg.last().unwrap();
    let worst = run
        .last_leg
        .iter()
        .map(|s| horizontal(s.cube, s.tool))
        .fold(0.0f32, f32::max);
    eprintln!(
        "{name}: cube rose {:.1} mm (tool {:.1} mm from the grasp); cube to tool point \
         horizontally {:.1} mm at the end, at most {:.1} mm over the hold",
        (end.cube.z - run.start.cube.z) * 1e3,
        (end.tool.z - run.legs[2].tool.z) * 1e3,
        horizontal(end.cube, end.tool) * 1e3,
        worst * 1e3,
    );
    run
}

fn horizontal(a: Vec3, b: Vec3) -> f32 {
    (a - b).truncate().length()
}

fn assert_held(name: &str, run: &Run) {
    let end = run.last_leg.last().unwrap();
    let rise = end.cube.z - run.start.cube.z;
    assert!(
        rise > 0.05,
        "{name}: the cube rose {:.1} mm (tool at {:.3?}, cube at {:.3?})",
        rise * 1e3,
        end.tool.to_array(),
        end.cube.to_array()
    );
    for s in &run.last_leg {
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

/// Menagerie's Panda (tendon gripper, tool point 0.1034 m along `hand`) takes the 5 cm red cube
/// at x = 0.5 by its top 2.5 cm (tool point 1 cm above the cube's centre, over the scene's 3 cm
/// clearance).
#[test]
fn menagerie_panda_picks_up_a_cube() {
    let run = pick("menagerie panda", menagerie_panda(), "cube_red", 1.035);
    assert_held("menagerie panda", &run);
}

/// example-robot-data's Panda, the same pick. It needs the Panda scene's stiffer contacts
/// (`physics.contact_hz` 100): at Rapier's 30 Hz the URDF's fingertip boxes (15 mm thick, wholly
/// inside the cube's height) sink 3.5, 9.6, 15, 20 mm into the cube over the first 16 steps of
/// the close until the contact normal turns vertical, and the fingers close through it.
#[test]
fn urdf_panda_picks_up_a_cube() {
    let run = pick("urdf panda", urdf_panda(), "cube_red", 1.035);
    assert_held("urdf panda", &run);
}

/// From its home pose (tool level, pointing away from the base, 9 mm short of the workspace box's
/// far face) the SO-101 follows the hand over a cube, turning its tool down on the way, then down
/// to 1.5 cm above it. The first point, 11 cm above the table, is beyond what the arm reaches
/// with its tool pointing straight down (the wrist's flex limit), but within its reach: the
/// teleop IK puts the tool point first (a weighted compromise with the tool axis
/// stopped it 2–3 cm short), so it gets there within 5 mm too, on the file's weak servos.
#[test]
fn so101_follows_the_hand_from_home() {
    let over = Vec3::new(0.25, -0.06, 1.113);
    let target = Vec3::new(0.25, -0.06, 1.04);
    let run = play(
        "so101",
        so101(|_| {}),
        "cube_red",
        &[
            Leg {
                what: "over",
                target: over,
                grip: false,
                secs: 3.0,
            },
            Leg {
                what: "lower",
                target,
                grip: false,
                secs: 2.0,
            },
        ],
    );
    let near = run.legs[0].tool;
    assert!(
        (near - over).length() < 0.005,
        "the tool point is at {near} instead of {over}"
    );
    let tool = run.legs[1].tool;
    assert!(
        (tool - target).length() < 0.005,
        "the tool point is at {tool} instead of {target}"
    );
}

/// The SO-101 pick of the red 2.5 cm cube, centred in its height. Two things make it work: the
/// scene's `gripper_positions` (this jaw opens towards +1.75 rad; at 0 rad, the usual open
/// position of a hinged finger, its hull is 16 mm from the fixed jaw's), and the file's own
/// servo, simulated as MuJoCo does: the jaw squeezes with 17.8 N·m/rad up to its 3.35 N·m
/// force range, which holds the scene's 20 g cubes without more force than the file gives.
#[test]
fn so101_picks_up_a_cube() {
    // The scene's tool point is between the jaws (the file's `gripperframe` site is on the fixed
    // jaw's inner face) and its table clearance 1 cm, so the jaws reach a 2.5 cm cube.
    let run = pick("so101", so101(|_| {}), "cube_red", 1.0125);
    assert_held("so101", &run);
}

/// Same inputs, same trajectory: the teleop chain works per step, so how many app frames run
/// between chunks (frames never step on the manual clock) changes nothing, bit for bit. The
/// hand moves down a little with every control frame, then closes the gripper, so a control
/// frame applied a chunk late anywhere would show.
#[test]
fn teleop_trajectory_does_not_depend_on_the_frames_between_chunks() {
    let p = {
        let app = app_for(so101(|_| {}));
        let s = sim(&app);
        s.physics.bodies[s.objects[s.object_index("cube_red").unwrap()].body].translation()
    };
    let frame = CHUNK as f32 / 240.0;
    let legs: Vec<Leg> = (0..60)
        .map(|k| Leg {
            what: if k < 45 { "down" } else { "close" },
            target: Vec3::new(p.x, p.y, 1.1125 - 0.1 * (k.min(44) as f32) / 44.0),
            grip: k >= 45,
            secs: frame,
        })
        .collect();
    let runs =
        [0, 30].map(|idle| play_with_idle("so101", so101(|_| {}), "cube_red", &legs, idle).hashes);
    assert_eq!(runs[0].len(), legs.len());
    let first = (0..runs[0].len()).find(|&i| runs[0][i] != runs[1][i]);
    assert_eq!(
        first, None,
        "the world's state after chunk {first:?} differs with 30 idle frames between chunks"
    );
}
