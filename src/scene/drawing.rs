//! An optional `drawing` section of a scene: how to draw a model whose
//! coordinates are not bodies (a generalized linear system such as the
//! woodpecker toy), or extra decoration for any scene.
//!
//! A drawing is a list of parts. Each part is a rigid frame in the x–y plane
//! whose pose (x, y, angle) is affine in the generalized coordinates q — value =
//! offset + Σ gain_c · q_c, with c named as in the CSV (a linear system's
//! coordinate names; `B.x`, `B.y`, `B.theta`, … for rigid bodies) — and carries
//! shapes given in its own axes. A viewer draws shape point p of a part at
//! (x, y) + R(angle) p. For example the woodpecker's sleeve:
//!
//! ```ron
//! (name: "sleeve", y: (gains: {"y": 1.0}), angle: (gains: {"phi_M": 1.0}),
//!  shapes: [Polygon(points: [(0.0031, -0.0058), (0.0045, -0.0058), (0.0045, 0.0058), (0.0031, 0.0058)])])
//! ```

use crate::model::{Dimension, Model};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A scalar affine in the coordinates: offset + Σ gains[c] · q_c.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AffineSpec {
    /// Value at q = 0 (m or rad).
    pub offset: f64,
    /// Coefficient per coordinate name.
    pub gains: BTreeMap<String, f64>,
}

/// A shape in a part's own axes, m.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Sketch {
    /// A thick line segment.
    Segment {
        /// Start point.
        from: [f64; 2],
        /// End point.
        to: [f64; 2],
        /// Line width.
        width: f64,
    },
    /// A filled circle.
    Circle {
        /// Centre.
        center: [f64; 2],
        /// Radius.
        radius: f64,
    },
    /// A filled polygon (vertices in order).
    Polygon {
        /// Vertices.
        points: Vec<[f64; 2]>,
    },
}

impl Sketch {
    /// Whether p (in the part's axes, m) lies on the shape.
    pub fn contains(&self, p: [f64; 2]) -> bool {
        match self {
            Self::Circle { center, radius } => {
                (p[0] - center[0]).hypot(p[1] - center[1]) <= *radius
            }
            Self::Segment { from, to, width } => {
                let (ux, uy) = (to[0] - from[0], to[1] - from[1]);
                let (px, py) = (p[0] - from[0], p[1] - from[1]);
                let length2 = ux * ux + uy * uy;
                let s = if length2 > 0.0 {
                    ((px * ux + py * uy) / length2).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                (px - s * ux).hypot(py - s * uy) <= width / 2.0
            }
            Self::Polygon { points } => {
                // Even–odd rule.
                let mut inside = false;
                for (i, a) in points.iter().enumerate() {
                    let b = points[(i + 1) % points.len()];
                    if (a[1] > p[1]) != (b[1] > p[1]) {
                        let x = a[0] + (p[1] - a[1]) / (b[1] - a[1]) * (b[0] - a[0]);
                        if p[0] < x {
                            inside = !inside;
                        }
                    }
                }
                inside
            }
        }
    }
}

/// One part of a drawing, as written in the scene file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DrawingPart {
    /// Name (for the viewer's labels).
    pub name: String,
    /// x of the part's origin, m.
    #[serde(default)]
    pub x: AffineSpec,
    /// y of the part's origin, m.
    #[serde(default)]
    pub y: AffineSpec,
    /// Rotation of the part's axes, rad (counter-clockwise).
    #[serde(default)]
    pub angle: AffineSpec,
    /// What to draw, in the part's axes.
    pub shapes: Vec<Sketch>,
    /// Colour (sRGB, 0–1); omitted: chosen by the viewer.
    #[serde(default)]
    pub color: Option<[f32; 3]>,
}

/// A resolved affine scalar: offset + Σ gain · q[index].
#[derive(Debug, Clone, PartialEq)]
pub struct Affine {
    /// Value at q = 0.
    pub offset: f64,
    /// (index into q, gain).
    pub gains: Vec<(usize, f64)>,
}

impl Affine {
    /// The value at q.
    pub fn eval(&self, q: &nalgebra::DVector<f64>) -> f64 {
        self.gains
            .iter()
            .fold(self.offset, |sum, &(i, g)| sum + g * q[i])
    }
}

/// A part with its coordinate names resolved to indices of q.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    /// Name.
    pub name: String,
    /// x of the origin, m.
    pub x: Affine,
    /// y of the origin, m.
    pub y: Affine,
    /// Rotation, rad.
    pub angle: Affine,
    /// Shapes in the part's axes.
    pub shapes: Vec<Sketch>,
    /// Colour, if given.
    pub color: Option<[f32; 3]>,
}

impl Part {
    /// The pose (x, y, angle) at q.
    pub fn pose(&self, q: &nalgebra::DVector<f64>) -> (f64, f64, f64) {
        (self.x.eval(q), self.y.eval(q), self.angle.eval(q))
    }

    /// Whether the world point p (m, in the x–y plane) lies on one of the
    /// part's shapes at q (what the viewer's pointer picks).
    pub fn contains(&self, q: &nalgebra::DVector<f64>, p: [f64; 2]) -> bool {
        let (x, y, a) = self.pose(q);
        let (s, c) = a.sin_cos();
        let (dx, dy) = (p[0] - x, p[1] - y);
        let local = [c * dx + s * dy, -s * dx + c * dy];
        self.shapes.iter().any(|shape| shape.contains(local))
    }

    /// Where the part's point p is in the plane at q, m.
    pub fn to_world(&self, q: &nalgebra::DVector<f64>, p: [f64; 2]) -> [f64; 2] {
        let (x, y, a) = self.pose(q);
        let (s, c) = a.sin_cos();
        [x + c * p[0] - s * p[1], y + s * p[0] + c * p[1]]
    }
}

/// The names of q's entries, as in the CSV: a linear system's coordinates;
/// `B.x`, `B.y`, `B.theta` per planar body; `B.x`, …, `B.qz` per spatial body.
pub fn coordinate_names(model: &Model) -> Vec<String> {
    match model {
        Model::Linear(s) => s.coordinates.clone(),
        Model::Rigid(s) => {
            let fields: &[&str] = match s.dimension {
                Dimension::Planar => &["x", "y", "theta"],
                Dimension::Spatial => &["x", "y", "z", "qw", "qx", "qy", "qz"],
            };
            s.bodies
                .iter()
                .flat_map(|b| fields.iter().map(move |f| format!("{}.{f}", b.name)))
                .collect()
        }
    }
}

/// Resolves a part's coordinate names against `names` (the names of q's
/// entries); on error returns (field, message).
pub fn resolve(part: &DrawingPart, names: &[String]) -> Result<Part, (String, String)> {
    let affine = |spec: &AffineSpec, field: &str| -> Result<Affine, (String, String)> {
        if !spec.offset.is_finite() {
            return Err((format!("{field}.offset"), "must be finite".to_owned()));
        }
        let mut gains = Vec::new();
        for (name, &gain) in &spec.gains {
            let Some(i) = names.iter().position(|n| n == name) else {
                return Err((
                    format!("{field}.gains"),
                    format!("unknown coordinate `{name}` (known: {})", names.join(", ")),
                ));
            };
            if !gain.is_finite() {
                return Err((format!("{field}.gains"), "must be finite".to_owned()));
            }
            gains.push((i, gain));
        }
        Ok(Affine {
            offset: spec.offset,
            gains,
        })
    };
    for shape in &part.shapes {
        let ok = match shape {
            Sketch::Segment { from, to, width } => {
                from.iter().chain(to).all(|x| x.is_finite()) && width.is_finite() && *width > 0.0
            }
            Sketch::Circle { center, radius } => {
                center.iter().all(|x| x.is_finite()) && radius.is_finite() && *radius > 0.0
            }
            Sketch::Polygon { points } => {
                points.len() >= 3 && points.iter().flatten().all(|x| x.is_finite())
            }
        };
        if !ok {
            return Err((
                "shapes".to_owned(),
                "sizes must be positive and finite; a polygon needs at least 3 points".to_owned(),
            ));
        }
    }
    Ok(Part {
        name: part.name.clone(),
        x: affine(&part.x, "x")?,
        y: affine(&part.y, "y")?,
        angle: affine(&part.angle, "angle")?,
        shapes: part.shapes.clone(),
        color: part.color,
    })
}
