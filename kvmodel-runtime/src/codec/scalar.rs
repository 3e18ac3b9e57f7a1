//! The scalar types a field can hold, named once for the record model
//! ([`TypeModel::Scalar`](crate::model::TypeModel::Scalar)) and the
//! protobuf wire format ([`ProtoField`](crate::codec::proto::ProtoField)).

/// One of the eleven scalar types of a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scalar {
    /// `string`: text.
    String,
    /// `bool`.
    Bool,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `u32`.
    U32,
    /// `u64`.
    U64,
    /// `f64`.
    F64,
    /// `bytes`: a list of bytes in JSON, a byte string in MessagePack and
    /// protobuf.
    Bytes,
    /// `timestamp`: RFC 3339 text in JSON, `google.protobuf.Timestamp` in
    /// protobuf.
    Timestamp,
    /// `date`: a calendar date as `YYYY-MM-DD` text.
    Date,
    /// `uuid`: hyphenated text in JSON, 16 bytes in MessagePack and
    /// protobuf.
    Uuid,
}

impl Scalar {
    /// What a value of this type is, for messages: `an i32`, `a uuid`, ….
    pub fn what(self) -> &'static str {
        match self {
            Scalar::String => "a string",
            Scalar::Bool => "a bool",
            Scalar::I32 => "an i32",
            Scalar::I64 => "an i64",
            Scalar::U32 => "a u32",
            Scalar::U64 => "a u64",
            Scalar::F64 => "an f64",
            Scalar::Bytes => "a list of bytes",
            Scalar::Timestamp => "an RFC 3339 timestamp",
            Scalar::Date => "a date (YYYY-MM-DD)",
            Scalar::Uuid => "a uuid",
        }
    }
}
