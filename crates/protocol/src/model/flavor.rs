//! Which service the server answers as: Azure Table storage (the default) or Azure Cosmos DB
//! for Table. The flavour is a property of how answers are encoded and of a few execution
//! rules (result order, limits, surfaces Cosmos lacks), never a second request path.

/// The service whose wire behaviour the server reproduces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Flavor {
    /// Azure Table storage (`<account>.table.core.windows.net`).
    #[default]
    Storage,
    /// Azure Cosmos DB for Table (`<account>.table.cosmos.azure.com`), as its Windows emulator
    /// serves it on port 8902.
    Cosmos,
}

impl Flavor {
    pub fn is_cosmos(self) -> bool {
        self == Flavor::Cosmos
    }
}
