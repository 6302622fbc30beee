//! Latency histogram (microseconds) over `hdrhistogram`: three significant digits, so values
//! below 2048 µs are exact and any reported percentile is within 0.1 % of the true value.
//! Memory is fixed (about 190 KiB) however many operations are recorded; latencies beyond an
//! hour count as an hour.

use hdrhistogram::Histogram as Hdr;

/// Significant decimal digits kept for every recorded value.
const SIGNIFICANT_DIGITS: u8 = 3;
/// The largest latency told apart: one hour.
const HIGHEST_MICROS: u64 = 3_600_000_000;

#[derive(Clone)]
pub struct Histogram(Hdr<u64>);

impl Default for Histogram {
    fn default() -> Self {
        Histogram(
            Hdr::new_with_bounds(1, HIGHEST_MICROS, SIGNIFICANT_DIGITS)
                .expect("1 µs to an hour at 3 significant digits are valid bounds"),
        )
    }
}

impl Histogram {
    pub fn record(&mut self, micros: u64) {
        self.0.saturating_record(micros);
    }

    pub fn merge(&mut self, other: &Histogram) {
        self.0
            .add(&other.0)
            .expect("histograms with the same bounds always add");
    }

    #[cfg(test)]
    pub fn count(&self) -> u64 {
        self.0.len()
    }

    pub fn max(&self) -> u64 {
        self.0.max()
    }

    pub fn min(&self) -> u64 {
        self.0.min()
    }

    pub fn mean(&self) -> f64 {
        self.0.mean()
    }

    /// The value at quantile `q` (0.0..=1.0); 0 when nothing was recorded.
    pub fn quantile(&self, q: f64) -> u64 {
        self.0.value_at_quantile(q.clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_below_two_milliseconds() {
        let mut h = Histogram::default();
        for v in 1..=100 {
            h.record(v);
        }
        assert_eq!(h.count(), 100);
        assert_eq!(h.quantile(0.5), 50);
        assert_eq!(h.quantile(0.99), 99);
        assert_eq!(h.quantile(1.0), 100);
        assert_eq!(h.max(), 100);
        assert_eq!(h.min(), 1);
        assert!((h.mean() - 50.5).abs() < 1e-9);
    }

    #[test]
    fn relative_error_is_small_everywhere() {
        for v in [2048u64, 2049, 12_345, 999_999, 60_000_000, HIGHEST_MICROS] {
            let mut h = Histogram::default();
            h.record(v);
            let got = h.quantile(0.5);
            let err = (got as f64 - v as f64).abs() / v as f64;
            assert!(err < 0.001, "{v} -> {got}");
        }
    }

    #[test]
    fn merge_and_quantiles() {
        let mut a = Histogram::default();
        let mut b = Histogram::default();
        for _ in 0..990 {
            a.record(1_000);
        }
        for _ in 0..10 {
            b.record(50_000);
        }
        a.merge(&b);
        assert_eq!(a.count(), 1000);
        assert_eq!(a.quantile(0.5), 1_000);
        let p999 = a.quantile(0.999);
        assert!((49_950..=50_050).contains(&p999), "{p999}");
        assert!((49_950..=50_050).contains(&a.max()), "{}", a.max());
        assert_eq!(Histogram::default().quantile(0.5), 0);
        assert_eq!(Histogram::default().min(), 0);
    }

    #[test]
    fn latencies_beyond_an_hour_count_as_an_hour() {
        let mut h = Histogram::default();
        h.record(u64::MAX);
        let max = h.max() as f64;
        assert!((max - HIGHEST_MICROS as f64).abs() / (HIGHEST_MICROS as f64) < 0.001);
    }
}
