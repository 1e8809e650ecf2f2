//! A comparison file: one scene run twice, A and B, each with the
//! parameters it sets over the scene's own (`scenes/compare/`).
//!
//! ```ron
//! Comparison(
//!     name: "Painlevé rod: Stewart–Trinkle against Moreau–Jean",
//!     scene: "../painleve_rod.ron",
//!     a: (stepper: r#stewart-trinkle),
//!     b: (stepper: r#moreau-jean),
//! )
//! ```
//!
//! `scene` is relative to the comparison file. Each side's parameters are
//! checked against the scene's model as the scene's own are, and an error
//! names the comparison file, the line and column, and the field
//! (`b.restitution`).

use super::{Checker, Scene, SceneError, load, read_text, ron_error};
use crate::params::{Params, ParamsPatch};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// How the viewer shows the two runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum CompareView {
    /// B drawn as a translucent ghost over A.
    #[default]
    Ghost,
    /// A and B side by side, with linked cameras.
    Split,
}

/// A comparison file as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Comparison")]
pub struct ComparisonFile {
    /// Display name.
    pub name: String,
    /// What the comparison shows (one paragraph).
    #[serde(default)]
    pub description: String,
    /// The scene file, relative to this file.
    pub scene: PathBuf,
    /// Run A's parameters over the scene's.
    #[serde(default)]
    pub a: ParamsPatch,
    /// Run B's parameters over the scene's.
    #[serde(default)]
    pub b: ParamsPatch,
    /// How the viewer shows them.
    #[serde(default)]
    pub view: CompareView,
}

/// A loaded comparison: the scene and each side's checked parameters.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// Display name.
    pub name: String,
    /// What it shows.
    pub description: String,
    /// Where it was loaded from.
    pub path: PathBuf,
    /// The scene both runs start from.
    pub scene: Scene,
    /// Run A's parameters.
    pub a: Params,
    /// Run B's parameters.
    pub b: Params,
    /// How the viewer shows them.
    pub view: CompareView,
}

/// Whether `source` is a comparison file: its first word, after comments and
/// space, is `Comparison`.
pub fn is_comparison(source: &str) -> bool {
    let mut rest = source.strip_prefix('\u{feff}').unwrap_or(source);
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix("//") {
            rest = after.split_once('\n').map_or("", |(_, r)| r);
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.split_once("*/").map_or("", |(_, r)| r);
        } else if rest.starts_with("#![") {
            rest = rest.split_once(']').map_or("", |(_, r)| r);
        } else {
            break;
        }
    }
    rest.strip_prefix("Comparison")
        .is_some_and(|r| r.trim_start().starts_with('('))
}

/// Whether the file at `path` is a comparison file (false when unreadable:
/// loading it as a scene then reports why).
pub fn is_comparison_file(path: &Path) -> bool {
    read_text(path, "scene").is_ok_and(|s| is_comparison(&s))
}

/// Loads a comparison file and the scene it names.
pub fn load_comparison(path: &Path) -> Result<Comparison, SceneError> {
    let source = read_text(path, "comparison")?;
    parse_comparison(&source, path)
}

/// Parses and checks comparison text; `path` names it in errors and anchors
/// its `scene`.
pub fn parse_comparison(source: &str, path: &Path) -> Result<Comparison, SceneError> {
    let source = source.strip_prefix('\u{feff}').unwrap_or(source);
    let options =
        ron::Options::default().with_default_extension(ron::extensions::Extensions::IMPLICIT_SOME);
    let file: ComparisonFile = options.from_str(source).map_err(|e| ron_error(&e, path))?;
    super::check_magnitudes(source, path)?;
    let check = Checker { source, path };
    let scene_path = path.parent().unwrap_or(Path::new(".")).join(&file.scene);
    if is_comparison_file(&scene_path) {
        return Err(check.error(
            &["scene"],
            "scene",
            format!(
                "{} is a comparison; name a scene file",
                scene_path.display()
            ),
        ));
    }
    let scene = load(&scene_path)?;
    let features = scene.model.features();
    let mut sides = Vec::with_capacity(2);
    for (name, patch) in [("a", &file.a), ("b", &file.b)] {
        let params = patch.apply(&scene.params);
        params
            .validate(&features)
            .map_err(|e| check.error(&[name, e.field], format!("{name}.{}", e.field), e.message))?;
        sides.push(params);
    }
    let b = sides.pop().unwrap_or_else(|| scene.params.clone());
    let a = sides.pop().unwrap_or_else(|| scene.params.clone());
    Ok(Comparison {
        name: file.name,
        description: file.description,
        path: path.to_owned(),
        scene,
        a,
        b,
        view: file.view,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comparison_is_told_from_a_scene_by_its_first_word() {
        assert!(is_comparison(
            "// a note\n/* more */ Comparison(name: \"x\")"
        ));
        assert!(is_comparison(
            "#![enable(implicit_some)]\nComparison (name: \"x\")"
        ));
        assert!(!is_comparison("Scene(name: \"Comparison\")"));
        assert!(!is_comparison("// Comparison(\nScene()"));
        assert!(!is_comparison(""));
    }

    fn dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/compare/x.ron")
    }

    #[test]
    fn each_side_sets_its_parameters_over_the_scenes() {
        let c = parse_comparison(
            r#"Comparison(name: "rod", scene: "../painleve_rod.ron",
                 a: (stepper: r#stewart-trinkle), b: (restitution: 0.5), view: Split)"#,
            &dir(),
        )
        .expect("valid");
        assert_eq!(c.a.stepper, crate::params::StepperKind::StewartTrinkle);
        assert_eq!(c.b.stepper, c.scene.params.stepper);
        assert_eq!(c.b.restitution, 0.5);
        assert_eq!(c.a.mu, c.scene.params.mu);
        assert_eq!(c.view, CompareView::Split);
    }

    #[test]
    fn a_side_the_scene_cannot_take_is_an_error_at_its_line_and_field() {
        let text = "Comparison(name: \"rod\", scene: \"../painleve_rod.ron\",\n\
                    a: (),\n    b: (stepper: r#stewart-trinkle, restitution: 1.5))";
        let e = parse_comparison(text, &dir()).expect_err("out of range");
        let SceneError::Invalid {
            line, field, path, ..
        } = &e
        else {
            panic!("{e}")
        };
        assert_eq!((*line, field.as_str()), (3, "b.restitution"), "{e}");
        assert!(path.ends_with("x.ron"), "{e}");
        let e = parse_comparison("Comparison(name: \"x\", scene: \"../nope.ron\")", &dir())
            .expect_err("no such scene");
        assert!(e.to_string().contains("nope.ron"), "{e}");
    }
}
