//! `armsim._core`, the compiled half of the `armsim` Python package, on `armsim-core` alone (no
//! Bevy): `Sim` (one world, `sim.rs`), the pick-and-place env's world (`env.rs`) and n of them
//! stepped in parallel threads (`VecCore`), the teleop IK for remote control (`TeleopIk`), and
//! trajectory files. The Python half (`python/armsim/`) adds gymnasium's classes on top.

mod assets;
mod convert;
mod env;
mod ik;
mod sim;

use std::time::Instant;

use armsim_core::referee::{LoggedEvent, RefereeEvent};
use armsim_core::sim::SimWorld;
use armsim_core::trajectory::{self, Trajectories, TrajectoryError};
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// A trajectory error as the Python exception that fits it.
pub(crate) fn traj_err(e: TrajectoryError) -> PyErr {
    let text = e.to_string();
    match e {
        TrajectoryError::Io { ref source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            PyFileNotFoundError::new_err(text)
        }
        TrajectoryError::Io { .. } => PyOSError::new_err(text),
        _ => PyValueError::new_err(text),
    }
}

/// A referee event as a dict: `seq`, `sim_time`, `code`, `text` and the event's own fields.
pub(crate) fn event_to_py<'py>(py: Python<'py>, e: &LoggedEvent) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("seq", e.seq)?;
    d.set_item("sim_time", e.sim_time)?;
    d.set_item("code", e.event.code())?;
    d.set_item("text", e.event.to_string())?;
    match &e.event {
        RefereeEvent::PlayModeChanged { from, to } => {
            d.set_item("from", from.as_str())?;
            d.set_item("to", to.as_str())?;
        }
        RefereeEvent::KickOff => {}
        RefereeEvent::Scored {
            object,
            name,
            score,
        } => {
            d.set_item("object", object)?;
            d.set_item("name", name)?;
            d.set_item("score", score)?;
        }
        RefereeEvent::ObjectReplaced {
            object,
            name,
            reason,
        } => {
            d.set_item("object", object)?;
            d.set_item("name", name)?;
            d.set_item("reason", reason.as_str())?;
        }
    }
    Ok(d)
}

/// Reads a MetaSim v2 trajectory file (`.json`, `.json.gz`, `.pkl`, `.pkl.gz`, by name) and
/// returns `{robot: [demo, ...]}`, each demo a dict with `init_state`, `actions`, `states` (and
/// `extra` where the file has it), as `pickle.load` of the file would.
#[pyfunction]
fn load_trajectory(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Bound<'_, PyAny>> {
    let t = py.detach(|| trajectory::load(&path)).map_err(traj_err)?;
    convert::value_to_py(py, &t.to_value())
}

/// Writes `{robot: [demo, ...]}` as a MetaSim v2 trajectory file (format by the file name),
/// after checking its shape (`init_state`, `actions[].dof_pos_target`, `states`).
#[pyfunction]
fn save_trajectory(
    py: Python<'_>,
    path: std::path::PathBuf,
    demos: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let value = convert::py_to_value(demos, "$")?;
    let t = Trajectories::from_value(&value).map_err(|e| PyValueError::new_err(e.to_string()))?;
    py.detach(|| trajectory::save(&t, &path)).map_err(traj_err)
}

/// Seconds that `n` bare `SimWorld::step`s of `scene` take (no referee, guard or recording), run
/// without the GIL: the baseline the package's overheads are measured against.
#[pyfunction]
#[pyo3(signature = (n, scene=None))]
fn bench_bare_step(py: Python<'_>, n: u64, scene: Option<String>) -> PyResult<f64> {
    let scene = assets::resolve_scene(scene.as_deref()).map_err(PyValueError::new_err)?;
    Ok(py.detach(|| {
        let mut world = SimWorld::new(&scene);
        let t0 = Instant::now();
        for _ in 0..n {
            world.step();
        }
        t0.elapsed().as_secs_f64()
    }))
}

/// Names of the scenes bundled with the package (`Sim(scene=name)`).
#[pyfunction]
fn bundled_scenes() -> Vec<&'static str> {
    assets::BUNDLED_SCENES.to_vec()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<sim::Sim>()?;
    m.add_class::<sim::Recording>()?;
    m.add_class::<env::EnvCore>()?;
    m.add_class::<env::VecCore>()?;
    m.add_class::<ik::TeleopIk>()?;
    m.add_function(wrap_pyfunction!(load_trajectory, m)?)?;
    m.add_function(wrap_pyfunction!(save_trajectory, m)?)?;
    m.add_function(wrap_pyfunction!(bench_bare_step, m)?)?;
    m.add_function(wrap_pyfunction!(bundled_scenes, m)?)?;
    m.add("SIM_HZ", armsim_core::sim::SIM_HZ)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
