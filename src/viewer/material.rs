//! The one material of the viewer and the recordings: [`LabMaterial`], a base
//! colour lit by the scene's directional light (Lambert plus a Blinn–Phong
//! highlight, shadowed by the light's shadow map) over a hemisphere ambient,
//! or unlit (`lab_material.wgsl`).
//!
//! Why not Bevy's `StandardMaterial`: its physically based shader costs
//! several times more per pixel, and per-pixel shading is what a recording on a
//! machine without a GPU (Mesa's llvmpipe) spends its time on. With a table
//! filling most of a 1280×720 frame, `StandardMaterial` took about 0.35 s per
//! frame there; this material keeps shading, highlights and shadows at a
//! fraction of that.
//!
//! The shader never branches on uniforms alone (see the note in
//! `lab_material.wgsl`): on Debian 12's lavapipe such a branch made the driver
//! recompile the shader for every material drawn in every frame and keep the
//! old copies, which halved the recording speed and grew the process by
//! about 7 MB a frame with the four balls.

use bevy::asset::embedded_asset;
use bevy::mesh::MeshVertexBufferLayoutRef;
use bevy::pbr::{Material, MaterialPipeline, MaterialPipelineKey, MaterialPlugin};
use bevy::prelude::*;
use bevy::render::render_asset::RenderAssets;
use bevy::render::render_resource::{
    AsBindGroup, AsBindGroupShaderType, RenderPipelineDescriptor, ShaderType,
    SpecializedMeshPipelineError,
};
use bevy::render::texture::GpuImage;
use bevy::shader::ShaderRef;

const SHADER: &str = "embedded://contactlab/viewer/lab_material.wgsl";

/// Registers [`LabMaterial`] and its shader.
pub struct LabMaterialPlugin;

impl Plugin for LabMaterialPlugin {
    fn build(&self, app: &mut App) {
        embedded_asset!(app, "lab_material.wgsl");
        app.add_plugins(MaterialPlugin::<LabMaterial>::default());
    }
}

/// A surface's colour and how it takes light: one uniform,
/// [`LabMaterialUniform`].
#[derive(Asset, TypePath, AsBindGroup, Debug, Clone)]
#[bind_group_data(LabMaterialKey)]
#[uniform(0, LabMaterialUniform)]
pub struct LabMaterial {
    /// Base colour.
    pub color: LinearRgba,
    /// (1 = unlit, specular strength, Blinn–Phong exponent, unused).
    shading: Vec4,
    /// Grid lines drawn on one face, antialiased in the shader (so they do
    /// not shimmer without multisampling).
    pub grid: Grid,
    /// Draw both faces (flat drawings seen from either side).
    pub double_sided: bool,
    /// Opaque, or blended over what lies behind by the colour's alpha
    /// ([`LabMaterial::translucent`]).
    pub alpha_mode: AlphaMode,
}

/// What the shader reads of a [`LabMaterial`] (`LabMaterial` in
/// `lab_material.wgsl`).
#[derive(ShaderType, Debug, Clone, Copy, PartialEq)]
pub struct LabMaterialUniform {
    /// Base colour (linear).
    pub color: LinearRgba,
    /// (1 = unlit, specular strength, Blinn–Phong exponent, unused).
    pub shading: Vec4,
    /// The grid's lines.
    pub grid: Grid,
}

impl AsBindGroupShaderType<LabMaterialUniform> for LabMaterial {
    fn as_bind_group_shader_type(&self, _images: &RenderAssets<GpuImage>) -> LabMaterialUniform {
        LabMaterialUniform {
            color: self.color,
            shading: self.shading,
            grid: self.grid,
        }
    }
}

impl LabMaterial {
    /// A lit surface; `specular` scales the highlight (0 = matte), `shininess`
    /// is the Blinn–Phong exponent (larger = smaller, sharper highlight).
    pub fn lit(color: Color, specular: f32, shininess: f32) -> Self {
        Self {
            color: color.into(),
            shading: Vec4::new(0.0, specular.max(0.0), shininess.max(1.0), 0.0),
            grid: Grid::default(),
            double_sided: false,
            alpha_mode: AlphaMode::Opaque,
        }
    }

    /// The same surface seen through: blended over what lies behind it with
    /// opacity `alpha` (0–1), both faces drawn. Containers are drawn so, so
    /// that the grains inside them show.
    pub fn translucent(mut self, alpha: f32) -> Self {
        self.color.alpha = alpha.clamp(0.0, 1.0);
        self.double_sided = true;
        self.alpha_mode = AlphaMode::Blend;
        self
    }

    /// A flat colour, both faces, no light or shadow.
    pub fn unlit(color: Color) -> Self {
        Self {
            color: color.into(),
            shading: Vec4::new(1.0, 0.0, 1.0, 0.0),
            grid: Grid::default(),
            double_sided: true,
            alpha_mode: AlphaMode::Opaque,
        }
    }

    /// Whether light and shadow are ignored.
    pub fn is_unlit(&self) -> bool {
        self.shading.x > 0.5
    }
}

/// Square grid lines on the face of a surface whose outward normal is
/// `u × v`: lines through `origin + i·spacing·u` along `v` and through
/// `origin + j·spacing·v` along `u` (world frame, m). The default draws none.
#[derive(ShaderType, Debug, Clone, Copy, PartialEq)]
pub struct Grid {
    /// A point where two lines cross; `w` is the spacing, m (0: no grid).
    pub origin: Vec4,
    /// First line direction (unit); `w` is the line width in pixels.
    pub u: Vec4,
    /// Second line direction (unit, perpendicular to `u`).
    pub v: Vec4,
    /// Line colour; alpha is its opacity over the surface.
    pub color: LinearRgba,
}

impl Default for Grid {
    fn default() -> Self {
        Self {
            origin: Vec4::ZERO,
            u: Vec4::X,
            v: Vec4::Z,
            color: LinearRgba::NONE,
        }
    }
}

impl Grid {
    /// Lines `spacing` apart and `width` pixels wide through `origin` along
    /// `u` and `v` (world frame), drawn on the face whose normal is `u × v`.
    pub fn new(
        origin: Vec3,
        u: Vec3,
        v: Vec3,
        spacing: f32,
        width: f32,
        color: LinearRgba,
    ) -> Self {
        Self {
            origin: origin.extend(spacing.max(0.0)),
            u: u.normalize_or(Vec3::X).extend(width.max(0.0)),
            v: v.normalize_or(Vec3::Z).extend(0.0),
            color,
        }
    }
}

/// The part of a [`LabMaterial`] that selects a pipeline.
#[repr(C)]
#[derive(Eq, PartialEq, Hash, Copy, Clone)]
pub struct LabMaterialKey {
    double_sided: bool,
}

impl From<&LabMaterial> for LabMaterialKey {
    fn from(material: &LabMaterial) -> Self {
        Self {
            double_sided: material.double_sided,
        }
    }
}

impl Material for LabMaterial {
    fn fragment_shader() -> ShaderRef {
        SHADER.into()
    }

    fn alpha_mode(&self) -> AlphaMode {
        self.alpha_mode
    }

    fn specialize(
        _pipeline: &MaterialPipeline,
        descriptor: &mut RenderPipelineDescriptor,
        _layout: &MeshVertexBufferLayoutRef,
        key: MaterialPipelineKey<Self>,
    ) -> Result<(), SpecializedMeshPipelineError> {
        if key.bind_group_data.double_sided {
            descriptor.primitive.cull_mode = None;
        }
        Ok(())
    }
}
