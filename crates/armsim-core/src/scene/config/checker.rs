//! The validator's path-aware walking helpers (`Checker`: every problem recorded with its JSON
//! path), which every section's parser reads through.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::SceneError;
use super::types::PoseConfig;

/// A quaternion whose norm is this close to 1 is normalised silently; farther off it is an error, since it more
/// likely means a wrong component order or a typo than rounding.
const QUAT_NORM_TOL: f64 = 1e-3;

// ---------------------------------------------------------------------------------------------------------------
// Path-aware walking helpers
// ---------------------------------------------------------------------------------------------------------------

/// Collects errors while the walkers go; every walker returns `None` after recording why.
#[derive(Default)]
pub(super) struct Checker {
    pub(super) errors: Vec<SceneError>,
    /// Things accepted with a default worth telling the user about (not errors).
    pub(super) notes: Vec<SceneError>,
}

pub(super) fn key(path: &str, k: &str) -> String {
    format!("{path}.{k}")
}

pub(super) fn idx(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

pub(super) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(super) type Obj = Map<String, Value>;

impl Checker {
    pub(super) fn err(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.errors.push(SceneError {
            path: path.into(),
            message: message.into(),
        });
    }

    /// `v` as an object whose keys are `fields` or `extensions` (which must itself be an object).
    pub(super) fn object<'v>(
        &mut self,
        v: &'v Value,
        path: &str,
        fields: &[&str],
    ) -> Option<&'v Obj> {
        let Some(m) = v.as_object() else {
            self.err(path, format!("expected an object, found {}", kind(v)));
            return None;
        };
        for (k, val) in m {
            if k == "extensions" {
                if !val.is_object() {
                    self.err(
                        key(path, k),
                        format!("expected an object, found {}", kind(val)),
                    );
                }
            } else if !fields.contains(&k.as_str()) {
                self.err(
                    key(path, k),
                    format!(
                        "unknown field `{k}` (expected one of: {}; additions belong under `extensions`)",
                        fields.join(", ")
                    ),
                );
            }
        }
        Some(m)
    }

    /// `v` as an object whose unknown keys are ignored: for typed areas inside an `extensions` object.
    pub(super) fn loose_object<'v>(&mut self, v: &'v Value, path: &str) -> Option<&'v Obj> {
        let m = v.as_object();
        if m.is_none() {
            self.err(path, format!("expected an object, found {}", kind(v)));
        }
        m
    }

    /// A required field of `m`, parsed by `parse` at its own path.
    // Shares its parameter list with `opt` on purpose (`duplicates` pairs the two signatures):
    // a field turns optional by changing one name at the call site, and the lookup is one code
    // path, `opt`'s.
    pub(super) fn req<'v, T>(
        &mut self,
        m: &'v Obj,
        path: &str,
        k: &str,
        parse: impl FnOnce(&mut Self, &'v Value, &str) -> Option<T>,
    ) -> Option<T> {
        if !m.contains_key(k) {
            self.err(key(path, k), "missing required field");
            return None;
        }
        self.opt(m, path, k, parse)
    }

    /// An optional field: `None` when absent or invalid (invalid is recorded).
    // The one lookup behind `req` too, whose parameter list it shares on purpose.
    pub(super) fn opt<'v, T>(
        &mut self,
        m: &'v Obj,
        path: &str,
        k: &str,
        parse: impl FnOnce(&mut Self, &'v Value, &str) -> Option<T>,
    ) -> Option<T> {
        let p = key(path, k);
        m.get(k).and_then(|v| parse(self, v, &p))
    }

    pub(super) fn f64v(&mut self, v: &Value, path: &str) -> Option<f64> {
        match v.as_f64() {
            Some(x) if x.is_finite() => Some(x),
            Some(x) => {
                self.err(path, format!("must be a finite number, found {x}"));
                None
            }
            None => {
                self.err(path, format!("expected a number, found {}", kind(v)));
                None
            }
        }
    }

    pub(super) fn f32v(&mut self, v: &Value, path: &str) -> Option<f32> {
        let x = self.f64v(v, path)?;
        let y = x as f32;
        if y.is_finite() {
            Some(y)
        } else {
            self.err(
                path,
                format!("must be a finite number, found {x} (out of 32-bit float range)"),
            );
            None
        }
    }

    pub(super) fn u64v(&mut self, v: &Value, path: &str) -> Option<u64> {
        let n = v.as_u64();
        if n.is_none() {
            self.err(
                path,
                format!("expected a non-negative integer, found {}", compact(v)),
            );
        }
        n
    }

    pub(super) fn string(&mut self, v: &Value, path: &str) -> Option<String> {
        match v.as_str() {
            Some(s) => Some(s.to_owned()),
            None => {
                self.err(path, format!("expected a string, found {}", kind(v)));
                None
            }
        }
    }

    pub(super) fn boolean(&mut self, v: &Value, path: &str) -> Option<bool> {
        let b = v.as_bool();
        if b.is_none() {
            self.err(path, format!("expected true or false, found {}", kind(v)));
        }
        b
    }

    pub(super) fn array<'v>(&mut self, v: &'v Value, path: &str) -> Option<&'v Vec<Value>> {
        let a = v.as_array();
        if a.is_none() {
            self.err(path, format!("expected an array, found {}", kind(v)));
        }
        a
    }

    /// An array of numbers of any length; every bad element is reported.
    pub(super) fn f32_vec(&mut self, v: &Value, path: &str) -> Option<Vec<f32>> {
        let a = self.array(v, path)?;
        let items: Vec<Option<f32>> = a
            .iter()
            .enumerate()
            .map(|(i, x)| self.f32v(x, &idx(path, i)))
            .collect();
        items.into_iter().collect()
    }

    pub(super) fn f32_array<const N: usize>(&mut self, v: &Value, path: &str) -> Option<[f32; N]> {
        let items = self.f32_vec(v, path);
        let len = v.as_array().map_or(0, Vec::len);
        if v.is_array() && len != N {
            self.err(path, format!("expected {N} numbers, found {len}"));
            return None;
        }
        items?.try_into().ok()
    }

    pub(super) fn positive(&mut self, x: Option<f32>, path: &str) -> Option<f32> {
        self.check(x, path, |x| x > 0.0, "must be > 0")
    }

    pub(super) fn non_negative(&mut self, x: Option<f32>, path: &str) -> Option<f32> {
        self.check(x, path, |x| x >= 0.0, "must be >= 0")
    }

    pub(super) fn check(
        &mut self,
        x: Option<f32>,
        path: &str,
        ok: impl Fn(f32) -> bool,
        what: &str,
    ) -> Option<f32> {
        let x = x?;
        if ok(x) {
            Some(x)
        } else {
            self.err(path, format!("{what}, found {x}"));
            None
        }
    }

    pub(super) fn non_empty(&mut self, s: Option<String>, path: &str) -> Option<String> {
        let s = s?;
        if s.is_empty() {
            self.err(path, "must not be empty");
            None
        } else {
            Some(s)
        }
    }

    /// Reports, at `p[i].name`, every item of the array `items` (at `p`) whose name an earlier
    /// item already used; `what` names the items in the message. `parsed` holds each item as
    /// parsed: a broken one (`None`) still takes part if its `name` field is a string.
    pub(super) fn unique_names<T>(
        &mut self,
        items: &[Value],
        parsed: &[Option<T>],
        name_of: impl Fn(&T) -> &str,
        p: &str,
        what: &str,
    ) {
        let mut first_seen: HashMap<&str, usize> = HashMap::new();
        for (i, item) in parsed.iter().enumerate() {
            let name = match item {
                Some(item) => Some(name_of(item)),
                None => items[i].get("name").and_then(Value::as_str),
            };
            let Some(name) = name else { continue };
            if let Some(&first) = first_seen.get(name) {
                self.err(
                    key(&idx(p, i), "name"),
                    format!(
                        "duplicate {what} name \"{name}\" (first used by {})",
                        idx(p, first)
                    ),
                );
            } else {
                first_seen.insert(name, i);
            }
        }
    }

    pub(super) fn pose(&mut self, v: &Value, path: &str) -> Option<PoseConfig> {
        let m = self.object(v, path, &["pos_m", "quat_xyzw"])?;
        let pos_m = self.req(m, path, "pos_m", Checker::f32_array::<3>);
        let quat = self.req(m, path, "quat_xyzw", Checker::f32_array::<4>);
        let quat_xyzw = quat.and_then(|q| self.unit_quat(q, &key(path, "quat_xyzw")));
        Some(PoseConfig {
            pos_m: pos_m?,
            quat_xyzw: quat_xyzw?,
        })
    }

    pub(super) fn unit_quat(&mut self, q: [f32; 4], path: &str) -> Option<[f32; 4]> {
        let norm = q.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
        if (norm - 1.0).abs() > QUAT_NORM_TOL {
            self.err(
                path,
                format!(
                    "quaternion {q:?} has norm {norm:.6}; expected a unit quaternion (x, y, z, w) within {QUAT_NORM_TOL}"
                ),
            );
            return None;
        }
        // Leave exact-enough values alone so that writing a scene back and reading it again is lossless.
        if (norm - 1.0).abs() <= 1e-7 {
            return Some(q);
        }
        Some(q.map(|x| (f64::from(x) / norm) as f32))
    }
}

/// A short rendering of a JSON value for messages.
pub(super) fn compact(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s
    }
}
