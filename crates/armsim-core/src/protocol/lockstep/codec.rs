//! The lockstep wire format, sans-IO: the state frame the server sends (u64 BE step counter +
//! N × f32 BE joint angles) and a streaming decoder for the client's velocity frames
//! (N × f32 BE), so framing and validation are tested by byte vectors rather than through sockets.

/// Joints of the gripper project's robot (`gripper4`), in its protocol's order.
pub const GRIPPER4_JOINTS: usize = 10;

const STEP_BYTES: usize = 8;
const F32_BYTES: usize = 4;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LockstepError {
    /// The frame has been consumed; the caller decides whether to drop the client.
    #[error("target velocity {index} is not finite ({value})")]
    NonFinite { index: usize, value: f32 },
    #[error("state frame is {got} bytes, expected {expected}")]
    FrameLength { expected: usize, got: usize },
}

/// `(server → client, client → server)` frame sizes in bytes for `n` joints: `(8 + 4n, 4n)`,
/// i.e. `(48, 40)` for `gripper4`.
pub fn frame_sizes(n: usize) -> (usize, usize) {
    let inbound = n.saturating_mul(F32_BYTES);
    (inbound.saturating_add(STEP_BYTES), inbound)
}

/// Replaces `out` with one complete state frame, so the server can send it with a single write
/// (split writes with Nagle on cost ~90 ms per round trip). Angles are sent bit for bit, NaN
/// included: refusing non-finite state is the session's job, not the wire's.
pub fn encode_state(step: u64, angles: &[f32], out: &mut Vec<u8>) {
    out.clear();
    out.reserve(frame_sizes(angles.len()).0);
    out.extend_from_slice(&step.to_be_bytes());
    for a in angles {
        out.extend_from_slice(&a.to_be_bytes());
    }
}

/// The client side of [`encode_state`], for clients and tests that read a whole frame first.
pub fn decode_state(frame: &[u8], n: usize) -> Result<(u64, Vec<f32>), LockstepError> {
    let expected = frame_sizes(n).0;
    if frame.len() != expected {
        return Err(LockstepError::FrameLength {
            expected,
            got: frame.len(),
        });
    }
    let (step, angles) = frame.split_at(STEP_BYTES);
    let mut step_bytes = [0u8; STEP_BYTES];
    step_bytes.copy_from_slice(step);
    Ok((u64::from_be_bytes(step_bytes), read_f32s(angles)))
}

/// Replaces `out` with one velocity frame (what a client sends). No finiteness check: tests use
/// it to send bad frames on purpose.
pub fn encode_velocities(velocities: &[f32], out: &mut Vec<u8>) {
    out.clear();
    out.reserve(frame_sizes(velocities.len()).1);
    for v in velocities {
        out.extend_from_slice(&v.to_be_bytes());
    }
}

fn read_f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(F32_BYTES)
        .map(|c| f32::from_be_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Reassembles velocity frames from a TCP byte stream: reads may split a frame at any byte or
/// carry several frames.
#[derive(Debug, Clone)]
pub struct VelocityDecoder {
    n: usize,
    buf: Vec<u8>,
    // Start of the unconsumed bytes; compacted on push so consuming a frame never shifts bytes.
    start: usize,
}

impl VelocityDecoder {
    /// A decoder for `n` velocities per frame. `n = 0` never yields a frame (an empty frame would
    /// otherwise "arrive" forever).
    pub fn new(n: usize) -> Self {
        Self {
            n,
            buf: Vec::with_capacity(frame_sizes(n).1.saturating_mul(2)),
            start: 0,
        }
    }

    pub fn joints(&self) -> usize {
        self.n
    }

    /// Bytes received but not yet returned as a frame.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete frame; `Ok(None)` means "need more bytes". A frame with NaN or ±inf is
    /// consumed and reported by the index of its first non-finite value.
    pub fn next_frame(&mut self) -> Result<Option<Vec<f32>>, LockstepError> {
        let size = frame_sizes(self.n).1;
        if size == 0 || self.buffered() < size {
            return Ok(None);
        }
        let end = self.start + size;
        let frame = read_f32s(&self.buf[self.start..end]);
        self.start = end;
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
        match frame.iter().position(|v| !v.is_finite()) {
            Some(index) => Err(LockstepError::NonFinite {
                index,
                value: frame[index],
            }),
            None => Ok(Some(frame)),
        }
    }

    /// Forgets buffered bytes (e.g. a new client on the same decoder).
    pub fn clear(&mut self) {
        self.buf.clear();
        self.start = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_frame_exact_bytes() {
        let mut out = vec![0xAA; 3];
        encode_state(1, &[1.0, -2.0], &mut out);
        assert_eq!(
            out,
            [
                0, 0, 0, 0, 0, 0, 0, 1, // step 1
                0x3F, 0x80, 0, 0, // 1.0
                0xC0, 0, 0, 0, // -2.0
            ]
        );
        assert_eq!(decode_state(&out, 2), Ok((1, vec![1.0, -2.0])));
        encode_state(0x0102_0304_0506_0708, &[], &mut out);
        assert_eq!(out, [1, 2, 3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn velocity_frame_exact_bytes() {
        let mut out = Vec::new();
        encode_velocities(&[0.5, -0.0], &mut out);
        assert_eq!(out, [0x3F, 0, 0, 0, 0x80, 0, 0, 0]);
        let mut d = VelocityDecoder::new(2);
        d.push(&out);
        let frame = d.next_frame().unwrap().unwrap();
        assert_eq!(frame[0], 0.5);
        assert!(frame[1] == 0.0 && frame[1].is_sign_negative());
    }

    #[test]
    fn gripper4_sizes() {
        assert_eq!(frame_sizes(GRIPPER4_JOINTS), (48, 40));
        let mut out = Vec::new();
        encode_state(7, &[0.0; GRIPPER4_JOINTS], &mut out);
        assert_eq!(out.len(), 48);
        encode_velocities(&[0.0; GRIPPER4_JOINTS], &mut out);
        assert_eq!(out.len(), 40);
        assert_eq!(frame_sizes(usize::MAX), (usize::MAX, usize::MAX));
    }

    #[test]
    fn decode_state_checks_length() {
        assert_eq!(
            decode_state(&[0; 47], GRIPPER4_JOINTS),
            Err(LockstepError::FrameLength {
                expected: 48,
                got: 47
            })
        );
    }

    fn frames(values: &[[f32; 3]]) -> Vec<u8> {
        let mut all = Vec::new();
        let mut one = Vec::new();
        for v in values {
            encode_velocities(v, &mut one);
            all.extend_from_slice(&one);
        }
        all
    }

    #[test]
    fn split_byte_by_byte() {
        let bytes = frames(&[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
        let mut d = VelocityDecoder::new(3);
        let mut got = Vec::new();
        for (i, b) in bytes.iter().enumerate() {
            d.push(std::slice::from_ref(b));
            match d.next_frame().unwrap() {
                Some(f) => {
                    assert!(i == 11 || i == 23, "frame completed at byte {i}");
                    got.push(f);
                }
                None => assert!(i != 11 && i != 23),
            }
        }
        assert_eq!(got, [vec![1.0, 2.0, 3.0], vec![4.0, 5.0, 6.0]]);
        assert_eq!(d.buffered(), 0);
    }

    #[test]
    fn two_frames_and_a_bit_in_one_push() {
        let mut bytes = frames(&[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]);
        let tail = bytes.split_off(26);
        let mut d = VelocityDecoder::new(3);
        d.push(&bytes);
        assert_eq!(d.next_frame(), Ok(Some(vec![1.0, 2.0, 3.0])));
        assert_eq!(d.next_frame(), Ok(Some(vec![4.0, 5.0, 6.0])));
        assert_eq!(d.next_frame(), Ok(None));
        assert_eq!(d.buffered(), 2);
        d.push(&tail);
        assert_eq!(d.next_frame(), Ok(Some(vec![7.0, 8.0, 9.0])));
        assert_eq!(d.next_frame(), Ok(None));
    }

    #[test]
    fn non_finite_refused_with_index_and_consumed() {
        for (bad, index) in [
            ([1.0, f32::NAN, 3.0], 1),
            ([f32::INFINITY, 0.0, 0.0], 0),
            ([0.0, 0.0, f32::NEG_INFINITY], 2),
        ] {
            let mut d = VelocityDecoder::new(3);
            d.push(&frames(&[bad, [1.0, 1.0, 1.0]]));
            match d.next_frame() {
                Err(LockstepError::NonFinite { index: i, value }) => {
                    assert_eq!(i, index);
                    assert!(!value.is_finite());
                    assert_eq!(value.to_bits(), bad[index].to_bits());
                }
                other => panic!("expected NonFinite, got {other:?}"),
            }
            assert_eq!(d.next_frame(), Ok(Some(vec![1.0, 1.0, 1.0])));
        }
    }

    #[test]
    fn zero_joints_never_yields() {
        let mut d = VelocityDecoder::new(0);
        d.push(&[1, 2, 3]);
        assert_eq!(d.next_frame(), Ok(None));
    }

    /// xorshift64*: deterministic pseudo-random bytes without a dev-dependency.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn below(&mut self, n: u64) -> usize {
            (self.next() % n) as usize
        }
    }

    #[test]
    fn never_panics_on_arbitrary_bytes() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for _ in 0..4000 {
            let n = rng.below(13);
            let len = rng.below(200);
            let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            let _ = decode_state(&bytes, n);

            let mut d = VelocityDecoder::new(n);
            let mut frames_seen = 0;
            let mut rest = &bytes[..];
            while !rest.is_empty() {
                let (chunk, tail) = rest.split_at(rng.below(rest.len() as u64 + 1));
                rest = tail;
                d.push(chunk);
                while let Ok(Some(_)) | Err(_) = d.next_frame() {
                    frames_seen += 1;
                }
            }
            let expected = if n == 0 { 0 } else { len / (4 * n) };
            assert_eq!(frames_seen, expected);
            assert_eq!(d.buffered(), if n == 0 { len } else { len % (4 * n) });
        }
    }

    mod never_panics {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// Arbitrary bytes, pushed in arbitrary pieces, never panic the decoder: each call
            /// gives a frame, "need more", or a typed error.
            #[test]
            fn on_arbitrary_bytes(
                joints in 0usize..16,
                chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..16),
            ) {
                let mut decoder = VelocityDecoder::new(joints);
                for chunk in &chunks {
                    decoder.push(chunk);
                    while let Ok(Some(v)) = decoder.next_frame() {
                        prop_assert_eq!(v.len(), joints);
                    }
                }
                let all: Vec<u8> = chunks.concat();
                let _ = decode_state(&all, joints);
            }
        }
    }
}
