//! One camera's H.264 stream: OpenH264 encodes each frame as it arrives, the episode's encoded
//! frames wait in memory until the episode ends, then muxide appends them to the camera's current
//! mp4 at exactly `frame / fps`.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use muxide::api::{Muxer, MuxerBuilder, VideoCodec};
use openh264::OpenH264API;
use openh264::encoder::{
    Complexity, Encoder, EncoderConfig, FrameRate, FrameType, RateControlMode, UsageType, VuiConfig,
};
use openh264::formats::{RgbSliceU8, YUVBuffer};

use crate::spec::CameraSpec;
use crate::{LeRobotError, chunk_file, video_file_path};

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

/// The mp4 being filled.
struct OpenFile {
    muxer: Muxer<BufWriter<File>>,
    path: PathBuf,
    chunk_index: u64,
    file_index: u64,
    /// Frames already muxed into this file.
    frames: u64,
    /// Encoded bytes already muxed into this file (about its final size).
    bytes: u64,
}

pub(crate) struct CameraVideo {
    pub key: String,
    name: String,
    width: u32,
    height: u32,
    fps: u32,
    keyframe_interval: u32,
    max_file_bytes: u64,
    root: PathBuf,
    encoder: Encoder,
    yuv: YUVBuffer,
    /// Frames encoded so far (for the encoder's timestamps).
    encoded: u64,
    /// The open episode's encoded frames.
    pending: Vec<Packet>,
    pending_bytes: u64,
    file: Option<OpenFile>,
    /// Files started so far (the next file's number in the series).
    files_started: u64,
    /// Sizes of the closed files.
    closed_bytes: u64,
    closed_files: Vec<PathBuf>,
}

impl CameraVideo {
    pub(crate) fn new(
        root: &Path,
        cam: &CameraSpec,
        fps: u32,
        keyframe_interval: u32,
        max_file_bytes: u64,
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
            max_file_bytes,
            root: root.to_path_buf(),
            encoder,
            yuv: YUVBuffer::new(cam.width as usize, cam.height as usize),
            encoded: 0,
            pending: Vec::new(),
            pending_bytes: 0,
            file: None,
            files_started: 0,
            closed_bytes: 0,
            closed_files: Vec::new(),
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

    #[cfg(test)]
    pub(crate) fn set_max_file_bytes(&mut self, bytes: u64) {
        self.max_file_bytes = bytes;
    }

    /// Forgets the open episode's frames. The next episode starts with an IDR frame, so nothing
    /// after it refers to them.
    pub(crate) fn discard_pending(&mut self) {
        self.pending.clear();
        self.pending_bytes = 0;
    }

    /// Appends the open episode's frames to the current mp4 (starting a new file first if this
    /// one would pass the size limit) and says where they went.
    pub(crate) fn commit_episode(&mut self) -> Result<EpisodeVideo, LeRobotError> {
        let needs_new = match &self.file {
            None => true,
            Some(f) => f.frames > 0 && f.bytes + self.pending_bytes > self.max_file_bytes,
        };
        if needs_new {
            self.close_file()?;
            self.open_file()?;
        }
        let fps = self.fps as f64;
        let packets = std::mem::take(&mut self.pending);
        self.pending_bytes = 0;
        let file = self.file.as_mut().expect("a file was just opened");
        let first = file.frames;
        for (i, p) in packets.iter().enumerate() {
            let pts = (first + i as u64) as f64 / fps;
            file.muxer
                .write_video(pts, &p.data, p.keyframe)
                .map_err(|e| LeRobotError::Mux {
                    path: file.path.clone(),
                    message: e.to_string(),
                })?;
            file.bytes += p.data.len() as u64;
        }
        file.frames += packets.len() as u64;
        Ok(EpisodeVideo {
            chunk_index: file.chunk_index,
            file_index: file.file_index,
            from_timestamp: first as f64 / fps,
            to_timestamp: file.frames as f64 / fps,
        })
    }

    fn open_file(&mut self) -> Result<(), LeRobotError> {
        let (chunk_index, file_index) = chunk_file(self.files_started);
        let rel = video_file_path(&self.key, chunk_index, file_index);
        let path = self.root.join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| LeRobotError::io(dir, e))?;
        }
        let out = File::create(&path).map_err(|e| LeRobotError::io(&path, e))?;
        let muxer = MuxerBuilder::new(BufWriter::new(out))
            .video(VideoCodec::H264, self.width, self.height, self.fps as f64)
            .build()
            .map_err(|e| LeRobotError::Mux {
                path: path.clone(),
                message: e.to_string(),
            })?;
        self.files_started += 1;
        self.file = Some(OpenFile {
            muxer,
            path,
            chunk_index,
            file_index,
            frames: 0,
            bytes: 0,
        });
        Ok(())
    }

    /// Finalises the current mp4, if any (writes `moov` after the frames).
    pub(crate) fn close_file(&mut self) -> Result<(), LeRobotError> {
        let Some(f) = self.file.take() else {
            return Ok(());
        };
        let mux_err = |path: &Path, e: &dyn std::fmt::Display| LeRobotError::Mux {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let mut muxer = f.muxer;
        muxer.finish_in_place().map_err(|e| mux_err(&f.path, &e))?;
        let mut writer = muxer.into_writer();
        std::io::Write::flush(&mut writer).map_err(|e| LeRobotError::io(&f.path, e))?;
        let file = writer
            .into_inner()
            .map_err(|e| LeRobotError::io(&f.path, e.into_error()))?;
        file.sync_all().map_err(|e| LeRobotError::io(&f.path, e))?;
        let len = file
            .metadata()
            .map_err(|e| LeRobotError::io(&f.path, e))?
            .len();
        self.closed_bytes += len;
        self.closed_files.push(f.path);
        Ok(())
    }

    /// Bytes of the closed mp4 files.
    pub(crate) fn closed_bytes(&self) -> u64 {
        self.closed_bytes
    }

    /// The closed mp4 files, in order.
    pub(crate) fn closed_files(&self) -> &[PathBuf] {
        &self.closed_files
    }
}
