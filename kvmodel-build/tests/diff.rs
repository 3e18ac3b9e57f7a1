//! `kvmodel diff` between two versions of a schema.

fn load(name: &str) -> kvmodel_build::Model {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/diff")
        .join(name);
    let s = kvmodel_build::load_file(&path).unwrap();
    assert!(!s.has_errors(), "{}", s.render_diagnostics(false));
    s.model
}

#[test]
fn classifies_every_change() {
    let (old, new) = (load("old.yaml"), load("new.yaml"));
    let changes = kvmodel_build::diff::diff(&old, &new);
    insta::assert_snapshot!(kvmodel_build::diff::report(&changes));
    assert!(
        kvmodel_build::diff::diff(&new, &new).is_empty(),
        "no change, no report"
    );
}

/// A rename declared in a migration step is one change, not a field
/// removed and another added; an index added `since` a version says that
/// its reads are refused until the migration backfills it.
#[test]
fn names_renames_and_what_since_does() {
    let (old, new) = (load("old.yaml"), load("new.yaml"));
    let report = kvmodel_build::diff::report(&kvmodel_build::diff::diff(&old, &new));
    assert!(
        report.contains("User.name: field renamed full_name → name (migration from 1)"),
        "{report}"
    );
    assert!(!report.contains("User.full_name: removed"), "{report}");
    assert!(!report.contains("User.name: new field"), "{report}");
    assert!(
        report.contains("new index `by_status` (since 2)")
            && report.contains("reads of it are refused with `NotReadable`")
            && report.contains("`kvmodel migrate`"),
        "{report}"
    );
    for line in report.lines().filter(|l| l.starts_with("safe")) {
        assert!(line.contains(';'), "a safe change says why: {line}");
    }
}

#[test]
fn tells_what_type_and_ttl_changes_do_to_stored_records() {
    let (old, new) = (load("types_old.yaml"), load("types_new.yaml"));
    let changes = kvmodel_build::diff::diff(&old, &new);
    insta::assert_snapshot!(kvmodel_build::diff::report(&changes));
    assert!(kvmodel_build::diff::diff(&new, &new).is_empty());
}

/// A change of codec or threshold, adding or removing `compress`: safe,
/// since each stored value names its codec.
#[test]
fn compression_changes_are_safe() {
    let (old, new) = (load("compress_old.yaml"), load("compress_new.yaml"));
    let changes = kvmodel_build::diff::diff(&old, &new);
    insta::assert_snapshot!(kvmodel_build::diff::report(&changes));
    assert_eq!(changes.len(), 4, "Memo did not change");
    for c in &changes {
        assert_eq!(c.impact, kvmodel_build::diff::Impact::Safe, "{c:?}");
        assert!(c.reason.contains("names its codec"), "{}", c.reason);
    }
}

/// Switching to protobuf is safe (each record names its encoding);
/// switching away from it is breaking: only a protobuf-encoded type knows
/// the field numbers of the records stored as protobuf.
#[test]
fn switching_to_protobuf_is_safe_and_away_from_it_breaking() {
    let (json, proto) = (load("encoding_json.yaml"), load("encoding_protobuf.yaml"));
    let to = kvmodel_build::diff::diff(&json, &proto);
    assert_eq!(to.len(), 1, "{to:?}");
    assert_eq!(to[0].impact, kvmodel_build::diff::Impact::Safe, "{to:?}");
    let away = kvmodel_build::diff::diff(&proto, &json);
    assert_eq!(away.len(), 1, "{away:?}");
    assert_eq!(away[0].impact, kvmodel_build::diff::Impact::Breaking);
    assert!(
        away[0].reason.contains("field numbers"),
        "{}",
        away[0].reason
    );
}

#[test]
fn tells_what_a_change_of_on_delete_does_to_stored_data() {
    let (old, new) = (load("on_delete_old.yaml"), load("on_delete_new.yaml"));
    let changes = kvmodel_build::diff::diff(&old, &new);
    insta::assert_snapshot!(kvmodel_build::diff::report(&changes));
    assert!(kvmodel_build::diff::diff(&new, &new).is_empty());
}

/// A link added starts empty (safe); its far entity or far-side name
/// changed breaks what is stored; one removed leaves its entries behind.
#[test]
fn tells_what_a_change_of_links_does_to_stored_links() {
    let (old, new) = (load("links_old.yaml"), load("links_new.yaml"));
    let changes = kvmodel_build::diff::diff(&old, &new);
    insta::assert_snapshot!(kvmodel_build::diff::report(&changes));
    let breaking = changes
        .iter()
        .filter(|c| c.impact == kvmodel_build::diff::Impact::Breaking)
        .count();
    assert_eq!(breaking, 2, "{changes:?}");
    assert_eq!(changes.len(), 4, "a description changes nothing stored");
    assert!(kvmodel_build::diff::diff(&new, &new).is_empty());
}

/// Declaring, switching or removing a counter's `keep` changes no stored
/// count; what it does to later expiries, deletes and receipts is said,
/// and the changes that need `reconcile` say so.
#[test]
fn tells_what_a_change_of_a_counters_keep_does_to_stored_counts() {
    use kvmodel_build::diff::Impact;
    let (old, new) = (load("keep_old.yaml"), load("keep_new.yaml"));
    let changes = kvmodel_build::diff::diff(&old, &new);
    insta::assert_snapshot!(kvmodel_build::diff::report(&changes));
    let impact = |counter: &str| {
        let c = changes
            .iter()
            .find(|c| c.reason.contains(&format!("counter `{counter}` keep:")))
            .unwrap_or_else(|| panic!("no change of {counter} in {changes:?}"));
        c.impact
    };
    // On an expiring entity old receipts still list the amount.
    assert_eq!(impact("hourly"), Impact::NeedsMigration);
    assert_eq!(impact("daily"), Impact::Safe);
    assert_eq!(impact("total"), Impact::Safe);
    assert_eq!(impact("gone"), Impact::NeedsMigration);
    // No receipts on an entity that does not expire.
    assert_eq!(impact("per_owner"), Impact::Safe);
    assert_eq!(changes.len(), 5, "{changes:?}");
    assert!(kvmodel_build::diff::diff(&new, &new).is_empty());
}

/// Adding an expiry field is safe (stored records keep the expiry of their
/// last write); removing it is safe under a `ttl`, whose sweep still runs,
/// and needs a `reconcile` without one.
#[test]
fn tells_what_an_expiry_field_does() {
    let (old, new) = (load("expiry_old.yaml"), load("expiry_new.yaml"));
    let report = kvmodel_build::diff::report(&kvmodel_build::diff::diff(&old, &new));
    insta::assert_snapshot!(report);
    assert!(
        report.contains("safe             Link: `expires_at` now sets each record's expiry"),
        "{report}"
    );
    assert!(
        report.contains("safe             Invite: `until` no longer sets"),
        "{report}"
    );
    assert!(
        report.contains("needs migration  Coupon: `ends` no longer sets"),
        "{report}"
    );
}

/// Standalone counters: what adding, removing, renaming or changing one
/// does to the counts stored under its keys.
#[test]
fn tells_what_a_change_of_a_standalone_counter_does_to_stored_counts() {
    use kvmodel_build::diff::Impact;
    let (old, new) = (load("counters_old.yaml"), load("counters_new.yaml"));
    let changes = kvmodel_build::diff::diff(&old, &new);
    insta::assert_snapshot!(kvmodel_build::diff::report(&changes));
    let impacts = |head: &str| -> Vec<Impact> {
        changes
            .iter()
            .filter(|c| c.reason.starts_with(head))
            .map(|c| c.impact)
            .collect()
    };
    // A renamed key field keeps the keys; fewer shards strand counts; a
    // TTL added is safe.
    let mut views = impacts("PageViews:");
    views.sort();
    assert_eq!(views, [Impact::Safe, Impact::Breaking]);
    let mut visits = impacts("Visits:");
    visits.sort();
    assert_eq!(visits, [Impact::Safe, Impact::Safe]);
    // Another key field type spells other keys.
    assert_eq!(impacts("Signups:"), [Impact::Breaking]);
    // Without the TTL, stored counters still expire as their last write set.
    assert_eq!(impacts("Clicks:"), [Impact::Breaking]);
    // The same keys under another name keep their counts.
    assert_eq!(impacts("Fetches:"), [Impact::Safe]);
    assert!(
        changes
            .iter()
            .any(|c| c.reason.contains("renamed from `Downloads`"))
    );
    assert_eq!(impacts("Downloads:"), []);
    // Removed: left to expire, or left for good.
    assert_eq!(impacts("Errors:"), [Impact::Safe]);
    assert_eq!(impacts("Logins:"), [Impact::Breaking]);
    assert_eq!(impacts("Likes:"), [Impact::Safe]);
    assert!(kvmodel_build::diff::diff(&new, &new).is_empty());
}
