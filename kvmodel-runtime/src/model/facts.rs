//! Keys and facts of untyped records, spelled segment by segment as the
//! generated key builders spell them.

use serde_json::Value;

use super::value::uuid_of;
use super::{EntityModel, FieldExpr, Segment, TypeModel};
use crate::codec::key::{Derived, KeyBuilder, KeyPart, SortPart, escape_bytes_into, sort_key};
use crate::codec::scalar::Scalar;
use crate::error::{Error, Result};
use crate::schema::Facts;
use crate::schema::rules::{hour, lowercase, month};
use crate::time::{Date, Timestamp};

/// A key component the model cannot build: a type without a key or sort
/// encoding, or a value that does not fit its type.
fn unkeyable(entity: &str, what: &str, field: &str) -> Error {
    Error::InvalidKey {
        key: format!("{entity}.{field}"),
        reason: format!("{what}; check the schema and the stored record"),
    }
}

/// Appends the key component of `value` (of type `ty`) to `out`, exactly
/// as its `KeyPart` does.
fn write_key(ty: &TypeModel, value: &Value, out: &mut String) -> bool {
    match (ty, value) {
        (TypeModel::Scalar(Scalar::String) | TypeModel::Enum(_), Value::String(s)) => {
            s.write_key(out)
        }
        (TypeModel::Scalar(Scalar::Bool), Value::Bool(b)) => b.write_key(out),
        (TypeModel::Scalar(Scalar::I32 | Scalar::I64), Value::Number(n)) => match n.as_i64() {
            Some(i) => i.write_key(out),
            None => return false,
        },
        (TypeModel::Scalar(Scalar::U32 | Scalar::U64), Value::Number(n)) => match n.as_u64() {
            Some(i) => i.write_key(out),
            None => return false,
        },
        (TypeModel::Scalar(Scalar::Bytes), Value::Array(items)) => {
            let bytes: Option<Vec<u8>> = items
                .iter()
                .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
                .collect();
            match bytes {
                Some(b) => escape_bytes_into(out, &b),
                None => return false,
            }
        }
        (TypeModel::Scalar(Scalar::Timestamp), Value::String(s)) => match s.parse::<Timestamp>() {
            Ok(t) => t.write_key(out),
            Err(_) => return false,
        },
        (TypeModel::Scalar(Scalar::Date), Value::String(s)) => match s.parse::<Date>() {
            Ok(d) => d.write_key(out),
            Err(_) => return false,
        },
        (TypeModel::Scalar(Scalar::Uuid), v) => match uuid_of(v) {
            Some(u) => u.write_key(out),
            None => return false,
        },
        _ => return false,
    }
    true
}

/// The order-preserving sort key of `value`, exactly as its `SortPart`
/// writes it.
fn write_sort(ty: &TypeModel, value: &Value, out: &mut Vec<u8>) -> bool {
    match (ty, value) {
        (TypeModel::Scalar(Scalar::String), Value::String(s)) => s.write_sort(out),
        (TypeModel::Scalar(Scalar::Bool), Value::Bool(b)) => b.write_sort(out),
        (TypeModel::Scalar(Scalar::I32), Value::Number(n)) => {
            match n.as_i64().and_then(|i| i32::try_from(i).ok()) {
                Some(i) => i.write_sort(out),
                None => return false,
            }
        }
        (TypeModel::Scalar(Scalar::I64), Value::Number(n)) => match n.as_i64() {
            Some(i) => i.write_sort(out),
            None => return false,
        },
        (TypeModel::Scalar(Scalar::U32), Value::Number(n)) => {
            match n.as_u64().and_then(|i| u32::try_from(i).ok()) {
                Some(i) => i.write_sort(out),
                None => return false,
            }
        }
        (TypeModel::Scalar(Scalar::U64), Value::Number(n)) => match n.as_u64() {
            Some(i) => i.write_sort(out),
            None => return false,
        },
        (TypeModel::Scalar(Scalar::F64), Value::Number(n)) => match n.as_f64() {
            Some(f) => f.write_sort(out),
            None => return false,
        },
        (TypeModel::Scalar(Scalar::Timestamp), Value::String(s)) => match s.parse::<Timestamp>() {
            Ok(t) => t.write_sort(out),
            Err(_) => return false,
        },
        (TypeModel::Scalar(Scalar::Date), Value::String(s)) => match s.parse::<Date>() {
            Ok(d) => d.write_sort(out),
            Err(_) => return false,
        },
        (TypeModel::Scalar(Scalar::Uuid), v) => match uuid_of(v) {
            Some(u) => u.write_sort(out),
            None => return false,
        },
        (TypeModel::Enum(e), Value::String(s)) => match e.variants.iter().position(|v| v == s) {
            Some(i) => (i as u32).write_sort(out),
            None => return false,
        },
        _ => return false,
    }
    true
}

/// The timestamp a bucket reads.
fn timestamp(value: &Value) -> Option<Timestamp> {
    value.as_str()?.parse().ok()
}

/// A key builder with placeholders: `.part` or, for the co-location field,
/// `.tag`.
struct Parts<'m> {
    model: &'m EntityModel,
    builder: KeyBuilder,
}

impl Parts<'_> {
    fn field(mut self, name: &str, value: &Value) -> Result<Self> {
        let ty = self.model.type_of(name)?;
        let mut part = String::new();
        if !write_key(ty, value, &mut part) {
            return Err(unkeyable(
                &self.model.name,
                "this value cannot be a key component",
                name,
            ));
        }
        let tagged = self.model.colocate.as_deref() == Some(name);
        self.builder = if tagged {
            self.builder.tag(&Raw(&part))
        } else {
            self.builder.part(&Raw(&part))
        };
        Ok(self)
    }

    fn finish(self) -> String {
        self.builder.finish()
    }
}

/// A component already escaped.
struct Raw<'a>(&'a str);

impl KeyPart for Raw<'_> {
    fn write_key(&self, out: &mut String) {
        out.push_str(self.0);
    }
    fn match_key(&self, key: &str) -> Option<usize> {
        key.starts_with(self.0).then_some(self.0.len())
    }
}

impl EntityModel {
    /// The type of the field `name`.
    pub(crate) fn type_of(&self, name: &str) -> Result<&TypeModel> {
        self.field(name)
            .map(|f| &f.ty)
            .ok_or_else(|| unkeyable(&self.name, "the schema declares no such field", name))
    }

    fn derived(&self, kind: Derived, name: &str) -> Parts<'_> {
        Parts {
            model: self,
            builder: KeyBuilder::derived(&self.namespace, &self.key_space(), kind).lit(name),
        }
    }

    /// The key of the record whose key fields hold `parts`, in template
    /// order (each a value of its field's type).
    pub fn key_of_parts(&self, parts: &[Value]) -> Result<String> {
        let fields = self.key_fields();
        if parts.len() != fields.len() {
            return Err(Error::InvalidKey {
                key: self.name.clone(),
                reason: format!(
                    "its key takes {} part(s) ({}), but {} were given",
                    fields.len(),
                    fields.join(", "),
                    parts.len()
                ),
            });
        }
        let mut b = Parts {
            model: self,
            builder: KeyBuilder::new(&self.namespace),
        };
        let mut values = parts.iter();
        for s in &self.key {
            b = match s {
                Segment::Literal(l) => Parts {
                    model: self,
                    builder: b.builder.lit(l),
                },
                Segment::Field(f) => b.field(f, values.next().unwrap_or(&Value::Null))?,
            };
        }
        Ok(b.finish())
    }

    /// The key of the record `value` (conformed).
    pub fn record_key(&self, value: &Value) -> Result<String> {
        let parts: Vec<Value> = self
            .key_fields()
            .iter()
            .map(|f| value.get(*f).cloned().unwrap_or(Value::Null))
            .collect();
        self.key_of_parts(&parts)
    }

    /// The unique claim key of index `index` for `values` (one per indexed
    /// field or bucket, as [`counter_key`](Self::counter_key) takes them),
    /// lowercased when the index says so.
    pub fn claim_key(&self, index: &str, values: &[Value]) -> Result<String> {
        let ix = self.index(index)?;
        let mut b = self.derived(Derived::Claim, &ix.name);
        for (x, v) in ix.fields.iter().zip(values) {
            if ix.lowercase {
                let text = v.as_str().ok_or_else(|| {
                    unkeyable(&self.name, "a lowercased index takes text", x.field())
                })?;
                b.builder = b.builder.part(&lowercase(text));
            } else {
                b = self.group_part(b, x, v)?;
            }
        }
        Ok(b.finish())
    }

    /// The collection key of the ordered index `index` for `values` (one per
    /// indexed field or bucket, as [`counter_key`](Self::counter_key) takes
    /// them).
    pub fn index_key(&self, index: &str, values: &[Value]) -> Result<String> {
        let ix = self.index(index)?;
        let mut b = self.derived(Derived::Index, &ix.name);
        for (x, v) in ix.fields.iter().zip(values) {
            b = self.group_part(b, x, v)?;
        }
        Ok(b.finish())
    }

    /// The collection key of relation `relation` for the parent id `value`.
    pub fn relation_key(&self, relation: &str, value: &Value) -> Result<String> {
        let r = self
            .relations
            .iter()
            .find(|r| r.name == relation)
            .ok_or_else(|| {
                unkeyable(&self.name, "the schema declares no such relation", relation)
            })?;
        Ok(self
            .derived(Derived::Relation, &r.name)
            .field(&r.by, value)?
            .finish())
    }

    /// The key of counter `counter` for its group values: a field's value,
    /// or for a bucket a timestamp (`hour`) or a date or timestamp (`day`,
    /// `month`).
    pub fn counter_key(&self, counter: &str, groups: &[Value]) -> Result<String> {
        let c = self
            .counters
            .iter()
            .find(|c| c.name == counter)
            .ok_or_else(|| unkeyable(&self.name, "the schema declares no such counter", counter))?;
        let mut b = self.derived(Derived::Counter, &c.name);
        for (g, v) in c.group_by.iter().zip(groups) {
            b = self.group_part(b, g, v)?;
        }
        Ok(b.finish())
    }

    /// `b` with the key part of `g` for the value `v`: a field's value, or
    /// for a bucket a timestamp (`hour`) or a date or timestamp (`day`,
    /// `month`).
    fn group_part<'a>(&self, mut b: Parts<'a>, g: &FieldExpr, v: &Value) -> Result<Parts<'a>> {
        let bad = || unkeyable(&self.name, "this bucket reads a timestamp", g.field());
        Ok(match g {
            FieldExpr::Field(f) => b.field(f, v)?,
            FieldExpr::Hour(_) => {
                let t = timestamp(v).ok_or_else(bad)?;
                b.builder = b.builder.part(&hour(t));
                b
            }
            FieldExpr::Day(_) | FieldExpr::Month(_) => {
                let text = v.as_str().ok_or_else(bad)?;
                let day = match text.parse::<Date>() {
                    Ok(d) => d,
                    Err(_) => text.parse::<Timestamp>().map_err(|_| bad())?.date(),
                };
                b.builder = match g {
                    FieldExpr::Month(_) => b.builder.part(&month(day)),
                    _ => b.builder.part(&day),
                };
                b
            }
        })
    }

    fn index(&self, name: &str) -> Result<&super::IndexModel> {
        self.indexes
            .iter()
            .find(|i| i.name == name)
            .ok_or_else(|| unkeyable(&self.name, "the schema declares no such index", name))
    }

    /// The sort key of `order_by` in `value`; `None` when a field is `null`.
    fn sort_of(&self, order: &FieldExpr, value: &Value) -> Result<Option<Vec<u8>>> {
        let v = value.get(order.field()).unwrap_or(&Value::Null);
        if v.is_null() {
            return Ok(None);
        }
        let bad = || unkeyable(&self.name, "this value has no sort order", order.field());
        let out = match order {
            FieldExpr::Field(f) => {
                let mut out = Vec::new();
                if !write_sort(self.type_of(f)?, v, &mut out) {
                    return Err(bad());
                }
                out
            }
            FieldExpr::Hour(_) => sort_key(&timestamp(v).ok_or_else(bad)?.start_of_hour()),
            FieldExpr::Day(_) => sort_key(&timestamp(v).ok_or_else(bad)?.date()),
            FieldExpr::Month(_) => sort_key(&timestamp(v).ok_or_else(bad)?.date().first_of_month()),
        };
        Ok(Some(out))
    }

    /// The values of `fields` in `value`, or `None` when one is `null` (an
    /// optional field without a value: no entry).
    fn values(value: &Value, fields: &[&str]) -> Option<Vec<Value>> {
        fields
            .iter()
            .map(|f| value.get(*f).filter(|v| !v.is_null()).cloned())
            .collect()
    }

    /// Every derived entry of the record `value` (conformed, current
    /// version): the same claims, collection members and counter amounts,
    /// in the same order, as the generated `Entity::facts`.
    pub fn facts(&self, value: &Value) -> Result<Facts> {
        let mut facts = Facts::default();
        for ix in &self.indexes {
            let mut fields: Vec<&str> = ix.fields.iter().map(FieldExpr::field).collect();
            let order = if ix.unique {
                None
            } else {
                ix.order_by.as_ref()
            };
            if let Some(o) = order {
                fields.push(o.field());
            }
            let Some(values) = Self::values(value, &fields) else {
                continue;
            };
            let values = &values[..ix.fields.len()];
            if ix.unique {
                let key = self.claim_key(&ix.name, values)?;
                facts.claim(intern(&ix.name), ix.since, key);
            } else {
                let sort = match order {
                    Some(o) => self.sort_of(o, value)?.unwrap_or_default(),
                    None => Vec::new(),
                };
                facts.member_capped(ix.since, ix.keep, self.index_key(&ix.name, values)?, sort);
            }
        }
        for r in &self.relations {
            let mut fields = vec![r.by.as_str()];
            if let Some(o) = &r.order_by {
                fields.push(o.field());
            }
            let Some(values) = Self::values(value, &fields) else {
                continue;
            };
            let sort = match &r.order_by {
                Some(o) => self.sort_of(o, value)?.unwrap_or_default(),
                None => Vec::new(),
            };
            facts.member_capped(
                r.since,
                r.keep,
                self.relation_key(&r.name, &values[0])?,
                sort,
            );
            if let Some(c) = &r.children {
                let key = self
                    .derived(Derived::Counter, c)
                    .field(&r.by, &values[0])?
                    .finish();
                facts.count(r.since, key, 1);
            }
        }
        for c in &self.counters {
            let mut fields: Vec<&str> = c.group_by.iter().map(FieldExpr::field).collect();
            if let Some(s) = &c.sum {
                fields.push(s);
            }
            let Some(values) = Self::values(value, &fields) else {
                continue;
            };
            let delta = match &c.sum {
                Some(s) => {
                    let v = &values[c.group_by.len()];
                    v.as_i64()
                        .map(i128::from)
                        .or_else(|| v.as_u64().map(i128::from))
                        .ok_or_else(|| unkeyable(&self.name, "a sum reads an integer", s))?
                }
                None => 1,
            };
            let key = self.counter_key(&c.name, &values[..c.group_by.len()])?;
            facts.count_kept(c.since, c.shards, c.keep, key, delta);
        }
        Ok(facts)
    }
}

/// A name that lives as long as the process: claims carry their index's
/// name as `&'static str`. Each distinct name is kept once, however many
/// models are loaded.
fn intern(name: &str) -> &'static str {
    use std::collections::HashSet;
    use std::sync::{Mutex, OnceLock};
    static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
    let mut names = NAMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(n) = names.get(name) {
        return n;
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(leaked);
    leaked
}
