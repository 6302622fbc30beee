//! `tablestore`: the allocator, then the command itself ([`tablestore::startup`]: subcommands,
//! or parse the configuration, start logging, open the store, serve until Ctrl-C or SIGTERM).
//! The allocator set-up is here because it is the binary's choice, and the library forbids
//! unsafe code.

use std::process::ExitCode;

/// mimalloc: the request path allocates many small short-lived buffers, which glibc's
/// allocator serves markedly slower and with more fragmentation.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Positions in mimalloc's `mi_option_e` that `libmimalloc-sys` does not name (stable:
/// retired options keep their slots).
const MI_OPTION_ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Keeps memory the server has freed from counting as resident: by default mimalloc commits
/// whole arenas up front and returns freed pages to the OS only after a second, which kept
/// sled's short-lived node copies (scans, reading pages in) resident — an empty store sat at
/// ~45 MiB instead of ~8. Measured without a throughput cost (docs/performance.md).
#[allow(unsafe_code)]
fn tune_allocator() {
    // SAFETY: plain setters of mimalloc's global options, valid at any time.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_ARENA_EAGER_COMMIT, 0);
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0);
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    tune_allocator();
    tablestore::startup::main(std::env::args_os().collect()).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The option positions are mimalloc's: before tuning they hold mimalloc 3's documented
    /// defaults (arena_eager_commit 2, purge_delay 1000 ms), after it our values.
    #[test]
    fn allocator_options_are_the_intended_ones() {
        let untouched = |var: &str| std::env::var_os(var).is_none();
        #[allow(unsafe_code)]
        // SAFETY: plain getters of mimalloc's global options.
        let get = |option| unsafe { libmimalloc_sys::mi_option_get(option) };
        if untouched("MIMALLOC_ARENA_EAGER_COMMIT") {
            assert_eq!(get(MI_OPTION_ARENA_EAGER_COMMIT), 2);
        }
        if untouched("MIMALLOC_PURGE_DELAY") {
            assert_eq!(get(MI_OPTION_PURGE_DELAY), 1000);
        }
        tune_allocator();
        assert_eq!(get(MI_OPTION_ARENA_EAGER_COMMIT), 0);
        assert_eq!(get(MI_OPTION_PURGE_DELAY), 0);
    }
}
