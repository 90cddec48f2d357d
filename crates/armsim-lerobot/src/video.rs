//! One camera's H.264 stream: OpenH264 encodes each frame as it arrives, the episode's encoded
//! frames wait in memory until the episode ends, then muxide writes them at exactly `frame / fps`
//! into an mp4 of the episode's own.
//!
//! Why one file per episode: muxide writes an mp4's index (`moov`) only when the file is
//! finished, and a file without it cannot be opened, so a recording killed with episodes still
//! appended to an open mp4 would lose them all. A finished file per episode (written under a
//! temporary name, fsynced, renamed) makes each saved episode's video final the moment it is
//! saved, costs no rewriting, and keeps memory to one episode's encoded frames. LeRobot v3 reads
//! it as it reads its own multi-episode files: `videos/<key>/chunk_index`/`file_index` per episode,
//! `from_timestamp` 0.

use std::path::{Path, PathBuf};

use muxide::api::{MuxerBuilder, VideoCodec};
use openh264::OpenH264API;
use openh264::encoder::{
    Complexity, Encoder, EncoderConfig, FrameRate, FrameType, RateControlMode, UsageType, VuiConfig,
};
use openh264::formats::{RgbSliceU8, YUVBuffer};

use crate::atomic::{Staged, sync_dir};
use crate::spec::CameraSpec;
use crate::{LeRobotError, chunk_file, mp4, video_file_path};

/// Where one episode sits in a camera's video files.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EpisodeVideo {
    pub chunk_index: u64,
    pub file_index: u64,
    pub from_timestamp: f64,
    pub to_timestamp: f64,
}

/// An encoded frame: Annex B bytes and whether it is an IDR frame.
struct Packet {
    data: Vec<u8>,
    keyframe: bool,
}

pub(crate) struct CameraVideo {
    pub key: String,
    name: String,
    width: u32,
    height: u32,
    fps: u32,
    keyframe_interval: u32,
    root: PathBuf,
    encoder: Encoder,
    yuv: YUVBuffer,
    /// Frames encoded so far (for the encoder's timestamps).
    encoded: u64,
    /// The open episode's encoded frames.
    pending: Vec<Packet>,
    pending_bytes: u64,
}

impl CameraVideo {
    pub(crate) fn new(
        root: &Path,
        cam: &CameraSpec,
        fps: u32,
        keyframe_interval: u32,
    ) -> Result<Self, LeRobotError> {
        let config = EncoderConfig::new()
            // Every frame is encoded: a skipped frame would shift the video against the data.
            .skip_frames(false)
            // Constant QP 26 (OpenH264's base QP with rate control off): quality independent
            // of the content, no bitrate to guess per resolution.
            .rate_control_mode(RateControlMode::Off)
            .max_frame_rate(FrameRate::from_hz(fps as f32))
            .usage_type(UsageType::CameraVideoRealTime)
            .complexity(Complexity::Medium)
            // One thread per camera: deterministic output, no oversubscription.
            .num_threads(1)
            // The RGB->YUV conversion below uses BT.601 limited-range coefficients; say so.
            .vui(VuiConfig::bt601());
        let encoder =
            Encoder::with_api_config(OpenH264API::from_source(), config).map_err(|e| {
                LeRobotError::Encode {
                    camera: cam.name.clone(),
                    message: e.to_string(),
                }
            })?;
        Ok(Self {
            key: cam.feature_key(),
            name: cam.name.clone(),
            width: cam.width,
            height: cam.height,
            fps,
            keyframe_interval,
            root: root.to_path_buf(),
            encoder,
            yuv: YUVBuffer::new(cam.width as usize, cam.height as usize),
            encoded: 0,
            pending: Vec::new(),
            pending_bytes: 0,
        })
    }

    fn encode_err(&self, message: impl Into<String>) -> LeRobotError {
        LeRobotError::Encode {
            camera: self.name.clone(),
            message: message.into(),
        }
    }

    /// Encodes frame `frame_in_episode` of the open episode (`rgb` already checked to be
    /// width*height*3 bytes).
    pub(crate) fn encode(&mut self, rgb: &[u8], frame_in_episode: u64) -> Result<(), LeRobotError> {
        let want_key = frame_in_episode == 0
            || (self.keyframe_interval > 0
                && frame_in_episode.is_multiple_of(self.keyframe_interval as u64));
        if want_key {
            // Harmless before the encoder's first frame, which is an IDR anyway.
            self.encoder.force_intra_frame();
        }
        self.yuv.read_rgb8(RgbSliceU8::new(
            rgb,
            (self.width as usize, self.height as usize),
        ));
        let ms = self.encoded * 1000 / self.fps as u64;
        let stream = self
            .encoder
            .encode_at(&self.yuv, openh264::Timestamp::from_millis(ms))
            .map_err(|e| LeRobotError::Encode {
                camera: self.name.clone(),
                message: e.to_string(),
            })?;
        let frame_type = stream.frame_type();
        let data = stream.to_vec();
        self.encoded += 1;
        if data.is_empty() || frame_type == FrameType::Skip {
            return Err(self.encode_err("the encoder skipped a frame"));
        }
        let keyframe = frame_type == FrameType::IDR;
        if frame_in_episode == 0 && !keyframe {
            return Err(self.encode_err(format!(
                "the first frame of the episode came out as {frame_type:?}, not an IDR frame"
            )));
        }
        self.pending_bytes += data.len() as u64;
        self.pending.push(Packet { data, keyframe });
        Ok(())
    }

    /// Encoded bytes of the open episode.
    pub(crate) fn pending_bytes(&self) -> u64 {
        self.pending_bytes
    }

    /// Loses the open episode's last encoded frame, as a broken encoder or muxer might: what the
    /// writer's frame count check is for.
    #[cfg(test)]
    pub(crate) fn lose_a_frame_for_test(&mut self) {
        self.pending.pop();
    }

    /// Forgets the open episode's frames. The next episode starts with an IDR frame, so nothing
    /// after it refers to them.
    pub(crate) fn discard_pending(&mut self) {
        self.pending.clear();
        self.pending_bytes = 0;
    }

    /// Writes the open episode's frames as `videos/<key>/chunk-C/file-F.mp4` (its `n`-th file,
    /// see [`chunk_file`]): muxed, finished, fsynced and renamed into place, so the file is
    /// complete before any metadata names it. A kill between this and the metadata leaves a finished
    /// mp4 that nothing names, which loaders never open.
    pub(crate) fn commit_episode(&mut self, n: u64) -> Result<CommittedVideo, LeRobotError> {
        let (chunk_index, file_index) = chunk_file(n);
        let rel = PathBuf::from(video_file_path(&self.key, chunk_index, file_index));
        let path = self.root.join(&rel);
        let mux_err = |e: &dyn std::fmt::Display| LeRobotError::Mux {
            path: path.clone(),
            message: e.to_string(),
        };
        let mut muxer = MuxerBuilder::new(Vec::new())
            .video(VideoCodec::H264, self.width, self.height, self.fps as f64)
            .build()
            .map_err(|e| mux_err(&e))?;
        let fps = self.fps as f64;
        let packets = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        for (i, p) in packets.iter().enumerate() {
            muxer
                .write_video(i as f64 / fps, &p.data, p.keyframe)
                .map_err(|e| mux_err(&e))?;
        }
        muxer.finish_in_place().map_err(|e| mux_err(&e))?;
        let mut mp4 = muxer.into_writer();
        // FFmpeg's time base for the rate, not muxide's 90 kHz: LeRobot joins episodes' videos
        // with FFmpeg's concat demuxer, which keeps the first file's time base for every packet.
        mp4::set_timescale(&mut mp4, mp4::ffmpeg_timescale(self.fps)).map_err(|e| mux_err(&e))?;
        let bytes = Staged::write(&path, &mp4)?.commit()?;
        if let Some(dir) = path.parent() {
            sync_dir(dir)?;
        }
        Ok(CommittedVideo {
            video: EpisodeVideo {
                chunk_index,
                file_index,
                from_timestamp: 0.0,
                to_timestamp: packets.len() as f64 / fps,
            },
            rel,
            bytes,
        })
    }
}

/// An episode's finished mp4.
pub(crate) struct CommittedVideo {
    pub video: EpisodeVideo,
    /// Its path relative to the dataset root.
    pub rel: PathBuf,
    pub bytes: u64,
}
