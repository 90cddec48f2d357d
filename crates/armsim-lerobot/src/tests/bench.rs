//! `cargo test -p armsim-lerobot [--release] bench -- --ignored --nocapture`: one minute of two
//! 256x256 cameras at 30 fps (synthetic scene-like frames), timed.

use std::time::{Duration, Instant};

use super::{mp4, scratch};
use crate::{CameraSpec, DatasetSpec, DatasetWriter};

const SIZE: usize = 256;

/// A gradient "wall", a checkered "table" and a square that moves 3 px per frame, plus uniform
/// noise of +-`noise` levels per channel (0 = a clean render; 8 = a noisy sensor, a worst case).
fn frame(cam: usize, g: u64, noise: u8) -> Vec<u8> {
    let mut img = vec![0u8; SIZE * SIZE * 3];
    let mut rng = (g + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let (sx, sy) = (((g * 3) % 200) as usize + 10, 90 + cam * 40);
    for y in 0..SIZE {
        for x in 0..SIZE {
            let at = (y * SIZE + x) * 3;
            let px = if (sx..sx + 40).contains(&x) && (sy..sy + 40).contains(&y) {
                [200, 40 + cam as u8 * 100, 40]
            } else if y < 120 {
                [(60 + y / 2) as u8, (70 + y / 3) as u8, (90 + x / 4) as u8]
            } else if ((x / 16) + (y / 16)) % 2 == 0 {
                [150, 120, 90]
            } else {
                [120, 95, 70]
            };
            img[at..at + 3].copy_from_slice(&px);
            if noise > 0 {
                for v in &mut img[at..at + 3] {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    let d = (rng % (2 * noise as u64 + 1)) as i32 - noise as i32;
                    *v = (*v as i32 + d).clamp(0, 255) as u8;
                }
            }
        }
    }
    img
}

#[test]
#[ignore = "benchmark; run with --ignored --nocapture"]
fn bench_two_cameras_256() {
    for noise in [0, 8] {
        println!("--- noise +-{noise}");
        run(noise);
    }
}

fn run(noise: u8) {
    let root = scratch(&format!("bench{noise}"));
    let spec = DatasetSpec {
        fps: 30,
        robot_type: "bench".into(),
        joint_names: (0..6).map(|j| format!("j{j}")).collect(),
        cameras: vec![
            CameraSpec::new("front", SIZE as u32, SIZE as u32),
            CameraSpec::new("wrist", SIZE as u32, SIZE as u32),
        ],
        ..DatasetSpec::default()
    };
    let mut w = DatasetWriter::create(&root, spec).unwrap();
    let (episodes, per_episode) = (6u64, 300u64);
    let mut push = Duration::ZERO;
    let mut end = Duration::ZERO;
    let mut g = 0;
    for e in 0..episodes {
        w.begin_episode(&format!("task {}", e % 2)).unwrap();
        for _ in 0..per_episode {
            let (a, b) = (frame(0, g, noise), frame(1, g, noise));
            let q = [g as f32 * 0.001; 6];
            let t = Instant::now();
            w.push_frame(&q, &q, &[&a, &b]).unwrap();
            push += t.elapsed();
            g += 1;
        }
        let t = Instant::now();
        w.end_episode().unwrap();
        end += t.elapsed();
    }
    let t = Instant::now();
    let s = w.finish().unwrap();
    let finish = t.elapsed();
    let frames = episodes * per_episode;
    let minutes = frames as f64 / 30.0 / 60.0;
    println!(
        "push_frame: {:.2} ms per 256x256 camera frame (2 cameras, encode + RGB->YUV + checks)",
        push.as_secs_f64() * 1e3 / (frames * 2) as f64
    );
    println!(
        "end_episode {:.1} ms total, finish {:.1} ms",
        end.as_secs_f64() * 1e3,
        finish.as_secs_f64() * 1e3
    );
    println!(
        "{s}; {:.2} MB per minute ({:.2} MB video, {:.3} MB data+meta)",
        s.total_bytes as f64 / 1e6 / minutes,
        s.video_bytes as f64 / 1e6 / minutes,
        (s.data_bytes + s.meta_bytes) as f64 / 1e6 / minutes
    );
    // Quality: PSNR of the decoded first episode of the front camera against its input.
    let bytes =
        std::fs::read(root.join("videos/observation.images.front/chunk-000/file-000.mp4")).unwrap();
    let track = mp4::read(&bytes);
    let decoded = mp4::decode(&track, 0..per_episode as usize);
    let mut mse = 0.0;
    for (g, rgb) in decoded.iter().enumerate() {
        let want = frame(0, g as u64, noise);
        let err: f64 = rgb
            .iter()
            .zip(&want)
            .map(|(&a, &b)| (a as f64 - b as f64).powi(2))
            .sum();
        mse += err / rgb.len() as f64;
    }
    mse /= decoded.len() as f64;
    println!(
        "PSNR {:.1} dB over {} decoded frames; {} keyframes",
        10.0 * (255.0f64 * 255.0 / mse).log10(),
        decoded.len(),
        track.keyframes.len()
    );
    if std::env::var_os("ARMSIM_LEROBOT_KEEP_BENCH").is_none() {
        std::fs::remove_dir_all(&root).unwrap();
    } else {
        println!("kept {}", root.display());
    }
}
