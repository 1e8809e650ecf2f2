//! `contactlab record` as a user runs it: MP4, GIF and PNG output, determinism
//! and bad arguments. The recordings render offscreen with no window, so they
//! need a Vulkan driver (Mesa's llvmpipe on a machine without a GPU) but no
//! display.
#![cfg(feature = "viewer")]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

/// One recording at a time: each renders on the CPU (llvmpipe).
static RENDER: Mutex<()> = Mutex::new(());

fn contactlab(args: &[&str]) -> Output {
    contactlab_with(args, &[])
}

/// The binary, run from the project directory (scene paths are relative).
fn contactlab_command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_contactlab"));
    command.current_dir(common::project_dir());
    command
}

fn contactlab_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    contactlab_command()
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("the binary runs")
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("contactlab-rec-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn record(args: &[&str]) -> Output {
    let _guard = RENDER.lock().unwrap_or_else(|e| e.into_inner());
    let mut all = vec!["record"];
    all.extend_from_slice(args);
    let out = contactlab(&all);
    assert!(
        out.status.success(),
        "contactlab {all:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// The Annex B stream of sample `i` (1-based) of the MP4's video track, with
/// SPS and PPS in front of the first.
fn annex_b(
    reader: &mut mp4::Mp4Reader<std::io::BufReader<std::fs::File>>,
    track: u32,
    i: u32,
) -> Vec<u8> {
    let mut out = Vec::new();
    if i == 1 {
        let t = &reader.tracks()[&track];
        for ps in [
            t.sequence_parameter_set().expect("sps").to_vec(),
            t.picture_parameter_set().expect("pps").to_vec(),
        ] {
            out.extend_from_slice(&[0, 0, 0, 1]);
            out.extend_from_slice(&ps);
        }
    }
    let sample = reader
        .read_sample(track, i)
        .expect("sample reads")
        .expect("sample exists");
    let mut b: &[u8] = &sample.bytes;
    while b.len() >= 4 {
        let n = u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize;
        out.extend_from_slice(&[0, 0, 0, 1]);
        out.extend_from_slice(&b[4..4 + n]);
        b = &b[4 + n..];
    }
    out
}

#[test]
fn mp4_of_the_rod_has_one_h264_track_of_30_frames() {
    let dir = temp_dir("mp4");
    let file = dir.join("rod.mp4");
    record(&[
        "scenes/rod.ron",
        "--out",
        s(&file),
        "--fps",
        "30",
        "--duration",
        "1",
        "--size",
        "320x240",
    ]);

    // An independent reader (Mozilla's mp4parse).
    let mut f = std::fs::File::open(&file).expect("mp4 written");
    let context = mp4parse::read_mp4(&mut f).expect("mp4parse reads it");
    assert_eq!(context.tracks.len(), 1, "one track");
    let track = &context.tracks[0];
    assert_eq!(track.track_type, mp4parse::TrackType::Video);
    let stsd = track.stsd.as_ref().expect("sample description");
    assert_eq!(stsd.descriptions.len(), 1);
    let mp4parse::SampleEntry::Video(entry) = &stsd.descriptions[0] else {
        panic!("not a video sample entry: {:?}", stsd.descriptions[0]);
    };
    assert_eq!(entry.codec_type, mp4parse::CodecType::H264);
    assert_eq!((entry.width, entry.height), (320, 240));
    let tkhd = track.tkhd.as_ref().expect("track header");
    assert_eq!((tkhd.width >> 16, tkhd.height >> 16), (320, 240));
    let stsz = track.stsz.as_ref().expect("sample sizes");
    let samples = if stsz.sample_size > 0 {
        track.stts.as_ref().map_or(0, |t| {
            t.samples.iter().map(|s| s.sample_count as usize).sum()
        })
    } else {
        stsz.sample_sizes.len()
    };
    assert_eq!(samples, 30, "30 samples");
    let (duration, timescale) = (
        track.duration.as_ref().expect("duration").0 as f64,
        track.timescale.as_ref().expect("timescale").0 as f64,
    );
    let seconds = duration / timescale;
    assert!(
        (seconds - 1.0).abs() <= 1.0 / 30.0 + 1e-9,
        "track lasts {seconds} s"
    );

    // Decode: the first frame and a later one differ (the rod moved).
    let mut reader = mp4::read_mp4(std::fs::File::open(&file).expect("open")).expect("mp4 reads");
    let id = *reader.tracks().keys().next().expect("a track");
    let mut decoder = openh264::decoder::Decoder::new().expect("decoder");
    let mut frames: Vec<Vec<u8>> = Vec::new();
    for i in 1..=30u32 {
        let packet = annex_b(&mut reader, id, i);
        if let Some(yuv) = decoder.decode(&packet).expect("decodes") {
            use openh264::formats::YUVSource;
            let (w, h) = yuv.dimensions();
            assert_eq!((w, h), (320, 240));
            let mut rgb = vec![0u8; w * h * 3];
            yuv.write_rgb8(&mut rgb);
            frames.push(rgb);
        }
    }
    for rest in decoder.flush_remaining().expect("flush") {
        let mut rgb = vec![0u8; 320 * 240 * 3];
        rest.write_rgb8(&mut rgb);
        frames.push(rgb);
    }
    assert_eq!(frames.len(), 30, "every sample decodes to a picture");
    let changed = frames[0]
        .chunks_exact(3)
        .zip(frames[20].chunks_exact(3))
        .filter(|(a, b)| a.iter().zip(b.iter()).any(|(x, y)| x.abs_diff(*y) > 40))
        .count();
    assert!(
        changed > 200,
        "frames 0 and 20 differ in only {changed} pixels"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn gif_has_the_expected_frames_and_size() {
    let dir = temp_dir("gif");
    let file = dir.join("balls.gif");
    record(&[
        "scenes/four_balls.ron",
        "--out",
        s(&file),
        "--fps",
        "20",
        "--duration",
        "0.6",
        "--speed",
        "0.5",
        "--size",
        "200x150",
        "--overlay",
    ]);
    let f = std::fs::File::open(&file).expect("gif written");
    let mut options = gif::DecodeOptions::new();
    options.set_color_output(gif::ColorOutput::RGBA);
    let mut decoder = options.read_info(f).expect("gif decodes");
    assert_eq!((decoder.width(), decoder.height()), (200, 150));
    assert_eq!(decoder.repeat(), gif::Repeat::Infinite, "loops");
    let mut frames = 0;
    let mut centiseconds = 0u32;
    while let Some(frame) = decoder.read_next_frame().expect("frame decodes") {
        frames += 1;
        centiseconds += u32::from(frame.delay);
    }
    // 0.6 s simulated at half speed is 1.2 s of video: 24 frames at 20 fps.
    assert_eq!(frames, 24);
    assert_eq!(centiseconds, 120);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn png_sequences_are_byte_identical() {
    let dir = temp_dir("png");
    let runs = [dir.join("a"), dir.join("b")];
    for run in &runs {
        let out = format!("{}/", s(run));
        record(&[
            "scenes/four_balls.ron",
            "--out",
            &out,
            "--fps",
            "25",
            "--duration",
            "0.4",
            "--size",
            "240x160",
            "--overlay",
        ]);
    }
    let read = |d: &Path, i: usize| {
        std::fs::read(d.join(format!("frame_{i:06}.png"))).expect("frame written")
    };
    for run in &runs {
        let names: Vec<String> = std::fs::read_dir(run)
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 10, "10 frames, nothing else: {names:?}");
    }
    for i in 0..10 {
        assert!(
            read(&runs[0], i) == read(&runs[1], i),
            "frame {i} differs between runs"
        );
    }
    assert!(read(&runs[0], 0) != read(&runs[0], 9), "the scene moves");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Shares of the ghost's magenta (red and blue both well above green) in
/// the left and right halves of a frame, below the pane labels.
fn magenta_by_half(width: u32, pixels: &[[u8; 3]]) -> (f64, f64) {
    let magenta = |p: &[u8; 3]| p[0] >= p[1].saturating_add(60) && p[2] >= p[1].saturating_add(60);
    let (mut left, mut right, mut n) = (0usize, 0usize, 0usize);
    for row in pixels.chunks(width as usize).skip(60) {
        let (l, r) = row.split_at(row.len() / 2);
        left += l.iter().filter(|p| magenta(p)).count();
        right += r.iter().filter(|p| magenta(p)).count();
        n += l.len();
    }
    (left as f64 / n as f64, right as f64 / n as f64)
}

/// `record --compare` films both runs: side by side (`--view split`), the
/// pile under Lemke in the left half and under NSGS (`--b solver=nsgs`) as
/// B's magenta ghosts in the right half, several times more magenta there
/// than on A's side (whose pink bodies have a little of it); a bad side is
/// one line naming its flag, and nothing is written.
#[test]
fn record_compare_films_a_and_b_side_by_side() {
    let dir = temp_dir("compare");
    let frames = format!("{}/", s(&dir.join("split")));
    record(&[
        "scenes/pile.ron",
        "--compare",
        "--b",
        "solver=nsgs",
        "--view",
        "split",
        "--out",
        &frames,
        "--fps",
        "10",
        "--duration",
        "0.2",
        "--size",
        "640x360",
    ]);
    let (width, height, pixels) = common::decode_png(&dir.join("split").join("frame_000001.png"));
    assert_eq!((width, height), (640, 360));
    let (left, right) = magenta_by_half(width, &pixels);
    assert!(
        right > 0.02 && right > 4.0 * left,
        "magenta: {left:.4} of A's half, {right:.4} of B's"
    );
    let bad = dir.join("bad");
    std::fs::create_dir_all(&bad).expect("dir");
    refused(
        &bad,
        &[
            "--out",
            &bad.join("clip.mp4").to_string_lossy(),
            "--compare",
            "--b",
            "mu=abc",
        ],
        "--b \"mu=abc\"",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A bad invocation: non-zero exit, one line on stderr, nothing left in `dir`.
fn refused(dir: &Path, args: &[&str], expect: &str) {
    refused_with(dir, args, &[], expect);
}

fn refused_with(dir: &Path, args: &[&str], env: &[(&str, &str)], expect: &str) {
    let mut all = vec!["record", "scenes/rod.ron", "--duration", "0.1"];
    all.extend_from_slice(args);
    let out = contactlab_with(&all, env);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{all:?} succeeded");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "{all:?}: one line, got:\n{stderr}"
    );
    assert!(
        stderr.starts_with("contactlab: ") && stderr.contains(expect),
        "{all:?}: {stderr}"
    );
    let left: Vec<_> = std::fs::read_dir(dir)
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .collect();
    assert!(left.is_empty(), "{all:?} left {left:?}");
}

#[test]
fn bad_arguments_are_refused_cleanly() {
    let dir = temp_dir("bad");
    let out = |name: &str| dir.join(name).to_string_lossy().into_owned();
    refused(
        &dir,
        &["--out", &out("clip.avi")],
        "unknown extension `.avi`",
    );
    refused(&dir, &["--out", &out("clip")], "unknown format");
    refused(
        &dir,
        &["--out", &out("clip.mp4"), "--size", "321x240"],
        "even width and height",
    );
    refused(
        &dir,
        &["--out", &out("clip.mp4"), "--size", "big"],
        "--size big",
    );
    refused(&dir, &["--out", &out("clip.mp4"), "--fps", "0"], "--fps 0");
    refused(
        &dir,
        &["--out", &out("clip.gif"), "--fps", "60"],
        "--fps 60",
    );
    refused(
        &dir,
        &["--out", &out("clip.mp4"), "--speed", "0"],
        "--speed 0",
    );
    // Negative values reach the range check (not clap's "use `-- -1`"), and
    // a speed of 1e-300 is refused, not answered with a frame count of 300
    // digits.
    refused(
        &dir,
        &["--out", &out("clip.mp4"), "--fps", "-1"],
        "--fps -1: must be between 1 and 240",
    );
    refused(
        &dir,
        &["--out", &out("clip.mp4"), "--speed", "-1"],
        "--speed -1: must be between 0.001 and 1000",
    );
    refused(
        &dir,
        &["--out", &out("clip.mp4"), "--speed", "1e-300"],
        "--speed 1e-300: must be between 0.001 and 1000",
    );
    refused(&dir, &["--out", &out("clip.mp4"), "--mu=-1"], "--mu");
    refused(
        &dir,
        &["--out", "/nonexistent-contactlab-dir/clip.mp4"],
        "/nonexistent-contactlab-dir/clip.mp4",
    );
    refused(
        &dir,
        &["--out", "/nonexistent-contactlab-dir/frames/"],
        "/nonexistent-contactlab-dir/frames",
    );
    refused(
        &dir,
        &["--out", &out("clip.mp4"), "--msaa", "2"],
        "--msaa 2",
    );
    // No graphics driver at all (the Vulkan loader finds none): an error that
    // says what to install, not Bevy's panic, and the output is not begun.
    refused_with(
        &dir,
        &["--out", &out("clip.mp4")],
        &[
            ("VK_ICD_FILENAMES", "/nonexistent-icd.json"),
            ("VK_DRIVER_FILES", "/nonexistent-icd.json"),
        ],
        "mesa-vulkan-drivers",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_abandoned_writer_leaves_nothing() {
    use contactlab::record::{VideoSpec, VideoWriter};
    let dir = temp_dir("abandon");
    for name in ["a.mp4", "a.gif", "frames/"] {
        let path = dir.join(name);
        let spec = VideoSpec::new(path.clone(), 64, 48, 30).expect("spec");
        let mut writer = VideoWriter::create(&spec).expect("writer");
        let frame: Vec<u8> = (0..64 * 48 * 4).map(|i| (i % 251) as u8).collect();
        writer.push(&frame).expect("frame");
        assert!(
            writer.push(&frame[..10]).is_err(),
            "a short frame is refused"
        );
        drop(writer);
        let left: Vec<_> = std::fs::read_dir(&dir)
            .expect("dir")
            .map(|e| e.expect("entry").path())
            .collect();
        assert!(left.is_empty(), "{name}: left {left:?}");
    }
    // The same through the encoder thread: dropped unfinished, nothing stays.
    {
        use contactlab::record::{EncoderThread, FramePixels, PixelOrder};
        let spec = VideoSpec::new(dir.join("c.mp4"), 64, 48, 30).expect("spec");
        let thread = EncoderThread::spawn(VideoWriter::create(&spec).expect("writer"), 2);
        for _ in 0..3 {
            assert!(thread.push(FramePixels {
                width: 64,
                height: 48,
                order: PixelOrder::Bgra,
                pixels: vec![90; 64 * 48 * 4],
            }));
        }
        drop(thread);
        let left: Vec<_> = std::fs::read_dir(&dir)
            .expect("dir")
            .map(|e| e.expect("entry").path())
            .collect();
        assert!(left.is_empty(), "encoder thread: left {left:?}");
    }
    // And a finished one is complete, under its own name only.
    let path = dir.join("b.gif");
    let spec = VideoSpec::new(path.clone(), 64, 48, 30).expect("spec");
    let mut writer = VideoWriter::create(&spec).expect("writer");
    for k in 0..3u8 {
        let frame: Vec<u8> = (0..64 * 48 * 4)
            .map(|i| (i as u8).wrapping_mul(k + 1))
            .collect();
        writer.push(&frame).expect("frame");
    }
    let summary = writer.finish().expect("finish");
    assert_eq!(summary.frames, 3);
    let left: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("b.gif")]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The last frame of a GIF, composed (RGBA).
fn last_gif_frame(path: &Path) -> Vec<u8> {
    let mut options = gif::DecodeOptions::new();
    options.set_color_output(gif::ColorOutput::RGBA);
    let file = std::fs::File::open(path).expect("gif");
    let mut decoder = options.read_info(file).expect("gif header");
    let width = decoder.width() as usize;
    let mut canvas = vec![0u8; width * decoder.height() as usize * 4];
    while let Some(frame) = decoder.read_next_frame().expect("gif frame") {
        for y in 0..frame.height as usize {
            for x in 0..frame.width as usize {
                let from = (y * frame.width as usize + x) * 4;
                if frame.buffer[from + 3] == 0 {
                    continue;
                }
                let to = ((y + frame.top as usize) * width + x + frame.left as usize) * 4;
                canvas[to..to + 4].copy_from_slice(&frame.buffer[from..from + 4]);
            }
        }
    }
    canvas
}

/// A colour the first frame does not show (a silo's grains, hidden in it at
/// the start) keeps its colour in a GIF when it is among the palette hints;
/// without the hint the greys of the first frame's palette take it.
#[test]
fn a_hinted_colour_absent_from_the_first_gif_frame_keeps_its_colour() {
    use contactlab::record::{VideoSpec, VideoWriter};
    let dir = temp_dir("hints");
    let orange = [217u8, 140, 64];
    let (w, h) = (64usize, 48usize);
    let grey: Vec<u8> = (0..w * h)
        .flat_map(|i| {
            let v = (40 + (i % w) * 3) as u8;
            [v, v, v.saturating_add(8), 255]
        })
        .collect();
    let mut later = grey.clone();
    for p in later.chunks_exact_mut(4).take(w * h / 2) {
        p[..3].copy_from_slice(&orange);
    }
    let error = |hints: Vec<[u8; 3]>, name: &str| {
        let path = dir.join(name);
        let spec = VideoSpec::new(path.clone(), w as u32, h as u32, 25)
            .expect("spec")
            .with_palette_hints(hints);
        let mut writer = VideoWriter::create(&spec).expect("writer");
        writer.push(&grey).expect("first frame");
        writer.push(&later).expect("second frame");
        writer.finish().expect("finish");
        let last = last_gif_frame(&path);
        (0..3)
            .map(|c| (last[c] as i32 - orange[c] as i32).abs())
            .max()
            .unwrap_or(255)
    };
    let hinted = error(vec![orange], "hinted.gif");
    let plain = error(Vec::new(), "plain.gif");
    assert!(hinted <= 12, "hinted orange off by {hinted}");
    assert!(plain > 40, "without the hint orange is off by only {plain}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `contactlab record …` and returns its peak resident memory, kB,
/// polled from /proc while it runs.
#[cfg(target_os = "linux")]
fn record_peak_kb(args: &[&str]) -> u64 {
    use std::process::Stdio;
    let _guard = RENDER.lock().unwrap_or_else(|e| e.into_inner());
    let mut child = contactlab_command()
        .arg("record")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary runs");
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        // VmHWM is the peak so far; a zombie no longer reports it.
        if let Some(kb) = std::fs::read_to_string(&status_file).ok().and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        }) {
            peak = kb;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert!(status.success(), "contactlab record {args:?} failed");
    peak
}

/// Rendering keeps nothing per frame: 300 frames peak within 150 MB of 60.
/// (A surface shader that branched on uniforms alone made Mesa 22.3's
/// lavapipe recompile it for every material in every frame and keep the old
/// copies: about 7 MB a frame in this scene, 1.7 GB over the extra frames.)
#[cfg(target_os = "linux")]
#[test]
fn memory_does_not_grow_with_the_frame_count() {
    let dir = temp_dir("memory");
    let mut peaks = Vec::new();
    for duration in ["1.2", "6"] {
        let gif = dir.join(format!("balls-{duration}.gif"));
        peaks.push(record_peak_kb(&[
            "scenes/four_balls.ron",
            "--out",
            s(&gif),
            "--fps",
            "50",
            "--duration",
            duration,
            "--size",
            "96x64",
        ]));
    }
    let (short, long) = (peaks[0], peaks[1]);
    assert!(short > 0 && long > 0, "peaks read from /proc: {peaks:?}");
    assert!(
        long < short + 150 * 1024,
        "60 frames peaked at {short} kB, 300 frames at {long} kB"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `record` killed by SIGTERM (what `kill` and `timeout` send), twice 1 ms
/// apart, ends at its next frame and leaves nothing behind: no video, no
/// `.partial` file (the second signal is the same request).
#[cfg(unix)]
#[test]
fn sigterm_leaves_no_partial_files() {
    use std::process::Stdio;
    let dir = temp_dir("sigterm");
    let out = dir.join("rod.mp4");
    let _guard = RENDER.lock().unwrap_or_else(|e| e.into_inner());
    let mut child = contactlab_command()
        .args(["record", "scenes/rod.ron", "--out", s(&out)])
        .args(["--duration", "100", "--size", "64x48"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    // The temporary file exists once the handlers are installed and the
    // writer has started; let some frames render past it.
    let started = |dir: &Path| {
        std::fs::read_dir(dir)
            .map(|entries| entries.count() > 0)
            .unwrap_or(false)
    };
    while !started(&dir) {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "record ended early"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let pid = child.id();
    let kill = Command::new("sh")
        .args([
            "-c",
            &format!("kill -TERM {pid}; sleep 0.001; kill -TERM {pid}"),
        ])
        .status()
        .expect("kill");
    assert!(kill.success());
    let output = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(143), "{err}");
    assert!(err.contains("interrupted by SIGTERM"), "{err}");
    let left: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
