//! Unit tests of the connection registry: ownership lifecycle, kicks, closes and rates.

use super::*;

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn key(protocol: Protocol, id: u64) -> ConnKey {
    ConnKey::new(protocol, id)
}

fn open(reg: &mut Connections, k: ConnKey, logged: bool) {
    reg.open(
        k,
        addr(1000 + k.id as u16),
        Role::Pending,
        Arc::default(),
        logged,
    );
}

#[test]
fn first_claim_wins_and_only_the_owner_releases() {
    let mut reg = Connections::default();
    let (a, b) = (key(Protocol::Agent, 1), key(Protocol::Teleop, 1));
    open(&mut reg, a, false);
    open(&mut reg, b, false);
    assert!(reg.claim(a, "a").is_some());
    assert!(reg.claim(b, "b").is_none());
    assert_eq!(reg.get(a).unwrap().role, Role::Controller);
    assert_eq!(reg.get(b).unwrap().role, Role::Pending);
    assert_eq!(reg.owner(), Some((Protocol::Agent, "a")));
    assert_eq!(reg.describe(), "agent a");
    assert!(reg.release(b).is_none());
    assert_eq!(reg.owner_key(), Some(a));
    assert!(reg.release(a).is_some());
    assert_eq!(reg.describe(), "nobody");
    assert!(reg.claim(b, "b").is_some());
}

#[test]
fn a_revoke_is_noticed_once_by_the_owning_protocol_only() {
    let mut reg = Connections::default();
    let k = key(Protocol::Lockstep, 7);
    open(&mut reg, k, false);
    assert!(reg.claim(k, "peer").is_some());
    reg.revoke();
    assert!(reg.owner().is_none());
    assert_eq!(
        reg.panel_requests(Protocol::Teleop),
        PanelRequests::default()
    );
    assert_eq!(reg.panel_requests(Protocol::Lockstep).revoked, Some(7));
    assert_eq!(reg.panel_requests(Protocol::Lockstep).revoked, None);
    // Revoking nobody revokes nothing.
    reg.revoke();
    assert_eq!(reg.panel_requests(Protocol::Lockstep).revoked, None);
}

#[test]
fn close_frees_the_arm_and_logs_only_announced_connections() {
    let mut reg = Connections::default();
    let mut log = AlertLog::default();
    let (a, m) = (key(Protocol::Agent, 1), key(Protocol::Monitor, 1));
    open(&mut reg, a, false);
    open(&mut reg, m, false);
    assert!(reg.claim(a, "a").is_some());
    reg.announce(a, 1.5, &mut log, "a controls the arm");
    let closed = reg.close(a, "eof", 2.0, &mut log).expect("registered");
    assert!(closed.was_owner);
    assert!(reg.owner().is_none());
    let closed = reg.close(m, "eof", 2.0, &mut log).expect("registered");
    assert!(!closed.was_owner);
    assert!(reg.close(m, "eof", 2.0, &mut log).is_none());
    let codes: Vec<&str> = log.recent().map(|e| e.code.as_str()).collect();
    assert_eq!(codes, ["DISCONNECTED", "CONNECTED"]);
    let last = log.recent().next().unwrap();
    assert_eq!(last.source, "agent");
    assert_eq!(last.text, "127.0.0.1:1001 (eof)");
    assert!(reg.is_empty());
}

#[test]
fn kicks_are_drained_per_protocol_and_only_for_live_connections() {
    let mut reg = Connections::default();
    let mut log = AlertLog::default();
    let (t1, t2, l) = (
        key(Protocol::Teleop, 1),
        key(Protocol::Teleop, 2),
        key(Protocol::Lockstep, 1),
    );
    for k in [t1, t2, l] {
        open(&mut reg, k, false);
    }
    reg.kick(t1);
    reg.kick(t1);
    reg.kick(l);
    reg.kick(key(Protocol::Agent, 9));
    reg.kick(t2);
    reg.close(t2, "gone", 0.0, &mut log);
    assert_eq!(reg.panel_requests(Protocol::Teleop).kicks, vec![1]);
    assert!(reg.panel_requests(Protocol::Teleop).kicks.is_empty());
    assert!(reg.panel_requests(Protocol::Agent).kicks.is_empty());
    assert_eq!(reg.panel_requests(Protocol::Lockstep).kicks, vec![1]);
}

#[test]
fn rates_rtt_and_role_text_come_from_the_counters() {
    let mut reg = Connections::default();
    let k = key(Protocol::Teleop, 3);
    let counters = Arc::new(Counters::default());
    reg.open(k, addr(9), Role::Observer, counters.clone(), true);
    let since = reg.get(k).unwrap().since;
    for _ in 0..20 {
        counters.count_in();
    }
    counters.count_out();
    let e = reg.get(k).unwrap();
    let (rin, rout) = e.rates(since + Duration::from_secs(2));
    assert!((rin - 10.0).abs() < 1e-9, "{rin}");
    assert!((rout - 0.5).abs() < 1e-9, "{rout}");
    assert_eq!(e.rtt(), None);
    assert_eq!(e.last_seq_in(), None);
    counters.rtt_us.store(1500, Ordering::Relaxed);
    counters.last_seq_in.store(42, Ordering::Relaxed);
    assert_eq!(e.rtt(), Some(Duration::from_micros(1500)));
    assert_eq!(e.last_seq_in(), Some(42));
    reg.set_role(k, Role::Controller, Some("no START yet"));
    assert_eq!(reg.get(k).unwrap().role_text(), "controller (no START yet)");
    assert_eq!(reg.of(Protocol::Teleop).count(), 1);
    assert_eq!(reg.of(Protocol::Agent).count(), 0);
}

#[test]
fn listeners_are_listed_in_protocol_order_with_their_warning() {
    let mut reg = Connections::default();
    reg.listen(Protocol::Lockstep, "lockstep 127.0.0.1:1");
    reg.listen(Protocol::Teleop, "teleop ws://127.0.0.1:2/x");
    reg.set_warning(Protocol::Teleop, Some("controller: NET_TIMEOUT".into()));
    reg.set_warning(Protocol::Agent, Some("ignored".into()));
    let listed: Vec<(Protocol, Option<String>)> = reg
        .listeners()
        .map(|(p, l)| (p, l.warning.clone()))
        .collect();
    assert_eq!(
        listed,
        [
            (Protocol::Teleop, Some("controller: NET_TIMEOUT".into())),
            (Protocol::Lockstep, None)
        ]
    );
}
