//! The RCSSServerMJ monitor port: the world every cycle to every monitor, and the session,
//! referee and world commands monitors send (upstream has no pause, step or reset; ours does).
//! A cycle's world frame is encoded once and handed to the port's writer thread once for all
//! the monitors it goes to. Monitors may also query the scene's cameras: `(getCameras)` and
//! `(getCamera NAME)` answer with the cameras' states and, where a renderer runs, the newest
//! image as base64 (`CameraQuery`); like every reply they are queued to the writer thread,
//! never written from the simulation's thread. Asking keeps the asked cameras rendering in the
//! window for a while (`CameraImages::ask`); a camera it had stopped answers `(noimage "warming
//! up: …")` until its next image is in.

use std::collections::BTreeMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use bevy::app::AppExit;
use bevy::prelude::*;
use crossbeam_channel::Receiver;

use super::Sexp;
use super::messages::{MonitorCommand, parse_monitor_command, world_frame};
use super::options::{Game, Port, SexpOptions, game_info};
use super::reader::Sides;
use super::server::{NetEvent, Outbox, PortWriter, error_payload, payload};
use crate::protocol::registry::{ConnKey, Connections, Counters, Protocol, Role};
use crate::referee::LoggedEvent;
use crate::referee::plugin::Referee;
use crate::robot::Pose;
use crate::session::{
    AlertLog, SessionCommand, SessionNotice, SessionRequest, SessionState, SessionSystems,
};
use crate::sim::{SimClock, SimMut, SimScene, SimStep, SimSystems, SimView, SimViewMut};
use crate::state::{CameraEntry, CameraImages, camera_states};

fn monitor_key(conn: u64) -> ConnKey {
    ConnKey::new(Protocol::Monitor, conn)
}

/// Monitor connections open at once.
pub const MAX_MONITOR_CONNECTIONS: usize = 256;
/// Commands run from one monitor message; the rest are refused with one `(error …)`.
pub const MAX_MONITOR_COMMANDS: usize = 64;

pub struct MonitorConn {
    pub peer: SocketAddr,
    pub opened: Instant,
    /// Shared with the connection registry.
    pub counters: Arc<Counters>,
    out: Outbox,
    referee_cursor: u64,
    /// A world frame is due (just connected, or a command changed something while paused).
    dirty: bool,
}

#[derive(Resource)]
pub struct MonitorPort {
    pub addr: SocketAddr,
    pub conns: BTreeMap<u64, MonitorConn>,
    events: Receiver<NetEvent>,
    writer: PortWriter,
    cycle_steps: u32,
    steps_in_cycle: u32,
}

impl MonitorPort {
    /// Closes a monitor's connection (the panel's disconnect button).
    pub fn disconnect(&mut self, conn: u64) {
        if let Some(m) = self.conns.get(&conn) {
            m.out.close();
        }
    }
}

/// The monitor port: a client watches, and may command the scene and the game.
const PORT: Port = Port {
    name: "monitor",
    protocol: Protocol::Monitor,
    limits: (MAX_MONITOR_CONNECTIONS, None),
    powers: "reset the scene, move the cubes, change the play mode and stop armsim with (killsim)",
};

/// Starts the monitor port on `addr` and wires it into the app; returns the bound address.
pub(super) fn add(
    app: &mut App,
    options: &SexpOptions,
    addr: SocketAddr,
) -> io::Result<SocketAddr> {
    let (addr, events, writer) =
        options.open(app, addr, &PORT, |addr| format!("monitors {addr}"))?;
    info!("monitor: listening on {addr}");
    app.insert_resource(MonitorPort {
        addr,
        conns: BTreeMap::new(),
        events,
        writer,
        cycle_steps: options.cycle(),
        steps_in_cycle: 0,
    })
    .add_systems(First, monitor_events.before(SessionSystems))
    .add_systems(SimStep, monitor_cycle.in_set(SimSystems::Publish))
    .add_systems(Last, monitor_flush);
    Ok(addr)
}

#[allow(clippy::too_many_arguments)]
fn monitor_events(
    mut port: ResMut<MonitorPort>,
    mut registry: ResMut<Connections>,
    mut log: ResMut<AlertLog>,
    mut sim: SimMut,
    mut referee: ResMut<Referee>,
    clock: Res<SimClock>,
    mut session_cmds: MessageWriter<SessionRequest>,
    mut exit: MessageWriter<AppExit>,
    (scene, mut images, mut dataset): (
        Res<SimScene>,
        Option<ResMut<CameraImages>>,
        crate::lerobot::DatasetRequests,
    ),
) {
    let port = &mut *port;
    for conn in registry.panel_requests(Protocol::Monitor).kicks {
        port.disconnect(conn);
    }
    // A `(reset)` this frame: the session resets after these commands run.
    let mut reset_asked = false;
    while let Ok(event) = port.events.try_recv() {
        match event {
            NetEvent::Opened {
                conn,
                peer,
                with: Sides { out, .. },
            } => {
                let counters = Arc::new(Counters::default());
                registry.open(
                    monitor_key(conn),
                    peer,
                    Role::Observer,
                    counters.clone(),
                    false,
                );
                port.conns.insert(
                    conn,
                    MonitorConn {
                        peer,
                        opened: Instant::now(),
                        counters,
                        out,
                        // A monitor sees the referee's recent history on connect.
                        referee_cursor: 0,
                        dirty: true,
                    },
                );
            }
            NetEvent::Closed { conn, reason } => {
                registry.close(monitor_key(conn), &reason, clock.sim_time, &mut log);
                port.conns.remove(&conn);
            }
            NetEvent::Message { conn, exprs } => {
                let Some(m) = port.conns.get_mut(&conn) else {
                    continue;
                };
                m.counters.count_in();
                if exprs.len() > MAX_MONITOR_COMMANDS {
                    let reason = format!(
                        "{} commands in one message; only the first {MAX_MONITOR_COMMANDS} run",
                        exprs.len()
                    );
                    warn!("monitor: {}: {reason}", m.peer);
                    if m.out.send(&error_payload(&reason)) {
                        m.counters.count_out();
                    }
                }
                let mut refused = 0usize;
                for e in exprs.iter().take(MAX_MONITOR_COMMANDS) {
                    // Asking keeps the camera rendering in the window for a while.
                    if let Some(images) = images.as_mut() {
                        match (e.head(), e.args()) {
                            (Some("getCameras"), []) => images.ask(None),
                            (Some("getCamera"), [name]) if name.as_atom().is_some() => {
                                images.ask(name.as_atom());
                            }
                            _ => {}
                        }
                    }
                    let cameras = CameraQuery {
                        scene: &scene.0,
                        images: images.as_deref(),
                        clock: &clock,
                    };
                    // An image is large (2.4 MB at 512×512 with depth): a client gets the next
                    // one once it has read what is queued for it, so one that asks and never
                    // reads holds a few, not a queue's worth.
                    let unread = m.out.pending();
                    let answer = if e.head() == Some("getCamera") && unread >= MAX_UNREAD_REPLIES {
                        Some(Err(format!(
                            "(getCamera …) refused: {unread} replies to this connection are \
                             still unread; read them first"
                        )))
                    } else {
                        cameras.answer(e, &sim.view())
                    };
                    let reply = match answer {
                        Some(answer) => answer,
                        None => match parse_monitor_command(e) {
                            Err(reason) if reason.starts_with("unknown command") => {
                                Err(format!("{reason}; camera queries: getCameras, getCamera"))
                            }
                            Err(reason) => Err(reason),
                            // The reset runs after this frame's commands; a kick-off behind it
                            // waits for it, or the reset would undo the kick-off.
                            Ok(MonitorCommand::KickOff) if reset_asked => {
                                referee.kick_off_after_reset();
                                session_cmds.write(SessionRequest(SessionCommand::Start));
                                Ok(())
                            }
                            Ok(cmd) => {
                                reset_asked |= matches!(cmd, MonitorCommand::Reset);
                                run_monitor_command(
                                    cmd,
                                    &mut sim.view_mut(),
                                    &mut referee,
                                    &clock,
                                    &mut session_cmds,
                                    &mut exit,
                                    &mut dataset,
                                )
                            }
                        }
                        .map(|()| {
                            Sexp::list([Sexp::atom("ok"), Sexp::atom(e.head().unwrap_or("?"))])
                        }),
                    };
                    // Camera queries answer with data, other commands with `(ok …)`.
                    let bytes = match reply {
                        Ok(reply) => payload(&[reply]),
                        Err(reason) => {
                            if refused == 0 {
                                warn!("monitor: {}: {reason}", m.peer);
                            }
                            refused += 1;
                            error_payload(&reason)
                        }
                    };
                    if m.out.send(&bytes) {
                        m.counters.count_out();
                    }
                }
                if refused > 1 {
                    warn!(
                        "monitor: {}: {refused} commands of one message refused",
                        m.peer
                    );
                }
                // Whatever changed shows up even while the simulation is paused.
                for m in port.conns.values_mut() {
                    m.dirty = true;
                }
            }
        }
    }
}

fn run_monitor_command(
    cmd: MonitorCommand,
    sim: &mut SimViewMut<'_>,
    referee: &mut Referee,
    clock: &SimClock,
    session_cmds: &mut MessageWriter<SessionRequest>,
    exit: &mut MessageWriter<AppExit>,
    dataset: &mut crate::lerobot::DatasetRequests,
) -> Result<(), String> {
    match cmd {
        MonitorCommand::Start => {
            session_cmds.write(SessionRequest(SessionCommand::Start));
        }
        MonitorCommand::Pause => {
            session_cmds.write(SessionRequest(SessionCommand::Pause));
        }
        MonitorCommand::Step(n) => {
            session_cmds.write(SessionRequest(SessionCommand::Step(n)));
        }
        MonitorCommand::Reset => {
            session_cmds.write(SessionRequest(SessionCommand::Reset));
        }
        MonitorCommand::KickOff => {
            referee.kick_off(clock.sim_time);
            session_cmds.write(SessionRequest(SessionCommand::Start));
        }
        MonitorCommand::PlayMode(mode) => referee.set_play_mode(mode, clock.sim_time),
        MonitorCommand::PlaceObject {
            name,
            pos,
            quat,
            vel,
        } => {
            let index = sim.object_index(&name).ok_or_else(|| {
                let names: Vec<&str> = sim.objects.iter().map(|o| o.name.as_str()).collect();
                format!("no object {name:?}; objects are {}", names.join(", "))
            })?;
            let rotation =
                quat.unwrap_or_else(|| sim.view().body_pose(sim.objects[index].body).rotation);
            sim.place_object(
                index,
                Pose::new(pos, rotation),
                vel.unwrap_or(Vec3::ZERO),
                Vec3::ZERO,
            )
            .map_err(|e| e.to_string())?;
        }
        MonitorCommand::KillSim => {
            info!("monitor: (killsim): shutting down");
            exit.write(AppExit::Success);
        }
        MonitorCommand::Dataset(control) => {
            let what = dataset.request(control)?;
            info!("monitor: (lerobot {}): {what}", control.word());
        }
    }
    Ok(())
}

/// How `(noimage …)` starts for a camera the window had stopped rendering (nothing used its
/// images): the request has started it, and asking again soon gets a fresh image.
pub const WARMING_UP: &str = "warming up";

/// Why `(getCamera …)` has no image when no renderer runs.
pub const NO_RENDERER: &str =
    "no image: cameras are rendered only in the window or with `--headless --cameras`";

/// What the monitor's camera queries read: the scene's cameras, the renderer's newest images
/// (absent without a renderer) and the clock.
struct CameraQuery<'a> {
    scene: &'a crate::scene::Scene,
    images: Option<&'a CameraImages>,
    clock: &'a SimClock,
}

fn fixed(v: f64, decimals: usize) -> Sexp {
    Sexp::fixed(v, decimals).unwrap_or_else(|_| Sexp::atom("nan"))
}

fn field(name: &str, values: impl IntoIterator<Item = Sexp>) -> Sexp {
    Sexp::list(std::iter::once(Sexp::atom(name)).chain(values))
}

fn floats(name: &str, values: &[f32], decimals: usize) -> Sexp {
    field(name, values.iter().map(|&v| fixed(v.into(), decimals)))
}

/// `(size W H)(step N)(time T)(pos x y z)(quat w x y z)(intrinsics k11 … k33)` after `(n NAME)`.
fn camera_fields(name: &str, entry: &CameraEntry, step: u64, time: f64) -> Vec<Sexp> {
    let k: Vec<f32> = entry.intrinsics.iter().flatten().copied().collect();
    vec![
        Sexp::atom("camera"),
        field("n", [Sexp::atom(name)]),
        field(
            "size",
            [
                Sexp::atom(entry.width.to_string()),
                Sexp::atom(entry.height.to_string()),
            ],
        ),
        field("step", [Sexp::atom(step.to_string())]),
        field("time", [fixed(time, 4)]),
        floats("pos", &entry.pos, 5),
        floats("quat", &entry.quat_world, 6),
        floats("intrinsics", &k, 4),
    ]
}

/// Replies a monitor may leave unread before a `(getCamera …)` is refused.
const MAX_UNREAD_REPLIES: usize = 4;

impl CameraQuery<'_> {
    /// The answer to `(getCameras)` or `(getCamera NAME)`; `None` for any other command.
    fn answer(&self, e: &Sexp, sim: &SimView<'_>) -> Option<Result<Sexp, String>> {
        match e.head()? {
            "getCameras" => Some(if e.args().is_empty() {
                Ok(self.all(sim))
            } else {
                Err("(getCameras) takes no arguments".into())
            }),
            "getCamera" => Some(match e.args() {
                [name] if name.as_atom().is_some() => self.one(name.as_atom().unwrap_or(""), sim),
                _ => Err(format!(
                    "(getCamera NAME) takes one camera name; {}",
                    self.names()
                )),
            }),
            _ => None,
        }
    }

    fn names(&self) -> String {
        let names: Vec<String> = self.scene.cameras().into_iter().map(|c| c.name).collect();
        if names.is_empty() {
            "this scene has no cameras".into()
        } else {
            format!("the scene's cameras are: {}", names.join(", "))
        }
    }

    /// Why camera `name` has no image.
    fn no_image(&self, name: &str) -> String {
        match self.images {
            None => NO_RENDERER.into(),
            Some(images) if images.is_idle(name) => format!(
                "{WARMING_UP}: camera {name} renders only while something uses its images; this \
                 request starts it, and its next image comes within a few frames: ask again"
            ),
            Some(_) => format!(
                "no image yet: the renderer has not delivered an image of camera {name} yet"
            ),
        }
    }

    /// `(cameras (camera …) …)`: every camera where it is now, with `(image (step N)(time T)
    /// (depth 0|1))` for its newest rendered image or `(noimage REASON)`.
    fn all(&self, sim: &SimView<'_>) -> Sexp {
        let specs = self.scene.cameras();
        let states = camera_states(&specs, sim);
        let mut out = vec![Sexp::atom("cameras")];
        for spec in &specs {
            let Some(entry) = states.get(&spec.name) else {
                continue;
            };
            let mut fields =
                camera_fields(&spec.name, entry, self.clock.steps, self.clock.sim_time);
            match self.images.and_then(|i| i.get(&spec.name)) {
                Some(image) => fields.push(field(
                    "image",
                    [
                        field("step", [Sexp::atom(image.step.to_string())]),
                        field("time", [fixed(image.sim_time, 4)]),
                        field(
                            "depth",
                            [Sexp::atom(if image.depth.is_some() { "1" } else { "0" })],
                        ),
                    ],
                )),
                None => fields.push(field("noimage", [Sexp::atom(self.no_image(&spec.name))])),
            }
            out.push(Sexp::List(fields));
        }
        Sexp::List(out)
    }

    /// `(camera (n NAME)(size W H)(step N)(time T)(pos …)(quat …)(intrinsics …)(rgb B64)
    /// (depth B64))` for its newest image (the pose and stamp are the image's), or the camera
    /// where it is now with `(noimage REASON)`.
    fn one(&self, name: &str, sim: &SimView<'_>) -> Result<Sexp, String> {
        use base64::Engine as _;
        let b64 = &base64::engine::general_purpose::STANDARD;
        let specs = self.scene.cameras();
        let Some(spec) = specs.iter().find(|c| c.name == name) else {
            return Err(format!("no camera named {name}; {}", self.names()));
        };
        let states = camera_states(std::slice::from_ref(spec), sim);
        let now = states
            .get(name)
            .ok_or_else(|| format!("camera {name}: its mount is not on the robot"))?;
        let Some(image) = self.images.and_then(|i| i.get(name)) else {
            let mut fields = camera_fields(name, now, self.clock.steps, self.clock.sim_time);
            fields.push(field("noimage", [Sexp::atom(self.no_image(name))]));
            return Ok(Sexp::List(fields));
        };
        // The pose, intrinsics and size the image was taken with.
        let entry = CameraEntry {
            pos: image.state.pos,
            quat_world: image.state.quat_world,
            intrinsics: image.state.intrinsics,
            width: image.width,
            height: image.height,
            ..now.clone()
        };
        let mut fields = camera_fields(name, &entry, image.step, image.sim_time);
        fields.push(field("rgb", [Sexp::atom(b64.encode(&image.rgb[..]))]));
        match &image.depth {
            Some(depth) => {
                let bytes: Vec<u8> = depth.iter().flat_map(|d| d.to_le_bytes()).collect();
                fields.push(field("depth", [Sexp::atom(b64.encode(bytes))]));
            }
            None => {
                let why = if spec.depth {
                    format!("the renderer gave no depth for camera {name}")
                } else {
                    format!(
                        "camera {name} has no depth: its scene entry does not set depth to true"
                    )
                };
                fields.push(field("nodepth", [Sexp::atom(why)]));
            }
        }
        Ok(Sexp::List(fields))
    }
}

/// Step phase Publish: the world to every monitor at the end of each cycle.
fn monitor_cycle(mut port: ResMut<MonitorPort>, game: Game) {
    port.steps_in_cycle += 1;
    if port.steps_in_cycle < port.cycle_steps {
        // Single steps while paused may end mid-cycle, and over several frames when the
        // machine is busy: the frame's flush then shows where they stopped.
        if game.session.state() == SessionState::Paused {
            port.conns.values_mut().for_each(|m| m.dirty = true);
        }
        return;
    }
    port.steps_in_cycle = 0;
    send_world(&mut port, |_| true, &game);
}

/// Once a frame: monitors whose view is stale (new, or after a command or a session change
/// while no steps run) get the world now.
fn monitor_flush(
    mut port: ResMut<MonitorPort>,
    mut events: MessageReader<SessionNotice>,
    game: Game,
) {
    let changed = events.read().count() > 0;
    send_world(&mut port, |m| m.dirty || changed, &game);
}

/// The world to the monitors `which` picks. A frame carries the referee's events since the
/// monitor's cursor, so monitors are grouped by cursor (after its first frame every monitor
/// has the same one): one encoding and one hand-off to the writer per group.
fn send_world(port: &mut MonitorPort, which: impl Fn(&MonitorConn) -> bool, game: &Game) {
    let (referee, sim) = (&*game.referee, &game.sim.view());
    let mut groups: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for (&id, m) in port.conns.iter_mut().filter(|(_, m)| which(m)) {
        groups.entry(m.referee_cursor).or_default().push(id);
        m.referee_cursor = referee.last_seq();
        m.dirty = false;
        m.counters.count_out();
    }
    for (cursor, ids) in groups {
        let events: Vec<&LoggedEvent> = referee.since(cursor).collect();
        let info = game_info(referee, &game.clock, game.session.state(), &events);
        if let Some(frame) = super::writer::frame(&payload(&world_frame(sim, &info))) {
            port.writer.send_to(ids, frame);
        }
    }
}
