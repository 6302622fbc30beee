//! A page's scan of one large range on two threads: the calling thread reads the first half
//! into the page as usual while a helper thread reads the second half ahead, noting its
//! matches, their positions and the keys a page could end at; the halves are then joined as
//! if one thread had read them in order. The page (rows, continuation, examined count) is the
//! one the plain scan gives: when the second half would end the page at a row whose key the
//! helper did not note (the examined-rows budget falling between two matches), that half is
//! read again by the plain scan. Ranges are split only where the store reads them from RAM,
//! only at a partition's start (a partition, and so a batch, is read by one thread), and only
//! while a core is free, so a busy server runs each scan on one thread as before.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

use super::{Matcher, PageBuilder, PageLimits};
use crate::store::{KeyBound, KeyRange, RowSource, StoreError, StoredRow, StoredRows};

/// Ranges with fewer rows are scanned on one thread (a thread costs tens of microseconds;
/// this many rows take a millisecond or more).
pub(super) const SPLIT_MIN_ROWS: usize = 16_384;

/// Whether a scan may use a helper thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Split {
    /// When a core is free (at most one helper per spare core, server-wide).
    IfCoreFree,
    /// Ranges of at least this many rows, whatever the other scans do (tests).
    #[cfg(test)]
    Always(usize),
    /// Never (tests: the plain scan to compare with).
    #[cfg(test)]
    Never,
}

/// Helper threads running now, across all scans.
static HELPERS: AtomicUsize = AtomicUsize::new(0);

fn spare_cores() -> usize {
    static SPARE: OnceLock<usize> = OnceLock::new();
    *SPARE.get_or_init(|| {
        std::thread::available_parallelism()
            .map(|n| n.get().saturating_sub(1))
            .unwrap_or(0)
    })
}

/// A helper slot, given back when dropped.
struct Slot;

impl Slot {
    fn take() -> Option<Slot> {
        HELPERS
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < spare_cores()).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        HELPERS.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Reads `range` into `builder` on two threads if it is worth it. Returns false, having read
/// nothing, when the range is to be read by the plain scan.
pub(super) fn scan_split(
    rows: &dyn RowSource,
    range: &KeyRange,
    matches: &Matcher<'_>,
    builder: &mut PageBuilder,
    split: Split,
) -> Result<bool, StoreError> {
    let (_slot, min_rows) = match split {
        Split::IfCoreFree => match Slot::take() {
            Some(slot) => (Some(slot), SPLIT_MIN_ROWS),
            None => return Ok(false),
        },
        #[cfg(test)]
        Split::Always(min_rows) => (None, min_rows),
        #[cfg(test)]
        Split::Never => return Ok(false),
    };
    let Some(partition) = rows.split_point(range, min_rows) else {
        return Ok(false);
    };
    let first = KeyRange {
        start: range.start.clone(),
        end: KeyBound::PartitionStart(partition.clone()),
    };
    let second = KeyRange {
        start: KeyBound::PartitionStart(partition),
        end: range.end.clone(),
    };
    let stop = AtomicBool::new(false);
    let limits = builder.limits;
    let started = builder.started;
    let (first_result, ahead) = std::thread::scope(|s| {
        let helper = s.spawn(|| Ahead::read(rows, &second, matches, limits, started, &stop));
        let result = builder.scan(rows, &first, matches);
        if builder.done || result.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        let ahead = helper
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (result, ahead)
    });
    first_result?;
    if builder.done {
        return Ok(true);
    }
    if !ahead.join_into(builder) {
        // The page ends inside the second half at a row the helper did not note.
        builder.scan(rows, &second, matches)?;
    }
    Ok(true)
}

/// What the helper read of the second half: enough to continue the page from wherever the
/// first half leaves it.
#[derive(Default)]
struct Ahead {
    /// Matching rows, in order.
    rows: StoredRows,
    /// Each match's position in the half (the first row is 1).
    positions: Vec<u64>,
    /// The key of the row after each match (`None`: the match was the half's last row).
    after: Vec<Option<(String, String)>>,
    /// The key of the half's first row.
    first_key: Option<(String, String)>,
    /// Rows read.
    read: u64,
    /// The whole half was read.
    complete: bool,
    /// The helper stopped on the page's time budget at this position (key of that row).
    time_cut: Option<(u64, (String, String))>,
    /// The last row read matched: the next row's key goes to `after`.
    want_after: bool,
    /// A row's key could not be decoded, or the scan failed: leave it to the plain scan,
    /// which reports it where it occurs.
    failed: bool,
}

impl Ahead {
    fn read(
        rows: &dyn RowSource,
        range: &KeyRange,
        matches: &Matcher<'_>,
        limits: PageLimits,
        started: std::time::Instant,
        stop: &AtomicBool,
    ) -> Ahead {
        let mut ahead = Ahead::default();
        let mut stopped = false;
        let result = rows.scan_raw(range, &mut |row| {
            let more = ahead.take(&row, matches, limits, started, stop);
            stopped |= !more;
            more
        });
        if ahead.want_after {
            ahead.after.push(None);
        }
        ahead.failed |= result.is_err();
        ahead.complete = !ahead.failed && !stopped;
        ahead
    }

    /// Notes one row of the half; false to stop reading.
    fn take(
        &mut self,
        row: &StoredRow<'_>,
        matches: &Matcher<'_>,
        limits: PageLimits,
        started: std::time::Instant,
        stop: &AtomicBool,
    ) -> bool {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        self.read += 1;
        let position = self.read;
        if position == 1 || self.want_after {
            let Ok(key) = row.keys() else {
                self.failed = true;
                return false;
            };
            if self.want_after {
                self.after.push(Some(key.clone()));
                self.want_after = false;
            }
            if position == 1 {
                self.first_key = Some(key);
            }
        }
        // Enough for any first half: a full page of matches and the row after the last, or
        // more rows than a page may examine.
        if self.rows.len() >= limits.top || position > limits.max_examined {
            return false;
        }
        if position.is_multiple_of(256) && started.elapsed() > limits.max_duration {
            match row.keys() {
                Ok(key) => self.time_cut = Some((position, key)),
                Err(_) => self.failed = true,
            }
            return false;
        }
        if matches(row) {
            self.rows.push(row);
            self.positions.push(position);
            self.want_after = true;
        }
        true
    }

    /// Appends this half to the page as the plain scan would have read it. False when that
    /// needs a row key the helper did not note (nothing is appended then).
    fn join_into(self, builder: &mut PageBuilder) -> bool {
        if self.failed {
            return false;
        }
        let limits = builder.limits;
        let page = &mut builder.page;
        let examined = page.examined;
        let have = page.rows.len();
        // Where the page ends in this half (position and the key there), if it does.
        let mut cut: Option<(u64, Option<(String, String)>)> = None;
        let mut consider = |position: u64, key: Option<(String, String)>| {
            if cut.as_ref().is_none_or(|(p, _)| position < *p) {
                cut = Some((position, key));
            }
        };
        // A full page: the row after the match that fills it.
        let needed = limits.top.saturating_sub(have);
        if needed == 0 {
            if let Some(key) = &self.first_key {
                consider(1, Some(key.clone()));
            }
        } else if let Some(position) = self.positions.get(needed - 1) {
            if let Some(Some(key)) = self.after.get(needed - 1) {
                consider(position + 1, Some(key.clone()));
            }
        }
        // The examined-rows budget: the row that exceeds it.
        let budget_position = (limits.max_examined + 1).saturating_sub(examined).max(1);
        if budget_position <= self.read {
            let known = if budget_position == 1 {
                self.first_key.clone()
            } else {
                self.positions
                    .iter()
                    .position(|p| p + 1 == budget_position)
                    .and_then(|i| self.after[i].clone())
            };
            consider(budget_position, known);
        }
        if let Some((position, key)) = &self.time_cut {
            consider(*position, Some(key.clone()));
        }
        let (end, next) = match cut {
            Some((position, Some(key))) => (position, Some(key)),
            Some((_, None)) => return false,
            None if self.complete => (self.read, None),
            // Stopped early with no end found here: should not happen; read it plainly.
            None => return false,
        };
        for (row, position) in self.rows.iter().zip(&self.positions) {
            if *position >= end && next.is_some() {
                break;
            }
            page.rows.push(&row);
        }
        page.examined = examined + end;
        if next.is_some() {
            page.next = next;
            builder.done = true;
        }
        true
    }
}
