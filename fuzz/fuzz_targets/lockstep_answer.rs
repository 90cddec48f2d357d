//! Fuzzes the lockstep codec (the gripper project's remote-control protocol): arbitrary bytes,
//! split at an arbitrary point, through the answer decoder and the state-frame decoder.
#![no_main]

use libfuzzer_sys::fuzz_target;

use armsim_core::protocol::lockstep::codec;

fuzz_target!(|data: &[u8]| {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let joints = usize::from(head % 16);
    let split = rest.len() / 2;
    let mut decoder = codec::VelocityDecoder::new(joints);
    for piece in [&rest[..split], &rest[split..]] {
        decoder.push(piece);
        while let Ok(Some(v)) = decoder.next_frame() {
            assert_eq!(v.len(), joints);
        }
    }
    let _ = codec::decode_state(rest, joints);
});
