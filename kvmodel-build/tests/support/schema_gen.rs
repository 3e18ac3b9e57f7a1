//! A seeded generator of schema files that mixes ordinary names with
//! adversarial ones: Rust keywords of every edition, prelude and runtime
//! names, the names of generated items and parameters, long names, and now
//! and then a name or a construct no rule allows. It writes YAML text, so
//! every schema goes through the whole front-end. Schemas are mostly built
//! to be accepted (distinct names, key fields that can be keys, sortable
//! orderings); `check` has the last word.

/// A small deterministic generator (SplitMix64): the same seed gives the
/// same schemas on every machine.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// True with probability `percent`/100.
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Ordinary field, index and counter names, many of them the names of
/// generated parameters, key builders and methods.
const SNAKE: &[&str] = &[
    "id",
    "name",
    "at",
    "score",
    "status",
    "email",
    "kind",
    "owner",
    "tags",
    "day",
    "hour",
    "month",
    "page",
    "f",
    "value",
    "values",
    "ids",
    "limit",
    "store",
    "engine",
    "key",
    "version",
    "record",
    "all",
    "new",
    "get",
    "relation_x",
    "counter_c",
    "relation_by_x",
    "counter_total",
    "by_x",
    "find_by_x",
    "x",
    "v0",
    "a_b",
    "b",
    "by_status",
    "total",
    "day_at",
    "hour_at",
    "month_at",
    "page_size",
    "on_progress",
    "k0",
    "s",
    "n",
    "y",
    "on",
    "no",
];

/// Rust keywords of every edition and reserved words: fine as names, written
/// raw (`r#type`) where they become identifiers.
const KEYWORDS: &[&str] = &[
    "type",
    "fn",
    "mod",
    "async",
    "await",
    "dyn",
    "try",
    "gen",
    "match",
    "loop",
    "ref",
    "box",
    "yield",
    "abstract",
    "macro",
    "union",
    "static",
    "let",
    "where",
    "impl",
    "in",
    "as",
    "use",
    "pub",
    "move",
    "return",
    "struct",
    "enum",
    "trait",
    "true",
    "false",
    "unsafe",
    "const",
    "extern",
    "final",
    "override",
    "priv",
    "typeof",
    "unsized",
    "virtual",
    "become",
    "do",
    "raw",
    "safe",
    "default",
    "auto",
    "macro_rules",
    "while",
    "for",
    "if",
    "else",
    "mut",
    "break",
    "continue",
];

/// Names no rule allows: Rust refuses them even raw, or they break the case
/// rule.
const REFUSED: &[&str] = &[
    "self",
    "super",
    "crate",
    "_",
    "naïve",
    "camelCase",
    "with space",
    "1abc",
    "_x",
    "a-b",
    "",
    "r#type",
];

/// Type and entity names: ordinary ones, prelude and runtime names, names of
/// generated items and of generic parameters.
const CAMEL: &[&str] = &[
    "User",
    "Thing",
    "Node",
    "Item",
    "ThingA",
    "Order",
    "Tree",
    "Result",
    "Some",
    "None",
    "Ok",
    "Err",
    "S",
    "F",
    "X",
    "T",
    "K",
    "B",
    "V",
    "Store",
    "Page",
    "PageRequest",
    "Error",
    "Entity",
    "Engine",
    "Default",
    "Clone",
    "Send",
    "Sync",
    "Copy",
    "Debug",
    "Hash",
    "Fn",
    "Drop",
    "Iterator",
    "ThingRepo",
    "ThingKeys",
    "UserRepo",
    "UserKeys",
    "NodeRepo",
    "HashMap",
    "Serialize",
    "Deserialize",
    "KvEntity",
    "KvEnum",
    "Versioned",
    "Facts",
    "Cursor",
    "Progress",
    "Drift",
    "Sweep",
    "Unordered",
    "PhantomData",
    "Sized",
    "Into",
    "From",
    "AsRef",
    "ToString",
    "Kvmodel",
    "Core",
    "Std",
    "Serde",
    "Segments",
    "KeyBuilder",
    "Derived",
    "Ttl",
    "Encoding",
    "Value",
];

/// Type names the declarations use for fields, refused, and names that
/// break the case rule.
const CAMEL_REFUSED: &[&str] = &[
    "String",
    "Option",
    "Vec",
    "Box",
    "BTreeMap",
    "Timestamp",
    "Date",
    "Uuid",
    "Self",
    "Über",
    "AB",
    "lower",
];

/// Enum variants, including words that are keywords in their snake form.
const VARIANTS: &[&str] = &[
    "a", "b", "c", "active", "on_hold", "type", "none", "some", "ok", "err", "fn", "x1", "mod",
    "self_", "super_", "gen", "on", "n", "a_1", "r#a", "move", "async",
];

/// String values of defaults and migrations.
const STRINGS: &[&str] = &["x", "", "a b", "é", "\"q\""];
const LITERALS: &[&str] = &[
    "thing", "user", "node", "a", "b", "item", "order", "t-1", "x_y",
];
const NAMESPACES: &[&str] = &["t", "app", "my-ns", "a1", "kv"];
const SCALARS: &[&str] = &[
    "string",
    "bool",
    "i32",
    "i64",
    "u32",
    "u64",
    "f64",
    "bytes",
    "timestamp",
    "date",
    "uuid",
];
const KEYABLE: &[&str] = &["string", "i64", "u64", "u32", "i32", "uuid", "bool", "date"];

/// A YAML double-quoted string.
fn q(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[derive(Clone)]
struct TypeInfo {
    name: String,
    /// Variants of an enum; `None` for a struct.
    variants: Option<Vec<String>>,
}

struct FieldInfo {
    name: String,
    ty: String,
    optional: bool,
}

struct Gen<'r> {
    rng: &'r mut Rng,
    out: String,
    types: Vec<TypeInfo>,
    /// The entity being written is encoded with protobuf: its fields are
    /// mostly of types protobuf holds (scalars, enums, flat lists and maps).
    protobuf: bool,
}

impl Gen<'_> {
    fn line(&mut self, indent: usize, text: &str) {
        self.out.push_str(&" ".repeat(indent));
        self.out.push_str(text);
        self.out.push('\n');
    }

    /// A snake_case name not in `taken` (most of the time).
    fn snake(&mut self, taken: &[String]) -> String {
        for _ in 0..20 {
            let r = self.rng.below(1000);
            let name = if r < 600 {
                self.rng.pick(SNAKE).to_string()
            } else if r < 950 {
                self.rng.pick(KEYWORDS).to_string()
            } else if r < 970 {
                self.rng.pick(REFUSED).to_string()
            } else {
                format!("f{}", "o".repeat(self.rng.below(200) + 40))
            };
            if !taken.contains(&name) || self.rng.chance(1) {
                return name;
            }
        }
        format!("z{}", taken.len())
    }

    fn camel(&mut self, taken: &[String]) -> String {
        for _ in 0..20 {
            let r = self.rng.below(1000);
            let name = if r < 940 {
                self.rng.pick(CAMEL).to_string()
            } else if r < 970 {
                self.rng.pick(CAMEL_REFUSED).to_string()
            } else {
                format!("L{}", "o".repeat(self.rng.below(200) + 40))
            };
            if !taken.contains(&name) || self.rng.chance(1) {
                return name;
            }
        }
        format!("Z{}", taken.len())
    }

    fn enum_named(&self, name: &str) -> Option<&TypeInfo> {
        self.types
            .iter()
            .find(|t| t.name == name && t.variants.is_some())
    }

    /// Whether a field of this type can be a key component.
    fn keyable(&self, ty: &str) -> bool {
        KEYABLE.contains(&ty) || ty == "timestamp" || self.enum_named(ty).is_some()
    }

    /// Whether a field of this type can order a listing.
    fn sortable(&self, ty: &str) -> bool {
        self.keyable(ty) || ty == "f64"
    }

    /// A field type: scalars, lists, maps and the declared types.
    fn field_type(&mut self, depth: usize) -> String {
        let r = self.rng.below(100);
        // Now and then a protobuf entity gets a type it cannot hold (E145,
        // E146), which `check` refuses.
        let flat = self.protobuf && !self.rng.chance(3);
        if r < 60 || depth > 2 || (flat && depth > 0) {
            self.rng.pick(SCALARS).to_string()
        } else if r < 72 {
            format!("list<{}>", self.field_type(depth + 1))
        } else if r < 80 {
            format!("map<string, {}>", self.field_type(depth + 1))
        } else if !self.types.is_empty() {
            let i = self.rng.below(self.types.len());
            if flat && self.types[i].variants.is_none() {
                return "string".to_owned();
            }
            self.types[i].name.clone()
        } else {
            "string".to_owned()
        }
    }

    /// A value of `ty` for a default or a migration's `add`.
    fn value(&mut self, ty: &str) -> Option<String> {
        Some(match ty {
            "string" => {
                let v = self.rng.pick(STRINGS).to_string();
                q(&v)
            }
            "bool" => self.rng.pick(&["true", "false"]).to_string(),
            "i32" | "i64" => self.rng.pick(&["0", "-5", "7"]).to_string(),
            "u32" | "u64" => self.rng.pick(&["0", "9"]).to_string(),
            "f64" => self.rng.pick(&["0.5", "-1.25", "3"]).to_string(),
            t if t.starts_with("list<") => "[]".to_owned(),
            t => {
                let variants = self.enum_named(t)?.variants.clone()?;
                let v: &String = self.rng.pick(&variants);
                q(v)
            }
        })
    }

    /// Writes `fields:` with `fixed` first, then a few more; `own` is the
    /// struct being declared, which its fields may hold (recursion).
    fn fields(
        &mut self,
        indent: usize,
        own: Option<&str>,
        fixed: Vec<FieldInfo>,
    ) -> Vec<FieldInfo> {
        let mut fields = fixed;
        for _ in 0..self.rng.below(5) + usize::from(own.is_some()) {
            let taken: Vec<String> = fields.iter().map(|f| f.name.clone()).collect();
            let name = self.snake(&taken);
            let ty = match own {
                Some(own) if self.rng.chance(25) => match self.rng.below(5) {
                    0 => format!("list<{own}>"),
                    1 => format!("map<string, {own}>"),
                    _ => own.to_owned(),
                },
                _ if self.rng.chance(15) => "timestamp".to_owned(),
                _ => self.field_type(0),
            };
            // A struct that holds itself is optional, but now and then not.
            let optional = self.rng.chance(20) || (Some(ty.as_str()) == own && self.rng.chance(90));
            // Protobuf has no optional list or map.
            let optional = optional
                && !(self.protobuf
                    && (ty.starts_with("list<") || ty.starts_with("map<"))
                    && !self.rng.chance(3));
            fields.push(FieldInfo { name, ty, optional });
        }
        self.line(indent, "fields:");
        for f in &fields {
            let (name, ty, optional) = (&f.name, &f.ty, f.optional);
            let mut parts = vec![format!("type: {}", q(ty))];
            if optional {
                parts.push("optional: true".to_owned());
            }
            if self.rng.chance(15) {
                let v = if optional && self.rng.chance(30) {
                    Some("null".to_owned())
                } else {
                    self.value(ty)
                };
                if let Some(v) = v {
                    parts.push(format!("default: {v}"));
                }
            }
            if self.rng.chance(5) {
                parts.push(format!("description: {}", q("A field.\n\nWith `code`.")));
            }
            self.line(
                indent + 2,
                &format!("{}: {{ {} }}", q(name), parts.join(", ")),
            );
        }
        fields
    }

    fn declare_types(&mut self) {
        let n = self.rng.below(4);
        if n == 0 {
            return;
        }
        self.line(0, "types:");
        for _ in 0..n {
            let taken: Vec<String> = self.types.iter().map(|t| t.name.clone()).collect();
            let name = self.camel(&taken);
            self.line(2, &format!("{}:", q(&name)));
            if self.rng.chance(55) {
                let mut variants: Vec<String> = Vec::new();
                for _ in 0..self.rng.below(4) + 1 {
                    let v = self.rng.pick(VARIANTS).to_string();
                    if !variants.contains(&v) || self.rng.chance(5) {
                        variants.push(v);
                    }
                }
                let list: Vec<String> = variants.iter().map(|v| q(v)).collect();
                self.line(4, &format!("enum: [{}]", list.join(", ")));
                self.types.push(TypeInfo {
                    name,
                    variants: Some(variants),
                });
            } else {
                self.fields(4, Some(&name), Vec::new());
                self.types.push(TypeInfo {
                    name,
                    variants: None,
                });
            }
        }
    }

    /// A `group_by` or `order_by` item of a field that `fits`: the field,
    /// or a bucket of a timestamp field.
    fn expr(&mut self, fields: &[FieldInfo], fits: impl Fn(&Self, &str) -> bool) -> Option<String> {
        let fitting: Vec<&FieldInfo> = fields.iter().filter(|f| fits(self, &f.ty)).collect();
        if fitting.is_empty() {
            return None;
        }
        let f = fitting[self.rng.below(fitting.len())];
        Some(if f.ty == "timestamp" && self.rng.chance(60) {
            format!("{}({})", self.rng.pick(&["hour", "day", "month"]), f.name)
        } else {
            f.name.clone()
        })
    }

    fn entity(&mut self, names: &[String], which: usize, literal: &str) {
        self.line(2, &format!("{}:", q(&names[which])));
        // Key fields: types that can be keys.
        let mut key_fields: Vec<FieldInfo> = Vec::new();
        for _ in 0..self.rng.below(2) + 1 {
            let enums: Vec<String> = self
                .types
                .iter()
                .filter(|t| t.variants.is_some())
                .map(|t| t.name.clone())
                .collect();
            let ty = if !enums.is_empty() && self.rng.chance(15) {
                self.rng.pick(&enums).clone()
            } else {
                self.rng.pick(KEYABLE).to_string()
            };
            let taken: Vec<String> = key_fields.iter().map(|f| f.name.clone()).collect();
            let name = self.snake(&taken);
            key_fields.push(FieldInfo {
                name,
                ty,
                optional: false,
            });
        }
        let mut key = literal.to_owned();
        for f in &key_fields {
            key.push_str(&format!(":{{{}}}", f.name));
        }
        self.line(4, &format!("key: {}", q(&key)));
        let version = if self.rng.chance(30) {
            self.rng.below(3) + 2
        } else {
            1
        };
        if version > 1 {
            self.line(4, &format!("version: {version}"));
        }
        self.protobuf = false;
        if self.rng.chance(25) {
            if self.rng.chance(40) {
                self.protobuf = true;
                self.line(4, "encoding: protobuf");
            } else {
                self.line(4, "encoding: msgpack");
            }
        }
        if self.rng.chance(15) {
            self.line(4, "ttl: { after: 30m, jitter: 10% }");
        }
        if self.rng.chance(10) {
            let c = key_fields[self.rng.below(key_fields.len())].name.clone();
            self.line(4, &format!("colocate: {}", q(&c)));
        }
        if self.rng.chance(5) {
            self.line(4, &format!("description: {}", q("An entity.")));
        }
        let mut limit = 64 << 20;
        if self.rng.chance(15) {
            let (size, bytes) = *self.rng.pick(&[
                ("1B", 1),
                ("512", 512),
                ("64KiB", 64 << 10),
                ("1MiB", 1 << 20),
                ("64MiB", 64 << 20),
            ]);
            limit = bytes;
            self.line(4, &format!("max_size: {size}"));
        }
        if self.rng.chance(15) {
            // A threshold a record can reach: at most the limit.
            let codec = *self.rng.pick(&["lz4", "zstd"]);
            let (above, bytes) = *self.rng.pick(&[
                ("0B", 0),
                ("1B", 1),
                ("512", 512),
                ("1KiB", 1 << 10),
                ("64KiB", 64 << 10),
            ]);
            let above = if bytes <= limit {
                above.to_owned()
            } else {
                limit.to_string()
            };
            self.line(
                4,
                &format!("compress: {{ codec: {codec}, above: {above} }}"),
            );
        }
        let fields = self.fields(4, None, key_fields);
        let since = |g: &mut Gen<'_>| {
            if version > 1 && g.rng.chance(40) {
                format!(", since: {}", g.rng.below(version) + 1)
            } else {
                String::new()
            }
        };
        let keyable: Vec<usize> = (0..fields.len())
            .filter(|&i| self.keyable(&fields[i].ty))
            .collect();
        let indexes = self.rng.below(4);
        if indexes > 0 {
            self.line(4, "indexes:");
        }
        let mut ix_names: Vec<String> = Vec::new();
        for _ in 0..indexes {
            let mut chosen: Vec<usize> = Vec::new();
            for _ in 0..self.rng.below(2) + 1 {
                let i = *self.rng.pick(&keyable);
                if !chosen.contains(&i) {
                    chosen.push(i);
                }
            }
            let ix_name = if self.rng.chance(50) {
                self.snake(&ix_names)
            } else {
                format!("by_{}", fields[chosen[0]].name)
            };
            ix_names.push(ix_name.clone());
            // A timestamp field is often a time bucket: one collection or
            // claim per hour, day or month.
            let list: Vec<String> = chosen
                .iter()
                .map(|&i| {
                    let f = &fields[i];
                    if f.ty == "timestamp" && self.rng.chance(40) {
                        q(&format!(
                            "{}({})",
                            self.rng.pick(&["hour", "day", "month"]),
                            f.name
                        ))
                    } else {
                        q(&f.name)
                    }
                })
                .collect();
            let mut parts = vec![format!("fields: [{}]", list.join(", "))];
            if self.rng.chance(35) {
                parts.push("unique: true".to_owned());
                if chosen.iter().all(|&i| fields[i].ty == "string") && self.rng.chance(50) {
                    parts.push("normalize: lowercase".to_owned());
                }
            } else if self.rng.chance(60) {
                if let Some(o) = self.expr(&fields, |g, t| g.sortable(t)) {
                    parts.push(format!("order_by: {}", q(&o)));
                }
                if self.rng.chance(20) {
                    parts.push(format!("keep: {}", *self.rng.pick(&[1, 100, 1_000_000])));
                }
            }
            let s = since(self);
            self.line(
                6,
                &format!("{}: {{ {}{s} }}", q(&ix_name), parts.join(", ")),
            );
        }
        let counters = self.rng.below(3);
        if counters > 0 {
            self.line(4, "counters:");
        }
        let mut c_names: Vec<String> = Vec::new();
        for _ in 0..counters {
            let c_name = self.snake(&c_names);
            c_names.push(c_name.clone());
            let mut parts = Vec::new();
            let mut groups: Vec<String> = Vec::new();
            for _ in 0..self.rng.below(3) {
                if let Some(g) = self.expr(&fields, |g, t| g.keyable(t)) {
                    if !groups.contains(&g) || self.rng.chance(5) {
                        groups.push(g);
                    }
                }
            }
            if !groups.is_empty() {
                let list: Vec<String> = groups.iter().map(|g| q(g)).collect();
                parts.push(format!("group_by: [{}]", list.join(", ")));
            }
            let ints: Vec<String> = fields
                .iter()
                .filter(|f| matches!(f.ty.as_str(), "i32" | "i64" | "u32" | "u64"))
                .map(|f| f.name.clone())
                .collect();
            if !ints.is_empty() && self.rng.chance(30) {
                let sum: &String = self.rng.pick(&ints);
                parts.push(format!("sum: {}", q(sum)));
            }
            if self.rng.chance(15) {
                let shards = *self.rng.pick(&[2, 16, 1024]);
                parts.push(format!("shards: {shards}"));
            }
            let s = since(self);
            let body = parts.join(", ");
            let s = if body.is_empty() {
                s.trim_start_matches(", ").to_owned()
            } else {
                s
            };
            self.line(6, &format!("{}: {{ {body}{s} }}", q(&c_name)));
        }
        if self.rng.chance(30) {
            self.line(4, "relations:");
            let parent = self.rng.pick(names).clone();
            let by = fields[*self.rng.pick(&keyable)].name.clone();
            let mut parts = vec![
                format!("belongs_to: {}", q(&parent)),
                format!("by: {}", q(&by)),
            ];
            if self.rng.chance(50) {
                if let Some(o) = self.expr(&fields, |g, t| g.sortable(t)) {
                    parts.push(format!("order_by: {}", q(&o)));
                }
            }
            if self.rng.chance(20) {
                parts.push("keep: 1000".to_owned());
            }
            if self.rng.chance(40) {
                let action = *self.rng.pick(&["keep", "restrict", "cascade"]);
                parts.push(format!("on_delete: {action}"));
            }
            let r_name = self.snake(&[]);
            let s = since(self);
            self.line(6, &format!("{}: {{ {}{s} }}", q(&r_name), parts.join(", ")));
        }
        if self.rng.chance(20) {
            self.line(4, "links:");
            let to = self.rng.pick(names).clone();
            let (l_name, inverse) = (self.snake(&[]), self.snake(&[]));
            self.line(
                6,
                &format!(
                    "{}: {{ to: {}, inverse: {} }}",
                    q(&l_name),
                    q(&to),
                    q(&inverse)
                ),
            );
        }
        if version > 1 {
            self.line(4, "migrations:");
            for from in 1..version {
                self.line(6, &format!("- from: {from}"));
                let names: Vec<String> = fields.iter().map(|f| f.name.clone()).collect();
                if self.rng.chance(50) {
                    let old = self.snake(&names);
                    let new = self.rng.pick(&names).clone();
                    self.line(8, &format!("rename: {{ {}: {} }}", q(&old), q(&new)));
                }
                if self.rng.chance(50) {
                    let i = self.rng.below(fields.len());
                    let (name, ty) = (fields[i].name.clone(), fields[i].ty.clone());
                    if let Some(v) = self.value(&ty) {
                        self.line(8, &format!("add: {{ {}: {v} }}", q(&name)));
                    }
                }
                if self.rng.chance(40) {
                    let gone = self.snake(&names);
                    self.line(8, &format!("remove: [{}]", q(&gone)));
                }
            }
        }
    }
}

/// One schema file's text.
pub fn schema(rng: &mut Rng) -> String {
    let mut g = Gen {
        rng,
        out: String::new(),
        types: Vec::new(),
        protobuf: false,
    };
    g.line(0, "kvmodel: 1");
    let ns = g.rng.pick(NAMESPACES).to_string();
    g.line(0, &format!("namespace: {}", q(&ns)));
    g.declare_types();
    g.line(0, "entities:");
    let mut names: Vec<String> = Vec::new();
    for _ in 0..g.rng.below(3) + 1 {
        let taken: Vec<String> = (g.types.iter().map(|t| t.name.clone()))
            .chain(names.iter().cloned())
            .collect();
        let name = g.camel(&taken);
        names.push(name);
    }
    let mut literals: Vec<&str> = LITERALS.to_vec();
    for i in 0..names.len() {
        // Distinct literals, so most schemas keep entities' key spaces apart.
        let literal = literals.remove(g.rng.below(literals.len()));
        g.entity(&names, i, literal);
    }
    g.out
}
