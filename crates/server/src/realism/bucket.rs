//! The token bucket behind the realism budgets: Storage's scalability targets ([`super::targets`])
//! and Cosmos's request units ([`super::request_units`]).

use std::time::{Duration, Instant};

/// A token bucket holding up to one second of its rate; it may go into debt.
#[derive(Debug, Clone)]
pub(crate) struct Bucket {
    pub(crate) tokens: f64,
    updated: Instant,
    /// When this bucket's refusal was last logged (one line per second per bucket).
    logged: Option<Instant>,
}

impl Bucket {
    pub(crate) fn new(rate: f64, now: Instant) -> Bucket {
        Bucket {
            tokens: rate,
            updated: now,
            logged: None,
        }
    }

    pub(crate) fn refill(&mut self, rate: f64, now: Instant) {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        self.tokens = (self.tokens + elapsed * rate).min(rate);
        self.updated = now;
    }

    /// Whether `cost` fits. A cost above the whole capacity fits a full bucket (and leaves
    /// it in debt), so a large change set under a small configured rate still gets through.
    pub(crate) fn fits(&self, cost: f64, rate: f64) -> bool {
        self.tokens >= cost.min(rate)
    }

    pub(crate) fn should_log(&mut self, now: Instant) -> bool {
        let due = self
            .logged
            .is_none_or(|t| now.saturating_duration_since(t) >= Duration::from_secs(1));
        if due {
            self.logged = Some(now);
        }
        due
    }
}
