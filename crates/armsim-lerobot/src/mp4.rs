//! What an episode's mp4 says of its frames, read back from the file as written: how many
//! samples its video track holds, and their times. The writer checks every episode's videos
//! against its rows with this before any metadata names them.

use std::ops::Range;
use std::path::Path;

/// The video track's sample count and sample durations (`stsz`, `stts`), in its media
/// timescale (`mdhd`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TrackTiming {
    pub timescale: u32,
    pub samples: u64,
    /// One duration per sample, in order.
    pub durations: Vec<u32>,
}

/// Reads the first track's timing from the mp4 at `path`.
pub(crate) fn track_timing(path: &Path) -> Result<TrackTiming, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let moov = child(&bytes, b"moov").ok_or("no moov box")?;
    let trak = child(moov, b"trak").ok_or("no trak box")?;
    let mdia = child(trak, b"mdia").ok_or("no mdia box")?;
    let mdhd = child(mdia, b"mdhd").ok_or("no mdhd box")?;
    let stbl = child(mdia, b"minf")
        .and_then(|minf| child(minf, b"stbl"))
        .ok_or("no stbl box")?;
    let stsz = child(stbl, b"stsz").ok_or("no stsz box")?;
    let stts = child(stbl, b"stts").ok_or("no stts box")?;
    // mdhd: version, flags, then (v0) creation, modification: u32 each, or (v1) u64 each.
    let timescale_at = if mdhd.first() == Some(&1) { 20 } else { 12 };
    let timescale = be32(mdhd, timescale_at).ok_or("short mdhd box")?;
    // stsz: version and flags, sample size, sample count.
    let samples = u64::from(be32(stsz, 8).ok_or("short stsz box")?);
    // stts: version and flags, entry count, then (count, delta) pairs.
    let entries = be32(stts, 4).ok_or("short stts box")? as usize;
    let mut durations = Vec::new();
    for k in 0..entries {
        let count = be32(stts, 8 + 8 * k).ok_or("short stts box")?;
        let delta = be32(stts, 12 + 8 * k).ok_or("short stts box")?;
        if durations.len() as u64 + u64::from(count) > samples {
            return Err(format!(
                "stts covers more than the {samples} samples of stsz"
            ));
        }
        durations.extend(std::iter::repeat_n(delta, count as usize));
    }
    Ok(TrackTiming {
        timescale,
        samples,
        durations,
    })
}

/// Checks that the mp4 holds exactly `frames` video frames whose timestamps step by exactly
/// 1/`fps` from 0; says what it found otherwise.
pub(crate) fn check_frames(path: &Path, frames: u64, fps: u32) -> Result<(), String> {
    let t = track_timing(path)?;
    if t.samples != frames {
        return Err(format!(
            "{} holds {} video frame(s) for {frames} row(s)",
            path.display(),
            t.samples
        ));
    }
    if t.durations.len() as u64 != t.samples {
        return Err(format!(
            "{} gives times for {} of its {} frames",
            path.display(),
            t.durations.len(),
            t.samples
        ));
    }
    if fps == 0 || !t.timescale.is_multiple_of(fps) {
        return Err(format!(
            "{}'s timescale {} has no whole tick count per frame at {fps} fps",
            path.display(),
            t.timescale
        ));
    }
    let step = t.timescale / fps;
    // Frame k starts at the sum of the durations before it; the last one's own duration does
    // not move any timestamp.
    let last = t.durations.len().saturating_sub(1);
    if let Some(k) = t.durations[..last].iter().position(|&d| d != step) {
        return Err(format!(
            "{}: frame {} starts {} tick(s) after frame {k}, not {step} (1/{fps} s at {} Hz)",
            path.display(),
            k + 1,
            t.durations[k],
            t.timescale
        ));
    }
    Ok(())
}

pub(crate) fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// The payload of the first box of type `kind` among `bytes`' boxes.
pub(crate) fn child<'a>(bytes: &'a [u8], kind: &[u8; 4]) -> Option<&'a [u8]> {
    child_at(bytes, 0..bytes.len(), kind).map(|r| &bytes[r])
}

/// Where the payload of the first box of type `kind` among the boxes in `bytes[within]` is.
fn child_at(bytes: &[u8], within: Range<usize>, kind: &[u8; 4]) -> Option<Range<usize>> {
    let end = within.end.min(bytes.len());
    let mut at = within.start;
    while at + 8 <= end {
        let size32 = be32(bytes, at)? as usize;
        let (header, size) = match size32 {
            0 => (8, end - at),
            1 => {
                let b = bytes.get(at + 8..at + 16)?;
                let size = u64::from_be_bytes(b.try_into().ok()?);
                (16, usize::try_from(size).ok()?)
            }
            n => (8, n),
        };
        if size < header || at + size > end {
            return None;
        }
        if &bytes[at + 4..at + 8] == kind {
            return Some(at + header..at + size);
        }
        at += size;
    }
    None
}

/// Where the payload of the box at `path` (from the top level down) is.
fn path_at(bytes: &[u8], path: &[&[u8; 4]]) -> Option<Range<usize>> {
    path.iter()
        .try_fold(0..bytes.len(), |within, kind| child_at(bytes, within, kind))
}

/// The media timescale FFmpeg's mp4 muxer gives a video track at `fps`: the rate doubled until it
/// is at least 10 000 (15 360 at 30 fps).
pub(crate) fn ffmpeg_timescale(fps: u32) -> u32 {
    let mut t = fps.max(1);
    while t < 10_000 {
        t *= 2;
    }
    t
}

fn put32(bytes: &mut [u8], at: usize, v: u32) {
    bytes[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

/// Rescales the first track's media timescale to `to` in place: `mdhd`'s timescale and
/// duration, and `stts`'s sample durations (each rounded to the nearest tick; exact when `to`
/// is a multiple of the rate, as [`ffmpeg_timescale`]'s is, and the old one too). Every field
/// keeps its size, so no box moves. Gives an error for a file it cannot read, or one with
/// composition offsets (`ctts`) or an edit list, which it does not rescale.
pub(crate) fn set_timescale(bytes: &mut [u8], to: u32) -> Result<(), String> {
    let mdia = path_at(bytes, &[b"moov", b"trak", b"mdia"]).ok_or("no moov/trak/mdia box")?;
    let mdhd = child_at(bytes, mdia.clone(), b"mdhd").ok_or("no mdhd box")?;
    let stbl = child_at(bytes, mdia.clone(), b"minf")
        .and_then(|minf| child_at(bytes, minf, b"stbl"))
        .ok_or("no stbl box")?;
    if child_at(bytes, stbl.clone(), b"ctts").is_some()
        || path_at(bytes, &[b"moov", b"trak", b"edts"]).is_some()
    {
        return Err("composition offsets or an edit list: not rescaled".into());
    }
    let stts = child_at(bytes, stbl, b"stts").ok_or("no stts box")?;
    let v1 = bytes.get(mdhd.start) == Some(&1);
    let at = mdhd.start + if v1 { 20 } else { 12 };
    let from = be32(bytes, at).ok_or("short mdhd box")?;
    if from == 0 {
        return Err("mdhd's timescale is 0".into());
    }
    let scale = |v: u64| (v * u64::from(to) + u64::from(from) / 2) / u64::from(from);
    put32(bytes, at, to);
    if v1 {
        let d = bytes.get(at + 4..at + 12).ok_or("short mdhd box")?;
        let duration = u64::from_be_bytes(d.try_into().map_err(|_| "short mdhd box")?);
        bytes[at + 4..at + 12].copy_from_slice(&scale(duration).to_be_bytes());
    } else {
        let duration = be32(bytes, at + 4).ok_or("short mdhd box")?;
        let scaled = u32::try_from(scale(u64::from(duration))).map_err(|_| "duration too long")?;
        put32(bytes, at + 4, scaled);
    }
    let entries = be32(bytes, stts.start + 4).ok_or("short stts box")? as usize;
    for k in 0..entries {
        let at = stts.start + 12 + 8 * k;
        if at + 4 > stts.end {
            return Err("short stts box".into());
        }
        let delta = be32(bytes, at).ok_or("short stts box")?;
        let scaled = u32::try_from(scale(u64::from(delta))).map_err(|_| "delta too long")?;
        put32(bytes, at, scaled);
    }
    Ok(())
}
