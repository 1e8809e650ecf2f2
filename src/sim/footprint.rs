//! About how much memory a value holds, for the history's cap: a serde
//! serializer that only counts — each number at its size in memory, each
//! sequence, map and string with its length word — so the steppers' private
//! caches can be measured through their `Serialize` derives.

use crate::stepper::ContactReport;
use serde::Serialize;
use serde::ser;
use std::fmt;

/// Bytes `value` would take laid out flat (numbers at their size, 8 per
/// length), a stand-in for its heap footprint.
pub fn serialized<T: Serialize + ?Sized>(value: &T) -> usize {
    let mut counter = Counter(0);
    // Counting cannot fail; a value whose Serialize fails counts as far as
    // it got.
    let _ = value.serialize(&mut counter);
    counter.0
}

/// Bytes of one contact report: the struct and its frame's friction
/// directions.
pub fn contact_report(report: &ContactReport) -> usize {
    std::mem::size_of::<ContactReport>()
        + report.frame.as_ref().map_or(0, |f| {
            f.tangents.len() * std::mem::size_of::<nalgebra::Vector3<f64>>()
        })
}

struct Counter(usize);

/// The counter never fails.
#[derive(Debug)]
struct Never;

impl fmt::Display for Never {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("never")
    }
}

impl std::error::Error for Never {}

impl ser::Error for Never {
    fn custom<T: fmt::Display>(_msg: T) -> Self {
        Never
    }
}

macro_rules! count {
    ($($name:ident: $ty:ty),* $(,)?) => {
        $(fn $name(self, _v: $ty) -> Result<(), Never> {
            self.0 += std::mem::size_of::<$ty>();
            Ok(())
        })*
    };
}

impl ser::Serializer for &mut Counter {
    type Ok = ();
    type Error = Never;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    count!(
        serialize_bool: bool,
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
        serialize_f32: f32,
        serialize_f64: f64,
        serialize_char: char,
    );

    fn serialize_str(self, v: &str) -> Result<(), Never> {
        self.0 += 8 + v.len();
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Never> {
        self.0 += 8 + v.len();
        Ok(())
    }
    fn serialize_none(self) -> Result<(), Never> {
        self.0 += 1;
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Never> {
        self.0 += 1;
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Never> {
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Never> {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), Never> {
        self.0 += 4;
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Never> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        value: &T,
    ) -> Result<(), Never> {
        self.0 += 4;
        value.serialize(self)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Self, Never> {
        self.0 += 8;
        Ok(self)
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self, Never> {
        Ok(self)
    }
    fn serialize_tuple_struct(self, _: &'static str, _len: usize) -> Result<Self, Never> {
        Ok(self)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _len: usize,
    ) -> Result<Self, Never> {
        self.0 += 4;
        Ok(self)
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Self, Never> {
        self.0 += 8;
        Ok(self)
    }
    fn serialize_struct(self, _: &'static str, _len: usize) -> Result<Self, Never> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _len: usize,
    ) -> Result<Self, Never> {
        self.0 += 4;
        Ok(self)
    }
}

macro_rules! compound {
    ($trait:ident, $method:ident) => {
        impl ser::$trait for &mut Counter {
            type Ok = ();
            type Error = Never;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Never> {
                value.serialize(&mut **self)
            }
            fn end(self) -> Result<(), Never> {
                Ok(())
            }
        }
    };
}

compound!(SerializeSeq, serialize_element);
compound!(SerializeTuple, serialize_element);
compound!(SerializeTupleStruct, serialize_field);
compound!(SerializeTupleVariant, serialize_field);

impl ser::SerializeMap for &mut Counter {
    type Ok = ();
    type Error = Never;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Never> {
        key.serialize(&mut **self)
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Never> {
        value.serialize(&mut **self)
    }
    fn end(self) -> Result<(), Never> {
        Ok(())
    }
}

impl ser::SerializeStruct for &mut Counter {
    type Ok = ();
    type Error = Never;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        _key: &'static str,
        value: &T,
    ) -> Result<(), Never> {
        value.serialize(&mut **self)
    }
    fn end(self) -> Result<(), Never> {
        Ok(())
    }
}

impl ser::SerializeStructVariant for &mut Counter {
    type Ok = ();
    type Error = Never;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        _key: &'static str,
        value: &T,
    ) -> Result<(), Never> {
        value.serialize(&mut **self)
    }
    fn end(self) -> Result<(), Never> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_lengths_are_counted() {
        assert_eq!(serialized(&1.0f64), 8);
        assert_eq!(serialized(&vec![1.0f64; 10]), 8 + 80);
        assert_eq!(serialized(&(1u32, "abc")), 4 + 8 + 3);
    }
}
