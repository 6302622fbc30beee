//! Per-second counts over a sliding window of the last [`WINDOW_SECONDS`] seconds, in a
//! fixed ring of buckets (bounded memory, no allocation after creation).

/// Length of the sliding window.
pub(crate) const WINDOW_SECONDS: u64 = 60;

#[derive(Debug, Clone)]
pub(crate) struct Window {
    /// `(second, count)`; a bucket whose second is older than the window counts as zero.
    buckets: [(u64, u64); WINDOW_SECONDS as usize],
}

impl Default for Window {
    fn default() -> Self {
        Window {
            buckets: [(u64::MAX, 0); WINDOW_SECONDS as usize],
        }
    }
}

impl Window {
    /// Adds `n` at second `now` (seconds since the statistics started).
    pub(crate) fn add(&mut self, now: u64, n: u64) {
        let b = &mut self.buckets[(now % WINDOW_SECONDS) as usize];
        if b.0 != now {
            *b = (now, 0);
        }
        b.1 += n;
    }

    /// The count of second `second` (zero when it has left the window).
    pub(crate) fn at(&self, second: u64) -> u64 {
        let b = self.buckets[(second % WINDOW_SECONDS) as usize];
        if b.0 == second {
            b.1
        } else {
            0
        }
    }

    /// Total over the window ending at `now` (inclusive).
    pub(crate) fn total(&self, now: u64) -> u64 {
        self.buckets
            .iter()
            .filter(|(s, _)| *s != u64::MAX && *s <= now && now - *s < WINDOW_SECONDS)
            .map(|(_, c)| c)
            .sum()
    }

    /// Mean per second over the window ending at `now` (shorter at the start).
    pub(crate) fn rate(&self, now: u64, started: u64) -> f64 {
        let span = (now.saturating_sub(started) + 1).min(WINDOW_SECONDS);
        self.total(now) as f64 / span as f64
    }

    /// The busiest second of the window ending at `now`.
    pub(crate) fn peak(&self, now: u64) -> u64 {
        self.buckets
            .iter()
            .filter(|(s, _)| *s != u64::MAX && *s <= now && now - *s < WINDOW_SECONDS)
            .map(|(_, c)| *c)
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_seconds_leave_the_window() {
        let mut w = Window::default();
        w.add(0, 5);
        w.add(1, 7);
        assert_eq!(w.total(1), 12);
        assert_eq!(w.peak(1), 7);
        assert_eq!(w.at(1), 7);
        assert_eq!(w.total(WINDOW_SECONDS), 7);
        assert_eq!(w.total(WINDOW_SECONDS + 1), 0);
        w.add(WINDOW_SECONDS + 1, 1); // reuses second 1's bucket
        assert_eq!(w.at(1), 0);
        assert_eq!(w.total(WINDOW_SECONDS + 1), 1);
    }
}
