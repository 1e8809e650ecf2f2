//! Snapshot files across versions: the stepper's memory was written, before
//! the one step pipeline, as one section per stepper (`Steppers(…)`); such
//! files (`tests/data/*-before-pipeline.ron`, each taken after 90 steps by
//! that version) still load, and a run from them continues bit for bit like
//! the uninterrupted run.

mod common;

use contactlab::params::StepperKind;
use contactlab::sim::snapshot::{self, Snapshot};
use std::path::{Path, PathBuf};

fn data(name: &str) -> PathBuf {
    common::project_dir().join("tests").join("data").join(name)
}

/// The old files, their scenes and steppers.
const OLD: [(&str, StepperKind, &str); 2] = [
    (
        "incline.ron",
        StepperKind::StewartTrinkle,
        "incline-stewart-trinkle-before-pipeline.ron",
    ),
    (
        "four_balls.ron",
        StepperKind::MoreauJean,
        "four_balls-moreau-jean-before-pipeline.ron",
    ),
];

#[test]
fn a_snapshot_from_before_the_pipeline_continues_bit_identically() {
    for (scene, stepper, file) in OLD {
        let mut original = common::load_simulation(scene);
        original.params.stepper = stepper;
        common::csv_rows(&mut original, 90);
        let expected = common::csv_rows(&mut original, 60);

        let mut restarted = common::load_simulation(scene);
        restarted.params = original.params.clone();
        snapshot::load_into(&mut restarted, &data(file)).expect("an old snapshot loads");
        assert_eq!(restarted.steps, 90);
        assert_eq!(restarted.stepper_memory().scheme, stepper);
        assert_eq!(common::csv_rows(&mut restarted, 60), expected, "{file}");

        // Its memory is what makes the rows equal: started cold from the
        // same state, the run differs.
        let (mut cold, source) = Snapshot::load(&data(file)).expect("reads");
        cold.steppers = None;
        let mut restarted = common::load_simulation(scene);
        restarted.params = original.params.clone();
        cold.apply(&mut restarted, &source, &data(file))
            .expect("applies");
        assert_ne!(
            common::csv_rows(&mut restarted, 60),
            expected,
            "{file} cold"
        );
    }
}

/// Saved again, an old snapshot is written in this version's form, which
/// loads to the same memory.
#[test]
fn an_old_snapshot_is_saved_in_the_current_form() {
    let (scene, stepper, file) = OLD[0];
    let mut sim = common::load_simulation(scene);
    sim.params.stepper = stepper;
    snapshot::load_into(&mut sim, &data(file)).expect("loads");
    let text = Snapshot::of(&sim).to_ron().expect("written");
    assert!(text.contains("StepperMemory("), "{text}");
    assert!(!text.contains("stewart_trinkle"));
    let again = Snapshot::parse(&text, Path::new("again.ron")).expect("parses");
    let mut other = common::load_simulation(scene);
    other.params = sim.params.clone();
    again
        .apply(&mut other, &text, Path::new("again.ron"))
        .expect("applies");
    assert_eq!(
        common::csv_rows(&mut other, 30),
        common::csv_rows(&mut sim, 30)
    );
}

/// A memory section that mixes the two forms is refused with its file and
/// line.
#[test]
fn a_memory_mixing_both_forms_is_an_error_at_its_line() {
    let (scene, stepper, file) = OLD[0];
    let text = std::fs::read_to_string(data(file)).expect("reads");
    let mixed = text.replacen(
        "stewart_trinkle:",
        "scheme: r#stewart-trinkle,\n        stewart_trinkle:",
        1,
    );
    assert_ne!(mixed, text);
    let mut sim = common::load_simulation(scene);
    sim.params.stepper = stepper;
    let path = Path::new("mixed.ron");
    let err = Snapshot::parse(&mixed, path)
        .expect_err("both forms at once")
        .to_string();
    assert!(err.contains("mixed.ron:"), "{err}");
    assert!(err.contains("mixes the fields"), "{err}");
}
