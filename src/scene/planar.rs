//! A planar scene moves in the x–y plane, so the z component of a position, a
//! velocity, gravity, a load or an anchor, and the x and y components of an
//! angular velocity, have nowhere to go. Rather than drop them without a
//! word, loading refuses them at their field.

use super::spec::RigidSpec;

/// Where a planar scene leaves its plane: (anchors to locate the field in the
/// text, the field's path, the message), or `None`.
pub(super) fn first_out_of_plane(spec: &RigidSpec) -> Option<(Vec<String>, String, String)> {
    let quoted = |name: &str| format!("\"{name}\"");
    let z_of = |v: &[f64; 3]| (v[2] != 0.0).then_some(v[2]);
    let in_plane = |z: f64| {
        format!("a planar scene moves in the x–y plane: the z component must be 0, found {z}")
    };
    if let Some(z) = z_of(&spec.gravity) {
        return Some((vec!["gravity".into()], "gravity".into(), in_plane(z)));
    }
    for (i, b) in spec.bodies.iter().enumerate() {
        for (field, value) in [("position", &b.position), ("velocity", &b.velocity)] {
            if let Some(z) = z_of(value) {
                return Some((
                    vec!["bodies".into(), quoted(&b.name), field.into()],
                    format!("bodies[{i}].{field}"),
                    in_plane(z),
                ));
            }
        }
        let [wx, wy, _] = b.angular_velocity;
        if wx != 0.0 || wy != 0.0 {
            return Some((
                vec!["bodies".into(), quoted(&b.name), "angular_velocity".into()],
                format!("bodies[{i}].angular_velocity"),
                format!(
                    "a planar body turns about z only: the x and y components must be 0, found ({wx}, {wy})"
                ),
            ));
        }
    }
    for (i, s) in spec.surfaces.iter().enumerate() {
        if let Some(z) = z_of(&s.point) {
            return Some((
                vec!["surfaces".into(), quoted(&s.name), "point".into()],
                format!("surfaces[{i}].point"),
                in_plane(z),
            ));
        }
    }
    for (i, j) in spec.joints.iter().enumerate() {
        if let Some(z) = z_of(&j.at) {
            return Some((
                vec!["joints".into(), quoted(&j.name), "at".into()],
                format!("joints[{i}].at"),
                in_plane(z),
            ));
        }
    }
    for (i, e) in spec.elements.iter().enumerate() {
        for (field, value) in [("at_a", &e.at_a), ("at_b", &e.at_b)] {
            if let Some(z) = value.as_ref().and_then(z_of) {
                return Some((
                    vec!["elements".into(), quoted(&e.name), field.into()],
                    format!("elements[{i}].{field}"),
                    in_plane(z),
                ));
            }
        }
        if let Some([x, y, _]) = e.axis
            && (x != 0.0 || y != 0.0)
        {
            return Some((
                vec!["elements".into(), quoted(&e.name), "axis".into()],
                format!("elements[{i}].axis"),
                format!(
                    "planar elements turn about z: omit `axis` or give (0, 0, 1), found x = {x}, y = {y}"
                ),
            ));
        }
    }
    for (i, l) in spec.loads.iter().enumerate() {
        if let Some(z) = z_of(&l.force) {
            return Some((
                vec!["loads".into(), quoted(&l.body), "force".into()],
                format!("loads[{i}].force"),
                in_plane(z),
            ));
        }
    }
    None
}
