//! The controls panel: every knob of the scenario, each with a tooltip saying what it changes in
//! memory terms. Returns an `Edit` intent when something changed.

use crate::estimate::{AttentionImpl, BaseQuant, Checkpointing, Mode, Optimizer};
use crate::gpu;
use crate::gui::intent::Intent;
use crate::gui::state::{ModelChoice, Settings};
use crate::gui::strings::tr;
use crate::model::preset;
use crate::units::Precision;
use eframe::egui::{self, RichText};

fn section(ui: &mut egui::Ui, title: &str) {
    ui.add_space(8.0);
    ui.label(RichText::new(title).strong().small());
}

/// Draws the controls. `path` is the text of the path field, `hub` the Hub id field's.
pub fn ui(
    ui: &mut egui::Ui,
    current: &Settings,
    path: &mut String,
    hub: super::hub::HubField<'_>,
) -> Vec<Intent> {
    let mut s = current.clone();
    let mut knob: &'static str = "";
    let mut out = model_section(ui, current, &mut s, &mut knob, path, hub);
    mode_row(ui, &mut s, &mut knob);
    if s.serving {
        super::serve::controls::ui(ui, &mut s, &mut knob);
        hardware(ui, &mut s, &mut knob);
        if !knob.is_empty() && s != *current {
            out.push(Intent::Edit { settings: Box::new(s), knob });
        }
        return out;
    }
    let train = s.mode == Mode::Train;
    // the model is chosen above: built once a frame for the controls below
    let spec = s.model_spec().ok();
    precision(ui, &mut s, &mut knob);
    if train {
        let traced = spec.as_ref().is_some_and(|m| m.traced().is_some());
        optimizer(ui, &mut s, &mut knob);
        stack(ui, &mut s, traced, &mut knob);
    }
    shape(ui, &mut s, &mut knob);
    // a convolutional network has no attention, and neither checkpointing nor LoRA applies; a
    // traced model's attention and what trains are its trace's, its blocks checkpoint
    let conv = spec.as_ref().is_some_and(|m| m.net().is_some());
    match spec.as_ref().and_then(|m| m.traced()) {
        Some(t) if train => super::traced::checkpoint(ui, &mut s, t, &mut knob),
        Some(_) => {}
        None if !conv => {
            attention(ui, &mut s, &mut knob);
            if train {
                mixer(ui, &mut s, &mut knob);
                checkpointing_and_lora(ui, &mut s, &mut knob);
            }
        }
        None => {}
    }
    base_weights(ui, &mut s, &mut knob);
    parallel_section(ui, &mut s, &mut knob);
    hardware(ui, &mut s, &mut knob);

    if !knob.is_empty() && s != *current {
        out.push(Intent::Edit { settings: Box::new(s), knob });
    }
    out
}

/// `knob` names what changed.
pub(super) fn mark(changed: bool, name: &'static str, knob: &mut &'static str) {
    if changed {
        *knob = name;
    }
}

/// The model: a preset, a generic model of N billion parameters, a Hub id or a file; its intents
/// (fetch from the Hub, open a file, load a path).
fn model_section(
    ui: &mut egui::Ui,
    current: &Settings,
    s: &mut Settings,
    knob: &mut &'static str,
    path: &mut String,
    hub: super::hub::HubField<'_>,
) -> Vec<Intent> {
    let t = tr();
    let mut out = Vec::new();
    section(ui, t.section_model);
    let model_label = match &s.model {
        ModelChoice::Preset(n) => preset::builtin(n).map_or(n.clone(), |m| m.name),
        ModelChoice::Generic(b) => t.generic_model.replace("{b}", &format!("{b:.1}")),
        ModelChoice::Custom { model, .. } => model.name.clone(),
    };
    let before = s.model.clone();
    egui::ComboBox::from_label(t.model)
        .selected_text(model_label)
        .width(190.0)
        .show_ui(ui, |ui| {
            for name in preset::preset_names() {
                let shown = preset::display_name(name);
                ui.selectable_value(&mut s.model, ModelChoice::Preset(name.to_owned()), shown);
            }
            let generic = match s.model {
                ModelChoice::Generic(b) => b,
                _ => 7.0,
            };
            ui.selectable_value(&mut s.model, ModelChoice::Generic(generic), t.generic_choice);
            if let ModelChoice::Custom { model, .. } = &current.model {
                ui.selectable_value(&mut s.model, current.model.clone(), model.name.clone());
            }
        })
        .response
        .on_hover_text(t.model_tip);
    if s.model != before {
        *knob = "model";
        if let Ok(m) = s.model_spec()
            && let Some(tr) = m.transformer()
            && tr.usable_positions() > 0
        {
            s.seq = s.seq.min(tr.usable_positions());
        }
    }
    if let ModelChoice::Generic(b) = &mut s.model {
        let r = ui
            .add(egui::Slider::new(b, 0.1..=1000.0).logarithmic(true).text(t.generic_params))
            .on_hover_text(t.generic_tip);
        mark(r.changed(), "generic", knob);
    }
    out.extend(super::hub::ui(ui, hub));
    ui.horizontal(|ui| {
        if ui.button(t.open_file).on_hover_text(t.open_tip).clicked() {
            out.push(Intent::OpenDialog);
        }
    });
    ui.horizontal(|ui| {
        let r =
            ui.add(egui::TextEdit::singleline(path).hint_text("/path/to/config.json").desired_width(190.0));
        let r = r.on_hover_text(t.open_tip);
        let enter = r.lost_focus() && ui.input(|i| i.key_pressed(egui::Key::Enter));
        if ui.button(t.load).clicked() || enter {
            out.push(Intent::LoadPath(path.clone()));
        }
    });
    out
}

/// Train, infer or serve.
fn mode_row(ui: &mut egui::Ui, s: &mut Settings, knob: &mut &'static str) {
    let t = tr();
    section(ui, t.section_training);
    ui.horizontal(|ui| {
        ui.label(t.mode).on_hover_text(t.mode_tip);
        let ts = crate::gui::strings::tr_serve();
        let modes = [
            (Mode::Train, false, t.mode_train, t.mode_tip),
            (Mode::Infer, false, t.mode_infer, t.mode_tip),
            (Mode::Infer, true, ts.mode_serve, ts.mode_serve_tip),
        ];
        for (mode, serving, label, tip) in modes {
            let on = s.serving == serving && (serving || s.mode == mode);
            if ui.selectable_label(on, label).on_hover_text(tip).clicked() && !on {
                s.serving = serving;
                s.mode = mode;
                *knob = "mode";
            }
        }
    });
}

/// The precision (quantized formats for inference and LoRA's base).
fn precision(ui: &mut egui::Ui, s: &mut Settings, knob: &mut &'static str) {
    let t = tr();
    let train = s.mode == Mode::Train;
    let before = s.precision;
    // under litgpt, Lightning's name beside the recipe it means (its bf16-mixed is bf16-amp)
    let framework = s.stack.framework;
    let label = move |p: Precision| crate::estimate::stack::precision_label(framework, p);
    egui::ComboBox::from_label(t.precision)
        .selected_text(label(s.precision))
        .show_ui(ui, |ui| {
            for p in Precision::ALL {
                if p.is_quantized() && train && !s.lora_enabled {
                    continue;
                }
                ui.selectable_value(&mut s.precision, p, label(p));
            }
        })
        .response
        .on_hover_text(t.precision_tip);
    mark(s.precision != before, "precision", knob);
}

/// The optimizer (training).
fn optimizer(ui: &mut egui::Ui, s: &mut Settings, knob: &mut &'static str) {
    let t = tr();
    let before = s.optimizer;
    egui::ComboBox::from_label(t.optimizer)
        .selected_text(s.optimizer.name())
        .show_ui(ui, |ui| {
            for o in Optimizer::ALL {
                ui.selectable_value(&mut s.optimizer, o, o.name());
            }
        })
        .response
        .on_hover_text(t.optimizer_tip);
    mark(s.optimizer != before, "optimizer", knob);
}

/// The training stack (training): framework, model code and PyTorch release, the loop's
/// switches and gradient accumulation. A traced model's loss is its trace's: the framework
/// (which sets the loss) and the compiled loss show only while set, to be unset.
fn stack(ui: &mut egui::Ui, s: &mut Settings, traced: bool, knob: &mut &'static str) {
    let t = tr();
    let before = s.stack;
    if !traced || s.stack.framework.is_some() || s.stack.loss != crate::estimate::Loss::Hf {
        framework(ui, s);
    }
    ui.checkbox(&mut s.stack.optimizer_in_backward, t.opt_in_bwd).on_hover_text(t.opt_in_bwd_tip);
    if !traced || s.stack.compiled_loss {
        ui.checkbox(&mut s.stack.compiled_loss, t.compiled_loss).on_hover_text(t.compiled_loss_tip);
    }
    let mut ga = s.stack.grad_accum.max(1);
    if ui
        .add(egui::Slider::new(&mut ga, 1..=256).logarithmic(true).text(t.grad_accum))
        .on_hover_text(t.grad_accum_tip)
        .changed()
    {
        s.stack.grad_accum = ga;
    }
    mark(s.stack != before, "stack", knob);
}

/// The framework preset, and litgpt's model code and PyTorch release.
fn framework(ui: &mut egui::Ui, s: &mut Settings) {
    let t = tr();
    let shown = s.stack.framework.map_or(t.framework_none, crate::estimate::Framework::name);
    egui::ComboBox::from_label(t.framework)
        .selected_text(shown)
        .show_ui(ui, |ui| {
            // a preset sets the loss and dtypes; the training loop's choices stay
            let cur = s.stack;
            let keep = |st: crate::estimate::Stack| crate::estimate::Stack {
                optimizer_in_backward: cur.optimizer_in_backward,
                grad_accum: cur.grad_accum,
                keep_grads: cur.keep_grads,
                compiled_loss: cur.compiled_loss,
                torch: cur.torch,
                ..st
            };
            if ui.selectable_label(s.stack.framework.is_none(), t.framework_none).clicked() {
                s.stack = keep(crate::estimate::Stack::default());
            }
            for f in crate::estimate::Framework::ALL {
                if ui.selectable_label(s.stack.framework == Some(f), f.name()).clicked() {
                    s.stack = keep(f.stack());
                }
            }
        })
        .response
        .on_hover_text(t.framework_tip);
    // litgpt's code and the PyTorch release: shown under litgpt (whose published tables
    // name both) or once either is set
    if s.stack.framework == Some(crate::estimate::Framework::Litgpt)
        || s.stack.model_code != crate::estimate::ModelCode::Hf
        || s.stack.torch != crate::estimate::Torch::Current
    {
        use crate::estimate::{ModelCode, Torch};
        egui::ComboBox::from_label(t.model_code)
            .selected_text(s.stack.model_code.name())
            .show_ui(ui, |ui| {
                for c in ModelCode::ALL {
                    ui.selectable_value(&mut s.stack.model_code, c, c.name());
                }
            })
            .response
            .on_hover_text(t.model_code_tip);
        let name = |v: Torch| Torch::ALL.iter().position(|&x| x == v).map_or("", |i| t.torch_classes[i]);
        egui::ComboBox::from_label(t.torch_release)
            .selected_text(name(s.stack.torch))
            .show_ui(ui, |ui| {
                for v in Torch::ALL {
                    ui.selectable_value(&mut s.stack.torch, v, name(v));
                }
            })
            .response
            .on_hover_text(t.torch_release_tip);
        // PyTorch before 2.0 has no SDPA: show the eager attention the estimate walks
        if !s.stack.torch.has_sdpa() && s.attention == crate::estimate::AttentionImpl::Sdpa {
            s.attention = crate::estimate::AttentionImpl::Eager;
        }
    }
}

/// Micro-batch, sequence and (inference) generated tokens.
fn shape(ui: &mut egui::Ui, s: &mut Settings, knob: &mut &'static str) {
    let t = tr();
    let train = s.mode == Mode::Train;
    // 1 to 4096 on a rail as wide as the panel, stepping through powers of two, under its name
    // and a number that takes any value typed
    let before = s.batch;
    let (name, typed) = ui
        .horizontal(|ui| {
            let name = ui.label(t.batch).on_hover_text(t.batch_tip);
            let typed = ui
                .add(egui::DragValue::new(&mut s.batch).range(1..=4096).speed(0.2))
                .on_hover_text(t.batch_tip);
            (name, typed)
        })
        .inner;
    let mut b = s.batch;
    let rail = ui
        .scope(|ui| {
            ui.spacing_mut().slider_width = (ui.available_width() - 4.0).clamp(100.0, 480.0);
            ui.add(egui::Slider::new(&mut b, 1..=4096).logarithmic(true).show_value(false))
        })
        .inner
        .on_hover_text(t.batch_tip)
        .labelled_by(name.id);
    rail.widget_info(|| egui::WidgetInfo::slider(true, b as f64, t.batch));
    if rail.changed() {
        // the handle under the pointer goes to the nearest power of two; a key or a screen
        // reader's step moves on to the next one
        s.batch = if rail.interact_pointer_pos().is_some() { pow2_step(0, b) } else { pow2_step(before, b) };
    }
    let r = rail.union(typed);
    mark(r.changed(), "batch", knob);
    let spec = s.model_spec().ok();
    if let Some(t) = spec.as_ref().and_then(|m| m.traced()) {
        super::traced::dims(ui, s, t, knob);
        return;
    }
    if let Some(m) = spec.as_ref()
        && let (Some(p), Some(min)) = (m.patches(), m.min_image_side())
    {
        image(ui, s, (p, min), knob);
        return;
    }
    // a vision-language model: images beside the text, whose tokens take positions
    let image_tokens = match spec.as_ref().and_then(|m| m.transformer()?.vision?.image_tokens) {
        Some(rule) => vlm_images(ui, s, rule, knob),
        None => 0,
    };
    let max_seq = spec
        .as_ref()
        .and_then(|m| {
            m.transformer().map(|t| if t.usable_positions() > 0 { t.usable_positions() } else { 131072 })
        })
        .unwrap_or(4096)
        .saturating_sub(image_tokens)
        .max(16);
    s.seq = s.seq.clamp(1, max_seq);
    let r = ui
        .add(egui::Slider::new(&mut s.seq, 16.min(max_seq)..=max_seq).logarithmic(true).text(t.seq))
        .on_hover_text(t.seq_tip);
    mark(r.changed(), "seq", knob);
    if image_tokens > 0 {
        let line = t
            .vlm_tokens
            .replace("{text}", &s.seq.to_string())
            .replace("{images}", &image_tokens.to_string())
            .replace("{seq}", &(s.seq + image_tokens).to_string());
        ui.small(line);
    }
    if !train {
        // HF generate: new tokens after the prompt (the cache grows by one token a step)
        let mut generate = s.new_tokens > 0;
        if ui.checkbox(&mut generate, t.generate).on_hover_text(t.generate_tip).changed() {
            s.new_tokens = if generate { 256 } else { 0 };
            *knob = "new tokens";
        }
        if generate {
            let room = max_seq.saturating_sub(s.seq).saturating_add(1).max(1);
            s.new_tokens = s.new_tokens.clamp(1, room);
            let r = ui
                .add(egui::Slider::new(&mut s.new_tokens, 1..=room).logarithmic(true).text(t.new_tokens))
                .on_hover_text(t.new_tokens_tip);
            mark(r.changed(), "new tokens", knob);
        }
    }
}

/// A vision model's image side (square; a non-square image from a file or the command line keeps
/// its shape until the slider moves), its tokens under it.
fn image(
    ui: &mut egui::Ui,
    s: &mut Settings,
    (p, min): (crate::model::pixels::Patches, u64),
    knob: &mut &'static str,
) {
    use crate::model::pixels::ImageSize;
    let t = tr();
    let current = s.image.unwrap_or(p.image);
    let mut side = current.height.max(current.width);
    // whole patches (the slider's steps) from the smallest side the model runs
    let min = min.next_multiple_of(p.patch.max(1));
    let r = ui
        .add(
            egui::Slider::new(&mut side, min..=4096.max(min))
                .logarithmic(true)
                .step_by(p.patch as f64)
                .suffix(" px")
                .text(t.image_size),
        )
        .on_hover_text(t.image_size_tip);
    if r.changed() {
        s.image = Some(ImageSize::square(side));
        *knob = "image size";
    }
    let image = s.image.unwrap_or(p.image);
    // a convolutional network's image makes feature maps, not tokens
    let line = if p.conv {
        let (h, w) = p.feature_map(image);
        t.image_feature_map.replace("{image}", &image.to_string()).replace("{map}", &format!("{h}×{w}"))
    } else {
        t.image_tokens.replace("{image}", &image.to_string()).replace("{n}", &p.tokens(image).to_string())
    };
    ui.small(line).on_hover_text(p.describe(image));
}

/// A vision-language model's images per sample and their size (a fixed-size tower: its own);
/// returns the image tokens of one sample.
fn vlm_images(
    ui: &mut egui::Ui,
    s: &mut Settings,
    rule: crate::model::image_tokens::ImageTokens,
    knob: &mut &'static str,
) -> u64 {
    use crate::model::image_tokens::ImageTokens;
    use crate::model::pixels::ImageSize;
    let t = tr();
    let r = ui.add(egui::Slider::new(&mut s.images, 0..=16).text(t.images)).on_hover_text(t.images_tip);
    mark(r.changed(), "images", knob);
    if s.images == 0 {
        return 0;
    }
    let image = s.image.unwrap_or_else(|| crate::gui::state::vlm_default_image(rule));
    let step = match rule {
        // any size: the processor resizes it to multiples of patch · merge
        ImageTokens::Resized { patch, merge, .. } | ImageTokens::Rows { patch, merge, .. } => {
            Some(patch * merge)
        }
        // any size: the processor picks its grid of tiles by it
        ImageTokens::Anyres { patch, .. } => Some(patch),
        ImageTokens::Fixed { .. } => None,
    };
    if let Some(step) = step {
        let mut side = image.height.max(image.width);
        let r = ui
            .add(egui::Slider::new(&mut side, step..=4096).logarithmic(true).suffix(" px").text(t.image_size))
            .on_hover_text(t.image_size_tip);
        if r.changed() {
            s.image = Some(ImageSize::square(side));
            *knob = "image size";
        }
    }
    let image = s.image.unwrap_or_else(|| crate::gui::state::vlm_default_image(rule));
    ui.small(
        t.image_tokens.replace("{image}", &image.to_string()).replace("{n}", &rule.tokens(image).to_string()),
    )
    .on_hover_text(rule.describe(image));
    s.images * rule.tokens(image)
}

/// The micro-batch the rail steps to from `old` when it asks for `new`: the power of two nearest
/// `new` on the log scale, at least one power of two on in the direction asked (1 to 4096).
/// `old` 0: just the nearest power of two.
pub fn pow2_step(old: u64, new: u64) -> u64 {
    let near = 1u64 << ((new.max(1) as f64).log2().round() as u32).min(12);
    if old == 0 {
        return near;
    }
    if new == old {
        return old;
    }
    let up = new > old;
    let step = if up && near > old || !up && near < old {
        near
    } else if up {
        (old + 1).next_power_of_two()
    } else {
        // the largest power of two below `old`
        1u64 << (63 - (old - 1).max(1).leading_zeros())
    };
    step.clamp(1, 4096)
}

/// The attention kernel.
fn attention(ui: &mut egui::Ui, s: &mut Settings, knob: &mut &'static str) {
    let t = tr();
    let before = s.attention;
    egui::ComboBox::from_label(t.attention)
        .selected_text(s.attention.name())
        .show_ui(ui, |ui| {
            for a in AttentionImpl::ALL {
                ui.selectable_value(&mut s.attention, a, a.name());
            }
        })
        .response
        .on_hover_text(t.attention_tip);
    mark(s.attention != before, "attention", knob);
}

/// Which code runs the Mamba2 mixers (training, shown only for a model that has them).
fn mixer(ui: &mut egui::Ui, s: &mut Settings, knob: &mut &'static str) {
    use crate::estimate::MixerImpl;
    let ssm = s.model_spec().ok().and_then(|m| m.transformer().map(|t| t.ssm_layers_among(t.num_layers)));
    if ssm.unwrap_or(0) == 0 {
        return;
    }
    let t = tr();
    let before = s.stack.mixer;
    let name = |m: MixerImpl| if m == MixerImpl::Kernels { t.mixer_kernels } else { t.mixer_torch };
    egui::ComboBox::from_label(t.mixer_impl)
        .selected_text(name(s.stack.mixer))
        .show_ui(ui, |ui| {
            for m in [MixerImpl::Kernels, MixerImpl::Torch] {
                ui.selectable_value(&mut s.stack.mixer, m, name(m));
            }
        })
        .response
        .on_hover_text(t.mixer_impl_tip);
    mark(s.stack.mixer != before, "mixer", knob);
}

/// Gradient checkpointing and LoRA (training).
fn checkpointing_and_lora(ui: &mut egui::Ui, s: &mut Settings, knob: &mut &'static str) {
    let t = tr();
    let layers = s.model_spec().ok().and_then(|m| m.transformer().map(|t| t.num_layers)).unwrap_or(1).max(1);
    let before = s.checkpointing;
    let label = match s.checkpointing {
        Checkpointing::None => t.ckpt_none,
        Checkpointing::Full => t.ckpt_full,
        Checkpointing::Every(_) => t.ckpt_every,
        Checkpointing::Segments(_) => t.ckpt_segments,
        Checkpointing::Selective => t.ckpt_selective,
    };
    egui::ComboBox::from_label(t.checkpoint)
        .selected_text(label)
        .show_ui(ui, |ui| {
            ui.selectable_value(&mut s.checkpointing, Checkpointing::None, t.ckpt_none);
            ui.selectable_value(&mut s.checkpointing, Checkpointing::Full, t.ckpt_full);
            ui.selectable_value(&mut s.checkpointing, Checkpointing::Every(2), t.ckpt_every);
            let n = ((layers as f64).sqrt().round() as u64).max(2);
            ui.selectable_value(&mut s.checkpointing, Checkpointing::Segments(n), t.ckpt_segments);
            ui.selectable_value(&mut s.checkpointing, Checkpointing::Selective, t.ckpt_selective);
        })
        .response
        .on_hover_text(t.checkpoint_tip);
    mark(s.checkpointing != before, "checkpoint", knob);
    match &mut s.checkpointing {
        Checkpointing::Every(k) => {
            let r = ui.add(egui::Slider::new(k, 1..=layers).text(t.every_k)).on_hover_text(t.checkpoint_tip);
            mark(r.changed(), "every", knob);
        }
        Checkpointing::Segments(n) => {
            let r =
                ui.add(egui::Slider::new(n, 1..=layers).text(t.segments_n)).on_hover_text(t.checkpoint_tip);
            mark(r.changed(), "segments", knob);
        }
        _ => {}
    }
    let r = ui.checkbox(&mut s.lora_enabled, t.lora).on_hover_text(t.lora_tip);
    mark(r.changed(), "lora", knob);
    if s.lora_enabled {
        let r = ui
            .add(egui::Slider::new(&mut s.lora_rank, 1..=256).logarithmic(true).text(t.lora_rank))
            .on_hover_text(t.lora_tip);
        mark(r.changed(), "lora_rank", knob);
    }
}

/// A quantized frozen base (LoRA or inference) and who quantized it.
fn base_weights(ui: &mut egui::Ui, s: &mut Settings, knob: &mut &'static str) {
    let t = tr();
    if s.base_applies() {
        let before = s.base_quant;
        let name = |q: BaseQuant| match q {
            BaseQuant::None => t.base_quant_none,
            BaseQuant::Nf4 => t.base_quant_nf4,
            BaseQuant::Nf4NoDq => "NF4",
            BaseQuant::Int8 => t.base_quant_int8,
        };
        egui::ComboBox::from_label(t.base_quant)
            .selected_text(name(s.base_quant))
            .show_ui(ui, |ui| {
                for q in BaseQuant::ALL {
                    ui.selectable_value(&mut s.base_quant, q, name(q));
                }
            })
            .response
            .on_hover_text(t.base_quant_tip);
        mark(s.base_quant != before, "base weights", knob);
        // who quantized a 4-bit base: the bitsandbytes release, or Lightning's plugin (litgpt
        // has only the plugin: no menu under it)
        if matches!(s.base_quant, BaseQuant::Nf4 | BaseQuant::Nf4NoDq)
            && s.stack.framework != Some(crate::estimate::Framework::Litgpt)
        {
            use crate::estimate::Bnb;
            let before = s.stack.bnb;
            let name = |b: Bnb| match b {
                Bnb::Current => t.bnb_current,
                Bnb::Before0_43 => t.bnb_before_0_43,
                Bnb::Lightning => t.bnb_lightning,
            };
            egui::ComboBox::from_label(t.bnb)
                .selected_text(name(s.stack.bnb))
                .show_ui(ui, |ui| {
                    for b in Bnb::ALL {
                        ui.selectable_value(&mut s.stack.bnb, b, name(b));
                    }
                })
                .response
                .on_hover_text(t.bnb_tip);
            mark(s.stack.bnb != before, "bitsandbytes", knob);
        }
    }
}

/// GPUs, sharding, tensor and pipeline parallelism.
fn parallel_section(ui: &mut egui::Ui, s: &mut Settings, knob: &mut &'static str) {
    let t = tr();
    section(ui, t.section_parallel);
    let r = ui
        .add(egui::Slider::new(&mut s.dp, 1..=1024).logarithmic(true).text(t.gpus))
        .on_hover_text(t.gpus_tip);
    mark(r.changed(), "dp", knob);
    {
        use crate::estimate::{FsdpImpl, FsdpMode};
        let mode_name = |m: Option<FsdpMode>| match m {
            None => t.sharding_zero.to_owned(),
            Some(m) => format!("FSDP {}", m.name()),
        };
        let before = s.fsdp;
        egui::ComboBox::from_label(t.sharding)
            .selected_text(mode_name(s.fsdp))
            .show_ui(ui, |ui| {
                for m in std::iter::once(None).chain(FsdpMode::ALL.map(Some)) {
                    ui.selectable_value(&mut s.fsdp, m, mode_name(m));
                }
            })
            .response
            .on_hover_text(t.sharding_tip);
        mark(s.fsdp != before, "sharding", knob);
        if s.fsdp.is_some() {
            let before = s.stack.fsdp;
            egui::ComboBox::from_label(t.fsdp_impl)
                .selected_text(s.stack.fsdp.name())
                .show_ui(ui, |ui| {
                    for f in FsdpImpl::ALL {
                        ui.selectable_value(&mut s.stack.fsdp, f, f.name());
                    }
                })
                .response
                .on_hover_text(t.fsdp_impl_tip);
            mark(s.stack.fsdp != before, "FSDP code", knob);
        } else {
            let before = s.zero;
            egui::ComboBox::from_label(t.zero)
                .selected_text(format!("ZeRO-{}", s.zero))
                .show_ui(ui, |ui| {
                    for z in 0..=3u8 {
                        ui.selectable_value(&mut s.zero, z, format!("ZeRO-{z}"));
                    }
                })
                .response
                .on_hover_text(t.zero_tip);
            mark(s.zero != before, "zero", knob);
        }
    }
    let heads = s.model_spec().ok().and_then(|m| m.transformer().map(|t| (t.num_heads, t.num_layers)));
    if let Some((heads, layers)) = heads {
        let r = ui
            .add(egui::Slider::new(&mut s.tp, 1..=heads.min(64)).logarithmic(true).text(t.tp))
            .on_hover_text(t.tp_tip);
        mark(r.changed(), "tp", knob);
        if s.tp > 1 {
            let r = ui.checkbox(&mut s.sp, t.sp).on_hover_text(t.sp_tip);
            mark(r.changed(), "sp", knob);
        }
        let r = ui
            .add(egui::Slider::new(&mut s.pp, 1..=layers.min(128)).logarithmic(true).text(t.pp))
            .on_hover_text(t.pp_tip);
        mark(r.changed(), "pp", knob);
    }
    ui.label(
        RichText::new(format!(
            "{} {}",
            {
                // "8 GPUs", "8 个 GPU"
                let n = s.dp * s.tp.max(1) * s.pp.max(1);
                match crate::gui::lang::current() {
                    crate::i18n::Lang::En => crate::units::count(n, "GPU"),
                    crate::i18n::Lang::ZhCn => format!("{n} 个 GPU"),
                }
            },
            t.parallel_note
        ))
        .weak()
        .small(),
    );
}

/// The GPU section (both modes).
fn hardware(ui: &mut egui::Ui, s: &mut Settings, knob: &mut &'static str) {
    let t = tr();
    section(ui, t.section_hardware);
    let before = s.gpu_id.clone();
    let shown = gpu::find(&s.gpu_id).map_or(s.gpu_id.clone(), |g| g.name);
    egui::ComboBox::from_label(t.gpu)
        .selected_text(shown)
        .width(190.0)
        .show_ui(ui, |ui| {
            for g in gpu::catalog() {
                ui.selectable_value(
                    &mut s.gpu_id,
                    g.id.clone(),
                    format!("{} ({:.0} GiB)", g.name, g.memory_mib as f64 / 1024.0),
                );
            }
        })
        .response
        .on_hover_text(t.gpu_tip);
    if s.gpu_id != before {
        *knob = "gpu";
    }
}

/// The controls folded into a slim strip: one button opens them.
pub fn strip(ui: &mut egui::Ui) -> Vec<Intent> {
    let t = tr();
    let mut out = Vec::new();
    ui.add_space(4.0);
    if ui.button(RichText::new("»").size(18.0)).on_hover_text(t.controls_open).clicked() {
        out.push(Intent::CollapseControls(false));
    }
    out
}

/// The button that folds the controls into a strip (the chart gets their room).
pub fn fold_button(ui: &mut egui::Ui) -> Vec<Intent> {
    let t = tr();
    let mut out = Vec::new();
    ui.horizontal(|ui| {
        if ui.small_button("«").on_hover_text(t.controls_fold).clicked() {
            out.push(Intent::CollapseControls(true));
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::pow2_step;

    #[test]
    fn the_batch_rail_steps_through_powers_of_two() {
        // a key or a screen reader's step: on to the next power of two, either way
        assert_eq!(pow2_step(16, 17), 32);
        assert_eq!(pow2_step(16, 15), 8);
        assert_eq!(pow2_step(24, 25), 32);
        assert_eq!(pow2_step(24, 23), 16);
        assert_eq!(pow2_step(1, 16), 16, "a value asked for that is a power of two stays");
        assert_eq!(pow2_step(16, 4), 4);
        assert_eq!(pow2_step(4096, 4097), 4096);
        assert_eq!(pow2_step(1, 0), 1);
        // the pointer: the nearest power of two on the log scale
        assert_eq!(pow2_step(0, 20), 16);
        assert_eq!(pow2_step(0, 40), 32);
        assert_eq!(pow2_step(0, 3000), 4096);
        assert_eq!(pow2_step(5, 5), 5, "no change, no step");
    }
}
