//! [`Scope`]: where an operation runs and what the caller may do there: the account whose
//! data it addresses, the caller's grant (its SAS permissions and key range), and the order
//! the server answers queries in (its dialect's).

use crate::auth::{AuthError, AuthzOperation, Principal};
use crate::model::names::NameCase;
use crate::model::TableRef;
use crate::protocol::dialect::{Dialect, STORAGE};
use crate::protocol::operation::{Misplaced, MisplacedOperation, Operation};
use crate::query::unordered::EntityOrder;
use crate::store::{KeyBound, KeyRange, TableInfo};

/// The account an operation addresses and who is calling.
#[derive(Debug, Clone)]
pub(crate) struct Scope {
    /// The account whose data is addressed (`-secondary` reads the primary's data).
    account: String,
    /// Who is calling (`None` with `--disable-auth`).
    principal: Option<Principal>,
    /// The order query results come in.
    order: ResultOrder,
    /// How the server answers: how table names tell tables apart (case-sensitively under
    /// `--flavor cosmos`) and the paging rules that differ.
    dialect: &'static Dialect,
}

/// The order the server answers queries in: Azure Storage's key order, or, under
/// `--flavor cosmos`, Cosmos DB's (no key order, see `query::unordered`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum ResultOrder {
    #[default]
    Keys,
    /// Cosmos DB's: entities in `entities` order (creation order, or the seeded shuffle of
    /// `--cosmos-shuffle-seed`), tables in a hash order of their names under `table_seed`.
    Unordered {
        entities: EntityOrder,
        table_seed: u64,
    },
}

impl ResultOrder {
    /// The order `dialect` answers in; without key order (Cosmos's), entities in creation
    /// order, or shuffled with `shuffle_seed` when given.
    pub(crate) fn of(dialect: &Dialect, shuffle_seed: Option<u64>) -> ResultOrder {
        if dialect.key_order {
            return ResultOrder::Keys;
        }
        ResultOrder::Unordered {
            entities: match shuffle_seed {
                Some(seed) => EntityOrder::Shuffled { seed },
                None => EntityOrder::Creation,
            },
            table_seed: shuffle_seed.unwrap_or(0),
        }
    }
}

impl Scope {
    pub(crate) fn new(account: impl Into<String>, principal: Option<Principal>) -> Scope {
        Scope {
            account: account.into(),
            principal,
            order: ResultOrder::Keys,
            dialect: &STORAGE,
        }
    }

    /// The scope of a server answering in `dialect`: its result order (with `shuffle_seed`
    /// for an unordered one, see [`ResultOrder::of`]) and its table names' case rule.
    pub(crate) fn for_dialect(self, dialect: &'static Dialect, shuffle_seed: Option<u64>) -> Scope {
        Scope {
            order: ResultOrder::of(dialect, shuffle_seed),
            dialect,
            ..self
        }
    }

    pub(crate) fn dialect(&self) -> &'static Dialect {
        self.dialect
    }

    pub(crate) fn case(&self) -> NameCase {
        self.dialect.name_case
    }

    pub(crate) fn order(&self) -> ResultOrder {
        self.order
    }

    pub(crate) fn account(&self) -> &str {
        &self.account
    }

    /// Table `name` of the scope's account, told apart by the scope's case rule.
    pub(crate) fn table(&self, name: impl Into<String>) -> TableRef {
        TableRef::in_case(&self.account, name, self.case())
    }

    /// `info` with the name a reader of this scope knows it by: as created (case-insensitive
    /// readers), or the name its identity spells (case-sensitive readers, to whom a table the
    /// storage flavour created is its lower-cased name).
    pub(crate) fn shown(&self, mut info: TableInfo) -> TableInfo {
        if self.case() == NameCase::Sensitive {
            info.name = crate::model::names::name_of_identity(&info.identity);
        }
        info
    }

    /// Refuses an entity key outside the caller's SAS key range (403 AuthorizationFailure).
    pub(crate) fn check_key(&self, partition_key: &str, row_key: &str) -> Result<(), AuthError> {
        match self.principal.as_ref().and_then(Principal::sas) {
            Some(grant) => grant.check_key(partition_key, row_key),
            None => Ok(()),
        }
    }

    /// Whether the caller may run `operation` (a `$batch` sub-operation: the request itself
    /// was authorized for `$batch` at admission).
    pub(crate) fn authorize(&self, operation: &Operation) -> Result<(), AuthError> {
        match &self.principal {
            Some(principal) => principal.authorize(authz_operation(operation), operation.table()),
            None => Ok(()),
        }
    }

    /// The key range the caller's SAS allows, as a store range (`None`: unrestricted).
    pub(crate) fn key_range(&self) -> Option<KeyRange> {
        let range = self
            .principal
            .as_ref()
            .and_then(Principal::sas)?
            .key_range();
        if range.is_unbounded() {
            return None;
        }
        let bound = |b: Option<&crate::auth::SasKeyBound>,
                     partition_edge: fn(String) -> KeyBound| match b {
            None => KeyBound::Unbounded,
            Some(b) => match &b.row_key {
                None => partition_edge(b.partition_key.clone()),
                Some(rk) => KeyBound::Included(b.partition_key.clone(), rk.clone()),
            },
        };
        Some(KeyRange {
            start: bound(range.start.as_ref(), KeyBound::PartitionStart),
            end: bound(range.end.as_ref(), KeyBound::PartitionEnd),
        })
    }
}

/// What an operation needs from the caller's grant.
pub(crate) fn authz_operation(op: &Operation) -> AuthzOperation {
    match op {
        Operation::GetServiceProperties => AuthzOperation::GetServiceProperties,
        Operation::SetServiceProperties => AuthzOperation::SetServiceProperties,
        Operation::GetServiceStats => AuthzOperation::GetServiceStats,
        Operation::QueryTables | Operation::GetTable { .. } => AuthzOperation::QueryTables,
        Operation::CreateTable => AuthzOperation::CreateTable,
        Operation::DeleteTable { .. } => AuthzOperation::DeleteTable,
        Operation::GetTableAcl { .. } => AuthzOperation::GetTableAcl,
        Operation::SetTableAcl { .. } => AuthzOperation::SetTableAcl,
        Operation::QueryEntities { .. } => AuthzOperation::QueryEntities,
        Operation::GetEntity(_) => AuthzOperation::GetEntity,
        Operation::InsertEntity { .. } => AuthzOperation::InsertEntity,
        Operation::UpdateEntity(..) => AuthzOperation::UpdateEntity,
        Operation::MergeEntity(..) => AuthzOperation::MergeEntity,
        Operation::DeleteEntity(..) => AuthzOperation::DeleteEntity,
        Operation::InsertOrReplaceEntity(_) => AuthzOperation::InsertOrReplaceEntity,
        Operation::InsertOrMergeEntity(_) => AuthzOperation::InsertOrMergeEntity,
        Operation::Batch => AuthzOperation::Batch,
        // Authorized as what it meant; never run (Azure answers it without running it).
        Operation::BelowTable(Misplaced { target, .. }) => match target {
            Some(MisplacedOperation::CreateTable) => AuthzOperation::CreateTable,
            Some(MisplacedOperation::DeleteTable) => AuthzOperation::DeleteTable,
            Some(MisplacedOperation::QueryTables) | None => AuthzOperation::QueryTables,
        },
    }
}
