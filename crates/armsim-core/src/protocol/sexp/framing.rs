//! RCSSServerMJ's message framing, sans-IO: a 4-byte unsigned big-endian length prefix followed by
//! that many payload bytes, in both directions, so the agent and monitor ports turn a TCP byte
//! stream into whole messages (and back) in code that is tested without sockets.
//!
//! Decisions:
//! - A declared length above the decoder's limit is an error as soon as the 4 header bytes are
//!   in, before a single payload byte is buffered or allocated; the decoder then stays failed
//!   (the caller is expected to close the connection) and drops whatever is pushed afterwards.
//! - A zero-length frame is a valid, empty message (`Ok(Some(vec![]))`): RCSSServerMJ does not
//!   forbid it and an empty payload parses to zero expressions, so whether it "counts" as an
//!   agent's reply is the protocol layer's call, not the framing's.

/// Default largest payload accepted. rcssserver messages are a few KiB; 1 MiB leaves a wide
/// margin while keeping a hostile length prefix from costing more than that per connection.
pub const DEFAULT_MAX_FRAME: usize = 1 << 20;

/// Size of the length prefix.
pub const HEADER_LEN: usize = 4;

/// Buffer capacity kept across frames; a larger one left behind by a big frame is released once
/// the buffer drains, so a single large message does not pin memory for the connection's life.
const RETAINED_CAPACITY: usize = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FramingError {
    /// Decoding: the peer announced more than the limit. Fatal for the connection.
    #[error("declared frame length {len} exceeds the limit of {max} bytes")]
    TooLong { len: u32, max: usize },
    /// Encoding: the payload does not fit the 32-bit length prefix.
    #[error("payload of {len} bytes does not fit a 32-bit length prefix")]
    PayloadTooLarge { len: usize },
}

/// Reassembles frames from arbitrarily split reads. Call [`FrameDecoder::next_frame`] until it
/// returns `Ok(None)` after every [`FrameDecoder::push`]; then the buffer never holds more than
/// one incomplete frame plus the last push.
#[derive(Debug, Clone)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    /// Bytes of `buf` before `start` are already consumed. Consumed bytes are dropped in bulk by
    /// [`FrameDecoder::compact`] rather than on every frame, so many small frames or pushes cost
    /// linear, not quadratic, copying.
    start: usize,
    max_len: usize,
    failed: Option<FramingError>,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        FrameDecoder::new(DEFAULT_MAX_FRAME)
    }
}

impl FrameDecoder {
    /// A decoder accepting payloads of at most `max_len` bytes.
    pub fn new(max_len: usize) -> Self {
        FrameDecoder {
            buf: Vec::new(),
            start: 0,
            max_len,
            failed: None,
        }
    }

    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// Received bytes not yet returned as frames.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Whether a too-long frame was seen; the decoder then yields nothing but that error.
    pub fn is_failed(&self) -> bool {
        self.failed.is_some()
    }

    /// Appends bytes read from the stream. Ignored once the decoder has failed.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.failed.is_some() {
            return;
        }
        self.compact();
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete payload: `Ok(None)` means more bytes are needed.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, FramingError> {
        if let Some(error) = self.failed {
            return Err(error);
        }
        let pending = &self.buf[self.start..];
        let Some(header) = pending.first_chunk::<HEADER_LEN>() else {
            return Ok(None);
        };
        let declared = u32::from_be_bytes(*header);
        let len = match usize::try_from(declared) {
            Ok(len) if len <= self.max_len => len,
            _ => {
                let error = FramingError::TooLong {
                    len: declared,
                    max: self.max_len,
                };
                self.failed = Some(error);
                self.buf = Vec::new();
                self.start = 0;
                return Err(error);
            }
        };
        let Some(payload) = pending[HEADER_LEN..].get(..len) else {
            return Ok(None);
        };
        let frame = payload.to_vec();
        self.start += HEADER_LEN + len;
        if self.start == self.buf.len() {
            self.compact();
        }
        Ok(Some(frame))
    }

    /// Drops consumed bytes, but only when that moves no more bytes than were consumed since the
    /// last compaction (keeps the total copying linear in the bytes received).
    fn compact(&mut self) {
        let live = self.buf.len() - self.start;
        if live == 0 {
            self.buf.clear();
            self.start = 0;
            if self.buf.capacity() > RETAINED_CAPACITY {
                self.buf.shrink_to(RETAINED_CAPACITY);
            }
        } else if self.start >= live {
            self.buf.drain(..self.start);
            self.start = 0;
        }
    }
}

/// The length prefix for a payload of `len` bytes.
pub fn frame_header(len: usize) -> Result<[u8; HEADER_LEN], FramingError> {
    u32::try_from(len)
        .map(u32::to_be_bytes)
        .map_err(|_| FramingError::PayloadTooLarge { len })
}

/// Appends one frame (prefix + payload) to `out`, so several frames can be queued in one
/// buffer and sent with one write. On error `out` is left unchanged.
pub fn encode_frame(payload: &[u8], out: &mut Vec<u8>) -> Result<(), FramingError> {
    let header = frame_header(payload.len())?;
    out.reserve(HEADER_LEN + payload.len());
    out.extend_from_slice(&header);
    out.extend_from_slice(payload);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frames_of(payloads: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for payload in payloads {
            encode_frame(payload, &mut out).unwrap();
        }
        out
    }

    fn drain(decoder: &mut FrameDecoder) -> Result<Vec<Vec<u8>>, FramingError> {
        let mut frames = Vec::new();
        while let Some(frame) = decoder.next_frame()? {
            frames.push(frame);
        }
        Ok(frames)
    }

    #[test]
    fn encode_writes_big_endian_prefix_and_appends() {
        let mut out = b"xy".to_vec();
        encode_frame(b"(syn)", &mut out).unwrap();
        assert_eq!(out, b"xy\x00\x00\x00\x05(syn)");
        assert_eq!(frame_header(0x0102_0304), Ok([1, 2, 3, 4]));
    }

    #[cfg(target_pointer_width = "64")]
    #[test]
    fn header_for_oversized_payload_is_an_error() {
        let max = u32::MAX as usize;
        assert_eq!(frame_header(max), Ok([0xFF; 4]));
        assert_eq!(
            frame_header(max + 1),
            Err(FramingError::PayloadTooLarge { len: max + 1 })
        );
    }

    #[test]
    fn byte_by_byte_reassembly() {
        let stream = frames_of(&[b"(init arm6 teamA 1)", b"(syn)"]);
        let mut decoder = FrameDecoder::default();
        let mut frames = Vec::new();
        for (i, byte) in stream.iter().enumerate() {
            decoder.push(std::slice::from_ref(byte));
            let got = drain(&mut decoder).unwrap();
            // A frame completes exactly on its last byte, never earlier.
            let completes = i == 4 + 19 - 1 || i == stream.len() - 1;
            assert_eq!(got.len(), usize::from(completes), "after byte {i}");
            frames.extend(got);
        }
        assert_eq!(frames, [b"(init arm6 teamA 1)".to_vec(), b"(syn)".to_vec()]);
        assert_eq!(decoder.buffered(), 0);
    }

    #[test]
    fn several_frames_in_one_push_including_empty() {
        let mut stream = frames_of(&[b"(a)", b"", b"(b)(c)"]);
        stream.extend_from_slice(&[0, 0]); // start of a fourth header
        let mut decoder = FrameDecoder::default();
        decoder.push(&stream);
        assert_eq!(
            drain(&mut decoder),
            Ok(vec![b"(a)".to_vec(), Vec::new(), b"(b)(c)".to_vec()])
        );
        assert_eq!(decoder.buffered(), 2);
        decoder.push(&[0, 1, b'x']);
        assert_eq!(decoder.next_frame(), Ok(Some(b"x".to_vec())));
        assert_eq!(decoder.next_frame(), Ok(None));
    }

    #[test]
    fn zero_length_frame_is_an_empty_message() {
        let mut decoder = FrameDecoder::new(0);
        decoder.push(&[0, 0, 0]);
        assert_eq!(decoder.next_frame(), Ok(None));
        decoder.push(&[0]);
        assert_eq!(decoder.next_frame(), Ok(Some(Vec::new())));
        assert_eq!(decoder.next_frame(), Ok(None));
    }

    #[test]
    fn too_long_is_rejected_from_the_header_alone() {
        let mut decoder = FrameDecoder::new(8);
        decoder.push(&[0, 0, 0, 8]);
        assert_eq!(decoder.next_frame(), Ok(None), "exactly the limit is fine");
        let mut decoder = FrameDecoder::new(8);
        decoder.push(&[0, 0, 0]);
        assert_eq!(decoder.next_frame(), Ok(None));
        decoder.push(&[9]);
        let too_long = FramingError::TooLong { len: 9, max: 8 };
        assert_eq!(decoder.next_frame(), Err(too_long));
        assert!(decoder.is_failed());
        assert_eq!(decoder.buffered(), 0);
        // The decoder stays failed and stops buffering.
        decoder.push(&[0; 100]);
        assert_eq!(decoder.buffered(), 0);
        assert_eq!(decoder.next_frame(), Err(too_long));
    }

    #[test]
    fn huge_declared_length_allocates_nothing() {
        let mut decoder = FrameDecoder::default();
        decoder.push(&[0xFF, 0xFF, 0xFF, 0xFF, b'(']);
        assert_eq!(
            decoder.next_frame(),
            Err(FramingError::TooLong {
                len: u32::MAX,
                max: DEFAULT_MAX_FRAME
            })
        );
        assert_eq!(decoder.buf.capacity(), 0);
    }

    #[test]
    fn buffer_stays_bounded_over_many_small_frames() {
        let payload = [b'z'; 10];
        let stream = frames_of(&[&payload[..]; 2000]);
        let mut decoder = FrameDecoder::default();
        let mut count = 0;
        for chunk in stream.chunks(3) {
            decoder.push(chunk);
            count += drain(&mut decoder).unwrap().len();
            // At most one partial frame plus one chunk is live, and compaction keeps the
            // consumed prefix no larger than the live part.
            assert!(decoder.buf.len() <= 2 * (HEADER_LEN + payload.len() + 3));
        }
        assert_eq!(count, 2000);
    }

    #[test]
    fn large_frame_capacity_is_released_after_it_drains() {
        let big = vec![7u8; 4 * RETAINED_CAPACITY];
        let mut decoder = FrameDecoder::default();
        decoder.push(&frames_of(&[&big]));
        assert_eq!(decoder.next_frame(), Ok(Some(big)));
        decoder.push(&frames_of(&[b"(a)"]));
        assert!(decoder.buf.capacity() <= RETAINED_CAPACITY);
        assert_eq!(decoder.next_frame(), Ok(Some(b"(a)".to_vec())));
    }

    /// Splits `bytes` into chunks whose sizes cycle through `sizes` (each at least 1).
    fn chunked<'a>(bytes: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
        let mut chunks = Vec::new();
        let mut rest = bytes;
        for size in sizes.iter().cycle() {
            if rest.is_empty() {
                break;
            }
            let (chunk, tail) = rest.split_at((*size).min(rest.len()));
            chunks.push(chunk);
            rest = tail;
        }
        chunks
    }

    proptest! {
        #[test]
        fn decoder_never_panics_on_arbitrary_chunks(
            bytes in prop::collection::vec(any::<u8>(), 0..1024),
            sizes in prop::collection::vec(1usize..64, 1..16),
            max_len in prop_oneof![0usize..64, Just(DEFAULT_MAX_FRAME)],
        ) {
            let mut decoder = FrameDecoder::new(max_len);
            let mut failed = false;
            for chunk in chunked(&bytes, &sizes) {
                decoder.push(chunk);
                match drain(&mut decoder) {
                    Ok(frames) => {
                        prop_assert!(!failed, "a failed decoder must stay failed");
                        prop_assert!(frames.iter().all(|f| f.len() <= max_len));
                    }
                    Err(FramingError::TooLong { len, max }) => {
                        prop_assert!(len as usize > max_len && max == max_len);
                        failed = true;
                    }
                    Err(other) => prop_assert!(false, "unexpected {other}"),
                }
            }
        }

        #[test]
        fn encode_then_decode_round_trips(
            payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..300), 0..10),
            sizes in prop::collection::vec(1usize..50, 1..16),
        ) {
            let mut stream = Vec::new();
            for payload in &payloads {
                encode_frame(payload, &mut stream).unwrap();
            }
            let mut decoder = FrameDecoder::new(300);
            let mut frames = Vec::new();
            for chunk in chunked(&stream, &sizes) {
                decoder.push(chunk);
                frames.extend(drain(&mut decoder).unwrap());
            }
            prop_assert_eq!(frames, payloads);
            prop_assert_eq!(decoder.buffered(), 0);
        }
    }
}
