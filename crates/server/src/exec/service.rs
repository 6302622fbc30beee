//! Service-level operations: Get/Set Table Service Properties (stored per account as their
//! XML document) and Get Table Service Stats.

use super::{ExecError, Scope};
use crate::protocol::service_properties::{PropertiesUpdate, ServiceProperties};
use crate::store::Store;

/// The account's service properties (the defaults until some are set).
pub(crate) async fn properties(
    store: &dyn Store,
    account: &str,
) -> Result<ServiceProperties, ExecError> {
    let stored = store.get_service_properties(account).await?;
    Ok(stored
        .and_then(|b| ServiceProperties::decode(&b))
        .unwrap_or_default())
}

/// Applies a Set request's `update` to the stored properties.
pub(crate) async fn set_properties(
    store: &dyn Store,
    scope: &Scope,
    update: PropertiesUpdate,
) -> Result<(), ExecError> {
    let next = properties(store, scope.account()).await?.apply(update);
    store
        .set_service_properties(scope.account(), next.encode())
        .await?;
    Ok(())
}
