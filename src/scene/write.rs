//! "Save scene as": a running scene written back as a scene file whose
//! initial state is the current one. Bodies added while running are in it
//! like any other; joints, force elements and loads are restated at the
//! current pose (anchors and axes in the world now, rest lengths and angles
//! explicit, load phases advanced by ω t), so the saved scene, started at
//! t = 0, follows the trajectory the running one takes from t. The steppers'
//! memory is not part of a scene file: the saved scene starts cold, which
//! can change the last bits of a step (a snapshot keeps them; see
//! the snapshots of a simulation).

use super::Scene;
use super::spec::{Orientation, SceneFile, SystemSpec};
use crate::model::{JointKind, Measure, Model, State};
use crate::params::Params;
use std::path::Path;

/// The scene file of `scene` with `state` as its initial state and `params`
/// as its parameters.
pub fn scene_file_at(scene: &Scene, state: &State, params: &Params) -> Result<SceneFile, String> {
    let mut file = scene.file.clone();
    file.params = params.clone();
    let t = state.t;
    match (&scene.model, &mut file.system) {
        (Model::Rigid(system), SystemSpec::Rigid(spec)) => {
            let (q, v) = (&state.q, &state.v);
            if q.len() != system.config_size()
                || v.len() != system.dof()
                || spec.bodies.len() != system.bodies.len()
            {
                return Err("the state does not match the scene's bodies".to_owned());
            }
            let planar = system.dimension == crate::model::Dimension::Planar;
            for (i, (body, out)) in system.bodies.iter().zip(&mut spec.bodies).enumerate() {
                let x = system.position(q, i);
                let r = system.rotation(q, i);
                let velocity = system.linear_velocity(v, i);
                let omega = system.angular_velocity(q, v, i);
                out.position = [x.x, x.y, x.z];
                out.velocity = [velocity.x, velocity.y, velocity.z];
                out.angular_velocity = [omega.x, omega.y, omega.z];
                out.inertia = Some([body.inertia.x, body.inertia.y, body.inertia.z]);
                out.orientation = if planar {
                    Orientation::Angle(q[3 * i + 2])
                } else {
                    Orientation::Quaternion([r.w, r.i, r.j, r.k])
                };
            }
            for (joint, out) in system.joints.iter().zip(&mut spec.joints) {
                let (pa, _) = joint.anchors(system, q);
                out.at = [pa.x, pa.y, pa.z];
                if let JointKind::Hinge { axis_a, .. } = joint.kind {
                    let axis = system.rotation(q, joint.a) * axis_a;
                    out.kind = super::JointKindSpec::Hinge([axis.x, axis.y, axis.z]);
                }
            }
            for (element, out) in system.elements.iter().zip(&mut spec.elements) {
                let (pa, pb) = element.anchors(system, q);
                out.at_a = Some([pa.x, pa.y, pa.z]);
                out.at_b = Some([pb.x, pb.y, pb.z]);
                out.rest = Some(element.rest);
                if let (Measure::Angle, Some(twist)) = (element.measure, element.twist) {
                    // A spatial twist is measured from the pose the scene
                    // starts in: restate the rest angle from here.
                    out.rest = Some(element.rest - element.measure_at(system, q));
                    let axis = system.rotation(q, element.a) * twist.axis_a;
                    out.axis = Some([axis.x, axis.y, axis.z]);
                }
            }
            for (load, out) in system.loads.iter().zip(&mut spec.loads) {
                out.phase = load.phase + load.omega * t;
            }
        }
        (Model::Linear(_), SystemSpec::Linear(spec)) => {
            spec.initial_position = state.q.iter().copied().collect();
            spec.initial_velocity = state.v.iter().copied().collect();
            for h in &mut spec.harmonics {
                h.phase += h.omega * t;
            }
        }
        _ => return Err("the scene's model and file disagree".to_owned()),
    }
    Ok(file)
}

/// The scene file as RON text, headed by a comment saying where it came from.
pub fn to_ron(file: &SceneFile, comment: &str) -> Result<String, String> {
    let config = ron::ser::PrettyConfig::new()
        .struct_names(false)
        .extensions(ron::extensions::Extensions::IMPLICIT_SOME);
    let body = ron::ser::to_string_pretty(file, config).map_err(|e| e.to_string())?;
    // Scene files are read with `implicit_some` on: RON's header line for
    // it is not needed, and the top-level struct is named as in the shipped
    // scenes.
    let body = body
        .strip_prefix("#![enable(implicit_some)]\n")
        .unwrap_or(&body);
    let body = body
        .strip_prefix('(')
        .map_or_else(|| body.to_owned(), |rest| format!("Scene({rest}"));
    let header: String = comment.lines().map(|l| format!("// {l}\n")).collect();
    Ok(format!("{header}{body}\n"))
}

/// Writes `scene` at `state` with `params` to `path` ("save scene as") and
/// checks that the file loads. Refuses to overwrite an existing file.
pub fn save(scene: &Scene, state: &State, params: &Params, path: &Path) -> Result<(), String> {
    if path.exists() {
        return Err(format!("{} exists: choose another name", path.display()));
    }
    let file = scene_file_at(scene, state, params)?;
    let comment = format!(
        "Saved by contactlab from {} at t = {} s: the bodies (with any added while\nit ran) and their state then, as the initial state.",
        scene.path.display(),
        state.t
    );
    let text = to_ron(&file, &comment)?;
    // What is written must load: check before the file appears.
    super::parse(&text, path).map_err(|e| format!("the saved scene would not load: {e}"))?;
    crate::atomic_file::write(path, &text)
}
