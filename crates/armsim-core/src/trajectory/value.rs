//! The dynamic value both trajectory file formats decode to and encode from, so that JSON and
//! pickle share one typed mapping (`demo.rs`, read through `de.rs`) instead of one each.

use std::collections::HashMap;
use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::ser::{self, SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A Python-like value: what `json.load` or `pickle.load` of plain data gives.
///
/// Tuples read from pickles become lists: the trajectory format gives them no separate meaning.
/// Dicts keep their insertion order (Python dicts do, and names in a trajectory should come out
/// in the order they went in); a key given twice keeps its first position and its last value, as
/// a Python dict would.
#[derive(Clone, Debug, Default)]
pub enum Value {
    #[default]
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Value>),
    Dict(Vec<(String, Value)>),
}

impl Value {
    /// A short name of the value's kind, for error messages ("expected a dict, found a list").
    pub fn kind(&self) -> &'static str {
        match self {
            Value::None => "None",
            Value::Bool(_) => "a bool",
            Value::Int(_) => "an int",
            Value::Float(_) => "a float",
            Value::Str(_) => "a string",
            Value::List(_) => "a list",
            Value::Dict(_) => "a dict",
        }
    }

    /// The entry `key` of a dict; `None` for other kinds or a missing key.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Dict(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The number held by an `Int` or `Float` (bools are not numbers here, unlike in Python,
    /// because a bool where a joint angle belongs is a bug worth reporting).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Int(i) => Some(i as f64),
            Value::Float(f) => Some(f),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_list(&self) -> Option<&[Value]> {
        match self {
            Value::List(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_dict(&self) -> Option<&[(String, Value)]> {
        match self {
            Value::Dict(entries) => Some(entries),
            _ => None,
        }
    }

    /// Builds a dict from entries that may repeat a key, with Python's semantics (first position,
    /// last value). Decoders collect entries first and call this once, which keeps the common
    /// no-duplicate case cheap.
    pub fn dict_from_entries(mut entries: Vec<(String, Value)>) -> Value {
        dedup_keys(&mut entries);
        Value::Dict(entries)
    }
}

/// Floats compare by bit pattern so that NaN equals itself and -0.0 differs from 0.0: equality
/// here means "round-trips exactly", which is what the codecs' tests need.
impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::None, Value::None) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a.to_bits() == b.to_bits(),
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::List(a), Value::List(b)) => a == b,
            (Value::Dict(a), Value::Dict(b)) => a == b,
            _ => false,
        }
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Str(v.to_owned())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Str(v)
    }
}

/// Removes repeated keys in place, keeping each key's first position and last value.
fn dedup_keys(entries: &mut Vec<(String, Value)>) {
    // Joint and body dicts are small: a quadratic scan beats hashing there.
    const SMALL: usize = 16;
    let has_duplicates = if entries.len() <= SMALL {
        entries
            .iter()
            .enumerate()
            .any(|(i, (k, _))| entries[..i].iter().any(|(p, _)| p == k))
    } else {
        let mut seen = HashMap::with_capacity(entries.len());
        entries
            .iter()
            .any(|(k, _)| seen.insert(k.as_str(), ()).is_some())
    };
    if !has_duplicates {
        return;
    }
    let mut first_at: HashMap<String, usize> = HashMap::new();
    let mut out: Vec<(String, Value)> = Vec::with_capacity(entries.len());
    for (k, v) in entries.drain(..) {
        match first_at.get(&k) {
            Some(&i) => out[i].1 = v,
            None => {
                first_at.insert(k.clone(), out.len());
                out.push((k, v));
            }
        }
    }
    *entries = out;
}

/// JSON has no NaN or infinity; refusing them beats serde_json's silent `null`, which would load
/// back as something else.
impl Serialize for Value {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::None => serializer.serialize_unit(),
            Value::Bool(b) => serializer.serialize_bool(*b),
            Value::Int(i) => serializer.serialize_i64(*i),
            Value::Float(f) if f.is_finite() => serializer.serialize_f64(*f),
            Value::Float(f) => Err(ser::Error::custom(format!(
                "{f} cannot be written as JSON (save as .pkl to keep non-finite numbers)"
            ))),
            Value::Str(s) => serializer.serialize_str(s),
            Value::List(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Value::Dict(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

/// Deserializing straight into `Value` (rather than through `serde_json::Value`) keeps object key
/// order without serde_json's `preserve_order` feature, which would change map order for every
/// other user of serde_json in the program.
struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Int(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        i64::try_from(v)
            .map(Value::Int)
            .map_err(|_| E::custom(format!("integer {v} does not fit in 64 signed bits")))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Float(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::Str(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::Str(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::None)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::List(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(4096));
        while let Some((k, v)) = map.next_entry::<String, Value>()? {
            entries.push((k, v));
        }
        Ok(Value::dict_from_entries(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_keys_keep_first_position_and_last_value() {
        let small = Value::dict_from_entries(vec![
            ("a".into(), Value::Int(1)),
            ("b".into(), Value::Int(2)),
            ("a".into(), Value::Int(3)),
        ]);
        assert_eq!(
            small,
            Value::Dict(vec![
                ("a".into(), Value::Int(3)),
                ("b".into(), Value::Int(2))
            ])
        );
        let mut many: Vec<(String, Value)> =
            (0..40).map(|i| (format!("k{i}"), Value::Int(i))).collect();
        many.push(("k7".into(), Value::Int(-7)));
        let Value::Dict(entries) = Value::dict_from_entries(many) else {
            panic!("not a dict")
        };
        assert_eq!(entries.len(), 40);
        assert_eq!(entries[7], ("k7".into(), Value::Int(-7)));
    }

    #[test]
    fn json_keeps_key_order_and_number_kinds() {
        let v: Value =
            serde_json::from_str(r#"{"z": 1, "a": 1.0, "m": [true, null, "s", -0.0]}"#).unwrap();
        assert_eq!(
            v,
            Value::Dict(vec![
                ("z".into(), Value::Int(1)),
                ("a".into(), Value::Float(1.0)),
                (
                    "m".into(),
                    Value::List(vec![
                        Value::Bool(true),
                        Value::None,
                        "s".into(),
                        Value::Float(-0.0)
                    ])
                ),
            ])
        );
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"z":1,"a":1.0,"m":[true,null,"s",-0.0]}"#
        );
    }

    #[test]
    fn json_refuses_non_finite_and_oversized_numbers() {
        let err = serde_json::to_string(&Value::List(vec![Value::Float(f64::NAN)])).unwrap_err();
        assert!(
            err.to_string().contains("cannot be written as JSON"),
            "{err}"
        );
        assert!(serde_json::from_str::<Value>("18446744073709551615").is_err());
    }

    #[test]
    fn floats_compare_by_bits() {
        assert_eq!(Value::Float(f64::NAN), Value::Float(f64::NAN));
        assert_ne!(Value::Float(0.0), Value::Float(-0.0));
        assert_ne!(Value::Int(1), Value::Float(1.0));
    }
}
