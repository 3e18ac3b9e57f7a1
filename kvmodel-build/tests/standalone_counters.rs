//! A schema's namespace-level `counters:`: the declarations `generate`
//! writes for them and what `kvmodel keys` says of them. Update snapshots
//! with `INSTA_UPDATE=always cargo test`.

fn load() -> kvmodel_build::Schema {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/compiles/standalone_counters.yaml");
    let s = kvmodel_build::load_file(&path).unwrap();
    assert!(s.diagnostics.is_empty(), "{}", s.render_diagnostics(false));
    s
}

#[test]
fn counters_are_declared_as_kv_counter_structs() {
    let s = load();
    assert_eq!(s.model.tallies.len(), 3);
    let files = kvmodel_build::generate(&[s]).unwrap();
    insta::assert_snapshot!(files[0].contents);
}

#[test]
fn keys_lists_each_counter_with_its_shards_ttl_and_costs() {
    let model = load().model;
    let text = kvmodel_build::keys::report(&model, kvmodel_build::keys::Format::Text);
    // The example key is the one the runtime builds.
    assert!(
        text.contains("site:views#tally:{page-1:2026-01-01}"),
        "{text}"
    );
    let md = kvmodel_build::keys::report(&model, kvmodel_build::keys::Format::Markdown);
    insta::assert_snapshot!(format!("{text}\n----- markdown -----\n{md}"));
}

/// The counters `standalone_counters.yaml` declares, as their author would
/// write them with the derive: only the attributes `KvCounter` reads.
const DERIVED: &str = r#"
/// Page views per page and day.
#[derive(Debug, Clone, KvCounter)]
#[kv(namespace = "site", key = "views:{page}:{day}", ttl = "2d", shards = 4)]
pub struct PageViews {
    pub page: String,
    pub day: Date,
}

#[derive(KvCounter)]
#[kv(namespace = "site", key = "votes:{by}:{n}:{on}:{id}:{state}")]
pub struct Votes {
    pub by: String,
    pub n: i64,
    pub on: bool,
    pub id: Uuid,
    pub state: State,
}

#[derive(KvCounter)]
#[kv(namespace = "site", key = "total")]
pub struct Total {}
"#;

/// The public items of an expansion: each type and the `pub` functions of
/// its inherent impls.
fn surface(expansion: &proc_macro2::TokenStream) -> String {
    let file: syn::File = syn::parse2(expansion.clone()).unwrap();
    let mut out = Vec::new();
    for item in &file.items {
        match item {
            syn::Item::Struct(s) => out.push(format!("struct {}", s.ident)),
            syn::Item::Impl(i) if i.trait_.is_none() => {
                let ty = &i.self_ty;
                let fns: Vec<String> = i
                    .items
                    .iter()
                    .filter_map(|it| match it {
                        syn::ImplItem::Fn(f) if matches!(f.vis, syn::Visibility::Public(_)) => {
                            Some(f.sig.ident.to_string())
                        }
                        syn::ImplItem::Const(c) if matches!(c.vis, syn::Visibility::Public(_)) => {
                            Some(c.ident.to_string())
                        }
                        _ => None,
                    })
                    .collect();
                out.push(format!("impl {}: {}", quote::quote!(#ty), fns.join(", ")));
            }
            syn::Item::Impl(i) => {
                let (path, _) = i.trait_.as_ref().unwrap();
                let ty = &i.self_ty;
                out.push(format!(
                    "impl {} for {}",
                    quote::quote!(#path),
                    quote::quote!(#ty)
                ));
            }
            _ => {}
        }
    }
    out.join("\n")
}

/// A counter of a schema's `counters:` and the same counter written with
/// `#[derive(KvCounter)]` generate the very same items (the schema's
/// declaration is a struct deriving `KvCounter`, whatever else it derives):
/// `X::key`, `X::counter` and the handle `XCounter` with `new`, `store`,
/// `incr`, `get` and `reset`, in both.
#[test]
fn schema_and_derive_counters_generate_one_surface() {
    let files = kvmodel_build::generate(&[load()]).unwrap();
    let declared: syn::File = syn::parse_str(&files[0].contents).unwrap();
    let derived: syn::File = syn::parse_str(DERIVED).unwrap();
    let counters = |f: &syn::File| -> Vec<syn::ItemStruct> {
        f.items
            .iter()
            .filter_map(|i| match i {
                syn::Item::Struct(s)
                    if s.attrs.iter().any(|a| {
                        a.path().is_ident("derive")
                            && quote::quote!(#a).to_string().contains("KvCounter")
                    }) =>
                {
                    Some(s.clone())
                }
                _ => None,
            })
            .collect()
    };
    let (declared, derived) = (counters(&declared), counters(&derived));
    assert_eq!(declared.len(), 3);
    assert_eq!(declared.len(), derived.len());
    let mut surfaces = Vec::new();
    for (y, d) in declared.iter().zip(&derived) {
        assert_eq!(y.ident, d.ident);
        let from_schema = kvmodel_codegen::derive_counter(quote::quote!(#y));
        let from_derive = kvmodel_codegen::derive_counter(quote::quote!(#d));
        assert!(
            !from_schema.to_string().contains("compile_error"),
            "{from_schema}"
        );
        assert_eq!(
            from_schema.to_string(),
            from_derive.to_string(),
            "`{}`: the schema's counter expands as the derived one",
            y.ident
        );
        surfaces.push(surface(&from_schema));
    }
    insta::assert_snapshot!(surfaces.join("\n\n"));
}
