//! Declarative migration steps applied to a record's generic value.
//!
//! A step from version N to N+1 renames, adds and removes top-level fields.
//! Steps never fail on records that already look migrated: renaming a field
//! that is absent and removing a field that is absent are no-ops, and `add`
//! keeps a value that is already there.

use serde_json::Value;

use crate::error::Error;

/// Renames field `from` to `to`.
pub fn rename(value: &mut Value, from: &str, to: &str) {
    if let Some(obj) = value.as_object_mut() {
        if let Some(v) = obj.remove(from) {
            obj.insert(to.to_owned(), v);
        }
    }
}

/// Adds field `name` with `default` unless it is present.
pub fn add(value: &mut Value, name: &str, default: Value) {
    if let Some(obj) = value.as_object_mut() {
        obj.entry(name.to_owned()).or_insert(default);
    }
}

/// The error of a record written at a version with no migration path.
pub fn no_migration(key: &str, version: u32, current: u32) -> Error {
    Error::decode(
        key,
        format!("it is at version {version}, and no migration to version {current} is declared"),
        None,
    )
}

/// Removes field `name`.
pub fn remove(value: &mut Value, name: &str) {
    if let Some(obj) = value.as_object_mut() {
        obj.remove(name);
    }
}
