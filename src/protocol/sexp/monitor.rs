//! The monitor port of spec 001: the world every cycle to every monitor, and the session,
//! referee and world commands monitors send (upstream has no pause, step or reset; ours does).
//! A cycle's world frame is encoded once and handed to the port's writer thread once for all
//! the monitors it goes to.

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
use super::options::{SexpOptions, game_info};
use super::server::{NetEvent, Outbox, PortWriter, error_payload, payload};
use crate::protocol::registry::{ConnKey, Connections, Counters, Protocol, Role};
use crate::referee::LoggedEvent;
use crate::referee::plugin::Referee;
use crate::robot::Pose;
use crate::session::{
    AlertLog, Session, SessionCommand, SessionEvent, SessionState, SessionSystems,
};
use crate::sim::{SimClock, SimMut, SimRef, SimStep, SimSystems, SimView, SimViewMut};

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

/// Starts the monitor port on `addr` and wires it into the app; returns the bound address.
pub(super) fn add(
    app: &mut App,
    options: &SexpOptions,
    addr: SocketAddr,
) -> io::Result<SocketAddr> {
    let cycle = options.cycle();
    let waker = app.world().resource::<crate::sim::SimWaker>().clone();
    let limits = (MAX_MONITOR_CONNECTIONS, None);
    let (addr, events, writer) = options.bind(addr, "monitor", limits, waker)?;
    info!("monitor: listening on {addr}");
    let exposed = crate::protocol::net::warn_if_exposed(
        "monitor",
        addr,
        "reset the scene, move the cubes, change the play mode and stop armsim with (killsim)",
    );
    crate::protocol::registry::add_listener(
        app,
        Protocol::Monitor,
        format!("monitors {addr}{}", exposed.unwrap_or_default()),
    );
    app.insert_resource(MonitorPort {
        addr,
        conns: BTreeMap::new(),
        events,
        writer,
        cycle_steps: cycle,
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
    mut session_cmds: MessageWriter<SessionCommand>,
    mut exit: MessageWriter<AppExit>,
) {
    let port = &mut *port;
    for conn in registry.take_kicks(Protocol::Monitor) {
        port.disconnect(conn);
    }
    // A `(reset)` this frame: the session resets after these commands run.
    let mut reset_asked = false;
    while let Ok(event) = port.events.try_recv() {
        match event {
            NetEvent::Opened {
                conn, peer, out, ..
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
                    let reply = match parse_monitor_command(e) {
                        Err(reason) => Err(reason),
                        // The reset runs after this frame's commands; a kick-off behind it
                        // waits for it, or the reset would undo the kick-off.
                        Ok(MonitorCommand::KickOff) if reset_asked => {
                            referee.kick_off_after_reset();
                            session_cmds.write(SessionCommand::Start);
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
                            )
                        }
                    };
                    let bytes = match reply {
                        Ok(()) => payload(&[Sexp::list([
                            Sexp::atom("ok"),
                            Sexp::atom(e.head().unwrap_or("?")),
                        ])]),
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
    session_cmds: &mut MessageWriter<SessionCommand>,
    exit: &mut MessageWriter<AppExit>,
) -> Result<(), String> {
    match cmd {
        MonitorCommand::Start => {
            session_cmds.write(SessionCommand::Start);
        }
        MonitorCommand::Pause => {
            session_cmds.write(SessionCommand::Pause);
        }
        MonitorCommand::Step(n) => {
            session_cmds.write(SessionCommand::Step(n));
        }
        MonitorCommand::Reset => {
            session_cmds.write(SessionCommand::Reset);
        }
        MonitorCommand::KickOff => {
            referee.kick_off(clock.sim_time);
            session_cmds.write(SessionCommand::Start);
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
    }
    Ok(())
}

/// Step phase Publish: the world to every monitor at the end of each cycle.
fn monitor_cycle(
    mut port: ResMut<MonitorPort>,
    sim: SimRef,
    referee: Res<Referee>,
    clock: Res<SimClock>,
    session: Res<Session>,
) {
    port.steps_in_cycle += 1;
    if port.steps_in_cycle < port.cycle_steps {
        // Single steps while paused may end mid-cycle, and over several frames when the
        // machine is busy: the frame's flush then shows where they stopped.
        if session.state() == SessionState::Paused {
            port.conns.values_mut().for_each(|m| m.dirty = true);
        }
        return;
    }
    port.steps_in_cycle = 0;
    send_world(&mut port, |_| true, &sim.view(), &referee, &clock, &session);
}

/// Once a frame: monitors whose view is stale (new, or after a command or a session change
/// while no steps run) get the world now.
fn monitor_flush(
    mut port: ResMut<MonitorPort>,
    mut events: MessageReader<SessionEvent>,
    sim: SimRef,
    referee: Res<Referee>,
    clock: Res<SimClock>,
    session: Res<Session>,
) {
    let changed = events.read().count() > 0;
    send_world(
        &mut port,
        |m| m.dirty || changed,
        &sim.view(),
        &referee,
        &clock,
        &session,
    );
}

/// The world to the monitors `which` picks. A frame carries the referee's events since the
/// monitor's cursor, so monitors are grouped by cursor (after its first frame every monitor
/// has the same one): one encoding and one hand-off to the writer per group.
fn send_world(
    port: &mut MonitorPort,
    which: impl Fn(&MonitorConn) -> bool,
    sim: &SimView<'_>,
    referee: &Referee,
    clock: &SimClock,
    session: &Session,
) {
    let mut groups: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for (&id, m) in port.conns.iter_mut().filter(|(_, m)| which(m)) {
        groups.entry(m.referee_cursor).or_default().push(id);
        m.referee_cursor = referee.last_seq();
        m.dirty = false;
        m.counters.count_out();
    }
    for (cursor, ids) in groups {
        let events: Vec<&LoggedEvent> = referee.since(cursor).collect();
        let info = game_info(referee, clock, session.state(), &events);
        if let Some(frame) = super::writer::frame(&payload(&world_frame(sim, &info))) {
            port.writer.send_to(ids, frame);
        }
    }
}
