//! The lockstep TCP side: an accept thread and one thread per client, strictly request/response
//! (frame out, velocities in). The ECS never touches a socket; it sees only the channels handed
//! over in [`LockstepEvent::Connected`].

use std::io::{self, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use bevy::log::{info, warn};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded, unbounded};

use super::codec::{VelocityDecoder, frame_sizes};
use crate::protocol::net::{self, PeerState};
use crate::sim::SimWaker;

/// What the network side tells the simulation.
pub enum LockstepEvent {
    /// A client was accepted; frames go out through `frames`, answers come in on `velocities`.
    Connected {
        peer: SocketAddr,
        frames: Sender<Vec<u8>>,
        velocities: Receiver<Vec<f32>>,
    },
    /// The client is gone; `reason` says why (closed, stalled, bad frame, I/O error).
    Disconnected { peer: SocketAddr, reason: String },
}

#[derive(Clone, Debug)]
pub struct LockstepConfig {
    pub addr: SocketAddr,
    /// Joints per frame (the robot's joint count).
    pub joints: usize,
    /// A client that does not answer a frame within this time is dropped.
    pub answer_timeout: Duration,
    /// Rung on every answer and connection event: the step waiting on them blocks on it.
    pub waker: SimWaker,
}

/// How long a new client may wait for the slot of a client that has already gone (closed its
/// socket) to be freed. A live client in control gets the newcomer refused at once.
const RECLAIM_WAIT: Duration = Duration::from_secs(1);

/// Binds the listener (so a port in use is an error at start-up, not later) and starts the
/// accept thread. Returns the bound address (port 0 resolved) and the event channel.
pub fn start(config: LockstepConfig) -> io::Result<(SocketAddr, Receiver<LockstepEvent>)> {
    let listener = TcpListener::bind(config.addr)?;
    let local = listener.local_addr()?;
    let (events, rx) = unbounded();
    thread::Builder::new()
        .name("lockstep-accept".into())
        .spawn(move || {
            let mut slot = Slot::default();
            net::accept_loop(&listener, "lockstep", |stream| {
                Ok(accept(stream, &config, &events, &mut slot))
            });
        })?;
    Ok((local, rx))
}

/// The one client slot as the accept thread sees it: whether a client thread is running, and a
/// handle on that client's socket to tell whether its peer is still there.
struct Slot {
    busy: Arc<AtomicBool>,
    current: Option<TcpStream>,
    /// "refusing" is logged at most once a second under a flood of connections.
    refusals: net::RateLimited,
}

impl Default for Slot {
    fn default() -> Self {
        Self {
            busy: Arc::default(),
            current: None,
            refusals: net::RateLimited::new(Duration::from_secs(1)),
        }
    }
}

impl Slot {
    /// Frees the slot if its client has already gone, waiting (briefly) for that client's thread
    /// to report it; true if the slot is free. A client restarting in a loop closes and connects
    /// again at once, before its old thread has noticed the close: it must not be refused.
    fn reclaim(&mut self) -> bool {
        let deadline = Instant::now() + RECLAIM_WAIT;
        while self.busy.load(Ordering::SeqCst) {
            match self.current.as_ref().map(net::peer_state) {
                Some(PeerState::Alive) => return false,
                // Gone: wake its thread (blocked on a read or waiting for a frame) to end it.
                Some(PeerState::Gone) => {
                    if let Some(old) = self.current.take() {
                        let _ = old.shutdown(Shutdown::Both);
                    }
                }
                // Unread bytes (say its last answer, then FIN): its thread reads them first.
                Some(PeerState::Unread) | None => {}
            }
            if Instant::now() >= deadline {
                return false;
            }
            thread::sleep(Duration::from_millis(1));
        }
        self.current = None;
        true
    }
}

/// Hands a new connection the slot, or refuses it if a live client holds it.
fn accept(
    stream: TcpStream,
    config: &LockstepConfig,
    events: &Sender<LockstepEvent>,
    slot: &mut Slot,
) -> ControlFlow<()> {
    let peer = stream
        .peer_addr()
        .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
    if !slot.reclaim() {
        if let Some(held_back) = slot.refusals.allow() {
            warn!(
                "lockstep: refusing {peer}: another client has control{}",
                net::suppressed_note(held_back)
            );
        }
        return ControlFlow::Continue(());
    }
    slot.current = stream.try_clone().ok();
    slot.busy.store(true, Ordering::SeqCst);
    let (frames_tx, frames_rx) = bounded::<Vec<u8>>(1);
    let (vel_tx, vel_rx) = bounded::<Vec<f32>>(1);
    let connected = LockstepEvent::Connected {
        peer,
        frames: frames_tx,
        velocities: vel_rx,
    };
    if events.send(connected).is_err() {
        // The simulation is gone: stop accepting.
        return ControlFlow::Break(());
    }
    // A headless loop idling on the held gate wakes to take the client now.
    config.waker.wake();
    info!("lockstep: client {peer} connected");
    let client_events = events.clone();
    let client_busy = slot.busy.clone();
    let config = config.clone();
    let spawned = thread::Builder::new()
        .name(format!("lockstep-{peer}"))
        .spawn(move || {
            let reason = serve(&stream, &config, &frames_rx, &vel_tx);
            // The accept thread holds a handle too: shut the socket, not just this handle.
            let _ = stream.shutdown(Shutdown::Both);
            info!("lockstep: client {peer} dropped: {reason}");
            // Disconnected is queued before the slot frees, so the simulation always sees the
            // old client leave before the next one arrives.
            let _ = client_events.send(LockstepEvent::Disconnected { peer, reason });
            config.waker.wake();
            client_busy.store(false, Ordering::SeqCst);
        });
    if let Err(e) = spawned {
        warn!("lockstep: cannot start a thread for {peer}: {e}");
        let reason = format!("no thread to serve it: {e}");
        let _ = events.send(LockstepEvent::Disconnected { peer, reason });
        slot.current = None;
        slot.busy.store(false, Ordering::SeqCst);
    }
    ControlFlow::Continue(())
}

/// Serves one client until it leaves or misbehaves; returns why it ended.
fn serve(
    mut stream: &TcpStream,
    config: &LockstepConfig,
    frames: &Receiver<Vec<u8>>,
    velocities: &Sender<Vec<f32>>,
) -> String {
    // Without NODELAY a 48-byte frame waits for Nagle and a round trip costs ~90 ms.
    if let Err(e) = stream.set_nodelay(true) {
        return format!("cannot set TCP_NODELAY: {e}");
    }
    let (_, answer_len) = frame_sizes(config.joints);
    let mut decoder = VelocityDecoder::new(config.joints);
    let mut buf = vec![0u8; answer_len.max(1) * 4];
    loop {
        // Wait for the simulation's next frame; a paused simulation may take a while.
        let frame = loop {
            match frames.recv_timeout(Duration::from_millis(50)) {
                Ok(f) => break f,
                Err(RecvTimeoutError::Timeout) => {
                    if peer_closed(stream) {
                        return "client closed the connection".into();
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return "simulation stopped".into(),
            }
        };
        if let Err(e) = stream.write_all(&frame) {
            return format!("write failed: {e}");
        }
        // One deadline for the whole answer: a client trickling a byte at a time must not hold
        // the clock longer than a silent one.
        let deadline = Instant::now() + config.answer_timeout;
        let stalled = || {
            format!(
                "stalled: no complete answer within {:.1} s",
                config.answer_timeout.as_secs_f64()
            )
        };
        let answer = loop {
            match decoder.next_frame() {
                Ok(Some(v)) => break v,
                Ok(None) => {}
                Err(e) => return format!("bad frame: {e}"),
            }
            match net::read_before(stream, deadline, &mut buf) {
                Ok(0) => return "client closed the connection".into(),
                Ok(n) => decoder.push(&buf[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return stalled();
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return format!("read failed: {e}"),
            }
        };
        if velocities.send(answer).is_err() {
            return "simulation stopped".into();
        }
        config.waker.wake();
    }
}

/// True if the peer has closed its side while we wait for the simulation.
fn peer_closed(stream: &TcpStream) -> bool {
    net::peer_state(stream) == PeerState::Gone
}
