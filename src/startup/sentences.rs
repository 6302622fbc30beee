//! One sentence for each way the port or the store can refuse to open: what is wrong and
//! what to do, never the error's debug text.

use crate::config::Config;
use crate::store::StoreError;

/// One sentence for a port that cannot be bound: what is wrong and what to do.
pub(super) fn listen_error(config: &Config, e: &std::io::Error) -> String {
    let at = format!("{}:{}", config.host, config.port);
    // The options as the user named them (`--port` or `--tablePort`, or the variable).
    let port = named(&config.port_named_as, "--port");
    let host = named(&config.host_named_as, "--host");
    match e.kind() {
        std::io::ErrorKind::AddrInUse => format!(
            "port {} on {} is already in use (is another tablestore or Azurite running?): stop it or choose another port with {port}",
            config.port, config.host
        ),
        std::io::ErrorKind::PermissionDenied => format!(
            "not allowed to listen on {at} (ports below 1024 need privileges): choose another port with {port}"
        ),
        std::io::ErrorKind::AddrNotAvailable => format!(
            "cannot listen on {at}: {} is not an address of this machine; use {host} 127.0.0.1 or 0.0.0.0",
            config.host
        ),
        _ => format!("cannot listen on {at}: {e}"),
    }
}

/// An option as the user named it (a variable name gets `=`), `default` when unknown.
fn named(as_named: &str, default: &str) -> String {
    match as_named {
        "" => default.to_string(),
        option if option.starts_with("--") => option.to_string(),
        variable => format!("{variable}="),
    }
}

/// The words `tablestore` takes first: its subcommands and Azurite's command names.
const COMMANDS: [&str; 5] = ["import", "export", "admin", "azurite", "azurite-table"];

/// One sentence for a first argument that is a word but no command (`tablestore imprt`),
/// naming the command it is closest to; `None` for an option or a command.
pub(super) fn unknown_command(word: &str) -> Option<String> {
    if word.is_empty() || word.starts_with('-') || COMMANDS.contains(&word) {
        return None;
    }
    // `azurite-blob` and `azurite-queue` get their own sentence from the configuration.
    if word.starts_with("azurite") {
        return None;
    }
    let closest = COMMANDS
        .iter()
        .map(|c| (edit_distance(word, c), *c))
        .min()
        .filter(|(distance, c)| *distance <= 2.min(c.len() / 2));
    Some(match closest {
        Some((_, command)) => {
            format!("`{word}` is not a command: did you mean `tablestore {command}`?")
        }
        None => format!(
            "`{word}` is not a command: the commands are `tablestore import`, `tablestore \
             export` and `tablestore admin`; without one, tablestore starts the server \
             (tablestore --help lists its options)"
        ),
    })
}

/// Levenshtein distance between two short words.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substituted = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substituted.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
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

    /// A mistyped command is named with the one meant; other words list the commands.
    #[test]
    fn unknown_commands_are_answered_with_the_closest() {
        let said = |w: &str| unknown_command(w).unwrap_or_default();
        assert!(said("imprt").ends_with("did you mean `tablestore import`?"));
        assert!(said("exprot").ends_with("did you mean `tablestore export`?"));
        assert!(said("amdin").ends_with("did you mean `tablestore admin`?"));
        assert!(
            said("serve").contains("the commands are"),
            "{}",
            said("serve")
        );
        for not_a_mistake in [
            "import",
            "--port",
            "-l",
            "azurite-table",
            "azurite-blob",
            "",
        ] {
            assert_eq!(unknown_command(not_a_mistake), None, "{not_a_mistake}");
        }
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
