//! A ROS 2 peer for the end-to-end tests: a ros2-client `Context` + `Node` in the test
//! process (its own DDS participant, inside the test's network namespace), with blocking
//! helpers that wait on mio events under a generous deadline, never on sleeps.
//!
//! Matching is read from the participant's status events (`RemoteReaderMatched`,
//! `RemoteWriterMatched`), so a service request or a command is written only once armsim's
//! endpoint has matched ours: a volatile sample written before that would be lost.

#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use armsim::protocol::ros2::msgs::Time;
use ros2_client::{
    Client, Context, MessageTypeName, Name, Node, NodeName, NodeOptions, Publisher, QosProfile,
    ServiceMapping, ServiceTypeName, Subscription,
};
use rustdds::mio1::{Events, Interest, Poll, Token};
use rustdds::{DomainParticipantBuilder, DomainParticipantStatusEvent, GUID, StatusEvented};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// How long any one wait may take before the test fails: only against a hang (discovery
/// takes about a second here).
pub const DEADLINE: Duration = Duration::from_secs(30);

const STATUS: Token = Token(0);

/// The wire form of a core message for ros2-client's service API, which wants its own
/// `Message` trait (the orphan rule keeps us from implementing it on core's types).
/// `transparent` keeps the bytes identical.
#[derive(Serialize, Deserialize, Clone, Debug)]
#[serde(transparent)]
pub struct Wire<T>(pub T);

impl<T: Serialize + DeserializeOwned> ros2_client::Message for Wire<T> {}

/// A subscription registered with its peer's poll.
pub struct Sub<T: 'static> {
    pub inner: Subscription<T>,
    /// The DDS topic (`rt/joint_states`).
    pub topic: String,
}

impl<T: DeserializeOwned + 'static> Sub<T> {
    /// The next sample already received, if any.
    pub fn try_take(&self) -> Option<T> {
        self.inner
            .take()
            .unwrap_or_else(|e| panic!("reading {}: {e:?}", self.topic))
            .map(|(m, _)| m)
    }
}

/// A writer on a topic, with its DDS name for the match check.
pub struct Pub<T: Serialize> {
    pub inner: Publisher<T>,
    pub topic: String,
}

/// A service client registered with its peer's poll.
pub struct Service<Req, Resp>
where
    Req: Serialize + DeserializeOwned + 'static,
    Resp: Serialize + DeserializeOwned + 'static,
{
    inner: Client<Wire<Req>, Wire<Resp>>,
    request_topic: String,
    reply_topic: String,
}

/// One test participant and its node.
pub struct Peer {
    // Dropped after the node (fields drop in order), so the participant outlives its endpoints.
    pub node: Node,
    pub context: Context,
    poll: Poll,
    events: Events,
    next_token: usize,
    /// Remote endpoints seen by discovery: GUID → DDS topic.
    remote_topic: HashMap<GUID, String>,
    /// Remote readers matched by one of our writers, and remote writers by our readers.
    matched_readers: HashSet<GUID>,
    matched_writers: HashSet<GUID>,
    /// Remote participants discovered (our own included: rustdds discovers itself).
    pub participants: HashSet<GUID>,
}

impl Peer {
    /// A participant on `domain` (default builder: every interface, which in the test's
    /// namespace is only `lo`, multicast on) with a node `/<name>` (in the root namespace, as armsim's relative names are).
    pub fn new(domain: u16, name: &str) -> Self {
        let participant = DomainParticipantBuilder::new(domain)
            .socket_receive_buffer_size(0)
            .socket_send_buffer_size(0)
            .build()
            .expect("the test participant starts");
        let mut status = participant.status_listener();
        let context =
            Context::from_domain_participant(participant).expect("the test context starts");
        let node = context
            .new_node(
                NodeName::new("/", name).expect("a valid node name"),
                NodeOptions::new().enable_rosout(false),
            )
            .expect("the test node starts");
        let poll = Poll::new().expect("a poll");
        poll.registry()
            .register(status.as_status_source_mio1(), STATUS, Interest::READABLE)
            .expect("the status listener registers");
        Self {
            node,
            context,
            poll,
            events: Events::with_capacity(64),
            next_token: 1,
            remote_topic: HashMap::new(),
            matched_readers: HashSet::new(),
            matched_writers: HashSet::new(),
            participants: HashSet::new(),
        }
    }

    fn token(&mut self) -> Token {
        self.next_token += 1;
        Token(self.next_token)
    }

    /// Subscribes to `name` (a ROS name: `/clock` absolute, `joint_states` relative to the
    /// root namespace) of type `pkg/msg/ty` with `qos`.
    pub fn subscribe<T: DeserializeOwned + 'static>(
        &mut self,
        name: &str,
        (pkg, ty): (&str, &str),
        qos: QosProfile,
    ) -> Sub<T> {
        let ros_name = absolute(name);
        let topic = self
            .node
            .create_topic(&ros_name, MessageTypeName::new(pkg, ty), &qos)
            .unwrap_or_else(|e| panic!("topic {name}: {e:?}"));
        let mut inner = self
            .node
            .create_subscription::<T>(&topic, Some(qos))
            .unwrap_or_else(|e| panic!("subscription {name}: {e:?}"));
        let token = self.token();
        self.poll
            .registry()
            .register(&mut inner, token, Interest::READABLE)
            .expect("the subscription registers");
        Sub {
            inner,
            topic: dds_topic("rt", name, ""),
        }
    }

    /// A writer on `name` of type `pkg/msg/ty` with `qos`.
    pub fn publisher<T: Serialize>(
        &mut self,
        name: &str,
        (pkg, ty): (&str, &str),
        qos: QosProfile,
    ) -> Pub<T> {
        let ros_name = absolute(name);
        let topic = self
            .node
            .create_topic(&ros_name, MessageTypeName::new(pkg, ty), &qos)
            .unwrap_or_else(|e| panic!("topic {name}: {e:?}"));
        let inner = self
            .node
            .create_publisher::<T>(&topic, Some(qos))
            .unwrap_or_else(|e| panic!("publisher {name}: {e:?}"));
        Pub {
            inner,
            topic: dds_topic("rt", name, ""),
        }
    }

    /// A client of the `simulation_interfaces` service `name` (`reset_simulation`) of type
    /// `ty` (`ResetSimulation`), with the mapping Fast DDS (ROS 2's default RMW) uses.
    pub fn client<Req, Resp>(&mut self, name: &str, ty: &str) -> Service<Req, Resp>
    where
        Req: Serialize + DeserializeOwned + Clone + 'static,
        Resp: Serialize + DeserializeOwned + 'static,
    {
        let qos = QosProfile::publisher_default()
            .history(ros2_client::qos::History::KeepLast { depth: 10 });
        let ros_name = absolute(name);
        let mut inner = self
            .node
            .create_client::<Wire<Req>, Wire<Resp>>(
                ServiceMapping::Enhanced,
                &ros_name,
                &ServiceTypeName::new("simulation_interfaces", ty),
                qos.clone(),
                qos,
            )
            .unwrap_or_else(|e| panic!("client {name}: {e:?}"));
        let token = self.token();
        self.poll
            .registry()
            .register(&mut inner, token, Interest::READABLE)
            .expect("the client registers");
        Service {
            inner,
            request_topic: dds_topic("rq", name, "Request"),
            reply_topic: dds_topic("rr", name, "Reply"),
        }
    }

    /// Polls until `check` gives a value, reading status events on the way; panics with `what`
    /// after [`DEADLINE`].
    pub fn wait<R>(&mut self, what: &str, mut check: impl FnMut(&mut Self) -> Option<R>) -> R {
        let deadline = Instant::now() + DEADLINE;
        loop {
            self.drain_status();
            if let Some(r) = check(self) {
                return r;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "timed out waiting for {what} ({} participants discovered, {} remote endpoints, {} readers and {} writers matched: {:?})",
                self.participants.len(),
                self.remote_topic.len(),
                self.matched_readers.len(),
                self.matched_writers.len(),
                self.remote_topic.values().collect::<Vec<_>>()
            );
            self.poll
                .poll(&mut self.events, Some(left))
                .expect("poll works");
        }
    }

    /// The next sample of `sub`.
    pub fn next<T: DeserializeOwned + 'static>(&mut self, sub: &Sub<T>) -> T {
        let what = format!("a sample on {}", sub.topic);
        self.wait(&what, |_| sub.try_take())
    }

    /// Samples of `sub` until `pred` holds for one, which is returned; `seen` gets each.
    pub fn next_where<T: DeserializeOwned + 'static>(
        &mut self,
        sub: &Sub<T>,
        what: &str,
        mut pred: impl FnMut(&T) -> bool,
    ) -> T {
        self.wait(what, |_| {
            while let Some(m) = sub.try_take() {
                if pred(&m) {
                    return Some(m);
                }
            }
            None
        })
    }

    /// Every sample of `sub` received so far, without waiting.
    pub fn drain<T: DeserializeOwned + 'static>(&mut self, sub: &Sub<T>) -> Vec<T> {
        std::iter::from_fn(|| sub.try_take()).collect()
    }

    /// Waits until one of our writers on `topic` has matched a remote reader (armsim's).
    pub fn wait_reader_matched(&mut self, topic: &str) {
        let what = format!("a remote reader on {topic} to match");
        self.wait(&what, |p| p.reader_matched(topic).then_some(()));
    }

    /// Waits until `publisher` has matched armsim's reader.
    pub fn wait_matched<T: Serialize>(&mut self, publisher: &Pub<T>) {
        let topic = publisher.topic.clone();
        self.wait_reader_matched(&topic);
    }

    fn reader_matched(&self, topic: &str) -> bool {
        self.matched_readers
            .iter()
            .any(|g| self.remote_topic.get(g).is_some_and(|t| t == topic))
    }

    fn writer_matched(&self, topic: &str) -> bool {
        self.matched_writers
            .iter()
            .any(|g| self.remote_topic.get(g).is_some_and(|t| t == topic))
    }

    /// Calls `service` with `request` once its server has matched, and waits for the reply.
    pub fn call<Req, Resp>(&mut self, service: &Service<Req, Resp>, request: Req) -> Resp
    where
        Req: Serialize + DeserializeOwned + Clone + 'static,
        Resp: Serialize + DeserializeOwned + 'static,
    {
        let what = format!(
            "the server of {} / {} to match",
            service.request_topic, service.reply_topic
        );
        self.wait(&what, |p| {
            (p.reader_matched(&service.request_topic) && p.writer_matched(&service.reply_topic))
                .then_some(())
        });
        let id = service
            .inner
            .send_request(Wire(request))
            .unwrap_or_else(|e| panic!("sending on {}: {e:?}", service.request_topic));
        let what = format!("the reply on {}", service.reply_topic);
        self.wait(&what, |_| {
            loop {
                match service.inner.receive_response() {
                    Ok(Some((rid, Wire(resp)))) if rid == id => return Some(resp),
                    Ok(Some(_)) => continue, // another client's reply
                    Ok(None) => return None,
                    Err(e) => panic!("reading {}: {e:?}", service.reply_topic),
                }
            }
        })
    }

    fn drain_status(&mut self) {
        let listener = self.context.domain_participant().status_listener();
        while let Some(event) = listener.try_recv_status() {
            match event {
                DomainParticipantStatusEvent::ParticipantDiscovered { dpd } => {
                    self.participants.insert(dpd.guid);
                }
                DomainParticipantStatusEvent::ReaderDetected { reader } => {
                    self.remote_topic.insert(reader.guid, reader.topic_name);
                }
                DomainParticipantStatusEvent::WriterDetected { writer } => {
                    self.remote_topic.insert(writer.guid, writer.topic_name);
                }
                DomainParticipantStatusEvent::RemoteReaderMatched { remote_reader, .. } => {
                    self.matched_readers.insert(remote_reader);
                }
                DomainParticipantStatusEvent::RemoteWriterMatched { remote_writer, .. } => {
                    self.matched_writers.insert(remote_writer);
                }
                DomainParticipantStatusEvent::ReaderLost { guid, .. } => {
                    self.matched_readers.remove(&guid);
                }
                DomainParticipantStatusEvent::WriterLost { guid, .. } => {
                    self.matched_writers.remove(&guid);
                }
                _ => {}
            }
        }
    }
}

/// `name` resolved in the root namespace. ros2-client would write a relative name under the
/// node namespace `/` as `rt//name`, so relative names are made absolute here (as armsim's DDS
/// thread does).
fn absolute(name: &str) -> Name {
    let full = format!("/{}", name.trim_start_matches('/'));
    Name::parse(&full).unwrap_or_else(|e| panic!("{full}: {e:?}"))
}

/// The DDS topic of a ROS name in the root namespace: `rt/joint_states`, `rq/resetRequest`.
fn dds_topic(prefix: &str, name: &str, suffix: &str) -> String {
    format!("{prefix}/{}{suffix}", name.trim_start_matches('/'))
}

/// Seconds of a ROS time.
pub fn secs(t: Time) -> f64 {
    t.sec as f64 + t.nanosec as f64 * 1e-9
}

/// Nanoseconds of a ROS time, exact.
pub fn nanos(t: Time) -> i64 {
    t.sec as i64 * 1_000_000_000 + t.nanosec as i64
}
