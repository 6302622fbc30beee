//! Configured storage accounts and their keys: `Accounts` maps an account name to one or two
//! decoded HMAC keys. Default: the well-known development account (Azure docs: "Use the Azurite emulator for local Azure Storage development"). Extra accounts
//! come from an `AZURITE_ACCOUNTS`-style string.
//!
//! Depends on nothing else in the crate.

use std::collections::BTreeMap;
use std::fmt;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Name of the well-known development account.
pub(crate) const DEV_ACCOUNT_NAME: &str = "devstoreaccount1";
/// Base64 key of the well-known development account.
pub(crate) const DEV_ACCOUNT_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// The account name of the Azure Cosmos DB emulator's Table endpoint: its connection string
/// names `localhost`, the host the SDKs take for a Cosmos endpoint (Azure docs: "Use the Azure
/// Cosmos DB emulator for local development and testing").
pub const COSMOS_EMULATOR_ACCOUNT_NAME: &str = "localhost";
/// The Azure Cosmos DB emulator's published well-known key (same page).
pub const COSMOS_EMULATOR_ACCOUNT_KEY: &str =
    "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";

/// The decoded keys of one account: key1 and an optional key2. Either verifies.
#[derive(Clone)]
pub struct AccountKeys {
    keys: Vec<Vec<u8>>,
    /// Each key's HMAC-SHA256 with the key already absorbed: a Shared Key check clones it
    /// instead of hashing the key's two padded blocks again (two of the six SHA-256 blocks of
    /// a typical request's signature).
    keyed: Vec<Hmac<Sha256>>,
}

impl PartialEq for AccountKeys {
    fn eq(&self, other: &AccountKeys) -> bool {
        self.keys == other.keys
    }
}

impl Eq for AccountKeys {}

impl AccountKeys {
    /// Decodes `key1` and optional `key2` from base64.
    pub fn from_base64(key1: &str, key2: Option<&str>) -> Result<Self, AccountsError> {
        let mut keys = vec![decode_key(key1)?];
        if let Some(key2) = key2 {
            keys.push(decode_key(key2)?);
        }
        let keyed = keys
            .iter()
            .map(|k| {
                <Hmac<Sha256> as Mac>::new_from_slice(k)
                    .expect("HMAC accepts keys of any length; InvalidLength is never returned")
            })
            .collect();
        Ok(AccountKeys { keys, keyed })
    }

    /// Key bytes in order: key1, then key2 if configured.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &[u8]> {
        self.keys.iter().map(Vec::as_slice)
    }

    /// Each key's HMAC-SHA256, keyed and ready for a message ([`super::canonical::hmac_keyed`]),
    /// in the order of [`AccountKeys::keys`].
    pub(crate) fn keyed_macs(&self) -> impl Iterator<Item = &Hmac<Sha256>> {
        self.keyed.iter()
    }

    /// key1 (always present).
    pub fn primary(&self) -> &[u8] {
        // `from_base64` always stores key1 first.
        &self.keys[0]
    }
}

impl fmt::Debug for AccountKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print key material.
        write!(f, "AccountKeys({} key(s))", self.keys.len())
    }
}

/// Account name → keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accounts {
    accounts: BTreeMap<String, AccountKeys>,
}

/// Why an accounts string or key could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccountsError {
    /// An entry is not `name:key1` or `name:key1:key2`.
    MalformedEntry { entry: String },
    /// An account name is empty.
    EmptyName,
    /// A key is empty or not valid base64.
    InvalidKey { reason: String },
    /// The string names no account at all.
    NoAccounts,
}

impl fmt::Display for AccountsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AccountsError::MalformedEntry { entry } => write!(
                f,
                "account entry {entry:?} is not of the form name:key1 or name:key1:key2"
            ),
            AccountsError::EmptyName => write!(f, "an account name is empty"),
            AccountsError::InvalidKey { reason } => write!(f, "invalid account key: {reason}"),
            AccountsError::NoAccounts => write!(f, "no accounts given"),
        }
    }
}

impl std::error::Error for AccountsError {}

fn decode_key(key: &str) -> Result<Vec<u8>, AccountsError> {
    let key = key.trim();
    if key.is_empty() {
        return Err(AccountsError::InvalidKey {
            reason: "empty key".to_string(),
        });
    }
    BASE64.decode(key).map_err(|e| AccountsError::InvalidKey {
        reason: not_base64(&e),
    })
}

/// Why a key is not base64, in words (the decoder says "Invalid symbol 33, offset 9.").
fn not_base64(e: &base64::DecodeError) -> String {
    use base64::DecodeError;
    match e {
        DecodeError::InvalidByte(offset, byte) | DecodeError::InvalidLastSymbol(offset, byte) => {
            format!(
                "not base64 (character {}, {:?}, is not a base64 character)",
                offset + 1,
                char::from(*byte)
            )
        }
        DecodeError::InvalidLength(length) => {
            format!("not base64 ({length} characters cannot be base64 text)")
        }
        DecodeError::InvalidPadding => "not base64 (its `=` padding is wrong)".to_string(),
    }
}

impl Default for Accounts {
    /// Only the development account `devstoreaccount1`.
    fn default() -> Self {
        Accounts::dev()
    }
}

impl Accounts {
    /// No accounts.
    pub fn empty() -> Self {
        Accounts {
            accounts: BTreeMap::new(),
        }
    }

    /// Only the development account `devstoreaccount1` with its well-known key.
    pub fn dev() -> Self {
        let mut accounts = Accounts::empty();
        let keys = AccountKeys::from_base64(DEV_ACCOUNT_KEY, None)
            .expect("the development account key is a valid base64 constant");
        accounts.accounts.insert(DEV_ACCOUNT_NAME.to_string(), keys);
        accounts
    }

    /// Only the Cosmos DB emulator's account `localhost` with its well-known key.
    pub fn cosmos_emulator() -> Self {
        let mut accounts = Accounts::empty();
        let keys = AccountKeys::from_base64(COSMOS_EMULATOR_ACCOUNT_KEY, None)
            .expect("the Cosmos DB emulator key is a valid base64 constant");
        accounts
            .accounts
            .insert(COSMOS_EMULATOR_ACCOUNT_NAME.to_string(), keys);
        accounts
    }

    /// Adds or replaces an account.
    pub fn insert(&mut self, name: &str, keys: AccountKeys) -> Result<(), AccountsError> {
        if name.is_empty() {
            return Err(AccountsError::EmptyName);
        }
        self.accounts.insert(name.to_string(), keys);
        Ok(())
    }

    /// Parses the `AZURITE_ACCOUNTS` format: `name1:key1:key2;name2:key1` (keys base64).
    ///
    /// Behaviour follows Azurite (`src/common/AccountDataStore.ts`, read for this purpose):
    /// the configured accounts **replace** the default one, so `devstoreaccount1` is available
    /// only when it is listed (Azurite's README: "Default storage account `devstoreaccount1`
    /// will be disabled when providing customized storage accounts."). The string is trimmed,
    /// empty entries (a trailing `;`) are skipped, an entry with fewer than two or more than
    /// three `:`-separated parts is an error, and a later entry for the same name replaces an
    /// earlier one. Unlike Azurite, which falls back to the default account when parsing fails
    /// and decodes keys leniently, this returns an error for malformed input, an empty name,
    /// a key that is not valid base64, or a string with no account at all.
    pub fn parse_azurite(text: &str) -> Result<Self, AccountsError> {
        let mut accounts = Accounts::empty();
        for entry in text.trim().split(';') {
            let entry = entry.trim();
            if entry.is_empty() {
                continue;
            }
            let parts: Vec<&str> = entry.split(':').collect();
            let (name, key1, key2) = match parts.as_slice() {
                [name, key1] => (*name, *key1, None),
                [name, key1, key2] => (*name, *key1, Some(*key2)),
                _ => {
                    return Err(AccountsError::MalformedEntry {
                        entry: redact_entry(entry),
                    })
                }
            };
            let keys = AccountKeys::from_base64(key1, key2).map_err(|e| match e {
                AccountsError::InvalidKey { reason } => AccountsError::InvalidKey {
                    reason: format!("{reason}, for account {}", name.trim()),
                },
                other => other,
            })?;
            accounts.insert(name.trim(), keys)?;
        }
        if accounts.accounts.is_empty() {
            return Err(AccountsError::NoAccounts);
        }
        Ok(accounts)
    }

    /// Removes an account (`false`: there was none of that name).
    pub(crate) fn remove(&mut self, name: &str) -> bool {
        self.accounts.remove(name).is_some()
    }

    /// Keys of `name` (exact, case-sensitive match: account names are lower case in Azure).
    pub fn get(&self, name: &str) -> Option<&AccountKeys> {
        self.accounts.get(name)
    }

    /// `true` when `name` is configured.
    pub fn contains(&self, name: &str) -> bool {
        self.accounts.contains_key(name)
    }

    /// The published key (base64) of `name` when it is served with it: the development
    /// account's or the Cosmos DB emulator's well-known key, which every guide prints, so the
    /// web console can fill it in. `None` for any other account or key.
    pub fn published_key(&self, name: &str) -> Option<&'static str> {
        let published = match name {
            DEV_ACCOUNT_NAME => DEV_ACCOUNT_KEY,
            COSMOS_EMULATOR_ACCOUNT_NAME => COSMOS_EMULATOR_ACCOUNT_KEY,
            _ => return None,
        };
        let served = self.get(name)?.primary();
        (BASE64.decode(published).ok()? == served).then_some(published)
    }

    /// Configured account names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.accounts.keys().map(String::as_str)
    }
}

/// Keeps the account name of a malformed entry for the error message, hides the rest (keys).
fn redact_entry(entry: &str) -> String {
    match entry.split_once(':') {
        Some((name, _)) => format!("{name}:…"),
        None => entry.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_dev_account() {
        let accounts = Accounts::default();
        assert_eq!(accounts.names().collect::<Vec<_>>(), vec![DEV_ACCOUNT_NAME]);
        let keys = accounts.get(DEV_ACCOUNT_NAME).unwrap();
        assert_eq!(keys.keys().count(), 1);
        assert_eq!(keys.primary().len(), 64);
    }

    #[test]
    fn published_keys_are_known_only_where_served_with_them() {
        let dev = Accounts::dev();
        assert_eq!(dev.published_key(DEV_ACCOUNT_NAME), Some(DEV_ACCOUNT_KEY));
        let cosmos = Accounts::cosmos_emulator();
        assert_eq!(
            cosmos.published_key(COSMOS_EMULATOR_ACCOUNT_NAME),
            Some(COSMOS_EMULATOR_ACCOUNT_KEY)
        );
        assert_eq!(cosmos.published_key(DEV_ACCOUNT_NAME), None);
        let other = Accounts::parse_azurite("devstoreaccount1:a2V5MQ==;acct:a2V5Mg==").unwrap();
        assert_eq!(other.published_key(DEV_ACCOUNT_NAME), None, "another key");
        assert_eq!(other.published_key("acct"), None);
    }

    #[test]
    fn a_bad_key_names_its_account_and_what_is_wrong() {
        let e = Accounts::parse_azurite("good:a2V5MQ==;acct1:abc!defghijk").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid account key: not base64 (character 4, '!', is not a base64 character), \
             for account acct1"
        );
    }

    #[test]
    fn parse_azurite_replaces_default() {
        let a = Accounts::parse_azurite("acct1:a2V5MQ==:a2V5Mg==;acct2:a2V5Mw==;").unwrap();
        assert_eq!(a.names().collect::<Vec<_>>(), vec!["acct1", "acct2"]);
        assert!(!a.contains(DEV_ACCOUNT_NAME));
        let k: Vec<&[u8]> = a.get("acct1").unwrap().keys().collect();
        assert_eq!(k, vec![b"key1".as_slice(), b"key2".as_slice()]);
        assert_eq!(a.get("acct2").unwrap().primary(), b"key3");
    }

    #[test]
    fn parse_azurite_can_list_dev_account() {
        let text = format!("  {DEV_ACCOUNT_NAME}:{DEV_ACCOUNT_KEY};other:a2V5 ");
        // "a2V5" is valid base64 ("key").
        let a = Accounts::parse_azurite(&text).unwrap();
        assert!(a.contains(DEV_ACCOUNT_NAME));
        assert_eq!(a.get("other").unwrap().primary(), b"key");
    }

    #[test]
    fn parse_azurite_later_entry_wins() {
        let a = Accounts::parse_azurite("x:a2V5MQ==;x:a2V5Mg==").unwrap();
        assert_eq!(a.get("x").unwrap().primary(), b"key2");
    }

    #[test]
    fn parse_azurite_errors() {
        assert_eq!(Accounts::parse_azurite(""), Err(AccountsError::NoAccounts));
        assert_eq!(
            Accounts::parse_azurite(" ; ;"),
            Err(AccountsError::NoAccounts)
        );
        assert!(matches!(
            Accounts::parse_azurite("onlyname"),
            Err(AccountsError::MalformedEntry { .. })
        ));
        assert!(matches!(
            Accounts::parse_azurite("a:a2V5:a2V5:a2V5"),
            Err(AccountsError::MalformedEntry { .. })
        ));
        assert_eq!(
            Accounts::parse_azurite(":a2V5"),
            Err(AccountsError::EmptyName)
        );
        assert!(matches!(
            Accounts::parse_azurite("a:not*base64"),
            Err(AccountsError::InvalidKey { .. })
        ));
        assert!(matches!(
            Accounts::parse_azurite("a:"),
            Err(AccountsError::InvalidKey { .. })
        ));
        // The error message never carries key material.
        let e = Accounts::parse_azurite("a:secret:secret:secret").unwrap_err();
        assert!(!e.to_string().contains("secret"));
    }

    #[test]
    fn debug_hides_keys() {
        let s = format!("{:?}", Accounts::dev());
        assert!(!s.contains("Eby8"));
        assert!(s.contains("1 key(s)"));
    }
}
