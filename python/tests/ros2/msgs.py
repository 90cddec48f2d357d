"""The ROS 2 message types armsim speaks, declared for the PyPI `cyclonedds` Python binding, as
a ROS 2 node on rmw_cyclonedds sees them: each struct in the DDS module ROS names it by
(`sensor_msgs::msg::dds_::JointState_`), `@final` (plain CDR, no XTypes headers), fields in wire
order. A ROS 2 node and armsim only match when both the topic's type name and these layouts agree.

(Named msgs.py, not types.py: the peer runs as a script from this folder, and a types.py beside
it would shadow the standard library's `types` module.)
"""

from dataclasses import dataclass, field

from cyclonedds.idl import IdlStruct
from cyclonedds.idl.annotations import final
from cyclonedds.idl.types import array, float64, int32, sequence, uint8, uint16, uint32, uint64


@final
@dataclass
class Time_(IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
    sec: int32 = 0
    nanosec: uint32 = 0


@final
@dataclass
class Duration_(IdlStruct, typename="builtin_interfaces::msg::dds_::Duration_"):
    sec: int32 = 0
    nanosec: uint32 = 0


@final
@dataclass
class Header_(IdlStruct, typename="std_msgs::msg::dds_::Header_"):
    stamp: Time_ = field(default_factory=Time_)
    frame_id: str = ""


@final
@dataclass
class String_(IdlStruct, typename="std_msgs::msg::dds_::String_"):
    data: str = ""


@final
@dataclass
class MultiArrayDimension_(IdlStruct, typename="std_msgs::msg::dds_::MultiArrayDimension_"):
    label: str = ""
    size: uint32 = 0
    stride: uint32 = 0


@final
@dataclass
class MultiArrayLayout_(IdlStruct, typename="std_msgs::msg::dds_::MultiArrayLayout_"):
    dim: sequence[MultiArrayDimension_] = field(default_factory=list)
    data_offset: uint32 = 0


@final
@dataclass
class Float64MultiArray_(IdlStruct, typename="std_msgs::msg::dds_::Float64MultiArray_"):
    layout: MultiArrayLayout_ = field(default_factory=MultiArrayLayout_)
    data: sequence[float64] = field(default_factory=list)


@final
@dataclass
class Clock_(IdlStruct, typename="rosgraph_msgs::msg::dds_::Clock_"):
    clock: Time_ = field(default_factory=Time_)


@final
@dataclass
class JointState_(IdlStruct, typename="sensor_msgs::msg::dds_::JointState_"):
    header: Header_ = field(default_factory=Header_)
    name: sequence[str] = field(default_factory=list)
    position: sequence[float64] = field(default_factory=list)
    velocity: sequence[float64] = field(default_factory=list)
    effort: sequence[float64] = field(default_factory=list)


@final
@dataclass
class Vector3_(IdlStruct, typename="geometry_msgs::msg::dds_::Vector3_"):
    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0


@final
@dataclass
class Quaternion_(IdlStruct, typename="geometry_msgs::msg::dds_::Quaternion_"):
    x: float64 = 0.0
    y: float64 = 0.0
    z: float64 = 0.0
    w: float64 = 1.0


@final
@dataclass
class Transform_(IdlStruct, typename="geometry_msgs::msg::dds_::Transform_"):
    translation: Vector3_ = field(default_factory=Vector3_)
    rotation: Quaternion_ = field(default_factory=Quaternion_)


@final
@dataclass
class TransformStamped_(IdlStruct, typename="geometry_msgs::msg::dds_::TransformStamped_"):
    header: Header_ = field(default_factory=Header_)
    child_frame_id: str = ""
    transform: Transform_ = field(default_factory=Transform_)


@final
@dataclass
class TFMessage_(IdlStruct, typename="tf2_msgs::msg::dds_::TFMessage_"):
    transforms: sequence[TransformStamped_] = field(default_factory=list)


@final
@dataclass
class Image_(IdlStruct, typename="sensor_msgs::msg::dds_::Image_"):
    header: Header_ = field(default_factory=Header_)
    height: uint32 = 0
    width: uint32 = 0
    encoding: str = ""
    is_bigendian: uint8 = 0
    step: uint32 = 0
    data: sequence[uint8] = field(default_factory=list)


@final
@dataclass
class RegionOfInterest_(IdlStruct, typename="sensor_msgs::msg::dds_::RegionOfInterest_"):
    x_offset: uint32 = 0
    y_offset: uint32 = 0
    height: uint32 = 0
    width: uint32 = 0
    do_rectify: bool = False


@final
@dataclass
class CameraInfo_(IdlStruct, typename="sensor_msgs::msg::dds_::CameraInfo_"):
    header: Header_ = field(default_factory=Header_)
    height: uint32 = 0
    width: uint32 = 0
    distortion_model: str = ""
    d: sequence[float64] = field(default_factory=list)
    k: array[float64, 9] = field(default_factory=lambda: [0.0] * 9)
    r: array[float64, 9] = field(default_factory=lambda: [0.0] * 9)
    p: array[float64, 12] = field(default_factory=lambda: [0.0] * 12)
    binning_x: uint32 = 0
    binning_y: uint32 = 0
    roi: RegionOfInterest_ = field(default_factory=RegionOfInterest_)


@final
@dataclass
class JointTrajectoryPoint_(IdlStruct, typename="trajectory_msgs::msg::dds_::JointTrajectoryPoint_"):
    positions: sequence[float64] = field(default_factory=list)
    velocities: sequence[float64] = field(default_factory=list)
    accelerations: sequence[float64] = field(default_factory=list)
    effort: sequence[float64] = field(default_factory=list)
    time_from_start: Duration_ = field(default_factory=Duration_)


@final
@dataclass
class JointTrajectory_(IdlStruct, typename="trajectory_msgs::msg::dds_::JointTrajectory_"):
    header: Header_ = field(default_factory=Header_)
    joint_names: sequence[str] = field(default_factory=list)
    points: sequence[JointTrajectoryPoint_] = field(default_factory=list)


# simulation_interfaces 2.1.0: the messages, then each service's request and response.

@final
@dataclass
class Result_(IdlStruct, typename="simulation_interfaces::msg::dds_::Result_"):
    result: uint8 = 0
    error_message: str = ""


@final
@dataclass
class SimulationState_(IdlStruct, typename="simulation_interfaces::msg::dds_::SimulationState_"):
    state: uint8 = 0


@final
@dataclass
class SimulatorFeatures_(IdlStruct, typename="simulation_interfaces::msg::dds_::SimulatorFeatures_"):
    features: sequence[uint16] = field(default_factory=list)
    spawn_formats: sequence[str] = field(default_factory=list)
    custom_info: str = ""


@final
@dataclass
class GetSimulatorFeatures_Request_(IdlStruct,
                                    typename="simulation_interfaces::srv::dds_::GetSimulatorFeatures_Request_"):
    structure_needs_at_least_one_member: uint8 = 0


@final
@dataclass
class GetSimulatorFeatures_Response_(IdlStruct,
                                     typename="simulation_interfaces::srv::dds_::GetSimulatorFeatures_Response_"):
    features: SimulatorFeatures_ = field(default_factory=SimulatorFeatures_)


@final
@dataclass
class GetSimulationState_Request_(IdlStruct, typename="simulation_interfaces::srv::dds_::GetSimulationState_Request_"):
    structure_needs_at_least_one_member: uint8 = 0


@final
@dataclass
class GetSimulationState_Response_(IdlStruct,
                                   typename="simulation_interfaces::srv::dds_::GetSimulationState_Response_"):
    state: SimulationState_ = field(default_factory=SimulationState_)
    result: Result_ = field(default_factory=Result_)


@final
@dataclass
class SetSimulationState_Request_(IdlStruct, typename="simulation_interfaces::srv::dds_::SetSimulationState_Request_"):
    state: SimulationState_ = field(default_factory=SimulationState_)


@final
@dataclass
class SetSimulationState_Response_(IdlStruct,
                                   typename="simulation_interfaces::srv::dds_::SetSimulationState_Response_"):
    result: Result_ = field(default_factory=Result_)


@final
@dataclass
class ResetSimulation_Request_(IdlStruct, typename="simulation_interfaces::srv::dds_::ResetSimulation_Request_"):
    scope: uint8 = 0


@final
@dataclass
class ResetSimulation_Response_(IdlStruct, typename="simulation_interfaces::srv::dds_::ResetSimulation_Response_"):
    result: Result_ = field(default_factory=Result_)


@final
@dataclass
class StepSimulation_Request_(IdlStruct, typename="simulation_interfaces::srv::dds_::StepSimulation_Request_"):
    steps: uint64 = 1


@final
@dataclass
class StepSimulation_Response_(IdlStruct, typename="simulation_interfaces::srv::dds_::StepSimulation_Response_"):
    result: Result_ = field(default_factory=Result_)


# Each service: (DDS request type, DDS response type).
SERVICES = {
    "get_simulator_features": (GetSimulatorFeatures_Request_, GetSimulatorFeatures_Response_),
    "get_simulation_state": (GetSimulationState_Request_, GetSimulationState_Response_),
    "set_simulation_state": (SetSimulationState_Request_, SetSimulationState_Response_),
    "reset_simulation": (ResetSimulation_Request_, ResetSimulation_Response_),
    "step_simulation": (StepSimulation_Request_, StepSimulation_Response_),
}

# simulation_interfaces constants the peer uses.
RESULT_OK = 1
STATE_PLAYING = 1
STATE_PAUSED = 2
SCOPE_DEFAULT = 0
