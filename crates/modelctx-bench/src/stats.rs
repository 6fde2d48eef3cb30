//! Latency summaries.

use std::time::Duration;

/// A set of latency samples in microseconds.
#[derive(Debug, Clone, Default)]
pub struct Latencies {
    sorted: Vec<f64>,
}

impl Latencies {
    /// Samples given in microseconds.
    pub fn from_micros(mut micros: Vec<f64>) -> Self {
        micros.sort_by(f64::total_cmp);
        Self { sorted: micros }
    }

    /// Samples given as durations.
    pub fn from_durations(samples: &[Duration]) -> Self {
        Self::from_micros(samples.iter().map(|d| d.as_secs_f64() * 1e6).collect())
    }

    /// The `p`th percentile (nearest rank), or 0 without samples.
    pub fn percentile(&self, p: f64) -> f64 {
        if self.sorted.is_empty() {
            return 0.0;
        }
        let rank = ((p / 100.0) * self.sorted.len() as f64).ceil() as usize;
        self.sorted[rank.clamp(1, self.sorted.len()) - 1]
    }
}

/// The median of `values` (mean of the middle two for an even count), or `None` when
/// empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_nearest_rank() {
        let l = Latencies::from_micros((1..=100).map(f64::from).collect());
        assert_eq!(l.percentile(50.0), 50.0);
        assert_eq!(l.percentile(99.0), 99.0);
        assert_eq!(l.percentile(100.0), 100.0);
        assert_eq!(Latencies::default().percentile(50.0), 0.0);
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }
}
