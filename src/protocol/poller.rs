//! The one readiness-poller loop behind the S-expression ports' writer threads
//! ([`super::sexp::writer`]) and the teleop I/O thread ([`super::teleop::io`]): take every
//! command the simulation queued, flush the connections those commands touched, run what is
//! due (write deadlines, pings), then sleep in the poller (`polling`) until a socket is ready,
//! a command arrives (the handle's send wakes the poller) or the next deadline comes.
//!
//! The two threads differ in what a connection is (framed bytes with a shared outbox; a
//! WebSocket session with its reads, pings and TLS), so those parts stay behind
//! [`ConnectionSet`]; what they share, and what must not drift between them, is here: commands
//! are taken in batches so one broadcast to N connections is one wake-up and one flush each;
//! the thread never spins (it waits in the poller with the set's earliest deadline, or with no
//! timeout at all); a failing poller is retried after a pause rather than in a hot loop; and
//! the set is shut down once every handle is gone. Nothing here touches a socket: the set's
//! hooks do, and only with non-blocking calls.

use std::io;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use bevy::log::warn;
use crossbeam_channel::{Receiver, Sender, TryRecvError, unbounded};
use polling::{Events, Poller};

/// Pause after a failed `wait`, so a poller that keeps failing does not burn a core.
const POLL_RETRY: Duration = Duration::from_millis(10);

/// The connections one poller thread serves, and what the loop asks of them. Connections are
/// named by the key they were added to the poller with.
pub trait ConnectionSet: Send + 'static {
    /// What the handles send the thread.
    type Cmd: Send + 'static;

    /// Applies one command; pushes to `touched` every connection with something new to write
    /// (the loop flushes each once, after the whole batch).
    fn take(&mut self, cmd: Self::Cmd, touched: &mut Vec<u64>);

    /// Writes what `conn` has queued, as far as its socket takes it now.
    fn flush(&mut self, conn: u64);

    /// The poller reported `conn` (its one-shot interest is spent: the set arms it again if it
    /// still needs it); `readable` is whether it has bytes to read.
    fn ready(&mut self, conn: u64, readable: bool);

    /// Does what is due at `now` (closes connections past their write deadline, pings) and
    /// returns when the loop must wake next without any event, or `None` to wait for one.
    fn due(&mut self, now: Instant) -> Option<Instant>;

    /// Every handle is gone: let every connection go.
    fn shut_all(&mut self);
}

/// The handle to a poller thread (cheap to clone): sends it commands and wakes it.
pub struct Handle<C> {
    tx: Sender<C>,
    poller: Arc<Poller>,
}

impl<C> Clone for Handle<C> {
    fn clone(&self) -> Self {
        Self {
            tx: self.tx.clone(),
            poller: self.poller.clone(),
        }
    }
}

impl<C: Send + 'static> Handle<C> {
    /// Starts thread `thread_name` running [`run`] over the set `make` builds around the
    /// thread's poller (the set registers its sockets there); `label` starts the loop's own
    /// log lines.
    pub fn spawn<S>(
        thread_name: String,
        label: String,
        make: impl FnOnce(Arc<Poller>) -> S,
    ) -> io::Result<Self>
    where
        S: ConnectionSet<Cmd = C>,
    {
        let poller = Arc::new(Poller::new()?);
        let (tx, rx) = unbounded();
        let set = make(poller.clone());
        let thread_poller = poller.clone();
        thread::Builder::new()
            .name(thread_name)
            .spawn(move || run(set, &thread_poller, &rx, &label))?;
        Ok(Self { tx, poller })
    }

    /// Queues `cmd` and wakes the thread; false if the thread is gone.
    pub fn send(&self, cmd: C) -> bool {
        if self.tx.send(cmd).is_err() {
            return false;
        }
        // A wake-up sent while the thread is busy is kept for its next wait, so a command
        // queued after the thread drained the channel is never left waiting.
        let _ = self.poller.notify();
        true
    }
}

/// The loop: commands, flushes, deadlines, wait; returns once every handle is dropped.
pub fn run<S: ConnectionSet>(mut set: S, poller: &Poller, rx: &Receiver<S::Cmd>, label: &str) {
    let mut events = Events::new();
    let mut touched = Vec::new();
    loop {
        loop {
            match rx.try_recv() {
                Ok(cmd) => set.take(cmd, &mut touched),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return set.shut_all(),
            }
        }
        // A connection several commands touched is written once, with everything queued.
        touched.sort_unstable();
        touched.dedup();
        for conn in touched.drain(..) {
            set.flush(conn);
        }
        let deadline = set.due(Instant::now());
        events.clear();
        let timeout = deadline.map(|d| d.saturating_duration_since(Instant::now()));
        if let Err(e) = poller.wait(&mut events, timeout) {
            warn!("{label} poll failed: {e}");
            thread::sleep(POLL_RETRY);
            continue;
        }
        for ev in events.iter() {
            set.ready(ev.key as u64, ev.readable);
        }
    }
}

/// Of connections each with the time its writes stalled since (if they are stalled), the
/// ones stalled for `timeout` or longer at `now`, and the earliest deadline of the others: the
/// write deadline both threads hold a connection that stopped reading to.
pub fn stalls(
    conns: impl IntoIterator<Item = (u64, Option<Instant>)>,
    timeout: Duration,
    now: Instant,
) -> (Vec<u64>, Option<Instant>) {
    let mut late = Vec::new();
    let mut next: Option<Instant> = None;
    for (conn, since) in conns {
        let Some(deadline) = since.map(|t| t + timeout) else {
            continue;
        };
        if deadline <= now {
            late.push(conn);
        } else {
            next = Some(next.map_or(deadline, |n| n.min(deadline)));
        }
    }
    (late, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stalls_splits_the_late_from_the_next_deadline() {
        // Times counted forward from a base, so nothing goes before the clock's start.
        let base = Instant::now();
        let now = base + Duration::from_secs(10);
        let t = Duration::from_secs(2);
        let conns = [
            (1, None),
            (2, Some(base + Duration::from_secs(7))),
            (3, Some(base + Duration::from_secs(9))),
            (4, Some(now)),
            (5, Some(base + Duration::from_secs(8))),
        ];
        let (mut late, next) = stalls(conns, t, now);
        late.sort_unstable();
        assert_eq!(late, [2, 5]);
        assert_eq!(next, Some(base + Duration::from_secs(11)));
        assert_eq!(stalls([(1, None)], t, now), (vec![], None));
    }
}
