//! Data loaded before the server listens: `--seed` / `--seed-if-present`, and an Azurite
//! table database found in `--location` (imported with `--import-azurite-if-present`, else
//! one warning saying how to bring it over).

use std::sync::Arc;

use super::lines::Line;
use crate::config::Config;
use crate::data;
use crate::store::Store;

/// File in the workspace recording the digest of the Azurite database last imported.
const AZURITE_IMPORT_RECORD: &str = "__tablestore_azurite_imported__";
/// File in the workspace recording the digest of the seed last loaded.
const SEED_RECORD: &str = "__tablestore_seeded__";

/// `--seed` / `--seed-if-present`: loads the seed into the store before the server listens,
/// and says what it loaded.
pub(super) async fn seed(
    config: &Config,
    store: &Arc<dyn Store>,
    account: &str,
) -> Result<Option<String>, String> {
    let path = match (&config.seed, &config.seed_if_present) {
        (Some(path), _) => path.clone(),
        (None, Some(path)) if path.exists() => path.clone(),
        _ => return Ok(None),
    };
    // An on-disk store records the seed it loaded beside its folder.
    let record = config
        .is_on_disk()
        .then(|| config.location.join(SEED_RECORD));
    let store = Arc::clone(store);
    let account = account.to_string();
    let shown = path.display().to_string();
    let flavor = config.flavor.into();
    let summary = tokio::task::spawn_blocking(move || {
        data::cli::seed(store, &path, &account, flavor, record.as_deref())
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| e.to_string())?;
    Ok(Some(if summary.tables == 0 {
        format!("Seed: {shown} already loaded")
    } else {
        format!(
            "Seed: {} in {} from {shown}",
            count(summary.entities - summary.skipped, "entity", "entities"),
            count(summary.tables as u64, "table", "tables")
        )
    }))
}

/// `n` with its noun, singular for one.
fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A `--location` holding Azurite's table database (`__azurite_db_table__.json`, which this
/// server does not read): imported once with `--import-azurite-if-present`, else one
/// sentence saying how to bring it over.
pub(super) async fn azurite_folder(
    config: &Config,
    store: &Arc<dyn Store>,
) -> Result<Option<Line>, String> {
    let dir = config.location.clone();
    let database = dir.join(data::azurite::DB_FILE);
    if !database.is_file() {
        return Ok(None);
    }
    let shown = database.display().to_string();
    if !config.import_azurite_if_present {
        return Ok(Some(Line::Warning(not_imported_warning(config, &shown))));
    }
    let record = config
        .is_on_disk()
        .then(|| config.location.join(AZURITE_IMPORT_RECORD));
    let store = Arc::clone(store);
    let summary = tokio::task::spawn_blocking(move || {
        data::cli::import_azurite_at_start(store, &dir, record.as_deref())
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| e.to_string())?;
    Ok(Some(Line::Plain(if summary.tables == 0 {
        format!("Azurite: {shown} already imported")
    } else {
        let mut line = format!(
            "Azurite: imported {} in {} from {shown}",
            count(summary.entities - summary.skipped, "entity", "entities"),
            count(summary.tables as u64, "table", "tables")
        );
        if summary.skipped > 0 {
            line.push_str(&format!(
                " ({} already present, left as they were)",
                summary.skipped
            ));
        }
        line
    })))
}

/// The warning for an Azurite database left in `--location`: how to bring it over.
fn not_imported_warning(config: &Config, shown: &str) -> String {
    let dir = config.location.display();
    let how = if config.is_on_disk() {
        format!(
            "restart with --import-azurite-if-present to import it once, or stop this \
             server and run `tablestore import --from-azurite {dir} --location {dir}`"
        )
    } else {
        format!(
            "restart with --import-azurite-if-present to import it at start-up, or run \
             `tablestore import --from-azurite {dir} --connection-string \"…\"` with the \
             connection string above"
        )
    };
    format!("{shown} is Azurite's table database, which tablestore does not read: {how}")
}

/// What a reset brings back (docs/test-isolation.md): what a first start of this command
/// holds. In memory that is the store as start-up left it (its `--seed`, any import); a data
/// folder or a database outlives the process, so there it is the `--seed` data alone, loaded
/// into a scratch memory store (nothing without a seed).
pub(super) async fn reset_image(
    config: &Config,
    store: &Arc<dyn Store>,
    account: &str,
) -> Result<crate::store::state::Image, String> {
    use crate::store::state::{Image, StateScope};
    if config.is_in_memory() {
        return crate::server::state::image_of(store).await;
    }
    let seed = match (&config.seed, &config.seed_if_present) {
        (Some(path), _) => path.clone(),
        (None, Some(path)) if path.exists() => path.clone(),
        _ => return Ok(Image::empty(StateScope::Server)),
    };
    let memory = crate::store::open::StoreOptions::Memory {
        durability: crate::store::Durability::Relaxed,
    };
    let scratch = crate::store::open::open(&memory)
        .await
        .map_err(|e| e.to_string())?;
    let (loaded, account, flavor) = (Arc::clone(&scratch), account.to_string(), config.flavor());
    tokio::task::spawn_blocking(move || data::cli::seed(loaded, &seed, &account, flavor, None))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    crate::server::state::image_of(&scratch).await
}
