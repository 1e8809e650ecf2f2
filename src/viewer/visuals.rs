//! What the scene looks like: the bodies' meshes ([`super::body_meshes`]),
//! a slab per surface with its grid drawn by the material, the light and the
//! background (with a faint gizmo grid behind planar scenes), the bodies'
//! colours and the planar depth.

use super::material::{Grid, LabMaterial};
use super::sim::{Sim, SurfaceVisual, physics_to_world, rigid, surface_placement};
use crate::model::Dimension;
use crate::scene::SystemSpec;
use crate::sim::Simulation;
use bevy::light::NotShadowCaster;
use bevy::prelude::*;

/// Background colour of the 3D view.
pub const BACKGROUND: Color = Color::srgb(0.105, 0.115, 0.135);

/// Light background, for slides and print.
pub const LIGHT_BACKGROUND: Color = Color::srgb(0.93, 0.94, 0.95);

/// Which background the 3D view has; the panel's "light background" toggle.
#[derive(Resource, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Backdrop {
    /// Light instead of dark.
    pub light: bool,
}

impl Backdrop {
    /// The clear colour.
    pub fn color(self) -> Color {
        if self.light {
            LIGHT_BACKGROUND
        } else {
            BACKGROUND
        }
    }

    /// Grid lines on the surfaces, and the faint grid behind planar scenes.
    fn grid_lines(self) -> (LinearRgba, LinearRgba) {
        if self.light {
            (
                LinearRgba::new(0.05, 0.06, 0.09, 0.35),
                LinearRgba::new(0.1, 0.12, 0.16, 0.12),
            )
        } else {
            (
                LinearRgba::new(0.7, 0.74, 0.82, 0.22),
                LinearRgba::new(0.3, 0.33, 0.4, 0.05),
            )
        }
    }
}

/// Body colours that read on dark and light backgrounds (mid luminance,
/// moderate saturation), used when the scene file gives none. They keep clear
/// of the contact-state colours (green, orange, grey).
pub const PALETTE: [[f32; 3]; 8] = [
    [0.30, 0.58, 0.93], // blue
    [0.86, 0.40, 0.62], // rose
    [0.62, 0.50, 0.92], // violet
    [0.25, 0.72, 0.78], // teal
    [0.87, 0.78, 0.32], // ochre
    [0.92, 0.45, 0.40], // coral
    [0.55, 0.68, 0.95], // periwinkle
    [0.78, 0.55, 0.85], // orchid
];

/// Spawns meshes for new body and surface entities and draws the grids.
pub struct VisualsPlugin;

impl Plugin for VisualsPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(ClearColor(BACKGROUND))
            .init_resource::<Backdrop>()
            .add_plugins(super::body_meshes::BodyMeshesPlugin)
            .add_systems(Startup, spawn_light)
            .add_systems(
                Update,
                (
                    attach_surface_meshes,
                    draw_grids,
                    apply_backdrop,
                    recolor_grids.after(attach_surface_meshes),
                ),
            );
    }
}

/// The body's display colour (sRGB).
pub fn body_color(sim: &Simulation, i: usize) -> Color {
    let from_file = match &sim.scene.file.system {
        SystemSpec::Rigid(spec) => spec.bodies.get(i).and_then(|b| b.color),
        SystemSpec::Linear(_) => None,
    };
    let [r, g, b] = from_file
        .filter(|c| c.iter().all(|x| x.is_finite()))
        .unwrap_or(PALETTE[i % PALETTE.len()]);
    Color::srgb(r.clamp(0.0, 1.0), g.clamp(0.0, 1.0), b.clamp(0.0, 1.0))
}

/// The colours a recording will show that its first frame may not: the
/// contact overlay's (contacts come later) and the bodies' (grains hidden
/// in a silo), as sRGB bytes: the recorder's GIF palette hints.
pub fn palette_hints(sim: &Simulation) -> Vec<[u8; 3]> {
    let count = rigid(sim).map_or(0, |s| s.bodies.len());
    let overlay = [
        super::overlay::STICK,
        super::overlay::SLIP,
        super::overlay::SEPARATING,
    ];
    let mut colors: Vec<[u8; 3]> = Vec::new();
    for color in overlay
        .into_iter()
        .chain((0..count).map(|i| body_color(sim, i)))
    {
        let [r, g, b, _] = color.to_srgba().to_u8_array();
        if !colors.contains(&[r, g, b]) {
            colors.push([r, g, b]);
        }
    }
    colors
}

/// Thickness of planar bodies along z, m.
pub fn planar_depth(sim: &Sim) -> f32 {
    (sim.model().length_scale() * 0.12).clamp(0.002, 1.0) as f32
}

fn apply_backdrop(backdrop: Res<Backdrop>, mut clear: ResMut<ClearColor>) {
    if backdrop.is_changed() {
        clear.0 = backdrop.color();
    }
}

fn spawn_light(mut commands: Commands) {
    commands.spawn((
        Name::new("sun"),
        DirectionalLight {
            illuminance: 9000.0,
            shadow_maps_enabled: true,
            ..default()
        },
        // From the front, above and a little to the left, in Bevy's y-up world
        // (the camera looks along −z in both planar and spatial scenes).
        Transform::default().looking_to(Vec3::new(0.35, -0.8, -0.55), Vec3::Y),
    ));
}

/// Spacing of a surface's grid lines, m.
fn grid_spacing(extent: f32) -> f32 {
    nice_spacing(extent / 12.0)
}

/// Slab dimensions of a surface: (thickness below the surface, depth along z
/// for planar scenes). A planar slab's face shows whole grid cells.
fn slab_size(sim: &Sim, extent: f32, dimension: Dimension) -> (f32, f32) {
    match dimension {
        Dimension::Planar => {
            let spacing = grid_spacing(extent);
            let rows = (0.12 * extent / spacing).round().clamp(1.0, 100.0);
            (rows * spacing, 4.0 * planar_depth(sim))
        }
        Dimension::Spatial => ((0.015 * extent).max(0.005), 2.0 * extent),
    }
}

/// Gives new surface entities a slab mesh whose top face is the surface, with
/// its grid drawn by the material: on the top face in space, on the front
/// face (towards the viewer) in the plane.
fn attach_surface_meshes(
    mut commands: Commands,
    sim: Res<Sim>,
    backdrop: Res<Backdrop>,
    added: Query<(Entity, &SurfaceVisual, &Transform), Added<SurfaceVisual>>,
    mut meshes: ResMut<Assets<Mesh>>,
    mut materials: ResMut<Assets<LabMaterial>>,
) {
    let Some(system) = rigid(&sim) else {
        return;
    };
    let to_world = physics_to_world(system.dimension);
    for (entity, surface, placement) in &added {
        let Some((_, _, extent)) = surface_placement(&sim, surface.0) else {
            continue;
        };
        let (thickness, depth) = slab_size(&sim, extent, system.dimension);
        // A half-space is infinite: drawn out to the horizon, its grid and
        // slab keeping the scale of the scene's extent.
        let drawn = (HORIZON * extent).min(MAX_DRAWN);
        let depth = match system.dimension {
            Dimension::Planar => depth,
            Dimension::Spatial => 2.0 * drawn,
        };
        let mesh = Mesh::from(Cuboid::new(2.0 * drawn, thickness, depth)).translated_by(Vec3::new(
            0.0,
            -thickness / 2.0,
            0.0,
        ));
        let spacing = grid_spacing(extent);
        let half_cells = ((2.0 * extent / spacing).round().clamp(1.0, 400.0)) / 2.0 * spacing;
        // In the slab's own axes: x along the surface, y its normal; u × v is
        // the face's outward normal.
        let (origin, u, v) = match system.dimension {
            Dimension::Planar => (Vec3::new(-half_cells, 0.0, depth / 2.0), Vec3::X, Vec3::Y),
            Dimension::Spatial => (
                Vec3::new(-half_cells, 0.0, half_cells),
                Vec3::X,
                Vec3::NEG_Z,
            ),
        };
        let rotation = to_world * placement.rotation;
        let mut material = LabMaterial::lit(TABLE, 0.0, 1.0);
        material.grid = Grid::new(
            to_world * placement.transform_point(origin),
            rotation * u,
            rotation * v,
            spacing,
            GRID_LINE_WIDTH,
            backdrop.grid_lines().0,
        );
        // The table takes the bodies' shadows but casts none: it would only
        // fill the shadow map.
        commands.entity(entity).insert((
            Mesh3d(meshes.add(mesh)),
            MeshMaterial3d(materials.add(material)),
            NotShadowCaster,
        ));
    }
}

/// How far a surface is drawn, in its scene's extents.
const HORIZON: f32 = 100.0;

/// Half the largest size a surface is drawn at, m (the far plane is at
/// 1000 m).
const MAX_DRAWN: f32 = 2000.0;

/// Colour of the tables (sRGB).
const TABLE: Color = Color::srgb(0.32, 0.33, 0.36);

/// Width of the tables' grid lines, px.
const GRID_LINE_WIDTH: f32 = 1.5;

/// The grid lines take the backdrop's colour.
fn recolor_grids(
    backdrop: Res<Backdrop>,
    surfaces: Query<&MeshMaterial3d<LabMaterial>, With<SurfaceVisual>>,
    mut materials: ResMut<Assets<LabMaterial>>,
) {
    if !backdrop.is_changed() {
        return;
    }
    let color = backdrop.grid_lines().0;
    for handle in &surfaces {
        if let Some(mut material) = materials.get_mut(&handle.0) {
            material.grid.color = color;
        }
    }
}

/// A round grid spacing (1, 2 or 5 × 10ⁿ) close to `approx`.
pub fn nice_spacing(approx: f32) -> f32 {
    if !(approx.is_finite() && approx > 0.0) {
        return 1.0;
    }
    let power = 10f32.powf(approx.log10().floor());
    let m = approx / power;
    let step = if m < 1.5 {
        1.0
    } else if m < 3.5 {
        2.0
    } else if m < 7.5 {
        5.0
    } else {
        10.0
    };
    step * power
}

/// The faint background grid behind planar scenes (the tables' grids are
/// drawn by their material).
fn draw_grids(mut gizmos: Gizmos, sim: Res<Sim>, backdrop: Res<Backdrop>) {
    if rigid(&sim).map(|s| s.dimension) != Some(Dimension::Planar) {
        return;
    }
    let (_, faint) = backdrop.grid_lines();
    let hint = &sim.scene.camera;
    let half = (hint.distance as f32).clamp(0.05, 1e3) * 4.0;
    let spacing = nice_spacing(hint.distance as f32 / 4.0);
    let cells = ((2.0 * half / spacing).round() as u32).clamp(1, 400);
    let centre = Vec3::new(
        (hint.target[0] as f32 / spacing).round() * spacing,
        (hint.target[1] as f32 / spacing).round() * spacing,
        -2.0 * planar_depth(&sim) - 1e-2,
    );
    gizmos.grid(
        Isometry3d::from_translation(centre),
        UVec2::splat(cells),
        Vec2::splat(spacing),
        faint,
    );
}
