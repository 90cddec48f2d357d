//! A file's value tree → typed trajectories through serde: `Value` is a [`serde::Deserializer`],
//! the typed shapes implement [`Deserialize`], and `serde_path_to_error` keeps the path of the
//! first problem (`$.arm6[0].states[3].cube_red.rot: expected 4 numbers, found a list of 3`).
//!
//! The shapes are ordered maps (joint, body and robot names keep their file order) and dicts
//! whose unknown keys are kept verbatim in `other`, which `#[derive(Deserialize)]` can only
//! express through `#[serde(flatten)]`; flatten buffers the dict before looking at it, which
//! loses both the path inside and our wording, so each shape has a small visitor instead.
//!
//! Exactness: the deserializer hands out the tree's own `f64`s and converts ints with `as f64`,
//! for JSON and pickle alike. Python's `None` for an optional field means absent, as MetaSim's
//! dict states use it.

use std::fmt::{self, Display};
use std::marker::PhantomData;

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, forward_to_deserialize_any};
use serde_path_to_error::Segment;

use super::demo::{
    ActionFrame, BodyState, Demo, JointValues, ShapeError, StateFrame, Trajectories,
};
use super::loc::{Loc, push_key};
use super::value::Value;

impl Trajectories {
    /// Reads the typed shape out of a file's value tree; an error names the path of the first
    /// problem.
    pub fn from_value(value: &Value) -> Result<Self, ShapeError> {
        from_value_at(value, &Loc::root())
    }
}

/// One recorded frame's state, located at `at` (a recording journal's line).
pub(super) fn state_from_value(v: &Value, at: &Loc) -> Result<StateFrame, ShapeError> {
    from_value_at(v, at)
}

/// One recorded action, located at `at` (a recording journal's line).
pub(super) fn action_from_value(v: &Value, at: &Loc) -> Result<ActionFrame, ShapeError> {
    from_value_at(v, at)
}

/// Deserializes `T` from `v`, located at `at` in its file, with every error's path.
fn from_value_at<'v, T: Deserialize<'v>>(v: &'v Value, at: &Loc) -> Result<T, ShapeError> {
    serde_path_to_error::deserialize(ValueDe(v)).map_err(|e| {
        let mut path = at.render();
        for seg in e.path().iter() {
            match seg {
                Segment::Seq { index } => path.push_str(&format!("[{index}]")),
                Segment::Map { key } | Segment::Enum { variant: key } => push_key(&mut path, key),
                Segment::Unknown => path.push_str("[?]"),
            }
        }
        let demo = match e.path().iter().collect::<Vec<_>>().as_slice() {
            [Segment::Map { key }, Segment::Seq { index }] if at.is_root() => {
                Some((key.clone(), *index))
            }
            _ => None,
        };
        match (e.into_inner(), demo) {
            // Only a demo has these fields: a demo without them is named by robot and index.
            (DeError::Missing(field @ ("init_state" | "actions")), Some((robot, demo))) => {
                ShapeError::Missing { robot, demo, field }
            }
            (err, _) => ShapeError::Invalid {
                path,
                message: err.to_string(),
            },
        }
    })
}

/// What went wrong at one place in the tree; the path is added around it.
#[derive(Debug)]
enum DeError {
    Missing(&'static str),
    Message(String),
}

impl Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            DeError::Missing(field) => write!(f, "{field} is required"),
            DeError::Message(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: Display>(msg: T) -> Self {
        DeError::Message(msg.to_string())
    }

    fn missing_field(field: &'static str) -> Self {
        DeError::Missing(field)
    }
}

/// The kind of `v` for "found …", with the length of lists and dicts.
fn found(v: &Value) -> String {
    match v {
        Value::List(items) => format!("a list of {}", items.len()),
        Value::Dict(entries) => format!("a dict of {}", entries.len()),
        other => other.kind().to_owned(),
    }
}

/// "expected <what the visitor wants>, found <what is there>".
fn mismatch<'de, V: Visitor<'de>>(visitor: &V, v: &Value) -> DeError {
    struct Expecting<'a, V>(&'a V);
    impl<'de, V: Visitor<'de>> Display for Expecting<'_, V> {
        fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
            self.0.expecting(f)
        }
    }
    DeError::Message(format!(
        "expected {}, found {}",
        Expecting(visitor),
        found(v)
    ))
}

/// `Value` as a serde `Deserializer` (a private wrapper, so that its error type stays private).
struct ValueDe<'de>(&'de Value);

impl<'de> Deserializer<'de> for ValueDe<'de> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0 {
            Value::None => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Int(i) => visitor.visit_i64(*i),
            Value::Float(x) => visitor.visit_f64(*x),
            Value::Str(s) => visitor.visit_borrowed_str(s),
            Value::List(items) => visitor.visit_seq(Items(items.iter())),
            Value::Dict(entries) => visitor.visit_map(Entries {
                entries: entries.iter(),
                value: None,
            }),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0 {
            Value::None => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match *self.0 {
            Value::Int(i) => visitor.visit_f64(i as f64),
            Value::Float(x) => visitor.visit_f64(x),
            _ => Err(mismatch(&visitor, self.0)),
        }
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0 {
            Value::List(items) => visitor.visit_seq(Items(items.iter())),
            _ => Err(mismatch(&visitor, self.0)),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match self.0 {
            Value::List(items) if items.len() == len => visitor.visit_seq(Items(items.iter())),
            _ => Err(mismatch(&visitor, self.0)),
        }
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.0 {
            Value::Dict(entries) => visitor.visit_map(Entries {
                entries: entries.iter(),
                value: None,
            }),
            _ => Err(mismatch(&visitor, self.0)),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_map(visitor)
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 char str string bytes byte_buf unit
        unit_struct newtype_struct tuple_struct enum identifier ignored_any
    }
}

/// A list's items, for `visit_seq`.
struct Items<'de>(std::slice::Iter<'de, Value>);

impl<'de> SeqAccess<'de> for Items<'de> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        self.0
            .next()
            .map(|v| seed.deserialize(ValueDe(v)))
            .transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

/// A dict's entries, for `visit_map`.
struct Entries<'de> {
    entries: std::slice::Iter<'de, (String, Value)>,
    value: Option<&'de Value>,
}

impl<'de> MapAccess<'de> for Entries<'de> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(value);
        seed.deserialize(BorrowedStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let value = self
            .value
            .take()
            .ok_or_else(|| DeError::Message("a dict value was read before its key".into()))?;
        seed.deserialize(ValueDe(value))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// One number: an int or a float, never a bool.
struct Number(f64);

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Number;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_f64<E>(self, x: f64) -> Result<Number, E> {
                Ok(Number(x))
            }
            fn visit_i64<E>(self, x: i64) -> Result<Number, E> {
                Ok(Number(x as f64))
            }
            fn visit_u64<E>(self, x: u64) -> Result<Number, E> {
                Ok(Number(x as f64))
            }
        }
        d.deserialize_f64(V)
    }
}

/// Exactly `N` numbers (a position, a quaternion).
struct Numbers<const N: usize>([f64; N]);

impl<'de, const N: usize> Deserialize<'de> for Numbers<N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<const N: usize>;
        impl<'de, const N: usize> Visitor<'de> for V<N> {
            type Value = Numbers<N>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "{N} numbers")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Numbers<N>, A::Error> {
                let mut out = [0.0; N];
                for (i, slot) in out.iter_mut().enumerate() {
                    *slot = seq
                        .next_element::<Number>()?
                        .ok_or_else(|| de::Error::invalid_length(i, &self))?
                        .0;
                }
                Ok(Numbers(out))
            }
        }
        d.deserialize_tuple(N, V::<N>)
    }
}

/// A list of `T`, expected under `T`'s own name ("a list of actions").
struct ListOf<T>(Vec<T>);

/// How a list of these is called in "expected …" messages.
trait Listed {
    const LIST: &'static str;
}

impl Listed for ActionFrame {
    const LIST: &'static str = "a list of actions";
}

impl Listed for StateFrame {
    const LIST: &'static str = "a list of states";
}

impl Listed for Demo {
    const LIST: &'static str = "a list of demos";
}

impl<'de, T: Deserialize<'de> + Listed> Deserialize<'de> for ListOf<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de> + Listed> Visitor<'de> for V<T> {
            type Value = ListOf<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(T::LIST)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ListOf<T>, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
                while let Some(item) = seq.next_element()? {
                    out.push(item);
                }
                Ok(ListOf(out))
            }
        }
        d.deserialize_seq(V(PhantomData))
    }
}

/// An ordered dict's entries, name → `T`, in file order.
fn named_entries<'de, A: MapAccess<'de>, T: Deserialize<'de>>(
    mut map: A,
) -> Result<Vec<(String, T)>, A::Error> {
    let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0).min(4096));
    while let Some(name) = map.next_key::<String>()? {
        out.push((name, map.next_value()?));
    }
    Ok(out)
}

/// `impl Deserialize` for a type whose JSON is a dict, through a visitor named `$what` whose
/// `visit_map` is `$visit`.
macro_rules! from_dict {
    ($ty:ty, $what:literal, |$map:ident| $visit:block) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str($what)
                    }
                    fn visit_map<A: MapAccess<'de>>(self, mut $map: A) -> Result<$ty, A::Error> {
                        $visit
                    }
                }
                d.deserialize_map(V)
            }
        }
    };
}

from_dict!(JointValues, "a dict of joint name to number", |map| {
    let entries: Vec<(String, Number)> = named_entries(&mut map)?;
    Ok(JointValues(
        entries.into_iter().map(|(name, x)| (name, x.0)).collect(),
    ))
});

from_dict!(
    StateFrame,
    "a dict of object or robot name to its state",
    |map| { Ok(StateFrame(named_entries(&mut map)?)) }
);

from_dict!(
    Trajectories,
    "a dict of robot name to a list of demos",
    |map| {
        let entries: Vec<(String, ListOf<Demo>)> = named_entries(&mut map)?;
        Ok(Trajectories {
            robots: entries
                .into_iter()
                .map(|(robot, demos)| (robot, demos.0))
                .collect(),
        })
    }
);

from_dict!(BodyState, "a dict with pos and rot", |map| {
    let (mut pos, mut rot) = (None, None);
    let mut body = BodyState::new([0.0; 3], [1.0, 0.0, 0.0, 0.0]);
    while let Some(key) = map.next_key::<String>()? {
        match key.as_str() {
            "pos" => pos = Some(map.next_value::<Numbers<3>>()?.0),
            "rot" => rot = Some(map.next_value::<Numbers<4>>()?.0),
            "vel" => body.vel = map.next_value::<Option<Numbers<3>>>()?.map(|x| x.0),
            "ang_vel" => body.ang_vel = map.next_value::<Option<Numbers<3>>>()?.map(|x| x.0),
            "dof_pos" => body.dof_pos = map.next_value()?,
            "dof_vel" => body.dof_vel = map.next_value()?,
            _ => {
                let value = map.next_value()?;
                body.other.push((key, value));
            }
        }
    }
    body.pos = pos.ok_or_else(|| de::Error::missing_field("pos"))?;
    body.rot = rot.ok_or_else(|| de::Error::missing_field("rot"))?;
    Ok(body)
});

from_dict!(ActionFrame, "a dict with dof_pos_target", |map| {
    let mut target = None;
    let mut other = Vec::new();
    while let Some(key) = map.next_key::<String>()? {
        match key.as_str() {
            "dof_pos_target" => target = Some(map.next_value()?),
            _ => {
                let value = map.next_value()?;
                other.push((key, value));
            }
        }
    }
    Ok(ActionFrame {
        dof_pos_target: target.ok_or_else(|| de::Error::missing_field("dof_pos_target"))?,
        other,
    })
});

from_dict!(
    Demo,
    "a demo dict with init_state, actions and states",
    |map| {
        let mut demo = Demo::default();
        let (mut init, mut actions) = (None, None);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "init_state" => init = map.next_value()?,
                "actions" => actions = map.next_value::<Option<ListOf<ActionFrame>>>()?,
                // MetaSim reads states with `.get`; a demo without them is still replayable.
                "states" => {
                    if let Some(states) = map.next_value::<Option<ListOf<StateFrame>>>()? {
                        demo.states = states.0;
                    }
                }
                "extra" => demo.extra = Some(map.next_value()?),
                _ => {
                    let value = map.next_value()?;
                    demo.other.push((key, value));
                }
            }
        }
        demo.init_state = init.ok_or_else(|| de::Error::missing_field("init_state"))?;
        demo.actions = actions
            .ok_or_else(|| de::Error::missing_field("actions"))?
            .0;
        Ok(demo)
    }
);
