//! Fuzzes the RCSSServerMJ agent/monitor port's input path: length-prefixed framing, then the
//! S-expression parser with the server's node budget, and a print → parse round trip of every
//! expression that parsed.
#![no_main]

use libfuzzer_sys::fuzz_target;

use armsim_core::protocol::sexp::{self, framing};

fuzz_target!(|data: &[u8]| {
    let mut decoder = framing::FrameDecoder::new(1 << 16);
    decoder.push(data);
    while let Ok(Some(frame)) = decoder.next_frame() {
        for parsed in sexp::parse_all(&frame).with_max_nodes(16 * 1024) {
            let Ok(e) = parsed else { continue };
            let printed = e.to_string();
            let back: Vec<_> = sexp::parse_all(printed.as_bytes()).collect();
            assert_eq!(back.len(), 1, "{printed}");
            assert_eq!(back[0].as_ref().ok(), Some(&e), "{printed}");
        }
    }
    // The parser on the raw bytes too, without framing.
    for _ in sexp::parse_all(data).with_max_nodes(16 * 1024) {}
});
