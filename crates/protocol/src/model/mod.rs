//! Domain types of the Table service: names, EDM values, entities, ETags and write operations.
//! Depends on nothing else in the crate.

pub mod edm;
pub mod entity;
pub mod limits;
pub mod names;
pub mod write;

pub use edm::{EdmDateTime, EdmType, EdmValue, EdmValueRef, FractionDigits};
pub use entity::{Entity, EntityKey, EntityView, Property};
pub use names::{TableId, TableName, TableNameError, TableRef};
pub use write::{IfMatch, WriteKind, WriteOp};
