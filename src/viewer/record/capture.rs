//! Reading rendered frames back from the GPU: the viewer's window through
//! Bevy's [`Screenshot`], or the image `contactlab record` renders into
//! through a [`Readback`] that lives for exactly one frame.

use super::Recording;
use crate::record::{FramePixels, PixelOrder};
use bevy::prelude::*;
use bevy::render::gpu_readback::{Readback, ReadbackComplete};
use bevy::render::render_resource::TextureFormat;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured};

/// What a recording reads back.
#[derive(Debug, Clone, PartialEq)]
pub enum CaptureSource {
    /// The primary window, as the viewer shows it.
    Window,
    /// An offscreen render target (RGBA, sRGB) of the video's size.
    Image(Handle<Image>),
}

/// Marks the entity of a pending read-back of an offscreen frame.
#[derive(Component, Debug, Clone, Copy)]
pub(super) struct FrameReadback;

/// Requests the read-back of this frame.
pub(super) fn request_capture(mut commands: Commands, rec: Option<ResMut<Recording>>) {
    let Some(mut rec) = rec else {
        return;
    };
    if !std::mem::take(&mut rec.capture_now) {
        return;
    }
    let index = rec.next;
    rec.next += 1;
    match &rec.source {
        CaptureSource::Window => {
            commands.spawn(Screenshot::primary_window()).observe(
                move |captured: On<ScreenshotCaptured>, rec: Option<ResMut<Recording>>| {
                    window_captured(index, &captured.image, rec);
                },
            );
        }
        CaptureSource::Image(image) => {
            let size = (rec.spec.width, rec.spec.height);
            commands
                .spawn((Readback::texture(image.clone()), FrameReadback))
                .observe(
                    move |mut done: On<ReadbackComplete>,
                          mut commands: Commands,
                          rec: Option<ResMut<Recording>>| {
                        commands.entity(done.entity).despawn();
                        let data = std::mem::take(&mut done.event_mut().data);
                        image_captured(index, size, data, rec);
                    },
                );
        }
    }
}

/// A `Readback` copies its texture every frame it exists in: take it away
/// once the frame that requested it has been extracted for rendering.
pub(super) fn end_readback_requests(
    mut commands: Commands,
    requests: Query<Entity, (With<FrameReadback>, With<Readback>)>,
) {
    for entity in &requests {
        commands.entity(entity).remove::<Readback>();
    }
}

fn window_captured(index: u64, image: &Image, rec: Option<ResMut<Recording>>) {
    let Some(mut rec) = rec else {
        return;
    };
    let order = match image.texture_descriptor.format {
        TextureFormat::Bgra8Unorm | TextureFormat::Bgra8UnormSrgb => PixelOrder::Bgra,
        TextureFormat::Rgba8Unorm | TextureFormat::Rgba8UnormSrgb => PixelOrder::Rgba,
        other => {
            rec.error = Some(format!("cannot record a window of format {other:?}"));
            return;
        }
    };
    let Some(pixels) = image.data.clone() else {
        rec.error = Some(format!("frame {index}: the read-back has no pixels"));
        return;
    };
    rec.arrived.insert(
        index,
        FramePixels {
            width: image.width(),
            height: image.height(),
            order,
            pixels,
        },
    );
}

fn image_captured(
    index: u64,
    (width, height): (u32, u32),
    mut data: Vec<u8>,
    rec: Option<ResMut<Recording>>,
) {
    let Some(mut rec) = rec else {
        return;
    };
    if !unpad_rows(&mut data, width, height) {
        rec.error = Some(format!(
            "frame {index}: the read-back has {} bytes, too few for {width}x{height}",
            data.len()
        ));
        return;
    }
    rec.arrived.insert(
        index,
        FramePixels {
            width,
            height,
            order: PixelOrder::Rgba,
            pixels: data,
        },
    );
}

/// A texture copied to a buffer has rows padded to 256 bytes; the video wants
/// them packed, 4 bytes a pixel. Packs `data` in place; `false` if it is too
/// short for the size.
fn unpad_rows(data: &mut Vec<u8>, width: u32, height: u32) -> bool {
    let row = width as usize * 4;
    let rows = height as usize;
    let stride = row.div_ceil(256) * 256;
    if rows > 0 && data.len() < stride * (rows - 1) + row {
        return false;
    }
    if stride != row {
        for r in 1..rows {
            data.copy_within(r * stride..r * stride + row, r * row);
        }
    }
    data.truncate(row * rows);
    true
}

#[cfg(test)]
mod tests {
    use super::unpad_rows;

    #[test]
    fn rows_are_unpadded_to_four_bytes_a_pixel() {
        // 3 pixels a row = 12 bytes, padded to 256.
        let mut data = vec![0u8; 256 + 12];
        data[..12].copy_from_slice(&[1; 12]);
        data[256..].copy_from_slice(&[2; 12]);
        assert!(!unpad_rows(&mut data[..200].to_vec(), 3, 2));
        assert!(unpad_rows(&mut data, 3, 2));
        assert_eq!(data, [[1u8; 12], [2u8; 12]].concat());
        // 64 pixels = 256 bytes: no padding.
        let mut data = vec![7u8; 512];
        assert!(unpad_rows(&mut data, 64, 2));
        assert_eq!(data, vec![7u8; 512]);
    }
}
