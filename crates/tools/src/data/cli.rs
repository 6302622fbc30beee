//! The `tablestore export` and `tablestore import` subcommands: their options, where they
//! read and write, and the summary they print.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};

use super::local::{open_folder, runtime, LocalEndpoint};
use super::progress::Progress;
use super::remote::{RemoteAccount, RemoteEndpoint};
use super::transfer::{self, ExportOptions, Format, ImportOptions, Summary};
use super::{azurite, peak_rss_bytes, DataError, Endpoint, Mode};
use crate::config::{CompressionArg, FlavorArg, STORE_DIR_NAME};
use crate::protocol::dialect::{Dialect, Flavor};
use crate::store::open::{folder_compression, Compression};
use crate::store::Store;

#[derive(Debug, Parser)]
#[command(name = "tablestore", disable_version_flag = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Export tables to JSON Lines or Storage Explorer's typed CSV (a folder per account with a
    /// manifest, or one file for one table).
    Export(ExportArgs),
    /// Import an export (folder or file), or Azurite's table database (--from-azurite).
    Import(ImportArgs),
}

/// Where the data is: a data folder or a Table endpoint.
#[derive(Debug, Clone, Args)]
#[group(required = true, multiple = false, id = "endpoint")]
struct EndpointArgs {
    /// A tablestore workspace folder (the server's --location); the server must be stopped.
    #[arg(short = 'l', long, value_name = "DIR", group = "endpoint")]
    location: Option<PathBuf>,
    /// A Table endpoint's connection string (tablestore, Azurite or an Azure account).
    #[arg(
        long,
        value_name = "CS",
        group = "endpoint",
        env = "TABLESTORE_CONNECTION_STRING",
        hide_env_values = true
    )]
    connection_string: Option<String>,
    /// A Table endpoint's URL, e.g. https://acct.table.core.windows.net or
    /// http://127.0.0.1:10002/devstoreaccount1; with --sas or --account-key (or a SAS as its
    /// query).
    #[arg(long, value_name = "URL", group = "endpoint")]
    url: Option<String>,
}

#[derive(Debug, Clone, Args)]
struct Credentials {
    /// A SAS token for --url.
    #[arg(long, value_name = "SAS", requires = "url", hide_env_values = true)]
    sas: Option<String>,
    /// The account key for --url.
    #[arg(
        long,
        value_name = "KEY",
        requires = "url",
        env = "TABLESTORE_ACCOUNT_KEY",
        hide_env_values = true
    )]
    account_key: Option<String>,
    /// Accounts of a data folder (default: the names in AZURITE_ACCOUNTS, else
    /// devstoreaccount1, or localhost with --flavor cosmos).
    #[arg(long = "account", value_name = "NAME")]
    accounts: Vec<String>,
    /// Whose table names a data folder's tables go by: storage (case-insensitive, the
    /// default) or cosmos (case-sensitive, Cosmos DB's rules), as the server's --flavor.
    #[arg(long, value_enum, default_value = "storage", value_name = "F")]
    flavor: FlavorArg,
    /// No progress output.
    #[arg(short, long)]
    quiet: bool,
}

#[derive(Debug, Args)]
struct ExportArgs {
    #[command(flatten)]
    endpoint: EndpointArgs,
    #[command(flatten)]
    credentials: Credentials,
    /// A table to export (repeatable; default: every table).
    #[arg(long = "table", value_name = "T")]
    tables: Vec<String>,
    /// Export only the entities matching this $filter (OData, as in Query Entities).
    #[arg(long, value_name = "FILTER")]
    filter: Option<String>,
    /// File format (a file name ending .jsonl or .csv chooses it too).
    #[arg(long, value_enum, default_value_t = Format::Jsonl)]
    format: Format,
    /// Output folder (one folder per account), a .jsonl / .csv file for one table, or `-`
    /// for standard output (one table, in --format).
    #[arg(long, value_name = "PATH")]
    out: PathBuf,
    /// Continue an interrupted export from its last checkpoint.
    #[arg(long)]
    resume: bool,
}

#[derive(Debug, Args)]
struct ImportArgs {
    #[command(flatten)]
    endpoint: EndpointArgs,
    #[command(flatten)]
    credentials: Credentials,
    /// An export folder or file; not with --from-azurite.
    #[arg(
        value_name = "PATH",
        required_unless_present = "from_azurite",
        conflicts_with = "from_azurite"
    )]
    path: Option<PathBuf>,
    /// Import Azurite's table database from its --location folder.
    #[arg(long, value_name = "AZURITE_DIR")]
    from_azurite: Option<PathBuf>,
    /// The table of a single file (default: the file's name).
    #[arg(long, value_name = "T")]
    table: Option<String>,
    /// What to do with an entity that already exists.
    #[arg(long, value_enum, default_value_t = Mode::Insert)]
    mode: Mode,
    /// Continue an interrupted import from its last checkpoint.
    #[arg(long)]
    resume: bool,
    /// Compression of a data folder the import creates (as the server's --compression): lz4
    /// (default), zstd or off. An existing folder keeps what it was created with.
    #[arg(long, value_enum, value_name = "C")]
    compression: Option<CompressionArg>,
}

/// `Some(exit code)` when `args` is an `export` or `import` command line (which it then
/// runs), `None` for a server command line.
pub fn run_if_subcommand(args: &[OsString]) -> Option<ExitCode> {
    let word = args.get(1)?.to_str()?;
    if !matches!(word, "export" | "import") {
        return None;
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return Some(if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            });
        }
    };
    Some(match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tablestore {word}: {e}");
            ExitCode::FAILURE
        }
    })
}

/// The accounts of a data folder to work on.
fn folder_accounts(given: &[String], flavor: FlavorArg) -> Vec<String> {
    if !given.is_empty() {
        return given.to_vec();
    }
    let from_env = std::env::var("AZURITE_ACCOUNTS").ok().map(|list| {
        list.split(';')
            .filter_map(|a| a.split(':').next())
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_string)
            .collect::<Vec<_>>()
    });
    from_env
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| vec![flavor.default_account().to_string()])
}

fn remote(endpoint: &EndpointArgs, credentials: &Credentials) -> Result<RemoteEndpoint, DataError> {
    let target = match (&endpoint.connection_string, &endpoint.url) {
        (Some(cs), _) => RemoteAccount::from_connection_string(cs)?,
        (None, Some(url)) => RemoteAccount::from_url(
            url,
            credentials.sas.as_deref(),
            credentials.account_key.as_deref(),
        )?,
        (None, None) => unreachable!("clap requires one endpoint"),
    };
    RemoteEndpoint::new(target)
}

/// Prints `line` on standard output; a reader that went away (`| head`) is no error.
pub fn stdout_line(line: &str) {
    stdout_line_bytes(line.as_bytes());
}

/// [`stdout_line`] of bytes (a line end is added unless they end with one, or are none).
pub(crate) fn stdout_line_bytes(bytes: &[u8]) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes);
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        let _ = out.write_all(b"\n");
    }
    let _ = out.flush();
}

/// The closing line of an export or import.
fn summary_line(verb: &str, summary: &Summary, progress: &Progress) -> String {
    progress.finish();
    let seconds = progress.elapsed().as_secs_f64();
    let mut line = format!(
        "{verb} {} entities in {} table{} in {seconds:.1} s ({:.0} entities/s)",
        summary.entities - summary.skipped,
        summary.tables,
        if summary.tables == 1 { "" } else { "s" },
        (summary.entities - summary.skipped) as f64 / seconds.max(1e-9),
    );
    if summary.skipped > 0 {
        line.push_str(&format!(
            "; {} already present, left as they were",
            summary.skipped
        ));
    }
    if let Some(rss) = peak_rss_bytes() {
        line.push_str(&format!("; peak memory {} MiB", rss / (1024 * 1024)));
    }
    line
}

fn run(command: Command) -> Result<(), DataError> {
    match command {
        Command::Export(args) => export(args),
        Command::Import(args) => import(args),
    }
}

fn add(total: &mut Summary, part: Summary) {
    total.tables += part.tables;
    total.entities += part.entities;
    total.skipped += part.skipped;
    for note in part.notes {
        total.note(note);
    }
}

/// `--out -`: standard output.
const STANDARD_OUTPUT: &str = "-";

/// An export into a folder or file, or (`--out -`) one table's lines on standard output with
/// the summary on standard error, so the output is the data alone.
fn export(args: ExportArgs) -> Result<(), DataError> {
    let to_stdout = args.out.as_os_str() == STANDARD_OUTPUT;
    if to_stdout && args.resume {
        return Err(DataError::new(
            "--resume continues an export into a file or folder: an export to standard output \
             (--out -) is simply run again",
        ));
    }
    let options = ExportOptions {
        tables: args.tables.clone(),
        filter: args.filter.clone(),
        format: match Format::of_file(&args.out) {
            Some((format, _)) if !to_stdout => format,
            _ => args.format,
        },
        resume: args.resume,
    };
    let mut progress = Progress::new("exported", args.credentials.quiet);
    let accounts = folder_accounts(&args.credentials.accounts, args.credentials.flavor);
    let total = with_endpoints(
        &args.endpoint,
        &args.credentials,
        None,
        &accounts,
        |sources| {
            let single = to_stdout || Format::of_file(&args.out).is_some();
            if single && sources.len() > 1 {
                return Err(DataError::new(format!(
                    "{} takes one account: give one --account",
                    if to_stdout {
                        "standard output (--out -)"
                    } else {
                        "a single output file"
                    }
                )));
            }
            let mut total = Summary::default();
            for source in sources {
                let exported = if to_stdout {
                    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
                    transfer::export_stream(*source, &options, &mut out, &mut progress)?
                } else {
                    transfer::export(*source, &args.out, &options, &mut progress)?
                };
                add(&mut total, exported);
            }
            Ok(total)
        },
    )?;
    let line = summary_line("exported", &total, &progress);
    if !to_stdout {
        stdout_line(&line);
    } else if !args.credentials.quiet {
        eprintln!("{line}");
    }
    for note in &total.notes {
        eprintln!("tablestore export: note: {note}");
    }
    Ok(())
}

fn import(args: ImportArgs) -> Result<(), DataError> {
    if args.compression.is_some() && args.endpoint.location.is_none() {
        return Err(DataError::new(
            "--compression applies to a data folder (--location): a server compresses its \
             own folder, so start it with --compression instead",
        ));
    }
    let mut progress = Progress::new("imported", args.credentials.quiet);
    let options = ImportOptions {
        mode: args.mode,
        resume: args.resume,
        checkpoints: true,
        limits: Flavor::from(args.credentials.flavor)
            .dialect()
            .entity_limits,
    };
    let summary = if let Some(dir) = &args.from_azurite {
        import_azurite(&args, dir, &options, &mut progress)?
    } else {
        let path = args.path.as_deref().expect("clap requires PATH");
        let tables = transfer::sources(path, args.table.as_deref())?;
        let progress_path = transfer::import_progress_path(path);
        with_targets(&args, &tables, |targets| {
            transfer::import(
                &tables,
                targets,
                Some(&progress_path),
                &options,
                &mut progress,
            )
        })?
    };
    stdout_line(&summary_line("imported", &summary, &progress));
    for note in &summary.notes {
        eprintln!("tablestore import: note: {note}");
    }
    Ok(())
}

/// Runs `work` with the import's targets: every account the sources name in a data folder,
/// or the one endpoint.
fn with_targets<T>(
    args: &ImportArgs,
    tables: &[transfer::SourceTable],
    work: impl FnOnce(&[&dyn Endpoint]) -> Result<T, DataError>,
) -> Result<T, DataError> {
    let default =
        folder_accounts(&args.credentials.accounts, args.credentials.flavor).swap_remove(0);
    let accounts = import_accounts(tables, &default);
    let compression = args.compression.map(Compression::from).unwrap_or_default();
    // Said once the folder is open (not when it is refused, e.g. in use by a server).
    let kept = kept_compression_note(args.compression, args.endpoint.location.as_deref());
    with_endpoints(
        &args.endpoint,
        &args.credentials,
        Some(compression),
        &accounts,
        |targets| {
            if let Some(note) = &kept {
                eprintln!("{note}");
            }
            work(targets)
        },
    )
}

/// What an import says when `--compression` asks for another compression than the existing
/// data folder at `location` was created with (which it keeps).
fn kept_compression_note(asked: Option<CompressionArg>, location: Option<&Path>) -> Option<String> {
    let (asked, location) = asked.zip(location)?;
    let existing = folder_compression(&location.join(STORE_DIR_NAME))?;
    (existing != Compression::from(asked)).then(|| {
        format!(
            "tablestore import: note: {} was created with compression {} and keeps it; \
             --compression applies to new data folders",
            location.display(),
            existing.name()
        )
    })
}

/// Runs `work` with the command's endpoints: in a data folder (`--location`; opened for
/// writing when `write` gives the compression of a folder created now, then flushed) one per
/// account of `accounts`, else the one endpoint `--connection-string` or `--url` names.
fn with_endpoints<T>(
    endpoint: &EndpointArgs,
    credentials: &Credentials,
    write: Option<Compression>,
    accounts: &[String],
    work: impl FnOnce(&[&dyn Endpoint]) -> Result<T, DataError>,
) -> Result<T, DataError> {
    match &endpoint.location {
        Some(location) => {
            let runtime = runtime()?;
            let store: Arc<dyn Store> = open_folder(&runtime, location, write)?;
            let label = location.display().to_string();
            let dialect = Flavor::from(credentials.flavor).dialect();
            let endpoints = local_endpoints(&store, &runtime, accounts, &label, dialect);
            let refs: Vec<&dyn Endpoint> = endpoints.iter().map(|e| e as &dyn Endpoint).collect();
            let result = work(&refs);
            if write.is_some() {
                runtime
                    .block_on(store.flush())
                    .map_err(|e| DataError::new(format!("cannot flush the data folder: {e}")))?;
            }
            result
        }
        None => {
            let target = remote(endpoint, credentials)?;
            work(&[&target])
        }
    }
}

/// The accounts an import writes to: those its sources name, sorted and once each, after
/// `default` when a source names none (or none is named).
fn import_accounts(tables: &[transfer::SourceTable], default: &str) -> Vec<String> {
    let mut accounts: Vec<String> = tables.iter().filter_map(|t| t.account.clone()).collect();
    accounts.sort();
    accounts.dedup();
    if accounts.is_empty() || tables.iter().any(|t| t.account.is_none()) {
        accounts.insert(0, default.to_string());
    }
    accounts
}

/// One endpoint per account over `store`, going by `dialect`'s rules; `label` names the store
/// in messages.
fn local_endpoints(
    store: &Arc<dyn Store>,
    runtime: &tokio::runtime::Handle,
    accounts: &[String],
    label: &str,
    dialect: &'static Dialect,
) -> Vec<LocalEndpoint> {
    accounts
        .iter()
        .map(|a| {
            LocalEndpoint::new(Arc::clone(store), runtime.clone(), a, label).in_dialect(dialect)
        })
        .collect()
}

fn import_azurite(
    args: &ImportArgs,
    dir: &Path,
    options: &ImportOptions,
    progress: &mut Progress,
) -> Result<Summary, DataError> {
    let tables = azurite::read(dir)?;
    progress.set_total(tables.iter().map(|t| t.entities.len() as u64).sum());
    let sources: Vec<transfer::SourceTable> = tables
        .iter()
        .map(|t| transfer::SourceTable {
            account: Some(t.account.clone()),
            table: t.name.clone(),
            file: azurite::db_path(dir),
            format: Format::Jsonl,
            entities: Some(t.entities.len() as u64),
            acl: t.acl.clone(),
        })
        .collect();
    with_targets(args, &sources, |targets| {
        let mut total = Summary::default();
        for table in tables {
            let target = targets
                .iter()
                .find(|t| t.account() == table.account)
                .copied()
                .unwrap_or(targets[0]);
            progress.table(&table.name);
            let loaded = transfer::load(
                target,
                &table.name,
                table.entities.into_iter().map(Ok),
                options.mode,
                false,
                progress,
                &mut || transfer::create_table(target, &table.name, table.acl.as_deref()),
                &mut |_| Ok(()),
            )?;
            add(&mut total, loaded);
        }
        Ok(total)
    })
}

/// `--seed PATH` at start-up: imports an export (file or folder) into the server's store
/// before it listens, leaving entities that exist as they are. On a durable store the files
/// seeded are recorded in `record` (their names and contents' digests), so a restart with the
/// same seed does nothing.
pub fn seed(
    store: Arc<dyn Store>,
    path: &Path,
    default_account: &str,
    flavor: Flavor,
    record: Option<&Path>,
) -> Result<Summary, DataError> {
    let tables = transfer::sources(path, None)?;
    let fingerprint = digest_of(tables.iter().map(|t| t.file.as_path()))?;
    if already_recorded(record, &fingerprint) {
        return Ok(Summary::default());
    }
    let accounts = import_accounts(&tables, default_account);
    let runtime = runtime()?;
    let dialect = flavor.dialect();
    let endpoints = local_endpoints(&store, &runtime, &accounts, "the seed target", dialect);
    let refs: Vec<&dyn Endpoint> = endpoints.iter().map(|e| e as &dyn Endpoint).collect();
    let mut progress = Progress::new("seeded", true);
    let options = ImportOptions {
        mode: Mode::Skip,
        resume: false,
        checkpoints: false,
        limits: dialect.entity_limits,
    };
    let summary = transfer::import(&tables, &refs, None, &options, &mut progress)?;
    finish_start_up_import(&store, record, &fingerprint)?;
    Ok(summary)
}

/// `--import-azurite-if-present` at start-up: imports Azurite's table database in `dir` into
/// the server's store before it listens, each table into its own account, leaving entities
/// that exist as they are. As with [`seed`], a durable store records the database's digest in
/// `record`, so the same database is imported once.
pub fn import_azurite_at_start(
    store: Arc<dyn Store>,
    dir: &Path,
    record: Option<&Path>,
) -> Result<Summary, DataError> {
    let file = azurite::db_path(dir);
    let fingerprint = digest_of(std::iter::once(file.as_path()))?;
    if already_recorded(record, &fingerprint) {
        return Ok(Summary::default());
    }
    let tables = azurite::read(dir)?;
    let runtime = runtime()?;
    let mut progress = Progress::new("imported", true);
    let mut total = Summary::default();
    for table in tables {
        let target = LocalEndpoint::new(
            Arc::clone(&store),
            runtime.clone(),
            &table.account,
            "the server's store",
        );
        let loaded = transfer::load(
            &target,
            &table.name,
            table.entities.into_iter().map(Ok),
            Mode::Skip,
            false,
            &mut progress,
            &mut || transfer::create_table(&target, &table.name, table.acl.as_deref()),
            &mut |_| Ok(()),
        )?;
        add(&mut total, loaded);
    }
    finish_start_up_import(&store, record, &fingerprint)?;
    Ok(total)
}

/// The SHA-256 of the files' names and contents, in hex.
fn digest_of<'a>(files: impl Iterator<Item = &'a Path>) -> Result<String, DataError> {
    use sha2::{Digest, Sha256};
    let mut digest = Sha256::new();
    for file in files {
        digest.update(file.display().to_string().as_bytes());
        let mut open = std::fs::File::open(file)
            .map_err(|e| DataError::new(format!("cannot read {}: {e}", file.display())))?;
        std::io::copy(&mut open, &mut digest)?;
    }
    Ok(digest
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Whether `record` says the files of `fingerprint` were imported already.
fn already_recorded(record: Option<&Path>, fingerprint: &str) -> bool {
    record.is_some_and(|r| std::fs::read_to_string(r).is_ok_and(|r| r.trim() == fingerprint))
}

/// Flushes the store after a start-up import and records what was imported.
fn finish_start_up_import(
    store: &Arc<dyn Store>,
    record: Option<&Path>,
    fingerprint: &str,
) -> Result<(), DataError> {
    runtime()?
        .block_on(store.flush())
        .map_err(|e| DataError::new(format!("cannot flush the store: {e}")))?;
    if let Some(record) = record {
        std::fs::write(record, format!("{fingerprint}\n")).map_err(|e| {
            DataError::new(format!(
                "cannot record the import in {}: {e}",
                record.display()
            ))
        })?;
    }
    Ok(())
}
