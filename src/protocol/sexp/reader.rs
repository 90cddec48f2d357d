//! A connection's read side, shared by its reader thread and the simulation thread. Normally the
//! reader thread reads: it sleeps in `poll` until bytes arrive, decodes frames and queues them for
//! the simulation, ringing its doorbell. For a sync-mode agent every cycle waits on that hand-off
//! (a thread woken by the kernel, then the simulation woken by the thread), so while such an agent
//! controls the arm the connection is switched to **direct**: the simulation thread reads the
//! socket itself (non-blocking, `MSG_DONTWAIT`) while it waits on its gate, and the reader thread
//! only rings the doorbell when bytes arrive, taking over if they are still unread after
//! [`HANDOVER`] (the simulation is paused, or between frames).
//!
//! Both sides read and decode under one lock and queue frames before releasing it, so frames
//! reach the simulation in the order they were sent whichever thread read them. Only the reader
//! thread ends the connection (it owns the slot and the close): when the simulation thread
//! meets the end of the stream, it records it for the reader thread to act on.

use std::io;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, TryLockError};
use std::thread::Thread;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;

use super::ConnEvent;
use super::framing::{FrameDecoder, FramingError};
use super::payload::{error_payload, parse_frame};
use super::writer::Outbox;
use crate::sim::SimWaker;

/// What a port's threads tell the simulation.
pub type NetEvent = ConnEvent<Sides>;

/// What a new connection brings its ECS bridge.
pub struct Sides {
    pub out: Outbox,
    /// Its read side: the simulation may read it itself (a sync agent, [`ReadSide`]).
    pub read: Arc<ReadSide>,
}

/// How long bytes may wait for the simulation thread on a direct connection before the reader
/// thread reads them itself.
pub const HANDOVER: Duration = Duration::from_millis(1);

/// Bytes read per `recv`.
const CHUNK: usize = 64 * 1024;

/// One connection's read side (see the module's header).
pub struct ReadSide {
    conn: u64,
    stream: TcpStream,
    state: Mutex<ReadState>,
    direct: AtomicBool,
    /// The reader thread, once it has waited on a direct read (to unpark it).
    reader: OnceLock<Thread>,
    /// Frames the simulation thread read itself (`pump_now`).
    read_by_simulation: AtomicU64,
    events: Sender<NetEvent>,
    out: Outbox,
}

struct ReadState {
    decoder: FrameDecoder,
    buf: Vec<u8>,
    /// Why the connection ended, once a read found out (the reader thread then closes it).
    ended: Option<String>,
}

/// What one read found.
enum Pumped {
    /// Frames were queued (how many).
    Frames(usize),
    /// The connection is over, for this reason.
    Ended(String),
}

impl ReadSide {
    pub fn new(
        conn: u64,
        stream: TcpStream,
        max_frame: usize,
        events: Sender<NetEvent>,
        out: Outbox,
    ) -> Self {
        Self {
            conn,
            stream,
            state: Mutex::new(ReadState {
                decoder: FrameDecoder::new(max_frame),
                buf: vec![0; CHUNK],
                ended: None,
            }),
            direct: AtomicBool::new(false),
            reader: OnceLock::new(),
            read_by_simulation: AtomicU64::new(0),
            events,
            out,
        }
    }

    /// Lets the simulation thread read this connection while it waits (a sync agent in
    /// control), or gives reading back to the reader thread.
    pub fn set_direct(&self, on: bool) {
        self.direct.store(on && cfg!(unix), Ordering::Release);
    }

    /// How many frames the simulation thread has read itself.
    pub fn frames_read_by_simulation(&self) -> u64 {
        self.read_by_simulation.load(Ordering::Relaxed)
    }

    /// Simulation thread: queues the frames that have arrived, without blocking (if the reader
    /// thread is reading at this moment, its frames come through the channel as usual). True
    /// if it queued any.
    pub fn pump_now(&self) -> bool {
        if !self.direct.load(Ordering::Acquire) {
            return false; // the reader thread reads this connection
        }
        let mut state = match self.state.try_lock() {
            Ok(s) => s,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return false,
        };
        let pumped = self.pump(&mut state);
        if !matches!(pumped, Pumped::Frames(0))
            && let Some(reader) = self.reader.get()
        {
            // It may be parked, waiting to see whether these bytes are taken.
            reader.unpark();
        }
        match pumped {
            Pumped::Frames(n) => {
                self.read_by_simulation
                    .fetch_add(n as u64, Ordering::Relaxed);
                n > 0
            }
            Pumped::Ended(reason) => {
                // The reader thread closes the connection; it is woken by the same readiness.
                state.ended.get_or_insert(reason);
                false
            }
        }
    }

    /// Reads what is there (never blocking) and queues every complete frame, under the lock.
    fn pump(&self, state: &mut ReadState) -> Pumped {
        self.pump_with(state, None)
    }

    /// [`Self::pump`], asking `admit` before the first frame it queues; a refusal is sent to
    /// the peer as `(error …)` and ends the connection.
    fn pump_with(
        &self,
        state: &mut ReadState,
        mut admit: Option<&mut dyn FnMut() -> Result<(), String>>,
    ) -> Pumped {
        if let Some(reason) = &state.ended {
            return Pumped::Ended(reason.clone());
        }
        let ReadState { decoder, buf, .. } = state;
        let n = match recv_now(&self.stream, buf) {
            Ok(Some(0)) => return Pumped::Ended("closed by the peer".into()),
            Ok(Some(n)) => n,
            Ok(None) => 0,
            Err(e) => return Pumped::Ended(format!("read failed: {e}")),
        };
        decoder.push(&buf[..n]);
        let mut frames = 0;
        loop {
            match decoder.next_frame() {
                Ok(Some(frame)) => {
                    if let Some(admit) = admit.take()
                        && let Err(refused) = admit()
                    {
                        self.out.send(&error_payload(&refused));
                        self.out.close();
                        return Pumped::Ended(format!("refused: {refused}"));
                    }
                    let exprs = parse_frame(&frame, &self.out);
                    let msg = NetEvent::Message {
                        conn: self.conn,
                        exprs,
                    };
                    if self.events.send(msg).is_err() {
                        return Pumped::Ended("simulation stopped".into());
                    }
                    frames += 1;
                }
                Ok(None) => return Pumped::Frames(frames),
                Err(e @ FramingError::TooLong { .. }) => {
                    self.out.send(&error_payload(&e.to_string()));
                    self.out.close();
                    return Pumped::Ended(format!("refused: {e}"));
                }
                Err(e) => return Pumped::Ended(format!("refused: {e}")),
            }
        }
    }
}

/// The reader thread, before the connection's first frame: waits for it and asks `admit`
/// (`Err`: why it may not go on) before queueing it and whatever came with it. `Err`: why the
/// connection ends.
pub fn wait_first_frame(
    side: &ReadSide,
    waker: &SimWaker,
    admit: &mut dyn FnMut() -> Result<(), String>,
) -> Result<(), String> {
    loop {
        wait_readable(&side.stream, None).map_err(|e| format!("read failed: {e}"))?;
        let pumped = {
            let mut state = side.state.lock().unwrap_or_else(PoisonError::into_inner);
            side.pump_with(&mut state, Some(&mut *admit))
        };
        match pumped {
            Pumped::Frames(0) => {}
            Pumped::Frames(_) => {
                waker.wake();
                return Ok(());
            }
            Pumped::Ended(reason) => return Err(reason),
        }
    }
}

/// The reader thread's loop: until the connection ends, wait for bytes and queue their frames
/// (or, on a direct connection, ring the simulation and take over only after [`HANDOVER`]).
/// Returns why it ended.
pub fn read_loop(side: &ReadSide, waker: &SimWaker) -> String {
    loop {
        if let Err(e) = wait_readable(&side.stream, None) {
            return format!("read failed: {e}");
        }
        if side.direct.load(Ordering::Acquire) {
            // The simulation may be asleep on its doorbell past its spin: wake it to read, and
            // wait (parked; its read unparks this thread) until it has, or HANDOVER is over.
            let _ = side.reader.set(std::thread::current());
            waker.wake();
            let deadline = Instant::now() + HANDOVER;
            let take_over = loop {
                let ended = side
                    .state
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .ended
                    .clone();
                if let Some(reason) = ended {
                    return reason;
                }
                match wait_readable(&side.stream, Some(Duration::ZERO)) {
                    Ok(true) => {}
                    Ok(false) => break false,
                    Err(e) => return format!("read failed: {e}"),
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() || !side.direct.load(Ordering::Acquire) {
                    break true;
                }
                std::thread::park_timeout(left);
            };
            if !take_over {
                continue;
            }
        }
        let pumped = {
            let mut state = side.state.lock().unwrap_or_else(PoisonError::into_inner);
            side.pump(&mut state)
        };
        match pumped {
            // A sync cycle (or the idle headless loop) may be blocked on this message.
            Pumped::Frames(n) if n > 0 => waker.wake(),
            Pumped::Frames(_) => {}
            Pumped::Ended(reason) => return reason,
        }
    }
}

/// Waits until `stream` has bytes (or its end, or an error) to read: forever, or at most
/// `timeout`; true if it has.
#[cfg(unix)]
fn wait_readable(stream: &TcpStream, timeout: Option<Duration>) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    let ms = timeout.map_or(-1, |t| i32::try_from(t.as_millis()).unwrap_or(i32::MAX));
    loop {
        let mut fd = libc::pollfd {
            fd: stream.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd for the duration of the call.
        let rc = unsafe { libc::poll(&mut fd, 1, ms) };
        if rc >= 0 {
            return Ok(rc > 0);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Without `poll`, reads block in [`recv_now`] instead; readiness is assumed.
#[cfg(not(unix))]
fn wait_readable(_stream: &TcpStream, _timeout: Option<Duration>) -> io::Result<bool> {
    Ok(true)
}

/// One read that never blocks: `Some(n)` bytes (0: the peer closed), `None` if nothing is there.
#[cfg(unix)]
fn recv_now(stream: &TcpStream, buf: &mut [u8]) -> io::Result<Option<usize>> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: `buf` is valid for `buf.len()` bytes of writes for the duration of the call.
        let n = unsafe {
            libc::recv(
                stream.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if let Ok(n) = usize::try_from(n) {
            return Ok(Some(n));
        }
        let e = io::Error::last_os_error();
        match e.kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => return Ok(None),
            _ => return Err(e),
        }
    }
}

/// Without `MSG_DONTWAIT` (never direct there): a plain blocking read on the reader thread.
#[cfg(not(unix))]
fn recv_now(stream: &TcpStream, buf: &mut [u8]) -> io::Result<Option<usize>> {
    use std::io::Read;
    loop {
        match (&*stream).read(buf) {
            Ok(n) => return Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::sexp::framing::encode_frame;
    use crossbeam_channel::{Receiver, unbounded};
    use std::io::Write;
    use std::net::TcpListener;
    use std::sync::Arc;

    /// A connected pair: the server side in a `ReadSide` served by its reader thread, the
    /// client side to write frames with.
    fn pair() -> (
        Arc<ReadSide>,
        TcpStream,
        Receiver<NetEvent>,
        std::thread::JoinHandle<String>,
    ) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let (events, rx) = unbounded();
        let out = super::super::writer::PortWriter::start("test")
            .unwrap()
            .open(7, server.try_clone().unwrap())
            .unwrap();
        let side = Arc::new(ReadSide::new(7, server, 1 << 20, events, out));
        let reader = side.clone();
        let waker = SimWaker::default();
        let thread = std::thread::spawn(move || read_loop(&reader, &waker));
        (side, client, rx, thread)
    }

    fn send(client: &mut TcpStream, n: usize) {
        let mut frame = Vec::new();
        encode_frame(format!("(n {n})").as_bytes(), &mut frame).unwrap();
        client.write_all(&frame).unwrap();
    }

    /// The number in a queued `(n i)` message.
    fn number(event: NetEvent) -> usize {
        match event {
            NetEvent::Message { exprs, .. } => exprs[0].arg(0).unwrap().as_f64().unwrap() as usize,
            _ => panic!("a message"),
        }
    }

    #[test]
    fn frames_keep_their_order_whichever_thread_reads_them() {
        let (side, mut client, rx, thread) = pair();
        side.set_direct(true);
        let mut got = Vec::new();
        for i in 0..200 {
            send(&mut client, i);
            // The simulation reads most of them; every tenth is left to the reader thread.
            if i % 10 != 0 {
                let t0 = Instant::now();
                while !side.pump_now() && t0.elapsed() < Duration::from_secs(5) {}
            }
            while let Ok(e) = rx.try_recv() {
                got.push(number(e));
            }
        }
        while got.len() < 200 {
            got.push(number(
                rx.recv_timeout(Duration::from_secs(5)).expect("the rest"),
            ));
        }
        assert_eq!(got, (0..200).collect::<Vec<_>>());
        drop(client);
        assert_eq!(thread.join().unwrap(), "closed by the peer");
    }

    #[test]
    fn a_direct_connection_nobody_reads_is_taken_over_and_its_close_seen() {
        let (side, mut client, rx, thread) = pair();
        side.set_direct(true);
        send(&mut client, 1);
        // The simulation never reads (it is paused): the reader thread takes over.
        assert_eq!(number(rx.recv_timeout(Duration::from_secs(5)).unwrap()), 1);
        // The simulation meets the end of the stream first: the reader thread still ends it.
        drop(client);
        let t0 = Instant::now();
        while side.state.lock().unwrap().ended.is_none() && t0.elapsed() < Duration::from_secs(5) {
            side.pump_now();
        }
        assert_eq!(thread.join().unwrap(), "closed by the peer");
    }
}
