//! Real robots in the real window, under Xvfb with Mesa's software Vulkan: the Menagerie Panda
//! (MJCF, OBJ meshes with several parts per link), example-robot-data's Panda (URDF, COLLADA
//! visuals) and the SO-101 from its MJCF and its URDF (STL meshes) are drawn from their mesh files
//! in their materials' colours, the Menagerie Panda in both render profiles and again after a
//! reset. The robot files are the fixtures `scripts/robot-fixtures` fetches (cached under
//! `target/robot-fixtures/`); the scenes are the shipped `assets/scenes/panda.json` and
//! `so101.json` with their robot path pointed at those files. Screenshots are kept in
//! `target/gui-artifacts/robot_*.png`. Like `gui_smoke`, this needs Xvfb, xdotool and Mesa.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gui::{
    Guard, Rgb, Xvfb, alive, launch, press_key, require, start_xvfb, wait_for, wait_for_screenshot,
    window_id,
};

#[path = "../crates/armsim-core/tests/fixtures/mod.rs"]
mod fixtures;
mod gui;

/// White and off-white (the Panda's rgba 1 1 1 and 0.90 0.92 0.93), lit or in the fill light.
fn near_white([r, g, b]: [u8; 3]) -> bool {
    r.min(g).min(b) > 165 && r.max(g).max(b) - r.min(g).min(b) < 30
}

/// The Panda's black (rgba 0.25 0.25 0.25) and the SO-101's motors (0.1): dark and grey.
fn dark_grey([r, g, b]: [u8; 3]) -> bool {
    r.max(g).max(b) < 110 && r.max(g).max(b) - r.min(g).min(b) < 14
}

/// The SO-101's yellow (rgba 1 0.82 0.12): the table's wood is redder and less saturated
/// (green under 0.75 of red, blue over 0.3 of it).
fn yellow([r, g, b]: [u8; 3]) -> bool {
    let (r, g, b) = (f32::from(r), f32::from(g), f32::from(b));
    r > 140.0 && g > 0.75 * r && g <= r + 10.0 && b < 0.3 * r
}

/// The cubes: red, green and blue areas (the scene around the robot is drawn too).
fn cubes(img: &Rgb) -> [usize; 3] {
    [
        img.solid(1, |[r, g, b]| r > 120 && g < 70 && b < 70).len(),
        img.solid(1, |[r, g, b]| g > 100 && r < 80 && b < 90).len(),
        img.solid(1, |[r, g, b]| b > 120 && r < 70 && g < 90).len(),
    ]
}

/// The height in pixels that `points` span.
fn height(points: &[(usize, usize)]) -> usize {
    let lo = points.iter().map(|p| p.1).min().unwrap_or(0);
    let hi = points.iter().map(|p| p.1).max().unwrap_or(0);
    hi - lo
}

/// A scene of the shipped `assets/scenes/NAME.json` with its robot at `robot` (an absolute
/// path), written into a scratch folder.
fn scene_with_robot(name: &str, robot: &Path) -> PathBuf {
    scene_with_robot_edited(name, robot, |_| {})
}

/// [`scene_with_robot`], with `edit` applied to the scene's JSON (a URDF's actuator and tool
/// names).
fn scene_with_robot_edited(
    name: &str,
    robot: &Path,
    edit: impl FnOnce(&mut serde_json::Value),
) -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join(format!("assets/scenes/{name}.json")))
        .expect("the shipped scene");
    let mut scene: serde_json::Value = serde_json::from_str(&text).expect("scene JSON");
    assert!(robot.is_file(), "no robot file {}", robot.display());
    scene["robot"]["mjcf_path"] = serde_json::Value::String(robot.display().to_string());
    edit(&mut scene);
    let stem = robot.file_stem().unwrap().to_string_lossy();
    let dir = std::env::temp_dir().join(format!("armsim-gui-robots-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}_{stem}.json"));
    std::fs::write(&path, serde_json::to_string_pretty(&scene).unwrap()).unwrap();
    path
}

/// A window on `scene` under its own Xvfb, after its first screenshot (`target/gui-artifacts/
/// robot_{tag}.png`), which it returns loaded. The log is checked for a load without boxes
/// standing in for meshes.
struct Window {
    app: Guard,
    log: Arc<Mutex<String>>,
    display: String,
    cwd: PathBuf,
    artifacts: PathBuf,
    tag: String,
    // Dropped last: the display outlives the app.
    _xvfb: Xvfb,
}

fn open(scene: &Path, profile: &str, tag: &str) -> (Window, Rgb) {
    for tool in ["Xvfb", "xdotool"] {
        require(tool);
    }
    let artifacts = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/gui-artifacts");
    std::fs::create_dir_all(&artifacts).unwrap();
    let shot = artifacts.join(format!("robot_{tag}.png"));
    let _ = std::fs::remove_file(&shot);
    // F12 writes its screenshot into the working folder: a scratch one per window.
    let cwd = std::env::temp_dir().join(format!("armsim-gui-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cwd);
    std::fs::create_dir_all(&cwd).unwrap();
    let (xvfb, display) = start_xvfb();
    let mut armsim = Command::new(env!("CARGO_BIN_EXE_armsim"));
    armsim
        .env("ARMSIM_CONFIG_DIR", cwd.join("config"))
        .arg("--scene")
        .arg(scene)
        .args(["--render-profile", profile])
        .args(["--teleop-port", "0", "--xr-port", "0", "--agent-port", "0"])
        .args(["--monitor-port", "0"]);
    let (app, log) = launch(armsim, &display, &cwd, &shot);
    {
        let log = log.lock().unwrap();
        let wanted = format!("render profile {profile}");
        assert!(log.contains(&wanted), "no `{wanted}` in the log:\n{log}");
        assert!(
            !log.contains("drawn as its box"),
            "a mesh geom was drawn as a box:\n{log}"
        );
    }
    let img = Rgb::load(&shot);
    assert_eq!((img.width, img.height), (1280, 800), "window size");
    (
        Window {
            app,
            log,
            display,
            cwd,
            artifacts,
            tag: tag.to_string(),
            _xvfb: xvfb,
        },
        img,
    )
}

impl Window {
    /// Backspace (reset: the scene's entities are despawned and spawned again, the meshes kept),
    /// then an F12 screenshot, saved as `robot_{tag}_after_reset.png`.
    fn reset_and_shoot(&mut self) -> Rgb {
        let id = window_id(&self.display);
        let press = |key: &str| press_key(&self.display, &id, key);
        press("BackSpace");
        let (app, log) = (&mut self.app, &self.log);
        wait_for("Backspace to reset", Duration::from_secs(60), || {
            alive(app, log);
            log.lock().unwrap().contains("session reset")
        });
        let after = self.cwd.join("armsim-screenshot-1.png");
        press("F12");
        wait_for_screenshot(&mut self.app, &self.log, &after);
        let kept = self
            .artifacts
            .join(format!("robot_{}_after_reset.png", self.tag));
        std::fs::copy(&after, &kept).unwrap();
        Rgb::load(&kept)
    }

    fn save_log(&self) {
        std::fs::write(
            self.artifacts.join(format!("robot_{}.log", self.tag)),
            self.log.lock().unwrap().as_bytes(),
        )
        .unwrap();
    }
}

/// What a robot looks like in a screenshot and how much of it must be seen: an area of its
/// main colour standing up from the table, dark parts, and the cubes around it.
struct Looks {
    /// The robot as the messages name it: "the Panda".
    name: &'static str,
    /// Its main colour, as the log line and the height message name it: "white".
    colour: &'static str,
    /// The pixels of that colour, as the count message names them: "near-white".
    colour_pixels: &'static str,
    /// Whether a pixel has that colour.
    is_colour: fn([u8; 3]) -> bool,
    /// Its dark parts, as the messages name them: "the Panda's black parts".
    dark_parts: &'static str,
    min_colour: usize,
    min_height: usize,
    min_dark: usize,
    min_cubes: usize,
}

/// Checks that `img` shows the robot `looks` describes; logs the counts under `what` and
/// starts each failure message with `prefix`. Returns how many pixels of its main colour and of
/// its dark parts it found.
fn check_robot(img: &Rgb, what: &str, prefix: &str, looks: &Looks) -> (usize, usize) {
    let Looks {
        name,
        colour,
        colour_pixels,
        is_colour,
        dark_parts,
        min_colour,
        min_height,
        min_dark,
        min_cubes,
    } = looks;
    let main = img.solid(2, is_colour);
    let dark = img.solid(1, dark_grey);
    let [red, green, blue] = cubes(img);
    eprintln!(
        "{what}: {} {colour} px over {} rows, {} dark px, cubes {red}/{green}/{blue}",
        main.len(),
        height(&main),
        dark.len()
    );
    assert!(
        main.len() > *min_colour,
        "{prefix}{name} is not drawn: {} {colour_pixels} pixels",
        main.len()
    );
    assert!(
        height(&main) > *min_height,
        "{prefix}the {colour} area is {} px tall, not an arm standing up",
        height(&main)
    );
    assert!(
        dark.len() > *min_dark,
        "{prefix}{dark_parts} are missing: {} dark pixels",
        dark.len()
    );
    assert!(
        red > *min_cubes && green > *min_cubes && blue > *min_cubes,
        "{prefix}cubes: red {red}, green {green}, blue {blue} pixels"
    );
    (main.len(), dark.len())
}

/// The Panda is drawn: a large white/off-white area standing up from the table, with black
/// parts, more white than black, and the cubes. Without its meshes the view has no white area
/// at all (the default scene's arm is orange; the floor, table and sky are not near-white).
fn check_panda(img: &Rgb, what: &str) {
    let panda = Looks {
        name: "the Panda",
        colour: "white",
        colour_pixels: "near-white",
        is_colour: near_white,
        dark_parts: "the Panda's black parts",
        min_colour: 8000,
        min_height: 150,
        min_dark: 100,
        min_cubes: 20,
    };
    let (white, dark) = check_robot(img, what, &format!("{what}: "), &panda);
    assert!(
        white > 3 * dark,
        "{what}: the Panda should be mostly white: {white} white, {dark} dark pixels"
    );
}

/// The Panda of MuJoCo Menagerie in the lite profile (the default on a software renderer, as
/// in CI), at start and after a reset.
#[test]
fn window_draws_the_menagerie_panda_from_its_meshes() {
    let robot = fixtures::menagerie_panda_dir().join("panda.xml");
    let scene = scene_with_robot("panda", &robot);
    let (mut w, img) = open(&scene, "lite", "panda_lite");
    check_panda(&img, "panda lite");
    let img = w.reset_and_shoot();
    check_panda(&img, "panda lite after reset");
    w.save_log();
}

/// The same in the full profile (PBR materials, tonemapping).
#[test]
fn full_profile_draws_the_menagerie_panda() {
    let robot = fixtures::menagerie_panda_dir().join("panda.xml");
    let scene = scene_with_robot("panda", &robot);
    let (w, img) = open(&scene, "full", "panda_full");
    check_panda(&img, "panda full");
    w.save_log();
}

/// example-robot-data's Panda (URDF with COLLADA visuals whose colours come from the DAE files).
#[test]
fn window_draws_the_urdf_panda_from_its_meshes() {
    let robot = fixtures::example_robot_data().join("panda_description/urdf/panda.urdf");
    let scene = scene_with_robot_edited("panda", &robot, |json| {
        json["robot"]["gripper"]["actuator_name"] = "panda_finger_joint1".into();
        json["extensions"]["armsim"]["robot"]["tool"] =
            serde_json::json!({"frame": "panda_hand_tcp"});
    });
    let (w, img) = open(&scene, "lite", "panda_urdf_lite");
    check_panda(&img, "urdf panda lite");
    w.save_log();
}

/// The SO-101's looks: yellow printed parts and black motors. The goal zone's yellow gizmo is a
/// thin line, which the solid-area count leaves out.
const SO101: Looks = Looks {
    name: "the SO-101",
    colour: "yellow",
    colour_pixels: "yellow",
    is_colour: yellow,
    dark_parts: "the SO-101's motors",
    min_colour: 800,
    min_height: 60,
    min_dark: 40,
    min_cubes: 5,
};

/// The SO-101 from its MJCF (STL meshes, colours from its materials).
#[test]
fn window_draws_the_so101_from_its_meshes() {
    let robot = fixtures::so101_dir().join("so101_new_calib.xml");
    let scene = scene_with_robot("so101", &robot);
    let (w, img) = open(&scene, "lite", "so101_lite");
    check_robot(&img, "so101", "", &SO101);
    w.save_log();
}

/// The SO-101 from its URDF (the same STL meshes, colours from the URDF's materials).
#[test]
fn window_draws_the_so101_urdf_from_its_meshes() {
    let robot = fixtures::so101_dir().join("so101_new_calib.urdf");
    let scene = scene_with_robot_edited("so101", &robot, fixtures::so101_scene_for_urdf);
    let (w, img) = open(&scene, "lite", "so101_urdf_lite");
    check_robot(&img, "so101 urdf", "", &SO101);
    w.save_log();
}
