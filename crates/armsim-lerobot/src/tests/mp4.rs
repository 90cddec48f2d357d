//! A test-only mp4 reader: just enough ISO-BMFF to list a single H.264 track's samples, their
//! durations and keyframes, and to hand the samples to OpenH264's decoder.

use openh264::decoder::Decoder;
use openh264::formats::YUVSource;

pub struct Track {
    pub timescale: u32,
    pub width: u16,
    pub height: u16,
    /// Every sample's duration in timescale ticks (from `stts`).
    pub durations: Vec<u32>,
    /// 0-based indices of sync samples (from `stss`; all samples when absent).
    pub keyframes: Vec<usize>,
    /// AVCC (length-prefixed) sample payloads.
    pub samples: Vec<Vec<u8>>,
    pub sps: Vec<u8>,
    pub pps: Vec<u8>,
    /// `elst` present (we write none: pts must start at 0).
    pub has_edit_list: bool,
}

fn be32(b: &[u8], at: usize) -> u32 {
    crate::mp4::be32(b, at).unwrap_or_else(|| panic!("short box: no u32 at {at}"))
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(b[at..at + 2].try_into().unwrap())
}

/// The boxes directly inside `b`: (type, payload).
fn boxes(b: &[u8]) -> Vec<([u8; 4], &[u8])> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 8 <= b.len() {
        let size = be32(b, at) as usize;
        let typ: [u8; 4] = b[at + 4..at + 8].try_into().unwrap();
        assert!(
            size >= 8 && at + size <= b.len(),
            "bad box size {size} at {at}"
        );
        out.push((typ, &b[at + 8..at + size]));
        at += size;
    }
    out
}

fn child<'a>(b: &'a [u8], typ: &[u8; 4]) -> Option<&'a [u8]> {
    crate::mp4::child(b, typ)
}

fn path<'a>(b: &'a [u8], types: &[&[u8; 4]]) -> &'a [u8] {
    let mut cur = b;
    for t in types {
        cur =
            child(cur, t).unwrap_or_else(|| panic!("missing box {}", String::from_utf8_lossy(*t)));
    }
    cur
}

pub fn read(file: &[u8]) -> Track {
    let top = boxes(file);
    assert_eq!(&top[0].0, b"ftyp", "mp4 must start with ftyp");
    let moov = child(file, b"moov").expect("moov");
    let trak = path(moov, &[b"trak"]);
    let has_edit_list = child(trak, b"edts").is_some();
    let mdia = path(trak, &[b"mdia"]);
    let mdhd = path(mdia, &[b"mdhd"]);
    let timescale = if mdhd[0] == 1 {
        be32(mdhd, 20)
    } else {
        be32(mdhd, 12)
    };
    let stbl = path(mdia, &[b"minf", b"stbl"]);

    let stsd = path(stbl, &[b"stsd"]);
    // stsd: version/flags(4) count(4) then the avc1 sample entry box.
    let avc1 = &stsd[8..];
    assert_eq!(&avc1[4..8], b"avc1");
    let entry = &avc1[8..be32(avc1, 0) as usize];
    // VisualSampleEntry: 6 reserved + 2 index + 16 pre-defined, then width, height at 24..28.
    let width = be16(entry, 24);
    let height = be16(entry, 26);
    let avcc = child(&entry[78..], b"avcC").expect("avcC");
    let sps_len = be16(avcc, 6) as usize;
    let sps = avcc[8..8 + sps_len].to_vec();
    let pps_at = 8 + sps_len + 1;
    let pps_len = be16(avcc, pps_at) as usize;
    let pps = avcc[pps_at + 2..pps_at + 2 + pps_len].to_vec();

    let stts = path(stbl, &[b"stts"]);
    let mut durations = Vec::new();
    for e in 0..be32(stts, 4) as usize {
        let count = be32(stts, 8 + e * 8);
        let delta = be32(stts, 12 + e * 8);
        durations.extend(std::iter::repeat_n(delta, count as usize));
    }

    let stsz = path(stbl, &[b"stsz"]);
    let uniform = be32(stsz, 4);
    let count = be32(stsz, 8) as usize;
    let sizes: Vec<usize> = (0..count)
        .map(|i| {
            if uniform != 0 {
                uniform as usize
            } else {
                be32(stsz, 12 + i * 4) as usize
            }
        })
        .collect();

    let stco = path(stbl, &[b"stco"]);
    let chunk_offsets: Vec<usize> = (0..be32(stco, 4) as usize)
        .map(|i| be32(stco, 8 + i * 4) as usize)
        .collect();
    let stsc = path(stbl, &[b"stsc"]);
    let stsc_entries: Vec<(usize, usize)> = (0..be32(stsc, 4) as usize)
        .map(|e| {
            (
                be32(stsc, 8 + e * 12) as usize,
                be32(stsc, 12 + e * 12) as usize,
            )
        })
        .collect();
    let mut samples = Vec::with_capacity(count);
    let mut sample = 0;
    for (chunk, &offset) in chunk_offsets.iter().enumerate() {
        let per_chunk = stsc_entries
            .iter()
            .rev()
            .find(|(first, _)| *first <= chunk + 1)
            .map(|(_, n)| *n)
            .expect("stsc entry");
        let mut at = offset;
        for _ in 0..per_chunk {
            if sample == count {
                break;
            }
            samples.push(file[at..at + sizes[sample]].to_vec());
            at += sizes[sample];
            sample += 1;
        }
    }
    assert_eq!(samples.len(), count, "samples reached through stsc/stco");

    let keyframes = match child(stbl, b"stss") {
        Some(stss) => (0..be32(stss, 4) as usize)
            .map(|i| be32(stss, 8 + i * 4) as usize - 1)
            .collect(),
        None => (0..count).collect(),
    };
    Track {
        timescale,
        width,
        height,
        durations,
        keyframes,
        samples,
        sps,
        pps,
        has_edit_list,
    }
}

/// AVCC sample -> Annex B.
pub fn annex_b(sample: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(sample.len() + 16);
    let mut at = 0;
    while at + 4 <= sample.len() {
        let len = be32(sample, at) as usize;
        out.extend_from_slice(&[0, 0, 0, 1]);
        out.extend_from_slice(&sample[at + 4..at + 4 + len]);
        at += 4 + len;
    }
    out
}

/// Decodes samples `range` of `track` (the first must be a keyframe) to RGB8 frames.
pub fn decode(track: &Track, range: std::ops::Range<usize>) -> Vec<Vec<u8>> {
    let mut decoder = Decoder::new().expect("decoder");
    let (w, h) = (track.width as usize, track.height as usize);
    let mut frames = Vec::new();
    let mut header = Vec::new();
    for ps in [&track.sps, &track.pps] {
        header.extend_from_slice(&[0, 0, 0, 1]);
        header.extend_from_slice(ps);
    }
    decoder.decode(&header).expect("parameter sets");
    for i in range {
        let nal = annex_b(&track.samples[i]);
        if let Some(yuv) = decoder.decode(&nal).expect("decode sample") {
            assert_eq!(yuv.dimensions(), (w, h));
            let mut rgb = vec![0u8; w * h * 3];
            yuv.write_rgb8(&mut rgb);
            frames.push(rgb);
        }
    }
    for yuv in decoder.flush_remaining().expect("flush") {
        let mut rgb = vec![0u8; w * h * 3];
        yuv.write_rgb8(&mut rgb);
        frames.push(rgb);
    }
    frames
}
