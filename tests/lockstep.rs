//! Lockstep over real sockets: a headless sim serves the lockstep port on 127.0.0.1:0 and a
//! TCP client in a thread plays the original's client, while the test thread runs the frames.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use armsim::headless::finish_setup;
use armsim::protocol::lockstep::codec::{decode_state, encode_velocities};
use armsim::protocol::lockstep::plugin::{self, LockstepServer};
use armsim::sim::{ClockMode, SimClock, StepGate};
use bevy::prelude::App;
use common::*;

const N: usize = 10;

fn lockstep_app(timeout: Duration) -> (App, SocketAddr) {
    // No free-running steps: every step the test sees is one a client paid for.
    let mut app = headless(gripper4_scene(), ClockMode::Manual);
    let addr = plugin::add(&mut app, "127.0.0.1:0".parse().unwrap(), timeout).expect("binds");
    finish_setup(&mut app);
    (app, addr)
}

fn drive<T>(app: &mut App, client: JoinHandle<T>) -> T {
    common::drive(app, client, Duration::from_micros(0))
}

fn read_frame(s: &mut TcpStream) -> (u64, Vec<f32>) {
    let mut buf = [0u8; 8 + 4 * N];
    s.read_exact(&mut buf).expect("a 48-byte frame");
    decode_state(&buf, N).expect("a whole frame")
}

fn answer(s: &mut TcpStream, v: &[f32]) {
    let mut bytes = Vec::new();
    encode_velocities(v, &mut bytes);
    assert_eq!(bytes.len(), 40);
    s.write_all(&bytes).expect("answer");
}

fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connects");
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s
}

/// Plays `steps` steps answering `script(step)` and returns every (counter, angles) frame.
fn play(
    addr: SocketAddr,
    steps: usize,
    script: fn(u64) -> [f32; N],
) -> JoinHandle<Vec<(u64, Vec<f32>)>> {
    std::thread::spawn(move || {
        let mut s = connect(addr);
        let mut frames = Vec::new();
        for _ in 0..steps {
            let (step, angles) = read_frame(&mut s);
            answer(&mut s, &script(step));
            frames.push((step, angles));
        }
        frames.push(read_frame(&mut s));
        frames
    })
}

fn sine(step: u64) -> [f32; N] {
    [(step as f32 / 10.0).sin(); N]
}

#[test]
fn frames_count_up_from_zero_and_one_answer_is_one_step() {
    let (mut app, addr) = lockstep_app(Duration::from_secs(5));
    let before = app.world().resource::<SimClock>().steps;
    let frames = drive(&mut app, play(addr, 200, sine));
    let counters: Vec<u64> = frames.iter().map(|f| f.0).collect();
    assert_eq!(counters, (0..=200).collect::<Vec<u64>>());
    assert!(frames.iter().all(|f| f.1.len() == N));
    app.update();
    assert_eq!(app.world().resource::<SimClock>().steps - before, 200);
}

#[test]
fn commanded_velocity_moves_the_joint_that_way_at_that_rate() {
    let (mut app, addr) = lockstep_app(Duration::from_secs(5));
    // +0.5 rad/s on the base swivel for 240 steps (1 s), everything else still.
    let frames = drive(
        &mut app,
        play(addr, 240, |_| {
            let mut v = [0.0; N];
            v[0] = 0.5;
            v
        }),
    );
    let moved = frames.last().unwrap().1[0] - frames[0].1[0];
    assert!(
        (moved - 0.5).abs() < 0.06,
        "swivel moved {moved} rad in 1 s at 0.5 rad/s"
    );
}

#[test]
fn same_velocity_script_gives_identical_angle_streams() {
    let run = || {
        let (mut app, addr) = lockstep_app(Duration::from_secs(5));
        drive(&mut app, play(addr, 300, sine))
    };
    let (a, b) = (run(), run());
    assert_eq!(a.len(), 301);
    let bits = |f: &Vec<(u64, Vec<f32>)>| -> Vec<u32> {
        f.iter()
            .flat_map(|(_, v)| v.iter().map(|x| x.to_bits()))
            .collect()
    };
    assert!(bits(&a) == bits(&b), "angle streams differ");
    assert_ne!(a[0].1, a[300].1, "the arm moved");
}

#[test]
fn disconnect_then_reconnect_continues_the_step_counter() {
    let (mut app, addr) = lockstep_app(Duration::from_secs(5));
    let first = drive(&mut app, play(addr, 20, sine));
    assert_eq!(first.last().unwrap().0, 20);
    // The first client has hung up; the next one is accepted and its counter goes on from the
    // steps elapsed so far (the original counts "the number of time steps that have elapsed").
    let deadline = Instant::now() + Duration::from_secs(10);
    while app.world().resource::<LockstepServer>().client().is_some() {
        assert!(Instant::now() < deadline, "disconnect not noticed");
        app.update();
    }
    let second = drive(&mut app, play(addr, 5, sine));
    assert_eq!(
        second.iter().map(|f| f.0).collect::<Vec<_>>(),
        vec![20, 21, 22, 23, 24, 25]
    );
}

#[test]
fn the_clock_waits_for_the_first_client_and_counts_steps_since_the_start() {
    // Real time, as `--remote-control-port` runs: without the wait the sim would step freely.
    let scene = gripper4_scene();
    let loaded = armsim::sim::SimWorld::new(&scene).view().joint_positions();
    let mut app = headless(scene, ClockMode::RealTime { speed: 1.0 });
    let addr = plugin::add(
        &mut app,
        "127.0.0.1:0".parse().unwrap(),
        Duration::from_secs(5),
    )
    .expect("binds");
    finish_setup(&mut app);
    for _ in 0..100 {
        app.update();
        std::thread::sleep(Duration::from_millis(3));
    }
    let clock = app.world().resource::<SimClock>();
    assert_eq!(clock.steps, 0, "stepped before any client connected");
    let gate = app.world().resource::<StepGate>();
    assert!(gate.is_waiting(), "the panel shows the wait");
    // Frame 0 is the scene exactly as loaded.
    let first = drive(&mut app, play(addr, 10, sine));
    assert_eq!(first[0].0, 0);
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits(&first[0].1),
        bits(&loaded),
        "frame 0 is the scene as loaded"
    );
    assert_eq!(first.last().unwrap().0, 10);
    let deadline = Instant::now() + Duration::from_secs(10);
    while app.world().resource::<LockstepServer>().client().is_some() {
        assert!(Instant::now() < deadline, "disconnect not noticed");
        app.update();
    }
    // Between clients the clock runs in real time; those steps count too.
    while app.world().resource::<SimClock>().steps < 34 {
        assert!(
            Instant::now() < deadline,
            "the clock did not run between clients"
        );
        app.update();
        std::thread::sleep(Duration::from_millis(1));
    }
    let second = drive(&mut app, play(addr, 5, sine));
    let counters: Vec<u64> = second.iter().map(|f| f.0).collect();
    assert!(counters[0] >= 34, "counter restarted: {counters:?}");
    for w in counters.windows(2) {
        assert_eq!(w[1], w[0] + 1, "{counters:?}");
    }
    // The counter is the number of steps since the start: the clock's, as nothing was reset.
    assert_eq!(
        app.world().resource::<LockstepServer>().steps(),
        app.world().resource::<SimClock>().steps
    );
}

#[test]
fn a_stalled_client_times_out_and_the_sim_runs_on() {
    let (mut app, addr) = lockstep_app(Duration::from_millis(300));
    let client = std::thread::spawn(move || {
        let mut s = connect(addr);
        let _ = read_frame(&mut s);
        // Say nothing; the server must hang up on us.
        let mut b = [0u8; 64];
        let start = Instant::now();
        loop {
            match s.read(&mut b) {
                Ok(0) | Err(_) => return start.elapsed(),
                Ok(_) => {}
            }
        }
    });
    let waited = drive(&mut app, client);
    assert!(
        waited < Duration::from_secs(10),
        "server never dropped the staller"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while app.world().resource::<armsim::sim::StepGate>().is_gated() {
        assert!(
            Instant::now() < deadline,
            "the gate still waits for the dropped client"
        );
        app.update();
    }
    // The next client is served.
    let next = drive(&mut app, play(addr, 3, sine));
    assert_eq!(next.last().unwrap().0, 3);
}

#[test]
fn nan_frames_are_refused_and_the_client_dropped() {
    let (mut app, addr) = lockstep_app(Duration::from_secs(5));
    let client = std::thread::spawn(move || {
        let mut s = connect(addr);
        let _ = read_frame(&mut s);
        let mut v = [0.0; N];
        v[3] = f32::NAN;
        answer(&mut s, &v);
        let mut b = [0u8; 64];
        matches!(s.read(&mut b), Ok(0) | Err(_))
    });
    let before = app.world().resource::<SimClock>().steps;
    assert!(
        drive(&mut app, client),
        "connection closed after a NaN frame"
    );
    let angles = sim(&app).joint_positions();
    assert!(angles.iter().all(|a| a.is_finite()));
    // The NaN frame bought no step.
    assert_eq!(app.world().resource::<SimClock>().steps, before);
}

#[test]
fn a_second_client_is_refused_while_the_first_keeps_control() {
    let (mut app, addr) = lockstep_app(Duration::from_secs(5));
    let client = std::thread::spawn(move || {
        let mut first = connect(addr);
        let (step, _) = read_frame(&mut first);
        assert_eq!(step, 0);
        let mut second = connect(addr);
        let mut b = [0u8; 64];
        let refused = matches!(second.read(&mut b), Ok(0) | Err(_));
        // The first client still steps.
        answer(&mut first, &[0.0; N]);
        let (next, _) = read_frame(&mut first);
        (refused, next)
    });
    let (refused, next) = drive(&mut app, client);
    assert!(refused, "second client got data instead of a closed socket");
    assert_eq!(next, 1);
}

#[test]
fn a_port_in_use_is_a_clear_error() {
    let (mut app, addr) = lockstep_app(Duration::from_secs(5));
    let err = plugin::add(&mut app, addr, Duration::from_secs(1)).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
}

/// True once the server has closed `s` (end of stream or reset); false while it is open.
fn closed_by_server(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    let mut b = [0u8; 64];
    let closed = match s.read(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    };
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    closed
}

#[test]
fn a_client_trickling_its_answer_is_dropped_at_the_answer_deadline() {
    // One byte every 150 ms never trips a per-read timeout of 1 s; the answer's deadline must.
    let (mut app, addr) = lockstep_app(Duration::from_secs(1));
    let client = std::thread::spawn(move || {
        let mut s = connect(addr);
        let _ = read_frame(&mut s);
        for sent in 0..39 {
            if s.write_all(&[0]).is_err() || closed_by_server(&mut s) {
                return Some(sent);
            }
            std::thread::sleep(Duration::from_millis(150));
        }
        None
    });
    let sent = drive(&mut app, client);
    let sent = sent.expect("the server kept a client that took 6 s over one 40-byte answer");
    assert!(sent < 39, "dropped only after {sent} bytes");
    // The slot is free again: the next client is served.
    let next = drive(&mut app, play(addr, 2, sine));
    assert_eq!(next.len(), 3);
}

#[test]
fn a_client_reconnecting_at_once_is_never_refused() {
    let (mut app, addr) = lockstep_app(Duration::from_secs(5));
    let client = std::thread::spawn(move || {
        let mut refused = 0;
        for round in 0..30 {
            let mut s = connect(addr);
            let mut frame = [0u8; 8 + 4 * N];
            if s.read_exact(&mut frame).is_err() {
                refused += 1;
                continue;
            }
            // Half the rounds answer before leaving, half leave mid-step.
            if round % 2 == 0 {
                answer(&mut s, &[0.1; N]);
            }
            drop(s);
        }
        refused
    });
    let refused = drive(&mut app, client);
    assert_eq!(
        refused, 0,
        "{refused} of 30 immediate reconnects were refused"
    );
}

#[test]
fn another_protocol_taking_the_arm_first_ends_the_wait() {
    let mut app = headless(gripper4_scene(), ClockMode::RealTime { speed: 1.0 });
    plugin::add(
        &mut app,
        "127.0.0.1:0".parse().unwrap(),
        Duration::from_secs(5),
    )
    .expect("binds");
    let (agent, _) = armsim::protocol::sexp::plugin::add(
        &mut app,
        armsim::protocol::sexp::plugin::SexpOptions {
            agent: Some("127.0.0.1:0".parse().unwrap()),
            ..Default::default()
        },
    )
    .expect("binds");
    finish_setup(&mut app);
    let agent = agent.unwrap();
    // An agent takes the arm: no lockstep client can come now, so the clock must not wait.
    let client = std::thread::spawn(move || {
        let mut s = common::sexp::Peer::open(agent);
        s.send("(init gripper4 teamA 1)");
        loop {
            let msg = s.recv().expect("a perception");
            // (time (now 0.1000)) or later: the clock runs.
            let now = msg
                .iter()
                .find(|e| e.is("time"))
                .and_then(|t| t.find("now"))
                .and_then(|n| n.arg(0))
                .and_then(|a| a.as_f64().ok())
                .expect("(time (now t))");
            if now >= 0.1 {
                return now;
            }
        }
    });
    let now = drive(&mut app, client);
    assert!(now >= 0.1);
    assert!(!app.world().resource::<armsim::sim::StepGate>().is_held());
}
