//! Statistics in LeRobot's shapes: per-dimension `[n]` lists for vectors and scalars, per-channel
//! `[3, 1, 1]` values in [0, 1] for images. Each saved episode gets its own [`FeatureStats`] per
//! feature (the episodes parquet's `stats/<feature>/<stat>` columns, which `lerobot-edit-dataset`
//! rebuilds `stats.json` from), and `stats.json` is [`aggregate`] over them: LeRobot's own formula,
//! so the two always agree.

use serde_json::{Value, json};

/// The quantiles LeRobot writes, with their keys.
pub(crate) const QUANTILES: [(f64, &str); 5] = [
    (0.01, "q01"),
    (0.10, "q10"),
    (0.50, "q50"),
    (0.90, "q90"),
    (0.99, "q99"),
];

/// Every statistic of a feature, in the order LeRobot writes them.
pub(crate) const STAT_NAMES: [&str; 10] = [
    "min", "max", "mean", "std", "count", "q01", "q10", "q50", "q90", "q99",
];

/// How a feature's statistics are shaped and typed, as numpy gives them to LeRobot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StatKind {
    /// A float feature: every statistic is a list of doubles.
    Float,
    /// An int64 feature (`frame_index`, `index`, ...): numpy keeps `min` and `max` as int64.
    Int,
    /// An RGB camera: three channels, each statistic shaped `[3, 1, 1]`, in [0, 1].
    Image,
}

/// One feature's statistics over some frames.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FeatureStats {
    pub kind: StatKind,
    pub min: Vec<f64>,
    pub max: Vec<f64>,
    pub mean: Vec<f64>,
    pub std: Vec<f64>,
    /// Frames (for images: sampled frames) the statistics cover.
    pub count: u64,
    /// One vector per entry of [`QUANTILES`].
    pub quantiles: [Vec<f64>; 5],
}

impl FeatureStats {
    /// The values of statistic `name` (any of [`STAT_NAMES`] but `count`).
    pub(crate) fn values(&self, name: &str) -> &[f64] {
        match name {
            "min" => &self.min,
            "max" => &self.max,
            "mean" => &self.mean,
            "std" => &self.std,
            _ => {
                let i = QUANTILES
                    .iter()
                    .position(|(_, k)| *k == name)
                    .unwrap_or_else(|| panic!("no statistic {name:?}"));
                &self.quantiles[i]
            }
        }
    }

    /// Whether statistic `name` is stored as integers (numpy's int64 `min`/`max` of int features).
    pub(crate) fn is_int(kind: StatKind, name: &str) -> bool {
        name == "count" || (kind == StatKind::Int && matches!(name, "min" | "max"))
    }

    /// Statistic `name` as LeRobot's `stats.json` holds it.
    pub(crate) fn json(&self, name: &str) -> Value {
        if name == "count" {
            return json!([self.count]);
        }
        let v = self.values(name);
        match self.kind {
            StatKind::Image => Value::Array(v.iter().map(|x| json!([[x]])).collect()),
            StatKind::Int if Self::is_int(self.kind, name) => {
                Value::Array(v.iter().map(|&x| json!(x as i64)).collect())
            }
            _ => json!(v),
        }
    }

    /// Every statistic, keyed by name (`stats.json` takes them in order through `meta.rs`).
    #[cfg(test)]
    pub(crate) fn to_json(&self) -> Value {
        let mut stat: serde_json::Map<String, Value> = serde_json::Map::new();
        for name in STAT_NAMES {
            stat.insert(name.into(), self.json(name));
        }
        Value::Object(stat)
    }
}

/// LeRobot's `aggregate_feature_stats` (`lerobot/datasets/compute_stats.py`): min of the mins,
/// max of the maxes, the count-weighted mean, the pooled standard deviation (each part's variance
/// plus its mean's squared distance from the total mean, weighted by count) and count-weighted
/// means of the quantiles. `parts` must be non-empty and alike in kind and size.
pub(crate) fn aggregate(parts: &[&FeatureStats]) -> FeatureStats {
    let first = parts[0];
    let dim = first.mean.len();
    let total: u64 = parts.iter().map(|p| p.count).sum();
    let n = total as f64;
    let weighted = |get: &dyn Fn(&FeatureStats) -> &[f64], d: usize| -> f64 {
        parts
            .iter()
            .map(|p| get(p)[d] * p.count as f64)
            .sum::<f64>()
            / n
    };
    let mut out = FeatureStats {
        kind: first.kind,
        min: Vec::with_capacity(dim),
        max: Vec::with_capacity(dim),
        mean: Vec::with_capacity(dim),
        std: Vec::with_capacity(dim),
        count: total,
        quantiles: std::array::from_fn(|_| Vec::with_capacity(dim)),
    };
    for d in 0..dim {
        let mean = weighted(&|p| &p.mean, d);
        let var = parts
            .iter()
            .map(|p| (p.std[d] * p.std[d] + (p.mean[d] - mean).powi(2)) * p.count as f64)
            .sum::<f64>()
            / n;
        out.min
            .push(parts.iter().map(|p| p.min[d]).fold(f64::INFINITY, f64::min));
        out.max.push(
            parts
                .iter()
                .map(|p| p.max[d])
                .fold(f64::NEG_INFINITY, f64::max),
        );
        out.mean.push(mean);
        out.std.push(var.sqrt());
        for (qi, q) in out.quantiles.iter_mut().enumerate() {
            q.push(weighted(&|p| &p.quantiles[qi], d));
        }
    }
    out
}

/// Exact statistics of `rows` vectors of `dim` values stored row after row in `values` (at least
/// one row). Quantiles interpolate linearly between order statistics (numpy's default; LeRobot
/// approximates the same with a 5000-bin histogram); `std` is the population standard deviation,
/// as LeRobot computes it.
pub(crate) fn vector_stats(values: &[f64], dim: usize, kind: StatKind) -> FeatureStats {
    let rows = values.len().checked_div(dim).unwrap_or(0);
    let mut out = FeatureStats {
        kind,
        min: Vec::with_capacity(dim),
        max: Vec::with_capacity(dim),
        mean: Vec::with_capacity(dim),
        std: Vec::with_capacity(dim),
        count: rows as u64,
        quantiles: std::array::from_fn(|_| Vec::with_capacity(dim)),
    };
    let mut column = Vec::with_capacity(rows);
    for d in 0..dim {
        column.clear();
        column.extend((0..rows).map(|r| values[r * dim + d]));
        column.sort_by(f64::total_cmp);
        let n = column.len() as f64;
        let mean = column.iter().sum::<f64>() / n;
        let var = column.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
        out.min.push(column[0]);
        out.max.push(column[rows - 1]);
        out.mean.push(mean);
        out.std.push(var.max(0.0).sqrt());
        for (qi, (q, _)) in QUANTILES.iter().enumerate() {
            out.quantiles[qi].push(quantile_sorted(&column, *q));
        }
    }
    out
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

    #[cfg(test)]
    pub(crate) fn frames(&self) -> u64 {
        self.frames
    }

    /// Per-channel statistics (shaped `[3, 1, 1]` when written), values in [0, 1]; `count` is
    /// the number of sampled frames, as in LeRobot.
    pub(crate) fn feature_stats(&self) -> FeatureStats {
        let mut out = FeatureStats {
            kind: StatKind::Image,
            min: vec![0.0; 3],
            max: vec![0.0; 3],
            mean: vec![0.0; 3],
            std: vec![0.0; 3],
            count: self.frames,
            quantiles: std::array::from_fn(|_| vec![0.0; 3]),
        };
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
            out.min[c] = first as f64 / 255.0;
            out.max[c] = last as f64 / 255.0;
            out.mean[c] = mean;
            out.std[c] = (sumsq / total as f64 - mean * mean).max(0.0).sqrt();
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
                out.quantiles[qi][c] = value as f64 / 255.0;
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_stats_match_numpy() {
        // Two dimensions, five rows: column 0 = 1..5, column 1 = 10, 10, 10, 10, 20.
        let values = [1.0, 10.0, 2.0, 10.0, 3.0, 10.0, 4.0, 10.0, 5.0, 20.0];
        let s = vector_stats(&values, 2, StatKind::Float).to_json();
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
        let j = st.feature_stats().to_json();
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

    #[test]
    fn aggregate_pools_like_lerobot() {
        // Two parts of the same column: 1..5 and 10, 20. Pooled, that is 1, 2, 3, 4, 5, 10, 20.
        let a = vector_stats(&[1.0, 2.0, 3.0, 4.0, 5.0], 1, StatKind::Int);
        let b = vector_stats(&[10.0, 20.0], 1, StatKind::Int);
        let all = vector_stats(&[1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 20.0], 1, StatKind::Int);
        let agg = aggregate(&[&a, &b]);
        assert_eq!(agg.count, 7);
        assert_eq!((agg.min[0], agg.max[0]), (1.0, 20.0));
        // Mean and std pool exactly.
        assert!((agg.mean[0] - all.mean[0]).abs() < 1e-12);
        assert!((agg.std[0] - all.std[0]).abs() < 1e-12, "{agg:?} {all:?}");
        // Quantiles are count-weighted means of the parts' quantiles (LeRobot's approximation).
        let want = (a.quantiles[2][0] * 5.0 + b.quantiles[2][0] * 2.0) / 7.0;
        assert!((agg.quantiles[2][0] - want).abs() < 1e-12);
        // Ints keep integer min/max in JSON; the rest are floats.
        let j = agg.to_json();
        assert_eq!(j["min"], json!([1]));
        assert_eq!(j["count"], json!([7]));
        assert!(j["mean"][0].is_f64());
    }
}
