//! The accounts a running server serves: those it started with (`AZURITE_ACCOUNTS`, or the
//! development account), which stay, and those created at run time (`/_tablestore/accounts`)
//! until deleted. Every request reads the set; a change replaces it whole, so a read is one
//! lock-free load ([`arc_swap::ArcSwap`]) that writes no shared memory: requests on different
//! cores never contend for it, and a creation is visible to the next request.

use std::collections::BTreeSet;
use std::sync::Arc;

use arc_swap::{ArcSwap, Guard};
use parking_lot::Mutex;

use super::accounts::{AccountKeys, Accounts};

pub(crate) struct LiveAccounts {
    current: ArcSwap<Accounts>,
    start_up: BTreeSet<String>,
    /// Serialises changes (each copies the set and swaps the copy in).
    changes: Mutex<()>,
}

/// Why an account could not be created or deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AccountChangeError {
    Exists,
    NotFound,
    /// Start-up accounts stay for the server's life.
    StartUp,
}

impl LiveAccounts {
    pub(crate) fn new(start_up: Accounts) -> LiveAccounts {
        LiveAccounts {
            start_up: start_up.names().map(str::to_string).collect(),
            current: ArcSwap::from_pointee(start_up),
            changes: Mutex::new(()),
        }
    }

    /// The accounts served now.
    #[inline]
    pub(crate) fn current(&self) -> Guard<Arc<Accounts>> {
        self.current.load()
    }

    /// Whether `name` is one of the accounts the server started with.
    pub(crate) fn is_start_up(&self, name: &str) -> bool {
        self.start_up.contains(name)
    }

    /// Serves `name` with `keys` from the next request on.
    pub(crate) fn add(&self, name: &str, keys: AccountKeys) -> Result<(), AccountChangeError> {
        let _change = self.changes.lock();
        let current = self.current.load_full();
        if current.contains(name) {
            return Err(AccountChangeError::Exists);
        }
        let mut next = (*current).clone();
        next.insert(name, keys)
            .map_err(|_| AccountChangeError::NotFound)?;
        self.current.store(Arc::new(next));
        Ok(())
    }

    /// Stops serving an account created at run time.
    pub(crate) fn remove(&self, name: &str) -> Result<(), AccountChangeError> {
        let _change = self.changes.lock();
        if self.is_start_up(name) {
            return Err(AccountChangeError::StartUp);
        }
        let current = self.current.load_full();
        if !current.contains(name) {
            return Err(AccountChangeError::NotFound);
        }
        let mut next = (*current).clone();
        next.remove(name);
        self.current.store(Arc::new(next));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_accounts_come_and_go_start_up_ones_stay() {
        let live = LiveAccounts::new(Accounts::dev());
        let keys = AccountKeys::from_base64("a2V5", None).unwrap();
        let before = live.current();
        live.add("worker1", keys.clone()).unwrap();
        // A reader holding the old set keeps it; the next read sees the new one.
        assert!(!before.contains("worker1"));
        assert!(live.current().contains("worker1"));
        assert_eq!(
            live.add("worker1", keys.clone()),
            Err(AccountChangeError::Exists)
        );
        assert_eq!(
            live.add("devstoreaccount1", keys),
            Err(AccountChangeError::Exists)
        );
        assert!(!live.is_start_up("worker1") && live.is_start_up("devstoreaccount1"));
        assert_eq!(
            live.remove("devstoreaccount1"),
            Err(AccountChangeError::StartUp)
        );
        live.remove("worker1").unwrap();
        assert!(!live.current().contains("worker1"));
        assert_eq!(live.remove("worker1"), Err(AccountChangeError::NotFound));
        assert!(live.current().contains("devstoreaccount1"));
    }
}
