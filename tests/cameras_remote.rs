//! The monitor port's camera queries over a real TCP socket: `(getCameras)` and
//! `(getCamera NAME)` on a headless sim (no renderer: states and the no-image reason), errors
//! that leave the connection working, and a 512×512 image with depth (put in `CameraImages` as
//! a renderer would) coming back whole as base64.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use armsim::headless::finish_setup;
use armsim::protocol::sexp::framing::{FrameDecoder, encode_frame};
use armsim::protocol::sexp::plugin::{self, MonitorPort, SexpOptions};
use armsim::protocol::sexp::{Sexp, parse_all};
use armsim::sim::ClockMode;
use armsim::state::{CameraFrame, CameraImages};
use base64::Engine as _;
use bevy::prelude::App;
use common::*;
use glam::{Quat, Vec3};

/// A monitor whose decoder takes frames up to 64 MiB (an image reply is larger than the
/// default 1 MiB limit of `FrameDecoder`, which is the limit on what the server reads).
struct Monitor {
    s: TcpStream,
    decoder: FrameDecoder,
}

impl Monitor {
    fn open(addr: SocketAddr) -> Self {
        let s = TcpStream::connect(addr).expect("connects");
        s.set_nodelay(true).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Self {
            s,
            decoder: FrameDecoder::new(64 << 20),
        }
    }

    fn send(&mut self, text: &str) {
        let mut frame = Vec::new();
        encode_frame(text.as_bytes(), &mut frame).unwrap();
        self.s.write_all(&frame).expect("send");
    }

    fn recv(&mut self) -> Vec<Sexp> {
        let mut chunk = vec![0u8; 1 << 16];
        loop {
            if let Some(frame) = self.decoder.next_frame().expect("server frames fit") {
                return parse_all(&frame).map(|r| r.expect("well-formed")).collect();
            }
            match self.s.read(&mut chunk) {
                Ok(0) | Err(_) => panic!("the server closed the connection"),
                Ok(n) => self.decoder.push(&chunk[..n]),
            }
        }
    }

    /// Sends `cmd` and returns the first top-level expression named `head` or `error` after it
    /// (world frames in between are skipped).
    fn ask(&mut self, cmd: &str, head: &str) -> Sexp {
        self.send(cmd);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            assert!(Instant::now() < deadline, "no reply to {cmd} within 10 s");
            if let Some(e) = self
                .recv()
                .into_iter()
                .find(|e| e.is(head) || e.is("error"))
            {
                return e;
            }
        }
    }
}

fn monitor_app(images: Option<CameraImages>) -> (App, SocketAddr) {
    let mut app = headless(default_scene(), ClockMode::RealTime { speed: 1.0 });
    let (_, monitor) = plugin::add(
        &mut app,
        SexpOptions {
            monitor: Some("127.0.0.1:0".parse().unwrap()),
            ..Default::default()
        },
    )
    .expect("binds");
    if let Some(images) = images {
        app.insert_resource(images);
    }
    finish_setup(&mut app);
    (app, monitor.unwrap())
}

fn serve<T: Send + 'static>(
    images: Option<CameraImages>,
    client: impl FnOnce(SocketAddr) -> T + Send + 'static,
) -> T {
    let (mut app, monitor) = monitor_app(images);
    drive(
        &mut app,
        std::thread::spawn(move || client(monitor)),
        Duration::from_micros(500),
    )
}

fn floats(e: &Sexp, name: &str) -> Vec<f32> {
    e.find(name)
        .unwrap_or_else(|| panic!("no ({name} …) in {e}"))
        .args()
        .iter()
        .map(|a| a.as_f32().unwrap())
        .collect()
}

fn atom<'a>(e: &'a Sexp, name: &str) -> &'a str {
    e.find(name)
        .and_then(|f| f.arg(0))
        .and_then(Sexp::as_atom)
        .unwrap_or_else(|| panic!("no ({name} …) in {e}"))
}

fn close(a: &[f32], b: &[f32], tol: f32) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() < tol)
}

/// The default scene's front camera: at (1.3, −0.6, 1.5) looking at (0.5, 0, 1.05), 60°
/// vertical field of view, 256×256.
fn assert_front(cam: &Sexp) {
    assert_eq!(atom(cam, "n"), "front");
    assert_eq!(floats(cam, "size"), [256.0, 256.0]);
    let pos = Vec3::new(1.3, -0.6, 1.5);
    assert!(close(&floats(cam, "pos"), &pos.to_array(), 1e-4), "{cam}");
    let q = floats(cam, "quat");
    let rot = Quat::from_xyzw(q[1], q[2], q[3], q[0]);
    assert!(
        (rot.length() - 1.0).abs() < 1e-4,
        "unit quaternion, w first: {q:?}"
    );
    // +X forward looks at the target, +Y left is level, +Z up points up.
    let forward = (Vec3::new(0.5, 0.0, 1.05) - pos).normalize();
    assert!((rot * Vec3::X).dot(forward) > 0.99999, "{q:?}");
    assert!((rot * Vec3::Y).z.abs() < 1e-4, "{q:?}");
    assert!((rot * Vec3::Z).z > 0.0, "{q:?}");
    let f = 128.0 / 30f32.to_radians().tan();
    let k = floats(cam, "intrinsics");
    assert!(
        close(&k, &[f, 0.0, 128.0, 0.0, f, 128.0, 0.0, 0.0, 1.0], 1e-3),
        "{k:?}"
    );
}

#[test]
fn camera_states_and_errors_without_a_renderer() {
    serve(None, |monitor| {
        let mut m = Monitor::open(monitor);
        let all = m.ask("(getCameras)", "cameras");
        let names: Vec<&str> = all.args().iter().map(|c| atom(c, "n")).collect();
        assert_eq!(names, ["front", "wrist"]);
        let front = all.args()[0].clone();
        assert_front(&front);
        assert!(
            atom(&front, "noimage").contains("--headless --cameras"),
            "{front}"
        );
        // The wrist camera rides on the arm, above the table.
        assert!(floats(&all.args()[1], "pos")[2] > 0.9);

        let one = m.ask("(getCamera front)", "camera");
        assert_front(&one);
        let why = atom(&one, "noimage");
        assert!(
            why.contains("rendered only in the window or with `--headless --cameras`"),
            "{why}"
        );
        assert!(one.find("rgb").is_none() && one.find("depth").is_none());
        assert!(atom(&one, "step").parse::<u64>().is_ok());

        // Errors name the valid cameras; the connection stays and the next command works.
        let err = m.ask("(getCamera nope)", "camera");
        assert!(err.is("error"), "{err}");
        let text = err.arg(0).unwrap().as_atom().unwrap();
        assert!(
            text.contains("nope") && text.contains("front, wrist"),
            "{text}"
        );
        let err = m.ask("(getCamera)", "camera");
        assert!(
            err.is("error") && err.to_string().contains("front, wrist"),
            "{err}"
        );
        let err = m.ask("(getCameras front)", "cameras");
        assert!(err.is("error"), "{err}");
        let again = m.ask("(getCamera wrist)", "camera");
        assert_eq!(atom(&again, "n"), "wrist");
        // Other monitor commands still answer (ok …).
        m.send("(pause)");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            assert!(Instant::now() < deadline, "no (ok pause)");
            if m.recv().iter().any(|e| e.is("ok")) {
                break;
            }
        }
    });
}

#[test]
fn a_512_image_with_depth_comes_back_whole() {
    let (w, h) = (512u32, 512u32);
    let rgb: Vec<u8> = (0..w * h * 3).map(|i| (i % 251) as u8).collect();
    let depth: Vec<f32> = (0..w * h).map(|i| 0.5 + i as f32 * 1e-6).collect();
    let state = armsim_core::camera::CameraState {
        pos: [1.0, 2.0, 3.0],
        quat_world: [1.0, 0.0, 0.0, 0.0],
        intrinsics: [[400.0, 0.0, 256.0], [0.0, 400.0, 256.0], [0.0, 0.0, 1.0]],
    };
    let mut images = CameraImages::default();
    images.insert(Arc::new(CameraFrame {
        camera: "front".into(),
        episode: 0,
        step: 16,
        sim_time: 16.0 / 240.0,
        width: w,
        height: h,
        state,
        rgb: rgb.clone().into(),
        depth: Some(depth.clone().into()),
    }));
    let (mut app, monitor) = monitor_app(Some(images));
    // The client tells the frames' thread how many messages it has sent, and waits for the go
    // once the simulation has taken them all (see `drive_until_taken`).
    let (sent, taken) = (mpsc::channel::<u64>(), mpsc::channel::<()>());
    let (sent_tx, sent_rx, taken_tx, taken_rx) = (sent.0, sent.1, taken.0, taken.1);
    let client = std::thread::spawn(move || {
        let mut m = Monitor::open(monitor);
        let one = m.ask("(getCamera front)", "camera");
        // The pose and stamp are the image's.
        assert_eq!(atom(&one, "step"), "16");
        assert_eq!(floats(&one, "size"), [512.0, 512.0]);
        assert!(close(&floats(&one, "pos"), &[1.0, 2.0, 3.0], 1e-6));
        assert!(close(&floats(&one, "quat"), &[1.0, 0.0, 0.0, 0.0], 1e-6));
        let b64 = base64::engine::general_purpose::STANDARD;
        let got = b64.decode(atom(&one, "rgb")).expect("base64 rgb");
        assert_eq!(got, rgb);
        let got = b64.decode(atom(&one, "depth")).expect("base64 depth");
        let got: Vec<f32> = got
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        assert_eq!(got, depth);
        assert!(one.find("noimage").is_none());

        let all = m.ask("(getCameras)", "cameras");
        let front = &all.args()[0];
        let image = front
            .find("image")
            .expect("(image …) for a rendered camera");
        assert_eq!(atom(image, "step"), "16");
        assert_eq!(atom(image, "depth"), "1");
        // The wrist camera has no image yet (the renderer runs, it has not sent one).
        let wrist = m.ask("(getCamera wrist)", "camera");
        assert!(atom(&wrist, "noimage").contains("no image yet"), "{wrist}");

        // A client that asks for 40 images (about 100 MB) in one message without reading gets
        // a few, and the rest are refused until it has read them; the connection goes on.
        // Read nothing until the simulation has answered the whole message (not a wall-clock
        // pause, which a loaded machine can outlast): what it refuses is decided then.
        m.send(&"(getCamera front)".repeat(40));
        // Its fourth message: the three questions above, then this one.
        sent_tx.send(4).unwrap();
        taken_rx.recv().expect("the frames' thread answers");
        let (mut images, mut refused) = (0, 0);
        while images + refused < 40 {
            for e in m.recv() {
                match e.head() {
                    Some("camera") => images += 1,
                    Some("error") if e.to_string().contains("still unread") => refused += 1,
                    _ => {}
                }
            }
        }
        assert!(
            images >= 4 && refused > 0,
            "{images} images, {refused} refused"
        );
        assert!(
            images < 20,
            "{images} images queued for a client that did not read"
        );
        let again = m.ask("(getCamera front)", "camera");
        assert_eq!(atom(&again, "step"), "16");
    });
    drive_until_taken(&mut app, client, sent_rx, taken_tx);
}

/// [`drive`] for a client that reports the count of messages it has sent on `sent` and then
/// waits on `taken`: once the monitor port has counted that many messages in (it counts each as
/// the frame's system takes it, and answers it in the same system), `taken` gets the go.
fn drive_until_taken<T>(
    app: &mut App,
    client: std::thread::JoinHandle<T>,
    sent: mpsc::Receiver<u64>,
    taken: mpsc::Sender<()>,
) -> T {
    use std::sync::atomic::Ordering;
    let messages_in = |app: &App| -> u64 {
        app.world()
            .resource::<MonitorPort>()
            .conns
            .values()
            .map(|c| c.counters.msgs_in.load(Ordering::Relaxed))
            .sum()
    };
    let mut waiting = None;
    drive_with(app, client, Duration::from_micros(500), |app| {
        waiting = sent.try_recv().ok().or(waiting);
        if waiting.is_some_and(|n| messages_in(app) >= n) {
            waiting = None;
            let _ = taken.send(());
        }
    })
}
