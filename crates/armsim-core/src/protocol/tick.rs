//! MetaSim's protocol core (docs/protocols/metasim.md), generic and sans-IO: the
//! Transport / Codec / CommandAdapter seams and the server tick that orders them, so every
//! protocol shares one pinned-down step sequence and its semantics can be unit-tested without
//! Bevy or sockets.
//!
//! MetaSim's tick: 1 read state → 2 sample the transport's latest command and token →
//! 3 decode only on a new token → 4 adapt the latest decoded command (every tick, so a slow
//! controller's last command is reused) → 5 apply if any, step, advance protocol time →
//! 6 encode the post-step state and publish. The ECS, which owns the physics step, calls the
//! phases: [`ProtocolTick::sample`] and [`ProtocolTick::adapt`] before the step,
//! [`ProtocolTick::advance`] and [`ProtocolTick::publish`] after it. The unit tests run them in
//! that order against a fake simulator.

use crossbeam_channel::{Receiver, Sender, TryRecvError, TrySendError};

/// Owns the asynchronous I/O of one protocol and exposes it as "latest command" + "publish".
pub trait Transport {
    /// One received message, before decoding.
    type Inbound;
    /// One message to send, after encoding.
    type Outbound;

    /// The newest received message and a token that changes whenever a new message arrives.
    /// Tokens must be monotonic for the transport's lifetime: a transport that reuses one mutable
    /// message object must bump the token on every rewrite, or the change is never decoded.
    fn latest_command_with_token(&mut self) -> Option<(u64, &Self::Inbound)>;

    /// Hands one message to the I/O side. Must not block the simulation.
    fn publish(&mut self, msg: Self::Outbound);
}

/// Converts between transport messages and decoded protocol objects.
pub trait Codec {
    type Inbound;
    type Outbound;
    type Command;
    type State;
    type Error: std::error::Error;

    fn decode(&mut self, wire: &Self::Inbound) -> Result<Self::Command, Self::Error>;

    /// Appends zero or more messages for `state` to `out`; zero lets a codec publish at a lower
    /// rate than the simulation steps.
    fn encode(&mut self, state: &Self::State, time: ProtocolTime, out: &mut Vec<Self::Outbound>);
}

/// Turns the latest decoded command plus the current state into simulator targets.
pub trait CommandAdapter {
    type Command;
    type State;
    type Action;

    /// `None` means "step without changing targets".
    fn adapt(&mut self, cmd: &Self::Command, state: &Self::State) -> Option<Self::Action>;
}

/// Protocol time: completed ticks since start (or the last [`ProtocolTick::reset_time`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProtocolTime {
    pub ticks: u64,
    /// `ticks * dt`, computed rather than accumulated so it never drifts from the tick count.
    pub seconds: f64,
}

/// What step 2–3 of a tick found.
#[derive(Clone, Debug, PartialEq)]
pub enum SampleOutcome<E> {
    /// The transport has no message. A command decoded earlier is still the latest and is reused.
    NoMessage,
    /// Same token as last time: nothing decoded, the latest command is reused.
    Unchanged,
    /// A new token decoded cleanly and is now the latest command.
    Decoded { token: u64 },
    /// A new token failed to decode. Counted in [`ProtocolTick::decode_errors`]; the previous good
    /// command (if any) stays the latest. The same token is not decoded again.
    DecodeError { token: u64, error: E },
}

impl<E> SampleOutcome<E> {
    /// True when a new, valid command arrived this tick (what a lockstep gate waits for).
    pub fn is_new_command(&self) -> bool {
        matches!(self, SampleOutcome::Decoded { .. })
    }
}

/// The server side of the tick for one transport: remembers the last decoded token and command,
/// counts decode errors, keeps protocol time.
pub struct ProtocolTick<C: Codec, A> {
    codec: C,
    adapter: A,
    dt: f64,
    last_token: Option<u64>,
    latest: Option<C::Command>,
    decode_errors: u64,
    ticks: u64,
    // Reused across ticks so publishing does not allocate once the codec's output size settles.
    outbox: Vec<C::Outbound>,
}

impl<C, A> ProtocolTick<C, A>
where
    C: Codec,
    A: CommandAdapter<Command = C::Command, State = C::State>,
{
    /// `dt` is the simulated seconds one tick advances protocol time by.
    pub fn new(codec: C, adapter: A, dt: f64) -> Self {
        Self {
            codec,
            adapter,
            dt,
            last_token: None,
            latest: None,
            decode_errors: 0,
            ticks: 0,
            outbox: Vec::new(),
        }
    }

    /// Steps 2–3: take the transport's latest message and decode it if its token is new.
    pub fn sample<T>(&mut self, transport: &mut T) -> SampleOutcome<C::Error>
    where
        T: Transport<Inbound = C::Inbound>,
    {
        let Some((token, wire)) = transport.latest_command_with_token() else {
            return SampleOutcome::NoMessage;
        };
        if self.last_token == Some(token) {
            return SampleOutcome::Unchanged;
        }
        // Recorded before decoding so a bad message is reported once, not on every later tick.
        self.last_token = Some(token);
        match self.codec.decode(wire) {
            Ok(cmd) => {
                self.latest = Some(cmd);
                SampleOutcome::Decoded { token }
            }
            Err(error) => {
                self.decode_errors = self.decode_errors.saturating_add(1);
                SampleOutcome::DecodeError { token, error }
            }
        }
    }

    /// Step 4: the adapter sees the latest decoded command on every tick. Before any command has
    /// been decoded the adapter is not called and there is no action (the sim steps untouched).
    pub fn adapt(&mut self, state: &C::State) -> Option<A::Action> {
        let cmd = self.latest.as_ref()?;
        self.adapter.adapt(cmd, state)
    }

    /// Step 5's clock part: one tick of protocol time has passed. Call once per physics step.
    pub fn advance(&mut self) {
        self.ticks = self.ticks.saturating_add(1);
    }

    /// Step 6: encode `state` (the post-step state) and publish; returns how many messages went
    /// out. Also usable without a step, e.g. for the greeting frame of a new lockstep client.
    pub fn publish<T>(&mut self, transport: &mut T, state: &C::State) -> usize
    where
        T: Transport<Outbound = C::Outbound>,
    {
        self.codec.encode(state, self.time(), &mut self.outbox);
        let n = self.outbox.len();
        for msg in self.outbox.drain(..) {
            transport.publish(msg);
        }
        n
    }

    pub fn time(&self) -> ProtocolTime {
        ProtocolTime {
            ticks: self.ticks,
            seconds: self.ticks as f64 * self.dt,
        }
    }

    /// Restarts protocol time at tick 0 (e.g. a new lockstep client counts steps from 0).
    pub fn reset_time(&mut self) {
        self.ticks = 0;
    }

    /// Drops the latest command so the adapter stops being called (controller gone, ownership
    /// revoked, reset). The last token is kept: the transport's stale message is not re-decoded.
    pub fn forget_command(&mut self) {
        self.latest = None;
    }

    /// Forgets the command and the last token, for when the transport is replaced by one whose
    /// tokens start over.
    pub fn reset_command(&mut self) {
        self.latest = None;
        self.last_token = None;
    }

    pub fn latest_command(&self) -> Option<&C::Command> {
        self.latest.as_ref()
    }

    pub fn last_token(&self) -> Option<u64> {
        self.last_token
    }

    pub fn decode_errors(&self) -> u64 {
        self.decode_errors
    }

    pub fn dt(&self) -> f64 {
        self.dt
    }

    pub fn codec(&self) -> &C {
        &self.codec
    }

    pub fn codec_mut(&mut self) -> &mut C {
        &mut self.codec
    }

    pub fn adapter(&self) -> &A {
        &self.adapter
    }

    pub fn adapter_mut(&mut self) -> &mut A {
        &mut self.adapter
    }
}

/// A latest-only slot with a monotonic token: what a transport needs to satisfy
/// [`Transport::latest_command_with_token`] when messages arrive faster than ticks.
#[derive(Clone, Debug)]
pub struct LatestCommand<T> {
    token: u64,
    value: Option<T>,
}

impl<T> Default for LatestCommand<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> LatestCommand<T> {
    /// Empty, token 0; the first message gets token 1.
    pub const fn new() -> Self {
        Self {
            token: 0,
            value: None,
        }
    }

    /// Replaces the latest message and bumps the token.
    pub fn set(&mut self, value: T) {
        self.value = Some(value);
        self.bump();
    }

    /// Rewrites the message in place (a reused message object) and bumps the token, so the
    /// change is decoded even though the value's identity did not change.
    pub fn modify(&mut self, f: impl FnOnce(&mut Option<T>)) {
        f(&mut self.value);
        self.bump();
    }

    /// Empties the slot; the token keeps counting so a later message is still "new".
    pub fn clear(&mut self) {
        self.value = None;
    }

    pub fn latest(&self) -> Option<(u64, &T)> {
        self.value.as_ref().map(|v| (self.token, v))
    }

    pub fn token(&self) -> u64 {
        self.token
    }

    fn bump(&mut self) {
        // 2^64 messages cannot happen; wrapping keeps the no-panic promise anyway.
        self.token = self.token.wrapping_add(1);
    }
}

/// A [`Transport`] over crossbeam channels, for the ECS side of a socket thread (or a test that
/// plays the thread). Inbound messages are drained into a [`LatestCommand`], so only the newest
/// one per tick is ever decoded. Publishing never blocks: when a bounded outbound channel is full
/// the message is dropped (counted), or, with [`ChannelTransport::replace_oldest`], the oldest
/// queued one is dropped instead so a slow client gets the freshest state.
pub struct ChannelTransport<In, Out> {
    inbound: Receiver<In>,
    outbound: Sender<Out>,
    drain: Option<Receiver<Out>>,
    latest: LatestCommand<In>,
    inbound_closed: bool,
    outbound_closed: bool,
    dropped: u64,
}

impl<In, Out> ChannelTransport<In, Out> {
    pub fn new(inbound: Receiver<In>, outbound: Sender<Out>) -> Self {
        Self {
            inbound,
            outbound,
            drain: None,
            latest: LatestCommand::new(),
            inbound_closed: false,
            outbound_closed: false,
            dropped: 0,
        }
    }

    /// Makes a full outbound channel drop its oldest message rather than the new one. `drain`
    /// must be a receiver of the same channel as the outbound sender (crossbeam is MPMC). Holding
    /// it keeps the channel connected, so [`Self::outbound_closed`] then stays false: watch
    /// [`Self::inbound_closed`] to notice the I/O side going away.
    pub fn replace_oldest(mut self, drain: Receiver<Out>) -> Self {
        self.drain = Some(drain);
        self
    }

    /// Pulls everything queued inbound into the latest slot. Called by
    /// `latest_command_with_token`; exposed so a gate can look without sampling.
    pub fn poll(&mut self) {
        loop {
            match self.inbound.try_recv() {
                Ok(msg) => self.latest.set(msg),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    self.inbound_closed = true;
                    break;
                }
            }
        }
    }

    /// The I/O side hung up its sender (client gone, thread ended). Queued messages were still
    /// delivered before this turns true.
    pub fn inbound_closed(&self) -> bool {
        self.inbound_closed
    }

    /// The I/O side dropped its receiver; publishing is now a no-op.
    pub fn outbound_closed(&self) -> bool {
        self.outbound_closed
    }

    /// Outbound messages lost to a full channel.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    pub fn latest(&self) -> &LatestCommand<In> {
        &self.latest
    }

    pub fn latest_mut(&mut self) -> &mut LatestCommand<In> {
        &mut self.latest
    }
}

impl<In, Out> Transport for ChannelTransport<In, Out> {
    type Inbound = In;
    type Outbound = Out;

    fn latest_command_with_token(&mut self) -> Option<(u64, &In)> {
        self.poll();
        self.latest.latest()
    }

    fn publish(&mut self, msg: Out) {
        if self.outbound_closed {
            return;
        }
        let msg = match self.outbound.try_send(msg) {
            Ok(()) => return,
            Err(TrySendError::Disconnected(_)) => {
                self.outbound_closed = true;
                return;
            }
            Err(TrySendError::Full(msg)) => msg,
        };
        self.dropped = self.dropped.saturating_add(1);
        let Some(drain) = &self.drain else {
            return;
        };
        // We are the only producer, so after taking one out there is room (unless the consumer
        // vanished meanwhile, which the next publish notices).
        let _ = drain.try_recv();
        if let Err(TrySendError::Disconnected(_)) = self.outbound.try_send(msg) {
            self.outbound_closed = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, thiserror::Error)]
    #[error("bad wire value {0}")]
    struct BadWire(i32);

    /// Wire values are integers; negative ones fail to decode.
    #[derive(Default)]
    struct FakeCodec {
        decodes: usize,
        encodes: usize,
    }

    impl Codec for FakeCodec {
        type Inbound = i32;
        type Outbound = (u64, FakeState);
        type Command = i32;
        type State = FakeState;
        type Error = BadWire;

        fn decode(&mut self, wire: &i32) -> Result<i32, BadWire> {
            self.decodes += 1;
            if *wire < 0 {
                Err(BadWire(*wire))
            } else {
                Ok(*wire)
            }
        }

        fn encode(&mut self, state: &FakeState, time: ProtocolTime, out: &mut Vec<Self::Outbound>) {
            self.encodes += 1;
            out.push((time.ticks, *state));
        }
    }

    /// Command 0 means "no new targets"; anything else becomes a velocity.
    #[derive(Default)]
    struct FakeAdapter {
        calls: Vec<(i32, FakeState)>,
    }

    impl CommandAdapter for FakeAdapter {
        type Command = i32;
        type State = FakeState;
        type Action = f64;

        fn adapt(&mut self, cmd: &i32, state: &FakeState) -> Option<f64> {
            self.calls.push((*cmd, *state));
            (*cmd != 0).then_some(f64::from(*cmd))
        }
    }

    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    struct FakeState {
        pos: f64,
        vel: f64,
        steps: u64,
    }

    #[derive(Default)]
    struct FakeSim {
        s: FakeState,
        applies: usize,
    }

    impl FakeSim {
        fn state(&self) -> FakeState {
            self.s
        }

        fn apply(&mut self, action: f64) {
            self.applies += 1;
            self.s.vel = action;
        }

        fn step(&mut self) {
            self.s.pos += self.s.vel;
            self.s.steps += 1;
        }
    }

    /// What one [`tick`] did.
    #[derive(Debug)]
    struct TickReport {
        sample: SampleOutcome<BadWire>,
        /// Whether the adapter returned an action that was applied before the step.
        applied: bool,
        /// Protocol time after the step.
        time: ProtocolTime,
        /// How many messages were published after the step.
        published: usize,
    }

    /// One tick in MetaSim's order, as the ECS runs its phases around the physics step: state,
    /// sample, adapt, apply, step, advance, publish the post-step state.
    fn tick<T: Transport<Inbound = i32, Outbound = (u64, FakeState)>>(
        p: &mut ProtocolTick<FakeCodec, FakeAdapter>,
        t: &mut T,
        sim: &mut FakeSim,
    ) -> TickReport {
        let state = sim.state();
        let sample = p.sample(t);
        let action = p.adapt(&state);
        let applied = action.is_some();
        if let Some(action) = action {
            sim.apply(action);
        }
        sim.step();
        p.advance();
        let published = p.publish(t, &sim.state());
        TickReport {
            sample,
            applied,
            time: p.time(),
            published,
        }
    }

    /// One reused message object and a hand-driven token, like a transport that rewrites a
    /// shared buffer in place.
    #[derive(Default)]
    struct FakeTransport {
        msg: Option<i32>,
        token: u64,
        published: Vec<(u64, FakeState)>,
    }

    impl FakeTransport {
        fn rewrite(&mut self, v: i32) {
            self.msg = Some(v);
            self.token += 1;
        }
    }

    impl Transport for FakeTransport {
        type Inbound = i32;
        type Outbound = (u64, FakeState);

        fn latest_command_with_token(&mut self) -> Option<(u64, &i32)> {
            self.msg.as_ref().map(|m| (self.token, m))
        }

        fn publish(&mut self, msg: (u64, FakeState)) {
            self.published.push(msg);
        }
    }

    fn server() -> ProtocolTick<FakeCodec, FakeAdapter> {
        ProtocolTick::new(FakeCodec::default(), FakeAdapter::default(), 0.5)
    }

    #[test]
    fn same_token_decoded_once_but_adapted_every_tick() {
        let (mut p, mut t, mut sim) = (server(), FakeTransport::default(), FakeSim::default());
        t.rewrite(3);
        let r1 = tick(&mut p, &mut t, &mut sim);
        let r2 = tick(&mut p, &mut t, &mut sim);
        assert_eq!(r1.sample, SampleOutcome::Decoded { token: 1 });
        assert_eq!(r2.sample, SampleOutcome::Unchanged);
        assert!(r1.applied && r2.applied);
        assert_eq!(p.codec().decodes, 1);
        assert_eq!(p.adapter().calls.len(), 2);
        assert_eq!(sim.applies, 2);
        assert_eq!(sim.s.pos, 6.0);
    }

    #[test]
    fn new_token_on_reused_object_redecodes() {
        let (mut p, mut t, mut sim) = (server(), FakeTransport::default(), FakeSim::default());
        t.rewrite(1);
        tick(&mut p, &mut t, &mut sim);
        t.rewrite(2);
        let r = tick(&mut p, &mut t, &mut sim);
        assert_eq!(r.sample, SampleOutcome::Decoded { token: 2 });
        assert_eq!(p.latest_command(), Some(&2));
        assert_eq!(p.codec().decodes, 2);

        // The contract's other half: a rewrite without a token bump is invisible.
        t.msg = Some(7);
        assert_eq!(
            tick(&mut p, &mut t, &mut sim).sample,
            SampleOutcome::Unchanged
        );
        assert_eq!(p.latest_command(), Some(&2));
    }

    #[test]
    fn none_from_adapter_steps_without_changing_targets() {
        let (mut p, mut t, mut sim) = (server(), FakeTransport::default(), FakeSim::default());
        t.rewrite(2);
        tick(&mut p, &mut t, &mut sim);
        t.rewrite(0);
        let r = tick(&mut p, &mut t, &mut sim);
        assert!(!r.applied);
        assert_eq!(sim.applies, 1);
        // Still moving at the previous target, and the step happened.
        assert_eq!(sim.s.vel, 2.0);
        assert_eq!(sim.s.steps, 2);
        assert_eq!(sim.s.pos, 4.0);
    }

    #[test]
    fn decode_error_keeps_previous_command_and_is_reported_once() {
        let (mut p, mut t, mut sim) = (server(), FakeTransport::default(), FakeSim::default());
        t.rewrite(5);
        tick(&mut p, &mut t, &mut sim);
        t.rewrite(-1);
        let r = tick(&mut p, &mut t, &mut sim);
        assert_eq!(
            r.sample,
            SampleOutcome::DecodeError {
                token: 2,
                error: BadWire(-1)
            }
        );
        assert!(r.applied);
        assert_eq!(p.latest_command(), Some(&5));
        assert_eq!(p.decode_errors(), 1);
        assert_eq!(p.adapter().calls.last().map(|c| c.0), Some(5));

        let r = tick(&mut p, &mut t, &mut sim);
        assert_eq!(r.sample, SampleOutcome::Unchanged);
        assert_eq!(p.decode_errors(), 1);
        assert_eq!(p.codec().decodes, 2);
    }

    #[test]
    fn no_command_yet_skips_adapter_but_steps_and_publishes() {
        let (mut p, mut t, mut sim) = (server(), FakeTransport::default(), FakeSim::default());
        let r = tick(&mut p, &mut t, &mut sim);
        assert_eq!(r.sample, SampleOutcome::NoMessage);
        assert!(!r.applied);
        assert!(p.adapter().calls.is_empty());
        assert_eq!(sim.s.steps, 1);
        assert_eq!(r.published, 1);
        assert_eq!(t.published.len(), 1);

        // A first message that fails to decode leaves it that way.
        t.rewrite(-4);
        let r = tick(&mut p, &mut t, &mut sim);
        assert!(matches!(r.sample, SampleOutcome::DecodeError { .. }));
        assert!(p.adapter().calls.is_empty());
        assert_eq!(sim.s.steps, 2);
    }

    #[test]
    fn publish_follows_step_with_post_step_state() {
        let (mut p, mut t, mut sim) = (server(), FakeTransport::default(), FakeSim::default());
        t.rewrite(1);
        let r = tick(&mut p, &mut t, &mut sim);
        tick(&mut p, &mut t, &mut sim);
        assert_eq!(r.time.ticks, 1);
        assert_eq!(r.time.seconds, 0.5);
        let (ticks, state) = t.published[0];
        assert_eq!((ticks, state.steps, state.pos), (1, 1, 1.0));
        let (ticks, state) = t.published[1];
        assert_eq!((ticks, state.steps, state.pos), (2, 2, 2.0));
        // The adapter saw the pre-step state of each tick.
        assert_eq!(p.adapter().calls[0].1.steps, 0);
        assert_eq!(p.adapter().calls[1].1.steps, 1);
    }

    #[test]
    fn phases_run_around_a_step_the_ecs_owns() {
        let (mut p, mut t, mut sim) = (server(), FakeTransport::default(), FakeSim::default());
        // Greeting frame before any step, as lockstep sends one.
        assert_eq!(p.publish(&mut t, &sim.state()), 1);
        assert_eq!(t.published[0].0, 0);
        t.rewrite(3);
        assert!(p.sample(&mut t).is_new_command());
        let action = p.adapt(&sim.state());
        assert_eq!(action, Some(3.0));
        sim.apply(3.0);
        sim.step();
        p.advance();
        p.publish(&mut t, &sim.state());
        assert_eq!(t.published[1], (1, sim.s));

        p.reset_time();
        p.forget_command();
        assert_eq!(p.adapt(&sim.state()), None);
        assert_eq!(p.sample(&mut t), SampleOutcome::Unchanged);
        p.reset_command();
        assert!(p.sample(&mut t).is_new_command());
        assert_eq!(p.time().ticks, 0);
    }

    #[test]
    fn latest_command_tokens_are_monotonic() {
        let mut l = LatestCommand::new();
        assert_eq!(l.latest(), None);
        l.set(10);
        l.set(11);
        assert_eq!(l.latest(), Some((2, &11)));
        l.modify(|v| *v = v.map(|x| x + 1));
        assert_eq!(l.latest(), Some((3, &12)));
        l.clear();
        assert_eq!(l.latest(), None);
        l.set(1);
        assert_eq!(l.latest(), Some((4, &1)));
    }

    #[test]
    fn channel_transport_keeps_latest_and_reports_disconnect() {
        let (in_tx, in_rx) = crossbeam_channel::unbounded::<i32>();
        let (out_tx, out_rx) = crossbeam_channel::unbounded::<(u64, FakeState)>();
        let mut t = ChannelTransport::new(in_rx, out_tx);
        assert_eq!(t.latest_command_with_token(), None);
        in_tx.send(1).unwrap();
        in_tx.send(2).unwrap();
        assert_eq!(t.latest_command_with_token(), Some((2, &2)));

        let (mut p, mut sim) = (server(), FakeSim::default());
        let r = tick(&mut p, &mut t, &mut sim);
        assert_eq!(r.sample, SampleOutcome::Decoded { token: 2 });
        assert_eq!(p.codec().decodes, 1);
        assert_eq!(out_rx.try_recv().map(|m| m.0), Ok(1));

        drop(in_tx);
        assert!(t.latest_command_with_token().is_some());
        assert!(t.inbound_closed());
        drop(out_rx);
        t.publish((9, FakeState::default()));
        assert!(t.outbound_closed());
    }

    #[test]
    fn channel_transport_full_queue_drops_new_or_oldest() {
        let (_in_tx, in_rx) = crossbeam_channel::unbounded::<i32>();
        let (out_tx, out_rx) = crossbeam_channel::bounded::<u32>(1);
        let mut t = ChannelTransport::new(in_rx.clone(), out_tx.clone());
        t.publish(1);
        t.publish(2);
        assert_eq!(t.dropped(), 1);
        assert_eq!(out_rx.try_recv(), Ok(1));

        let mut t = ChannelTransport::new(in_rx, out_tx).replace_oldest(out_rx.clone());
        t.publish(1);
        t.publish(2);
        t.publish(3);
        assert_eq!(t.dropped(), 2);
        assert_eq!(out_rx.try_recv(), Ok(3));
        assert!(out_rx.try_recv().is_err());
    }
}
