//! `armsim ros2-types --dump DIR` (hidden): every ROS 2 message type armsim defines, written as
//! a fixed sample in armsim's own CDR bytes beside the same values as JSON, plus `index.json`
//! with each type's DDS name and RIHS01 hash from the core table. The Python test
//! (python/tests/test_ros2_types.py) hands these to rosbags, a third party, which must produce
//! the same bytes and hashes: the bytes come from this binary, so the check covers the code
//! that actually publishes, with no DDS and no Rust test ordering involved.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::path::Path;

use anyhow::{Context, bail};
use armsim_core::protocol::ros2::msgs::*;
use armsim_core::protocol::ros2::sim_interfaces::*;
use armsim_core::protocol::ros2::{RosMessage, TYPES, TypeInfo, cdr};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Writes the samples and the index into `dir` (created if missing); returns how many types.
pub fn dump(dir: &Path) -> anyhow::Result<usize> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut dumper = Dumper {
        dir,
        written: Vec::new(),
    };
    write_samples(&mut dumper)?;

    // Every table entry must have a sample, and no sample may name a type outside the table,
    // so a type added to core without one here fails the dump (and with it the test).
    let table: Vec<&TypeInfo> = TYPES
        .iter()
        .chain(armsim_core::protocol::ros2::sim_interfaces::TYPES)
        .collect();
    let mut index = BTreeMap::new();
    for info in &table {
        if !dumper.written.contains(&info.ros_name) {
            bail!("no sample for {} in ros2-types", info.ros_name);
        }
        let entry = serde_json::json!({ "dds_name": info.dds_name, "rihs01": info.rihs01 });
        if index.insert(info.ros_name, entry).is_some() {
            bail!("{} is twice in the type table", info.ros_name);
        }
    }
    if let Some(extra) = dumper.written.iter().find(|n| !index.contains_key(*n)) {
        bail!("sample {extra} is not in the type table");
    }
    let path = dir.join("index.json");
    std::fs::write(&path, serde_json::to_string_pretty(&index)? + "\n")
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(index.len())
}

struct Dumper<'a> {
    dir: &'a Path,
    written: Vec<&'static str>,
}

impl Dumper<'_> {
    /// `pkg_msg_Name.cdr` and `.json` for one sample, after checking that armsim decodes its
    /// own bytes back to the same value.
    fn put<T>(&mut self, value: T) -> anyhow::Result<()>
    where
        T: RosMessage + Serialize + DeserializeOwned + PartialEq + Debug,
    {
        let name = T::TYPE.ros_name;
        if self.written.contains(&name) {
            bail!("two samples for {name}");
        }
        let bytes = cdr::encode(&value);
        let back: T = cdr::decode(&bytes).with_context(|| format!("{name}: own bytes"))?;
        if back != value {
            bail!("{name}: decoding armsim's bytes gave {back:?}, not {value:?}");
        }
        let stem = name.replace('/', "_");
        let cdr_path = self.dir.join(format!("{stem}.cdr"));
        std::fs::write(&cdr_path, &bytes)
            .with_context(|| format!("cannot write {}", cdr_path.display()))?;
        let json_path = self.dir.join(format!("{stem}.json"));
        std::fs::write(&json_path, serde_json::to_string_pretty(&value)? + "\n")
            .with_context(|| format!("cannot write {}", json_path.display()))?;
        self.written.push(name);
        Ok(())
    }
}

fn time() -> Time {
    Time {
        sec: 12,
        nanosec: 345_678_901,
    }
}

/// Odd-length strings and a non-empty frame id, so that string padding is exercised before
/// the next aligned field.
fn header() -> Header {
    Header {
        stamp: time(),
        frame_id: "base_link".into(),
    }
}

fn transform() -> Transform {
    Transform {
        translation: Vector3 {
            x: 0.1,
            y: -0.25,
            z: 1.5e-3,
        },
        rotation: Quaternion {
            x: 0.0,
            y: 0.0,
            z: std::f64::consts::FRAC_1_SQRT_2,
            w: std::f64::consts::FRAC_1_SQRT_2,
        },
    }
}

fn transform_stamped() -> TransformStamped {
    TransformStamped {
        header: Header {
            stamp: time(),
            frame_id: "world".into(),
        },
        child_frame_id: "link_1".into(),
        transform: transform(),
    }
}

fn dimension() -> MultiArrayDimension {
    MultiArrayDimension {
        label: "joints".into(),
        size: 3,
        stride: 3,
    }
}

fn layout() -> MultiArrayLayout {
    MultiArrayLayout {
        dim: vec![dimension()],
        data_offset: 0,
    }
}

fn trajectory_points() -> Vec<JointTrajectoryPoint> {
    vec![
        JointTrajectoryPoint {
            positions: vec![0.0, 1.0, -0.5],
            velocities: vec![],
            accelerations: vec![],
            effort: vec![],
            time_from_start: Duration {
                sec: 0,
                nanosec: 500_000_000,
            },
        },
        JointTrajectoryPoint {
            positions: vec![0.25, -1.0, 0.125],
            velocities: vec![0.0, 0.0, 0.0],
            accelerations: vec![0.5, -0.5, 1.0],
            effort: vec![2.0],
            time_from_start: Duration { sec: 2, nanosec: 7 },
        },
    ]
}

fn roi() -> RegionOfInterest {
    RegionOfInterest {
        x_offset: 8,
        y_offset: 4,
        height: 240,
        width: 320,
        do_rectify: true,
    }
}

fn sim_result() -> SimResult {
    SimResult::failed(
        SimResult::RESULT_OPERATION_FAILED,
        "simulation is not paused",
    )
}

fn features() -> SimulatorFeatures {
    SimulatorFeatures {
        features: vec![
            SimulatorFeatures::SIMULATION_RESET,
            SimulatorFeatures::SIMULATION_STATE_GETTING,
            SimulatorFeatures::STEP_SIMULATION_MULTIPLE,
        ],
        spawn_formats: vec!["urdf".into(), "sdf".into()],
        custom_info: "armsim".into(),
    }
}

/// One sample per type. The values are chosen to exercise CDR's alignment: doubles after odd
/// string lengths, u8s before u32s, a bool before the end, empty and non-empty sequences.
fn write_samples(d: &mut Dumper) -> anyhow::Result<()> {
    d.put(time())?;
    d.put(Duration {
        sec: -3,
        nanosec: 999_999_999,
    })?;
    d.put(header())?;
    d.put(StdString {
        data: "<robot name=\"arm6\"/>".into(),
    })?;
    d.put(dimension())?;
    d.put(layout())?;
    d.put(Float64MultiArray {
        layout: layout(),
        data: vec![0.1, -0.2, 0.3],
    })?;
    d.put(Clock {
        clock: Time {
            sec: 2,
            nanosec: 250,
        },
    })?;
    d.put(JointState {
        header: header(),
        name: vec!["shoulder_pan".into(), "elbow".into(), "j3".into()],
        position: vec![0.5, -1.0, 3.25],
        velocity: vec![0.0, 0.125, -7.5],
        effort: vec![],
    })?;
    d.put(transform().translation)?;
    d.put(transform().rotation)?;
    d.put(transform())?;
    d.put(transform_stamped())?;
    d.put(TFMessage {
        transforms: vec![
            transform_stamped(),
            TransformStamped {
                header: header(),
                child_frame_id: "cube_0".into(),
                transform: Transform::default(),
            },
        ],
    })?;
    d.put(trajectory_points().remove(1))?;
    d.put(JointTrajectory {
        header: Header::default(),
        joint_names: vec!["a".into(), "bb".into(), "ccc".into()],
        points: trajectory_points(),
    })?;
    d.put(Image {
        header: Header {
            stamp: time(),
            frame_id: "cam".into(),
        },
        height: 1,
        width: 2,
        encoding: "rgb8".into(),
        is_bigendian: 0,
        step: 6,
        data: vec![1, 2, 3, 250, 251, 255],
    })?;
    d.put(roi())?;
    d.put(CameraInfo {
        header: Header {
            stamp: time(),
            frame_id: "cam".into(),
        },
        height: 480,
        width: 640,
        distortion_model: "plumb_bob".into(),
        d: vec![0.1, -0.05, 0.0, 0.0, 0.001],
        k: [500.0, 0.0, 320.0, 0.0, 500.0, 240.0, 0.0, 0.0, 1.0],
        r: [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0],
        p: [
            500.0, 0.0, 320.0, 0.0, 0.0, 500.0, 240.0, 0.0, 0.0, 0.0, 1.0, 0.0,
        ],
        binning_x: 1,
        binning_y: 2,
        roi: roi(),
    })?;

    d.put(sim_result())?;
    d.put(SimulationState {
        state: SimulationState::STATE_PAUSED,
    })?;
    d.put(features())?;
    d.put(GetSimulatorFeaturesRequest::default())?;
    d.put(GetSimulatorFeaturesResponse {
        features: features(),
    })?;
    d.put(GetSimulationStateRequest::default())?;
    d.put(GetSimulationStateResponse {
        state: SimulationState {
            state: SimulationState::STATE_PLAYING,
        },
        result: SimResult::ok(),
    })?;
    d.put(SetSimulationStateRequest {
        state: SimulationState {
            state: SimulationState::STATE_STOPPED,
        },
    })?;
    d.put(SetSimulationStateResponse {
        result: SimResult::failed(
            SetSimulationStateResponse::ALREADY_IN_TARGET_STATE,
            "already paused",
        ),
    })?;
    d.put(ResetSimulationRequest {
        scope: ResetSimulationRequest::SCOPE_ALL,
    })?;
    d.put(ResetSimulationResponse {
        result: SimResult::ok(),
    })?;
    // Above 2^32, so a 32-bit slip would show.
    d.put(StepSimulationRequest {
        steps: (1 << 40) + 7,
    })?;
    d.put(StepSimulationResponse {
        result: sim_result(),
    })?;
    Ok(())
}
