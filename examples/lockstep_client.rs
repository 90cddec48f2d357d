//! A remote-control lockstep client (the gripper project's protocol) in Rust (std only): reads
//! the step counter and joint angles, answers a sine velocity for every joint, and reports
//! steps/s.
//!
//! ```sh
//! cargo run --release -- --headless --scene assets/scenes/gripper4.json --remote-control-port 11235 &
//! cargo run --release --example lockstep_client -- 127.0.0.1:11235 10000
//! ```

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

/// Joints per frame: 10 for the gripper4 scene (spec 003), 8 for arm6.
const JOINTS: usize = 10;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:11235".into());
    let steps: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(2400);

    let mut stream = TcpStream::connect(&addr)?;
    // One frame per write and no Nagle delay: a round trip then costs microseconds, not ~90 ms.
    stream.set_nodelay(true)?;
    let mut frame = [0u8; 8 + 4 * JOINTS];
    let mut answer = [0u8; 4 * JOINTS];
    let start = Instant::now();
    for _ in 0..steps {
        stream.read_exact(&mut frame)?;
        let step = u64::from_be_bytes(frame[..8].try_into().expect("8 bytes"));
        if step % 240 == 0 {
            let angles: Vec<String> = frame[8..]
                .chunks_exact(4)
                .map(|c| format!("{:+.3}", f32::from_be_bytes(c.try_into().expect("4 bytes"))))
                .collect();
            println!("{step:>6} {}", angles.join(" "));
        }
        let v = (step as f32 / 10.0).sin();
        for chunk in answer.chunks_exact_mut(4) {
            chunk.copy_from_slice(&v.to_be_bytes());
        }
        stream.write_all(&answer)?;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{steps} steps in {secs:.2} s: {:.0} steps/s",
        steps as f64 / secs
    );
    Ok(())
}
