//! One vocabulary for both front-ends: the same mistake, written in YAML and
//! in `#[kv(…)]` attributes, gets the same code and the same words.

use kvmodel_codegen::Diagnostics;

/// `(code, message)` of every diagnostic, sorted.
type Said = Vec<(&'static str, String)>;

fn from_yaml(entity: &str) -> Said {
    let source = format!("kvmodel: 1\nnamespace: shop\nentities:\n  User:\n{entity}");
    let schema = kvmodel_build::load("case.yaml", &source);
    let mut said: Said = schema
        .diagnostics
        .into_iter()
        .map(|d| (d.code, d.message))
        .collect();
    said.sort();
    said
}

fn from_attributes(attrs: &str) -> Said {
    let source = format!(
        "{attrs}\npub struct User {{ pub id: String, pub email: String, pub at: Timestamp }}"
    );
    let input: syn::DeriveInput = syn::parse_str(&source).unwrap();
    let mut diags = Diagnostics::new();
    let entity = kvmodel_codegen::attr::parse_derive(&input, &mut diags).unwrap();
    kvmodel_codegen::check::check_entity(&entity, None, &mut diags);
    let mut said: Said = diags
        .into_vec()
        .into_iter()
        .map(|d| (d.code, d.message))
        .collect();
    said.sort();
    said
}

const FIELDS: &str = "    fields: { id: string, email: string, at: timestamp }\n";

#[track_caller]
fn same(yaml: &str, attrs: &str) {
    let y = from_yaml(&format!("    key: \"user:{{id}}\"\n{FIELDS}{yaml}"));
    let a = from_attributes(&format!(
        "#[kv(namespace = \"shop\", key = \"user:{{id}}\")]\n{attrs}"
    ));
    assert!(!y.is_empty(), "the case must be a mistake");
    assert_eq!(y, a);
}

#[test]
fn encodings() {
    same("    encoding: jsn\n", "#[kv(encoding = \"jsn\")]");
}

#[test]
fn normalizations() {
    same(
        "    indexes: { by_email: { fields: [email], unique: true, normalize: upper } }\n",
        "#[kv(index(name = \"by_email\", fields(email), unique, normalize = \"upper\"))]",
    );
}

#[test]
fn time_buckets() {
    same(
        "    counters: { per_week: { group_by: [\"week(at)\"] } }\n",
        "#[kv(counter(name = \"per_week\", group_by(week(at))))]",
    );
    same(
        "    counters: { per_day: { group_by: [\"day(at\"] } }\n",
        "#[kv(counter(name = \"per_day\", group_by(\"day(at\")))]",
    );
}

#[test]
fn durations_and_jitters() {
    same(
        "    ttl: { after: 30 minutes, jitter: 150% }\n",
        "#[kv(ttl = \"30 minutes\", ttl_jitter = \"150%\")]",
    );
}

#[test]
fn version_numbers() {
    same("    version: two\n", "#[kv(version = \"two\")]");
    same("    version: 0\n", "#[kv(version = 0)]");
    same("    version: -1\n", "#[kv(version = -1)]");
    same(
        "    counters: { total: { since: 0 } }\n",
        "#[kv(counter(name = \"total\", since = 0))]",
    );
}

#[test]
fn unknown_keys() {
    same(
        "    indexes: { by_email: { fields: [email], uniq: true } }\n",
        "#[kv(index(name = \"by_email\", fields(email), uniq))]",
    );
}

#[test]
fn missing_keys() {
    same(
        "    relations: { owner: { belongs_to: User } }\n",
        "#[kv(relation(name = \"owner\", belongs_to = User))]",
    );
    same(
        "    version: 2\n    migrations: [{ rename: { a: b } }]\n",
        "#[kv(version = 2, migration(rename(a = b)))]",
    );
}

#[test]
fn names() {
    same(
        "    indexes: { ByEmail: { fields: [email] } }\n",
        "#[kv(index(name = \"ByEmail\", fields(email)))]",
    );
    same(
        "    indexes: { self: { fields: [email] } }\n",
        "#[kv(index(name = \"self\", fields(email)))]",
    );
}

#[test]
fn values_of_the_wrong_kind() {
    same("    colocate: [id]\n", "#[kv(colocate = [id])]");
}

/// A message that shows how to write something shows it in the syntax of
/// the front-end the mistake came from.
#[test]
fn advice_speaks_the_front_end_syntax() {
    let y = from_yaml(&format!(
        "    key: \"user:{{id}}\"\n{FIELDS}    indexes: {{ by_none: {{ fields: [] }}, by_at: {{ fields: [at], since: 3 }} }}\n"
    ));
    let a = from_attributes(
        "#[kv(namespace = \"shop\", key = \"user:{id}\")]\n#[kv(index(name = by_none, fields()))]\n#[kv(index(name = by_at, fields(at), since = 3))]",
    );
    let said = |s: &Said, code: &str| -> Vec<String> {
        s.iter()
            .filter(|(c, _)| *c == code)
            .map(|(_, m)| m.clone())
            .collect()
    };
    assert_eq!(
        said(&y, "E107"),
        ["the index `by_none` has no fields; add `fields: […]`"]
    );
    assert_eq!(
        said(&a, "E107"),
        ["the index `by_none` has no fields; add `fields(…)`"]
    );
    assert_eq!(
        said(&y, "E119"),
        ["`since: 3` must be between 1 and the entity's version 1"]
    );
    assert_eq!(
        said(&a, "E119"),
        ["`since = 3` must be between 1 and the entity's version 1"]
    );
}

#[test]
fn articles_fit_the_word() {
    use kvmodel_codegen::vocab::a;
    for (word, with) in [
        ("index", "an index"),
        ("counter", "a counter"),
        ("relation", "a relation"),
        ("`Order`", "an `Order`"),
        ("`User`", "a `User`"),
        ("`Upload`", "an `Upload`"),
        ("`Event`", "an `Event`"),
        ("uuid", "a uuid"),
        ("u32", "a u32"),
        ("i64", "an i64"),
        ("unique index", "a unique index"),
    ] {
        assert_eq!(a(word), with);
    }
}

/// The front ends refuse a `max_size` the runtime could never apply: both
/// know the same store-wide limit.
#[test]
fn the_record_size_limit_is_the_runtimes() {
    assert_eq!(
        kvmodel_codegen::vocab::MAX_RECORD_SIZE,
        kvmodel_runtime::__private::record::MAX_RECORD_BYTES as u64
    );
}

#[test]
fn sizes() {
    same(
        "    max_size: 256 kilobytes\n",
        "#[kv(max_size = \"256 kilobytes\")]",
    );
    same("    max_size: 0B\n", "#[kv(max_size = 0)]");
    same("    max_size: 1GiB\n", "#[kv(max_size = \"1GiB\")]");
    same("    max_size: [1KiB]\n", "#[kv(max_size = [\"1KiB\"])]");
}

#[test]
fn lint_codes() {
    same(
        "    allow: [W0002]\n    indexes: { by_email: { fields: [email], allow: [w001] } }\n",
        "#[kv(allow(W0002))]\n#[kv(index(name = \"by_email\", fields(email), allow(w001)))]",
    );
}
