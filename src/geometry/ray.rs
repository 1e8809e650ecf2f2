//! Rays against shapes, in the shape's body frame: what the viewer's pointer
//! is over. In space the ray meets the solid's surface; in the plane, where
//! bodies are outlines in z = 0, the ray crosses that plane inside the
//! outline.

use super::Shape;
use nalgebra::Vector3;

/// The first hit of the ray o + t d (t ≥ 0) with the solid `shape`: (t, the
/// outward unit normal there). A ray starting inside hits at t = 0.
pub fn cast(
    shape: &Shape,
    origin: &Vector3<f64>,
    direction: &Vector3<f64>,
) -> Option<(f64, Vector3<f64>)> {
    if !(origin.iter().chain(direction.iter()).all(|x| x.is_finite())) || direction.norm() == 0.0 {
        return None;
    }
    match *shape {
        Shape::Sphere { radius } => sphere(&Vector3::zeros(), radius, origin, direction),
        Shape::Capsule {
            half_length,
            radius,
        } => capsule(half_length, radius, origin, direction),
        Shape::Box { half_extents } => cuboid(&Vector3::from(half_extents), origin, direction),
    }
}

/// The planar hit: the ray crosses z = 0 at t, and the crossing lies inside
/// the shape's outline (its x–y section). The normal is +z.
pub fn cast_planar(
    shape: &Shape,
    origin: &Vector3<f64>,
    direction: &Vector3<f64>,
) -> Option<(f64, Vector3<f64>)> {
    if direction.z == 0.0 || !(origin.iter().chain(direction.iter()).all(|x| x.is_finite())) {
        return None;
    }
    let t = -origin.z / direction.z;
    if t < 0.0 {
        return None;
    }
    let p = origin + direction * t;
    let inside = match *shape {
        Shape::Sphere { radius } => p.x.hypot(p.y) <= radius,
        Shape::Capsule {
            half_length,
            radius,
        } => (p.x.abs() - half_length).max(0.0).hypot(p.y) <= radius,
        Shape::Box { half_extents } => p.x.abs() <= half_extents[0] && p.y.abs() <= half_extents[1],
    };
    inside.then_some((t, Vector3::z()))
}

/// The smallest t ≥ 0 of |o + t d − c| = r.
fn sphere(
    centre: &Vector3<f64>,
    radius: f64,
    origin: &Vector3<f64>,
    direction: &Vector3<f64>,
) -> Option<(f64, Vector3<f64>)> {
    let m = origin - centre;
    let a = direction.norm_squared();
    let b = m.dot(direction);
    let c = m.norm_squared() - radius * radius;
    if c <= 0.0 {
        let n = if m.norm() > 0.0 {
            m.normalize()
        } else {
            -direction.normalize()
        };
        return Some((0.0, n));
    }
    let disc = b * b - a * c;
    if disc < 0.0 || b > 0.0 {
        return None;
    }
    let t = (-b - disc.sqrt()) / a;
    let n = (m + direction * t).normalize();
    Some((t, n))
}

/// A capsule along x: the nearest of its core cylinder's side (within the
/// core) and its two end spheres.
fn capsule(
    half_length: f64,
    radius: f64,
    origin: &Vector3<f64>,
    direction: &Vector3<f64>,
) -> Option<(f64, Vector3<f64>)> {
    let mut best: Option<(f64, Vector3<f64>)> = None;
    let mut take = |hit: Option<(f64, Vector3<f64>)>| {
        if let Some(h) = hit
            && best.is_none_or(|b| h.0 < b.0)
        {
            best = Some(h);
        }
    };
    for s in [-1.0, 1.0] {
        take(sphere(
            &Vector3::new(s * half_length, 0.0, 0.0),
            radius,
            origin,
            direction,
        ));
    }
    // The infinite cylinder y² + z² = r², kept where |x| ≤ half_length.
    let (oy, oz, dy, dz) = (origin.y, origin.z, direction.y, direction.z);
    let a = dy * dy + dz * dz;
    let b = oy * dy + oz * dz;
    let c = oy * oy + oz * oz - radius * radius;
    if c <= 0.0 && origin.x.abs() <= half_length {
        return Some((
            0.0,
            Vector3::new(0.0, oy, oz)
                .try_normalize(0.0)
                .unwrap_or(Vector3::y()),
        ));
    }
    if a > 0.0 {
        let disc = b * b - a * c;
        if disc >= 0.0 && b <= 0.0 {
            let t = (-b - disc.sqrt()) / a;
            let p = origin + direction * t;
            if t >= 0.0 && p.x.abs() <= half_length {
                take(Some((t, Vector3::new(0.0, p.y, p.z).normalize())));
            }
        }
    }
    best
}

/// A box centred at the origin (slab method).
fn cuboid(
    half: &Vector3<f64>,
    origin: &Vector3<f64>,
    direction: &Vector3<f64>,
) -> Option<(f64, Vector3<f64>)> {
    let mut near = f64::NEG_INFINITY;
    let mut far = f64::INFINITY;
    let mut normal = Vector3::zeros();
    for a in 0..3 {
        if direction[a] == 0.0 {
            if origin[a].abs() > half[a] {
                return None;
            }
            continue;
        }
        let t1 = (-half[a] - origin[a]) / direction[a];
        let t2 = (half[a] - origin[a]) / direction[a];
        let (lo, hi, sign) = if t1 < t2 {
            (t1, t2, -1.0)
        } else {
            (t2, t1, 1.0)
        };
        if lo > near {
            near = lo;
            normal = Vector3::zeros();
            normal[a] = sign;
        }
        far = far.min(hi);
    }
    if near > far || far < 0.0 {
        return None;
    }
    if near < 0.0 {
        return Some((0.0, -direction.normalize()));
    }
    Some((near, normal))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rays_hit_the_near_surface() {
        let o = Vector3::new(-5.0, 0.0, 0.0);
        let d = Vector3::x();
        let (t, n) = cast(&Shape::Sphere { radius: 1.0 }, &o, &d).expect("hit");
        assert!((t - 4.0).abs() < 1e-12 && (n + Vector3::x()).norm() < 1e-12);
        let (t, n) = cast(
            &Shape::Box {
                half_extents: [0.5, 1.0, 1.0],
            },
            &o,
            &d,
        )
        .expect("hit");
        assert!((t - 4.5).abs() < 1e-12 && (n + Vector3::x()).norm() < 1e-12);
        let capsule = Shape::Capsule {
            half_length: 1.0,
            radius: 0.5,
        };
        let (t, _) = cast(&capsule, &o, &d).expect("hit");
        assert!((t - 3.5).abs() < 1e-12, "end cap at x = −1.5, t = {t}");
        let (t, n) = cast(&capsule, &Vector3::new(0.3, 5.0, 0.0), &-Vector3::y()).expect("hit");
        assert!((t - 4.5).abs() < 1e-12 && (n - Vector3::y()).norm() < 1e-12);
        assert!(
            cast(
                &Shape::Sphere { radius: 1.0 },
                &Vector3::new(-5.0, 1.5, 0.0),
                &d
            )
            .is_none()
        );
        assert!(
            cast(&Shape::Sphere { radius: 1.0 }, &o, &-d).is_none(),
            "behind the ray"
        );
    }

    #[test]
    fn planar_rays_test_the_outline() {
        let down = -Vector3::z();
        let box_ = Shape::Box {
            half_extents: [0.5, 0.25, 0.0],
        };
        assert!(cast_planar(&box_, &Vector3::new(0.4, 0.2, 10.0), &down).is_some());
        assert!(cast_planar(&box_, &Vector3::new(0.4, 0.3, 10.0), &down).is_none());
        let (t, _) = cast_planar(
            &Shape::Sphere { radius: 1.0 },
            &Vector3::new(0.6, 0.6, 10.0),
            &down,
        )
        .expect("inside the disk");
        assert_eq!(t, 10.0);
    }
}
