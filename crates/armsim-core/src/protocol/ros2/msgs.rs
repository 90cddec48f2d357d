//! The ROS 2 message types armsim publishes and subscribes, as plain serde structs whose field
//! order is the wire order: plain CDR has no field names or tags, so the order of the fields
//! *is* the format. Field lists were checked against rosbags 0.11.9's Jazzy store; each struct
//! names its type through [`RosMessage`], whose table lives in the parent module.

use serde::{Deserialize, Serialize};

use super::{RosMessage, TypeInfo};

/// `builtin_interfaces/msg/Time`: seconds and nanoseconds (`nanosec < 1e9`) since an epoch;
/// armsim's epoch is the start of the episode (sim time, see `stamp`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Time {
    pub sec: i32,
    pub nanosec: u32,
}

/// `builtin_interfaces/msg/Duration`: the same layout as [`Time`], a separate type because ROS
/// hashes it under its own name.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Duration {
    pub sec: i32,
    pub nanosec: u32,
}

/// `std_msgs/msg/Header`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Header {
    pub stamp: Time,
    pub frame_id: String,
}

/// `std_msgs/msg/String`; named so that it does not shadow Rust's `String`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct StdString {
    pub data: String,
}

/// `std_msgs/msg/MultiArrayDimension`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct MultiArrayDimension {
    pub label: String,
    pub size: u32,
    pub stride: u32,
}

/// `std_msgs/msg/MultiArrayLayout`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct MultiArrayLayout {
    pub dim: Vec<MultiArrayDimension>,
    pub data_offset: u32,
}

/// `std_msgs/msg/Float64MultiArray`: what ros2_control's forward position controller takes,
/// in robot joint order.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Float64MultiArray {
    pub layout: MultiArrayLayout,
    pub data: Vec<f64>,
}

/// `rosgraph_msgs/msg/Clock`: the sim time that `use_sim_time:=true` nodes follow.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Clock {
    pub clock: Time,
}

/// `sensor_msgs/msg/JointState`. The four arrays are either empty or as long as `name`; that
/// rule is the command validator's to check, not the wire's.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct JointState {
    pub header: Header,
    pub name: Vec<String>,
    pub position: Vec<f64>,
    pub velocity: Vec<f64>,
    pub effort: Vec<f64>,
}

/// `geometry_msgs/msg/Vector3`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct Vector3 {
    pub x: f64,
    pub y: f64,
    pub z: f64,
}

/// `geometry_msgs/msg/Quaternion`: `w` comes last on the wire (as in glam's `Quat::from_xyzw`),
/// and the default is the identity, not all zeros.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct Quaternion {
    pub x: f64,
    pub y: f64,
    pub z: f64,
    pub w: f64,
}

impl Default for Quaternion {
    /// The identity, as ROS's own default is.
    fn default() -> Self {
        Self {
            x: 0.0,
            y: 0.0,
            z: 0.0,
            w: 1.0,
        }
    }
}

/// `geometry_msgs/msg/Transform`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct Transform {
    pub translation: Vector3,
    pub rotation: Quaternion,
}

/// `geometry_msgs/msg/TransformStamped`: the pose of `child_frame_id` in `header.frame_id`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct TransformStamped {
    pub header: Header,
    pub child_frame_id: String,
    pub transform: Transform,
}

/// `tf2_msgs/msg/TFMessage`, the type of `/tf` and `/tf_static`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct TFMessage {
    pub transforms: Vec<TransformStamped>,
}

/// `trajectory_msgs/msg/JointTrajectoryPoint`; any of the four arrays may be empty.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct JointTrajectoryPoint {
    pub positions: Vec<f64>,
    pub velocities: Vec<f64>,
    pub accelerations: Vec<f64>,
    pub effort: Vec<f64>,
    pub time_from_start: Duration,
}

/// `trajectory_msgs/msg/JointTrajectory`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct JointTrajectory {
    pub header: Header,
    pub joint_names: Vec<String>,
    pub points: Vec<JointTrajectoryPoint>,
}

/// `sensor_msgs/msg/Image`. `data` goes through `byte_seq` so that a frame is one length and
/// one copy, not a million one-byte serde calls; the wire bytes are the same either way.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Image {
    pub header: Header,
    pub height: u32,
    pub width: u32,
    pub encoding: String,
    pub is_bigendian: u8,
    pub step: u32,
    #[serde(with = "byte_seq")]
    pub data: Vec<u8>,
}

/// `sensor_msgs/msg/RegionOfInterest`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegionOfInterest {
    pub x_offset: u32,
    pub y_offset: u32,
    pub height: u32,
    pub width: u32,
    pub do_rectify: bool,
}

/// `sensor_msgs/msg/CameraInfo`. `k`, `r` and `p` are fixed-size arrays: serde writes them as
/// tuples, with no length, which is what CDR wants for `float64[9]`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct CameraInfo {
    pub header: Header,
    pub height: u32,
    pub width: u32,
    pub distortion_model: String,
    pub d: Vec<f64>,
    pub k: [f64; 9],
    pub r: [f64; 9],
    // serde derives arrays only up to 32 elements, and `[f64; 12]` is within that.
    pub p: [f64; 12],
    pub binning_x: u32,
    pub binning_y: u32,
    pub roi: RegionOfInterest,
}

/// `uint8[]` as a CDR octet sequence in one piece: `serialize_bytes` writes the u32 length and
/// the raw bytes (cdr-encoding 0.11), and the deserializer hands back the bytes after checking
/// that they are all there.
mod byte_seq {
    use serde::de::{Error, SeqAccess, Visitor};
    use serde::{Deserializer, Serializer};
    use std::fmt;

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(bytes)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        d.deserialize_byte_buf(BytesVisitor)
    }

    struct BytesVisitor;

    impl<'de> Visitor<'de> for BytesVisitor {
        type Value = Vec<u8>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a byte sequence")
        }

        fn visit_bytes<E: Error>(self, v: &[u8]) -> Result<Vec<u8>, E> {
            Ok(v.to_vec())
        }

        fn visit_byte_buf<E: Error>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
            Ok(v)
        }

        // Formats without a bytes type (serde_json in a debug dump) hand over a sequence.
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
            let mut out = Vec::new();
            while let Some(b) = seq.next_element()? {
                out.push(b);
            }
            Ok(out)
        }
    }
}

macro_rules! ros_message {
    ($($ty:ty => $info:ident),* $(,)?) => {
        $(impl RosMessage for $ty {
            const TYPE: &'static TypeInfo = &super::$info;
        })*
    };
}

ros_message! {
    Time => TIME,
    Duration => DURATION,
    Header => HEADER,
    StdString => STRING,
    MultiArrayDimension => MULTI_ARRAY_DIMENSION,
    MultiArrayLayout => MULTI_ARRAY_LAYOUT,
    Float64MultiArray => FLOAT64_MULTI_ARRAY,
    Clock => CLOCK,
    JointState => JOINT_STATE,
    Vector3 => VECTOR3,
    Quaternion => QUATERNION,
    Transform => TRANSFORM,
    TransformStamped => TRANSFORM_STAMPED,
    TFMessage => TF_MESSAGE,
    JointTrajectoryPoint => JOINT_TRAJECTORY_POINT,
    JointTrajectory => JOINT_TRAJECTORY,
    Image => IMAGE,
    RegionOfInterest => REGION_OF_INTEREST,
    CameraInfo => CAMERA_INFO,
}
