//! Force elements: linear springs, dampers and spring–dampers between two
//! points of two bodies (or a body and the world), and torsional ones across a
//! planar revolute joint. Each is written as in Anitescu–Potra (26): a scalar
//! measure φ(q) (distance minus rest length, or relative angle minus rest angle)
//! and its gradient ∇φ in velocity coordinates; the force is
//! −(γ φ + δ ∇φᵀv) ∇φ, so a stepper can put γ∇φ∇φᵀ and δ∇φ∇φᵀ into M̂ (32).
//!
//! Coefficients: a spring part takes the element's own `stiffness` when the
//! scene gives one, otherwise the scene-wide [`Coefficients::stiffness`]; a
//! damper part likewise takes `damping` or [`Coefficients::damping`]. So the
//! viewer's sliders drive every element that does not fix its own value.

use super::rigid::{Dimension, RigidSystem};
use nalgebra::{DVector, Vector3};
use serde::{Deserialize, Serialize};

/// Which parts an element has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ElementKind {
    /// A spring: energy ½ γ φ².
    Spring,
    /// A damper: force −δ (∇φᵀv) ∇φ.
    Damper,
    /// Both on the same pair of points (the φ̄ terms of (26)).
    SpringDamper,
}

impl ElementKind {
    /// Whether there is a spring part.
    pub fn has_spring(self) -> bool {
        matches!(self, Self::Spring | Self::SpringDamper)
    }
    /// Whether there is a damper part.
    pub fn has_damper(self) -> bool {
        matches!(self, Self::Damper | Self::SpringDamper)
    }
}

/// What φ measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Measure {
    /// The distance between the two anchors, m.
    Distance,
    /// The relative rotation angle of a with respect to b: θ_a − θ_b about z
    /// in the plane; in space the twist about the element's [`Twist`] axis
    /// (wrapped to (−π, π]), rad.
    Angle,
}

/// The axes of a spatial torsional element: the twist of a relative to b about
/// `axis_a` is the angle from b's reference vector to a's, both ⟂ the axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Twist {
    /// The twist axis in a's frame (unit).
    pub axis_a: Vector3<f64>,
    /// A unit vector ⟂ the axis, in a's frame.
    pub reference_a: Vector3<f64>,
    /// The same vector at the initial pose, in b's frame (the world's for the
    /// world).
    pub reference_b: Vector3<f64>,
}

/// A spring, damper or spring–damper between body `a` and body `b` (`None`:
/// the world).
#[derive(Debug, Clone, PartialEq)]
pub struct ForceElement {
    /// Unique name (also the label the viewer draws).
    pub name: String,
    /// Spring, damper or both.
    pub kind: ElementKind,
    /// Distance or angle.
    pub measure: Measure,
    /// The first body.
    pub a: usize,
    /// The second body, or the world.
    pub b: Option<usize>,
    /// Anchor in a's body frame, m.
    pub anchor_a: Vector3<f64>,
    /// Anchor in b's body frame (world frame for the world), m.
    pub anchor_b: Vector3<f64>,
    /// Where φ = 0: rest length (m) or rest angle (rad).
    pub rest: f64,
    /// The twist axes of a spatial `Angle` element (`None` in the plane).
    pub twist: Option<Twist>,
    /// Own spring stiffness γ (N/m or N·m/rad); `None`: the scene-wide [`Coefficients::stiffness`].
    pub stiffness: Option<f64>,
    /// Own damping δ (N·s/m or N·m·s/rad); `None`: the scene-wide [`Coefficients::damping`].
    pub damping: Option<f64>,
}

/// The scene-wide coefficients of the springs and dampers that set none of
/// their own (the live parameters' stiffness and damping).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Coefficients {
    /// Spring stiffness γ, N/m (N·m/rad for an angle).
    pub stiffness: f64,
    /// Damping δ, N·s/m (N·m·s/rad for an angle).
    pub damping: f64,
}

/// One element evaluated at q with the live coefficients.
#[derive(Debug, Clone, PartialEq)]
pub struct ElementState {
    /// φ(q): stretch beyond the rest length (m) or angle beyond rest (rad).
    pub phi: f64,
    /// ∇φ in velocity coordinates.
    pub gradient: DVector<f64>,
    /// γ (0 without a spring part).
    pub stiffness: f64,
    /// δ (0 without a damper part).
    pub damping: f64,
}

impl ForceElement {
    /// γ in effect under the scene-wide `defaults` (0 without a spring part).
    pub fn stiffness(&self, defaults: Coefficients) -> f64 {
        if self.kind.has_spring() {
            self.stiffness.unwrap_or(defaults.stiffness)
        } else {
            0.0
        }
    }

    /// δ in effect under the scene-wide `defaults` (0 without a damper part).
    pub fn damping(&self, defaults: Coefficients) -> f64 {
        if self.kind.has_damper() {
            self.damping.unwrap_or(defaults.damping)
        } else {
            0.0
        }
    }

    /// The anchors in the world at q, m.
    pub fn anchors(&self, system: &RigidSystem, q: &DVector<f64>) -> (Vector3<f64>, Vector3<f64>) {
        let pa = system.world_point(q, self.a, &self.anchor_a);
        let pb = match self.b {
            Some(b) => system.world_point(q, b, &self.anchor_b),
            None => self.anchor_b,
        };
        (pa, pb)
    }

    /// The current value of the measure (distance or relative angle).
    pub fn measure_at(&self, system: &RigidSystem, q: &DVector<f64>) -> f64 {
        match self.measure {
            Measure::Distance => {
                let (pa, pb) = self.anchors(system, q);
                (pa - pb).norm()
            }
            Measure::Angle => match (system.dimension, self.twist) {
                (Dimension::Spatial, Some(twist)) => {
                    let rotation = |i: Option<usize>| {
                        i.map_or(nalgebra::UnitQuaternion::identity(), |i| {
                            system.rotation(q, i)
                        })
                    };
                    let axis = rotation(Some(self.a)) * twist.axis_a;
                    let from = rotation(self.b) * twist.reference_b;
                    let to = rotation(Some(self.a)) * twist.reference_a;
                    from.cross(&to).dot(&axis).atan2(from.dot(&to))
                }
                _ => {
                    let angle = |i: Option<usize>| i.map_or(0.0, |i| planar_angle(system, q, i));
                    angle(Some(self.a)) - angle(self.b)
                }
            },
        }
    }

    /// The world axis about which an `Angle` element measures (z in the plane).
    fn angle_axis(&self, system: &RigidSystem, q: &DVector<f64>) -> Vector3<f64> {
        match self.twist {
            Some(twist) if system.dimension == Dimension::Spatial => {
                system.rotation(q, self.a) * twist.axis_a
            }
            _ => Vector3::z(),
        }
    }

    /// φ, ∇φ, γ and δ at q: one measure, or for a distance element of
    /// rest length 0 one per world axis ([`Self::isotropic`]).
    pub fn evaluate(
        &self,
        system: &RigidSystem,
        q: &DVector<f64>,
        defaults: Coefficients,
    ) -> Vec<ElementState> {
        let state = |phi: f64, gradient: DVector<f64>| ElementState {
            phi,
            gradient,
            stiffness: self.stiffness(defaults),
            damping: self.damping(defaults),
        };
        match self.measure {
            Measure::Distance if self.isotropic() => {
                // ½γ|d|² = Σₖ ½γ dₖ²: φₖ = dₖ along each world axis, with
                // gradients defined everywhere.
                let (pa, pb) = self.anchors(system, q);
                let d = pa - pb;
                let axes = match system.dimension {
                    Dimension::Planar => 2,
                    Dimension::Spatial => 3,
                };
                (0..axes)
                    .map(|k| {
                        let axis = Vector3::ith(k, 1.0);
                        state(d[k], self.point_gradient(system, q, &pa, &pb, &axis))
                    })
                    .collect()
            }
            Measure::Distance => {
                let (pa, pb) = self.anchors(system, q);
                let d = pa - pb;
                // At zero length the direction is undefined; any unit vector is a
                // subgradient, and x keeps the step well defined.
                let u = if d.norm() > 1e-12 {
                    d / d.norm()
                } else {
                    Vector3::x()
                };
                let phi = d.norm() - self.rest;
                vec![state(phi, self.point_gradient(system, q, &pa, &pb, &u))]
            }
            Measure::Angle => {
                // dφ/dt = (ω_a − ω_b)·axis (exact in the plane; in space while
                // the joint keeps the axes aligned).
                let mut gradient = DVector::zeros(system.dof());
                let axis = self.angle_axis(system, q);
                let mut column = gradient.column_mut(0);
                system.add_rotation_gradient(q, self.a, &axis, 1.0, &mut column);
                if let Some(b) = self.b {
                    system.add_rotation_gradient(q, b, &axis, -1.0, &mut column);
                }
                vec![state(self.measure_at(system, q) - self.rest, gradient)]
            }
        }
    }

    /// Whether the element is a distance element of rest length 0, taken as
    /// the isotropic spring–damper ½γ|d|² (force −γd − δḋ): written as one
    /// measure φₖ = dₖ per world axis. As the one measure |d| it would have
    /// no direction at d = 0, and Anitescu–Potra's M̂ (32) would take only
    /// the radial part γuuᵀ of its stiffness γI, so a stiff one flips across
    /// its anchor from step to step.
    pub fn isotropic(&self) -> bool {
        self.measure == Measure::Distance && self.rest == 0.0
    }

    /// The gradient of u·(p_a − p_b) in velocity coordinates, u fixed.
    fn point_gradient(
        &self,
        system: &RigidSystem,
        q: &DVector<f64>,
        pa: &Vector3<f64>,
        pb: &Vector3<f64>,
        u: &Vector3<f64>,
    ) -> DVector<f64> {
        let mut gradient = DVector::zeros(system.dof());
        let mut column = gradient.column_mut(0);
        system.add_point_gradient(q, self.a, pa, u, 1.0, &mut column);
        if let Some(b) = self.b {
            system.add_point_gradient(q, b, pb, u, -1.0, &mut column);
        }
        gradient
    }
}

/// A planar body's angle θ (the coordinate itself, not wrapped, so a torsional
/// spring can wind more than a turn). Only planar systems get here: spatial `Angle` elements always have a twist.
fn planar_angle(_system: &RigidSystem, q: &DVector<f64>, i: usize) -> f64 {
    q[3 * i + 2]
}

/// The force (26) of all elements, −Σ (γφ + δ∇φᵀv)∇φ, N.
pub fn element_forces(
    system: &RigidSystem,
    q: &DVector<f64>,
    v: &DVector<f64>,
    defaults: Coefficients,
) -> DVector<f64> {
    let mut k = DVector::zeros(system.dof());
    for e in system
        .elements
        .iter()
        .flat_map(|element| element.evaluate(system, q, defaults))
    {
        let magnitude = e.stiffness * e.phi + e.damping * e.gradient.dot(v);
        k -= e.gradient * magnitude;
    }
    k
}

/// The energy stored in the springs, Σ ½ γ φ², J.
pub fn spring_energy(system: &RigidSystem, q: &DVector<f64>, defaults: Coefficients) -> f64 {
    system
        .elements
        .iter()
        .map(|element| {
            let gamma = element.stiffness(defaults);
            if gamma == 0.0 {
                return 0.0;
            }
            let phi = element.measure_at(system, q) - element.rest;
            0.5 * gamma * phi * phi
        })
        .sum()
}
