//! The DDS thread on its own: `Ros2Handle` against a second ros2-client participant
//! in the same process, without the ECS. Frames reach a peer's subscriptions, the latched
//! topics reach a late joiner, a peer's commands and service requests come out as `Inbound`
//! messages (with the peer's prefix, the `SimWaker` rung), replies reach the client, peers
//! come and go, and camera images go out from the image thread. Every test runs in its own
//! network namespace (`common::netns`), because DDS discovery multicasts.
//!
//! Waiting is on events (mio polls, channel receives) under one generous deadline per test;
//! frames and commands are re-sent on each short poll until discovery has matched the
//! endpoints, because nothing says when that happens.
#![cfg(feature = "ros2")]

mod common;

use std::net::Ipv4Addr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use armsim::protocol::ros2::link::{Frame, INBOUND_CAPACITY, Inbound, Latched};
use armsim::protocol::ros2::msgs::{
    CameraInfo, Clock, Float64MultiArray, Header, Image, JointState, StdString, TFMessage, Time,
    Transform, TransformStamped, Vector3,
};
use armsim::protocol::ros2::node::{ImageFeed, NodeConfig, Ros2Handle, Wire};
use armsim::protocol::ros2::options::Ros2Options;
use armsim::protocol::ros2::qos;
use armsim::protocol::ros2::sim_interfaces::{
    GetSimulationStateRequest, GetSimulationStateResponse, PACKAGE, Service, ServiceRequest,
    ServiceResponse, SimResult, SimulationState, StepSimulationRequest, StepSimulationResponse,
};
use armsim::sim::SimWaker;
use armsim::state::CameraFrame;
use armsim_core::camera::CameraState;
use common::netns;
use crossbeam_channel::Receiver;
use ros2_client::{
    Context, MessageTypeName, Name, Node, NodeName, NodeOptions, Publisher, QosProfile,
    ServiceMapping, ServiceTypeName, Subscription,
};
use rustdds::mio1::{Events, Interest, Poll, Token};
use rustdds::{DomainParticipantBuilder, RTPSEntity};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Far longer than discovery takes (about a second); only against a hang.
const DEADLINE: Duration = Duration::from_secs(60);
/// How often a frame or command is re-sent while discovery matches the endpoints.
const RESEND: Duration = Duration::from_millis(20);

fn stamp(i: u32) -> Time {
    Time {
        sec: (i / 100) as i32,
        nanosec: (i % 100) * 10_000_000,
    }
}

/// The `i` of `stamp(i)`.
fn index(t: Time) -> u32 {
    t.sec as u32 * 100 + t.nanosec / 10_000_000
}

fn frame(i: u32) -> Frame {
    let header = Header {
        stamp: stamp(i),
        frame_id: String::new(),
    };
    Frame {
        clock: Clock { clock: stamp(i) },
        joint_states: JointState {
            header: header.clone(),
            name: vec!["shoulder".into(), "elbow".into()],
            position: vec![f64::from(i), 0.5],
            velocity: vec![0.0, -0.25],
            effort: vec![],
        },
        tf: TFMessage {
            transforms: vec![TransformStamped {
                header: Header {
                    frame_id: "base".into(),
                    ..header
                },
                child_frame_id: "upper_arm".into(),
                transform: Transform::default(),
            }],
        },
    }
}

fn latched() -> Latched {
    Latched {
        tf_static: TFMessage {
            transforms: vec![TransformStamped {
                header: Header {
                    stamp: Time::default(),
                    frame_id: "world".into(),
                },
                child_frame_id: "base".into(),
                transform: Transform {
                    translation: Vector3 {
                        x: 0.0,
                        y: 0.0,
                        z: 0.75,
                    },
                    ..Transform::default()
                },
            }],
        },
        robot_description: Some("<robot name=\"test\"/>".into()),
    }
}

/// A running DDS thread, with the bridge's ends.
struct Armsim {
    handle: Ros2Handle,
    inbound: Receiver<Inbound>,
    waker: SimWaker,
}

fn start(latched: Latched) -> Armsim {
    let (tx, inbound) = crossbeam_channel::bounded(INBOUND_CAPACITY);
    let waker = SimWaker::default();
    let handle = Ros2Handle::spawn(
        NodeConfig {
            options: Ros2Options::default(),
            latched,
            waker: waker.clone(),
        },
        tx,
    )
    .expect("the DDS thread starts");
    Armsim {
        handle,
        inbound,
        waker,
    }
}

impl Armsim {
    /// The next inbound message `pick` accepts, skipping the others (`tick` runs between
    /// short waits, to re-send whatever the test is sending).
    fn wait<T>(
        &self,
        deadline: Instant,
        mut tick: impl FnMut(),
        mut pick: impl FnMut(Inbound) -> Option<T>,
    ) -> T {
        loop {
            tick();
            let left = deadline
                .checked_duration_since(Instant::now())
                .expect("the awaited message did not arrive before the deadline");
            match self.inbound.recv_timeout(left.min(RESEND)) {
                Ok(msg) => {
                    if let Some(t) = pick(msg) {
                        return t;
                    }
                }
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
                Err(e) => panic!("the DDS thread hung up: {e}"),
            }
        }
    }
}

/// A second participant, as a ROS node on the same host would be.
struct Peer {
    node: Node,
    _context: Context,
    prefix: [u8; 12],
    poll: Poll,
    events: Events,
}

fn peer() -> Peer {
    let participant = DomainParticipantBuilder::new(0)
        .with_only_networks([Ipv4Addr::LOCALHOST])
        .socket_receive_buffer_size(0)
        .socket_send_buffer_size(0)
        .build()
        .expect("the peer's participant");
    let mut prefix = [0; 12];
    prefix.copy_from_slice(&participant.guid().to_bytes()[..12]);
    let context = Context::from_domain_participant(participant).expect("the peer's context");
    let node = context
        .new_node(
            NodeName::new("/", "peer").unwrap(),
            NodeOptions::new().enable_rosout(false),
        )
        .expect("the peer's node");
    Peer {
        node,
        _context: context,
        prefix,
        poll: Poll::new().unwrap(),
        events: Events::with_capacity(16),
    }
}

impl Peer {
    fn topic(&self, name: &str, pkg: &str, ty: &str, qos: &QosProfile) -> rustdds::Topic {
        self.node
            .create_topic(
                &Name::parse(name).unwrap(),
                MessageTypeName::new(pkg, ty),
                qos,
            )
            .unwrap()
    }

    fn subscribe<M: DeserializeOwned + 'static>(
        &mut self,
        name: &str,
        pkg: &str,
        ty: &str,
        qos: QosProfile,
        token: usize,
    ) -> Subscription<M> {
        let topic = self.topic(name, pkg, ty, &qos);
        let mut sub = self.node.create_subscription(&topic, Some(qos)).unwrap();
        self.poll
            .registry()
            .register(&mut sub, Token(token), Interest::READABLE)
            .unwrap();
        sub
    }

    fn publisher<M: Serialize>(&mut self, name: &str, pkg: &str, ty: &str) -> Publisher<M> {
        let qos = QosProfile::publisher_default();
        let topic = self.topic(name, pkg, ty, &qos);
        self.node.create_publisher(&topic, Some(qos)).unwrap()
    }

    /// Runs `step` after each wake or short wait until it returns something.
    fn wait<T>(&mut self, deadline: Instant, mut step: impl FnMut() -> Option<T>) -> T {
        loop {
            if let Some(t) = step() {
                return t;
            }
            let left = deadline
                .checked_duration_since(Instant::now())
                .expect("the awaited sample did not arrive before the deadline");
            self.poll
                .poll(&mut self.events, Some(left.min(RESEND)))
                .unwrap();
        }
    }
}

/// Every sample a subscription holds now.
fn take_all<M: DeserializeOwned + 'static>(sub: &Subscription<M>) -> Vec<M> {
    let mut out = Vec::new();
    while let Some((msg, _)) = sub.take().expect("a sample that decodes") {
        out.push(msg);
    }
    out
}

#[test]
fn frames_reach_a_peer_and_latched_topics_a_late_one() {
    if !netns::isolated("frames_reach_a_peer_and_latched_topics_a_late_one") {
        return;
    }
    let deadline = Instant::now() + DEADLINE;
    let armsim = start(latched());
    let mut peer = peer();
    // rclcpp's ClockQoS: best effort, keep last 1; it must match our reliable /clock.
    let clock: Subscription<Clock> = peer.subscribe(
        "/clock",
        "rosgraph_msgs",
        "Clock",
        QosProfile::subscription_default(),
        1,
    );
    let joint_states: Subscription<JointState> = peer.subscribe(
        "/joint_states",
        "sensor_msgs",
        "JointState",
        qos::JOINT_STATES,
        2,
    );
    let tf: Subscription<TFMessage> = peer.subscribe("/tf", "tf2_msgs", "TFMessage", qos::TF, 3);

    let mut i = 0;
    let (mut clocks, mut states, mut tfs) = (Vec::new(), Vec::new(), Vec::new());
    peer.wait(deadline, || {
        clocks.extend(take_all(&clock));
        states.extend(take_all(&joint_states));
        tfs.extend(take_all(&tf));
        if clocks.len() >= 2 && !states.is_empty() && !tfs.is_empty() {
            return Some(());
        }
        i += 1;
        armsim.handle.send_frames([frame(i)]);
        None
    });
    for state in &states {
        let sent = frame(state.position[0] as u32);
        assert_eq!(*state, sent.joint_states, "joint_states arrive as sent");
    }
    for t in &tfs {
        let sent = frame(index(t.transforms[0].header.stamp));
        assert_eq!(t.transforms[0], sent.tf.transforms[0]);
    }
    assert!(
        clocks.windows(2).all(|w| w[0].clock < w[1].clock),
        "/clock only increases: {clocks:?}"
    );
    let stats = armsim.handle.stats();
    assert!(stats.frames_published >= 2, "{stats:?}");
    assert_eq!(stats.write_errors, 0, "{stats:?}");

    // Late joiners, subscribed only now, as tf2's listener and robot_state_publisher's
    // readers do: transient local, reliable.
    let tf_static: Subscription<TFMessage> =
        peer.subscribe("/tf_static", "tf2_msgs", "TFMessage", qos::LATCHED, 4);
    let description: Subscription<StdString> =
        peer.subscribe("/robot_description", "std_msgs", "String", qos::LATCHED, 5);
    let (mut statics, mut descriptions) = (Vec::new(), Vec::new());
    peer.wait(deadline, || {
        statics.extend(take_all(&tf_static));
        descriptions.extend(take_all(&description));
        (!statics.is_empty() && !descriptions.is_empty()).then_some(())
    });
    assert_eq!(statics, [latched().tf_static]);
    assert_eq!(descriptions[0].data, "<robot name=\"test\"/>");

    drop((clock, joint_states, tf, tf_static, description));
    drop(peer);
    let Armsim {
        handle, inbound, ..
    } = armsim;
    drop(handle);
    // The thread has ended: its sender is gone, so the channel disconnects once drained.
    while inbound.try_recv().is_ok() {}
    assert!(matches!(
        inbound.try_recv(),
        Err(crossbeam_channel::TryRecvError::Disconnected)
    ));
}

#[test]
fn commands_come_with_the_peers_prefix_after_its_peer_up() {
    if !netns::isolated("commands_come_with_the_peers_prefix_after_its_peer_up") {
        return;
    }
    let deadline = Instant::now() + DEADLINE;
    let armsim = start(Latched::default());
    let mut peer = peer();
    let topic = "/forward_position_controller/commands";
    let commands: Publisher<Float64MultiArray> =
        peer.publisher(topic, "std_msgs", "Float64MultiArray");
    let first = Float64MultiArray {
        data: vec![0.25, -0.5],
        ..Default::default()
    };

    let own = armsim.handle.prefix();
    assert_ne!(own, peer.prefix);
    let mut peer_up = false;
    let got = armsim.wait(
        deadline,
        || commands.publish(first.clone()).unwrap(),
        |msg| match msg {
            Inbound::PeerUp { prefix, vendor, .. } => {
                assert_ne!(prefix, own, "our own participant is no peer");
                if prefix == peer.prefix {
                    assert_eq!(vendor, "RustDDS");
                    peer_up = true;
                }
                None
            }
            Inbound::ForwardCommand { prefix, msg } => {
                assert!(peer_up, "the command came before its PeerUp");
                Some((prefix, msg))
            }
            other => panic!("unexpected {other:?}"),
        },
    );
    assert_eq!(got, (peer.prefix, first.clone()));
    assert!(
        armsim.waker.wait_until(Instant::now()),
        "the SimWaker was rung"
    );

    // Samples that do not decode are counted and dropped (with a log line), never passed on
    // as a garbled command; the good ones around them still arrive.
    let garbage: Publisher<Wire<u8>> = peer.publisher(topic, "std_msgs", "Float64MultiArray");
    let second = Float64MultiArray {
        data: vec![1.0, 2.0],
        ..Default::default()
    };
    assert_eq!(armsim.handle.stats().undecodable, 0);
    armsim.wait(
        deadline,
        || {
            garbage.publish(Wire(7)).unwrap();
            commands.publish(second.clone()).unwrap();
        },
        |msg| match msg {
            Inbound::ForwardCommand { msg, .. } if msg == first => None, // still in flight
            Inbound::ForwardCommand { msg, .. } => {
                assert_eq!(msg, second, "only whole commands are passed on");
                (armsim.handle.stats().undecodable > 0).then_some(())
            }
            Inbound::PeerUp { .. } => None,
            other => panic!("unexpected {other:?}"),
        },
    );

    // The writer goes away: its participant has no command writer left (the garbage writer
    // is also on that topic, so drop both).
    drop(garbage);
    drop(commands);
    armsim.wait(
        deadline,
        || {},
        |msg| match msg {
            Inbound::CommandWriterLost {
                prefix,
                writers_left: 0,
            } if prefix == peer.prefix => Some(()),
            _ => None,
        },
    );
    // The participant goes away.
    let prefix = peer.prefix;
    drop(peer);
    armsim.wait(
        deadline,
        || {},
        |msg| match msg {
            Inbound::PeerDown { prefix: p } if p == prefix => Some(()),
            Inbound::PeerDown { prefix: p } => panic!("PeerDown for a stranger {p:?}"),
            _ => None,
        },
    );
}

#[test]
fn service_requests_come_out_and_replies_reach_the_client() {
    if !netns::isolated("service_requests_come_out_and_replies_reach_the_client") {
        return;
    }
    let deadline = Instant::now() + DEADLINE;
    let armsim = start(Latched::default());
    let mut peer = peer();
    // Enhanced: the mapping a Fast DDS `ros2 service call` uses.
    let mut get_state = peer
        .node
        .create_client::<Wire<GetSimulationStateRequest>, Wire<GetSimulationStateResponse>>(
            ServiceMapping::Enhanced,
            &Name::parse("/get_simulation_state").unwrap(),
            &ServiceTypeName::new(PACKAGE, "GetSimulationState"),
            qos::SERVICE,
            qos::SERVICE,
        )
        .unwrap();
    let mut step = peer
        .node
        .create_client::<Wire<StepSimulationRequest>, Wire<StepSimulationResponse>>(
            ServiceMapping::Enhanced,
            &Name::parse("/step_simulation").unwrap(),
            &ServiceTypeName::new(PACKAGE, "StepSimulation"),
            qos::SERVICE,
            qos::SERVICE,
        )
        .unwrap();
    peer.poll
        .registry()
        .register(&mut get_state, Token(1), Interest::READABLE)
        .unwrap();
    peer.poll
        .registry()
        .register(&mut step, Token(2), Interest::READABLE)
        .unwrap();

    // Requests sent before the server is matched are lost, so send until one comes out.
    let ticket = armsim.wait(
        deadline,
        || {
            get_state
                .send_request(Wire(GetSimulationStateRequest::default()))
                .unwrap();
        },
        |msg| match msg {
            Inbound::Request {
                prefix,
                ticket,
                request,
            } => {
                assert_eq!(prefix, peer.prefix, "the client's participant");
                assert_eq!(ticket.service, Service::GetSimulationState);
                assert_eq!(
                    request,
                    ServiceRequest::GetSimulationState(GetSimulationStateRequest::default())
                );
                Some(ticket)
            }
            _ => None,
        },
    );
    let paused = GetSimulationStateResponse {
        state: SimulationState {
            state: SimulationState::STATE_PAUSED,
        },
        result: SimResult::ok(),
    };
    armsim
        .handle
        .reply(ticket, ServiceResponse::GetSimulationState(paused.clone()));
    let reply = peer.wait(deadline, || {
        get_state.receive_response().unwrap().map(|(_, r)| r)
    });
    assert_eq!(reply.0, paused);

    // A second service, now matched: one request, one ticket, one reply.
    step.send_request(Wire(StepSimulationRequest { steps: 24 }))
        .unwrap();
    let ticket = armsim.wait(
        deadline,
        || {},
        |msg| match msg {
            Inbound::Request {
                ticket, request, ..
            } if ticket.service == Service::StepSimulation => {
                assert_eq!(
                    request,
                    ServiceRequest::StepSimulation(StepSimulationRequest { steps: 24 })
                );
                Some(ticket)
            }
            _ => None,
        },
    );
    let failed = StepSimulationResponse {
        result: SimResult::failed(
            SimResult::RESULT_OPERATION_FAILED,
            "simulation is not paused",
        ),
    };
    armsim
        .handle
        .reply(ticket, ServiceResponse::StepSimulation(failed.clone()));
    let reply = peer.wait(deadline, || {
        step.receive_response().unwrap().map(|(_, r)| r)
    });
    assert_eq!(reply.0, failed);
}

#[test]
fn camera_images_reach_a_peer_from_the_image_thread() {
    if !netns::isolated("camera_images_reach_a_peer_from_the_image_thread") {
        return;
    }
    let deadline = Instant::now() + DEADLINE;
    let (outlet, frames) = crossbeam_channel::bounded(2);
    let (tx, _inbound) = crossbeam_channel::bounded(INBOUND_CAPACITY);
    let handle = Ros2Handle::spawn_with_images(
        NodeConfig {
            options: Ros2Options::default(),
            latched: Latched::default(),
            waker: SimWaker::default(),
        },
        tx,
        Some(ImageFeed {
            cameras: vec!["front".into()],
            frames,
        }),
    )
    .expect("the DDS thread starts with its image thread");
    let mut peer = peer();
    let image: Subscription<Image> =
        peer.subscribe("/front/image_raw", "sensor_msgs", "Image", qos::IMAGE, 1);
    let info: Subscription<CameraInfo> = peer.subscribe(
        "/front/camera_info",
        "sensor_msgs",
        "CameraInfo",
        qos::IMAGE,
        2,
    );
    let tf: Subscription<TFMessage> = peer.subscribe("/tf", "tf2_msgs", "TFMessage", qos::TF, 3);
    let camera_frame = Arc::new(CameraFrame {
        camera: "front".into(),
        episode: 0,
        step: 240,
        sim_time: 1.0,
        // About 58 kB, so DDS fragments it; small enough for the OS's default receive buffer.
        width: 160,
        height: 120,
        state: CameraState {
            pos: [1.0, 2.0, 3.0],
            quat_world: [1.0, 0.0, 0.0, 0.0],
            intrinsics: [[100.0, 0.0, 80.0], [0.0, 100.0, 60.0], [0.0, 0.0, 1.0]],
        },
        rgb: (0..160 * 120 * 3).map(|i| (i % 251) as u8).collect(),
        depth: None,
    });
    let (mut images, mut infos, mut tfs) = (Vec::new(), Vec::new(), Vec::new());
    peer.wait(deadline, || {
        images.extend(take_all(&image));
        infos.extend(take_all(&info));
        tfs.extend(take_all(&tf));
        if !images.is_empty() && !infos.is_empty() && !tfs.is_empty() {
            return Some(());
        }
        // Latest-only, as the bridge sends: a full queue just means one is on its way.
        let _ = outlet.try_send(Arc::clone(&camera_frame));
        None
    });
    let want = armsim::protocol::ros2::cameras::messages(&camera_frame);
    assert_eq!(images[0], want.image);
    assert_eq!(infos[0], want.info);
    assert_eq!(tfs[0].transforms, [want.optical]);
    assert!(handle.stats().images_published >= 1);
    drop((image, info, tf));
    drop(peer);
    drop(handle);
}
