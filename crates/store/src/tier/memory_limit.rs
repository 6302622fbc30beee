//! The server's resident memory, as the RAM tier's process-wide limit sees it.
//!
//! `--memory-budget` bounds the bytes of table rows the tier keeps; the rest of the server (the
//! on-disk store's page cache and page table, which grow with the data, request buffers, the
//! runtime) is outside that count. The tier therefore also watches the whole process: near
//! [`ProcessLimit::limit_bytes`] it stops loads and gives back the tables that writes are
//! making larger, and starts no load until there is room again, so the server stays near its
//! budget whatever the table sizes (docs/performance.md, "The RAM tier's budget"; decision 49).

use std::fmt;
use std::sync::Arc;

/// Reads the process's resident bytes now (`None`: unknown on this platform).
pub(crate) type MemoryProbe = Arc<dyn Fn() -> Option<u64> + Send + Sync>;

/// The resident set the tier keeps the process under, and how it measures it.
#[derive(Clone)]
pub(crate) struct ProcessLimit {
    /// Resident bytes of the whole process the tier tries to stay under.
    pub(crate) limit_bytes: u64,
    /// The margin the tier keeps below the limit, as the process can grow between two probes:
    /// within one headroom of the limit a load stops and growing tables are given back until
    /// an estimated two headrooms are free; a load starts only with two headrooms free.
    pub(crate) headroom_bytes: u64,
    pub(crate) probe: MemoryProbe,
}

impl ProcessLimit {
    /// The server's limit for a tier of `budget_mib`: the budget plus 64 MiB for everything
    /// else, measured with [`resident_bytes`].
    pub(crate) fn for_budget_mib(budget_mib: u64) -> ProcessLimit {
        ProcessLimit {
            limit_bytes: budget_mib.saturating_add(64).saturating_mul(1024 * 1024),
            headroom_bytes: 16 * 1024 * 1024,
            probe: Arc::new(resident_bytes),
        }
    }
}

impl fmt::Debug for ProcessLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProcessLimit")
            .field("limit_bytes", &self.limit_bytes)
            .field("headroom_bytes", &self.headroom_bytes)
            .finish_non_exhaustive()
    }
}

/// This process's resident set size (`VmRSS` of `/proc/self/status`, Linux); `None` elsewhere.
pub(crate) fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_vm_rss(&status)
}

/// `VmRSS:     1234 kB` → bytes.
fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
    let kib: u64 = line.trim().strip_suffix("kB")?.trim().parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_vm_rss_in_bytes() {
        let status = "Name:\ttablestore\nVmHWM:\t  9000 kB\nVmRSS:\t    1234 kB\nThreads:\t4\n";
        assert_eq!(parse_vm_rss(status), Some(1234 * 1024));
        assert_eq!(parse_vm_rss("Name:\tx\n"), None);
        assert_eq!(parse_vm_rss("VmRSS:\t12 MB\n"), None);
    }

    #[test]
    fn this_process_has_a_resident_set_on_linux() {
        if cfg!(target_os = "linux") {
            let bytes = resident_bytes().expect("VmRSS on Linux");
            assert!(bytes > 1024 * 1024, "{bytes}");
        }
    }

    #[test]
    fn the_server_limit_is_the_budget_plus_64_mib() {
        let limit = ProcessLimit::for_budget_mib(256);
        assert_eq!(limit.limit_bytes, 320 * 1024 * 1024);
        assert!(limit.headroom_bytes < limit.limit_bytes);
    }
}
