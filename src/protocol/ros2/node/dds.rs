//! The DDS thread's state and its poll loop: creating everything at start, then draining
//! discovery events, command topics, service requests and the bridge's replies each time mio
//! wakes it. The sim-time topics' writers are made here too, then handed to the bridge.

use std::collections::HashSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bevy::log::{error, info, warn};
use crossbeam_channel::{Sender, TryRecvError};
use ros2_client::{Context, Node, NodeName, NodeOptions};
use rustdds::mio1::event::Source;
use rustdds::mio1::{Events, Interest, Poll, Token, Waker};
use rustdds::{
    DomainParticipantBuilder, DomainParticipantStatusEvent, DomainParticipantStatusListener, GUID,
    RTPSEntity, StatusEvented,
};

use super::super::link::{Inbound, Outbound, PeerPrefix, Ticket};
use super::super::msgs::StdString;
use super::super::options::Discovery;
use super::super::peers::{EndpointGuid, Peers};
use super::super::qos;
use super::super::sim_interfaces::{Service, ServiceRequest, ServiceResponse};
use super::endpoints::*;
use super::images::{self, ImageFeed, ImageThread};
use super::{Counters, Link, NODE_NAME, NodeConfig, NodeError, Wire};

const WAKE: Token = Token(0);
const STATUS: Token = Token(1);
const JOINT_COMMAND: Token = Token(2);
const FORWARD_COMMAND: Token = Token(3);
const TRAJECTORY: Token = Token(4);
/// `SERVICES + i` is `Service::ALL[i]`.
const SERVICES: usize = 10;

/// Everything DDS, owned by the thread. Field order is drop order: endpoints before the node,
/// the node before the context (whose last clone stops RustDDS's threads).
pub(super) struct Dds {
    /// First: the image thread is joined before its publishers' node goes.
    _images: Option<ImageThread>,
    _latches: Latches,
    commands: Commands,
    servers: Servers,
    status: DomainParticipantStatusListener,
    _node: Node,
    context: Context,
    poll: Poll,
    pub(super) waker: Arc<Waker>,
    pub(super) prefix: PeerPrefix,
    peers: Peers,
    /// DDS names (`rt/…`) of the command topics, to spot their remote writers.
    command_topics: HashSet<String>,
    to_ecs: ToEcs,
    tickets: Tickets,
}

impl Dds {
    /// Everything DDS, and the sim-time topics' writers for the bridge.
    pub(super) fn open(
        config: &NodeConfig,
        inbound: Sender<Inbound>,
        images: Option<ImageFeed>,
        counters: Arc<Counters>,
    ) -> Result<(Dds, FrameOutlets), NodeError> {
        let options = &config.options;
        let poll = Poll::new().map_err(|e| NodeError::Thread(e.to_string()))?;
        let waker = Arc::new(
            Waker::new(poll.registry(), WAKE).map_err(|e| NodeError::Thread(e.to_string()))?,
        );

        let participant_error = |text: String| NodeError::Participant {
            domain: options.domain,
            text,
        };
        // Buffer sizes 0 keep the OS defaults: RustDDS's 8 MiB request is clamped (and warned
        // about) on a default Linux.
        let mut builder = DomainParticipantBuilder::new(options.domain)
            .same_host_loopback(true)
            .socket_receive_buffer_size(0)
            .socket_send_buffer_size(0);
        if options.discovery == Discovery::Local {
            builder = builder.with_only_networks([Ipv4Addr::LOCALHOST]);
        }
        let participant = builder
            .build()
            .map_err(|e| participant_error(e.to_string()))?;
        let prefix = prefix_bytes(participant.guid());
        let mut status = participant.status_listener();
        let context = Context::from_domain_participant(participant)
            .map_err(|e| participant_error(e.to_string()))?;

        let namespace = if options.namespace.is_empty() {
            "/"
        } else {
            options.namespace.as_str()
        };
        let node_name = NodeName::new(namespace, NODE_NAME).map_err(|e| NodeError::Name {
            name: format!("{}/{NODE_NAME}", options.namespace),
            text: e.to_string(),
        })?;
        let fq_name = node_name.fully_qualified_name();
        let mut node = context
            .new_node(node_name, NodeOptions::new().enable_rosout(false))
            .map_err(|e| NodeError::Node {
                name: fq_name.clone(),
                text: e.to_string(),
            })?;

        let mut maker = Maker {
            node: &mut node,
            namespace: &options.namespace,
        };
        let frame_outlets = FrameOutlets {
            clock: maker.outlet(CLOCK_TOPIC, &qos::CLOCK)?,
            joint_states: maker.outlet(JOINT_STATES_TOPIC, &qos::JOINT_STATES)?,
            tf: maker.outlet(TF_TOPIC, &qos::TF)?,
        };
        let latches = Latches {
            _tf_static: maker.publisher(TF_STATIC_TOPIC, &qos::LATCHED)?,
            _robot_description: match config.latched.robot_description {
                Some(_) => Some(maker.publisher(ROBOT_DESCRIPTION_TOPIC, &qos::LATCHED)?),
                None => None,
            },
        };
        let mut commands = Commands {
            joint_command: maker.subscription(JOINT_COMMAND_TOPIC)?,
            forward: maker.subscription(FORWARD_COMMAND_TOPIC)?,
            trajectory: maker.subscription(TRAJECTORY_TOPIC)?,
        };
        let command_topics = [JOINT_COMMAND_TOPIC, FORWARD_COMMAND_TOPIC, TRAJECTORY_TOPIC]
            .iter()
            .map(|t| dds_topic_name(&options.namespace, t))
            .collect();
        let mut servers = Servers {
            features: maker.server(Service::GetSimulatorFeatures)?,
            get_state: maker.server(Service::GetSimulationState)?,
            set_state: maker.server(Service::SetSimulationState)?,
            reset: maker.server(Service::ResetSimulation)?,
            step: maker.server(Service::StepSimulation)?,
        };
        let image_thread = match images {
            Some(feed) => Some(images::start(&mut maker, feed, Arc::clone(&counters))?),
            None => None,
        };

        let service_token = |s: Service| Token(SERVICES + service_index(s));
        let sources: [(&mut dyn Source, Token); 9] = [
            (&mut status, STATUS),
            (&mut commands.joint_command, JOINT_COMMAND),
            (&mut commands.forward, FORWARD_COMMAND),
            (&mut commands.trajectory, TRAJECTORY),
            (
                &mut servers.features,
                service_token(Service::GetSimulatorFeatures),
            ),
            (
                &mut servers.get_state,
                service_token(Service::GetSimulationState),
            ),
            (
                &mut servers.set_state,
                service_token(Service::SetSimulationState),
            ),
            (&mut servers.reset, service_token(Service::ResetSimulation)),
            (&mut servers.step, service_token(Service::StepSimulation)),
        ];
        for (source, token) in sources {
            poll.registry()
                .register(source, token, Interest::READABLE)
                .map_err(|e| NodeError::Thread(e.to_string()))?;
        }

        // The latched topics' one sample, kept by their transient-local writers for late
        // joiners. A failure here is logged, not fatal: live topics still work.
        let latched = config.latched.clone();
        if let Err(e) = latches._tf_static.publish(latched.tf_static) {
            warn!("ros2: publishing /tf_static failed: {e}");
        }
        if let (Some(publisher), Some(text)) =
            (&latches._robot_description, latched.robot_description)
            && let Err(e) = publisher.publish(StdString { data: text })
        {
            warn!("ros2: publishing robot_description failed: {e}");
        }

        info!(
            "ros2: node {fq_name} on DDS domain {}, {}; DDS has no authentication",
            options.domain,
            match options.discovery {
                Discovery::Local => "discovery on this host only (127.0.0.1)",
                Discovery::Subnet => "discovery on every interface (the subnet)",
            }
        );
        let dds = Dds {
            _images: image_thread,
            _latches: latches,
            commands,
            servers,
            status,
            _node: node,
            context,
            poll,
            waker,
            prefix,
            peers: Peers::new(prefix),
            command_topics,
            to_ecs: ToEcs {
                tx: inbound,
                waker: config.waker.clone(),
                full: HashSet::new(),
                counters,
            },
            tickets: Tickets::default(),
        };
        Ok((dds, frame_outlets))
    }

    /// The poll loop, until `Shutdown` (or the handle is gone).
    pub(super) fn run(&mut self, link: &Link) {
        let mut events = Events::with_capacity(64);
        // Whatever came in before the sources were registered would ring no one.
        self.drain_status();
        for token in [JOINT_COMMAND, FORWARD_COMMAND, TRAJECTORY] {
            self.drain(token);
        }
        for service in Service::ALL {
            self.drain_requests(service);
        }
        loop {
            if let Err(e) = self.poll.poll(&mut events, None) {
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                error!("ros2: the DDS thread's poll failed ({e}); ROS 2 stops");
                return;
            }
            // Discovery first, so a peer's PeerUp precedes its first command even when both
            // arrive in one wake.
            self.drain_status();
            for event in events.iter() {
                self.drain(event.token());
            }
            if self.drain_outbound(link) {
                info!("ros2: node stopped");
                return;
            }
        }
    }

    /// Passes on everything the subscription or server of `token` holds. WAKE and STATUS are
    /// handled around the loop.
    fn drain(&mut self, token: Token) {
        match token {
            JOINT_COMMAND => drain_topic(
                &self.commands.joint_command,
                JOINT_COMMAND_TOPIC,
                &mut self.to_ecs,
                |prefix, msg| Inbound::JointCommand { prefix, msg },
            ),
            FORWARD_COMMAND => drain_topic(
                &self.commands.forward,
                FORWARD_COMMAND_TOPIC,
                &mut self.to_ecs,
                |prefix, msg| Inbound::ForwardCommand { prefix, msg },
            ),
            TRAJECTORY => drain_topic(
                &self.commands.trajectory,
                TRAJECTORY_TOPIC,
                &mut self.to_ecs,
                |prefix, msg| Inbound::Trajectory { prefix, msg },
            ),
            Token(t) if (SERVICES..SERVICES + Service::ALL.len()).contains(&t) => {
                self.drain_requests(Service::ALL[t - SERVICES]);
            }
            _ => {}
        }
    }

    /// Replies from the bridge, in order. True on `Shutdown` or when the handle is gone.
    fn drain_outbound(&mut self, link: &Link) -> bool {
        loop {
            match link.control.try_recv() {
                Ok(Outbound::Reply { ticket, response }) => {
                    self.reply(ticket, response, &link.counters);
                }
                Ok(Outbound::Shutdown) | Err(TryRecvError::Disconnected) => return true,
                Err(TryRecvError::Empty) => return false,
            }
        }
    }

    fn reply(&mut self, ticket: Ticket, response: ServiceResponse, counters: &Counters) {
        let service = ticket.service;
        if response.service() != service {
            error!(
                "ros2: a {:?} reply to a {service:?} request; the request stays unanswered",
                response.service()
            );
            return;
        }
        let Some(id) = self.tickets.pending.remove(&ticket.id) else {
            warn!(
                "ros2: a reply to {service:?} request {} that is not pending",
                ticket.id
            );
            return;
        };
        let s = &self.servers;
        let sent = match response {
            ServiceResponse::GetSimulatorFeatures(r) => s.features.send_response(id, Wire(r)),
            ServiceResponse::GetSimulationState(r) => s.get_state.send_response(id, Wire(r)),
            ServiceResponse::SetSimulationState(r) => s.set_state.send_response(id, Wire(r)),
            ServiceResponse::ResetSimulation(r) => s.reset.send_response(id, Wire(r)),
            ServiceResponse::StepSimulation(r) => s.step.send_response(id, Wire(r)),
        };
        if let Err(e) = sent {
            counters.write_errors.fetch_add(1, Ordering::Relaxed);
            warn!(
                "ros2: the reply to {} was not sent: {e}",
                service.default_name()
            );
        }
    }

    fn drain_requests(&mut self, service: Service) {
        let (s, tickets, to_ecs) = (&self.servers, &mut self.tickets, &mut self.to_ecs);
        match service {
            Service::GetSimulatorFeatures => {
                drain_server(&s.features, service, tickets, to_ecs, |r| {
                    ServiceRequest::GetSimulatorFeatures(r)
                })
            }
            Service::GetSimulationState => {
                drain_server(&s.get_state, service, tickets, to_ecs, |r| {
                    ServiceRequest::GetSimulationState(r)
                })
            }
            Service::SetSimulationState => {
                drain_server(&s.set_state, service, tickets, to_ecs, |r| {
                    ServiceRequest::SetSimulationState(r)
                })
            }
            Service::ResetSimulation => drain_server(&s.reset, service, tickets, to_ecs, |r| {
                ServiceRequest::ResetSimulation(r)
            }),
            Service::StepSimulation => drain_server(&s.step, service, tickets, to_ecs, |r| {
                ServiceRequest::StepSimulation(r)
            }),
        }
    }

    /// Discovery events: peers appear (at their first endpoint, with its address) and leave;
    /// writers on the command topics are tracked so their loss can release the arm.
    fn drain_status(&mut self) {
        while let Some(event) = self.status.try_recv_status() {
            match event {
                DomainParticipantStatusEvent::ParticipantDiscovered { dpd } => {
                    let prefix = prefix_bytes(dpd.guid);
                    self.peers.discovered(prefix, vendor_name(&dpd.vendor_id));
                    // Usually its endpoints come next; if SEDP overtook this event, one of
                    // them is known already.
                    if self.peers.wants_address(&prefix) {
                        self.announce(prefix, |g| g.prefix == dpd.guid.prefix);
                    }
                }
                DomainParticipantStatusEvent::ParticipantLost { id, reason } => {
                    let mut prefix = [0; 12];
                    prefix.copy_from_slice(&id.as_ref()[..12]);
                    if let Some(msg) = self.peers.lost(prefix) {
                        info!("ros2: peer {} left ({reason:?})", short(&prefix));
                        self.to_ecs.send("peer", msg);
                    }
                }
                DomainParticipantStatusEvent::WriterDetected { writer } => {
                    self.endpoint_seen(writer.guid);
                    if self.command_topics.contains(&writer.topic_name) {
                        self.peers.command_writer(guid_bytes(writer.guid));
                    }
                }
                DomainParticipantStatusEvent::ReaderDetected { reader } => {
                    self.endpoint_seen(reader.guid);
                }
                DomainParticipantStatusEvent::WriterLost { guid, .. } => {
                    if let Some(msg) = self.peers.writer_lost(guid_bytes(guid)) {
                        self.to_ecs.send("peer", msg);
                    }
                }
                _ => {}
            }
        }
    }

    /// A remote endpoint appeared: its participant's `PeerUp`, if that is still due.
    fn endpoint_seen(&mut self, guid: GUID) {
        let prefix = prefix_bytes(guid);
        if self.peers.wants_address(&prefix) {
            self.announce(prefix, |g| g == guid);
        }
    }

    /// `PeerUp` for `prefix`, at the address of the first known endpoint that `endpoint`
    /// picks; nothing if discovery knows none yet.
    fn announce(&mut self, prefix: PeerPrefix, endpoint: impl Fn(GUID) -> bool) {
        let Some(addr) = self.address_of(endpoint) else {
            return;
        };
        if let Some(msg) = self.peers.endpoint(prefix, addr) {
            if let Inbound::PeerUp { vendor, .. } = &msg {
                info!("ros2: peer {} ({vendor}) at {addr}", short(&prefix));
            }
            self.to_ecs.send("peer", msg);
        }
    }

    /// The first unicast locator of the first endpoint `endpoint` picks (RustDDS fills in the
    /// participant's locators when the endpoint names none), `0.0.0.0:0` if it has none, or
    /// `None` when discovery knows no such endpoint.
    fn address_of(&self, endpoint: impl Fn(GUID) -> bool) -> Option<SocketAddr> {
        let participant = self.context.domain_participant();
        let locators = participant
            .discovered_writers()
            .into_iter()
            .find(|w| endpoint(w.writer_proxy.remote_writer_guid))
            .map(|w| w.writer_proxy.unicast_locator_list)
            .or_else(|| {
                participant
                    .discovered_readers()
                    .into_iter()
                    .find(|r| endpoint(r.reader_proxy.remote_reader_guid))
                    .map(|r| r.reader_proxy.unicast_locator_list)
            })?;
        Some(
            locators
                .into_iter()
                .find(|l| l.is_udp())
                .map(SocketAddr::from)
                .unwrap_or_else(|| SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0))),
        )
    }
}

fn prefix_bytes(guid: GUID) -> PeerPrefix {
    let mut prefix = [0; 12];
    prefix.copy_from_slice(&guid_bytes(guid)[..12]);
    prefix
}

fn guid_bytes(guid: GUID) -> EndpointGuid {
    guid.to_bytes()
}

/// The vendor's product name ("Eclipse Cyclone DDS"), from RustDDS's `Debug`
/// ("product / vendor"), the only public rendering of its table.
fn vendor_name(vendor: &impl std::fmt::Debug) -> String {
    let text = format!("{vendor:?}");
    match text.split_once(" / ") {
        Some((product, _)) => product.to_string(),
        None => text,
    }
}

/// The first bytes of a prefix, enough to tell peers apart in a log line.
fn short(prefix: &PeerPrefix) -> String {
    prefix[..6].iter().map(|b| format!("{b:02x}")).collect()
}
