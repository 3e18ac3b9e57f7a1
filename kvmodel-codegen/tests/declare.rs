//! The declared form, side by side: what the reader takes from
//! declarations, the printer writes back the same way.

use kvmodel_codegen::Diagnostics;
use kvmodel_codegen::declare::{print, read};

const SOURCE: &str = r#"
/// Where an order stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, KvEnum)]
pub enum State { Open, OnHold }

/// An order.
///
/// Kept for years.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, KvEntity)]
#[kv(namespace = "shop", key = "order:{id}", version = 3, encoding = "msgpack")]
#[kv(ttl = "90d", ttl_jitter = "2.5%")]
/// Orders of one state.
#[kv(index(name = "by_state", fields(state), order_by = day(at), since = 2))]
#[kv(counter(name = per_state, group_by(state, hour(at))), counter(name = total))]
/// Orders of a customer.
#[kv(relation(name = customer, belongs_to = Customer, by = customer, order_by = "at"))]
#[kv(migration(from = 1, rename(r#type = kind), add(state = "open"), add(lines = [{ sku = "a", n = -2 }, { "unit price": 1.5 }])))]
#[kv(migration(from = 2, add(note = None), add(meta = {}), remove(legacy, r#ref)))]
pub struct Order {
    /// The id.
    pub id: String,
    pub customer: String,
    pub state: State,
    pub at: Timestamp,
    #[kv(unique, normalize = "lowercase", name = by_kind)]
    pub kind: String,
}
"#;

fn read_str(source: &str) -> kvmodel_codegen::ir::Model {
    let file = syn::parse_file(source).unwrap();
    let mut diags = Diagnostics::new();
    let model = read(&file, &mut diags);
    assert!(diags.as_slice().is_empty(), "{:?}", diags.as_slice());
    model
}

#[test]
fn what_is_read_prints_back_the_same() {
    let model = read_str(SOURCE);
    let e = &model.entities[0];
    assert_eq!(
        e.description.as_deref(),
        Some("An order.\n\nKept for years.")
    );
    assert_eq!(
        e.indexes[0].description.as_deref(),
        Some("Orders of one state.")
    );
    assert_eq!(e.indexes[1].description, None, "a field's index");
    assert_eq!(e.counters.len(), 2);
    assert_eq!(
        e.relations[0].description.as_deref(),
        Some("Orders of a customer.")
    );
    assert_eq!(e.fields[0].description.as_deref(), Some("The id."));
    let lines = &e.migrations[0].add[1].1.value;
    assert_eq!(
        lines.to_string(),
        r#"[{"n":-2,"sku":"a"},{"unit price":1.5}]"#
    );
    let printed = print(&model).unwrap();
    let again = syn::File {
        shebang: None,
        frontmatter: None,
        attrs: Vec::new(),
        items: printed,
    };
    let again = read_str(&quote::ToTokens::to_token_stream(&again).to_string());
    assert_eq!(again, model);
}

#[test]
fn bare_and_quoted_names_are_one_name() {
    let quoted = SOURCE
        .replace("name = per_state", "name = \"per_state\"")
        .replace("name = customer", "name = \"customer\"")
        .replace("by = customer", "by = \"customer\"");
    assert_eq!(read_str(&quoted), read_str(SOURCE));
}
