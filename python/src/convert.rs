//! Plain data between Rust and Python: trajectory `Value`s (what `pickle.load` of a MetaSim file
//! gives) and JSON values (the state dict view) as dicts, lists, floats, ints, strings and None.

use armsim_core::trajectory::Value;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

pub fn value_to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::None => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => PyFloat::new(py, *f).into_any(),
        Value::Str(s) => PyString::new(py, s).into_any(),
        Value::List(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(value_to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Dict(entries) => {
            let dict = PyDict::new(py);
            for (k, item) in entries {
                dict.set_item(k, value_to_py(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// A Python value as a trajectory `Value`; `path` names where it sits, for the error message.
pub fn py_to_value(obj: &Bound<'_, PyAny>, path: &str) -> PyResult<Value> {
    if obj.is_none() {
        return Ok(Value::None);
    }
    if obj.is_instance_of::<PyBool>() {
        return Ok(Value::Bool(obj.extract()?));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(Value::Int(obj.extract().map_err(|_| {
            PyTypeError::new_err(format!("{path}: integer out of the 64-bit range"))
        })?));
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Value::Float(obj.extract()?));
    }
    if obj.is_instance_of::<PyString>() {
        return Ok(Value::Str(obj.extract()?));
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        let mut entries = Vec::with_capacity(dict.len());
        for (k, item) in dict.iter() {
            let key: String = k.extract().map_err(|_| {
                PyTypeError::new_err(format!("{path}: dict keys must be strings, got {k:?}"))
            })?;
            let sub = format!("{path}.{key}");
            entries.push((key, py_to_value(&item, &sub)?));
        }
        return Ok(Value::Dict(entries));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut items = Vec::new();
        for (i, item) in obj.try_iter()?.enumerate() {
            items.push(py_to_value(&item?, &format!("{path}[{i}]"))?);
        }
        return Ok(Value::List(items));
    }
    // numpy scalars and arrays: floats and lists of floats.
    if let Ok(f) = obj.extract::<f64>() {
        return Ok(Value::Float(f));
    }
    if obj.hasattr("tolist")? {
        return py_to_value(&obj.call_method0("tolist")?, path);
    }
    Err(PyTypeError::new_err(format!(
        "{path}: cannot store a {} in a trajectory (use dicts, lists, numbers, strings, bools, None)",
        obj.get_type().name()?
    )))
}

pub fn json_to_py<'py>(py: Python<'py>, v: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    use serde_json::Value as J;
    Ok(match v {
        J::Null => py.None().into_bound(py),
        J::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        J::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(f)) => PyFloat::new(py, f).into_any(),
            _ => PyFloat::new(py, f64::NAN).into_any(),
        },
        J::String(s) => PyString::new(py, s).into_any(),
        J::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(json_to_py(py, item)?)?;
            }
            list.into_any()
        }
        J::Object(map) => {
            let dict = PyDict::new(py);
            for (k, item) in map {
                dict.set_item(k, json_to_py(py, item)?)?;
            }
            dict.into_any()
        }
    })
}
