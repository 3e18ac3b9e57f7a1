//! Lowering of a schema's namespace-level `counters:`: standalone counters.

use kvmodel_codegen::ir::{KeyTemplate, Tally, TypeDef};
use kvmodel_codegen::origin::Sp;
use kvmodel_codegen::value::Value;
use kvmodel_codegen::vocab::{self, TALLY_KEYS};

use super::{Lower, Node};

impl Lower<'_> {
    /// The standalone counters of `counters:`.
    pub(super) fn tallies(
        &mut self,
        n: &Node,
        namespace: Option<&Sp<String>>,
        types: &[TypeDef],
    ) -> Vec<Tally> {
        let Value::Map(list) = &n.value else {
            self.wrong(n, "a mapping of counter names to counter declarations");
            return Vec::new();
        };
        list.iter()
            .map(|(name, body)| self.tally(name, body, namespace, types))
            .collect()
    }

    fn tally(
        &mut self,
        name: &Sp<String>,
        body: &Node,
        namespace: Option<&Sp<String>>,
        types: &[TypeDef],
    ) -> Tally {
        self.rule(
            vocab::upper_camel_case("counter", &name.value),
            &name.origin,
        );
        let mut t = Tally::new(name.clone(), syn::parse_quote!(pub));
        t.namespace = namespace.cloned();
        let known: Vec<&str> = TALLY_KEYS
            .iter()
            .copied()
            .chain(["fields", "description"])
            .collect();
        for (k, v) in self.entries(body, &known, &format!("counter `{}`", name.value)) {
            match k.value.as_str() {
                "key" => t.key = self.read().string(v, "`key`").map(KeyTemplate::new),
                "fields" => t.fields = self.fields(v, types, &mut t.broken_fields),
                "ttl" => t.ttl_ms = self.read().duration(v, "`ttl`"),
                "shards" => t.shards = self.read().bounded(v, "`shards`", 2, vocab::MAX_SHARDS),
                "description" => t.description = self.read().description(v),
                _ => {}
            }
        }
        t
    }
}
