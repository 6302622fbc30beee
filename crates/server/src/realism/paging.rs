//! Page-break policy: where a query page ends early, with a continuation token, even though
//! more matching entities were at hand. Azure ends pages at partition-range boundaries of a
//! cross-partition query and after 5 seconds of work, so a page may hold fewer than `$top`
//! entities, or none, and still carry a token (Query Entities REST reference, "Query timeout
//! and pagination"). The server cuts the page it computed at the returned index and continues
//! at the first entity it dropped, so no entity is lost or repeated.

use parking_lot::Mutex;

use rand::{RngExt as _, SeedableRng as _};
use rand_pcg::Pcg64;

/// `--page-breaks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PageBreaks {
    /// End each page where the PartitionKey changes.
    Partition,
    /// End pages at seeded random points, including empty pages.
    Random,
}

/// The policy with its seeded RNG.
pub(crate) struct PageBreaker {
    mode: PageBreaks,
    rng: Mutex<Pcg64>,
}

impl PageBreaker {
    pub(crate) fn new(mode: PageBreaks, seed: u64) -> PageBreaker {
        PageBreaker {
            mode,
            rng: Mutex::new(Pcg64::seed_from_u64(seed)),
        }
    }

    /// For a page whose rows have these partition keys (in order): `Some(n)` to keep only
    /// the first `n` (`n < len`), `None` to keep the page whole.
    pub(crate) fn cut(&self, partition_keys: &[&str]) -> Option<usize> {
        let first = *partition_keys.first()?;
        match self.mode {
            PageBreaks::Partition => partition_keys.iter().position(|pk| *pk != first),
            PageBreaks::Random => {
                let mut rng = self.rng.lock();
                // A quarter of the pages come back empty (with a token), half end at a
                // random row, the rest are whole.
                let roll: f64 = rng.random();
                if roll < 0.25 {
                    Some(0)
                } else if roll < 0.75 && partition_keys.len() > 1 {
                    Some(rng.random_range(1..partition_keys.len()))
                } else {
                    None
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_mode_ends_at_the_first_new_partition_key() {
        let b = PageBreaker::new(PageBreaks::Partition, 0);
        assert_eq!(b.cut(&["a", "a", "b", "b"]), Some(2));
        assert_eq!(b.cut(&["a", "a"]), None);
        assert_eq!(b.cut(&[]), None);
    }

    #[test]
    fn random_mode_is_seeded_and_makes_empty_and_short_pages() {
        let keys = ["p"; 10];
        let run = |seed| {
            let b = PageBreaker::new(PageBreaks::Random, seed);
            (0..200).map(|_| b.cut(&keys)).collect::<Vec<_>>()
        };
        let a = run(7);
        assert_eq!(a, run(7), "same seed, same cuts");
        assert_ne!(a, run(8));
        assert!(a.contains(&Some(0)), "some empty pages");
        assert!(a.contains(&None), "some whole pages");
        assert!(a.iter().flatten().all(|&n| n < keys.len()));
    }
}
