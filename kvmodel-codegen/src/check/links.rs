//! The rules of `links:`: a many-to-many link between two entities.

use crate::ir::{Entity, Link, Model};
use crate::origin::{Diagnostic, Diagnostics, suggestion};
use crate::vocab;

use super::names::{NameSet, REPOSITORY_METHODS};

/// The methods a link generates on its own side besides `list_{name}`.
const OWN_PREFIXES: [&str; 3] = ["link_", "unlink_", "count_"];

/// Checks one link of `e`; `model` gives the other entities when known
/// (YAML).
pub(super) fn check(
    e: &Entity,
    l: &Link,
    model: Option<&Model>,
    names: &mut NameSet,
    diags: &mut Diagnostics,
) {
    names.add(diags, &l.name, "list_", "link_", "link");
    if *l.name == "all" {
        diags.error(
            "E124",
            &l.name.origin,
            "this link would generate the method `list_all`, which every repository already has; choose another link name",
        );
    }
    for prefix in OWN_PREFIXES {
        let method = format!("{prefix}{}", *l.name);
        if let Some(other) = names.methods.insert(method.clone(), "link".to_owned()) {
            diags.error("E112", &l.name.origin, format!("this link would generate the method `{method}`, which {} already generates; rename one of them", vocab::a(&other)));
        }
    }
    // The inverse names the far side's methods (`list_posts`).
    if let Err(m) = vocab::snake_case("E122", "link inverse", &l.inverse) {
        diags.push(m.at(&l.inverse.origin));
    }
    // Both sides' collections of a record linked to its own entity live in
    // one registry: they need two names.
    if l.to_name() == e.name.as_str() && *l.inverse == *l.name {
        diags.error(
            "E143",
            &l.inverse.origin,
            format!(
                "link `{}` links `{}` to itself with the same name on both sides; give the inverse another name, such as `{}_of`",
                *l.name, *e.name, *l.name
            ),
        );
    }
    let Some(m) = model else { return };
    let Some(far) = m.entities.iter().find(|x| *x.name == *l.to_name()) else {
        let hint = suggestion(l.to_name(), m.entities.iter().map(|x| x.name.as_str()));
        diags.error(
            "E141",
            &l.to.origin,
            format!(
                "link `{}` goes to `{}`, which is not an entity of this schema{hint}",
                *l.name, *l.to
            ),
        );
        return;
    };
    if far.key.is_none() {
        diags.error(
            "E141",
            &l.to.origin,
            format!(
                "link `{}` goes to `{}`, which has no `key`, so its records are not stored; link to an entity with a key",
                *l.name, *far.name
            ),
        );
    }
}

/// The methods every entity's repository gets from the links of the
/// model: its own links' and, under their inverse names, those of the links
/// to it. Two that clash on the far side are reported there (E144).
pub(super) fn check_far(model: &Model, diags: &mut Diagnostics) {
    for far in &model.entities {
        let mut taken: Vec<String> = Vec::new();
        for ix in &far.indexes {
            let prefix = if ix.unique { "find_" } else { "list_" };
            taken.push(format!("{prefix}{}", *ix.name));
        }
        for c in &far.counters {
            let prefix = if c.sum.is_some() { "sum_" } else { "count_" };
            taken.push(format!("{prefix}{}", *c.name));
        }
        for r in &far.relations {
            taken.push(format!("list_by_{}", *r.name));
        }
        for l in &far.links {
            for prefix in ["link_", "unlink_", "list_", "count_"] {
                taken.push(format!("{prefix}{}", *l.name));
            }
        }
        taken.extend(REPOSITORY_METHODS.iter().map(|m| (*m).to_owned()));
        for e in &model.entities {
            for l in e.links.iter().filter(|l| l.to_name() == far.name.as_str()) {
                for prefix in ["list_", "count_"] {
                    let method = format!("{prefix}{}", *l.inverse);
                    if taken.contains(&method) {
                        diags.push(Diagnostic::error("E144", &l.inverse.origin, format!("the inverse `{}` of link `{}.{}` would give `{}` the method `{method}`, which it already has", *l.inverse, *e.name, *l.name, *far.name))
                            .help("choose another `inverse`"));
                        break;
                    }
                    taken.push(method);
                }
            }
        }
    }
}
