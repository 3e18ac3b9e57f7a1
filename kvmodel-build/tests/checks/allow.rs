//! Lints a schema means to break: `allow` on an index, a counter, an
//! entity or the whole file silences exactly those warnings, in YAML and in
//! `#[kv(…)]` attributes; an unknown lint code is an error with a
//! did-you-mean.

fn codes(schema: &kvmodel_build::Schema) -> Vec<&'static str> {
    assert!(!schema.has_errors(), "{}", schema.render_diagnostics(false));
    schema.diagnostics.iter().map(|d| d.code).collect()
}

/// A leaderboard (W002: ordered by a field with few values), a hot
/// counter (W001), a long key (W003) and a session without TTL (W004),
/// with `{allow}` spliced in where each test wants it.
fn yaml(top: &str, entity: &str, index: &str, counter: &str) -> kvmodel_build::Schema {
    let source = format!(
        "kvmodel: 1\nnamespace: game\n{top}entities:\n  Score:\n    key: \"score_entry_of_a_very_long_leaderboard_name_for_all:{{id}}\"\n{entity}    fields: {{ id: string, tier: Tier, points: i64 }}\n    indexes:\n      by_tier: {{ fields: [tier], order_by: points{index} }}\n    counters:\n      total: {{ sum: points{counter} }}\n  Session:\n    key: \"session:{{id}}\"\n    fields: {{ id: string }}\ntypes:\n  Tier: {{ enum: [bronze, silver, gold] }}\n"
    );
    kvmodel_build::load("game.yaml", &source)
}

#[test]
fn every_lint_fires_without_allow() {
    assert_eq!(
        codes(&yaml("", "", "", "")),
        ["W003", "W002", "W001", "W004"]
    );
    let s = yaml("", "", "", "");
    let help = s.diagnostics[1].help.as_deref().unwrap();
    assert!(
        help.ends_with("if this is intended, add `allow: [W002]` to the index"),
        "{help}"
    );
}

#[test]
fn allow_on_an_index_or_a_counter_silences_only_it() {
    assert_eq!(
        codes(&yaml("", "", ", allow: [W002]", "")),
        ["W003", "W001", "W004"]
    );
    assert_eq!(
        codes(&yaml("", "", "", ", allow: W001")),
        ["W003", "W002", "W004"]
    );
    // Allowing a lint where it cannot fire silences nothing else.
    assert_eq!(
        codes(&yaml("", "", ", allow: [W001]", ", allow: [W002]")),
        ["W003", "W002", "W001", "W004"]
    );
}

#[test]
fn allow_on_an_entity_covers_what_it_declares() {
    assert_eq!(
        codes(&yaml("", "    allow: [W001, W002, W003]\n", "", "")),
        ["W004"]
    );
}

#[test]
fn allow_on_an_entity_covers_a_record_without_max_size() {
    let source = |allow: &str| {
        format!(
            "kvmodel: 1\nnamespace: docs\nentities:\n  Doc:\n    key: \"doc:{{id}}\"\n{allow}    fields: {{ id: string, body: bytes }}\n"
        )
    };
    let s = kvmodel_build::load("docs.yaml", &source(""));
    assert_eq!(codes(&s), ["W005"]);
    let help = s.diagnostics[0].help.as_deref().unwrap();
    assert!(help.contains("add `max_size: 256KiB`"), "{help}");
    assert!(
        help.ends_with("add `allow: [W005]` to the entity"),
        "{help}"
    );
    let allowed = kvmodel_build::load("docs.yaml", &source("    allow: [W005]\n"));
    assert!(codes(&allowed).is_empty());
}

#[test]
fn allow_at_the_top_covers_every_entity() {
    assert!(codes(&yaml("allow: [W001, W002, W003, W004]\n", "", "", "")).is_empty());
    let s = yaml("allow: [W004]\n", "    allow: [W002]\n", "", "");
    assert_eq!(codes(&s), ["W003", "W001"]);
    let score = &s.model.entities[0];
    let allowed: Vec<&str> = score.allow.iter().map(|a| a.code()).collect();
    assert_eq!(
        allowed,
        ["W002", "W004"],
        "the entity's own, then the file's"
    );
}

#[test]
fn unknown_codes_are_errors_with_a_did_you_mean() {
    let s = yaml("allow: [W0004]\n", "", ", allow: [w002]", ", allow: [W9]");
    let said: Vec<(&str, &str)> = s
        .diagnostics
        .iter()
        .map(|d| (d.code, d.message.as_str()))
        .collect();
    assert_eq!(
        said,
        [
            (
                "E010",
                "unknown lint `W0004`; expected `W001`, `W002`, `W003`, `W004`, `W005`, `W006`, `I001` or `I002`; did you mean `W004`?"
            ),
            (
                "E010",
                "unknown lint `w002`; expected `W001`, `W002`, `W003`, `W004`, `W005`, `W006`, `I001` or `I002`; did you mean `W002`?"
            ),
            (
                "E010",
                "unknown lint `W9`; expected `W001`, `W002`, `W003`, `W004`, `W005`, `W006`, `I001` or `I002`"
            ),
        ]
    );
    // Each is located at the code itself.
    let text = s.render_diagnostics(false);
    for at in ["game.yaml:3:9:", "game.yaml:9:60:", "game.yaml:11:37:"] {
        assert!(text.contains(at), "{at} in:\n{text}");
    }
}

#[test]
fn allow_round_trips_through_the_declared_form() {
    let s = yaml("allow: [W004]\n", "", ", allow: [W002]", ", allow: [W001]");
    let declared = kvmodel_build::declare::declare(&s.model).unwrap();
    assert!(declared.contains("allow(W004)"), "{declared}");
    assert!(
        declared.contains("order_by = points, allow(W002)"),
        "{declared}"
    );
    assert!(declared.contains("sum = points, allow(W001)"), "{declared}");
    let file = syn::parse_file(&declared).unwrap();
    let mut diags = kvmodel_codegen::Diagnostics::new();
    let read = kvmodel_build::declare::read(&file, &mut diags);
    assert!(diags.as_slice().is_empty(), "{:?}", diags.as_slice());
    assert_eq!(read, s.model);
}

#[test]
fn attributes_allow_on_the_struct_an_index_a_counter_or_a_field() {
    let source = |attrs: &str, field: &str| {
        format!(
            "#[derive(kvmodel::KvEnum)] pub enum Tier {{ Bronze, Gold }}\n#[derive(kvmodel::KvEntity)]\n#[kv(namespace = \"game\", key = \"score:{{id}}\")]\n{attrs}\npub struct Score {{ pub id: String, pub tier: Tier, {field} pub kind: bool, pub points: i64 }}\n"
        )
    };
    let load =
        |attrs: &str, field: &str| kvmodel_build::load_rust("score.rs", &source(attrs, field));
    let board = "#[kv(index(name = by_tier, fields(tier), order_by = points))]";
    let total = "#[kv(counter(name = total, sum = points))]";
    let kind = "#[kv(index)]";
    assert_eq!(
        codes(&load(&format!("{board}\n{total}"), kind)),
        ["W002", "W001", "W002"]
    );
    let s = load(&format!("{board}\n{total}"), kind);
    let help = s.diagnostics[0].help.as_deref().unwrap();
    assert!(help.ends_with("add `allow(W002)` to the index"), "{help}");
    assert_eq!(
        codes(&load(
            "#[kv(index(name = by_tier, fields(tier), order_by = points, allow(W002)))]\n#[kv(counter(name = total, sum = points, allow(W001)))]",
            "#[kv(index, allow(W002))]"
        )),
        Vec::<&str>::new()
    );
    assert_eq!(
        codes(&load(
            &format!("#[kv(allow(W001, W002))]\n{board}\n{total}"),
            kind
        )),
        Vec::<&str>::new()
    );
}

#[test]
fn allowing_a_lint_changes_nothing_stored() {
    let before = yaml("", "", "", "");
    let after = yaml(
        "allow: [W004]\n",
        "    allow: [W003]\n",
        ", allow: [W002]",
        ", allow: [W001]",
    );
    assert!(kvmodel_build::diff::diff(&before.model, &after.model).is_empty());
}

/// I001 is information: an entity that co-locates on a Redis Cluster but
/// keeps a claim or a counter in another slot is told which write paths
/// span slots, without counting as a warning or reaching a build script.
#[test]
fn cross_slot_writes_of_a_co_located_entity_are_information() {
    let source = |allow: &str, unique: &str| {
        format!(
            "kvmodel: 1\nnamespace: shop\nentities:\n  Order:\n    key: \"order:{{user_id}}:{{id}}\"\n    colocate: user_id\n{allow}    fields: {{ id: string, user_id: string, number: string, at: timestamp }}\n    indexes:\n      by_number: {{ fields: [{unique}], unique: true }}\n      by_user: {{ fields: [user_id], order_by: at }}\n    counters:\n      per_user: {{ group_by: [user_id] }}\n"
        )
    };
    let s = kvmodel_build::load("shop.yaml", &source("", "number"));
    assert_eq!(codes(&s), ["I001"]);
    let d = &s.diagnostics[0];
    assert_eq!(d.severity, kvmodel_build::Severity::Info);
    assert!(
        d.message
            .contains("its unique `by_number` lies in other slots")
            && d.message
                .contains("a create takes 5 sequential round trips"),
        "{}",
        d.message
    );
    assert!(!s.has_warnings());
    assert!(s.warning_lines().is_empty());
    assert!(
        s.render_diagnostics(false)
            .starts_with("shop.yaml:6:15: info[I001]: on a Redis Cluster, `Order`"),
        "{}",
        s.render_diagnostics(false)
    );
    // Everything derived from the co-location field shares the record's
    // slot: nothing to say.
    let home = kvmodel_build::load("shop.yaml", &source("", "user_id, number"));
    assert!(codes(&home).is_empty(), "{:?}", home.diagnostics);
    let allowed = kvmodel_build::load("shop.yaml", &source("    allow: [I001]\n", "number"));
    assert!(codes(&allowed).is_empty());
}

/// A link shortener's clicks: every click of one link adds to that link's
/// relation collection, counters and index collection. `{click}` is
/// spliced into the `Click` entity (a `colocate`, an `allow`), `{derived}`
/// after its derived keys.
fn clicks(click: &str, derived: &str) -> kvmodel_build::Schema {
    let source = format!(
        "kvmodel: 1\nnamespace: short\nentities:\n  Link:\n    key: \"link:{{id}}\"\n    fields: {{ id: string, url: string }}\n  Click:\n    key: \"click:{{link_id}}:{{id}}\"\n{click}    fields: {{ id: string, link_id: string, country: string, at: timestamp }}\n    relations:\n      link: {{ belongs_to: Link, by: link_id, order_by: at }}\n    indexes:\n      by_link_country: {{ fields: [link_id, country], order_by: at }}\n    counters:\n      per_link: {{ group_by: [link_id], shards: 16 }}\n      per_link_day: {{ group_by: [link_id, \"day(at)\"], shards: 16 }}\n{derived}"
    );
    kvmodel_build::load("short.yaml", &source)
}

/// I002 is information: the collections and counters all the clicks of
/// one link write lie in other slots than the clicks, so every create
/// takes the cross-slot commit on the same keys; `colocate: link_id`
/// brings them into the record's slot.
#[test]
fn hot_collections_of_one_parent_in_other_slots_are_information() {
    let s = clicks("", "");
    assert_eq!(codes(&s), ["I002"]);
    let d = &s.diagnostics[0];
    assert_eq!(d.severity, kvmodel_build::Severity::Info);
    assert_eq!(
        d.message,
        "on a Redis Cluster, `Click` keeps the relation `link`, index `by_link_country`, \
         counter `per_link` and counter `per_link_day` that all its records with the same \
         `link_id` write in other slots than those records, so every create takes the \
         cross-slot commit for them (5 sequential round trips instead of 3), as does an \
         update that moves one of them (5 instead of 3); the writers of a busy `link_id` all \
         take it on the same keys"
    );
    let help = d.help.as_deref().unwrap();
    assert!(
        help.starts_with("add `colocate: link_id`: a key shares the record's slot")
            && help.contains("a create, or an update that moves them, commits in one script")
            && help.ends_with("add `allow: [I002]` to the entity"),
        "{help}"
    );
    assert!(!s.has_warnings());
    assert!(s.warning_lines().is_empty());
    // At the key, which holds the field to co-locate by.
    assert!(
        s.render_diagnostics(false)
            .starts_with("short.yaml:8:10: info[I002]: on a Redis Cluster, `Click`"),
        "{}",
        s.render_diagnostics(false)
    );
    // Co-located, everything but the discovery set shares the record's
    // slot: nothing to say, neither I002 nor I001.
    let home = clicks("    colocate: link_id\n", "");
    assert!(codes(&home).is_empty(), "{:?}", home.diagnostics);
    let allowed = clicks("    allow: [I002]\n", "");
    assert!(codes(&allowed).is_empty(), "{:?}", allowed.diagnostics);
}

#[test]
fn hot_collections_need_a_parent_a_fix_and_a_gain() {
    // No collection shared by the records of one parent.
    let s = kvmodel_build::load(
        "short.yaml",
        "kvmodel: 1\nnamespace: short\nentities:\n  Visit:\n    key: \"visit:{site}:{id}\"\n    fields: { site: string, id: string, at: timestamp }\n    indexes:\n      by_day: { fields: [\"day(at)\"], order_by: at }\n    counters:\n      per_day: { group_by: [\"day(at)\"] }\n",
    );
    assert!(codes(&s).is_empty(), "{:?}", s.diagnostics);
    // The parent is not in the key: `colocate` could not name it (E120),
    // so there is no setting to suggest.
    let s = kvmodel_build::load(
        "short.yaml",
        "kvmodel: 1\nnamespace: short\nentities:\n  Link:\n    key: \"link:{id}\"\n    fields: { id: string }\n  Click:\n    key: \"click:{id}\"\n    fields: { id: string, link_id: string }\n    relations:\n      link: { belongs_to: Link, by: link_id }\n    counters:\n      per_link: { group_by: [link_id], shards: 16 }\n",
    );
    assert!(codes(&s).is_empty(), "{:?}", s.diagnostics);
    // An entity-wide counter keeps every create on the 4-step commit
    // whatever the tag, and nothing shared moves on update: co-locating
    // would gain nothing.
    let s = kvmodel_build::load(
        "social.yaml",
        "kvmodel: 1\nnamespace: social\nentities:\n  Like:\n    key: \"like:{post_id}:{user_id}\"\n    fields: { post_id: string, user_id: string }\n    counters:\n      per_post: { group_by: [post_id], shards: 16 }\n      total: { shards: 8 }\n",
    );
    assert!(codes(&s).is_empty(), "{:?}", s.diagnostics);
    // With it, an update that moves a shared entry still gains: only those
    // are named, and only that path.
    let s = clicks("", "      total: { shards: 8 }\n");
    assert_eq!(codes(&s), ["I002"]);
    let d = &s.diagnostics[0];
    assert!(
        d.message.starts_with(
            "on a Redis Cluster, `Click` keeps the relation `link`, index `by_link_country` and \
             counter `per_link_day` that all its records with the same `link_id` write in other \
             slots than those records, so an update that moves one of them takes the cross-slot \
             commit for them (5 sequential round trips instead of 3)"
        ),
        "{}",
        d.message
    );
    let help = d.help.as_deref().unwrap();
    assert!(
        help.contains("an update that moves them commits in one script there (counter `total` would still lie in other slots)"),
        "{help}"
    );
}

/// An entity co-located by another field, whose keys in the record's slot
/// all carry the parent's field too, is told to co-locate by the parent
/// instead, once (I002, not I001 as well); where that would move a key out
/// of the record's slot, I001 alone names what lies elsewhere.
#[test]
fn hot_collections_under_another_colocate_replace_i001() {
    let source = |tenant_counter: &str| {
        format!(
            "kvmodel: 1\nnamespace: short\nentities:\n  Click:\n    key: \"t:{{tenant}}:click:{{link_id}}:{{id}}\"\n    colocate: tenant\n    fields: {{ tenant: string, id: string, link_id: string }}\n    counters:\n      per_link: {{ group_by: [tenant, link_id], shards: 16 }}\n      per_link_only: {{ group_by: [link_id], shards: 16 }}\n{tenant_counter}"
        )
    };
    let s = kvmodel_build::load("short.yaml", &source(""));
    assert_eq!(codes(&s), ["I002"]);
    let d = &s.diagnostics[0];
    assert!(
        d.message.starts_with(
            "on a Redis Cluster, `Click` keeps the counter `per_link_only` that all its records with the same `link_id`"
        ),
        "{}",
        d.message
    );
    let help = d.help.as_deref().unwrap();
    assert!(
        help.starts_with("add `colocate: link_id` in place of `colocate: tenant`"),
        "{help}"
    );
    assert!(
        s.render_diagnostics(false)
            .starts_with("short.yaml:6:15: info[I002]"),
        "{}",
        s.render_diagnostics(false)
    );
    let s = kvmodel_build::load(
        "short.yaml",
        &source("      per_tenant: { group_by: [tenant] }\n"),
    );
    assert_eq!(codes(&s), ["I001"]);
    assert!(
        s.diagnostics[0]
            .message
            .contains("its counter `per_link_only` lies in other slots"),
        "{}",
        s.diagnostics[0].message
    );
}

/// Derive users get I002 from `kvmodel check` on their source, spelled as
/// attributes.
#[test]
fn attributes_get_hot_collections_with_the_attribute_fix() {
    let source = |attrs: &str| {
        format!(
            "#[derive(kvmodel::KvEntity)]\n#[kv(namespace = \"short\", key = \"click:{{link_id}}:{{id}}\"{attrs})]\n#[kv(counter(name = per_link, group_by(link_id), shards = 16))]\npub struct Click {{ pub id: String, pub link_id: String }}\n"
        )
    };
    let load = |attrs: &str| kvmodel_build::load_rust("click.rs", &source(attrs));
    let s = load("");
    assert_eq!(codes(&s), ["I002"]);
    let help = s.diagnostics[0].help.as_deref().unwrap();
    assert!(
        help.starts_with("add `colocate = link_id`: ")
            && help.ends_with("add `allow(I002)` to the entity"),
        "{help}"
    );
    assert!(codes(&load(", colocate = link_id")).is_empty());
    assert!(codes(&load(", allow(I002)")).is_empty());
}
