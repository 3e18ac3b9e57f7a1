//! JSON has no NaN and no infinity: `serde_json` writes them as `null`,
//! which no `f64` field reads back, so a record holding one would be stored
//! and then never read again. [`non_finite`] finds such a float (and where
//! it is) so that the write is refused instead.
//!
//! It walks the value through serde without producing anything. The JSON
//! encoder calls it only when the bytes it wrote contain `null`, so records
//! without one pay nothing.

use std::fmt;

use serde::ser::{self, Serialize};

/// The path (`field.field[3]`) of the first NaN or infinite float in
/// `value`, or `None` when every float is finite.
pub fn non_finite<T: Serialize + ?Sized>(value: &T) -> Option<String> {
    let mut walk = Walk { path: Vec::new() };
    match value.serialize(&mut walk) {
        Ok(()) => None,
        Err(Found(path)) => Some(path),
    }
}

/// Where the walk is: one entry per field, element or map value entered.
struct Walk {
    path: Vec<String>,
}

impl Walk {
    fn found(&self) -> Found {
        let mut out = String::new();
        for p in &self.path {
            if !p.starts_with('[') && !out.is_empty() {
                out.push('.');
            }
            out.push_str(p);
        }
        Found(if out.is_empty() {
            "the value".into()
        } else {
            out
        })
    }

    fn float(&self, v: f64) -> Result<(), Found> {
        if v.is_finite() {
            Ok(())
        } else {
            Err(self.found())
        }
    }

    fn enter<T: Serialize + ?Sized>(&mut self, at: String, value: &T) -> Result<(), Found> {
        self.path.push(at);
        let r = value.serialize(&mut *self);
        self.path.pop();
        r
    }
}

/// The path of a non-finite float; also what serde reports a custom error
/// as (never raised by the walk itself).
#[derive(Debug)]
struct Found(String);

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Found {}

impl ser::Error for Found {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Found(msg.to_string())
    }
}

/// A sequence, tuple or map being walked: counts its elements.
struct Compound<'a> {
    walk: &'a mut Walk,
    at: usize,
    /// The key of the map entry whose value comes next, as JSON.
    key: Option<String>,
}

impl<'a> Compound<'a> {
    fn new(walk: &'a mut Walk) -> Self {
        Compound {
            walk,
            at: 0,
            key: None,
        }
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
        let at = match self.key.take() {
            Some(key) => format!("[{key}]"),
            None => format!("[{}]", self.at),
        };
        self.at += 1;
        self.walk.enter(at, value)
    }
}

macro_rules! ignore {
    ($($name:ident: $ty:ty),* $(,)?) => {
        $(fn $name(self, _: $ty) -> Result<(), Found> { Ok(()) })*
    };
}

impl<'a> ser::Serializer for &'a mut Walk {
    type Ok = ();
    type Error = Found;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    ignore!(
        serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32,
        serialize_i64: i64, serialize_i128: i128, serialize_u8: u8, serialize_u16: u16,
        serialize_u32: u32, serialize_u64: u64, serialize_u128: u128, serialize_char: char,
        serialize_str: &str, serialize_bytes: &[u8], serialize_unit_struct: &'static str,
    );

    fn serialize_f32(self, v: f32) -> Result<(), Found> {
        self.float(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<(), Found> {
        self.float(v)
    }
    fn serialize_none(self) -> Result<(), Found> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Found> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Found> {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), Found> {
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Found> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Found> {
        self.enter(variant.to_owned(), value)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'a>, Found> {
        Ok(Compound::new(self))
    }
    fn serialize_tuple(self, _: usize) -> Result<Compound<'a>, Found> {
        Ok(Compound::new(self))
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, Found> {
        Ok(Compound::new(self))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, Found> {
        self.path.push(variant.to_owned());
        Ok(Compound::new(self))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'a>, Found> {
        Ok(Compound::new(self))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, Found> {
        Ok(Compound::new(self))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, Found> {
        self.path.push(variant.to_owned());
        Ok(Compound::new(self))
    }
}

/// The compounds whose elements are walked one after the other.
macro_rules! elements {
    ($($trait:ident::$method:ident),*) => {$(
        impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = Found;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
                self.element(value)
            }
            fn end(self) -> Result<(), Found> {
                Ok(())
            }
        }
    )*};
}

elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field
);

impl ser::SerializeTupleVariant for Compound<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
        self.element(value)
    }
    fn end(self) -> Result<(), Found> {
        self.walk.path.pop();
        Ok(())
    }
}

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Found> {
        // A float key is written as a string ("NaN"), which reads back.
        self.key = Some(serde_json::to_string(key).unwrap_or_else(|_| "?".into()));
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Found> {
        self.element(value)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

impl ser::SerializeStruct for Compound<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Found> {
        self.walk.enter(key.to_owned(), value)
    }
    fn end(self) -> Result<(), Found> {
        Ok(())
    }
}

impl ser::SerializeStructVariant for Compound<'_> {
    type Ok = ();
    type Error = Found;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Found> {
        self.walk.enter(key.to_owned(), value)
    }
    fn end(self) -> Result<(), Found> {
        self.walk.path.pop();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Serialize;

    use super::non_finite;

    #[derive(Serialize)]
    struct Reading {
        sensor: String,
        value: f64,
        history: Vec<f32>,
        by_hour: BTreeMap<String, Option<f64>>,
        kind: Kind,
    }

    #[derive(Serialize)]
    enum Kind {
        Plain,
        Scaled { factor: f64 },
    }

    fn reading() -> Reading {
        Reading {
            sensor: "s1".into(),
            value: 1.5,
            history: vec![1.0, 2.0],
            by_hour: BTreeMap::from([("01".to_owned(), Some(0.5)), ("02".to_owned(), None)]),
            kind: Kind::Plain,
        }
    }

    #[test]
    fn finite_values_pass() {
        assert_eq!(non_finite(&reading()), None);
        assert_eq!(non_finite(&f64::MAX), None);
        assert_eq!(non_finite(&Option::<f64>::None), None);
    }

    #[test]
    fn each_non_finite_float_is_found_with_its_path() {
        let mut r = reading();
        r.value = f64::NAN;
        assert_eq!(non_finite(&r).as_deref(), Some("value"));
        let mut r = reading();
        r.history[1] = f32::NEG_INFINITY;
        assert_eq!(non_finite(&r).as_deref(), Some("history[1]"));
        let mut r = reading();
        r.by_hour.insert("03".into(), Some(f64::INFINITY));
        assert_eq!(non_finite(&r).as_deref(), Some("by_hour[\"03\"]"));
        let mut r = reading();
        r.kind = Kind::Scaled { factor: f64::NAN };
        assert_eq!(non_finite(&r).as_deref(), Some("kind.Scaled.factor"));
        assert_eq!(non_finite(&f64::NAN).as_deref(), Some("the value"));
    }
}
