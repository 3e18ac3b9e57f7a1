//! The names an entity's constructs generate (methods and key builders),
//! which must not clash.

use std::collections::{BTreeMap, BTreeSet};

use crate::origin::{Diagnostics, Sp};
use crate::vocab;

/// Key builder names generated for every entity; indexes may not take them.
const RESERVED: &[&str] = &["record", "all"];

/// The methods every repository has, whatever its entity declares: no
/// index, counter, relation or link may generate one of these names. The
/// expansion's method table is tested to write exactly these.
pub(crate) const REPOSITORY_METHODS: &[&str] = &[
    "new",
    "with_partial_reads",
    "store",
    "in_tx",
    "create",
    "get",
    "get_many",
    "exists",
    "count_all",
    "upsert",
    "create_many",
    "update",
    "modify",
    "try_modify",
    "delete",
    "migrate_all",
    "verify",
    "sweep_expired",
    "purge",
    "reconcile",
    "list_all",
];

#[derive(Default)]
pub(super) struct NameSet {
    /// `(kind, name)`: names are unique per kind (an index and a counter may
    /// share a name, as `by_status` often does).
    names: BTreeSet<(String, String)>,
    /// Generated method names, which must not clash across kinds.
    pub(super) methods: BTreeMap<String, String>,
    /// Generated key builder names (`XKeys::by_email`,
    /// `XKeys::relation_user`, `XKeys::counter_total`), likewise.
    builders: BTreeMap<String, (String, String)>,
}

impl NameSet {
    /// Adds a name whose method is `prefix` + name and whose key builder is
    /// `builder` + name.
    pub(super) fn add(
        &mut self,
        diags: &mut Diagnostics,
        name: &Sp<String>,
        prefix: &str,
        builder: &str,
        what: &str,
    ) {
        // The name becomes a method and key builder name.
        if let Err(m) = vocab::snake_case("E122", what, name) {
            diags.push(m.at(&name.origin));
            return;
        }
        if what == "index" && RESERVED.contains(&name.as_str()) {
            diags.error(
                "E124",
                &name.origin,
                format!(
                    "`{}` is reserved for the generated key builders; choose another index name",
                    **name
                ),
            );
        }
        if !self.names.insert((what.to_owned(), name.value.clone())) {
            diags.error("E112", &name.origin, format!("the {what} `{}` is declared twice; {what} names must be unique within an entity", **name));
            return;
        }
        let method = format!("{prefix}{}", **name);
        // `list_all` is reported above, for the key builder it would clash with too.
        if REPOSITORY_METHODS.contains(&method.as_str()) && method != "list_all" {
            diags.error(
                "E124",
                &name.origin,
                format!(
                    "this {what} would generate the method `{method}`, which every repository already has; choose another {what} name"
                ),
            );
            return;
        }
        if let Some(other) = self.methods.insert(method.clone(), what.to_owned()) {
            diags.error("E112", &name.origin, format!("this {what} would generate the method `{method}`, which {} already generates; rename one of them", vocab::a(&other)));
            return;
        }
        let builder = format!("{builder}{}", **name);
        let this = (what.to_owned(), name.value.clone());
        if let Some((kind, other)) = self.builders.insert(builder.clone(), this) {
            diags.error("E112", &name.origin, format!("this {what} would generate the key builder `{builder}`, which the {kind} `{other}` already generates; rename one of them"));
        }
    }
}
