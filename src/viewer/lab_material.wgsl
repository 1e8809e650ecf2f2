// contactlab's surface shading (see material.rs): Lambert diffuse and a
// Blinn–Phong highlight from the scene's one directional light (the sun of
// visuals.rs), shadowed by its shadow map, over a sky/ground hemisphere
// ambient. Colours are linear; the render target converts to sRGB.
//
// Kept small on purpose: on a software rasterizer (Mesa's llvmpipe) Bevy's PBR
// shader, and even its general shadow lookup (cascade search, blending, soft
// shadows), cost several times more per pixel than this.
#import bevy_pbr::{
    forward_io::VertexOutput,
    mesh_view_bindings as view_bindings,
    mesh_view_types,
    shadow_sampling,
    shadows,
}

// Sky and ground colours of the ambient term, and the sun's strength.
const SKY: vec3<f32> = vec3<f32>(0.62, 0.65, 0.70);
const GROUND: vec3<f32> = vec3<f32>(0.32, 0.31, 0.30);
const SUN: f32 = 1.0;

// Grid lines on the face with normal u × v (material.rs, `Grid`).
struct Grid {
    origin: vec4<f32>, // a crossing; w: spacing (0: none)
    u: vec4<f32>,      // w: line width, px
    v: vec4<f32>,
    color: vec4<f32>,  // a: opacity
}

// material.rs, `LabMaterialUniform`.
struct LabMaterial {
    color: vec4<f32>,   // base colour (linear RGB), a: opacity when blended
    shading: vec4<f32>, // x: 1 for unlit, y: specular strength, z: Blinn–Phong exponent
    grid: Grid,
}

@group(#{MATERIAL_BIND_GROUP}) @binding(0) var<uniform> material: LabMaterial;

// How much of the pixel the grid's lines cover, given the position in cells
// and its screen-space derivative (cells per pixel). Where lines crowd closer
// than a few pixels they fade to their average coverage instead of aliasing.
fn grid_coverage(grid: Grid, cells: vec2<f32>, per_pixel: vec2<f32>) -> f32 {
    let w = max(per_pixel, vec2<f32>(1e-6));
    let to_line = abs(fract(cells + 0.5) - 0.5) / w; // px to the nearest line
    let half = 0.5 * grid.u.w;
    let sharp = clamp(half + 0.5 - min(to_line.x, to_line.y), 0.0, 1.0);
    let density = max(w.x, w.y);
    let average = min(1.0, grid.u.w * (w.x + w.y));
    return mix(sharp, average, clamp(4.0 * density - 0.5, 0.0, 1.0));
}

// 1 where the sun reaches p, 0 in shadow (2×2 hardware PCF between). The
// camera fits the light's single cascade to the view (camera.rs), so this is
// Bevy's directional lookup for cascade 0 with hardware 2×2 filtering.
fn sun_shadow(p: vec4<f32>, n: vec3<f32>) -> f32 {
    let light = &view_bindings::lights.directional_lights[0];
    let enabled = (((*light).flags & mesh_view_types::DIRECTIONAL_LIGHT_FLAGS_SHADOWS_ENABLED_BIT) != 0u)
        & ((*light).num_cascades != 0u);
    // Normal and depth bias against shadow acne, as Bevy does.
    let offset = (*light).shadow_normal_bias * (*light).cascades[0].texel_size * n
        + (*light).shadow_depth_bias * (*light).direction_to_light;
    let local = shadows::world_to_directional_light_local(0u, 0u, vec4<f32>(p.xyz + offset, p.w));
    let lit = shadow_sampling::sample_shadow_map_hardware(
        local.xy,
        local.z,
        i32((*light).depth_texture_base_index),
    );
    return select(1.0, lit, enabled & (local.w != 0.0));
}

// No branch in this file depends on uniforms alone (material, view or
// lights): such choices are `select`s, and conditions combine with the
// non-short-circuit `&` (naga turns `&&` and `||` into branches). Mesa 22.3's
// lavapipe (Debian 12) specializes a shader on the uniforms that decide a
// branch and recompiles it, without freeing the old one, whenever a uniform
// buffer changes: for every material drawn, every frame, about 0.8 MB and a
// few milliseconds each.
@fragment
fn fragment(in: VertexOutput, @builtin(front_facing) is_front: bool) -> @location(0) vec4<f32> {
    let albedo = material.color.rgb;
    let shading = material.shading;
    let grid = material.grid;
    let n = select(-1.0, 1.0, is_front) * normalize(in.world_normal);

    // Grid cells here, with their derivatives taken before any branch that
    // differs between neighbouring pixels.
    let from_origin = in.world_position.xyz - grid.origin.xyz;
    let cells = vec2<f32>(dot(from_origin, grid.u.xyz), dot(from_origin, grid.v.xyz))
        / max(grid.origin.w, 1e-9);
    let per_pixel = fwidth(cells);
    let on_grid = (grid.origin.w > 0.0) & (dot(n, cross(grid.u.xyz, grid.v.xyz)) > 0.99);
    let lines = select(0.0, grid.color.a * grid_coverage(grid, cells, per_pixel), on_grid);

    var lit = albedo * mix(GROUND, SKY, 0.5 + 0.5 * n.y);
    let light = &view_bindings::lights.directional_lights[0];
    let l = (*light).direction_to_light;
    let n_dot_l = select(0.0, dot(n, l), view_bindings::lights.n_directional_lights > 0u);
    if (n_dot_l > 0.0) {
        let view = &view_bindings::view;
        // Towards the eye: the view's backward axis when orthographic.
        let v = select(
            normalize((*view).world_from_view[2].xyz),
            normalize((*view).world_position - in.world_position.xyz),
            (*view).clip_from_view[3].w != 1.0,
        );
        let highlight = shading.y * pow(max(dot(n, normalize(l + v)), 0.0), shading.z);
        lit = lit + SUN * sun_shadow(in.world_position, n) * n_dot_l * (albedo + vec3<f32>(highlight));
    }
    let surface = mix(lit, grid.color.rgb, lines);
    // The alpha matters only to blended (translucent) materials.
    return vec4<f32>(select(surface, albedo, shading.x > 0.5), material.color.a);
}
