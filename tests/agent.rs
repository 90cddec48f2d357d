//! RCSSServerMJ's ports over real sockets: a headless sim serves the agent and monitor ports on
//! 127.0.0.1:0; client threads play agents and monitors with 4-byte length-prefixed S-expressions
//! while the test thread runs the frames.

mod common;

use std::io::Write;
use std::net::SocketAddr;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use armsim::headless::finish_setup;
use armsim::protocol::sexp::Sexp;
use armsim::protocol::sexp::plugin::{self, SexpOptions};
use armsim::sim::ClockMode;
use bevy::prelude::App;
use common::sexp::Peer;
use common::*;

const DT: f64 = 1.0 / 240.0;

fn sexp_app(clock: ClockMode, sync: bool) -> (App, SocketAddr, SocketAddr) {
    let mut app = headless(default_scene(), clock);
    let (agent, monitor) = plugin::add(
        &mut app,
        SexpOptions {
            agent: Some("127.0.0.1:0".parse().unwrap()),
            monitor: Some("127.0.0.1:0".parse().unwrap()),
            sync,
            ..Default::default()
        },
    )
    .expect("binds");
    finish_setup(&mut app);
    (app, agent.unwrap(), monitor.unwrap())
}

fn drive<T>(app: &mut App, client: JoinHandle<T>) -> T {
    common::drive(app, client, Duration::from_micros(200))
}

/// An agent port and a monitor port (`sexp_app`) with `client(agent, monitor)` playing against
/// them in a thread while this thread runs the frames; returns what the client returns.
fn serve<T: Send + 'static>(
    clock: ClockMode,
    sync: bool,
    client: impl FnOnce(SocketAddr, SocketAddr) -> T + Send + 'static,
) -> T {
    serve_then_inspect(clock, sync, client).1
}

/// [`serve`], handing back the app too, for a test that looks at the world afterwards.
fn serve_then_inspect<T: Send + 'static>(
    clock: ClockMode,
    sync: bool,
    client: impl FnOnce(SocketAddr, SocketAddr) -> T + Send + 'static,
) -> (App, T) {
    let (mut app, agent, monitor) = sexp_app(clock, sync);
    let out = drive(&mut app, std::thread::spawn(move || client(agent, monitor)));
    (app, out)
}

fn find<'a>(msg: &'a [Sexp], head: &str) -> Option<&'a Sexp> {
    msg.iter().find(|e| e.is(head))
}

fn time_of(msg: &[Sexp]) -> f64 {
    find(msg, "time")
        .unwrap()
        .find("now")
        .unwrap()
        .arg(0)
        .unwrap()
        .as_f64()
        .unwrap()
}

fn joint_deg(msg: &[Sexp], joint: &str) -> f64 {
    msg.iter()
        .filter(|e| e.is("HJ"))
        .find(|e| e.find("n").and_then(|n| n.arg(0)).and_then(|a| a.as_atom()) == Some(joint))
        .and_then(|e| e.find("ax"))
        .and_then(|ax| ax.arg(0))
        .map(|v| v.as_f64().unwrap())
        .unwrap_or_else(|| panic!("no HJ for {joint}"))
}

fn object_pos(msg: &[Sexp], name: &str) -> [f64; 3] {
    let p = msg
        .iter()
        .filter(|e| e.is("pos"))
        .find(|e| e.find("n").and_then(|n| n.arg(0)).and_then(|a| a.as_atom()) == Some(name))
        .and_then(|e| e.find("p"))
        .unwrap_or_else(|| panic!("no pos for {name}"));
    [0, 1, 2].map(|i| p.arg(i).unwrap().as_f64().unwrap())
}

fn atom_in(msg: &[Sexp], head: &str, sub: &str) -> String {
    let e = find(msg, head).unwrap_or_else(|| panic!("no ({head} …)"));
    let v = if sub.is_empty() {
        e.arg(0)
    } else {
        e.find(sub).and_then(|s| s.arg(0))
    };
    v.unwrap().as_atom().unwrap().to_string()
}

/// Whether `msg` carries a `(referee (code <code>) …)` event.
fn referee_says(msg: &[Sexp], code: &str) -> bool {
    msg.iter().any(|e| {
        e.is("referee")
            && e.find("code")
                .and_then(|c| c.arg(0))
                .and_then(|a| a.as_atom())
                == Some(code)
    })
}

/// Whether `msg` is the `(ok <head>)` answer to a command with that head.
fn is_ok(msg: &[Sexp], head: &str) -> bool {
    find(msg, "ok").is_some_and(|ok| ok.arg(0).and_then(|a| a.as_atom()) == Some(head))
}

fn is_error(msg: &[Sexp]) -> Option<String> {
    find(msg, "error").map(|e| e.arg(0).map(|a| a.to_string()).unwrap_or_default())
}

#[test]
fn init_is_accepted_or_refused_with_a_reason() {
    serve(
        ClockMode::RealTime { speed: 1.0 },
        false,
        move |agent, _| {
            let mut wrong_model = Peer::open(agent);
            wrong_model.send("(init nao teamA 1)");
            let reply = wrong_model.recv().expect("an error before the close");
            let reason = is_error(&reply).expect("(error …)");
            assert!(reason.contains("arm6"), "{reason}");
            assert!(wrong_model.closed());

            let mut no_init = Peer::open(agent);
            no_init.send("(shoulder_pan 10 0 1 0 0)");
            let reason = is_error(&no_init.recv().unwrap()).unwrap();
            assert!(reason.contains("init"), "{reason}");
            assert!(no_init.closed());

            let mut first = Peer::agent(agent);
            let hello = first.recv().expect("a perception");
            assert!(find(&hello, "time").is_some() && find(&hello, "GS").is_some());

            let mut second = Peer::open(agent);
            second.send("(init arm6 teamB 2)");
            let reason = is_error(&second.recv().unwrap()).unwrap();
            assert!(reason.contains("controlled by"), "{reason}");
            assert!(second.closed());
            // The first keeps control and keeps getting perceptions.
            assert!(first.recv().is_some());
        },
    );
}

#[test]
fn an_agent_alone_starts_the_session_and_its_effectors_move_joints() {
    let (times, pans, first) = serve(ClockMode::Fast, true, move |agent, _| {
        let mut a = Peer::agent(agent);
        let first = a.recv().unwrap();
        let mut times = vec![time_of(&first)];
        let mut pans = vec![];
        for _ in 0..240 {
            // 30° on the pan joint, PD 60 N·m/rad, 4 N·m·s/rad.
            a.send("(shoulder_pan 30 0 60 4 0)(syn)");
            let p = a.recv().unwrap();
            times.push(time_of(&p));
            pans.push(joint_deg(&p, "shoulder_pan"));
        }
        (times, pans, first)
    });
    // One perception per cycle of 4 steps, exactly.
    for w in times.windows(2) {
        assert!((w[1] - w[0] - 4.0 * DT).abs() < 1.5e-3, "{:?}", w);
    }
    let hj: Vec<_> = first.iter().filter(|e| e.is("HJ")).collect();
    assert_eq!(hj.len(), 8, "one HJ per joint of arm6 (6 arm + 2 fingers)");
    assert_eq!(atom_in(&first, "GS", "pm"), "BeforeStart");
    let red = object_pos(&first, "cube_red");
    assert!(
        (red[0] - 0.5).abs() < 0.01 && (red[2] - 1.025).abs() < 0.01,
        "{red:?}"
    );
    assert!(
        first.iter().any(|e| e.is("quat")),
        "poses carry quaternions"
    );
    // The agent that claims the arm starts the session, as rcssservermj applies effectors
    // from the first cycle: nobody else pressed Start here.
    assert_eq!(atom_in(&first, "state", ""), "RUNNING");
    let last = *pans.last().unwrap();
    assert!(
        (last - 30.0).abs() < 2.0,
        "pan reached {last}° (wanted 30°): {pans:?}"
    );
}

#[test]
fn a_pause_is_announced_and_ignored_effectors_are_warned_once() {
    serve(
        ClockMode::RealTime { speed: 1.0 },
        false,
        move |agent, monitor| {
            let mut a = Peer::agent(agent);
            let running = a.until("a RUNNING perception", |msg| {
                find(msg, "state").is_some() && atom_in(msg, "state", "") == "RUNNING"
            });
            let mut m = Peer::open(monitor);
            m.send("(pause)");
            // No cycle runs while paused, yet the agent hears of the pause.
            let paused = a.until("a PAUSED perception", |msg| {
                find(msg, "state").is_some() && atom_in(msg, "state", "") == "PAUSED"
            });
            assert!(time_of(&paused) >= time_of(&running));
            for _ in 0..3 {
                a.send("(shoulder_pan 30 0 60 4 0)");
            }
            // Read everything up to the resumed perceptions: exactly one warning among it.
            let mut warnings = Vec::new();
            loop {
                let msg = a.recv().expect("connection stays open");
                if find(&msg, "warning").is_some() {
                    warnings.push(atom_in(&msg, "warning", ""));
                    if warnings.len() == 1 {
                        m.send("(start)");
                    }
                }
                if find(&msg, "state").is_some()
                    && atom_in(&msg, "state", "") == "RUNNING"
                    && time_of(&msg) > time_of(&paused)
                {
                    break;
                }
            }
            assert_eq!(warnings.len(), 1, "{warnings:?}");
            assert!(warnings[0].contains("PAUSED"), "{warnings:?}");
        },
    );
}

#[test]
fn effectors_drive_the_arm_once_running() {
    let pans = serve(ClockMode::Fast, true, move |agent, monitor| {
        let mut m = Peer::open(monitor);
        m.send("(start)");
        m.until("(ok start)", |msg| is_ok(msg, "start"));
        let mut a = Peer::agent(agent);
        a.recv().unwrap();
        let mut pans = vec![];
        for _ in 0..240 {
            a.send("(shoulder_pan 30 0 60 4 0)");
            pans.push(joint_deg(&a.recv().unwrap(), "shoulder_pan"));
        }
        pans
    });
    let last = *pans.last().unwrap();
    assert!(
        (last - 30.0).abs() < 2.0,
        "pan reached {last}° (wanted 30°)"
    );
    assert!(
        pans[10] > 0.5,
        "pan moves towards the target early: {:?}",
        &pans[..12]
    );
}

#[test]
fn sync_mode_waits_then_drops_a_silent_agent() {
    let (stalled_for, resumed) = serve(ClockMode::Fast, true, move |agent, monitor| {
        let mut a = Peer::agent(agent);
        a.recv().unwrap();
        for _ in 0..5 {
            a.send("(syn)");
            a.recv().unwrap();
        }
        // Silence: the cycle waits. A monitor sees time stand still.
        let mut m = Peer::open(monitor);
        let t0 = time_of(&m.recv().unwrap());
        std::thread::sleep(Duration::from_secs(2));
        m.send("(unknownCommand)");
        let frame = m.until("a world frame", |msg| find(msg, "time").is_some());
        assert!(
            (time_of(&frame) - t0).abs() < 1e-9,
            "time moved while waiting"
        );
        // After 5 s the agent is dropped with a reason and the sim runs on.
        let silent = Instant::now();
        let reply = a.until("the drop", |msg| is_error(msg).is_some());
        let reason = is_error(&reply).unwrap();
        assert!(reason.contains("sync"), "{reason}");
        assert!(a.closed());
        let stalled_for = silent.elapsed() + Duration::from_secs(2);
        let later = m.until("time moving again", |msg| {
            find(msg, "time").is_some() && time_of(msg) > t0 + 0.1
        });
        (stalled_for, time_of(&later) > t0)
    });
    assert!(
        stalled_for >= Duration::from_millis(4800) && stalled_for < Duration::from_secs(7),
        "dropped after {stalled_for:?}"
    );
    assert!(resumed);
}

/// A sync cycle crosses no thread: while a sync agent controls the arm, the simulation thread
/// reads its messages from the socket itself while the gate waits (the reader thread only takes
/// over what is left unread for a millisecond), so most of them are read directly.
#[test]
fn a_sync_agents_messages_are_read_by_the_waiting_simulation() {
    use armsim::protocol::sexp::plugin::AgentPort;
    const CYCLES: u64 = 300;
    let (app, agent) = serve_then_inspect(ClockMode::Fast, true, move |agent, _| {
        let mut a = Peer::agent(agent);
        a.recv().unwrap();
        for _ in 0..CYCLES {
            a.send("(syn)");
            a.recv().expect("a perception every cycle");
        }
        a // still connected while the port is inspected
    });
    let direct = app.world().resource::<AgentPort>().messages_read_directly();
    assert!(
        direct >= CYCLES / 2,
        "the simulation read {direct} of the agent's {CYCLES} messages itself"
    );
    drop(agent);
}

#[test]
fn a_disconnect_mid_cycle_does_not_stall() {
    serve(ClockMode::Fast, true, move |agent, monitor| {
        let mut a = Peer::agent(agent);
        a.recv().unwrap();
        let mut m = Peer::open(monitor);
        let t0 = time_of(&m.recv().unwrap());
        drop(a);
        let t1 = Instant::now();
        m.until("time moving again", |msg| {
            find(msg, "time").is_some() && time_of(msg) > t0 + 0.05
        });
        assert!(
            t1.elapsed() < Duration::from_secs(2),
            "stalled {:?}",
            t1.elapsed()
        );
        // A new agent can take over.
        let mut b = Peer::open(agent);
        b.send("(init arm6 teamA 2)");
        assert!(find(&b.recv().unwrap(), "time").is_some());
    });
}

#[test]
fn monitor_commands_change_the_world() {
    let (app, ()) = serve_then_inspect(
        ClockMode::RealTime { speed: 1.0 },
        false,
        move |_, monitor| {
            let mut m = Peer::open(monitor);
            let first = m.recv().unwrap();
            assert_eq!(atom_in(&first, "state", ""), "IDLE");
            assert_eq!(atom_in(&first, "rules", ""), "pick_and_place");
            // The reply to this command, not an earlier one still on its way.
            let ok = |m: &mut Peer, cmd: &str| {
                m.send(cmd);
                let head = cmd
                    .trim_start_matches('(')
                    .split([' ', ')'])
                    .next()
                    .unwrap();
                let reply = m.until("a reply", |msg| {
                    is_ok(msg, head) || find(msg, "error").is_some()
                });
                assert!(find(&reply, "ok").is_some(), "{cmd}: {reply:?}");
            };
            ok(&mut m, "(start)");
            m.until("RUNNING", |msg| {
                find(msg, "state").is_some() && atom_in(msg, "state", "") == "RUNNING"
            });
            ok(&mut m, "(pause)");
            let paused = m.until("PAUSED", |msg| {
                find(msg, "state").is_some() && atom_in(msg, "state", "") == "PAUSED"
            });
            let t = time_of(&paused);
            ok(&mut m, "(step 24)");
            m.until("exactly 24 steps", |msg| {
                find(msg, "time").is_some() && (time_of(msg) - (t + 24.0 * DT)).abs() < 2e-4
            });
            ok(&mut m, "(cube (n cube_red)(pos 0.3 0.2 1.2))");
            let moved = m.until("cube_red moved", |msg| {
                find(msg, "pos").is_some() && (object_pos(msg, "cube_red")[1] - 0.2).abs() < 1e-3
            });
            assert!((object_pos(&moved, "cube_red")[0] - 0.3).abs() < 1e-3);
            ok(&mut m, "(playMode TimeUp)");
            m.until("TimeUp", |msg| {
                find(msg, "GS").is_some() && atom_in(msg, "GS", "pm") == "TimeUp"
            });
            ok(&mut m, "(kickOff)");
            m.until("PlayOn and RUNNING", |msg| {
                find(msg, "GS").is_some()
                    && atom_in(msg, "GS", "pm") == "PlayOn"
                    && atom_in(msg, "state", "") == "RUNNING"
            });
            ok(&mut m, "(reset)");
            let reset = m.until("IDLE after reset", |msg| {
                find(msg, "state").is_some() && atom_in(msg, "state", "") == "IDLE"
            });
            assert!(time_of(&reset) < 0.1, "time restarts: {}", time_of(&reset));
            // A reset and a kick-off in one message (as `armsim.connect`'s reset sends them):
            // the kick-off waits for the reset, which would otherwise put BeforeStart back.
            m.send("(reset)(kickOff)");
            m.until(
                "PlayOn and RUNNING after reset and kick-off in one message",
                |msg| {
                    find(msg, "GS").is_some()
                        && atom_in(msg, "GS", "pm") == "PlayOn"
                        && atom_in(msg, "state", "") == "RUNNING"
                        && time_of(msg) < 0.5
                },
            );
            m.send("(dropBall)");
            let err = m.until("an error", |msg| find(msg, "error").is_some());
            assert!(is_error(&err).unwrap().contains("unknown command"));
            m.send("(cube (n no_such_cube)(pos 0 0 1))");
            let err = m.until("an error", |msg| find(msg, "error").is_some());
            assert!(
                is_error(&err).unwrap().contains("cube_red"),
                "lists the objects"
            );
            // A malformed expression is answered and skipped; the next one still runs.
            m.send("(pause))(start)");
            m.until("an error", |msg| find(msg, "error").is_some());
            ok(&mut m, "(killsim)");
        },
    );
    assert!(
        app.should_exit().is_some(),
        "(killsim) shuts the simulation down"
    );
}

#[test]
fn the_rule_book_scores_and_puts_back_fallen_cubes() {
    serve(
        ClockMode::RealTime { speed: 1.0 },
        false,
        move |_, monitor| {
            let mut m = Peer::open(monitor);
            m.recv().unwrap();
            m.send("(kickOff)");
            // Pushed into the goal zone (centre 0.45, 0.3; half size 0.08): slides in and rests.
            m.send("(cube (n cube_red)(pos 0.45 0.25 1.026)(vel 0 0.6 0))");
            let scored = m.until("SCORED", |msg| referee_says(msg, "SCORED"));
            let score = find(&scored, "GS")
                .unwrap()
                .find("score")
                .unwrap()
                .arg(0)
                .unwrap()
                .as_u64()
                .unwrap();
            assert_eq!(score, 1);
            let red = object_pos(&scored, "cube_red");
            assert!((red[1] - 0.3).abs() <= 0.08, "in the zone: {red:?}");
            // Off the table: put back where the scene had it.
            m.send("(cube (n cube_blue)(pos 1.5 0.0 1.2))");
            let replaced = m.until("OBJECT_REPLACED", |msg| {
                referee_says(msg, "OBJECT_REPLACED")
            });
            let _ = replaced;
            let back = m.until("cube_blue back", |msg| {
                find(msg, "pos").is_some() && {
                    let p = object_pos(msg, "cube_blue");
                    (p[0] - 0.48).abs() < 0.01 && (p[1] - 0.12).abs() < 0.01
                }
            });
            assert!(object_pos(&back, "cube_blue")[2] > 1.0);
        },
    );
}

#[test]
fn oversized_frames_are_refused_before_allocation() {
    serve(
        ClockMode::RealTime { speed: 1.0 },
        false,
        move |agent, _| {
            let mut a = Peer::open(agent);
            // Announces 2 GiB; the server refuses from the header and closes.
            a.s.write_all(&0x8000_0000u32.to_be_bytes()).unwrap();
            let reply = a.recv().expect("an error before the close");
            assert!(is_error(&reply).unwrap().contains("exceeds"), "{reply:?}");
            assert!(a.closed());
        },
    );
}

#[test]
fn a_connection_without_init_is_closed_after_ten_seconds() {
    let waited = serve(
        ClockMode::RealTime { speed: 1.0 },
        false,
        move |agent, _| {
            let mut a = Peer::open(agent);
            // The server's deadline is 10 s: the client's default read timeout is the same, so
            // give this one read room to see the server's answer under load.
            a.s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            let t0 = Instant::now();
            let reply = a.recv().expect("an error before the close");
            let reason = is_error(&reply).expect("(error …)");
            assert!(reason.contains("init"), "{reason}");
            assert!(a.closed());
            t0.elapsed()
        },
    );
    assert!(
        waited >= Duration::from_secs(9) && waited < Duration::from_secs(15),
        "closed after {waited:?}"
    );
}

/// Connections that never send `(init …)` are counted apart from the agents: 200 of them
/// cannot fill the port, a real agent is served at once, and the oldest silent ones are the
/// ones cut off.
#[test]
fn unfinished_handshakes_never_lock_out_a_real_agent() {
    use armsim::protocol::sexp::plugin::MAX_PENDING_AGENTS;
    const SILENT: usize = 200;
    const _: () = assert!(
        MAX_PENDING_AGENTS < SILENT,
        "the test must overflow the cap"
    );
    serve(
        ClockMode::RealTime { speed: 1.0 },
        false,
        move |agent, _| {
            let silent: Vec<Peer> = (0..SILENT).map(|_| Peer::open(agent)).collect();
            let mut real = Peer::agent(agent);
            let hello = real.recv().expect("a perception, not a closed socket");
            assert!(is_error(&hello).is_none(), "refused: {hello:?}");
            assert!(find(&hello, "time").is_some(), "{hello:?}");
            assert!(real.recv().is_some(), "perceptions keep coming");
            // The first silent connections were cut off to make room; the newest wait on.
            let mut silent = silent;
            silent[0]
                .s
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            assert!(
                silent[0].closed(),
                "the oldest silent connection is cut off"
            );
            let newest = silent.last_mut().unwrap();
            newest
                .s
                .set_read_timeout(Some(Duration::from_millis(200)))
                .unwrap();
            let mut b = [0u8; 1];
            let still_open = matches!(
                std::io::Read::read(&mut newest.s, &mut b),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut
            );
            assert!(still_open, "the newest silent connection is still waiting");
        },
    );
}

fn object_quat(msg: &[Sexp], name: &str) -> Option<[f64; 4]> {
    let q = msg
        .iter()
        .filter(|e| e.is("quat"))
        .find(|e| e.find("n").and_then(|n| n.arg(0)).and_then(|a| a.as_atom()) == Some(name))?
        .find("q")?;
    let mut out = [0.0; 4];
    for (i, v) in out.iter_mut().enumerate() {
        *v = q.arg(i)?.as_f64().ok()?;
    }
    Some(out)
}

#[test]
fn an_agent_reconnecting_at_once_is_never_refused() {
    let refusals = serve(
        ClockMode::RealTime { speed: 1.0 },
        false,
        move |agent, _| {
            let mut refusals = Vec::new();
            for _ in 0..40 {
                let mut a = Peer::agent(agent);
                let first = a.recv().expect("a perception or an error");
                if let Some(reason) = is_error(&first) {
                    refusals.push(reason);
                }
                // Gone at once, as a client restarting in a loop is.
            }
            refusals
        },
    );
    assert!(
        refusals.is_empty(),
        "{} of 40 immediate reconnects refused: {:?}",
        refusals.len(),
        refusals.first()
    );
}

#[test]
fn a_message_of_a_million_bytes_of_expressions_costs_one_error() {
    serve(
        ClockMode::RealTime { speed: 1.0 },
        false,
        move |_, monitor| {
            let mut m = Peer::open(monitor);
            // 349,525 `(x)` in a frame just under the 1 MiB limit.
            m.send(&"(x)".repeat((1 << 20) / 3));
            m.send("(pause)");
            let mut errors = Vec::new();
            m.until("(ok pause)", |msg| {
                if let Some(reason) = is_error(msg) {
                    errors.push(reason);
                }
                is_ok(msg, "pause")
            });
            assert_eq!(
                errors.len(),
                1,
                "one error per message, got {}",
                errors.len()
            );
            assert!(errors[0].contains("ignored"), "{}", errors[0]);
        },
    );
}

#[test]
fn huge_finite_numbers_are_refused_and_never_poison_the_world() {
    let (app, ()) = serve_then_inspect(
        ClockMode::RealTime { speed: 1.0 },
        false,
        move |agent, monitor| {
            let mut m = Peer::open(monitor);
            m.send("(cube (n cube_blue)(pos 3e38 0.1 1.2))");
            let err = m.until("an error", |msg| is_error(msg).is_some());
            assert!(
                is_error(&err).unwrap().contains("outside the world"),
                "{err:?}"
            );
            // Huge but finite components: a direction all the same, normalised without overflow.
            m.send("(cube (n cube_blue)(pos 0.45 0.1 1.2)(quat 3e38 3e38 3e38 3e38))");
            m.until("(ok cube)", |msg| is_ok(msg, "cube"));
            let frame = m.until("a world frame", |msg| {
                object_quat(msg, "cube_blue").is_some()
            });
            let q = object_quat(&frame, "cube_blue").unwrap();
            let norm = q.iter().map(|v| v * v).sum::<f64>().sqrt();
            assert!((norm - 1.0).abs() < 1e-3, "{q:?}");

            let mut a = Peer::agent(agent);
            a.recv().expect("a perception");
            a.send("(shoulder_pan 10 0 3e38 0 0)");
            let err = a.until("an error", |msg| is_error(msg).is_some());
            assert!(is_error(&err).unwrap().contains("ignored"), "{err:?}");
        },
    );
    assert_ne!(state(&app), armsim::session::SessionState::Error);
}

#[test]
fn a_teleop_observer_never_takes_the_arm_from_a_reconnecting_agent() {
    let mut app = headless(default_scene(), ClockMode::RealTime { speed: 1.0 });
    let (agent, _) = plugin::add(
        &mut app,
        SexpOptions {
            agent: Some("127.0.0.1:0".parse().unwrap()),
            ..Default::default()
        },
    )
    .expect("binds");
    let agent = agent.unwrap();
    let teleop = common::teleop::add_teleop(&mut app);
    finish_setup(&mut app);
    let (refusals, role) = drive(
        &mut app,
        std::thread::spawn(move || {
            let mut first = Peer::agent(agent);
            first.recv().expect("a perception");
            // A headset connects while the agent controls: it observes.
            let mut headset = common::teleop::Client::open(teleop);
            let role = headset.hello()["payload"]["extensions"]["role"]
                .as_str()
                .unwrap()
                .to_string();
            // The agent restarts in a loop: the arm must come back to it every time.
            drop(first);
            let mut refusals = 0;
            for _ in 0..10 {
                let mut a = Peer::agent(agent);
                if is_error(&a.recv().expect("a reply")).is_some() {
                    refusals += 1;
                }
            }
            (refusals, role)
        }),
    );
    assert_eq!(role, "observer");
    assert_eq!(refusals, 0, "a teleop observer took the arm from the agent");
    let owner = app
        .world()
        .resource::<armsim::protocol::registry::Connections>();
    assert_ne!(owner.owner().map(|(p, _)| p.as_str()), Some("teleop"));
}
