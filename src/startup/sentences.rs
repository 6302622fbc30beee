//! One sentence for each way the port or the store can refuse to open: what is wrong and
//! what to do, never the error's debug text.

use crate::config::Config;
use crate::store::StoreError;

/// One sentence for a port that cannot be bound: what is wrong and what to do.
pub(super) fn listen_error(config: &Config, e: &std::io::Error) -> String {
    let at = format!("{}:{}", config.host, config.port);
    match e.kind() {
        std::io::ErrorKind::AddrInUse => format!(
            "port {} on {} is already in use (is another tablestore or Azurite running?): stop it or choose another port with --tablePort",
            config.port, config.host
        ),
        std::io::ErrorKind::PermissionDenied => format!(
            "not allowed to listen on {at} (ports below 1024 need privileges): choose another port with --tablePort"
        ),
        std::io::ErrorKind::AddrNotAvailable => format!(
            "cannot listen on {at}: {} is not an address of this machine; use --tableHost 127.0.0.1 or 0.0.0.0",
            config.host
        ),
        _ => format!("cannot listen on {at}: {e}"),
    }
}

/// One sentence for a data folder that cannot be opened: what is wrong and what to do, never
/// the error's debug text.
pub(super) fn store_error(config: &Config, e: &StoreError) -> String {
    if config.postgres().is_some() {
        // The PostgreSQL store's errors are already one sentence naming the database.
        return match e {
            StoreError::Io { .. }
            | StoreError::Database { .. }
            | StoreError::Unavailable { .. }
            | StoreError::Corrupt(_) => e.to_string(),
            _ => "the PostgreSQL store could not be opened: check the database --store names"
                .to_string(),
        };
    }
    let dir = config.store_dir();
    let shown = dir.display();
    if *e == StoreError::FolderInUse {
        let hint = match config.port {
            0 => String::new(),
            port => format!(" (is one already running on port {port}?)"),
        };
        return format!(
            "another tablestore is using the data folder {shown}{hint}: stop it, or give this one its own folder with --location"
        );
    }
    // The nearest part of the path that exists but is not a folder.
    if let Some(file) = dir.ancestors().find(|p| p.exists()).filter(|p| !p.is_dir()) {
        return format!(
            "{} is a file, not a folder, so the data folder {shown} cannot be created there: pass --location with a folder",
            file.display()
        );
    }
    match e.io_kind() {
        Some(std::io::ErrorKind::PermissionDenied) => {
            return format!(
                "permission denied for the data folder {shown}: pass --location with a folder you can write to, or fix its permissions"
            )
        }
        Some(std::io::ErrorKind::StorageFull) => {
            return format!(
                "the disk holding {shown} is full: free some space or pass --location on another disk"
            )
        }
        _ => {}
    }
    match e {
        StoreError::Corrupt(_) => format!(
            "the data folder {shown} holds data this tablestore cannot read ({e}): move it aside or pass --location with another folder"
        ),
        _ => format!("cannot open the data folder {shown} ({e}): check the folder or pass --location with another one"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Store and port errors become one sentence naming the folder or port and what to do
    /// (the permission case cannot be produced for real when the tests run as root).
    #[test]
    fn start_up_errors_say_what_to_do() {
        let dir = std::env::temp_dir().join("tablestore-no-such-parent-xyz");
        let config =
            Config::try_parse_args(["tablestore", "--location", dir.to_str().unwrap()], |_| {
                None
            })
            .unwrap();
        let denied = store_error(
            &config,
            &StoreError::io("sled", std::io::ErrorKind::PermissionDenied.into()),
        );
        assert!(
            denied.starts_with("permission denied for the data folder"),
            "{denied}"
        );
        assert!(denied.contains("--location"), "{denied}");
        assert!(!denied.contains("os error"), "{denied}");
        let in_use = store_error(&config, &StoreError::FolderInUse);
        assert!(in_use.contains("another tablestore is using"), "{in_use}");
        let busy = listen_error(&config, &std::io::ErrorKind::AddrInUse.into());
        assert!(busy.contains("is already in use"), "{busy}");
    }
}
