//! Video output for `contactlab record` and the viewer's Record button, without
//! Bevy: RGBA frames in, an MP4 (H.264), an animated GIF or a PNG sequence out.
//!
//! Nothing half-written is left behind: a file is written under a temporary
//! name next to its destination and renamed when complete; a PNG sequence is
//! written into a temporary directory whose frames are moved into place at the
//! end. Dropping a [`VideoWriter`] without [`VideoWriter::finish`] (an error, a
//! panic) deletes the temporary output.

mod gif_out;
mod mp4_out;
mod png_out;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

/// The container/codec, chosen by the output path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// MP4 with one H.264 (yuv420p) video track.
    Mp4,
    /// Animated GIF, looping.
    Gif,
    /// A directory of `frame_NNNNNN.png`.
    PngSequence,
}

impl Format {
    /// The frame rate used when none is asked for: 60, or for a GIF the most
    /// it can play ([`MAX_GIF_FPS`]; its delays are in 1/100 s).
    pub fn default_fps(self) -> u32 {
        match self {
            Self::Gif => MAX_GIF_FPS,
            Self::Mp4 | Self::PngSequence => 60,
        }
    }

    /// The format for an output path: `.mp4`, `.gif`, or a directory (a path
    /// ending in `/`, or an existing directory) for a PNG sequence.
    pub fn of_path(path: &Path) -> Result<Self, String> {
        let text = path.to_string_lossy();
        if text.ends_with('/') || text.ends_with(std::path::MAIN_SEPARATOR) || path.is_dir() {
            return Ok(Self::PngSequence);
        }
        match path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .as_deref()
        {
            Some("mp4") => Ok(Self::Mp4),
            Some("gif") => Ok(Self::Gif),
            other => Err(format!(
                "--out {}: unknown {}; use FILE.mp4, FILE.gif or DIR/ (PNG frames)",
                path.display(),
                match other {
                    Some(ext) => format!("extension `.{ext}`"),
                    None => "format (no extension)".to_owned(),
                }
            )),
        }
    }

    /// A short name for messages and file names.
    pub fn name(self) -> &'static str {
        match self {
            Self::Mp4 => "MP4",
            Self::Gif => "GIF",
            Self::PngSequence => "PNG",
        }
    }

    /// Every format, for pickers.
    pub const ALL: [Self; 3] = [Self::Mp4, Self::Gif, Self::PngSequence];
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Highest frame rate accepted.
pub const MAX_FPS: u32 = 240;
/// Highest GIF frame rate: GIF delays are in 1/100 s and browsers slow down
/// frames shorter than 2/100 s.
pub const MAX_GIF_FPS: u32 = 50;
/// Largest frame side, pixels.
pub const MAX_SIDE: u32 = 8192;
/// Smallest frame side, pixels.
pub const MIN_SIDE: u32 = 16;

/// Parses `WxH` (e.g. `1280x720`).
pub fn parse_size(text: &str) -> Result<(u32, u32), String> {
    let bad = || format!("--size {text}: expected WIDTHxHEIGHT, e.g. 1280x720");
    let (w, h) = text.split_once(['x', 'X', '×']).ok_or_else(bad)?;
    let w: u32 = w.trim().parse().map_err(|_| bad())?;
    let h: u32 = h.trim().parse().map_err(|_| bad())?;
    Ok((w, h))
}

/// What to write.
#[derive(Debug, Clone, PartialEq)]
pub struct VideoSpec {
    /// The file (or, for PNG, the directory).
    pub path: PathBuf,
    /// The format.
    pub format: Format,
    /// Frame width, pixels.
    pub width: u32,
    /// Frame height, pixels.
    pub height: u32,
    /// Frames per second of the output.
    pub fps: u32,
    /// Colours (sRGB) the GIF palette must hold shades of even when the
    /// first frame does not show them: the bodies' and the contact
    /// overlay's (a silo's grains are hidden in it at the start, contacts
    /// come later). Other formats ignore them.
    pub palette_hints: Vec<[u8; 3]>,
}

impl VideoSpec {
    /// A spec with the format taken from the path.
    pub fn new(path: PathBuf, width: u32, height: u32, fps: u32) -> Result<Self, String> {
        let format = Format::of_path(&path)?;
        let spec = Self {
            path,
            format,
            width,
            height,
            fps,
            palette_hints: Vec::new(),
        };
        spec.check()?;
        Ok(spec)
    }

    /// The spec with these palette hints (see [`VideoSpec::palette_hints`]).
    pub fn with_palette_hints(mut self, colors: impl IntoIterator<Item = [u8; 3]>) -> Self {
        self.palette_hints = Vec::new();
        for c in colors {
            if !self.palette_hints.contains(&c) {
                self.palette_hints.push(c);
            }
        }
        self
    }

    /// Checks frame rate and size against the format.
    pub fn check(&self) -> Result<(), String> {
        if self.fps == 0 || self.fps > MAX_FPS {
            return Err(format!(
                "--fps {}: must be between 1 and {MAX_FPS}",
                self.fps
            ));
        }
        if self.format == Format::Gif && self.fps > MAX_GIF_FPS {
            return Err(format!(
                "--fps {}: a GIF plays at most {MAX_GIF_FPS} fps (its delays are in 1/100 s); use a lower rate or MP4",
                self.fps
            ));
        }
        let (w, h) = (self.width, self.height);
        if !(MIN_SIDE..=MAX_SIDE).contains(&w) || !(MIN_SIDE..=MAX_SIDE).contains(&h) {
            return Err(format!(
                "--size {w}x{h}: each side must be between {MIN_SIDE} and {MAX_SIDE} pixels"
            ));
        }
        if self.format == Format::Gif && (w > u16::MAX as u32 || h > u16::MAX as u32) {
            return Err(format!("--size {w}x{h}: too large for a GIF"));
        }
        if self.format == Format::Mp4 && (w % 2 != 0 || h % 2 != 0) {
            return Err(format!(
                "--size {w}x{h}: H.264 (yuv420p) needs an even width and height"
            ));
        }
        Ok(())
    }

    /// Bytes of one RGBA frame.
    pub fn frame_bytes(&self) -> usize {
        self.width as usize * self.height as usize * 4
    }
}

/// The byte order of incoming pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PixelOrder {
    /// R, G, B, A.
    Rgba,
    /// B, G, R, A (common swapchain format).
    Bgra,
}

/// Converts `pixels` to RGBA in place.
pub fn to_rgba(pixels: &mut [u8], order: PixelOrder) {
    if order == PixelOrder::Bgra {
        for p in pixels.chunks_exact_mut(4) {
            p.swap(0, 2);
        }
    }
}

/// Copies an RGBA image of `src` size into one of `dst` size: cropped at the
/// right and bottom, padded with black.
pub fn fit_rgba(pixels: &[u8], src: (u32, u32), dst: (u32, u32)) -> Vec<u8> {
    if src == dst {
        return pixels.to_vec();
    }
    let (sw, sh) = (src.0 as usize, src.1 as usize);
    let (dw, dh) = (dst.0 as usize, dst.1 as usize);
    let mut out = vec![0u8; dw * dh * 4];
    for p in out.chunks_exact_mut(4) {
        p[3] = 255;
    }
    let (w, h) = (sw.min(dw), sh.min(dh));
    for y in 0..h {
        out[y * dw * 4..(y * dw + w) * 4].copy_from_slice(&pixels[y * sw * 4..(y * sw + w) * 4]);
    }
    out
}

/// A temporary path next to `path`: `.NAME.partial-PID`.
fn temp_sibling(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    parent.join(format!(".{name}.partial-{}", std::process::id()))
}

/// The encoder behind a [`VideoWriter`].
enum Sink {
    Mp4(Box<mp4_out::Mp4Out>),
    Gif(Box<gif_out::GifOut>),
    Png(png_out::PngOut),
}

/// Writes frames to a [`VideoSpec`]'s path, atomically.
pub struct VideoWriter {
    spec: VideoSpec,
    sink: Option<Sink>,
    /// The temporary file or directory being written.
    temp: PathBuf,
    frames: u64,
    finished: bool,
}

/// What was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The output path.
    pub path: PathBuf,
    /// Frames written.
    pub frames: u64,
    /// Bytes written (all files).
    pub bytes: u64,
    /// Frames of an earlier recording in the PNG directory, past this one's
    /// last, that were removed (so the directory holds one recording).
    pub stale: u64,
}

impl VideoWriter {
    /// Creates the temporary output (so an unwritable destination fails here,
    /// before any frame is rendered).
    pub fn create(spec: &VideoSpec) -> Result<Self, String> {
        spec.check()?;
        let out = spec.path.display();
        let (temp, sink) = match spec.format {
            Format::PngSequence => {
                let dir = &spec.path;
                if dir.exists() && !dir.is_dir() {
                    return Err(format!("--out {out}: exists and is not a directory"));
                }
                // Frames go to a temporary directory beside DIR (or inside it
                // when DIR exists) and are moved in at the end.
                let temp = if dir.is_dir() {
                    dir.join(format!(".partial-{}", std::process::id()))
                } else {
                    temp_sibling(&dir.components().collect::<PathBuf>())
                };
                let _ = std::fs::remove_dir_all(&temp);
                std::fs::create_dir(&temp).map_err(|e| format!("--out {out}: {e}"))?;
                (temp.clone(), Sink::Png(png_out::PngOut::new(temp, spec)))
            }
            Format::Mp4 | Format::Gif => {
                let temp = temp_sibling(&spec.path);
                if spec.path.is_dir() {
                    return Err(format!("--out {out}: is a directory"));
                }
                let file = std::fs::File::create(&temp).map_err(|e| format!("--out {out}: {e}"))?;
                let file = std::io::BufWriter::with_capacity(1 << 20, file);
                let sink = if spec.format == Format::Mp4 {
                    mp4_out::Mp4Out::new(file, spec).map(|s| Sink::Mp4(Box::new(s)))
                } else {
                    gif_out::GifOut::new(file, spec).map(|s| Sink::Gif(Box::new(s)))
                };
                match sink {
                    Ok(sink) => (temp, sink),
                    Err(e) => {
                        let _ = std::fs::remove_file(&temp);
                        return Err(format!("--out {out}: {e}"));
                    }
                }
            }
        };
        Ok(Self {
            spec: spec.clone(),
            sink: Some(sink),
            temp,
            frames: 0,
            finished: false,
        })
    }

    /// The spec being written.
    pub fn spec(&self) -> &VideoSpec {
        &self.spec
    }

    /// Frames written so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Adds one RGBA frame of exactly the spec's size.
    pub fn push(&mut self, rgba: &[u8]) -> Result<(), String> {
        if rgba.len() != self.spec.frame_bytes() {
            return Err(format!(
                "frame {} has {} bytes, expected {}×{}×4 = {}",
                self.frames,
                rgba.len(),
                self.spec.width,
                self.spec.height,
                self.spec.frame_bytes()
            ));
        }
        let index = self.frames;
        let out = self.spec.path.display();
        let result = match self.sink.as_mut() {
            Some(Sink::Mp4(s)) => s.push(rgba),
            Some(Sink::Gif(s)) => s.push(rgba),
            Some(Sink::Png(s)) => s.push(index, rgba),
            None => Err("the writer is closed".to_owned()),
        };
        result.map_err(|e| format!("{out}: frame {index}: {e}"))?;
        self.frames += 1;
        Ok(())
    }

    /// Completes the output and moves it into place.
    pub fn finish(mut self) -> Result<Summary, String> {
        let out = self.spec.path.display().to_string();
        if self.frames == 0 {
            return Err(format!("{out}: no frames were recorded"));
        }
        let bytes = match self.sink.take() {
            Some(Sink::Mp4(s)) => s.finish(),
            Some(Sink::Gif(s)) => s.finish(),
            Some(Sink::Png(s)) => s.finish(),
            None => Err("the writer is closed".to_owned()),
        }
        .map_err(|e| format!("{out}: {e}"))?;
        let mut stale = 0;
        match self.spec.format {
            Format::PngSequence => {
                let dir = &self.spec.path;
                if dir.is_dir() {
                    for i in 0..self.frames {
                        let name = png_out::frame_name(i);
                        std::fs::rename(self.temp.join(&name), dir.join(&name))
                            .map_err(|e| format!("{out}: {e}"))?;
                    }
                    std::fs::remove_dir(&self.temp).map_err(|e| format!("{out}: {e}"))?;
                    stale =
                        remove_frames_from(dir, self.frames).map_err(|e| format!("{out}: {e}"))?;
                } else {
                    std::fs::rename(&self.temp, dir).map_err(|e| format!("{out}: {e}"))?;
                }
            }
            Format::Mp4 | Format::Gif => {
                std::fs::rename(&self.temp, &self.spec.path).map_err(|e| format!("{out}: {e}"))?;
            }
        }
        self.finished = true;
        Ok(Summary {
            path: self.spec.path.clone(),
            frames: self.frames,
            bytes,
            stale,
        })
    }
}

/// Removes the frames `frame_N.png` of `dir` with N ≥ `first` (an earlier,
/// longer recording's), and nothing else; how many it removed.
fn remove_frames_from(dir: &Path, first: u64) -> std::io::Result<u64> {
    let mut removed = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let index = name
            .to_str()
            .and_then(|n| n.strip_prefix("frame_")?.strip_suffix(".png"))
            .filter(|digits| digits.len() >= 6 && digits.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|digits| digits.parse::<u64>().ok());
        if index.is_some_and(|i| i >= first) && entry.file_type()?.is_file() {
            std::fs::remove_file(entry.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

impl Drop for VideoWriter {
    fn drop(&mut self) {
        if !self.finished {
            drop(self.sink.take());
            if self.temp.is_dir() {
                let _ = std::fs::remove_dir_all(&self.temp);
            } else {
                let _ = std::fs::remove_file(&self.temp);
            }
        }
    }
}

/// A frame on its way to the encoder thread.
pub struct FramePixels {
    /// Width, pixels.
    pub width: u32,
    /// Height, pixels.
    pub height: u32,
    /// Byte order of `pixels`.
    pub order: PixelOrder,
    /// 4 bytes per pixel, rows top to bottom, no padding.
    pub pixels: Vec<u8>,
}

/// A [`VideoWriter`] on its own thread, so encoding overlaps rendering. Frames
/// of another size than the spec's are cropped or padded.
pub struct EncoderThread {
    tx: Option<SyncSender<FramePixels>>,
    handle: Option<JoinHandle<Result<Summary, String>>>,
}

impl EncoderThread {
    /// Starts the thread; at most `queue` frames wait for it.
    pub fn spawn(writer: VideoWriter, queue: usize) -> Self {
        let (tx, rx) = sync_channel::<FramePixels>(queue.max(1));
        let handle = std::thread::Builder::new()
            .name("contactlab encoder".into())
            .spawn(move || encode_all(writer, rx))
            .ok();
        Self {
            tx: Some(tx),
            handle,
        }
    }

    /// Queues a frame (blocks while the queue is full). `false` means the
    /// encoder stopped; [`Self::finish`] says why.
    pub fn push(&self, frame: FramePixels) -> bool {
        self.tx.as_ref().is_some_and(|tx| tx.send(frame).is_ok())
    }

    /// Waits for the queued frames and completes the file.
    pub fn finish(mut self) -> Result<Summary, String> {
        drop(self.tx.take());
        match self.handle.take() {
            Some(h) => h
                .join()
                .unwrap_or_else(|_| Err("the encoder thread panicked".to_owned())),
            None => Err("the encoder thread could not be started".to_owned()),
        }
    }
}

/// Abandons the output (the thread's writer deletes its temporary file).
impl Drop for EncoderThread {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            // Not finished: an empty frame tells the thread to abandon the
            // output; its writer, dropped unfinished, deletes it.
            let _ = tx.send(FramePixels {
                width: 0,
                height: 0,
                order: PixelOrder::Rgba,
                pixels: Vec::new(),
            });
        }
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Writes frames until the sender is gone (an empty frame abandons the output).
fn encode_all(mut writer: VideoWriter, rx: Receiver<FramePixels>) -> Result<Summary, String> {
    let size = (writer.spec.width, writer.spec.height);
    while let Ok(mut frame) = rx.recv() {
        if frame.pixels.is_empty() {
            return Err("recording abandoned".to_owned());
        }
        to_rgba(&mut frame.pixels, frame.order);
        let rgba = if (frame.width, frame.height) == size {
            frame.pixels
        } else {
            fit_rgba(&frame.pixels, (frame.width, frame.height), size)
        };
        writer.push(&rgba)?;
    }
    writer.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_by_path() {
        assert_eq!(Format::of_path(Path::new("a.mp4")), Ok(Format::Mp4));
        assert_eq!(Format::of_path(Path::new("a.GIF")), Ok(Format::Gif));
        assert_eq!(
            Format::of_path(Path::new("frames/")),
            Ok(Format::PngSequence)
        );
        assert!(Format::of_path(Path::new("a.avi")).is_err());
        assert!(Format::of_path(Path::new("a")).is_err());
    }

    /// Every format's default frame rate is one it accepts (`record --out
    /// x.gif` without `--fps`).
    #[test]
    fn every_format_accepts_its_default_rate() {
        for path in ["a.mp4", "a.gif", "frames/"] {
            let format = Format::of_path(Path::new(path)).expect("known format");
            let spec = VideoSpec::new(path.into(), 640, 480, format.default_fps());
            assert!(spec.is_ok(), "{path}: {spec:?}");
        }
        assert_eq!(Format::Gif.default_fps(), 50);
        assert_eq!(Format::Mp4.default_fps(), 60);
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1280x720"), Ok((1280, 720)));
        assert!(parse_size("1280").is_err());
        assert!(parse_size("ax3").is_err());
        let spec = |w, h, fps, path: &str| VideoSpec::new(path.into(), w, h, fps);
        assert!(spec(321, 240, 30, "a.mp4").is_err());
        assert!(spec(321, 241, 30, "a.gif").is_ok());
        assert!(spec(320, 240, 0, "a.png/").is_err());
        assert!(spec(320, 240, 60, "a.gif").is_err());
    }

    /// PNG frames recorded into a directory that holds a longer earlier
    /// recording replace it: its frames past the new last one are removed,
    /// other files are left alone.
    #[test]
    fn png_frames_replace_an_earlier_recording() {
        let dir = std::env::temp_dir().join(format!("contactlab-png-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a directory");
        for i in 0..10 {
            std::fs::write(dir.join(png_out::frame_name(i)), b"OLD").expect("old frame");
        }
        std::fs::write(dir.join("notes.txt"), b"mine").expect("a file");
        std::fs::write(dir.join("frame_7.png"), b"not ours").expect("a file");
        let spec = VideoSpec::new(dir.clone(), 16, 16, 10).expect("a spec");
        let mut writer = VideoWriter::create(&spec).expect("created");
        for _ in 0..2 {
            writer.push(&[128; 16 * 16 * 4]).expect("a frame");
        }
        let summary = writer.finish().expect("finished");
        assert_eq!((summary.frames, summary.stale), (2, 8));
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .expect("listed")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "frame_000000.png",
                "frame_000001.png",
                "frame_7.png",
                "notes.txt"
            ]
        );
        let first = std::fs::read(dir.join("frame_000000.png")).expect("a frame");
        assert_ne!(first, b"OLD");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn fitting_crops_and_pads() {
        let src: Vec<u8> = (0..(3 * 2 * 4)).map(|i| i as u8).collect();
        let out = fit_rgba(&src, (3, 2), (2, 3));
        assert_eq!(out.len(), 2 * 3 * 4);
        assert_eq!(&out[0..8], &src[0..8]);
        assert_eq!(&out[8..16], &src[12..20]);
        assert_eq!(&out[16..24], &[0, 0, 0, 255, 0, 0, 0, 255]);
    }
}
