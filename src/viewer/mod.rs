//! The interactive viewer (placeholder while it is written).
/// Opens the viewer.
pub fn run(_args: crate::cli::ViewArgs) -> Result<(), String> {
    Err("the viewer is not written yet".to_owned())
}
