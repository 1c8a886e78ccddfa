//! The tab row above the curves.

use crate::gui::intent::Intent;
use crate::gui::state::Tab;
use crate::gui::strings::tr;
use eframe::egui;

/// Draws the tabs; checkpoint segments only for training a model with blocks (an inference pass keeps nothing for
/// backward). A vision model's sequence tab sweeps its image size. They wrap onto a second row
/// when the window is narrow. `seq` false (a traced model) leaves the sequence tab out.
pub fn ui(ui: &mut egui::Ui, current: Tab, train: bool, image: bool, seq: bool) -> Vec<Intent> {
    let t = tr();
    let mut out = Vec::new();
    ui.horizontal_wrapped(|ui| {
        for (tab, label) in [
            (Tab::Batch, t.tab_batch),
            (Tab::Seq, if image { t.tab_image } else { t.tab_seq }),
            (Tab::Segments, t.tab_segments),
            (Tab::Timeline, t.tab_timeline),
            (Tab::Gpus, t.tab_gpus),
            (Tab::Compare, t.tab_compare),
            (Tab::Live, t.tab_live),
            (Tab::Options, t.tab_options),
        ] {
            if (tab == Tab::Segments && !train) || (tab == Tab::Seq && !seq) {
                continue;
            }
            if ui.selectable_label(current == tab, label).clicked() && current != tab {
                out.push(Intent::SetTab(tab));
            }
        }
    });
    out
}

/// The Serve mode's tabs: concurrency against context, the serving options and roadmap, Live.
/// Any other saved tab shows the concurrency curve.
pub fn ui_serve(ui: &mut egui::Ui, current: Tab) -> Vec<Intent> {
    let t = tr();
    let ts = crate::gui::strings::tr_serve();
    let mut out = Vec::new();
    let shown = if matches!(current, Tab::Options | Tab::Live) { current } else { Tab::Concurrency };
    ui.horizontal_wrapped(|ui| {
        for (tab, label) in
            [(Tab::Concurrency, ts.tab_concurrency), (Tab::Options, t.tab_options), (Tab::Live, t.tab_live)]
        {
            if ui.selectable_label(shown == tab, label).clicked() && shown != tab {
                out.push(Intent::SetTab(tab));
            }
        }
    });
    out
}
