//! A remote-control lockstep client (the gripper project's protocol) in Rust, framed by armsim's
//! lockstep codec (`protocol::lockstep::codec`): reads the step counter and joint angles, answers
//! a sine velocity for every joint, and reports steps/s.
//!
//! ```sh
//! cargo run --release -- --headless --scene assets/scenes/gripper4.json --remote-control-port 11235 &
//! cargo run --release --example lockstep_client -- 127.0.0.1:11235 10000
//! ```

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use armsim::protocol::lockstep::codec::{decode_state, encode_velocities, frame_sizes};

/// Joints per frame: 10 for the gripper4 scene (the gripper project's robot), 8 for arm6.
const JOINTS: usize = 10;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:11235".into());
    let steps: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(2400);

    let mut stream = TcpStream::connect(&addr)?;
    // One frame per write and no Nagle delay: a round trip then costs microseconds, not ~90 ms.
    stream.set_nodelay(true)?;
    let (frame_len, answer_len) = frame_sizes(JOINTS);
    let mut frame = vec![0u8; frame_len];
    let mut answer = Vec::with_capacity(answer_len);
    let start = Instant::now();
    for _ in 0..steps {
        stream.read_exact(&mut frame)?;
        let (step, angles) = decode_state(&frame, JOINTS).map_err(std::io::Error::other)?;
        if step % 240 == 0 {
            let angles: Vec<String> = angles.iter().map(|a| format!("{a:+.3}")).collect();
            println!("{step:>6} {}", angles.join(" "));
        }
        let v = (step as f32 / 10.0).sin();
        encode_velocities(&[v; JOINTS], &mut answer);
        stream.write_all(&answer)?;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{steps} steps in {secs:.2} s: {:.0} steps/s",
        steps as f64 / secs
    );
    Ok(())
}
