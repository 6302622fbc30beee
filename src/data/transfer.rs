//! Export and import: streams entities between an [`Endpoint`] and files, in bounded memory,
//! with checkpoints that `--resume` continues from.
//!
//! Layout of an export folder: one folder per account holding `manifest.json` (table names as
//! created, entity counts, stored access policies) and one file per table (`Table.jsonl` or
//! `Table.typed.csv`). While an export runs, `.export-progress.json` in the account folder
//! records the finished tables and, for the current one, how many bytes and entities of its
//! file are complete and the last key written; `--resume` truncates the file there and reads on
//! after that key. An import records the entities it committed per table in a
//! `.import-progress.json` beside what it reads, after making them durable.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::progress::Progress;
use super::{
    csv, jsonl, table_file_stem, DataError, Endpoint, Mode, TableAcl, WriteError, MAX_BATCH,
};
use crate::model::limits::EntityLimits;
use crate::model::{Entity, EntityKey, IfMatch, WriteKind, WriteOp};

/// How often progress is made durable and recorded.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(2);
/// Bytes of encoded entities gathered before they are written to the file.
const WRITE_CHUNK: usize = 1 << 20;

pub(crate) const MANIFEST: &str = "manifest.json";
const EXPORT_PROGRESS: &str = ".export-progress.json";
const IMPORT_PROGRESS: &str = ".import-progress.json";

/// A file format of exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Format {
    /// JSON Lines in the wire's typed form.
    #[default]
    Jsonl,
    /// Storage Explorer's typed CSV.
    Csv,
}

impl Format {
    pub(crate) fn extension(self) -> &'static str {
        match self {
            Format::Jsonl => "jsonl",
            Format::Csv => "typed.csv",
        }
    }

    /// The format a file name says, with the table name it implies.
    pub(crate) fn of_file(path: &Path) -> Option<(Format, String)> {
        let name = path.file_name()?.to_str()?;
        let lower = name.to_ascii_lowercase();
        for (suffix, format) in [
            (".jsonl", Format::Jsonl),
            (".ndjson", Format::Jsonl),
            (".typed.csv", Format::Csv),
            (".csv", Format::Csv),
        ] {
            if lower.ends_with(suffix) {
                return Some((format, name[..name.len() - suffix.len()].to_string()));
            }
        }
        None
    }
}

/// One table in a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ManifestTable {
    /// The name as created.
    pub(crate) name: String,
    /// The file, relative to the manifest.
    pub(crate) file: String,
    pub(crate) entities: u64,
    /// Stored access policies (a Set Table ACL body).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) acl: Option<String>,
}

/// `manifest.json` of one account's export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Manifest {
    pub(crate) account: String,
    pub(crate) format: Format,
    pub(crate) tables: Vec<ManifestTable>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct ExportProgress {
    done: Vec<ManifestTable>,
    current: Option<Partial>,
}

/// The complete part of the table being exported.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Partial {
    table: String,
    bytes: u64,
    entities: u64,
    last: Option<(String, String)>,
    /// CSV property columns (fixed for the whole file).
    #[serde(default)]
    columns: Vec<String>,
}

/// Writes `value` as JSON to `path` atomically (a temporary file renamed over it).
fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<(), DataError> {
    let tmp = path.with_extension("tmp");
    let text = serde_json::to_vec_pretty(value).map_err(|e| DataError::new(e.to_string()))?;
    std::fs::write(&tmp, text)
        .and_then(|_| std::fs::rename(&tmp, path))
        .map_err(|e| DataError::new(format!("cannot write {}: {e}", path.display())))
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>, DataError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| DataError::new(format!("{} is damaged: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(DataError::new(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

/// What to export.
#[derive(Debug, Clone, Default)]
pub(crate) struct ExportOptions {
    /// Tables to export (any case); empty for all.
    pub(crate) tables: Vec<String>,
    /// A `$filter` applied to every table.
    pub(crate) filter: Option<String>,
    pub(crate) format: Format,
    pub(crate) resume: bool,
}

/// What a transfer did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub(crate) tables: usize,
    pub entities: u64,
    /// Entities an import left as they were (`--mode skip`).
    pub(crate) skipped: u64,
    /// What the user should know about the result (each once), such as an endpoint without
    /// stored access policies.
    pub(crate) notes: Vec<String>,
}

impl Summary {
    /// Adds `note` unless it is there.
    pub(crate) fn note(&mut self, note: String) {
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }
}

/// The tables of `source` an export takes, names as created; a named table that does not
/// exist is an error.
fn select_tables(source: &dyn Endpoint, wanted: &[String]) -> Result<Vec<String>, DataError> {
    if wanted.is_empty() {
        return source.list_tables();
    }
    wanted
        .iter()
        .map(|w| match source.find_table(w)? {
            Some(table) => Ok(table),
            None => {
                // Where names are case-sensitive (Cosmos), another case is another table.
                let other_case: Vec<String> = source
                    .list_tables()?
                    .into_iter()
                    .filter(|t| t.eq_ignore_ascii_case(w))
                    .collect();
                let hint = match other_case.as_slice() {
                    [] => String::new(),
                    names => format!(
                        " (its table names are case-sensitive, and there is {})",
                        names.join(", ")
                    ),
                };
                Err(DataError::new(format!(
                    "table {w} does not exist in account {} at {}{hint}: nothing was exported",
                    source.account(),
                    source.describe()
                )))
            }
        })
        .collect()
}

/// Exports one account of `source` into the folder `dir` (created), or into the single file
/// `file` when exactly one table is exported to a path ending in `.jsonl` or `.csv`.
pub(crate) fn export(
    source: &dyn Endpoint,
    out: &Path,
    options: &ExportOptions,
    progress: &mut Progress,
) -> Result<Summary, DataError> {
    let tables = select_tables(source, &options.tables)?;
    let single = Format::of_file(out);
    let (dir, format) = match &single {
        Some((format, _)) => {
            if tables.len() != 1 {
                return Err(DataError::new(format!(
                    "{} is one file, but {} tables are exported: give one --table, or an output folder",
                    out.display(),
                    tables.len()
                )));
            }
            let dir = out.parent().filter(|p| !p.as_os_str().is_empty());
            (dir.unwrap_or(Path::new(".")).to_path_buf(), *format)
        }
        None => (out.join(source.account()), options.format),
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| DataError::new(format!("cannot create {}: {e}", dir.display())))?;
    let progress_path = match &single {
        Some(_) => out.with_file_name(format!(
            "{}{EXPORT_PROGRESS}",
            out.file_name().and_then(|n| n.to_str()).unwrap_or("export")
        )),
        None => dir.join(EXPORT_PROGRESS),
    };
    let mut state: ExportProgress = match read_json(&progress_path)? {
        Some(state) if options.resume => state,
        Some(_) => {
            return Err(DataError::new(format!(
                "an interrupted export is in {}: add --resume to continue it, or delete {}",
                dir.display(),
                progress_path.display()
            )))
        }
        None => ExportProgress::default(),
    };
    let mut summary = Summary::default();
    for table in &tables {
        if let Some(done) = state.done.iter().find(|d| &d.name == table) {
            summary.tables += 1;
            summary.entities += done.entities;
            continue;
        }
        let file_name = match &single {
            Some(_) => out
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string(),
            None => format!("{}.{}", table_file_stem(table)?, format.extension()),
        };
        let path = dir.join(&file_name);
        let resume_at = state.current.take().filter(|c| &c.table == table);
        progress.table(table);
        let entities = export_table(
            source,
            table,
            &path,
            format,
            options.filter.as_deref(),
            resume_at,
            &progress_path,
            &mut state,
            progress,
        )?;
        let acl = match source.table_acl(table)? {
            TableAcl::Policies(xml) => Some(xml),
            TableAcl::Empty => None,
            TableAcl::Unsupported(why) => {
                summary.note(why);
                None
            }
        };
        state.done.push(ManifestTable {
            name: table.clone(),
            file: file_name,
            entities,
            acl,
        });
        state.current = None;
        write_json_atomic(&progress_path, &state)?;
        summary.tables += 1;
        summary.entities += entities;
    }
    if single.is_none() {
        write_json_atomic(
            &dir.join(MANIFEST),
            &Manifest {
                account: source.account().to_string(),
                format,
                tables: state.done.clone(),
            },
        )?;
    }
    let _ = std::fs::remove_file(&progress_path);
    Ok(summary)
}

/// Exports one table to `out` (standard output, for `--out -`): the same lines as a file
/// export, with no checkpoint and nothing to resume. A reader that stops early (`| head`)
/// ends the export quietly.
pub(crate) fn export_stream(
    source: &dyn Endpoint,
    options: &ExportOptions,
    out: &mut dyn Write,
    progress: &mut Progress,
) -> Result<Summary, DataError> {
    let tables = select_tables(source, &options.tables)?;
    let [table] = tables.as_slice() else {
        return Err(DataError::new(format!(
            "standard output (--out -) takes one table, but {} are exported: give one --table",
            tables.len()
        )));
    };
    let filter = options.filter.as_deref();
    let mut encoder = match options.format {
        Format::Csv => Some(csv::Encoder::new(csv_columns(source, table, filter)?)),
        Format::Jsonl => None,
    };
    let mut buf = Vec::with_capacity(WRITE_CHUNK + 64 * 1024);
    if let Some(e) = &mut encoder {
        e.header(&mut buf);
    }
    // Ok(false): the reader went away.
    let mut write = |buf: &mut Vec<u8>| -> Result<bool, DataError> {
        let written = out.write_all(buf).and_then(|()| out.flush());
        buf.clear();
        match written {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
            Err(e) => Err(DataError::new(format!(
                "cannot write to standard output: {e}"
            ))),
        }
    };
    progress.table(table);
    let mut entities = 0u64;
    let mut open = true;
    source.scan(table, filter, None, &mut |entity: Entity| {
        match &mut encoder {
            Some(e) => e.row(&entity, &mut buf),
            None => jsonl::write_line(&mut buf, &entity),
        }
        entities += 1;
        progress.add(1);
        if buf.len() >= WRITE_CHUNK {
            open = write(&mut buf)?;
        }
        Ok(open)
    })?;
    if open {
        write(&mut buf)?;
    }
    Ok(Summary {
        tables: 1,
        entities,
        ..Summary::default()
    })
}

/// Property names of a table's (filtered) entities in first-seen order: CSV's columns.
fn csv_columns(
    source: &dyn Endpoint,
    table: &str,
    filter: Option<&str>,
) -> Result<Vec<String>, DataError> {
    let mut seen = HashSet::new();
    let mut columns = Vec::new();
    source.scan(table, filter, None, &mut |entity| {
        for p in entity.properties {
            if !seen.contains(&p.name) {
                seen.insert(p.name.clone());
                columns.push(p.name);
            }
        }
        Ok(true)
    })?;
    Ok(columns)
}

#[allow(clippy::too_many_arguments)]
fn export_table(
    source: &dyn Endpoint,
    table: &str,
    path: &Path,
    format: Format,
    filter: Option<&str>,
    resume_at: Option<Partial>,
    progress_path: &Path,
    state: &mut ExportProgress,
    progress: &mut Progress,
) -> Result<u64, DataError> {
    let cannot =
        |e: std::io::Error| DataError::new(format!("cannot write {}: {e}", path.display()));
    let mut buf = Vec::with_capacity(WRITE_CHUNK + 64 * 1024);
    let (mut file, mut partial, mut encoder) = match resume_at {
        Some(p) => {
            let mut file = OpenOptions::new().write(true).open(path).map_err(cannot)?;
            file.set_len(p.bytes).map_err(cannot)?;
            file.seek(SeekFrom::End(0)).map_err(cannot)?;
            let encoder = (format == Format::Csv).then(|| csv::Encoder::new(p.columns.clone()));
            progress.add(p.entities);
            (file, p, encoder)
        }
        None => {
            let file = File::create(path).map_err(cannot)?;
            let columns = match format {
                Format::Csv => csv_columns(source, table, filter)?,
                Format::Jsonl => Vec::new(),
            };
            let mut encoder = (format == Format::Csv).then(|| csv::Encoder::new(columns.clone()));
            if let Some(e) = &mut encoder {
                e.header(&mut buf);
            }
            let partial = Partial {
                table: table.to_string(),
                bytes: 0,
                entities: 0,
                last: None,
                columns,
            };
            (file, partial, encoder)
        }
    };
    let mut pending = 0u64;
    let mut last_checkpoint = Instant::now();
    let after = partial.last.clone();
    let mut last: Option<(String, String)> = None;
    let mut checkpoint = |buf: &mut Vec<u8>,
                          file: &mut File,
                          pending: &mut u64,
                          last: &Option<(String, String)>,
                          partial: &mut Partial|
     -> Result<(), DataError> {
        file.write_all(buf).map_err(cannot)?;
        partial.bytes += buf.len() as u64;
        partial.entities += *pending;
        if last.is_some() {
            partial.last.clone_from(last);
        }
        buf.clear();
        *pending = 0;
        state.current = Some(partial.clone());
        write_json_atomic(progress_path, state)
    };
    source.scan(
        table,
        filter,
        after.as_ref().map(|(p, r)| (p.as_str(), r.as_str())),
        &mut |entity: Entity| {
            match &mut encoder {
                Some(e) => e.row(&entity, &mut buf),
                None => jsonl::write_line(&mut buf, &entity),
            }
            pending += 1;
            progress.add(1);
            last = Some((entity.partition_key, entity.row_key));
            if buf.len() >= WRITE_CHUNK || last_checkpoint.elapsed() >= CHECKPOINT_EVERY {
                checkpoint(&mut buf, &mut file, &mut pending, &last, &mut partial)?;
                last_checkpoint = Instant::now();
            }
            Ok(true)
        },
    )?;
    checkpoint(&mut buf, &mut file, &mut pending, &last, &mut partial)?;
    file.sync_all().map_err(cannot)?;
    Ok(partial.entities)
}

/// One table file to import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourceTable {
    /// The account folder it came from, if any.
    pub(crate) account: Option<String>,
    pub(crate) table: String,
    pub(crate) file: PathBuf,
    pub(crate) format: Format,
    pub(crate) entities: Option<u64>,
    pub(crate) acl: Option<String>,
}

/// The table files under `path`: a single file (its table named by `table` or the file
/// name), one account's export folder (with `manifest.json`), a folder of account folders, or
/// a plain folder of `.jsonl` / `.csv` files (each a table).
pub(crate) fn sources(path: &Path, table: Option<&str>) -> Result<Vec<SourceTable>, DataError> {
    if path.is_file() {
        let (format, stem) = Format::of_file(path).ok_or_else(|| {
            DataError::new(format!(
                "{} is neither .jsonl nor .csv: name the file Table.jsonl or Table.typed.csv",
                path.display()
            ))
        })?;
        return Ok(vec![SourceTable {
            account: None,
            table: table.map_or(stem, str::to_string),
            file: path.to_path_buf(),
            format,
            entities: None,
            acl: None,
        }]);
    }
    if !path.is_dir() {
        return Err(DataError::new(format!("{} does not exist", path.display())));
    }
    if table.is_some() {
        return Err(DataError::new(
            "--table names the table of a single file; a folder's files name their tables",
        ));
    }
    if let Some(manifest) = read_json::<Manifest>(&path.join(MANIFEST))? {
        return Ok(manifest
            .tables
            .into_iter()
            .map(|t| SourceTable {
                account: Some(manifest.account.clone()),
                table: t.name,
                file: path.join(t.file),
                format: manifest.format,
                entities: Some(t.entities),
                acl: t.acl,
            })
            .collect());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| DataError::new(format!("cannot read {}: {e}", path.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    let mut out = Vec::new();
    for entry in entries {
        if entry.is_dir() && entry.join(MANIFEST).is_file() {
            out.extend(sources(&entry, None)?);
        } else if entry.is_file() {
            if let Some((format, stem)) = Format::of_file(&entry) {
                out.push(SourceTable {
                    account: None,
                    table: stem,
                    file: entry,
                    format,
                    entities: None,
                    acl: None,
                });
            }
        }
    }
    if out.is_empty() {
        return Err(DataError::new(format!(
            "{} holds no export: no manifest.json and no .jsonl or .csv files",
            path.display()
        )));
    }
    Ok(out)
}

/// Opens a table file as a stream of entities; JSON Lines are read against `limits` (CSV, a
/// Table storage format, against Storage's).
pub(crate) fn read_file(
    source: &SourceTable,
    limits: EntityLimits,
) -> Result<Box<dyn Iterator<Item = Result<Entity, DataError>>>, DataError> {
    let file = File::open(&source.file)
        .map_err(|e| DataError::new(format!("cannot read {}: {e}", source.file.display())))?;
    let input = BufReader::with_capacity(1 << 20, file);
    let name = source.file.display().to_string();
    Ok(match source.format {
        Format::Jsonl => Box::new(jsonl::Reader::new(input, name).with_limits(limits)),
        Format::Csv => Box::new(csv::Reader::new(input, name)?),
    })
}

/// How an import writes.
#[derive(Debug, Clone, Default)]
pub(crate) struct ImportOptions {
    pub(crate) mode: Mode,
    pub(crate) resume: bool,
    /// Record progress for `--resume` (off for `--seed`).
    pub(crate) checkpoints: bool,
    /// The limits a JSON Lines entity is read against (Cosmos's for `--flavor cosmos`).
    pub(crate) limits: EntityLimits,
}

/// Where an import records its progress: `.import-progress.json` in the folder, or beside
/// the file.
pub(crate) fn import_progress_path(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join(IMPORT_PROGRESS)
    } else {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("import");
        path.with_file_name(format!("{name}{IMPORT_PROGRESS}"))
    }
}

/// Entities committed per table (`account/table`), for `--resume`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct ImportProgress {
    pub(crate) committed: std::collections::BTreeMap<String, u64>,
}

/// Imports table files into the targets: a file from an account folder goes to the target
/// of that account, any other to the first target.
pub(crate) fn import(
    tables: &[SourceTable],
    targets: &[&dyn Endpoint],
    progress_path: Option<&Path>,
    options: &ImportOptions,
    progress: &mut Progress,
) -> Result<Summary, DataError> {
    let mut state: ImportProgress = match progress_path {
        Some(p) => match read_json(p)? {
            Some(state) if options.resume => state,
            Some(_) => {
                return Err(DataError::new(format!(
                "an interrupted import left {}: add --resume to continue it, or delete that file",
                p.display()
            )))
            }
            None => ImportProgress::default(),
        },
        None => ImportProgress::default(),
    };
    if let Some(total) = tables.iter().map(|t| t.entities).sum::<Option<u64>>() {
        progress.set_total(total);
    }
    let mut summary = Summary::default();
    for source in tables {
        let target = match &source.account {
            Some(a) if targets.len() > 1 => targets
                .iter()
                .find(|t| t.account() == a)
                .copied()
                .ok_or_else(|| DataError::new(format!("no target for account {a}")))?,
            _ => targets[0],
        };
        let key = format!("{}/{}", target.account(), source.table);
        let done = state.committed.get(&key).copied().unwrap_or(0);
        progress.table(&source.table);
        progress.add(done);
        let entities = read_file(source, options.limits)?.skip(done as usize);
        let mut on_checkpoint = |committed: u64| -> Result<(), DataError> {
            if let (Some(path), true) = (progress_path, options.checkpoints) {
                state.committed.insert(key.clone(), done + committed);
                write_json_atomic(path, &state)?;
            }
            Ok(())
        };
        // Entities just after a checkpoint may have been written by the interrupted run.
        let replay = options.resume && done > 0;
        let loaded = load(
            target,
            &source.table,
            entities,
            options.mode,
            replay,
            progress,
            &mut || create_table(target, &source.table, source.acl.as_deref()),
            &mut on_checkpoint,
        )?;
        summary.tables += 1;
        summary.entities += done + loaded.entities;
        summary.skipped += loaded.skipped;
    }
    if let Some(path) = progress_path {
        let _ = std::fs::remove_file(path);
    }
    Ok(summary)
}

/// Creates `table` in `target` unless it exists, and sets its stored access policies.
pub(crate) fn create_table(
    target: &dyn Endpoint,
    table: &str,
    acl: Option<&str>,
) -> Result<(), DataError> {
    target.ensure_table(table)?;
    if let Some(acl) = acl {
        target.set_table_acl(table, acl)?;
    }
    Ok(())
}

/// Writes a stream of entities to `table` in batches of up to 100 consecutive entities of one
/// partition. `create` makes the table: it runs before the first write (or at the end, for a
/// stream without entities), so a stream that fails before its first batch, on a bad line,
/// leaves no table behind. `replay` (resuming after a checkpoint): the interrupted run may have written
/// batches after its checkpoint, and what survived of them is a prefix (each batch is atomic
/// and commits in order), so existing entities are tolerated until a batch commits with
/// none existing, however many that is.
/// `on_checkpoint` gets the number of entities committed and durable so far.
#[allow(clippy::too_many_arguments)]
pub(crate) fn load(
    target: &dyn Endpoint,
    table: &str,
    entities: impl Iterator<Item = Result<Entity, DataError>>,
    mode: Mode,
    replay: bool,
    progress: &mut Progress,
    create: &mut dyn FnMut() -> Result<(), DataError>,
    on_checkpoint: &mut dyn FnMut(u64) -> Result<(), DataError>,
) -> Result<Summary, DataError> {
    let mut created = false;
    let mut create_once = |created: &mut bool| -> Result<(), DataError> {
        if !*created {
            create()?;
            *created = true;
        }
        Ok(())
    };
    let kind = match mode {
        Mode::Insert | Mode::Skip => WriteKind::Insert,
        Mode::Replace => WriteKind::InsertOrReplace,
        Mode::Merge => WriteKind::InsertOrMerge,
    };
    let mut batch: Vec<WriteOp> = Vec::with_capacity(MAX_BATCH);
    let mut row_keys: HashSet<String> = HashSet::with_capacity(MAX_BATCH);
    let mut summary = Summary::default();
    let mut last_checkpoint = Instant::now();
    let mut replaying = replay;
    let flush = |batch: &mut Vec<WriteOp>,
                 summary: &mut Summary,
                 progress: &mut Progress,
                 replaying: &mut bool|
     -> Result<(), DataError> {
        let tolerate = mode == Mode::Skip || *replaying;
        let n = batch.len() as u64;
        let mut existed = false;
        loop {
            if batch.is_empty() {
                break;
            }
            match target.write_batch(table, batch) {
                Ok(()) => break,
                Err(WriteError::Exists { index }) if tolerate && index < batch.len() => {
                    batch.remove(index);
                    summary.skipped += 1;
                    existed = true;
                }
                Err(WriteError::Exists { index }) => {
                    let key = batch.get(index).map(|op| &op.key);
                    return Err(DataError::new(format!(
                        "the entity {} already exists in {table} at {}: nothing after it was \
                         written; use --mode replace, merge or skip to import into a table \
                         that has data",
                        key.map_or_else(String::new, |k| format!(
                            "PartitionKey={:?} RowKey={:?}",
                            k.partition_key, k.row_key
                        )),
                        target.describe()
                    )));
                }
                Err(WriteError::Other(message)) => return Err(DataError::new(message)),
            }
        }
        *replaying &= existed;
        batch.clear();
        summary.entities += n;
        progress.add(n);
        Ok(())
    };
    for entity in entities {
        let entity = entity.map_err(|e| {
            if summary.entities == 0 && !replaying {
                DataError::new(format!("{e}; nothing was imported into {table}"))
            } else {
                e
            }
        })?;
        let same_group = batch
            .first()
            .is_some_and(|op| op.key.partition_key == entity.partition_key)
            && !row_keys.contains(&entity.row_key);
        if batch.len() == MAX_BATCH || (!batch.is_empty() && !same_group) {
            create_once(&mut created)?;
            flush(&mut batch, &mut summary, progress, &mut replaying)?;
            row_keys.clear();
            if last_checkpoint.elapsed() >= CHECKPOINT_EVERY {
                target.sync()?;
                on_checkpoint(summary.entities)?;
                last_checkpoint = Instant::now();
            }
        }
        row_keys.insert(entity.row_key.clone());
        batch.push(WriteOp {
            limits: Default::default(),
            kind,
            key: EntityKey {
                partition_key: entity.partition_key,
                row_key: entity.row_key,
            },
            properties: entity.properties,
            if_match: IfMatch::Any,
        });
    }
    create_once(&mut created)?;
    flush(&mut batch, &mut summary, progress, &mut replaying)?;
    target.sync()?;
    on_checkpoint(summary.entities)?;
    summary.tables = 1;
    Ok(summary)
}
