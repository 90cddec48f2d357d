//! The simulator core on a headless app: holding posture, resting cubes, the three control
//! modes, determinism, reset, and the session state machine.

mod common;

use armsim::session::{Session, SessionCommand, SessionState};
use armsim::sim::{ClockMode, JointCommand, SimClock, run_steps};
use common::*;
use glam::Vec3;

#[test]
fn arm_holds_home_for_ten_seconds() {
    let scene = default_scene();
    let home = scene.home_q_full();
    let mut app = app_for(scene.clone());
    let arm = scene.arm_joints();
    let mut worst = 0.0f32;
    for _ in 0..100 {
        run_steps(&mut app, 24);
        let q = sim(&app).joint_positions();
        for &j in &arm {
            worst = worst.max((q[j] - home[j]).abs());
        }
    }
    assert_eq!(app.world().resource::<SimClock>().steps, 2400);
    assert!(worst < 0.01, "arm drifted {worst} rad from home_q");
}

#[test]
fn dropped_cube_comes_to_rest_on_the_table() {
    let mut app = app_for(default_scene());
    let (body, half, top) = {
        let s = sim(&app);
        let armsim::robot::Shape::Box { half_extents } = s.objects[0].shape else {
            panic!("the default scene's first object is a cube");
        };
        (s.objects[0].body, half_extents, s.table_top_z)
    };
    {
        sim_mut(&mut app, |s| {
            let rb = &mut s.physics.bodies[body];
            let mut p = *rb.position();
            p.translation.z = top + 0.3;
            rb.set_position(p, true);
        });
    }
    run_steps(&mut app, 480);
    let s = sim(&app);
    let rb = &s.physics.bodies[body];
    let z = rb.translation().z;
    assert!(
        (z - (top + half.z)).abs() < 0.003,
        "cube rests at z={z}, expected {}",
        top + half.z
    );
    assert!(
        rb.linvel().length() < 0.01,
        "cube still moving: {:?}",
        rb.linvel()
    );
}

#[test]
fn position_control_reaches_the_target() {
    let mut app = app_for(default_scene());
    let pan = joint(&app, "shoulder_pan");
    let start = sim(&app).joint_positions()[pan];
    targets(&mut app).commands[pan] = JointCommand::Position {
        target: start + 0.5,
        velocity: 0.0,
    };
    command(&mut app, SessionCommand::Start);
    run_steps(&mut app, 480);
    let q = sim(&app).joint_positions()[pan];
    assert!(
        (q - (start + 0.5)).abs() < 0.01,
        "pan at {q}, wanted {}",
        start + 0.5
    );
}

#[test]
fn velocity_control_moves_at_the_commanded_rate() {
    let mut app = app_for(default_scene());
    let pan = joint(&app, "shoulder_pan");
    let start = sim(&app).joint_positions()[pan];
    targets(&mut app).commands[pan] = JointCommand::Velocity { target: -0.4 };
    command(&mut app, SessionCommand::Start);
    run_steps(&mut app, 240);
    let s = sim(&app);
    let moved = s.joint_positions()[pan] - start;
    assert!(
        (moved + 0.4).abs() < 0.05,
        "pan moved {moved} rad in 1 s at -0.4 rad/s"
    );
    let qd = s.joint_velocities()[pan];
    assert!((qd + 0.4).abs() < 0.02, "pan velocity {qd}");
}

#[test]
fn effort_control_turns_the_joint_the_way_of_the_torque() {
    let mut app = app_for(default_scene());
    let wrist = joint(&app, "wrist_3");
    let start = sim(&app).joint_positions()[wrist];
    targets(&mut app).commands[wrist] = JointCommand::Effort { torque: 0.5 };
    command(&mut app, SessionCommand::Start);
    run_steps(&mut app, 120);
    let plus = sim(&app).joint_positions()[wrist] - start;
    assert!(plus > 0.05, "positive torque moved wrist_3 by {plus}");

    let mut app = app_for(default_scene());
    targets(&mut app).commands[wrist] = JointCommand::Effort { torque: -0.5 };
    command(&mut app, SessionCommand::Start);
    run_steps(&mut app, 120);
    let minus = sim(&app).joint_positions()[wrist] - start;
    assert!(minus < -0.05, "negative torque moved wrist_3 by {minus}");
}

/// A run where every joint follows its own velocity sine, like a lockstep client would send.
fn scripted_run() -> Vec<u64> {
    let mut app = app_for(default_scene());
    command(&mut app, SessionCommand::Start);
    let n = sim(&app).joint_count();
    let mut hashes = Vec::new();
    for step in 0..2400u32 {
        let t = step as f32 / 240.0;
        for j in 0..n {
            targets(&mut app).commands[j] = JointCommand::Velocity {
                target: 0.3 * (t * (1.0 + j as f32 * 0.3)).sin(),
            };
        }
        run_steps(&mut app, 1);
        if step % 240 == 239 {
            hashes.push(sim(&app).state_hash());
        }
    }
    hashes
}

#[test]
fn same_inputs_give_bit_identical_states() {
    let a = scripted_run();
    let b = scripted_run();
    assert_eq!(a.len(), 10);
    assert_eq!(a, b);
    // The hash does see motion: the states along the run all differ.
    let mut unique = a.clone();
    unique.dedup();
    assert_eq!(unique.len(), a.len());
}

#[test]
fn reset_equals_a_fresh_load() {
    let fresh = sim(&app_for(default_scene())).state_hash();
    let mut app = app_for(default_scene());
    let pan = joint(&app, "shoulder_pan");
    targets(&mut app).commands[pan] = JointCommand::Velocity { target: 1.0 };
    command(&mut app, SessionCommand::Start);
    run_steps(&mut app, 300);
    assert_ne!(sim(&app).state_hash(), fresh);
    command(&mut app, SessionCommand::Reset);
    assert_eq!(state(&app), SessionState::Idle);
    assert_eq!(app.world().resource::<SimClock>().steps, 0);
    assert_eq!(sim(&app).state_hash(), fresh);
}

#[test]
fn session_machine_start_pause_step_reset() {
    let mut app = app_for(default_scene());
    assert_eq!(state(&app), SessionState::Idle);
    command(&mut app, SessionCommand::Start);
    assert_eq!(state(&app), SessionState::Running);
    command(&mut app, SessionCommand::TogglePause);
    assert_eq!(state(&app), SessionState::Paused);

    // Paused: frames run no steps, a step request runs exactly that many.
    app.world_mut().resource_mut::<SimClock>().mode = armsim::sim::ClockMode::Fast;
    for _ in 0..5 {
        app.update();
    }
    assert_eq!(app.world().resource::<SimClock>().steps, 0);
    command(&mut app, SessionCommand::Step(3));
    assert_eq!(app.world().resource::<SimClock>().steps, 3);
    assert_eq!(state(&app), SessionState::Paused);

    command(&mut app, SessionCommand::TogglePause);
    assert_eq!(state(&app), SessionState::Running);
    app.update();
    assert!(
        app.world().resource::<SimClock>().steps > 3,
        "running steps again"
    );
    command(&mut app, SessionCommand::Reset);
    assert_eq!(state(&app), SessionState::Idle);
}

#[test]
fn paused_arm_holds_where_it_stopped() {
    let mut app = app_for(default_scene());
    let pan = joint(&app, "shoulder_pan");
    targets(&mut app).commands[pan] = JointCommand::Velocity { target: 0.5 };
    command(&mut app, SessionCommand::Start);
    run_steps(&mut app, 120);
    command(&mut app, SessionCommand::Pause);
    let held = sim(&app).joint_positions()[pan];
    // Single steps while paused apply the hold posture, not the controller's velocity.
    command(&mut app, SessionCommand::Step(240));
    let q = sim(&app).joint_positions()[pan];
    assert!(
        (q - held).abs() < 0.02,
        "pan moved from {held} to {q} while paused"
    );
}

#[test]
fn end_effector_is_above_the_table() {
    let app = app_for(default_scene());
    let s = sim(&app);
    let ee: Vec3 = s.ee_position();
    assert!(ee.z > s.table_top_z + 0.05, "ee at {ee}");
}

#[test]
fn a_gated_step_waits_for_its_source_while_frames_go_on() {
    use armsim::sim::{ClockMode, StepGate};
    use bevy::diagnostic::FrameCount;

    let mut app = app_for(default_scene());
    app.world_mut().resource_mut::<SimClock>().mode = ClockMode::Fast;
    let id = app
        .world_mut()
        .resource_mut::<StepGate>()
        .register("test client");
    let frames_before = app.world().resource::<FrameCount>().0;
    for _ in 0..10 {
        app.update();
    }
    assert_eq!(app.world().resource::<FrameCount>().0, frames_before + 10);
    assert_eq!(app.world().resource::<SimClock>().steps, 0);
    assert!(app.world().resource::<StepGate>().is_waiting());

    app.world_mut().resource_mut::<StepGate>().mark_ready(id);
    app.update();
    app.update();
    assert_eq!(
        app.world().resource::<SimClock>().steps,
        1,
        "one answer, one step"
    );

    app.world_mut().resource_mut::<StepGate>().unregister(id);
    app.update();
    assert!(
        app.world().resource::<SimClock>().steps > 1,
        "ungated: fast mode runs again"
    );
}

#[test]
fn a_non_finite_cube_puts_the_session_in_error() {
    let mut app = app_for(default_scene());
    command(&mut app, SessionCommand::Start);
    run_steps(&mut app, 5);
    assert_eq!(state(&app), SessionState::Running);
    {
        // Only the physics can do this (placements refuse it): a body gone NaN, not a joint.
        sim_mut(&mut app, |s| {
            let body = s.objects[0].body;
            s.physics.bodies[body].set_translation(Vec3::new(0.5, f32::NAN, 1.1), true);
        });
    }
    run_steps(&mut app, 1);
    assert_eq!(state(&app), SessionState::Error);
    let why = app
        .world()
        .resource::<armsim::session::Session>()
        .error
        .clone()
        .unwrap_or_default();
    assert!(why.contains("cube"), "{why}");
    // Announced: the alert log (panel, teleop, monitors) says so, with the reason.
    app.update();
    let log = app.world().resource::<armsim::session::AlertLog>();
    let entry = log
        .recent()
        .find(|e| e.code == "ERROR")
        .expect("an ERROR entry in the alert log");
    assert!(entry.text.contains("cube_red"), "{}", entry.text);
}

#[test]
fn the_session_paces_the_clock_only_through_its_pause_and_error_stop_flags() {
    // Fast: without the flags every frame would run a frame budget's worth of steps.
    let mut app = headless(default_scene(), ClockMode::Fast);
    armsim::headless::finish_setup(&mut app);
    let clock = |app: &bevy::prelude::App| {
        let c = app.world().resource::<SimClock>();
        (c.steps, c.is_paused(), c.is_error_stopped())
    };
    command(&mut app, SessionCommand::Pause);
    let (steps, paused, stopped) = clock(&app);
    assert!(paused && !stopped);
    app.update();
    assert_eq!(clock(&app).0, steps, "no step while paused");
    command(&mut app, SessionCommand::Step(3));
    assert_eq!(
        clock(&app).0,
        steps + 3,
        "exactly the single steps asked for"
    );
    command(&mut app, SessionCommand::Start);
    assert!(!clock(&app).1);
    app.world_mut()
        .resource_scope(|world, mut session: bevy::prelude::Mut<Session>| {
            armsim::session::fail(&mut session, &armsim::sim::sim_view(world), "test".into());
        });
    app.update();
    let (steps, _, stopped) = clock(&app);
    assert!(stopped, "ERROR raises the error stop");
    app.update();
    assert_eq!(
        clock(&app).0,
        steps + 1,
        "in ERROR a frame ends after one step"
    );
    command(&mut app, SessionCommand::Reset);
    let (_, paused, stopped) = clock(&app);
    assert!(!paused && !stopped, "a reset clears both");
}

/// The app's parts as a plugin group: a part that cannot start (its port is taken) stops the
/// start with its error, and the parts after it (here the session's start) are not added; a
/// part can be left out of the group.
#[test]
fn the_app_setup_is_a_plugin_group_that_stops_at_the_first_failure() {
    use armsim::app::{AppSetup, ArmsimPlugins, StartPart, take_failure};
    use armsim::headless::finish_setup;
    use bevy::app::PluginGroup;
    use std::time::Duration;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
    let addr = taken.local_addr().unwrap();
    let setup = AppSetup {
        lockstep: Some((addr, Duration::from_secs(5))),
        start: true,
        ..AppSetup::default()
    };
    let scene = default_scene();
    let mut app = headless(scene.clone(), ClockMode::Manual);
    let error = setup
        .add_to(&mut app, &scene)
        .expect_err("the port is taken");
    let text = format!("{error:#}");
    assert!(
        text.contains(&format!("cannot listen for lockstep clients on {addr}")),
        "{text}"
    );
    finish_setup(&mut app);
    app.update();
    assert_eq!(
        state(&app),
        SessionState::Idle,
        "the start after the failure was not added"
    );

    // The same group with the start left out, and nothing that fails: the session stays IDLE.
    let setup = AppSetup {
        start: true,
        ..AppSetup::default()
    };
    let mut app = headless(scene.clone(), ClockMode::Manual);
    app.add_plugins(
        ArmsimPlugins::new(setup.clone(), scene.clone())
            .build()
            .disable::<StartPart>(),
    );
    take_failure(&mut app).expect("nothing fails");
    finish_setup(&mut app);
    app.update();
    assert_eq!(state(&app), SessionState::Idle, "the start was left out");
    // And with it in, the session starts.
    let mut app = headless(scene.clone(), ClockMode::Manual);
    setup.add_to(&mut app, &scene).expect("starts");
    finish_setup(&mut app);
    app.update();
    assert_eq!(state(&app), SessionState::Running);
}
