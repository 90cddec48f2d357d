//! RCSSServerMJ's message contents for an arm on a table: the agent's perception and the monitor's
//! world frame (built from the world, in the rcssserver style: degrees for joints, one `(HJ …)`
//! per joint), and the parsing of agent effectors and monitor commands into typed values with a
//! reason for every refusal.

use glam::{Quat, Vec3};

use super::Sexp;
use crate::protocol::dataset::DatasetControl;
use crate::referee::LoggedEvent;
use crate::referee::PlayMode;
use crate::robot::RobotModel;
use crate::sim::SimView;
use crate::sim::unit_quat;
use crate::state::{TensorState, snapshot};

/// A number with `decimals` digits; non-finite values (never expected) print as `nan`.
fn num(v: f64, decimals: usize) -> Sexp {
    Sexp::fixed(v, decimals).unwrap_or_else(|_| Sexp::atom("nan"))
}

fn named(head: &str, name: &str, rest: Sexp) -> Sexp {
    Sexp::list([
        Sexp::atom(head),
        Sexp::list([Sexp::atom("n"), Sexp::atom(name)]),
        rest,
    ])
}

fn pos(name: &str, p: Vec3) -> Sexp {
    named(
        "pos",
        name,
        Sexp::list([
            Sexp::atom("p"),
            num(p.x.into(), 4),
            num(p.y.into(), 4),
            num(p.z.into(), 4),
        ]),
    )
}

fn quat(name: &str, q: Quat) -> Sexp {
    // rcssserver order: w first.
    named(
        "quat",
        name,
        Sexp::list([
            Sexp::atom("q"),
            num(q.w.into(), 5),
            num(q.x.into(), 5),
            num(q.y.into(), 5),
            num(q.z.into(), 5),
        ]),
    )
}

/// What the referee and the session add to a cycle's message.
pub struct GameInfo<'a> {
    pub sim_time: f64,
    pub play_time: f64,
    pub play_mode: PlayMode,
    pub score: u32,
    pub rules: &'a str,
    pub session: &'a str,
    pub events: &'a [&'a LoggedEvent],
}

fn game_state(info: &GameInfo<'_>) -> Sexp {
    Sexp::list([
        Sexp::atom("GS"),
        Sexp::list([Sexp::atom("t"), num(info.play_time, 2)]),
        Sexp::list([Sexp::atom("pm"), Sexp::atom(info.play_mode.as_str())]),
        Sexp::list([Sexp::atom("score"), Sexp::from(info.score)]),
    ])
}

/// The joints, the end effector and every object, shared by perceptions and world frames; read
/// from the state snapshot (joints in the robot's order, objects in the scene's).
fn world_exprs(snap: &TensorState, world: &SimView<'_>, out: &mut Vec<Sexp>) {
    let robot = &world.robot;
    if let Some(r) = snap.robots.get(&robot.name) {
        let q = r.model_order(&r.joint_pos, robot);
        let qd = r.model_order(&r.joint_vel, robot);
        for (j, joint) in robot.joints.iter().enumerate() {
            out.push(Sexp::list([
                Sexp::atom("HJ"),
                Sexp::list([Sexp::atom("n"), Sexp::atom(joint.name.as_str())]),
                Sexp::list([Sexp::atom("ax"), num(f64::from(q[j]).to_degrees(), 2)]),
                Sexp::list([Sexp::atom("vx"), num(f64::from(qd[j]).to_degrees(), 2)]),
            ]));
        }
        out.push(pos("ee", r.ee_position(robot)));
        if let Some(p) = r.link_pose(robot.ee_link) {
            out.push(quat("ee", p.rotation));
        }
    }
    for o in &world.objects {
        if let Some(s) = snap.objects.get(&o.name) {
            let (p, _, _) = s.pose();
            out.push(pos(&o.name, p.translation));
            out.push(quat(&o.name, p.rotation));
        }
    }
}

fn referee_exprs(events: &[&LoggedEvent], out: &mut Vec<Sexp>) {
    for e in events {
        out.push(Sexp::list([
            Sexp::atom("referee"),
            Sexp::list([Sexp::atom("seq"), Sexp::from(e.seq)]),
            Sexp::list([Sexp::atom("t"), num(e.sim_time, 3)]),
            Sexp::list([Sexp::atom("code"), Sexp::atom(e.event.code())]),
            Sexp::list([Sexp::atom("msg"), Sexp::atom(e.event.to_string())]),
        ]));
    }
}

/// An agent's perception: `(time (now t))(GS …)(HJ …)…(pos (n ee)…)(quat (n ee)…)`, every
/// object's pose, and the referee's events since the last perception.
pub fn perception(world: &SimView<'_>, info: &GameInfo<'_>) -> Vec<Sexp> {
    let mut out = vec![
        Sexp::list([
            Sexp::atom("time"),
            Sexp::list([Sexp::atom("now"), num(info.sim_time, 4)]),
        ]),
        game_state(info),
        // Whether effectors apply now (RUNNING) or the session is paused, idle or in error.
        Sexp::list([Sexp::atom("state"), Sexp::atom(info.session)]),
    ];
    world_exprs(&snapshot(world), world, &mut out);
    referee_exprs(info.events, &mut out);
    out
}

/// A monitor's world frame: like a perception plus the session state and the rule book.
pub fn world_frame(world: &SimView<'_>, info: &GameInfo<'_>) -> Vec<Sexp> {
    let mut out = vec![
        Sexp::list([
            Sexp::atom("time"),
            Sexp::list([Sexp::atom("now"), num(info.sim_time, 4)]),
        ]),
        Sexp::list([Sexp::atom("state"), Sexp::atom(info.session)]),
        Sexp::list([Sexp::atom("rules"), Sexp::atom(info.rules)]),
        game_state(info),
    ];
    world_exprs(&snapshot(world), world, &mut out);
    referee_exprs(info.events, &mut out);
    out
}

/// One joint's effector: `(<joint> <q deg> <dq deg/s> <kp> <kd> <tau Nm>)`, stored in SI units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JointEffector {
    /// Target position (rad) and velocity (rad/s).
    pub q: f32,
    pub dq: f32,
    /// N·m/rad and N·m·s/rad.
    pub kp: f32,
    pub kd: f32,
    /// Feed-forward torque (N·m).
    pub tau: f32,
}

impl JointEffector {
    /// kp(q − q̂) + kd(dq − dq̂) + tau for the measured `q_hat`, `dq_hat`.
    pub fn torque(&self, q_hat: f32, dq_hat: f32) -> f32 {
        self.kp * (self.q - q_hat) + self.kd * (self.dq - dq_hat) + self.tau
    }
}

/// One agent message's effectors. Joints not mentioned keep their previous effector.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Effectors {
    pub joints: Vec<(usize, JointEffector)>,
    /// `(gripper <0..1>)`: 0 open, 1 closed.
    pub gripper: Option<f32>,
    /// Problems to tell the agent about (unknown effectors, bad arguments).
    pub problems: Vec<String>,
}

/// Largest |q| (deg) and |dq| (deg/s) an effector may name.
pub const EFFECTOR_MAX_ANGLE: f32 = 1e6;
/// Largest kp, kd and |tau| an effector may name. With the angle bound, the torque
/// `kp(q−q̂)+kd(dq−dq̂)+tau` stays finite whatever the measured state.
pub const EFFECTOR_MAX_GAIN: f32 = 1e9;

fn effector_overflows(q: f32, dq: f32, kp: f32, kd: f32, tau: f32) -> bool {
    q.abs() > EFFECTOR_MAX_ANGLE
        || dq.abs() > EFFECTOR_MAX_ANGLE
        || kp > EFFECTOR_MAX_GAIN
        || kd > EFFECTOR_MAX_GAIN
        || tau.abs() > EFFECTOR_MAX_GAIN
}

/// Reads an agent's message. `(syn)` is "nothing to do"; anything else that is not a joint of
/// `robot` or `gripper` is reported and ignored.
pub fn parse_effectors(robot: &RobotModel, exprs: &[Sexp]) -> Effectors {
    let mut out = Effectors::default();
    for e in exprs {
        let Some(head) = e.head() else {
            out.problems
                .push(format!("expected (<effector> …), got {e}"));
            continue;
        };
        match head {
            "syn" => {}
            "init" => out
                .problems
                .push("already initialised; (init …) ignored".into()),
            "gripper" => match e.arg(0).map(|a| a.as_f32()) {
                Some(Ok(v)) if (0.0..=1.0).contains(&v) => out.gripper = Some(v),
                _ => out
                    .problems
                    .push(format!("(gripper <0..1>) expected, got {e}")),
            },
            joint => match robot.joint_index(joint) {
                None => out
                    .problems
                    .push(format!("unknown effector {joint:?} ignored")),
                Some(j) => {
                    let args: Result<Vec<f32>, _> = e.args().iter().map(|a| a.as_f32()).collect();
                    match args.as_deref() {
                        Ok([q, dq, kp, kd, tau])
                            if *kp >= 0.0 && *kd >= 0.0 && !effector_overflows(*q, *dq, *kp, *kd, *tau) =>
                        {
                            out.joints.push((
                                j,
                                JointEffector {
                                    q: q.to_radians(),
                                    dq: dq.to_radians(),
                                    kp: *kp,
                                    kd: *kd,
                                    tau: *tau,
                                },
                            ));
                        }
                        Ok([q, dq, kp, kd, tau]) if effector_overflows(*q, *dq, *kp, *kd, *tau) => {
                            out.problems.push(format!(
                                "({joint} …) ignored: |q|, |dq| ≤ {EFFECTOR_MAX_ANGLE:e} and kp, kd, |tau| ≤ {EFFECTOR_MAX_GAIN:e}, got {e}"
                            ))
                        }
                        _ => out.problems.push(format!(
                            "({joint} <q deg> <dq deg/s> <kp ≥ 0> <kd ≥ 0> <tau>) expected, got {e}"
                        )),
                    }
                }
            },
        }
    }
    out
}

/// A monitor command.
#[derive(Clone, Debug, PartialEq)]
pub enum MonitorCommand {
    Start,
    Pause,
    Step(u32),
    Reset,
    KickOff,
    PlayMode(PlayMode),
    PlaceObject {
        name: String,
        pos: Vec3,
        quat: Option<Quat>,
        vel: Option<Vec3>,
    },
    KillSim,
    /// `(lerobot end|rerecord|stop)`: armsim's, for the LeRobot dataset being recorded.
    Dataset(DatasetControl),
}

fn vec3_of(e: &Sexp) -> Result<Vec3, String> {
    let v: Result<Vec<f32>, _> = e.args().iter().map(|a| a.as_f32()).collect();
    match v.as_deref() {
        Ok([x, y, z]) => Ok(Vec3::new(*x, *y, *z)),
        _ => Err(format!("expected three numbers in {e}")),
    }
}

/// A team side as rcssservermj writes it in `(kickOff <side>)`.
fn is_side(text: &str) -> bool {
    matches!(
        text,
        "Left" | "left" | "L" | "l" | "Right" | "right" | "R" | "r"
    )
}

/// Reads one monitor command.
pub fn parse_monitor_command(e: &Sexp) -> Result<MonitorCommand, String> {
    let head = e
        .head()
        .ok_or_else(|| format!("expected (<command> …), got {e}"))?;
    let no_args = |cmd: MonitorCommand| {
        if e.args().is_empty() {
            Ok(cmd)
        } else {
            Err(format!("({head}) takes no arguments"))
        }
    };
    match head {
        "start" => no_args(MonitorCommand::Start),
        "pause" => no_args(MonitorCommand::Pause),
        "reset" => no_args(MonitorCommand::Reset),
        // rcssservermj's monitor clients send `(kickOff Left)`: the side names the kicking team,
        // which a pick-and-place referee has no use for, so it is checked and dropped.
        "kickOff" => match e.args() {
            [] => Ok(MonitorCommand::KickOff),
            [side] if side.as_atom().is_some_and(is_side) => Ok(MonitorCommand::KickOff),
            _ => Err(format!(
                "(kickOff [Left|Right]) takes at most one side, Left or Right; got {e}"
            )),
        },
        "killsim" => no_args(MonitorCommand::KillSim),
        "lerobot" => {
            let words: Vec<&str> = DatasetControl::ALL.iter().map(|c| c.word()).collect();
            match e.args() {
                [word] => word
                    .as_atom()
                    .and_then(DatasetControl::parse)
                    .map(MonitorCommand::Dataset)
                    .ok_or_else(|| {
                        format!("(lerobot {word}): expected one of {}", words.join(", "))
                    }),
                _ => Err(format!("(lerobot …) takes one of {}", words.join(", "))),
            }
        }
        "step" => match e.args() {
            [] => Ok(MonitorCommand::Step(1)),
            [n] => match n.as_u64() {
                Ok(n) if (1..=100_000).contains(&n) => Ok(MonitorCommand::Step(n as u32)),
                _ => Err(format!("(step <n>) needs 1 ≤ n ≤ 100000, got {n}")),
            },
            _ => Err("(step <n>) takes one number".into()),
        },
        "playMode" => {
            let [mode] = e.args() else {
                return Err("(playMode <mode>) takes one mode".into());
            };
            let text = mode
                .as_atom()
                .ok_or_else(|| format!("(playMode <mode>) expected, got {e}"))?;
            text.parse()
                .map(MonitorCommand::PlayMode)
                .map_err(|err| format!("{err}"))
        }
        "cube" => {
            let name = e
                .find("n")
                .and_then(|n| n.arg(0))
                .and_then(|n| n.as_atom())
                .ok_or("(cube (n <name>)(pos x y z)…) needs (n <name>)")?
                .to_string();
            let pos = vec3_of(e.find("pos").ok_or("(cube …) needs (pos x y z)")?)?;
            let quat = match e.find("quat") {
                None => None,
                Some(q) => {
                    let v: Result<Vec<f32>, _> = q.args().iter().map(|a| a.as_f32()).collect();
                    match v.as_deref() {
                        Ok([w, x, y, z]) => Some(
                            unit_quat(Quat::from_xyzw(*x, *y, *z, *w))
                                .ok_or("(quat w x y z) must be a non-zero quaternion")?,
                        ),
                        _ => return Err(format!("expected (quat w x y z), got {q}")),
                    }
                }
            };
            let vel = e.find("vel").map(vec3_of).transpose()?;
            Ok(MonitorCommand::PlaceObject {
                name,
                pos,
                quat,
                vel,
            })
        }
        other => Err(format!(
            "unknown command {other:?}; known: start, pause, step, reset, kickOff, playMode, cube, killsim, lerobot"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Sexp {
        text.parse().unwrap()
    }

    #[test]
    fn kick_off_accepts_an_ignored_side() {
        for text in [
            "(kickOff)",
            "(kickOff Left)",
            "(kickOff left)",
            "(kickOff L)",
            "(kickOff l)",
            "(kickOff Right)",
            "(kickOff right)",
            "(kickOff R)",
            "(kickOff r)",
        ] {
            assert_eq!(
                parse_monitor_command(&one(text)),
                Ok(MonitorCommand::KickOff),
                "{text}"
            );
        }
        for text in [
            "(kickOff Middle)",
            "(kickOff Left Right)",
            "(kickOff (Left))",
        ] {
            let err = parse_monitor_command(&one(text)).unwrap_err();
            assert!(err.contains("Left or Right"), "{text}: {err}");
        }
    }

    #[test]
    fn lerobot_takes_end_rerecord_or_stop() {
        assert_eq!(
            parse_monitor_command(&one("(lerobot end)")),
            Ok(MonitorCommand::Dataset(DatasetControl::EndEpisode))
        );
        assert_eq!(
            parse_monitor_command(&one("(lerobot rerecord)")),
            Ok(MonitorCommand::Dataset(DatasetControl::Rerecord))
        );
        for text in ["(lerobot)", "(lerobot next)", "(lerobot end now)"] {
            let err = parse_monitor_command(&one(text)).unwrap_err();
            assert!(err.contains("end, rerecord, stop"), "{text}: {err}");
        }
    }

    #[test]
    fn monitor_commands_parse_with_reasons() {
        assert_eq!(
            parse_monitor_command(&one("(start)")),
            Ok(MonitorCommand::Start)
        );
        assert_eq!(
            parse_monitor_command(&one("(step 5)")),
            Ok(MonitorCommand::Step(5))
        );
        assert_eq!(
            parse_monitor_command(&one("(step)")),
            Ok(MonitorCommand::Step(1))
        );
        assert!(parse_monitor_command(&one("(step 0)")).is_err());
        assert!(parse_monitor_command(&one("(step -3)")).is_err());
        assert_eq!(
            parse_monitor_command(&one("(playMode PlayOn)")),
            Ok(MonitorCommand::PlayMode(PlayMode::PlayOn))
        );
        let err = parse_monitor_command(&one("(playMode Halftime)")).unwrap_err();
        assert!(err.contains("BeforeStart"), "{err}");
        assert_eq!(
            parse_monitor_command(&one("(cube (n cube_red)(pos 0.5 0.1 1.2)(vel 0 0 1))")),
            Ok(MonitorCommand::PlaceObject {
                name: "cube_red".into(),
                pos: Vec3::new(0.5, 0.1, 1.2),
                quat: None,
                vel: Some(Vec3::Z),
            })
        );
        let with_quat =
            parse_monitor_command(&one("(cube (n c)(pos 0 0 1)(quat 0 0 0 2))")).unwrap();
        let MonitorCommand::PlaceObject { quat: Some(q), .. } = with_quat else {
            panic!("{with_quat:?}");
        };
        assert!((q.z - 1.0).abs() < 1e-6, "normalised, w first: {q}");
        assert!(parse_monitor_command(&one("(cube (n c)(pos 0 0))")).is_err());
        assert!(parse_monitor_command(&one("(cube (pos 0 0 1))")).is_err());
        assert!(parse_monitor_command(&one("(cube (n c)(pos 0 0 1)(quat 0 0 0 0))")).is_err());
        let unknown = parse_monitor_command(&one("(dropBall)")).unwrap_err();
        assert!(unknown.contains("unknown command"), "{unknown}");
        assert!(parse_monitor_command(&one("(start now)")).is_err());
    }

    #[test]
    fn torque_is_pd_plus_feed_forward() {
        let e = JointEffector {
            q: 1.0,
            dq: 0.0,
            kp: 10.0,
            kd: 2.0,
            tau: 0.5,
        };
        assert!((e.torque(0.5, 1.0) - (10.0 * 0.5 - 2.0 + 0.5)).abs() < 1e-6);
    }
}
