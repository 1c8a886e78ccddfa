//! One colour per memory component, the same everywhere. Chosen for distinct lightness (readable
//! in greyscale and by colour-blind viewers; Okabe–Ito hues) on light and dark backgrounds.

use crate::explain::Component;
use eframe::egui::Color32;

/// Fill colour of a component.
pub fn color(c: Component) -> Color32 {
    match c {
        Component::Parameters => Color32::from_rgb(0, 114, 178), // blue
        Component::Gradients => Color32::from_rgb(86, 180, 233), // sky
        Component::OptimizerStates => Color32::from_rgb(0, 158, 115), // green
        Component::Activations => Color32::from_rgb(230, 159, 0), // orange
        Component::KvCache => Color32::from_rgb(204, 121, 167),  // purple
        Component::Temporaries => Color32::from_rgb(213, 94, 0), // vermillion
        Component::ZeroBuckets => Color32::from_rgb(240, 228, 66), // yellow
        Component::Overhead => Color32::from_rgb(150, 150, 150), // grey
    }
}

/// Text colour readable on top of `color(c)`.
pub fn text_on(c: Component) -> Color32 {
    match c {
        Component::Gradients | Component::Activations | Component::ZeroBuckets | Component::Overhead => {
            Color32::BLACK
        }
        _ => Color32::WHITE,
    }
}

/// Colour of "fits" / "does not fit".
pub fn verdict(fits: bool) -> Color32 {
    if fits { Color32::from_rgb(0, 140, 90) } else { Color32::from_rgb(200, 40, 30) }
}
