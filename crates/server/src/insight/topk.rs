//! Bounded "heavy hitters" for partition heat: the Space-Saving algorithm (Metwally, Agrawal,
//! El Abbadi, "Efficient computation of frequent and top-k elements in data streams", 2005).
//! It keeps at most `capacity` keys whatever the number of distinct keys seen; a key that
//! occurs more than `total / capacity` times is guaranteed to be kept, and each kept count
//! overestimates the truth by at most its recorded `error`.

use std::collections::HashMap;

/// Longest key kept, in bytes (PartitionKeys may be up to 1024 UTF-16 units): memory stays
/// bounded by `capacity × MAX_KEY_BYTES` plus the counters.
pub(crate) const MAX_KEY_BYTES: usize = 128;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Counted {
    pub(crate) key: String,
    pub(crate) count: u64,
    /// Upper bound of how much of `count` belongs to keys evicted before this one.
    pub(crate) error: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct TopK {
    capacity: usize,
    entries: Vec<Counted>,
    index: HashMap<String, usize>,
}

/// Cuts `key` to [`MAX_KEY_BYTES`] at a character boundary (with `…` when cut).
pub(crate) fn bounded_key(key: &str) -> String {
    if key.len() <= MAX_KEY_BYTES {
        return key.to_string();
    }
    let mut end = MAX_KEY_BYTES;
    while !key.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &key[..end])
}

impl TopK {
    pub(crate) fn new(capacity: usize) -> TopK {
        TopK {
            capacity: capacity.max(1),
            entries: Vec::with_capacity(capacity.max(1)),
            index: HashMap::with_capacity(capacity.max(1)),
        }
    }

    /// Counts `weight` occurrences of `key`.
    pub(crate) fn add(&mut self, key: &str, weight: u64) {
        if let Some(&i) = self.index.get(key) {
            self.entries[i].count += weight;
            return;
        }
        let key = bounded_key(key);
        if let Some(&i) = self.index.get(&key) {
            self.entries[i].count += weight;
            return;
        }
        if self.entries.len() < self.capacity {
            self.index.insert(key.clone(), self.entries.len());
            self.entries.push(Counted {
                key,
                count: weight,
                error: 0,
            });
            return;
        }
        // Replace the smallest: the newcomer inherits its count as the error bound.
        let (i, _) = self
            .entries
            .iter()
            .enumerate()
            .min_by_key(|(_, c)| c.count)
            .expect("capacity is at least 1");
        let old = std::mem::replace(
            &mut self.entries[i],
            Counted {
                key: key.clone(),
                count: 0,
                error: 0,
            },
        );
        self.index.remove(&old.key);
        self.index.insert(key, i);
        self.entries[i].count = old.count + weight;
        self.entries[i].error = old.count;
    }

    /// The entry of `key`, if kept.
    pub(crate) fn get(&self, key: &str) -> Option<&Counted> {
        let i = match self.index.get(key) {
            Some(i) => *i,
            None => *self.index.get(&bounded_key(key))?,
        };
        self.entries.get(i)
    }

    /// Kept keys, highest count first.
    pub(crate) fn top(&self) -> Vec<Counted> {
        let mut v = self.entries.clone();
        v.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.key.cmp(&b.key)));
        v
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.index.clear();
    }

    /// Bytes held by the keys (the part that could grow with key length).
    #[cfg(test)]
    pub(crate) fn key_bytes(&self) -> usize {
        self.entries.iter().map(|c| c.key.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heavy_hitters_survive_a_flood_of_distinct_keys() {
        let mut t = TopK::new(16);
        for i in 0..100_000u64 {
            t.add(&format!("cold{i}"), 1);
            if i % 10 == 0 {
                t.add("hot", 1);
            }
        }
        assert_eq!(t.len(), 16);
        let top = t.top();
        assert_eq!(top[0].key, "hot");
        // Never underestimates; the overestimate is bounded by the recorded error.
        assert!(top[0].count >= 10_000 && top[0].count - top[0].error <= 10_000);
    }

    #[test]
    fn long_keys_are_cut() {
        let mut t = TopK::new(2);
        let long = "é".repeat(1000);
        t.add(&long, 1);
        t.add(&long, 1);
        assert_eq!(t.len(), 1);
        assert_eq!(t.top()[0].count, 2);
        assert!(t.key_bytes() <= MAX_KEY_BYTES + 3);
    }
}
