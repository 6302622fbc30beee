//! A store as an [`Endpoint`]: a data folder opened by the command (refused while a server
//! holds it), or the running server's own store (`--seed`). Transfers are synchronous (files,
//! a blocking HTTP client) and run off the async workers; they wait for the asynchronous
//! store on the runtime they were started from ([`runtime`]).

use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use tokio::runtime::Handle;

use super::{DataError, Endpoint, TableAcl, WriteError};
use crate::model::names::{is_case_sensitive_identity, name_of_identity, NameCase};
use crate::model::{Entity, TableId, TableNameError, TableRef, WriteOp};
use crate::protocol::dialect::{Dialect, STORAGE};
use crate::protocol::filter;
use crate::query::eval::matches_opt;
use crate::query::{execute_raw_page, PageLimits, PageRead};
use crate::store::open::{open, Compression, DiskOptions, StoreOptions};
use crate::store::{KeyRange, Store, StoreError, TableInfo};

/// Folder, inside the workspace (`--location`), that holds the on-disk store.
pub(crate) use crate::config::STORE_DIR_NAME;

/// Opens the store of the workspace `location` for a bulk transfer, as the store opens every
/// data folder ([`open`], [`DiskOptions::for_transfer`]), waiting on `runtime`. Writes are
/// flushed at each checkpoint rather than each batch. A folder a server holds is refused.
/// With `create`, a missing data folder is created with that compression (an existing one
/// keeps its own); without, it must exist.
pub(crate) fn open_folder(
    runtime: &Handle,
    location: &Path,
    create: Option<Compression>,
) -> Result<Arc<dyn Store>, DataError> {
    let dir = location.join(STORE_DIR_NAME);
    if create.is_none() && !dir.is_dir() {
        return Err(DataError::new(format!(
            "{} holds no tablestore data (no {STORE_DIR_NAME} folder); check --location",
            location.display()
        )));
    }
    std::fs::create_dir_all(&dir).map_err(|e| {
        DataError::new(format!(
            "cannot create the data folder {}: {e}",
            dir.display()
        ))
    })?;
    let options = StoreOptions::Disk(DiskOptions::for_transfer(dir, create.unwrap_or_default()));
    runtime.block_on(open(&options)).map_err(|e| match e {
        StoreError::FolderInUse => DataError::new(format!(
            "the data folder {} is in use by a running server: stop it, or give the server's \
             endpoint with --connection-string instead",
            location.display()
        )),
        other => DataError::new(format!(
            "cannot open the data folder {}: {}",
            location.display(),
            store_message(&other)
        )),
    })
}

/// The runtime a transfer waits for the store on: the one the command was started from
/// (main runs transfers on its blocking pool).
pub(crate) fn runtime() -> Result<Handle, DataError> {
    Handle::try_current().map_err(|_| {
        DataError::new("a local store can only be used from within the tablestore runtime")
    })
}

/// Entities a local scan reads per page.
const SCAN_PAGE: usize = 1000;

fn store_message(e: &StoreError) -> String {
    match e {
        StoreError::Corrupt(m) => format!("the stored data is damaged: {m}"),
        other => other.to_string(),
    }
}

/// One account of a store.
pub(crate) struct LocalEndpoint {
    store: Arc<dyn Store>,
    runtime: Handle,
    account: String,
    label: String,
    /// Whose rules the tables go by: table names told apart case-sensitively and entities
    /// held to Cosmos's limits for `--flavor cosmos`.
    dialect: &'static Dialect,
    case: NameCase,
    ids: Mutex<HashMap<String, TableId>>,
}

impl LocalEndpoint {
    /// `label` says where the store is, for messages. The endpoint's calls block their thread
    /// (never one of `runtime`'s async workers) while `runtime` runs the store's work.
    pub(crate) fn new(
        store: Arc<dyn Store>,
        runtime: Handle,
        account: &str,
        label: impl Into<String>,
    ) -> LocalEndpoint {
        LocalEndpoint {
            store,
            runtime,
            account: account.to_string(),
            label: label.into(),
            dialect: &STORAGE,
            case: NameCase::Insensitive,
            ids: Mutex::new(HashMap::new()),
        }
    }

    /// The endpoint going by `dialect`'s rules. Under Cosmos's, it knows every table by the
    /// name its identity spells and holds merges to Cosmos's limits; under Storage's it does
    /// not see the tables only a case-sensitive reader can address (docs/decisions.md #60).
    pub(crate) fn in_dialect(self, dialect: &'static Dialect) -> LocalEndpoint {
        LocalEndpoint {
            dialect,
            case: dialect.name_case,
            ..self
        }
    }

    /// The name this endpoint knows `table` by.
    fn shown(&self, table: TableInfo) -> String {
        match self.case {
            NameCase::Insensitive => table.name,
            NameCase::Sensitive => name_of_identity(&table.identity),
        }
    }

    /// Waits for `work` on the store's runtime.
    fn wait<T>(&self, work: impl std::future::Future<Output = T>) -> T {
        self.runtime.block_on(work)
    }

    fn table_id(&self, table: &str) -> Result<TableId, DataError> {
        if let Some(id) = self.ids.lock().get(table) {
            return Ok(*id);
        }
        let info = self
            .wait(self.store.get_table(&self.table_ref(table)))
            .map_err(|e| self.failed(&e))?
            .ok_or_else(|| {
                DataError::new(format!(
                    "table {table} does not exist in account {} of {}",
                    self.account, self.label
                ))
            })?;
        self.ids.lock().insert(table.to_string(), info.id);
        Ok(info.id)
    }

    fn table_ref(&self, table: &str) -> TableRef {
        TableRef::in_case(self.account.as_str(), table, self.case)
    }

    fn failed(&self, e: &StoreError) -> DataError {
        DataError::new(format!("{}: {}", self.label, store_message(e)))
    }
}

impl Endpoint for LocalEndpoint {
    fn account(&self) -> &str {
        &self.account
    }

    fn describe(&self) -> String {
        self.label.clone()
    }

    fn list_tables(&self) -> Result<Vec<String>, DataError> {
        let mut names = Vec::new();
        let mut from: Option<String> = None;
        loop {
            let tables = self
                .wait(
                    self.store
                        .list_tables(&self.account, from.as_deref(), SCAN_PAGE),
                )
                .map_err(|e| self.failed(&e))?;
            let complete = tables.len() < SCAN_PAGE;
            let last = tables.last().map(|t| t.identity.clone());
            // A page after the first starts at the last table of the one before.
            let skip = usize::from(from.is_some());
            let hidden = |t: &TableInfo| {
                self.case == NameCase::Insensitive && is_case_sensitive_identity(&t.identity)
            };
            let shown = tables.into_iter().skip(skip).filter(|t| !hidden(t));
            names.extend(shown.map(|t| self.shown(t)));
            if complete || last.is_none() {
                return Ok(names);
            }
            from = last;
        }
    }

    fn find_table(&self, name: &str) -> Result<Option<String>, DataError> {
        Ok(self
            .wait(self.store.get_table(&self.table_ref(name)))
            .map_err(|e| self.failed(&e))?
            .map(|t| self.shown(t)))
    }

    fn scan(
        &self,
        table: &str,
        filter_text: Option<&str>,
        after: Option<(&str, &str)>,
        visit: &mut dyn FnMut(Entity) -> Result<bool, DataError>,
    ) -> Result<(), DataError> {
        let id = self.table_id(table)?;
        let expr = match filter_text {
            Some(text) => Some(
                filter::parse(text)
                    .map_err(|e| DataError::new(format!("--filter: {}", e.message(text))))?,
            ),
            None => None,
        };
        let expr = Arc::new(expr);
        let matches =
            move |row: &crate::store::StoredRow<'_>| matches_opt(expr.as_ref().as_ref(), row);
        // Page by page, as a query reads them: each page is one read job of the store.
        let limits = PageLimits {
            top: SCAN_PAGE,
            ..PageLimits::default()
        };
        let mut resume = after.map(|(pk, rk)| (pk.to_string(), rk.to_string()));
        loop {
            let read = PageRead::new(vec![KeyRange::all()], matches.clone(), resume, limits);
            let page = self
                .wait(execute_raw_page(&*self.store, id, read))
                .map_err(|e| self.failed(&e))?;
            for view in page.rows.entities().map_err(|e| self.failed(&e))? {
                let entity = view.into_entity();
                if after.is_some_and(|(pk, rk)| entity.partition_key == pk && entity.row_key == rk)
                {
                    continue;
                }
                if !visit(entity)? {
                    return Ok(());
                }
            }
            match page.next {
                Some(next) => resume = Some(next),
                None => return Ok(()),
            }
        }
    }

    fn ensure_table(&self, table: &str) -> Result<(), DataError> {
        let name = self.dialect.table_name(table).map_err(|e| {
            let rule = match e {
                TableNameError::Length => "3 to 63 characters",
                TableNameError::Characters => {
                    "letters and digits starting with a letter, and not `tables`"
                }
                TableNameError::FreeFormLength => "1 to 254 characters",
                TableNameError::ForbiddenCharacter => "none of / \\ # ?",
                TableNameError::TrailingSpace => "no space at the end",
                TableNameError::Unservable => "no control character or parenthesis",
            };
            DataError::new(format!("{table:?} is not a valid table name ({rule})"))
        })?;
        match self.wait(self.store.create_table(&self.table_ref(name.as_str()))) {
            Ok(_) | Err(StoreError::TableAlreadyExists) => Ok(()),
            Err(e) => Err(self.failed(&e)),
        }
    }

    fn table_acl(&self, table: &str) -> Result<TableAcl, DataError> {
        let info = self
            .wait(self.store.get_table(&self.table_ref(table)))
            .map_err(|e| self.failed(&e))?;
        Ok(match info.filter(|t| !t.acl.is_empty()) {
            Some(t) => TableAcl::Policies(String::from_utf8_lossy(&t.acl).into_owned()),
            None => TableAcl::Empty,
        })
    }

    fn set_table_acl(&self, table: &str, xml: &str) -> Result<(), DataError> {
        let identifiers =
            crate::auth::acl::decode_signed_identifiers(xml.as_bytes()).map_err(|e| {
                DataError::new(format!("the access policies of {table}: {}", e.message()))
            })?;
        let encoded = crate::auth::acl::encode_signed_identifiers(&identifiers);
        self.wait(self.store.set_table_acl(&self.table_ref(table), encoded))
            .map_err(|e| self.failed(&e))
    }

    fn write_batch(&self, table: &str, ops: &[WriteOp]) -> Result<(), WriteError> {
        let id = self.table_id(table).map_err(|e| WriteError::Other(e.0))?;
        let limits = self.dialect.entity_limits;
        let held: Vec<WriteOp>;
        let ops = if ops.iter().all(|op| op.limits == limits) {
            ops
        } else {
            held = ops
                .iter()
                .map(|op| WriteOp {
                    limits,
                    ..op.clone()
                })
                .collect();
            &held
        };
        match self.wait(self.store.commit(id, ops)) {
            Ok(_) => Ok(()),
            Err(e) if e.error == StoreError::EntityAlreadyExists => {
                Err(WriteError::Exists { index: e.index })
            }
            Err(e) => Err(WriteError::Other(format!(
                "writing {} {}/{}: {}",
                table,
                ops[e.index].key.partition_key,
                ops[e.index].key.row_key,
                match &e.error {
                    StoreError::EntityLimit(_) => "the merged entity is too large".to_string(),
                    other => store_message(other),
                }
            ))),
        }
    }

    fn sync(&self) -> Result<(), DataError> {
        self.wait(self.store.flush()).map_err(|e| self.failed(&e))
    }
}
