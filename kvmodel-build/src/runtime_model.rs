//! Lowers a checked model to the runtime's plain-data [`Model`], which
//! maintenance tools use to read a store through a schema file.

use kvmodel_codegen::ir::{self, FieldType, TypeKind};
use kvmodel_runtime::__private::{Codec, Compress, CounterKeep, Encoding, OnDelete, Storage, Ttl};
use kvmodel_runtime::__private::{
    CounterModel, EntityModel, EnumModel, FieldExpr, FieldModel, IndexModel, Model, RelationModel,
    Segment, StepModel, StructModel, TypeModel, children_counter,
};
use kvmodel_runtime::__private::{ProtoField, ProtoMessage, ProtoShape, Scalar};
use kvmodel_runtime::Timestamp;

/// Why a model cannot be lowered: it names a type no schema declares (the
/// derive's own Rust types), or it has no namespace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LowerError(pub String);

/// The run-time model of a checked schema: every entity with a key, its
/// named types resolved.
///
/// ```
/// let schema = kvmodel_build::load("s.yaml", "kvmodel: 1\nnamespace: shop\nentities:\n  User:\n    key: \"user:{id}\"\n    fields: { id: string }\n");
/// let model = kvmodel_build::runtime_model::lower(&schema.model).unwrap();
/// assert_eq!(model.entity("User").unwrap().key_space(), "user");
/// ```
pub fn lower(model: &ir::Model) -> Result<Model, LowerError> {
    let mut namespace = String::new();
    let mut entities = Vec::new();
    for e in &model.entities {
        let Some(key) = &e.key else { continue };
        let ns = e
            .namespace
            .as_ref()
            .map(|n| n.value.clone())
            .ok_or_else(|| LowerError(format!("the entity `{}` has no namespace", *e.name)))?;
        // The first in order, whatever the order of the files.
        if namespace.is_empty() || ns < namespace {
            namespace = ns.clone();
        }
        entities.push(entity(model, e, key, ns)?);
    }
    Ok(Model {
        namespace,
        entities,
    })
}

fn entity(
    model: &ir::Model,
    e: &ir::Entity,
    key: &ir::KeyTemplate,
    namespace: String,
) -> Result<EntityModel, LowerError> {
    let segments = key
        .segments
        .iter()
        .map(|s| match s {
            ir::Segment::Literal(l) => Segment::Literal(l.clone()),
            ir::Segment::Field(f) => Segment::Field(f.clone()),
        })
        .collect();
    let mut out = EntityModel::new(&e.name, &namespace, segments);
    out.version = e.version.value;
    out.encoding = match e.encoding.value {
        ir::Encoding::Json => Encoding::Json,
        ir::Encoding::MsgPack => Encoding::MsgPack,
        ir::Encoding::Protobuf => Encoding::Protobuf,
    };
    out.proto = (e.encoding.value == ir::Encoding::Protobuf).then(|| proto_message(model, e));
    out.ttl = e.ttl.as_ref().map(|t| Ttl {
        after_ms: t.after_ms.value,
        jitter_permille: t.jitter_permille.as_ref().map_or(0, |j| j.value),
    });
    out.expiry = e.expiry_field().map(|f| f.name.value.clone());
    out.feed = e
        .feed
        .as_ref()
        .map(|f| std::time::Duration::from_millis(f.retain_ms.value));
    out.colocate = e.colocate.as_ref().map(|c| c.value.clone());
    let size = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    out.storage = Storage {
        max_size: e.max_size.as_ref().map(|m| size(m.value)),
        compress: e.compress.as_ref().map(|c| Compress {
            codec: match c.codec.value {
                ir::Codec::Lz4 => Codec::Lz4,
                ir::Codec::Zstd => Codec::Zstd,
            },
            above: size(c.above.value),
        }),
    };
    out.fields = fields(model, &e.fields, &mut Vec::new())?;
    out.indexes = e
        .indexes
        .iter()
        .map(|ix| IndexModel {
            name: ix.name.value.clone(),
            fields: ix.fields.iter().map(|x| expr(&x.value)).collect(),
            unique: ix.unique,
            lowercase: ix.normalize.is_some(),
            order_by: ix.order_by.as_ref().map(|o| expr(&o.value)),
            keep: ix.keep.as_ref().map_or(0, |k| k.value),
            since: ix.since.value,
        })
        .collect();
    out.relations = e
        .relations
        .iter()
        .map(|r| RelationModel {
            name: r.name.value.clone(),
            belongs_to: r.belongs_to.value.clone(),
            by: r.by.value.clone(),
            order_by: r.order_by.as_ref().map(|o| expr(&o.value)),
            keep: r.keep.as_ref().map_or(0, |k| k.value),
            on_delete: match *r.on_delete {
                kvmodel_codegen::ir::OnDelete::Keep => OnDelete::Keep,
                kvmodel_codegen::ir::OnDelete::Restrict => OnDelete::Restrict,
                kvmodel_codegen::ir::OnDelete::Cascade => OnDelete::Cascade,
            },
            children: r.on_delete.enforced().then(|| children_counter(&r.name)),
            since: r.since.value,
        })
        .collect();
    out.counters = e
        .counters
        .iter()
        .map(|c| CounterModel {
            name: c.name.value.clone(),
            group_by: c.group_by.iter().map(|g| expr(&g.value)).collect(),
            sum: c.sum.as_ref().map(|s| s.value.clone()),
            shards: c.shards.as_ref().map_or(1, |s| s.value),
            keep: match c.keep.as_ref().map(|k| k.value) {
                None => CounterKeep::Follows,
                Some(kvmodel_codegen::ir::CounterKeep::OnExpiry) => CounterKeep::OnExpiry,
                Some(kvmodel_codegen::ir::CounterKeep::Always) => CounterKeep::Always,
            },
            since: c.since.value,
        })
        .collect();
    out.migrations = e
        .migrations
        .iter()
        .map(|m| StepModel {
            from: m.from.value,
            rename: m
                .rename
                .iter()
                .map(|(a, b)| (a.value.clone(), b.value.clone()))
                .collect(),
            add: m
                .add
                .iter()
                .map(|(f, v)| (f.value.clone(), v.value.clone()))
                .collect(),
            remove: m.remove.iter().map(|f| f.value.clone()).collect(),
        })
        .collect();
    if e.migrate_from.is_some() {
        return Err(LowerError(format!(
            "the entity `{}` migrates through a Rust `From` conversion, which only its \
             generated code can run",
            *e.name
        )));
    }
    Ok(out)
}

fn expr(x: &ir::FieldExpr) -> FieldExpr {
    match x {
        ir::FieldExpr::Field(f) => FieldExpr::Field(f.clone()),
        ir::FieldExpr::Hour(f) => FieldExpr::Hour(f.clone()),
        ir::FieldExpr::Day(f) => FieldExpr::Day(f.clone()),
        ir::FieldExpr::Month(f) => FieldExpr::Month(f.clone()),
    }
}

/// The fields of an entity or struct; `path` holds the named structs being
/// resolved, so a struct that contains itself is an error, not a loop.
fn fields(
    model: &ir::Model,
    fields: &[ir::Field],
    path: &mut Vec<String>,
) -> Result<Vec<FieldModel>, LowerError> {
    fields
        .iter()
        .map(|f| {
            let ty = ty(model, &f.ty.value, path)?;
            let default = f.default.as_ref().map(|d| default_value(&ty, &d.value));
            Ok(FieldModel {
                name: f.name.value.clone(),
                ty,
                optional: f.optional,
                default,
            })
        })
        .collect()
}

/// A schema default as the record holds it (a timestamp in its canonical
/// text).
fn default_value(ty: &TypeModel, v: &serde_json::Value) -> serde_json::Value {
    match (ty, v) {
        (TypeModel::Scalar(Scalar::Timestamp), serde_json::Value::String(s)) => s
            .parse::<Timestamp>()
            .map_or_else(|_| v.clone(), |t| serde_json::Value::String(t.to_string())),
        _ => v.clone(),
    }
}

/// The runtime's scalar for a scalar field type; `None` for lists, maps
/// and named types.
fn scalar(t: &FieldType) -> Option<Scalar> {
    Some(match t {
        FieldType::String => Scalar::String,
        FieldType::Bool => Scalar::Bool,
        FieldType::I32 => Scalar::I32,
        FieldType::I64 => Scalar::I64,
        FieldType::U32 => Scalar::U32,
        FieldType::U64 => Scalar::U64,
        FieldType::F64 => Scalar::F64,
        FieldType::Bytes => Scalar::Bytes,
        FieldType::Timestamp => Scalar::Timestamp,
        FieldType::Date => Scalar::Date,
        FieldType::Uuid => Scalar::Uuid,
        FieldType::List(_) | FieldType::Map(_) | FieldType::Named(_) => return None,
    })
}

fn ty(model: &ir::Model, t: &FieldType, path: &mut Vec<String>) -> Result<TypeModel, LowerError> {
    if let Some(s) = scalar(t) {
        return Ok(TypeModel::Scalar(s));
    }
    Ok(match t {
        FieldType::List(item) => TypeModel::List(Box::new(ty(model, item, path)?)),
        FieldType::Map(item) => TypeModel::Map(Box::new(ty(model, item, path)?)),
        FieldType::Named(n) => {
            let name = n.to_string();
            let def = model
                .types
                .iter()
                .find(|d| *d.name == name)
                .ok_or_else(|| {
                    LowerError(format!(
                        "the type `{name}` is not declared under `types:`, so its stored form is unknown"
                    ))
                })?;
            match &def.kind {
                TypeKind::Enum(variants) => TypeModel::Enum(EnumModel {
                    name,
                    variants: variants.iter().map(|v| v.value.clone()).collect(),
                }),
                TypeKind::Struct(fs) => {
                    if path.contains(&name) {
                        return Err(LowerError(format!("the type `{name}` contains itself")));
                    }
                    path.push(name.clone());
                    let fields = fields(model, fs, path)?;
                    path.pop();
                    TypeModel::Struct(StructModel { name, fields })
                }
            }
        }
        // Scalars returned above; an error rather than a panic should that
        // ever change.
        other => {
            return Err(LowerError(format!(
                "the field type `{}` has no run-time form",
                other.schema_name()
            )));
        }
    })
}

/// The runtime's kind of one protobuf value of type `ty` (a list's or a
/// map's is its items').
fn proto_kind(ty: &FieldType) -> Scalar {
    match ty {
        FieldType::List(t) | FieldType::Map(t) => proto_kind(t),
        // An enum is held as the `string` name of its variant.
        FieldType::Named(_) => Scalar::String,
        scalar_type => scalar(scalar_type).unwrap_or(Scalar::String),
    }
}

/// The protobuf fields of a protobuf-encoded entity, numbered as the
/// generated code numbers them (both take them from
/// `kvmodel_codegen::proto`). Kept for the life of the process, as the
/// generated code's constant is.
fn proto_message(model: &ir::Model, e: &ir::Entity) -> &'static ProtoMessage {
    use kvmodel_codegen::proto::{self as p, Shape};
    let convert = |f: p::ProtoField| ProtoField {
        name: Box::leak(f.name.into_boxed_str()),
        number: f.number,
        kind: proto_kind(&f.ty),
        shape: match f.shape {
            Shape::One => ProtoShape::One,
            Shape::Optional => ProtoShape::Optional,
            Shape::List => ProtoShape::List,
            Shape::Map => ProtoShape::Map,
        },
    };
    let fields: Vec<ProtoField> = p::fields(Some(model), e).into_iter().map(convert).collect();
    let renamed: Vec<ProtoField> = if e.migrate_from.is_some() {
        Vec::new()
    } else {
        p::renamed(Some(model), e)
            .into_iter()
            .map(convert)
            .collect()
    };
    Box::leak(Box::new(ProtoMessage {
        fields: Box::leak(fields.into_boxed_slice()),
        renamed: Box::leak(renamed.into_boxed_slice()),
    }))
}
