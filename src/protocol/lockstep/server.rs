//! The spec-003 TCP side: an accept thread and one thread per client, strictly request/response
//! (frame out, velocities in). The ECS never touches a socket; it sees only the channels handed
//! over in [`LockstepEvent::Connected`].

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use bevy::log::{info, warn};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, bounded, unbounded};

use super::codec::{VelocityDecoder, frame_sizes};

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
}

/// Binds the listener (so a port in use is an error at start-up, not later) and starts the
/// accept thread. Returns the bound address (port 0 resolved) and the event channel.
pub fn start(config: LockstepConfig) -> io::Result<(SocketAddr, Receiver<LockstepEvent>)> {
    let listener = TcpListener::bind(config.addr)?;
    let local = listener.local_addr()?;
    let (events, rx) = unbounded();
    let busy = Arc::new(AtomicBool::new(false));
    thread::Builder::new()
        .name("lockstep-accept".into())
        .spawn(move || accept_loop(listener, config, events, busy))?;
    Ok((local, rx))
}

fn accept_loop(
    listener: TcpListener,
    config: LockstepConfig,
    events: Sender<LockstepEvent>,
    busy: Arc<AtomicBool>,
) {
    for stream in listener.incoming() {
        let stream = match stream {
            Ok(s) => s,
            Err(e) => {
                warn!("lockstep: accept failed: {e}");
                continue;
            }
        };
        let peer = stream
            .peer_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
        if busy.swap(true, Ordering::SeqCst) {
            warn!("lockstep: refusing {peer}: another client has control");
            drop(stream);
            continue;
        }
        let (frames_tx, frames_rx) = bounded::<Vec<u8>>(1);
        let (vel_tx, vel_rx) = bounded::<Vec<f32>>(1);
        if events
            .send(LockstepEvent::Connected {
                peer,
                frames: frames_tx,
                velocities: vel_rx,
            })
            .is_err()
        {
            // The simulation is gone: stop accepting.
            return;
        }
        info!("lockstep: client {peer} connected");
        let events = events.clone();
        let client_busy = busy.clone();
        let config = config.clone();
        let spawned = thread::Builder::new()
            .name(format!("lockstep-{peer}"))
            .spawn(move || {
                let reason = serve(stream, &config, &frames_rx, &vel_tx);
                info!("lockstep: client {peer} dropped: {reason}");
                client_busy.store(false, Ordering::SeqCst);
                let _ = events.send(LockstepEvent::Disconnected { peer, reason });
            });
        if let Err(e) = spawned {
            warn!("lockstep: cannot start a thread for {peer}: {e}");
            busy.store(false, Ordering::SeqCst);
        }
    }
}

/// Serves one client until it leaves or misbehaves; returns why it ended.
fn serve(
    mut stream: TcpStream,
    config: &LockstepConfig,
    frames: &Receiver<Vec<u8>>,
    velocities: &Sender<Vec<f32>>,
) -> String {
    // Without NODELAY a 48-byte frame waits for Nagle and a round trip costs ~90 ms.
    if let Err(e) = stream.set_nodelay(true) {
        return format!("cannot set TCP_NODELAY: {e}");
    }
    if let Err(e) = stream.set_read_timeout(Some(config.answer_timeout)) {
        return format!("cannot set the read timeout: {e}");
    }
    let (_, answer_len) = frame_sizes(config.joints);
    let mut decoder = VelocityDecoder::new(config.joints);
    let mut buf = vec![0u8; answer_len.max(1) * 4];
    loop {
        // Wait for the simulation's next frame; a paused simulation may take a while.
        let frame = loop {
            match frames.recv_timeout(Duration::from_millis(200)) {
                Ok(f) => break f,
                Err(RecvTimeoutError::Timeout) => {
                    if peer_closed(&stream) {
                        return "client closed the connection".into();
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return "simulation stopped".into(),
            }
        };
        if let Err(e) = stream.write_all(&frame) {
            return format!("write failed: {e}");
        }
        let answer = loop {
            match decoder.next_frame() {
                Ok(Some(v)) => break v,
                Ok(None) => {}
                Err(e) => return format!("bad frame: {e}"),
            }
            match stream.read(&mut buf) {
                Ok(0) => return "client closed the connection".into(),
                Ok(n) => decoder.push(&buf[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return format!(
                        "stalled: no answer within {:.1} s",
                        config.answer_timeout.as_secs_f64()
                    );
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return format!("read failed: {e}"),
            }
        };
        if velocities.send(answer).is_err() {
            return "simulation stopped".into();
        }
    }
}

/// True if the peer has closed its side (a zero-byte peek) while we wait for the simulation.
fn peer_closed(stream: &TcpStream) -> bool {
    let _ = stream.set_nonblocking(true);
    let mut b = [0u8; 1];
    let closed = matches!(stream.peek(&mut b), Ok(0));
    let _ = stream.set_nonblocking(false);
    closed
}
