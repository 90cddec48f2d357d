//! The headset page's server side: a headless sim with teleop and the HTTPS listener
//! on loopback, a real TLS client (rustls, trusting only the certificate armsim generated, so
//! its names are checked too). The key guards the page, `/scene.json` and the wss upgrade; a
//! refusal reaches the alert log; a wss session joins the same sessions as a plain ws one; state
//! frames on both carry `extensions.link_poses`. With a real robot (MuJoCo Menagerie's Panda,
//! from `scripts/robot-fixtures`), its mesh buffers are served as `/scene.json` describes them,
//! gzipped or not.

mod common;
#[path = "../crates/armsim-core/tests/fixtures/mod.rs"]
mod fixtures;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use armsim::headless::finish_setup;
use armsim::protocol::xr::{self, CertSource, XrOptions};
use armsim::session::AlertLog;
use armsim::sim::ClockMode;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use serde_json::{Value, json};
use tungstenite::{Message, WebSocket};

const KEY: &str = "test-key-0123";

type Tls = StreamOwned<ClientConnection, TcpStream>;

fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "armsim-xr-test-{}-{}",
        std::process::id(),
        getrandom::u64().unwrap()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A TLS client that trusts only the certificate in `dir`.
fn client_config(dir: &Path) -> Arc<ClientConfig> {
    let cert = CertificateDer::from_pem_file(dir.join("xr-cert.pem")).expect("armsim wrote it");
    let mut roots = RootCertStore::empty();
    roots.add(cert).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

fn tls(addr: SocketAddr, config: &Arc<ClientConfig>, name: &str) -> Tls {
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let name = ServerName::try_from(name.to_string()).unwrap();
    StreamOwned::new(ClientConnection::new(config.clone(), name).unwrap(), tcp)
}

/// One HTTPS GET: the status and the body.
fn get(addr: SocketAddr, config: &Arc<ClientConfig>, target: &str) -> (u16, Vec<u8>) {
    let (status, _, body) = get_with(addr, config, target, "");
    (status, body)
}

/// One HTTPS GET with `headers` (lines ended by CRLF): the status, the head and the body.
fn get_with(
    addr: SocketAddr,
    config: &Arc<ClientConfig>,
    target: &str,
    headers: &str,
) -> (u16, String, Vec<u8>) {
    let mut s = tls(addr, config, "localhost");
    write!(
        s,
        "GET {target} HTTP/1.1\r\nHost: localhost\r\n{headers}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut bytes = Vec::new();
    s.read_to_end(&mut bytes)
        .expect("a whole response, ended by close_notify");
    let split = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a head");
    let head = String::from_utf8_lossy(&bytes[..split]).to_string();
    let status = head[9..12].parse().unwrap();
    (status, head, bytes[split + 4..].to_vec())
}

/// The value of header `name` in a response head.
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// `assets/scenes/panda.json` with its robot at the Menagerie Panda of the fixture cache
/// (`scripts/robot-fixtures` fetches it from PyPI once), written into `dir`.
fn panda_scene(dir: &Path) -> Arc<armsim::scene::Scene> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mjcf = fixtures::menagerie_panda_dir().join("panda.xml");
    let text = std::fs::read_to_string(root.join("assets/scenes/panda.json")).unwrap();
    let mut scene: Value = serde_json::from_str(&text).unwrap();
    scene["robot"]["mjcf_path"] = json!(mjcf.to_str().unwrap());
    let path = dir.join("panda.json");
    std::fs::write(&path, scene.to_string()).unwrap();
    Arc::new(armsim::scene::load_scene(&path).expect("the Panda scene loads"))
}

fn wss(addr: SocketAddr, config: &Arc<ClientConfig>, key: &str) -> Result<WebSocket<Tls>, String> {
    let url = format!("wss://localhost:{}/ws?key={key}", addr.port());
    tungstenite::client::client(url, tls(addr, config, "localhost"))
        .map(|(ws, _)| ws)
        .map_err(|e| e.to_string())
}

fn send<S: Read + Write>(
    ws: &mut WebSocket<S>,
    seq: u64,
    session: &str,
    msg_type: &str,
    payload: Value,
) {
    let env = json!({"schema_version": "1.0.0-revA", "msg_type": msg_type, "seq": seq,
        "t_send_ms": 1, "session_id": session, "payload": payload, "extensions": {}});
    ws.send(Message::text(env.to_string())).unwrap();
}

fn until<S: Read + Write>(ws: &mut WebSocket<S>, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Message::Text(t) = ws.read().expect("a message") {
            let v: Value = serde_json::from_str(t.as_str()).unwrap();
            if pred(&v) {
                return v;
            }
        }
    }
    panic!("no such message within 5 s");
}

fn event(name: &'static str) -> impl Fn(&Value) -> bool {
    move |v| v["msg_type"] == "sim_event" && v["payload"]["event"] == name
}

fn connect<S: Read + Write>(ws: &mut WebSocket<S>) -> (String, String) {
    send(
        ws,
        1,
        "",
        "ui_cmd",
        json!({"command": "CONNECT", "requested_scene_config_id": "default_scene"}),
    );
    let v = until(ws, event("CONNECTED"));
    let session = v["payload"]["session_id"].as_str().unwrap().to_string();
    let role = v["payload"]["extensions"]["role"]
        .as_str()
        .unwrap()
        .to_string();
    (session, role)
}

#[test]
fn the_page_scene_and_wss_need_the_key_and_wss_joins_the_teleop_sessions() {
    let dir = temp_dir();
    let mut app = common::headless(common::default_scene(), ClockMode::RealTime { speed: 1.0 });
    let ws_addr = common::teleop::add_teleop(&mut app);
    let info = xr::add(
        &mut app,
        XrOptions {
            bind: ws_addr.ip(),
            port: 0,
            key: KEY.into(),
            cert: CertSource::Generated { dir: dir.clone() },
        },
    )
    .expect("the page's listener starts");
    finish_setup(&mut app);
    assert_eq!(
        info.addr.ip(),
        ws_addr.ip(),
        "binds at its own --xr-bind address"
    );
    assert_eq!(
        info.urls,
        vec![format!("https://127.0.0.1:{}/?key={KEY}", info.addr.port())]
    );
    let addr = info.addr;
    let config = client_config(&dir);
    let links = common::sim(&app).robot.links.len();
    let client = std::thread::spawn(move || {
        // The key guards the page and the scene; the static modules are public.
        assert_eq!(get(addr, &config, "/").0, 403);
        assert_eq!(get(addr, &config, "/?key=wrong-key-99").0, 403);
        assert_eq!(get(addr, &config, "/scene.json").0, 403);
        let (status, page) = get(addr, &config, &format!("/?key={KEY}"));
        assert_eq!(status, 200);
        assert!(String::from_utf8_lossy(&page).contains("app/main.js"));
        assert_eq!(get(addr, &config, "/vendor/three.module.js").0, 200);
        assert_eq!(get(addr, &config, "/app/mapping.js").0, 200);
        assert_eq!(get(addr, &config, "/nothing-here").0, 404);
        let (status, body) = get(addr, &config, &format!("/scene.json?key={KEY}"));
        assert_eq!(status, 200);
        let scene: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(scene["scene_id"], "default_scene");
        assert_eq!(scene["objects"].as_array().unwrap().len(), 3);
        assert_eq!(scene["robot"]["links"].as_array().unwrap().len(), links);
        assert!(scene["goal_zone"].is_object() && scene["workspace_aabb_m"].is_object());

        // wss: refused without the key, a session with it.
        let Err(refused) = wss(addr, &config, "wrong-key-99") else {
            panic!("a wrong key must be refused");
        };
        assert!(refused.contains("403"), "{refused}");
        let mut headset = wss(addr, &config, KEY).expect("wss handshake");
        let (session, role) = connect(&mut headset);
        assert_eq!(role, "controller", "first session takes the arm");
        // A native client on the plain listener is in the same sessions: it observes.
        let (mut native, _) = tungstenite::connect(format!("ws://{ws_addr}/ws")).unwrap();
        let (_, native_role) = connect(&mut native);
        assert_eq!(native_role, "observer");
        // Only the controller may START; the observer's START is refused.
        send(
            &mut headset,
            2,
            &session,
            "ui_cmd",
            json!({"command": "START"}),
        );
        until(&mut headset, event("STARTED"));
        for ws_frame in [
            until(&mut headset, |v| v["msg_type"] == "state_frame"),
            until(&mut native, |v| v["msg_type"] == "state_frame"),
        ] {
            let poses = ws_frame["payload"]["extensions"]["link_poses"]
                .as_object()
                .expect("link_poses on both listeners")
                .clone();
            assert_eq!(poses.len(), links);
            for pose in poses.values() {
                assert_eq!(pose["pos_m"].as_array().unwrap().len(), 3);
                assert_eq!(pose["quat_xyzw"].as_array().unwrap().len(), 4);
            }
        }
        // A heartbeat over wss is acknowledged like over ws.
        send(
            &mut headset,
            3,
            &session,
            "heartbeat",
            json!({"t_origin_ms": 42}),
        );
        let ack = until(&mut headset, |v| v["msg_type"] == "heartbeat_ack");
        assert_eq!(ack["payload"]["t_origin_ms"], 42);
        let _ = headset.close(None);
    });
    common::drive(&mut app, client, Duration::from_millis(1));
    let log = app.world().resource::<AlertLog>();
    assert!(
        log.recent().any(|e| e.code == "XR_KEY_REFUSED"),
        "a refused key shows in the panel's alert log"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn slow_or_garbage_clients_are_cut_off_without_harm() {
    let dir = temp_dir();
    let mut app = common::headless(common::default_scene(), ClockMode::RealTime { speed: 1.0 });
    common::teleop::add_teleop(&mut app);
    let info = xr::add(
        &mut app,
        XrOptions {
            bind: [127, 0, 0, 1].into(),
            port: 0,
            key: xr::random_key(),
            cert: CertSource::Generated { dir: dir.clone() },
        },
    )
    .unwrap();
    finish_setup(&mut app);
    assert!(
        xr::check_key(&info.key).is_ok(),
        "a random key: {}",
        info.key
    );
    let addr = info.addr;
    let config = client_config(&dir);
    let client = std::thread::spawn(move || {
        // Plain HTTP on the TLS port, and random bytes: the connection ends, nothing else.
        for junk in [
            &b"GET / HTTP/1.1\r\n\r\n"[..],
            &[0x16, 0x03, 0x01, 0xff, 0xff, 0, 1, 2][..],
        ] {
            let mut s = TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(8))).unwrap();
            s.write_all(junk).unwrap();
            let mut buf = Vec::new();
            let _ = s.read_to_end(&mut buf);
        }
        // A request head over the size limit (the reply is 431, see the unit tests; the
        // socket may be reset under the unread rest, so only the end is checked here).
        let mut s = tls(addr, &config, "127.0.0.1");
        let huge = format!("GET / HTTP/1.1\r\nX: {}\r\n", "a".repeat(20_000));
        let _ = s.write_all(huge.as_bytes());
        let mut bytes = Vec::new();
        let _ = s.read_to_end(&mut bytes);
        // Still serving.
        assert_eq!(get(addr, &config, "/app/main.js").0, 200);
    });
    common::drive(&mut app, client, Duration::from_millis(1));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_binary_logs_the_url_fingerprint_and_adb_line_and_refuses_a_bad_key() {
    use std::io::BufRead;
    use std::process::{Command, Stdio};
    let dir = temp_dir();
    let armsim = || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_armsim"));
        cmd.current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("ARMSIM_CONFIG_DIR", &dir)
            .args([
                "--headless",
                "--no-agent-ports",
                "--teleop-port",
                "0",
                "--xr-port",
                "0",
            ]);
        cmd
    };
    let bad = armsim().args(["--xr-key", "no spaces"]).output().unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--xr-key must be"));
    let mut child = armsim()
        .args(["--xr-key", "cli-test-key1"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut seen = Vec::new();
    for line in std::io::BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        let done = line.contains("adb reverse tcp:");
        seen.push(line);
        if done {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let text = seen.join("\n");
    assert!(text.contains("SHA-256 "), "{text}");
    assert!(
        text.contains("generated in"),
        "first start makes the certificate: {text}"
    );
    let url = seen
        .iter()
        .find_map(|l| l.split("headset page: ").nth(1))
        .unwrap_or_else(|| panic!("no URL line: {text}"));
    assert!(
        url.starts_with("https://127.0.0.1:") && url.ends_with("/?key=cli-test-key1"),
        "{url}"
    );
    assert!(dir.join("xr-cert.pem").exists() && dir.join("xr-key.pem").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_pandas_mesh_buffers_are_served_as_scene_json_describes_them() {
    use armsim_core::protocol::teleop::mesh_buffers;
    let dir = temp_dir();
    let mut app = common::headless(panda_scene(&dir), ClockMode::RealTime { speed: 1.0 });
    common::teleop::add_teleop(&mut app);
    let info = xr::add(
        &mut app,
        XrOptions {
            bind: [127, 0, 0, 1].into(),
            port: 0,
            key: KEY.into(),
            cert: CertSource::Generated { dir: dir.clone() },
        },
    )
    .expect("the page's listener starts");
    finish_setup(&mut app);
    let addr = info.addr;
    let config = client_config(&dir);
    let client = std::thread::spawn(move || {
        let (status, body) = get(addr, &config, &format!("/scene.json?key={KEY}"));
        assert_eq!(status, 200);
        let scene: Value = serde_json::from_slice(&body).unwrap();
        let meshes = scene["robot"]["meshes"].as_array().expect("robot.meshes");
        assert!(
            meshes.len() >= 10,
            "the Panda's mesh files: {}",
            meshes.len()
        );
        // Every mesh a visual names is listed, with parts.
        let visuals: Vec<&Value> = scene["robot"]["links"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|l| l["visuals"].as_array().unwrap())
            .filter(|v| v["shape"]["type"] == "mesh")
            .collect();
        assert!(visuals.len() >= 10, "the Panda is drawn from meshes");
        for v in &visuals {
            let mesh = v["shape"]["mesh"].as_u64().unwrap() as usize;
            assert!(!meshes[mesh]["parts"].as_array().unwrap().is_empty());
            assert_eq!(v["shape"]["scale"].as_array().unwrap().len(), 3);
        }
        let parts: Vec<(usize, usize, &Value)> = meshes
            .iter()
            .enumerate()
            .flat_map(|(m, mesh)| {
                let parts = mesh["parts"].as_array().unwrap();
                parts.iter().enumerate().map(move |(p, part)| (m, p, part))
            })
            .collect();
        let (mut raw_total, mut sent_total, mut gzipped) = (0, 0, 0);
        for &(m, p, part) in &parts {
            let url = part["url"].as_str().unwrap();
            assert!(url.starts_with(&format!("/meshes/{m}/{p}.bin?v=")), "{url}");
            let (v, t) = (
                part["vertices"].as_u64().unwrap(),
                part["triangles"].as_u64().unwrap(),
            );
            assert!(v >= 3 && t >= 1, "{url}: {v} vertices, {t} triangles");
            assert!(part["color"].is_null() || part["color"].as_array().unwrap().len() == 4);
            // Without gzip: the raw buffer, its header the counts of /scene.json.
            let (status, head, raw) = get_with(addr, &config, &format!("{url}&key={KEY}"), "");
            assert_eq!(status, 200, "{url}");
            assert_eq!(header(&head, "content-encoding"), None, "{head}");
            assert!(
                header(&head, "cache-control")
                    .unwrap()
                    .contains("immutable")
            );
            assert_eq!(
                header(&head, "content-type"),
                Some("application/octet-stream")
            );
            assert_eq!(u32::from_le_bytes(raw[0..4].try_into().unwrap()) as u64, v);
            assert_eq!(u32::from_le_bytes(raw[4..8].try_into().unwrap()) as u64, t);
            let (positions, triangles) = mesh_buffers::decode(&raw).expect("a whole buffer");
            assert_eq!((positions.len() as u64, triangles.len() as u64), (v, t));
            assert!(triangles.iter().flatten().all(|&i| (i as u64) < v));
            // With gzip: gzipped where that is smaller (a real mesh always is, but a tiny part
            // may not be), the same bytes once un-gzipped.
            let (status, head, body) = get_with(
                addr,
                &config,
                &format!("{url}&key={KEY}"),
                "Accept-Encoding: gzip, deflate, br\r\n",
            );
            assert_eq!(status, 200);
            assert_eq!(
                header(&head, "content-length"),
                Some(body.len().to_string().as_str())
            );
            if header(&head, "content-encoding") == Some("gzip") {
                assert!(body.len() < raw.len(), "{url}: gzip only when smaller");
                assert_eq!(mesh_buffers::gunzip(&body, raw.len()).unwrap(), raw);
                gzipped += 1;
            } else {
                assert_eq!(body, raw, "{url}: {head}");
            }
            raw_total += raw.len();
            sent_total += body.len();
        }
        eprintln!(
            "the Panda's meshes: {} files, {} parts ({gzipped} sent gzipped), {raw_total} bytes \
             raw, {sent_total} with gzip",
            meshes.len(),
            parts.len()
        );
        assert!(
            gzipped * 2 > parts.len() && sent_total * 2 < raw_total,
            "gzip pays on real meshes"
        );
        // The key guards the buffers as it guards /scene.json; unknown meshes and parts are 404.
        let (m, p, _) = parts[0];
        assert_eq!(get(addr, &config, &format!("/meshes/{m}/{p}.bin")).0, 403);
        assert_eq!(
            get(
                addr,
                &config,
                &format!("/meshes/{m}/{p}.bin?key=wrong-key-99")
            )
            .0,
            403
        );
        assert_eq!(
            get(addr, &config, &format!("/meshes/{m}/{p}.bin?key={KEY}")).0,
            200
        );
        for missing in [
            format!("/meshes/{}/0.bin", meshes.len()),
            format!(
                "/meshes/{m}/{}.bin",
                meshes[m]["parts"].as_array().unwrap().len()
            ),
            format!("/meshes/{m}/{p}"),
            "/meshes/".to_string(),
        ] {
            assert_eq!(
                get(addr, &config, &format!("{missing}?key={KEY}")).0,
                404,
                "{missing}"
            );
        }
    });
    common::drive(&mut app, client, Duration::from_millis(1));
    let _ = std::fs::remove_dir_all(&dir);
}
