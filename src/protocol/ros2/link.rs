//! What the ECS bridge (`plugin`) and the DDS thread (`node`) send each other, as plain data:
//! the bridge never touches DDS, the DDS thread never touches the ECS (sockets live on threads;
//! the ECS sees only channels).
//!
//! DDS → ECS is one bounded channel of [`Inbound`]; the DDS thread rings the `SimWaker` after
//! each send, so a paused headless run wakes for a service request. ECS → DDS is one channel
//! of [`Outbound`] (replies, shutdown) plus a mio waker. A [`Frame`] goes straight into the
//! DDS writers' bounded queues (`node::Ros2Handle::send_frames`): RustDDS's own thread owns
//! the sockets, so a hop through the DDS thread would only add a wake-up per frame.

use std::net::SocketAddr;

use armsim_core::protocol::ros2::msgs::{
    Clock, Float64MultiArray, JointState, JointTrajectory, TFMessage,
};
use armsim_core::protocol::ros2::sim_interfaces::{Service, ServiceRequest, ServiceResponse};

/// A remote DDS participant: its 12-byte GUID prefix.
pub type PeerPrefix = [u8; 12];

/// Capacity of the DDS → ECS channel. A full channel drops the newest command (logged once
/// per topic by the DDS thread): the bridge acts on the latest command anyway.
pub const INBOUND_CAPACITY: usize = 256;

/// The DDS thread's handle on one service request, given back with its reply. The DDS thread
/// keeps the middleware's request id under `id`; the bridge only carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ticket {
    pub service: Service,
    pub id: u64,
}

/// DDS → ECS.
#[derive(Clone, Debug)]
pub enum Inbound {
    /// A remote participant was discovered (never our own). `vendor` is the RTPS vendor's
    /// name ("Eclipse Cyclone DDS", "eProsima Fast DDS", …); `addr` is its first unicast
    /// locator, or `0.0.0.0:0` when it advertises none.
    PeerUp {
        prefix: PeerPrefix,
        vendor: String,
        addr: SocketAddr,
    },
    /// The participant's lease ran out, or it said goodbye.
    PeerDown { prefix: PeerPrefix },
    /// A peer's writer on one of our command topics went away (a `ros2 topic pub` exited):
    /// releases the arm if that peer held it and has no command writer left.
    CommandWriterLost {
        prefix: PeerPrefix,
        writers_left: usize,
    },
    /// `joint_command` (sensor_msgs/JointState by name).
    JointCommand { prefix: PeerPrefix, msg: JointState },
    /// `forward_position_controller/commands` (std_msgs/Float64MultiArray, robot joint order).
    ForwardCommand {
        prefix: PeerPrefix,
        msg: Float64MultiArray,
    },
    /// `joint_trajectory` (trajectory_msgs/JointTrajectory).
    Trajectory {
        prefix: PeerPrefix,
        msg: JointTrajectory,
    },
    /// A `simulation_interfaces` request; answer with [`Outbound::Reply`] and the same ticket.
    Request {
        prefix: PeerPrefix,
        ticket: Ticket,
        request: ServiceRequest,
    },
}

/// One publish of the sim-time topics, built by the bridge after a step.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    pub clock: Clock,
    pub joint_states: JointState,
    pub tf: TFMessage,
}

/// ECS → DDS thread.
#[derive(Clone, Debug)]
pub enum Outbound {
    /// The answer to the request of `ticket`.
    Reply {
        ticket: Ticket,
        response: ServiceResponse,
    },
    /// Drop every endpoint and the participant, then end the thread.
    Shutdown,
}

/// What is published once at start, transient local, for late joiners.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Latched {
    /// `/tf_static`: `world → root link`, the fixed links, and the robot's sites.
    pub tf_static: TFMessage,
    /// `robot_description`: the URDF text, when the robot was loaded from a URDF file.
    pub robot_description: Option<String>,
}
