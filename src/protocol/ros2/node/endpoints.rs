//! The node's endpoints and how they are made and drained: names under the namespace,
//! publishers that count their failures, subscriptions and servers whose samples become
//! `Inbound` messages for the bridge.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bevy::log::warn;
use crossbeam_channel::{Sender, TrySendError};
use ros2_client::{
    MessageTypeName, Name, Node, Publisher, QosProfile, ReadError, RmwRequestId, Server,
    ServiceMapping, ServiceTypeName, Subscription,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::super::link::{Inbound, PeerPrefix, Ticket};
use super::super::msgs::{
    Clock, Float64MultiArray, JointState, JointTrajectory, StdString, TFMessage,
};
use super::super::qos;
use super::super::sim_interfaces::{
    GetSimulationStateRequest, GetSimulationStateResponse, GetSimulatorFeaturesRequest,
    GetSimulatorFeaturesResponse, PACKAGE, ResetSimulationRequest, ResetSimulationResponse,
    Service, ServiceRequest, SetSimulationStateRequest, SetSimulationStateResponse,
    StepSimulationRequest, StepSimulationResponse,
};
use super::super::{RosMessage, TypeInfo};
use super::{Counters, NodeError, Wire};
use crate::sim::SimWaker;

/// The topics, relative ones under the node's namespace.
pub(super) const CLOCK_TOPIC: &str = "/clock";
pub(super) const JOINT_STATES_TOPIC: &str = "joint_states";
pub(super) const TF_TOPIC: &str = "/tf";
pub(super) const TF_STATIC_TOPIC: &str = "/tf_static";
pub(super) const ROBOT_DESCRIPTION_TOPIC: &str = "robot_description";
pub(super) const JOINT_COMMAND_TOPIC: &str = "joint_command";
pub(super) const FORWARD_COMMAND_TOPIC: &str = "forward_position_controller/commands";
pub(super) const TRAJECTORY_TOPIC: &str = "joint_trajectory";

/// The writers of the sim-time topics. Made on the DDS thread with the node's other
/// endpoints, then handed to the bridge, which writes each frame itself (`Ros2Handle`).
pub(super) struct FrameOutlets {
    pub(super) clock: Outlet<Clock>,
    pub(super) joint_states: Outlet<JointState>,
    pub(super) tf: Outlet<TFMessage>,
}

impl std::fmt::Debug for FrameOutlets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries([&self.clock.topic, &self.joint_states.topic, &self.tf.topic])
            .finish()
    }
}

/// The latched topics' writers, kept so their one sample stays available to late joiners.
pub(super) struct Latches {
    pub(super) _tf_static: Publisher<TFMessage>,
    pub(super) _robot_description: Option<Publisher<StdString>>,
}

pub(super) struct Commands {
    pub(super) joint_command: Subscription<JointState>,
    pub(super) forward: Subscription<Float64MultiArray>,
    pub(super) trajectory: Subscription<JointTrajectory>,
}

pub(super) type ServerOf<Req, Resp> = Server<Wire<Req>, Wire<Resp>>;

pub(super) struct Servers {
    pub(super) features: ServerOf<GetSimulatorFeaturesRequest, GetSimulatorFeaturesResponse>,
    pub(super) get_state: ServerOf<GetSimulationStateRequest, GetSimulationStateResponse>,
    pub(super) set_state: ServerOf<SetSimulationStateRequest, SetSimulationStateResponse>,
    pub(super) reset: ServerOf<ResetSimulationRequest, ResetSimulationResponse>,
    pub(super) step: ServerOf<StepSimulationRequest, StepSimulationResponse>,
}

/// A publisher that logs its first failure and counts the others.
pub(super) struct Outlet<M: Serialize> {
    pub(super) publisher: Publisher<M>,
    pub(super) topic: String,
    pub(super) failed: bool,
}

impl<M: Serialize> Outlet<M> {
    pub(super) fn publish(&mut self, msg: M, counters: &Counters) {
        if let Err(e) = self.publisher.publish(msg) {
            counters.write_errors.fetch_add(1, Ordering::Relaxed);
            if !std::mem::replace(&mut self.failed, true) {
                warn!(
                    "ros2: publishing {} failed ({e}); further failures on it are only counted",
                    self.topic
                );
            }
        }
    }
}

/// The DDS → ECS channel, with the `SimWaker` rung after each message.
pub(super) struct ToEcs {
    pub(super) tx: Sender<Inbound>,
    pub(super) waker: SimWaker,
    /// Topics whose messages are being dropped because the channel is full (warned once).
    pub(super) full: HashSet<&'static str>,
    pub(super) counters: Arc<Counters>,
}

impl ToEcs {
    /// False when the message was dropped (the channel is full or the bridge is gone).
    pub(super) fn send(&mut self, what: &'static str, msg: Inbound) -> bool {
        match self.tx.try_send(msg) {
            Ok(()) => {
                self.full.remove(what);
                self.waker.wake();
                true
            }
            Err(TrySendError::Full(_)) => {
                if self.full.insert(what) {
                    warn!(
                        "ros2: the simulation is behind; dropping {what} messages until it catches up"
                    );
                }
                false
            }
            Err(TrySendError::Disconnected(_)) => false,
        }
    }

    /// A sample or request that does not decode: logged and counted, nothing passed on.
    fn undecodable(&self, what: &str, reason: &str) {
        self.counters.undecodable.fetch_add(1, Ordering::Relaxed);
        warn!("ros2: ignored a {what} that does not decode: {reason}");
    }
}

/// Requests passed to the bridge and not answered yet: ticket id → the middleware's id.
#[derive(Default)]
pub(super) struct Tickets {
    pub(super) next: u64,
    pub(super) pending: HashMap<u64, RmwRequestId>,
}

pub(super) fn drain_topic<M: DeserializeOwned + 'static>(
    sub: &Subscription<M>,
    topic: &'static str,
    to_ecs: &mut ToEcs,
    wrap: impl Fn(PeerPrefix, M) -> Inbound,
) {
    loop {
        match sub.take() {
            Ok(Some((msg, info))) => {
                let gid = info.publisher_gid();
                let mut prefix = [0; 12];
                prefix.copy_from_slice(&gid.as_bytes()[..12]);
                to_ecs.send(topic, wrap(prefix, msg));
            }
            Ok(None) => return,
            // RustDDS moves past a sample that does not decode, so the loop goes on.
            Err(ReadError::Deserialization { reason }) => {
                to_ecs.undecodable(&format!("{topic} message"), &reason);
            }
            Err(e) => {
                warn!("ros2: reading {topic} failed: {e}");
                return;
            }
        }
    }
}

/// Takes every request a server holds and passes it on with a ticket for the reply.
pub(super) fn drain_server<Req, Resp>(
    server: &ServerOf<Req, Resp>,
    service: Service,
    tickets: &mut Tickets,
    to_ecs: &mut ToEcs,
    wrap: impl Fn(Req) -> ServiceRequest,
) where
    Req: Serialize + DeserializeOwned + Clone + 'static,
    Resp: Serialize + DeserializeOwned + 'static,
{
    loop {
        match server.receive_request() {
            Ok(Some((id, Wire(request)))) => {
                let ticket = Ticket {
                    service,
                    id: tickets.next,
                };
                tickets.next += 1;
                let mut prefix = [0; 12];
                prefix.copy_from_slice(&id.writer_gid.as_bytes()[..12]);
                tickets.pending.insert(ticket.id, id);
                let msg = Inbound::Request {
                    prefix,
                    ticket,
                    request: wrap(request),
                };
                if !to_ecs.send(service.default_name(), msg) {
                    // Dropped: the client will time out; nothing waits for a reply.
                    tickets.pending.remove(&ticket.id);
                }
            }
            Ok(None) => return,
            Err(ReadError::Deserialization { reason }) => {
                to_ecs.undecodable(&format!("{} request", service.default_name()), &reason);
            }
            Err(e) => {
                warn!(
                    "ros2: reading {} requests failed: {e}",
                    service.default_name()
                );
                return;
            }
        }
    }
}

/// Creates the node's endpoints under its namespace.
pub(super) struct Maker<'a> {
    pub(super) node: &'a mut Node,
    pub(super) namespace: &'a str,
}

impl Maker<'_> {
    fn topic<M: RosMessage>(
        &mut self,
        topic: &str,
        qos: &QosProfile,
    ) -> Result<(rustdds::Topic, String), NodeError> {
        let full = full_name(self.namespace, topic);
        let name = Name::parse(&full).map_err(|e| NodeError::Name {
            name: full.clone(),
            text: e.to_string(),
        })?;
        let t = self
            .node
            .create_topic(&name, message_type_name(M::TYPE), qos)
            .map_err(|e| NodeError::Endpoint {
                what: "topic",
                name: full.clone(),
                text: e.to_string(),
            })?;
        Ok((t, full))
    }

    pub(super) fn publisher<M: RosMessage + Serialize>(
        &mut self,
        topic: &str,
        qos: &QosProfile,
    ) -> Result<Publisher<M>, NodeError> {
        let (t, full) = self.topic::<M>(topic, qos)?;
        self.node
            .create_publisher(&t, None)
            .map_err(|e| NodeError::Endpoint {
                what: "publisher",
                name: full,
                text: e.to_string(),
            })
    }

    pub(super) fn outlet<M: RosMessage + Serialize>(
        &mut self,
        topic: &str,
        qos: &QosProfile,
    ) -> Result<Outlet<M>, NodeError> {
        Ok(Outlet {
            publisher: self.publisher(topic, qos)?,
            topic: topic.to_string(),
            failed: false,
        })
    }

    pub(super) fn subscription<M: RosMessage + 'static>(
        &mut self,
        topic: &str,
    ) -> Result<Subscription<M>, NodeError> {
        let (t, full) = self.topic::<M>(topic, &qos::COMMAND)?;
        self.node
            .create_subscription(&t, None)
            .map_err(|e| NodeError::Endpoint {
                what: "subscription",
                name: full,
                text: e.to_string(),
            })
    }

    pub(super) fn server<Req, Resp>(
        &mut self,
        service: Service,
    ) -> Result<ServerOf<Req, Resp>, NodeError>
    where
        Req: Serialize + DeserializeOwned + Clone + 'static,
        Resp: Serialize + DeserializeOwned + 'static,
    {
        let full = full_name(self.namespace, service.default_name());
        let name = Name::parse(&full).map_err(|e| NodeError::Name {
            name: full.clone(),
            text: e.to_string(),
        })?;
        // Enhanced is the mapping of Fast DDS, ROS 2's default middleware: the request is the
        // plain struct, the request id travels as related-sample-identity inline QoS.
        self.node
            .create_server(
                ServiceMapping::Enhanced,
                &name,
                &ServiceTypeName::new(PACKAGE, service.type_name()),
                qos::SERVICE,
                qos::SERVICE,
            )
            .map_err(|e| NodeError::Endpoint {
                what: "service server",
                name: full,
                text: e.to_string(),
            })
    }
}

/// The absolute ROS name of `topic` under `namespace` (`""` or `/ns`). Names are made
/// absolute here because ros2-client 0.12.1 maps a relative name in the root namespace to
/// `rt//name` (`Name::to_dds_name` puts the namespace `/` before its own separator).
pub fn full_name(namespace: &str, topic: &str) -> String {
    if topic.starts_with('/') {
        topic.to_string()
    } else {
        format!("{namespace}/{topic}")
    }
}

/// The DDS topic name (`rt/…`) of a ROS topic under `namespace`.
pub fn dds_topic_name(namespace: &str, topic: &str) -> String {
    format!("rt{}", full_name(namespace, topic))
}

/// ros2-client's name for one of our message types (`pkg/msg/Name`).
pub(super) fn message_type_name(info: &TypeInfo) -> MessageTypeName {
    let mut parts = info.ros_name.split('/');
    let package = parts.next().unwrap_or_default();
    let name = parts.next_back().unwrap_or_default();
    MessageTypeName::new(package, name)
}

pub(super) fn service_index(service: Service) -> usize {
    Service::ALL
        .iter()
        .position(|s| *s == service)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::super::NODE_NAME;
    use super::*;
    use ros2_client::NodeName;

    #[test]
    fn names_are_absolute_under_the_namespace() {
        assert_eq!(full_name("", "joint_states"), "/joint_states");
        assert_eq!(
            full_name("/lab/arm", "joint_states"),
            "/lab/arm/joint_states"
        );
        assert_eq!(full_name("/lab", "/clock"), "/clock");
        assert_eq!(
            dds_topic_name("", FORWARD_COMMAND_TOPIC),
            "rt/forward_position_controller/commands"
        );
        assert_eq!(
            dds_topic_name("/a", JOINT_COMMAND_TOPIC),
            "rt/a/joint_command"
        );
        // The DDS name ros2-client derives from our absolute name is the same.
        let node = NodeName::new("/", NODE_NAME).unwrap();
        let name = Name::parse(&full_name("", FORWARD_COMMAND_TOPIC)).unwrap();
        assert_eq!(
            name.to_dds_name("rt", &node, ""),
            dds_topic_name("", FORWARD_COMMAND_TOPIC)
        );
        let node = NodeName::new("/lab", NODE_NAME).unwrap();
        let name = Name::parse(&full_name("/lab", "reset_simulation")).unwrap();
        assert_eq!(
            name.to_dds_name("rq", &node, "Request"),
            "rq/lab/reset_simulationRequest"
        );
    }

    #[test]
    fn message_types_get_their_dds_names() {
        use super::super::super::msgs::Clock;
        assert_eq!(
            message_type_name(Clock::TYPE).dds_msg_type(),
            "rosgraph_msgs::msg::dds_::Clock_"
        );
        assert_eq!(
            message_type_name(JointTrajectory::TYPE).dds_msg_type(),
            JointTrajectory::TYPE.dds_name
        );
    }

    #[test]
    fn every_service_has_its_own_token() {
        let tokens: HashSet<usize> = Service::ALL.iter().map(|s| service_index(*s)).collect();
        assert_eq!(tokens.len(), Service::ALL.len());
    }
}
