//! MP4 with one H.264 track: openh264 (built from its bundled source) encodes
//! yuv420p, the `mp4` crate muxes. openh264 emits Annex B (start codes); MP4
//! wants each sample as length-prefixed NAL units and SPS/PPS in the `avcC`
//! box, so the first frame's SPS/PPS configure the track.

use super::VideoSpec;
use bytes::Bytes;
use mp4::{AvcConfig, MediaConfig, Mp4Config, Mp4Sample, Mp4Writer, TrackConfig, TrackType};
use openh264::OpenH264API;
use openh264::encoder::{
    BitRate, Complexity, Encoder, EncoderConfig, FrameRate, FrameType, IntraFramePeriod,
    MatrixCoefficients, RateControlMode, UsageType, VuiConfig,
};
use openh264::formats::{RgbaSliceU8, YUVBuffer};
use std::fs::File;
use std::io::{BufWriter, Seek, Write};

/// Ticks per frame of the track's time scale (time scale = fps × this).
const TICKS: u32 = 1000;

/// Bits per pixel per frame the rate control aims at: at 0.1 the blocks a
/// moving body left kept speckles of its colour; 0.3 (17 Mbit/s at 1280×720,
/// 60 fps) leaves none.
const BITS_PER_PIXEL: f64 = 0.3;

pub(super) struct Mp4Out {
    encoder: Encoder,
    yuv: YUVBuffer,
    writer: Option<Mp4Writer<BufWriter<File>>>,
    file: Option<BufWriter<File>>,
    width: u32,
    height: u32,
    fps: u32,
    /// The last encoded sample, written when the next one arrives (a skipped
    /// frame lengthens it instead).
    pending: Option<Mp4Sample>,
    next_start: u64,
    bytes: u64,
}

fn nal_type(nal: &[u8]) -> u8 {
    nal.first().map_or(0, |b| b & 0x1f)
}

/// Splits an Annex B stream into NAL units (without start codes).
fn nal_units(stream: &[u8]) -> Vec<&[u8]> {
    let mut starts = Vec::new();
    let mut i = 0;
    while i + 3 <= stream.len() {
        if stream[i] == 0 && stream[i + 1] == 0 && stream[i + 2] == 1 {
            starts.push(i + 3);
            i += 3;
        } else {
            i += 1;
        }
    }
    let mut out = Vec::new();
    for (k, &s) in starts.iter().enumerate() {
        let mut end = starts.get(k + 1).map_or(stream.len(), |&n| n - 3);
        // A 4-byte start code leaves a zero before the next 00 00 01.
        while k + 1 < starts.len() && end > s && stream[end - 1] == 0 {
            end -= 1;
        }
        if end > s {
            out.push(&stream[s..end]);
        }
    }
    out
}

impl Mp4Out {
    pub(super) fn new(file: BufWriter<File>, spec: &VideoSpec) -> Result<Self, String> {
        let pixels = spec.width as f64 * spec.height as f64;
        let bitrate = (pixels * spec.fps as f64 * BITS_PER_PIXEL).clamp(2e5, 5e7) as u32;
        let config = EncoderConfig::new()
            .usage_type(UsageType::CameraVideoRealTime)
            .max_frame_rate(FrameRate::from_hz(spec.fps as f32))
            .bitrate(BitRate::from_bps(bitrate))
            // Every frame is kept (no skipping: the video is frame-exact).
            // The buffer-based mode is the one of those that does not print
            // a warning about it on stderr.
            .rate_control_mode(RateControlMode::Bufferbased)
            .skip_frames(false)
            .complexity(Complexity::Medium)
            .adaptive_quantization(false)
            .background_detection(false)
            // openh264's RGB → YUV conversion is BT.601, limited range: say
            // so, or players assume BT.709 for HD sizes and shift the colours.
            .vui(VuiConfig::bt709().matrix_coefficients(MatrixCoefficients::Smpte170M))
            .intra_frame_period(IntraFramePeriod::from_num_frames(spec.fps * 2));
        let encoder = Encoder::with_api_config(OpenH264API::from_source(), config)
            .map_err(|e| format!("H.264 encoder: {e}"))?;
        Ok(Self {
            encoder,
            yuv: YUVBuffer::new(spec.width as usize, spec.height as usize),
            writer: None,
            file: Some(file),
            width: spec.width,
            height: spec.height,
            fps: spec.fps,
            pending: None,
            next_start: 0,
            bytes: 0,
        })
    }

    pub(super) fn push(&mut self, rgba: &[u8]) -> Result<(), String> {
        let (w, h) = (self.width as usize, self.height as usize);
        self.yuv.read_rgba8(RgbaSliceU8::new(rgba, (w, h)));
        let stream = self
            .encoder
            .encode(&self.yuv)
            .map_err(|e| format!("H.264 encoder: {e}"))?;
        let is_sync = stream.frame_type() == FrameType::IDR;
        let annexb = stream.to_vec();
        let nals = nal_units(&annexb);
        if self.writer.is_none() {
            let sps = nals.iter().find(|n| nal_type(n) == 7);
            let pps = nals.iter().find(|n| nal_type(n) == 8);
            let (Some(sps), Some(pps)) = (sps, pps) else {
                return Err("the first H.264 frame has no SPS/PPS".to_owned());
            };
            let file = self.file.take().ok_or("the MP4 file is gone")?;
            let timescale = self.fps * TICKS;
            let brand = |s: &str| -> Result<mp4::FourCC, String> {
                s.parse().map_err(|e| format!("MP4 brand: {e}"))
            };
            let mut writer = Mp4Writer::write_start(
                file,
                &Mp4Config {
                    major_brand: brand("isom")?,
                    minor_version: 512,
                    compatible_brands: vec![
                        brand("isom")?,
                        brand("iso2")?,
                        brand("avc1")?,
                        brand("mp41")?,
                    ],
                    timescale,
                },
            )
            .map_err(|e| format!("MP4: {e}"))?;
            writer
                .add_track(&TrackConfig {
                    track_type: TrackType::Video,
                    timescale,
                    language: "und".to_owned(),
                    media_conf: MediaConfig::AvcConfig(AvcConfig {
                        width: self.width as u16,
                        height: self.height as u16,
                        seq_param_set: sps.to_vec(),
                        pic_param_set: pps.to_vec(),
                    }),
                })
                .map_err(|e| format!("MP4: {e}"))?;
            self.writer = Some(writer);
        }
        let mut sample = Vec::with_capacity(annexb.len() + 16);
        for nal in nals.iter().filter(|n| !matches!(nal_type(n), 7..=9)) {
            sample.extend_from_slice(&(nal.len() as u32).to_be_bytes());
            sample.extend_from_slice(nal);
        }
        if sample.is_empty() {
            // A skipped frame: the previous picture stays one frame longer.
            match self.pending.as_mut() {
                Some(p) => p.duration += TICKS,
                None => return Err("the first H.264 frame is empty".to_owned()),
            }
            return Ok(());
        }
        self.flush_pending()?;
        self.pending = Some(Mp4Sample {
            start_time: self.next_start,
            duration: TICKS,
            rendering_offset: 0,
            is_sync,
            bytes: Bytes::from(sample),
        });
        Ok(())
    }

    fn flush_pending(&mut self) -> Result<(), String> {
        if let (Some(sample), Some(writer)) = (self.pending.take(), self.writer.as_mut()) {
            self.next_start = sample.start_time + sample.duration as u64;
            self.bytes += sample.bytes.len() as u64;
            writer
                .write_sample(1, &sample)
                .map_err(|e| format!("MP4: {e}"))?;
        }
        Ok(())
    }

    /// Writes the index and flushes; returns the file's size.
    pub(super) fn finish(mut self) -> Result<u64, String> {
        self.flush_pending()?;
        let mut writer = self.writer.take().ok_or("no frames were encoded")?;
        writer.write_end().map_err(|e| format!("MP4: {e}"))?;
        let mut file = writer.into_writer();
        file.flush().map_err(|e| e.to_string())?;
        let size = file.stream_position().map_err(|e| e.to_string())?;
        let file = file.into_inner().map_err(|e| e.to_string())?;
        file.sync_all().map_err(|e| e.to_string())?;
        Ok(size)
    }
}

#[cfg(test)]
mod tests {
    use super::nal_units;

    #[test]
    fn annex_b_split() {
        let s = [
            0, 0, 0, 1, 0x67, 1, 2, 0, 0, 1, 0x68, 3, 0, 0, 0, 1, 0x65, 4, 5,
        ];
        let n = nal_units(&s);
        assert_eq!(
            n,
            vec![&[0x67, 1, 2][..], &[0x68, 3][..], &[0x65, 4, 5][..]]
        );
    }
}
