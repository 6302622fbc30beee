//! Server-side resource figures read from Linux `/proc` (`--server-pid`) and the size of a data
//! folder (`--data-dir`). On other systems the figures are simply absent.

use std::path::Path;

/// Clock ticks per second of `utime`/`stime` in `/proc/PID/stat`: Linux reports them in
/// `USER_HZ`, which is 100 on every architecture the kernel exports to user space.
pub const USER_HZ: u64 = 100;

/// Memory figures of `/proc/PID/status`, in KiB.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Memory {
    /// `VmRSS`: resident set now.
    pub rss_kib: u64,
    /// `VmHWM`: peak resident set since the process started.
    pub hwm_kib: u64,
}

pub fn memory(pid: u32) -> Option<Memory> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_status(&text)
}

pub fn parse_status(text: &str) -> Option<Memory> {
    let field = |name: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        line[name.len()..]
            .split_whitespace()
            .next()
            .and_then(|v| v.parse().ok())
    };
    Some(Memory {
        rss_kib: field("VmRSS:")?,
        hwm_kib: field("VmHWM:")?,
    })
}

/// `utime + stime` of the process (all threads), in clock ticks.
pub fn cpu_ticks(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat_cpu(&text)
}

pub fn parse_stat_cpu(text: &str) -> Option<u64> {
    // The command name (field 2) is in parentheses and may contain spaces: split after the
    // last ')'. Fields after it start at field 3 (state); utime and stime are fields 14 and 15.
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

pub fn ticks_to_ms(ticks: u64) -> f64 {
    ticks as f64 * 1000.0 / USER_HZ as f64
}

/// Total size in bytes of the regular files under `dir` (symlinks not followed), visiting at
/// most 1,000,000 entries.
pub fn dir_size(dir: &Path) -> Option<u64> {
    let mut total = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    let mut budget = 1_000_000u32;
    std::fs::metadata(dir).ok()?;
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            budget = budget.saturating_sub(1);
            if budget == 0 {
                return Some(total);
            }
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() {
                total += meta.len();
            }
        }
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_status() {
        let t = "Name:\ttablestore\nVmPeak:\t 1000 kB\nVmHWM:\t   52340 kB\nVmRSS:\t   41000 kB\n";
        assert_eq!(
            parse_status(t),
            Some(Memory {
                rss_kib: 41000,
                hwm_kib: 52340
            })
        );
        assert_eq!(parse_status("Name: x\n"), None);
    }

    #[test]
    fn parses_stat_with_spaces_in_name() {
        let t =
            "1234 (tokio runtime) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 40 0 0 20 0 8 0 100 0 0";
        assert_eq!(parse_stat_cpu(t), Some(290));
        assert_eq!(parse_stat_cpu("garbage"), None);
    }

    #[test]
    fn reads_own_process_and_dir_size() {
        let me = std::process::id();
        if cfg!(target_os = "linux") {
            assert!(memory(me).is_some_and(|m| m.hwm_kib >= m.rss_kib.min(1)));
            assert!(cpu_ticks(me).is_some());
        }
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("a"), [0u8; 10]).unwrap();
        std::fs::write(d.path().join("sub/b"), [0u8; 5]).unwrap();
        assert_eq!(dir_size(d.path()), Some(15));
        assert_eq!(dir_size(&d.path().join("missing")), None);
    }
}
