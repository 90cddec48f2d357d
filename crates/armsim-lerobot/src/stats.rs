//! `meta/stats.json` statistics, in LeRobot's shapes: per-dimension `[n]` lists for vectors and
//! scalars, per-channel `[3, 1, 1]` values in [0, 1] for images.

use serde_json::{Map, Value, json};

/// The quantiles LeRobot writes, with their keys.
pub(crate) const QUANTILES: [(f64, &str); 5] = [
    (0.01, "q01"),
    (0.10, "q10"),
    (0.50, "q50"),
    (0.90, "q90"),
    (0.99, "q99"),
];

/// Exact statistics of `rows` vectors of `dim` values stored row after row in `values`.
/// Quantiles interpolate linearly between order statistics (numpy's default); `std` is the
/// population standard deviation, as LeRobot computes it.
pub(crate) fn vector_stats(values: &[f64], dim: usize) -> Value {
    let rows = values.len().checked_div(dim).unwrap_or(0);
    let mut stat: Map<String, Value> = Map::new();
    let mut mins = Vec::with_capacity(dim);
    let mut maxs = Vec::with_capacity(dim);
    let mut means = Vec::with_capacity(dim);
    let mut stds = Vec::with_capacity(dim);
    let mut quants: Vec<Vec<f64>> = vec![Vec::with_capacity(dim); QUANTILES.len()];
    let mut column = Vec::with_capacity(rows);
    for d in 0..dim {
        column.clear();
        column.extend((0..rows).map(|r| values[r * dim + d]));
        column.sort_by(f64::total_cmp);
        let n = column.len() as f64;
        let mean = column.iter().sum::<f64>() / n;
        let var = column.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
        mins.push(column[0]);
        maxs.push(column[rows - 1]);
        means.push(mean);
        stds.push(var.max(0.0).sqrt());
        for (qi, (q, _)) in QUANTILES.iter().enumerate() {
            quants[qi].push(quantile_sorted(&column, *q));
        }
    }
    stat.insert("min".into(), json!(mins));
    stat.insert("max".into(), json!(maxs));
    stat.insert("mean".into(), json!(means));
    stat.insert("std".into(), json!(stds));
    stat.insert("count".into(), json!([rows]));
    for (qi, (_, key)) in QUANTILES.iter().enumerate() {
        stat.insert((*key).into(), json!(quants[qi]));
    }
    Value::Object(stat)
}

/// Linear interpolation between the order statistics around `q * (n - 1)`.
pub(crate) fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    let frac = pos - lo as f64;
    sorted[lo] + (sorted[hi] - sorted[lo]) * frac
}

/// Per-channel statistics of sampled RGB8 frames, kept as exact 256-bin histograms.
#[derive(Debug, Clone)]
pub(crate) struct ImageStats {
    frames: u64,
    hist: [[u64; 256]; 3],
}

impl ImageStats {
    pub(crate) fn new() -> Self {
        Self {
            frames: 0,
            hist: [[0; 256]; 3],
        }
    }

    /// Adds one RGB8 frame (all its pixels).
    pub(crate) fn add_frame(&mut self, rgb: &[u8]) {
        self.frames += 1;
        for px in rgb.chunks_exact(3) {
            self.hist[0][px[0] as usize] += 1;
            self.hist[1][px[1] as usize] += 1;
            self.hist[2][px[2] as usize] += 1;
        }
    }

    /// Adds another accumulator's frames.
    pub(crate) fn merge(&mut self, other: &ImageStats) {
        self.frames += other.frames;
        for (mine, theirs) in self.hist.iter_mut().zip(&other.hist) {
            for (a, b) in mine.iter_mut().zip(theirs) {
                *a += b;
            }
        }
    }

    #[cfg(test)]
    pub(crate) fn frames(&self) -> u64 {
        self.frames
    }

    /// `{min, max, mean, std, q..: [[[r]], [[g]], [[b]]], count: [frames]}`, values in [0, 1].
    pub(crate) fn to_json(&self) -> Value {
        let mut per_key: Vec<(String, [f64; 3])> = Vec::new();
        let mut mins = [0.0; 3];
        let mut maxs = [0.0; 3];
        let mut means = [0.0; 3];
        let mut stds = [0.0; 3];
        let mut quants = [[0.0; 3]; QUANTILES.len()];
        for c in 0..3 {
            let h = &self.hist[c];
            let total: u64 = h.iter().sum();
            if total == 0 {
                continue;
            }
            let first = h.iter().position(|&n| n > 0).unwrap_or(0);
            let last = h.iter().rposition(|&n| n > 0).unwrap_or(0);
            let (mut sum, mut sumsq) = (0.0f64, 0.0f64);
            for (v, &n) in h.iter().enumerate() {
                let x = v as f64 / 255.0;
                sum += x * n as f64;
                sumsq += x * x * n as f64;
            }
            let mean = sum / total as f64;
            mins[c] = first as f64 / 255.0;
            maxs[c] = last as f64 / 255.0;
            means[c] = mean;
            stds[c] = (sumsq / total as f64 - mean * mean).max(0.0).sqrt();
            for (qi, (q, _)) in QUANTILES.iter().enumerate() {
                // The smallest value whose cumulative count reaches q of the pixels.
                let target = q * total as f64;
                let mut cum = 0u64;
                let mut value = last;
                for (v, &n) in h.iter().enumerate() {
                    cum += n;
                    if cum as f64 >= target && n > 0 {
                        value = v;
                        break;
                    }
                }
                quants[qi][c] = value as f64 / 255.0;
            }
        }
        per_key.push(("min".into(), mins));
        per_key.push(("max".into(), maxs));
        per_key.push(("mean".into(), means));
        per_key.push(("std".into(), stds));
        for (qi, (_, key)) in QUANTILES.iter().enumerate() {
            per_key.push(((*key).into(), quants[qi]));
        }
        let mut stat = Map::new();
        for (key, v) in per_key {
            stat.insert(key, json!([[[v[0]]], [[v[1]]], [[v[2]]]]));
        }
        stat.insert("count".into(), json!([self.frames]));
        Value::Object(stat)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_stats_match_numpy() {
        // Two dimensions, five rows: column 0 = 1..5, column 1 = 10, 10, 10, 10, 20.
        let values = [1.0, 10.0, 2.0, 10.0, 3.0, 10.0, 4.0, 10.0, 5.0, 20.0];
        let s = vector_stats(&values, 2);
        assert_eq!(s["min"], json!([1.0, 10.0]));
        assert_eq!(s["max"], json!([5.0, 20.0]));
        assert_eq!(s["mean"], json!([3.0, 12.0]));
        assert_eq!(s["count"], json!([5]));
        let std0 = s["std"][0].as_f64().unwrap();
        assert!((std0 - 2.0f64.sqrt()).abs() < 1e-12, "{std0}");
        // numpy.quantile([1,2,3,4,5], 0.1) == 1.4; q50 == 3; q99 == 4.96
        assert!((s["q10"][0].as_f64().unwrap() - 1.4).abs() < 1e-12);
        assert_eq!(s["q50"][0], json!(3.0));
        assert!((s["q99"][0].as_f64().unwrap() - 4.96).abs() < 1e-12);
        assert!((s["q90"][1].as_f64().unwrap() - 16.0).abs() < 1e-12);
    }

    #[test]
    fn image_stats_are_per_channel_in_unit_range() {
        let mut st = ImageStats::new();
        // 4 pixels: red channel 0 and 255 twice each, green 51 everywhere, blue 0, 0, 0, 255.
        st.add_frame(&[0, 51, 0, 255, 51, 0, 0, 51, 0, 255, 51, 255]);
        let j = st.to_json();
        assert_eq!(j["count"], json!([1]));
        assert_eq!(j["min"], json!([[[0.0]], [[0.2]], [[0.0]]]));
        assert_eq!(j["max"], json!([[[1.0]], [[0.2]], [[1.0]]]));
        assert_eq!(j["mean"][0], json!([[0.5]]));
        assert_eq!(j["std"][0], json!([[0.5]]));
        assert_eq!(j["mean"][2], json!([[0.25]]));
        assert_eq!(j["q50"][0], json!([[0.0]]));
        assert_eq!(j["q99"][0], json!([[1.0]]));
        assert_eq!(j["q50"][2], json!([[0.0]]));
        assert_eq!(j["q90"][2], json!([[1.0]]));
        assert_eq!(st.frames(), 1);
    }
}
