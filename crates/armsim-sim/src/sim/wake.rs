//! The driver's doorbell: protocol threads ring it when a message arrives, so a step waiting on
//! a lockstep client or a sync agent, and the headless loop between frames, block instead of
//! spinning or waking on a timer (no core burnt while idle or waiting).
//!
//! One flag under a mutex with a condition variable: ringing sets it and never blocks for longer
//! than the flag's lock, and a ring that lands between a poll and the wait is kept, so no message
//! is slept through. A stale ring costs one spurious poll. The waiter goes straight to the
//! kernel: a channel's receive spins and yields before it parks, which the headless loop paid
//! at every frame.

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Instant;

use bevy::prelude::*;

#[derive(Resource, Clone, Debug, Default)]
pub struct SimWaker {
    bell: Arc<(Mutex<bool>, Condvar)>,
}

impl SimWaker {
    /// Something arrived that the simulation may be waiting for (never blocks on the sim).
    pub fn wake(&self) {
        let (rung, cv) = &*self.bell;
        *rung.lock().unwrap_or_else(PoisonError::into_inner) = true;
        cv.notify_one();
    }

    /// Blocks until woken or `deadline`; true if woken (the ring is consumed).
    pub fn wait_until(&self, deadline: Instant) -> bool {
        let (rung, cv) = &*self.bell;
        let mut rung = rung.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if std::mem::take(&mut *rung) {
                return true;
            }
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return false;
            };
            if left.is_zero() {
                return false;
            }
            rung = cv
                .wait_timeout(rung, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
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
