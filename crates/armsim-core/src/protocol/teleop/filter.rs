//! The 1€ filter (Casiez, Roussel, Vogel, CHI 2012) on a 3-D point: smooths hand jitter when the
//! hand is still and follows it with little lag when it moves fast. Run once per sim step on the
//! latest target, so it is deterministic in sim time whatever the network does.

use glam::Vec3;

use crate::scene::OneEuroParams;

/// Low-pass weight for a cutoff frequency (Hz) at sample interval `dt` (s).
fn alpha(cutoff: f32, dt: f32) -> f32 {
    let tau = 1.0 / (2.0 * std::f32::consts::PI * cutoff);
    1.0 / (1.0 + tau / dt)
}

#[derive(Clone, Debug)]
pub struct OneEuro3 {
    params: OneEuroParams,
    /// Last filtered value and last filtered derivative; `None` until the first sample.
    state: Option<(Vec3, Vec3)>,
}

impl OneEuro3 {
    pub fn new(params: OneEuroParams) -> Self {
        Self {
            params,
            state: None,
        }
    }

    /// Forgets the history: the next sample passes through unchanged.
    pub fn reset(&mut self) {
        self.state = None;
    }

    /// Filters one sample taken `dt` seconds after the previous one. A non-finite sample is
    /// ignored (the last output holds), and a state that went non-finite starts over from the
    /// sample, so one bad value can never wedge the filter.
    pub fn filter(&mut self, x: Vec3, dt: f32) -> Vec3 {
        if !x.is_finite() {
            return self.state.map_or(x, |(prev, _)| prev);
        }
        if self
            .state
            .is_some_and(|(prev, dx)| !(prev.is_finite() && dx.is_finite()))
        {
            self.state = None;
        }
        let Some((prev, prev_dx)) = self.state else {
            self.state = Some((x, Vec3::ZERO));
            return x;
        };
        if dt.is_nan() || dt <= 0.0 {
            return prev;
        }
        let p = self.params;
        // As in the authors' reference code, the speed is taken against the previous *filtered*
        // value, so a large jump of the target reads as speed and opens the filter up at once.
        let dx = (x - prev) / dt;
        let dx_hat = prev_dx.lerp(dx, alpha(p.d_cutoff, dt));
        // Per axis: a fast move along one axis does not unsmooth the others.
        let cutoff = Vec3::splat(p.min_cutoff) + p.beta * dx_hat.abs();
        let a = Vec3::new(
            alpha(cutoff.x, dt),
            alpha(cutoff.y, dt),
            alpha(cutoff.z, dt),
        );
        let x_hat = prev + a * (x - prev);
        if !(x_hat.is_finite() && dx_hat.is_finite()) {
            // Overflow on an extreme jump: follow the sample rather than keep a poisoned state.
            self.state = Some((x, Vec3::ZERO));
            return x;
        }
        self.state = Some((x_hat, dx_hat));
        x_hat
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DT: f32 = 1.0 / 240.0;

    fn params() -> OneEuroParams {
        OneEuroParams {
            min_cutoff: 1.0,
            beta: 0.05,
            d_cutoff: 1.0,
        }
    }

    #[test]
    fn first_sample_passes_and_a_constant_converges() {
        let mut f = OneEuro3::new(params());
        let start = Vec3::new(0.5, 0.0, 1.1);
        assert_eq!(f.filter(start, DT), start);
        let goal = Vec3::new(0.6, 0.1, 1.2);
        let mut y = start;
        for _ in 0..(240 * 3) {
            y = f.filter(goal, DT);
        }
        assert!((y - goal).length() < 1e-3, "{y}");
    }

    #[test]
    fn jitter_is_attenuated() {
        let mut f = OneEuro3::new(params());
        let centre = Vec3::new(0.5, 0.0, 1.1);
        let mut worst: f32 = 0.0;
        for i in 0..2400 {
            // ±2 mm alternating noise, the kind a tracked hand shows at rest.
            let noise = if i % 2 == 0 { 0.002 } else { -0.002 };
            let y = f.filter(centre + Vec3::splat(noise), DT);
            if i > 240 {
                worst = worst.max((y - centre).abs().max_element());
            }
        }
        assert!(worst < 0.0005, "residual jitter {worst}");
    }

    #[test]
    fn a_fast_move_is_followed_with_more_bandwidth() {
        // With beta > 0 a fast ramp lags less than it would with beta = 0.
        let lag = |beta: f32| {
            let mut f = OneEuro3::new(OneEuroParams { beta, ..params() });
            let mut y = Vec3::ZERO;
            for i in 0..240 {
                y = f.filter(Vec3::new(i as f32 * DT, 0.0, 0.0), DT);
            }
            239.0 * DT - y.x
        };
        assert!(lag(1.0) < lag(0.0) * 0.8, "{} vs {}", lag(1.0), lag(0.0));
    }

    #[test]
    fn reset_forgets() {
        let mut f = OneEuro3::new(params());
        f.filter(Vec3::ZERO, DT);
        f.reset();
        let x = Vec3::new(1.0, 2.0, 3.0);
        assert_eq!(f.filter(x, DT), x);
    }

    #[test]
    fn an_overflowing_jump_never_poisons_the_filter() {
        let mut f = OneEuro3::new(OneEuroParams {
            min_cutoff: 1.0,
            beta: 0.5,
            d_cutoff: 1.0,
        });
        f.filter(Vec3::new(0.4, 0.0, 1.2), 1.0 / 240.0);
        // 1e37 / dt overflows the derivative: the state must stay finite and recover.
        let out = f.filter(Vec3::splat(1e37), 1.0 / 240.0);
        assert!(out.is_finite(), "{out}");
        let _ = f.filter(Vec3::NAN, 1.0 / 240.0);
        let mut last = Vec3::ZERO;
        for _ in 0..2400 {
            last = f.filter(Vec3::new(0.5, 0.1, 1.1), 1.0 / 240.0);
        }
        assert!((last - Vec3::new(0.5, 0.1, 1.1)).length() < 1e-3, "{last}");
    }
}
