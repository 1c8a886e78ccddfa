//! What the window writes and compares: every export goes through the save prompt (no file
//! dialog: none exists without an xdg portal or zenity), the report and the slide carry the
//! pinned scenarios, QLoRA is named as such, and Compare's table scrolls to its last column.

use super::harness;
use eframe::egui::{Key, accesskit::Role};
use egui_kittest::kittest::Queryable;
use vramscope::gui::state::{Pinned, Settings, Tab};

/// A QLoRA scenario: LoRA r=16 over an NF4 base with double quantization.
fn qlora() -> Settings {
    Settings {
        lora_enabled: true,
        lora_rank: 16,
        base_quant: vramscope::estimate::BaseQuant::Nf4,
        ..Settings::default()
    }
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("vramscope-gui-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Opens File → Export → `label`.
fn menu_export(h: &mut egui_kittest::Harness<'static, vramscope::gui::app::VramApp>, label: &str) {
    h.get_by_label("File").click();
    h.run();
    h.get_by_label("Export").hover();
    h.run();
    h.get_by_label(label).click();
    h.run();
}

#[test]
fn the_report_is_saved_from_the_prompt_with_no_dialog_and_carries_qlora_and_the_pins() {
    let mut h = harness();
    h.state_mut().state.settings = qlora();
    h.state_mut().state.pinned.push(Pinned { label: "A".into(), settings: Settings { batch: 4, ..qlora() } });
    h.run();
    menu_export(&mut h, "Plan report (Markdown)…");
    // the prompt, prefilled with the default name in the current folder
    let prompt = h.state().save_prompt.clone().expect("the save prompt is open");
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(std::path::PathBuf::from(&prompt.path), cwd.join("vramscope-md.md"));
    assert!(h.query_by_label("Save").is_some() && h.query_by_label("Cancel").is_some());
    // a path typed in the field; Enter saves
    let dir = temp_dir("report");
    let path = dir.join("plan.md");
    let _ = std::fs::remove_file(&path);
    h.state_mut().save_prompt.as_mut().unwrap().path = path.display().to_string();
    h.run();
    h.key_press(Key::Enter);
    // the chart's PNG beside the report waits on a screenshot: the frames keep coming
    h.run_steps(3);
    assert!(h.state().save_prompt.is_none(), "the prompt closes");
    let md = std::fs::read_to_string(&path).expect("the report is written");
    assert!(md.contains("| method | QLoRA r=16, NF4 base (double quant), bf16 |"), "{md}");
    assert!(md.contains("no offload") && !md.contains("offload None"), "{md}");
    assert!(md.contains("## Compared with the pinned scenarios"), "{md}");
    assert!(md.contains("- **A**: Llama-3.1-8B · QLoRA r=16, NF4 base (double quant), bf16 · b4 × "), "{md}");
    assert!(md.contains("| component | current | A | current − A |"), "{md}");
    let status = &h.state().status.1;
    assert!(status.contains("plan.md"), "{status}");
}

#[test]
fn the_slide_and_the_chart_are_saved_from_the_prompt() {
    let mut h = harness();
    h.state_mut().state.settings = qlora();
    h.run();
    let dir = temp_dir("slide");
    // Cancel writes nothing
    menu_export(&mut h, "Slide (PNG)…");
    let prompt = h.state().save_prompt.clone().expect("prompt");
    assert!(prompt.path.ends_with("vramscope-llama-3.1-8b-h100-80gb.png"), "{}", prompt.path);
    h.get_by_label("Cancel").click();
    h.run();
    assert!(h.state().save_prompt.is_none());
    // Save writes the slide (on its own thread)
    menu_export(&mut h, "Slide (PNG)…");
    let slide = dir.join("slide.png");
    let _ = std::fs::remove_file(&slide);
    h.state_mut().save_prompt.as_mut().unwrap().path = slide.display().to_string();
    h.run();
    h.get_by_label("Save").click();
    for _ in 0..600 {
        h.run();
        if h.state().status.1.contains("PNG written") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let png = std::fs::read(&slide).expect("the slide is written");
    assert_eq!(&png[1..4], b"PNG");
    // a missing folder is refused in the prompt, not by a failed write
    menu_export(&mut h, "Breakdown chart as PNG…");
    h.state_mut().save_prompt.as_mut().unwrap().path = "/no/such/folder/chart.png".into();
    h.run();
    assert!(h.query_by_label_contains("does not exist").is_some());
    h.key_press(Key::Escape);
    h.run();
    assert!(h.state().save_prompt.is_none(), "Escape cancels");
}

#[test]
fn compare_names_qlora_and_scrolls_to_its_last_column_with_the_controls_open() {
    // two pins, and the most the window keeps (four)
    for labels in [&["A", "B"][..], &["A", "B", "C", "D"][..]] {
        let mut h = harness();
        h.state_mut().state.settings = qlora();
        for (i, label) in labels.iter().enumerate() {
            let settings = Settings { batch: 2 + i as u64, ..qlora() };
            h.state_mut().state.pinned.push(Pinned { label: (*label).into(), settings });
        }
        h.state_mut().state.view.tab = Tab::Compare;
        assert!(!h.state().state.view.controls_collapsed, "the controls are open");
        h.run();
        // the legend: what each column is
        let named = h.query_all_by_label_contains("QLoRA r=16, NF4 base (double quant)").count();
        assert_eq!(named, 1 + labels.len(), "current and each pin named by its method");
        let last_label = format!("current − {}", labels[labels.len() - 1]);
        h.get_by_label(&last_label).scroll_to_me();
        h.run();
        let r = h.get_by_label(&last_label).rect();
        let controls = h.get_by_role_and_label(Role::Slider, "Micro-batch").rect();
        assert!(r.right() <= 1280.0 && r.left() > controls.right(), "{last_label} in view: {r:?}");
    }
}
