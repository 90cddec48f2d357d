//! When the sim-time topics go out: every `1/rate` of sim time, from step 0 of each episode,
//! in exact integer step arithmetic, so the frames of a run are the same whatever the wall
//! clock did (fast mode, a slow machine) and nothing drifts.
//!
//! Frame k of an episode is due at the first step `s` with `s / 240 ≥ k / rate`, i.e.
//! `s · rate ≥ k · 240`. At 100 Hz on the 240 Hz step that is steps 0, 3, 5, 8, 10, 12, …:
//! 2 and 3 steps apart, exactly 100 frames per sim second.

use armsim_core::protocol::ros2::stamp::STEPS_PER_SECOND;

/// The publish schedule of one bridge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    rate_hz: u64,
    /// The episode the schedule counts in; `None` before the first frame.
    episode: Option<u64>,
    /// The index of the next frame in the episode.
    next: u64,
}

impl Schedule {
    /// `rate_hz`: frames per sim second, 1..=240 (validated by the options).
    pub fn new(rate_hz: u32) -> Self {
        Self {
            rate_hz: u64::from(rate_hz.max(1)),
            episode: None,
            next: 0,
        }
    }

    /// Whether a frame goes out for the state after `steps` steps of `episode`. A new episode
    /// (a reset) starts over at its step 0. Frames a jump skipped over are not made up: one
    /// frame carries the latest state.
    pub fn due(&mut self, steps: u64, episode: u64) -> bool {
        if self.episode != Some(episode) {
            self.episode = Some(episode);
            self.next = 0;
        }
        let now = steps.saturating_mul(self.rate_hz);
        if now < self.next.saturating_mul(STEPS_PER_SECOND) {
            return false;
        }
        self.next = now / STEPS_PER_SECOND + 1;
        true
    }

    /// The step after which the next frame goes out (in the episode of the last `due`): the
    /// first `s` with `s · rate ≥ next · 240`.
    pub fn next_step(&self) -> u64 {
        self.step_of(self.next)
    }

    /// The step after which the last frame of the next batch of `k` goes out. Batches are
    /// frames `0..k`, `k..2k`, … of the episode, a grid that does not depend on when anyone
    /// woke; the next batch is the one holding the next frame.
    pub fn batch_end_step(&self, k: u64) -> u64 {
        let k = k.max(1);
        self.step_of(self.next + (k - 1 - self.next % k))
    }

    /// The step of frame `index` of the episode.
    fn step_of(&self, index: u64) -> u64 {
        index
            .saturating_mul(STEPS_PER_SECOND)
            .div_ceil(self.rate_hz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn due_steps(rate: u32, steps: std::ops::RangeInclusive<u64>) -> Vec<u64> {
        let mut s = Schedule::new(rate);
        steps.filter(|&k| s.due(k, 0)).collect()
    }

    #[test]
    fn the_next_step_is_the_step_of_the_next_frame() {
        for rate in [1, 7, 30, 100, 240] {
            let mut s = Schedule::new(rate);
            let mut announced = None;
            for k in 0..=2 * STEPS_PER_SECOND {
                let due = s.due(k, 0);
                if let Some(step) = announced {
                    assert_eq!(due, k == step, "rate {rate}, step {k}");
                }
                if due {
                    announced = Some(s.next_step());
                    assert!(s.next_step() > k, "rate {rate}, step {k}");
                }
            }
        }
    }

    #[test]
    fn batches_end_on_every_kth_frame_of_the_episode() {
        let mut s = Schedule::new(100);
        // Frames 0, 1, 2, 3, 4 are due at steps 0, 3, 5, 8, 10.
        assert!(s.due(0, 0));
        assert_eq!(s.batch_end_step(2), 3);
        assert_eq!(s.batch_end_step(1), s.next_step());
        assert!(s.due(3, 0));
        assert_eq!(s.batch_end_step(2), 8, "frame 2 waits for frame 3");
        assert!(s.due(5, 0));
        assert_eq!(s.batch_end_step(2), 8);
        assert_eq!(
            s.batch_end_step(3),
            12,
            "frames 3, 4, 5 end on frame 5's step"
        );
        // Whatever the batch, it ends on a due step and never before the next frame's.
        for k in 1..=5 {
            let mut s = Schedule::new(100);
            for step in 0..=480 {
                if s.due(step, 0) {
                    let end = s.batch_end_step(k);
                    assert!(end >= s.next_step());
                    let mut probe = s.clone();
                    assert!((s.next_step()..=end).filter(|&t| probe.due(t, 0)).count() as u64 <= k);
                }
            }
        }
    }

    #[test]
    fn hundred_hertz_alternates_two_and_three_steps_from_step_zero() {
        assert_eq!(due_steps(100, 0..=12), [0, 3, 5, 8, 10, 12]);
        // Exactly 100 frames per sim second, every second.
        let frames = due_steps(100, 0..=2399).len();
        assert_eq!(frames, 1000);
    }

    #[test]
    fn every_rate_averages_exactly_and_never_bunches() {
        for rate in [1, 7, 30, 60, 100, 120, 239, 240] {
            let steps = due_steps(rate, 0..=2399);
            assert_eq!(steps.len() as u64, 10 * u64::from(rate), "{rate} Hz");
            let gaps: Vec<u64> = steps.windows(2).map(|w| w[1] - w[0]).collect();
            let (lo, hi) = (240 / u64::from(rate), 240_u64.div_ceil(u64::from(rate)));
            assert!(
                gaps.iter().all(|g| (lo..=hi).contains(g)),
                "{rate} Hz: {gaps:?}"
            );
        }
    }

    #[test]
    fn a_reset_starts_over_at_step_zero_and_a_frame_is_sent_once() {
        let mut s = Schedule::new(100);
        assert!(s.due(0, 0));
        // Paused at step 0: the schedule is asked every frame, the frame goes out once.
        assert!(!s.due(0, 0));
        assert!(!s.due(2, 0));
        assert!(s.due(3, 0));
        // Reset: episode 1, step 0 is due at once.
        assert!(s.due(0, 1));
        assert!(!s.due(1, 1));
        assert!(s.due(3, 1));
        // A reset seen only after a step of the new episode still sends at once.
        assert!(s.due(1, 2));
        assert!(!s.due(2, 2));
        assert!(s.due(3, 2));
    }

    #[test]
    fn a_jump_sends_one_frame_and_keeps_the_grid() {
        let mut s = Schedule::new(100);
        assert!(s.due(0, 0));
        assert!(s.due(100, 0));
        // Frame 42 was due at step 101 (42 · 2.4 = 100.8) and frame 43 at 104 (103.2): the
        // grid goes on from there.
        assert!(s.due(101, 0));
        assert!(!s.due(102, 0));
        assert!(!s.due(103, 0));
        assert!(s.due(104, 0));
    }
}
