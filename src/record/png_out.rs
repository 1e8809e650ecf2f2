//! A PNG sequence: `frame_000000.png`, `frame_000001.png`, … (RGB, 8 bits).
//! The encoder settings are fixed, so equal frames give equal bytes.

use super::VideoSpec;
use std::path::PathBuf;

/// The file name of frame `i`.
pub(super) fn frame_name(i: u64) -> String {
    format!("frame_{i:06}.png")
}

pub(super) struct PngOut {
    dir: PathBuf,
    width: u32,
    height: u32,
    bytes: u64,
    rgb: Vec<u8>,
}

impl PngOut {
    pub(super) fn new(dir: PathBuf, spec: &VideoSpec) -> Self {
        Self {
            dir,
            width: spec.width,
            height: spec.height,
            bytes: 0,
            rgb: Vec::new(),
        }
    }

    pub(super) fn push(&mut self, index: u64, rgba: &[u8]) -> Result<(), String> {
        self.rgb.clear();
        self.rgb
            .extend(rgba.chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]]));
        let mut data = Vec::new();
        {
            let mut encoder = png::Encoder::new(&mut data, self.width, self.height);
            encoder.set_color(png::ColorType::Rgb);
            encoder.set_depth(png::BitDepth::Eight);
            encoder.set_compression(png::Compression::Fast);
            let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
            writer
                .write_image_data(&self.rgb)
                .map_err(|e| e.to_string())?;
            writer.finish().map_err(|e| e.to_string())?;
        }
        let path = self.dir.join(frame_name(index));
        std::fs::write(&path, &data).map_err(|e| format!("{}: {e}", path.display()))?;
        self.bytes += data.len() as u64;
        Ok(())
    }

    pub(super) fn finish(self) -> Result<u64, String> {
        Ok(self.bytes)
    }
}
