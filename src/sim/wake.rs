//! The driver's doorbell: protocol threads ring it when a message arrives, so a step waiting on
//! a lockstep client or a sync agent, and the headless loop between frames, block instead of
//! spinning or waking on a timer (issue 15: no core burnt while idle or waiting).
//!
//! One bounded(1) channel of `()`: ringing never blocks (a full channel already holds the wake),
//! and a ring that lands between a poll and the wait is kept, so no message is slept through. A
//! stale ring costs one spurious poll.

use std::time::Instant;

use bevy::prelude::*;
use crossbeam_channel::{Receiver, Sender, bounded};

#[derive(Resource, Clone, Debug)]
pub struct SimWaker {
    tx: Sender<()>,
    rx: Receiver<()>,
}

impl Default for SimWaker {
    fn default() -> Self {
        let (tx, rx) = bounded(1);
        Self { tx, rx }
    }
}

impl SimWaker {
    /// Something arrived that the simulation may be waiting for (never blocks).
    pub fn wake(&self) {
        let _ = self.tx.try_send(());
    }

    /// Blocks until woken or `deadline`; true if woken.
    pub fn wait_until(&self, deadline: Instant) -> bool {
        self.rx.recv_deadline(deadline).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_ring_before_the_wait_is_not_lost_and_silence_times_out() {
        let w = SimWaker::default();
        w.wake();
        w.wake(); // a second ring while one is pending is merged, not blocking
        assert!(w.wait_until(Instant::now() + Duration::from_secs(5)));
        let t0 = Instant::now();
        assert!(!w.wait_until(t0 + Duration::from_millis(20)));
        assert!(t0.elapsed() >= Duration::from_millis(20));
        let w2 = w.clone();
        let ringer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            w2.wake();
        });
        assert!(w.wait_until(Instant::now() + Duration::from_secs(5)));
        ringer.join().unwrap();
    }
}
