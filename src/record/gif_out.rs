//! Animated GIF, looping forever. One global palette of 255 colours, made by
//! NeuQuant from the first frame (the scenes' colours do not change) and from
//! shades of the spec's palette hints (the bodies' and the overlay's colours),
//! so that what the first frame does not show keeps its colours; index 255 is transparent. After the first frame only the rectangle that changed is
//! stored, with unchanged pixels transparent, which keeps the files small.
//! Delays are in 1/100 s, rounded so that the total stays exact.

use super::VideoSpec;
use color_quant::NeuQuant;
use gif::{DisposalMethod, Encoder, Frame, Repeat};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Seek, Write};

const TRANSPARENT: u8 = 255;

/// Hinted colours whose shades are added to the palette's training pixels.
const MAX_HINTS: usize = 16;

/// Shades of the hinted colours (sRGB) as the lit material draws them, from
/// the shadowed side to a highlight, as RGBA training pixels for NeuQuant:
/// together a quarter as many as the frame's `pixels`, so that NeuQuant
/// gives them palette entries. Empty without hints.
fn shades(hints: &[[u8; 3]], pixels: usize) -> Vec<u8> {
    const FACTORS: [f32; 8] = [0.3, 0.45, 0.6, 0.75, 0.9, 1.0, 1.15, 1.3];
    let hints = &hints[..hints.len().min(MAX_HINTS)];
    let ramp: Vec<[u8; 4]> = hints
        .iter()
        .flat_map(|c| {
            FACTORS.iter().map(move |f| {
                let [r, g, b] = c.map(|x| (x as f32 * f).round().clamp(0.0, 255.0) as u8);
                [r, g, b, 255]
            })
        })
        .collect();
    if ramp.is_empty() {
        return Vec::new();
    }
    let repeats = (pixels / 4 / ramp.len()).max(1);
    ramp.iter()
        .flat_map(|p| std::iter::repeat_n(*p, repeats))
        .flatten()
        .collect()
}

pub(super) struct GifOut {
    /// Created with the first frame, which decides the global palette.
    encoder: Option<Encoder<BufWriter<File>>>,
    file: Option<BufWriter<File>>,
    width: usize,
    height: usize,
    fps: u32,
    hints: Vec<[u8; 3]>,
    quant: Option<NeuQuant>,
    cache: HashMap<[u8; 3], u8>,
    previous: Vec<u8>,
    frames: u64,
}

impl GifOut {
    pub(super) fn new(file: BufWriter<File>, spec: &VideoSpec) -> Result<Self, String> {
        Ok(Self {
            encoder: None,
            file: Some(file),
            width: spec.width as usize,
            height: spec.height as usize,
            fps: spec.fps,
            hints: spec.palette_hints.clone(),
            quant: None,
            cache: HashMap::new(),
            previous: Vec::new(),
            frames: 0,
        })
    }

    /// The delay of frame i, 1/100 s, so that frames 0..=i end at
    /// round(100 (i + 1) / fps).
    fn delay(&self, i: u64) -> u16 {
        let end = |k: u64| (100 * k + self.fps as u64 / 2) / self.fps as u64;
        (end(i + 1) - end(i)) as u16
    }

    fn index_of(&mut self, p: &[u8]) -> u8 {
        let key = [p[0], p[1], p[2]];
        if let Some(&i) = self.cache.get(&key) {
            return i;
        }
        let i = self
            .quant
            .as_ref()
            .map_or(0, |q| q.index_of(&[p[0], p[1], p[2], 255])) as u8;
        if self.cache.len() < 1 << 20 {
            self.cache.insert(key, i);
        }
        i
    }

    pub(super) fn push(&mut self, rgba: &[u8]) -> Result<(), String> {
        let first = self.quant.is_none();
        if first {
            let mut opaque = rgba.to_vec();
            for p in opaque.chunks_exact_mut(4) {
                p[3] = 255;
            }
            opaque.extend(shades(&self.hints, opaque.len() / 4));
            let quant = NeuQuant::new(10, 255, &opaque);
            let mut palette = quant.color_map_rgb();
            palette.resize(256 * 3, 0);
            self.quant = Some(quant);
            let file = self.file.take().ok_or("the GIF file is gone")?;
            let mut encoder = Encoder::new(file, self.width as u16, self.height as u16, &palette)
                .map_err(|e| format!("GIF: {e}"))?;
            encoder
                .set_repeat(Repeat::Infinite)
                .map_err(|e| format!("GIF: {e}"))?;
            self.encoder = Some(encoder);
        }
        let indices: Vec<u8> = rgba.chunks_exact(4).map(|p| self.index_of(p)).collect();
        let (w, h) = (self.width, self.height);
        let delay = self.delay(self.frames);
        let mut frame = if first {
            Frame::from_indexed_pixels(w as u16, h as u16, indices.clone(), None)
        } else {
            // The rectangle that changed (at least one pixel, so every frame
            // is a real frame with its delay).
            let (mut x0, mut y0, mut x1, mut y1) = (w, h, 0, 0);
            for y in 0..h {
                let row = &indices[y * w..(y + 1) * w];
                let prev = &self.previous[y * w..(y + 1) * w];
                if row == prev {
                    continue;
                }
                let l = row.iter().zip(prev).position(|(a, b)| a != b).unwrap_or(0);
                let r = w - row
                    .iter()
                    .zip(prev)
                    .rev()
                    .position(|(a, b)| a != b)
                    .unwrap_or(0);
                x0 = x0.min(l);
                x1 = x1.max(r);
                y0 = y0.min(y);
                y1 = y1.max(y + 1);
            }
            if x1 <= x0 || y1 <= y0 {
                (x0, y0, x1, y1) = (0, 0, 1, 1);
            }
            let mut pixels = Vec::with_capacity((x1 - x0) * (y1 - y0));
            for y in y0..y1 {
                for x in x0..x1 {
                    let i = indices[y * w + x];
                    pixels.push(if i == self.previous[y * w + x] {
                        TRANSPARENT
                    } else {
                        i
                    });
                }
            }
            let mut f = Frame::from_indexed_pixels(
                (x1 - x0) as u16,
                (y1 - y0) as u16,
                pixels,
                Some(TRANSPARENT),
            );
            f.left = x0 as u16;
            f.top = y0 as u16;
            f
        };
        frame.delay = delay;
        frame.dispose = DisposalMethod::Keep;
        self.encoder
            .as_mut()
            .ok_or("the GIF encoder is gone")?
            .write_frame(&frame)
            .map_err(|e| format!("GIF: {e}"))?;
        self.previous = indices;
        self.frames += 1;
        Ok(())
    }

    pub(super) fn finish(self) -> Result<u64, String> {
        let encoder = self.encoder.ok_or("no frames were encoded")?;
        let mut file = encoder.into_inner().map_err(|e| format!("GIF: {e}"))?;
        file.flush().map_err(|e| e.to_string())?;
        let size = file.stream_position().map_err(|e| e.to_string())?;
        let file = file.into_inner().map_err(|e| e.to_string())?;
        file.sync_all().map_err(|e| e.to_string())?;
        Ok(size)
    }
}
