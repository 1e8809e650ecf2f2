//! Real-window smoke test: the viewer opens a window on the rod scene, renders
//! (Mesa's software Vulkan under Xvfb in CI), takes a screenshot after a number
//! of frames and exits. The PNG must be the window's size and show the scene's
//! colours: the rod, the table and the panel.
#![cfg(feature = "viewer")]

mod common;

use std::path::Path;
use std::process::Command;

/// The window size the viewer asks for.
const WINDOW: (u32, u32) = (1280, 800);

/// Share of pixels within `tol` (per channel) of `rgb`.
fn share(pixels: &[[u8; 3]], rgb: [u8; 3], tol: u8) -> f64 {
    let near = pixels
        .iter()
        .filter(|p| (0..3).all(|c| p[c].abs_diff(rgb[c]) <= tol))
        .count();
    near as f64 / pixels.len() as f64
}

/// Runs the viewer on `scene` for `frames` frames and returns the screenshot.
fn screenshot(scene: &str, frames: u32) -> (u32, u32, Vec<[u8; 3]>) {
    screenshot_with(scene, frames, &[], None)
}

/// The same with extra arguments; `keep` copies the PNG there too.
fn screenshot_with(
    scene: &str,
    frames: u32,
    extra: &[&str],
    keep: Option<&Path>,
) -> (u32, u32, Vec<[u8; 3]>) {
    let out = std::env::temp_dir().join(format!(
        "contactlab-window-{}-{}.png",
        std::process::id(),
        scene.replace('/', "-")
    ));
    let binary = env!("CARGO_BIN_EXE_contactlab");
    let scene = common::project_dir().join("scenes").join(scene);
    let mut args = vec![
        scene.to_string_lossy().into_owned(),
        "--screenshot".to_owned(),
        out.to_string_lossy().into_owned(),
        "--frames".to_owned(),
        frames.to_string(),
    ];
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    // CI runs the tests under xvfb-run; run from a bare terminal, start one.
    let mut command = if std::env::var_os("DISPLAY").is_some() {
        Command::new(binary)
    } else {
        let mut c = Command::new("xvfb-run");
        c.args(["-a", "-s", "-screen 0 1280x800x24", binary]);
        c
    };
    // One viewer at a time: two software-rendered windows share two cores,
    // and a loaded Xvfb can refuse a second connection (XOpenDisplayFailed);
    // a refused connection gets one more attempt.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    command.args(&args);
    let mut output = command
        .output()
        .expect("the viewer (or xvfb-run, when DISPLAY is unset) starts");
    if !output.status.success()
        && String::from_utf8_lossy(&output.stderr).contains("XOpenDisplayFailed")
    {
        std::thread::sleep(std::time::Duration::from_secs(2));
        output = command
            .output()
            .expect("the viewer (or xvfb-run, when DISPLAY is unset) starts");
    }
    assert!(
        output.status.success(),
        "viewer exited with {}:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let decoded = common::decode_png(&out);
    if let Some(keep) = keep {
        std::fs::copy(&out, keep).expect("screenshot kept");
    }
    let _ = std::fs::remove_file(&out);
    decoded
}

#[test]
fn the_viewer_renders_the_rod_scene_in_a_real_window() {
    let (width, height, pixels) = screenshot("rod.ron", 20);
    assert_eq!((width, height), WINDOW, "the window's size");

    // Not blank: many distinct colours, and the scene's own.
    let mut distinct: Vec<[u8; 3]> = pixels.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert!(distinct.len() > 200, "{} distinct colours", distinct.len());
    let panel = share(&pixels, [27, 27, 27], 2);
    assert!(panel > 0.05, "egui panel covers {:.4}", panel);
    // The rod's face towards the viewer and the table's front face, as the
    // lab material shades them (src/viewer/lab_material.wgsl).
    let rod = share(&pixels, [77, 149, 241], 12);
    let table = share(&pixels, [82, 85, 93], 8);
    let background = share(&pixels, [27, 29, 34], 5);
    assert!(rod > 0.005, "rod colour covers {:.4} of the window", rod);
    assert!(table > 0.02, "table colour covers {:.4}", table);
    assert!(background > 0.1, "background covers {:.4}", background);
}

/// A linear system is drawn from its scene's `drawing` section: the
/// woodpecker's brown pole and red bird are on screen, unlit, in exactly the
/// file's colours ((0.55, 0.4, 0.25) and (0.8, 0.2, 0.15) in sRGB). At
/// t = 2.5 s the sleeve is 0.33 m down the pole, far below the initial view
/// (0.13 m of half height): the bird is there because the camera follows the
/// sleeve (the scene's `follow: "sleeve"`).
#[test]
fn the_woodpecker_is_drawn_from_its_generalized_coordinates_and_followed() {
    let (width, height, pixels) = screenshot("woodpecker.ron", 150);
    assert_eq!((width, height), WINDOW);
    let pole = share(&pixels, [140, 102, 64], 1);
    let bird = share(&pixels, [204, 51, 38], 1);
    assert!(pole > 0.005, "pole colour covers {pole:.4}");
    assert!(bird > 0.001, "bird colour covers {bird:.4}");
}

/// Hands on the scene in a real window: a scripted pointer (`--drag`) grabs
/// a box of the pile in the perturb tool and pulls it across the table. The
/// picture has the inspector open (the box's numbers and contacts), the
/// box's yellow outline and the red spring to the cursor. With
/// `CONTACTLAB_SCREENSHOTS=1` it is also written to
/// `assets/screenshot-hands.png` (the README's picture).
#[test]
fn a_drag_in_progress_with_the_inspector_open() {
    let keep = std::env::var_os("CONTACTLAB_SCREENSHOTS").map(|_| {
        common::project_dir()
            .join("assets")
            .join("screenshot-hands.png")
    });
    let (width, height, pixels) = screenshot_with(
        "pile.ron",
        120,
        &["--drag", "box5", "--drag-by", "200,20"],
        keep.as_deref(),
    );
    assert_eq!((width, height), WINDOW);
    // The spring (1.0, 0.35, 0.3) and the outline (1.0, 0.92, 0.35), drawn
    // unlit by the gizmos.
    let spring = share(&pixels, [255, 160, 149], 0).max(share(&pixels, [255, 89, 77], 6));
    let outline = share(&pixels, [255, 235, 89], 6);
    assert!(spring > 2e-5, "the spring covers {spring:.6}");
    assert!(outline > 2e-4, "the selection outline covers {outline:.6}");
    // The inspector's contact states: "slip" in orange text in the panel.
    let panel_slip = pixels
        .chunks(WINDOW.0 as usize)
        .flat_map(|row| row[..390].iter())
        .filter(|p| p[0] > 230 && (140..170).contains(&p[1]) && p[2] < 60)
        .count();
    assert!(
        panel_slip > 20,
        "orange contact states in the panel: {panel_slip} px"
    );
}

/// Share of the scene's pixels (right of the panel, above the timeline) in
/// the ghost's magenta: red and blue both well above green.
fn ghost_share(pixels: &[[u8; 3]]) -> f64 {
    let scene: Vec<[u8; 3]> = pixels
        .chunks(WINDOW.0 as usize)
        .take(720)
        .flat_map(|row| row[400..].iter().copied())
        .collect();
    let ghost = scene
        .iter()
        .filter(|p| p[0] >= p[1].saturating_add(60) && p[2] >= p[1].saturating_add(60))
        .count();
    ghost as f64 / scene.len() as f64
}

/// A comparison file opened in the viewer draws run B as a translucent
/// magenta ghost over A (`scenes/compare/pile.ron`: Lemke against NSGS):
/// at least 2 % more of the scene is magenta than with the same scene opened
/// plain (about 4.6 % against 1 % here). The picture is kept as
/// `contactlab-compare-pile.png` in the temporary directory.
#[test]
fn a_comparison_draws_run_b_as_a_ghost_over_a() {
    let keep = std::env::temp_dir().join("contactlab-compare-pile.png");
    let (width, height, pixels) = screenshot_with("compare/pile.ron", 60, &[], Some(&keep));
    assert_eq!((width, height), WINDOW);
    let (_, _, plain) = screenshot("pile.ron", 60);
    let (ghost, without) = (ghost_share(&pixels), ghost_share(&plain));
    assert!(
        ghost - without > 0.02,
        "magenta covers {ghost:.4} of the scene with the ghost, {without:.4} without"
    );
}

/// Shares of a pane's pixels (columns `columns`, rows below the pane
/// labels and above the timeline): (B's magenta, A's body colours: any
/// other saturated colour).
fn pane_colours(pixels: &[[u8; 3]], columns: std::ops::Range<usize>) -> (f64, f64) {
    let pane: Vec<[u8; 3]> = pixels
        .chunks(WINDOW.0 as usize)
        .take(720)
        .skip(60)
        .flat_map(|row| row[columns.clone()].iter().copied())
        .collect();
    let magenta = |p: &[u8; 3]| p[0] >= p[1].saturating_add(60) && p[2] >= p[1].saturating_add(60);
    let saturated = |p: &[u8; 3]| p.iter().max().unwrap_or(&0) - p.iter().min().unwrap_or(&0) > 60;
    let ghost = pane.iter().filter(|p| magenta(p)).count();
    let bodies = pane.iter().filter(|p| saturated(p) && !magenta(p)).count();
    let n = pane.len() as f64;
    (ghost as f64 / n, bodies as f64 / n)
}

/// The split view (`view: Split` in the comparison file; the panel's
/// "side by side") draws two panes under linked cameras: A's coloured
/// bodies in the left one, B's magenta ghosts in the right one, each with
/// little of the other's colour. One camera over the whole view would show
/// A's colours on both sides, and B's ghosts over them. With `CONTACTLAB_SCREENSHOTS=1`
/// the picture is also written to `assets/screenshot-compare.png` (the
/// README's picture).
#[test]
fn the_split_view_draws_a_and_b_in_two_panes() {
    let scene = common::project_dir().join("scenes").join("pile.ron");
    // Alone in a directory of its own, named as the shipped one: the
    // panel's scene picker lists it as `pile.ron`.
    let dir = std::env::temp_dir().join(format!("contactlab-window-split-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("directory made");
    let comparison = dir.join("pile.ron");
    let text = format!(
        "Comparison(name: \"Pile: Lemke against NSGS\", scene: {:?}, a: (solver: lemke), \
         b: (stepper: r#moreau-jean, solver: nsgs), view: Split)",
        scene.display().to_string()
    );
    std::fs::write(&comparison, text).expect("comparison written");
    let keep = std::env::var_os("CONTACTLAB_SCREENSHOTS").map(|_| {
        common::project_dir()
            .join("assets")
            .join("screenshot-compare.png")
    });
    let (width, height, pixels) = screenshot_with(
        &comparison.to_string_lossy(),
        60,
        &[],
        keep.as_deref().or(Some(
            &std::env::temp_dir().join("contactlab-compare-split.png"),
        )),
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!((width, height), WINDOW);
    // The panel takes about 350 of 1280 pixels: A's pane about 350..815,
    // B's 815..1280; a margin on both sides of the divider.
    let (a_ghost, a_bodies) = pane_colours(&pixels, 380..790);
    let (b_ghost, b_bodies) = pane_colours(&pixels, 840..1280);
    eprintln!(
        "A's pane: bodies {a_bodies:.4}, magenta {a_ghost:.4}; B's pane: magenta {b_ghost:.4}, other colours {b_bodies:.4}"
    );
    // A's pink bodies and arrows have a little of the magenta, B's pane a
    // little of the panel's and labels' colours: the panes differ several
    // times over.
    assert!(
        a_bodies > 0.03,
        "A's bodies cover {a_bodies:.4} of A's pane"
    );
    assert!(b_ghost > 0.03, "B's ghosts cover {b_ghost:.4} of B's pane");
    assert!(
        a_ghost < b_ghost / 4.0,
        "magenta: {a_ghost:.4} in A's pane, {b_ghost:.4} in B's"
    );
    assert!(
        b_bodies < a_bodies / 4.0,
        "A's colours: {b_bodies:.4} in B's pane, {a_bodies:.4} in A's"
    );
}

/// `--msaa` takes 1 or 4; anything else is refused in one line before a
/// window opens (no display needed).
#[test]
fn a_bad_msaa_is_refused_before_the_window_opens() {
    let scene = common::project_dir().join("scenes").join("rod.ron");
    let output = Command::new(env!("CARGO_BIN_EXE_contactlab"))
        .arg(&scene)
        .args(["--msaa", "3"])
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .expect("the viewer starts");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--msaa 3: must be 1 (off) or 4"),
        "stderr: {stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
}
