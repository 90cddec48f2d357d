//! ROS 2 over DDS, sans-IO: the message types as serde structs (`msgs`), plain CDR
//! with its encapsulation header (`cdr`), sim-time stamps (`stamp`), the `simulation_interfaces`
//! types (`sim_interfaces`) and the services' state machine over the session (`services`), and
//! the validation of what ROS nodes send: commands (`command`) and trajectories sampled in sim
//! time (`trajectory`). No DDS and no Bevy
//! here: the DDS thread and the ECS bridge live in the app, and this half is tested with byte
//! vectors from rosbags.
//!
//! The table below names every type we define three ways: the ROS name, the DDS type name
//! (what goes into discovery, so a subscriber matches us) and the RIHS01 type hash that Jazzy
//! and later put in the endpoint's USER_DATA; `msgs` points at it.

pub mod cdr;
pub mod command;
pub mod msgs;
pub mod services;
pub mod sim_interfaces;
pub mod stamp;
pub mod trajectory;

/// The names and hash of one ROS 2 message type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TypeInfo {
    /// `pkg/msg/Name`, as `ros2 topic info` prints it.
    pub ros_name: &'static str,
    /// `pkg::msg::dds_::Name_`, the DDS type name every ROS 2 middleware registers.
    pub dds_name: &'static str,
    /// The 64 hex digits of the RIHS01 hash (rosbags 0.11.9, `hash_rihs01`; Jazzy and Kilted
    /// agree), without the `RIHS01_` prefix.
    pub rihs01: &'static str,
}

impl TypeInfo {
    /// The hash as ROS prints it, `RIHS01_<hex>`.
    pub fn rihs01_string(&self) -> String {
        format!("RIHS01_{}", self.rihs01)
    }
}

/// A message type of ours with its entry in [`TYPES`].
pub trait RosMessage {
    const TYPE: &'static TypeInfo;
}

macro_rules! type_info {
    ($($konst:ident: $pkg:literal, $name:literal, $hash:literal;)*) => {
        $(pub const $konst: TypeInfo = TypeInfo {
            ros_name: concat!($pkg, "/msg/", $name),
            dds_name: concat!($pkg, "::msg::dds_::", $name, "_"),
            rihs01: $hash,
        };)*
        /// Every message type armsim defines, nested ones included.
        pub const TYPES: &[TypeInfo] = &[$($konst),*];
    };
}

type_info! {
    TIME: "builtin_interfaces", "Time",
        "b106235e25a4c5ed35098aa0a61a3ee9c9b18d197f398b0e4206cea9acf9c197";
    DURATION: "builtin_interfaces", "Duration",
        "e8d009f659816f758b75334ee1a9ca5b5c0b859843261f14c7f937349599d93b";
    HEADER: "std_msgs", "Header",
        "f49fb3ae2cf070f793645ff749683ac6b06203e41c891e17701b1cb597ce6a01";
    STRING: "std_msgs", "String",
        "df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18";
    MULTI_ARRAY_DIMENSION: "std_msgs", "MultiArrayDimension",
        "5e773a60a4c7fc8a54985f307c7837aa2994252a126c301957a24e31282c9cbe";
    MULTI_ARRAY_LAYOUT: "std_msgs", "MultiArrayLayout",
        "4c66e6f78e740ac103a94cf63259f968e48c617e7699e829b63c21a5cb50dac6";
    FLOAT64_MULTI_ARRAY: "std_msgs", "Float64MultiArray",
        "1025ddc6b9552d191f89ef1a8d2f60f3d373e28b283d8891ddcc974e8c55397f";
    CLOCK: "rosgraph_msgs", "Clock",
        "692f7a66e93a3c83e71765d033b60349ba68023a8c689a79e48078bcb5c58564";
    JOINT_STATE: "sensor_msgs", "JointState",
        "a13ee3a330e346c9d87b5aa18d24e11690752bd33a0350f11c5882bc9179260e";
    VECTOR3: "geometry_msgs", "Vector3",
        "cc12fe83e4c02719f1ce8070bfd14aecd40f75a96696a67a2a1f37f7dbb0765d";
    QUATERNION: "geometry_msgs", "Quaternion",
        "8a765f66778c8ff7c8ab94afcc590a2ed5325a1d9a076ffff38fbce36f458684";
    TRANSFORM: "geometry_msgs", "Transform",
        "beb83fbe698636351461f6f35d1abb20010c43d55374d81bd041f1ba2581fddc";
    TRANSFORM_STAMPED: "geometry_msgs", "TransformStamped",
        "0a241f87d04668d94099cbb5ba11691d5ad32c2f29682e4eb5653424bd275206";
    TF_MESSAGE: "tf2_msgs", "TFMessage",
        "e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087";
    JOINT_TRAJECTORY_POINT: "trajectory_msgs", "JointTrajectoryPoint",
        "de8907036d8bd45aac6f30cc9044a3d4a329c42cbf719aff7d95a584cfa532d7";
    JOINT_TRAJECTORY: "trajectory_msgs", "JointTrajectory",
        "179b33eba59d676f6d967ac71fe35e7ca2f64b2f3928f4a018cec115e213796e";
    IMAGE: "sensor_msgs", "Image",
        "d31d41a9a4c4bc8eae9be757b0beed306564f7526c88ea6a4588fb9582527d47";
    REGION_OF_INTEREST: "sensor_msgs", "RegionOfInterest",
        "ad16bcba5f9131dcdba6fbded19f726f5440e3c513b4fb586dd3027eeed8abb1";
    CAMERA_INFO: "sensor_msgs", "CameraInfo",
        "b3dfd68ff46c9d56c80fd3bd4ed22c7a4ddce8c8348f2f59c299e73118e7e275";
}

#[cfg(test)]
mod tests;
