//! What panels ask the app to do; applied by `VramApp::apply` at the end of the frame.

use super::state::{Settings, Tab};

/// A request from a panel.
#[derive(Clone, Debug, PartialEq)]
#[must_use]
pub enum Intent {
    /// Replace the settings; `knob` names what changed so slider drags coalesce into one undo step.
    Edit {
        settings: Box<Settings>,
        knob: &'static str,
    },
    /// Load a model file from this path.
    LoadPath(String),
    /// Fetch the model this Hub id (`ORG/NAME[@REV]`) names, on a background thread.
    FetchHub(String),
    /// Stop waiting for the Hub fetch in flight (its answer is dropped when it comes).
    CancelHub,
    /// Open the file dialog.
    OpenDialog,
    /// Export the plan in a format (the save prompt asks where).
    Export(crate::export::Format),
    /// Export the Serve mode's answer with its options and roadmap: as text (`json: false`, what
    /// `vramscope serve` and `serve --options` / `--roadmap` print) or as `serve --roadmap --json`.
    ExportServe {
        json: bool,
    },
    /// Save the slide: the chart with its title, caption, verdict and footer (a 1920×1080 slide
    /// at 2× pixel density, light theme, the interface's language).
    ExportSlide,
    /// Save a PNG of the window, or of the breakdown chart alone.
    ExportPng {
        chart_only: bool,
    },
    /// Write the export the save prompt is for to this path.
    SaveAs(String),
    /// Close the save prompt without writing.
    CancelSave,
    /// Set the run priced in the Options tab: tokens (billions) and MFU.
    SetRunCost {
        tokens_b: f64,
        mfu: f64,
    },
    /// Pin the current scenario.
    Pin,
    /// Remove all pins.
    ClearPins,
    Undo,
    Redo,
    Reset,
    SetTab(Tab),
    /// Show one event of the timeline in "Why this much?" (None: the peak).
    SelectEvent(Option<usize>),
    /// Read a memory snapshot pickle and lay it over the timeline.
    OpenSnapshot(String),
    /// Remove the measured overlays.
    ClearSnapshots,
    SetDark(bool),
    /// Presentation layout on or off (on: the controls fold into a strip).
    SetPresentation(bool),
    /// A step of the Learn view (start, go to a lesson, next, back, leave).
    Learn(super::learn::LearnStep),
    /// Fold the controls into a slim strip (`true`) or open them.
    CollapseControls(bool),
    /// The interface language.
    SetLang(crate::gui::lang::Lang),
    /// Full screen on (`true`) or off.
    Fullscreen(bool),
    /// Zoom in, out or back to 100 % (kept in the saved view).
    Zoom(super::state::ZoomStep),
    /// Open (`true`) or close the keyboard-shortcut window.
    ShowShortcuts(bool),
    Quit,
}
