//! How a vision-language model's processor turns one image into tokens of the language model's
//! sequence ([`ImageTokens`]): Qwen-VL's dynamic resolution (`smart_resize`, then one token per
//! `merge × merge` patches) or a fixed count (LLaVA's 576 of a 336-pixel CLIP crop).

use super::pixels::ImageSize;
use serde::{Deserialize, Serialize};

/// The most images a sample may carry.
pub const MAX_IMAGES: u64 = 256;

/// A processor's rule from an image to its tokens in the decoder's sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum ImageTokens {
    /// Qwen2-VL, Qwen2.5-VL, Qwen3-VL: the image is resized to multiples of `patch · merge`
    /// pixels with its area kept within `[min_pixels, max_pixels]` (transformers'
    /// `smart_resize`), cut into `patch`-pixel patches, and every `merge × merge` patches become
    /// one token.
    Resized {
        /// Patch side in pixels.
        patch: u64,
        /// Patches merged into one token along each side.
        merge: u64,
        /// The processor's smallest area (`min_pixels` / `size.shortest_edge`).
        min_pixels: u64,
        /// The processor's largest area (`max_pixels` / `size.longest_edge`).
        max_pixels: u64,
    },
    /// Pixtral (Mistral 3): the image is scaled down (floor) into a `longest_edge` square, its
    /// sides rounded up to multiples of `patch · merge` pixels; every `merge × merge` patches
    /// become one token, and each row of tokens ends with `[IMG_BREAK]` (the last with
    /// `[IMG_END]`): `rows · (cols + 1)` tokens in the sequence, `rows · cols` of them image
    /// features.
    Rows {
        /// Patch side in pixels.
        patch: u64,
        /// Patches merged into one token along each side.
        merge: u64,
        /// The processor's longest edge (`size.longest_edge`, the tower's `image_size`).
        longest_edge: u64,
    },
    /// Every image is resized (and cropped) to one `side × side` input: a fixed token count
    /// (LLaVA-1.5: CLIP's 336-pixel crop, 24 × 24 patch features, the class token dropped).
    Fixed {
        /// The processor's input side in pixels.
        side: u64,
        /// Tokens per image.
        tokens: u64,
    },
    /// LLaVA-NeXT's "anyres": the image goes to the grid resolution (`image_grid_pinpoints`)
    /// that keeps the most of it and wastes the least, cut into `side`-pixel tiles beside one
    /// `side`-pixel view of the whole; the tiles' features are unpadded back to the image's
    /// aspect ratio and each of their rows ends with the `image_newline` token
    /// (transformers' `LlavaNextProcessor._get_number_of_features`).
    Anyres {
        /// The tower's input side (CLIP's 336).
        side: u64,
        /// Patch side in pixels.
        patch: u64,
        /// The grid resolutions as `(height, width)` pixels, the first `n` used.
        pins: [(u16, u16); MAX_PINS],
        /// Resolutions listed.
        n: u8,
        /// The base view keeps the class token's feature (`vision_feature_select_strategy` "full").
        full: bool,
    },
}

/// The most grid resolutions an anyres config may list.
pub const MAX_PINS: usize = 16;

impl ImageTokens {
    /// The size the processor resizes `image` to.
    pub fn resized(&self, image: ImageSize) -> ImageSize {
        match *self {
            Self::Resized { patch, merge, min_pixels, max_pixels, .. } => {
                smart_resize(image, patch * merge, min_pixels, max_pixels)
            }
            Self::Rows { patch, merge, longest_edge } => rows_resize(image, patch * merge, longest_edge),
            Self::Fixed { side, .. } => ImageSize::square(side),
            Self::Anyres { pins, n, .. } => {
                let (h, w) = best_resolution(image, &pins[..usize::from(n).min(MAX_PINS)]);
                ImageSize { height: h, width: w }
            }
        }
    }

    /// Tokens of one image in the decoder's sequence.
    pub fn tokens(&self, image: ImageSize) -> u64 {
        match *self {
            Self::Resized { patch, merge, .. } => {
                let r = self.resized(image);
                let f = patch * merge;
                (r.height / f) * (r.width / f)
            }
            Self::Rows { patch, merge, .. } => {
                let (rows, cols) = self.grid(image, patch * merge);
                rows * (cols + 1)
            }
            Self::Fixed { tokens, .. } => tokens,
            Self::Anyres { side, patch, full, .. } => {
                let p = side / patch.max(1);
                let best = self.resized(image);
                let (sh, sw) = (best.height / side.max(1), best.width / side.max(1));
                let (rows, cols) = unpadded(image, p * sh, p * sw);
                rows * cols + rows + p * p + u64::from(full)
            }
        }
    }

    /// Crops of `side` pixels the tower encodes for one image: the anyres tiles and the base
    /// view; 1 for a fixed-size tower.
    pub fn crops(&self, image: ImageSize) -> u64 {
        match *self {
            Self::Anyres { side, .. } => {
                let best = self.resized(image);
                1 + (best.height / side.max(1)) * (best.width / side.max(1))
            }
            _ => 1,
        }
    }

    /// Token rows and columns of the resized image, `f` pixels a token.
    fn grid(&self, image: ImageSize, f: u64) -> (u64, u64) {
        let r = self.resized(image);
        (r.height / f.max(1), r.width / f.max(1))
    }

    /// Patches the vision tower encodes for one image (before merging).
    pub fn patches(&self, image: ImageSize) -> u64 {
        match *self {
            Self::Resized { merge, .. } => self.tokens(image) * merge * merge,
            Self::Rows { patch, merge, .. } => {
                let (rows, cols) = self.grid(image, patch * merge);
                rows * cols * merge * merge
            }
            Self::Fixed { tokens, .. } => tokens,
            Self::Anyres { side, patch, .. } => self.crops(image) * (side / patch.max(1)).pow(2),
        }
    }

    /// Why the processor refuses `image`, if it does.
    pub fn check(&self, image: ImageSize) -> Result<(), String> {
        let (long, short) = (image.height.max(image.width), image.height.min(image.width).max(1));
        if matches!(self, Self::Resized { .. }) && long > 200 * short {
            return Err(format!("image {image}: the processor refuses an aspect ratio over 200"));
        }
        Ok(())
    }

    /// "1024×1024 resized to 1036×1036 (multiples of 28 px, 3136..=12845056 pixels), 74×74
    /// patches of 14 px, 2×2 merged: 1369 tokens per image".
    pub fn describe(&self, image: ImageSize) -> String {
        match *self {
            Self::Resized { patch, merge, min_pixels, max_pixels } => {
                let r = self.resized(image);
                let resized = if r == image { "kept at".to_owned() } else { format!("resized to {r}") };
                format!(
                    "{image} {resized} (multiples of {f} px, {min_pixels}..={max_pixels} pixels), {}×{} patches of {patch} px, {merge}×{merge} merged: {} tokens per image",
                    r.height / patch,
                    r.width / patch,
                    self.tokens(image),
                    f = patch * merge,
                )
            }
            Self::Rows { patch, merge, longest_edge } => {
                let r = self.resized(image);
                let (rows, cols) = self.grid(image, patch * merge);
                let resized = if r == image { "kept at".to_owned() } else { format!("resized to {r}") };
                format!(
                    "{image} {resized} (within {longest_edge} px, multiples of {f} px), {rows}×{cols} tokens of {merge}×{merge} patches of {patch} px and a break token a row: {} tokens per image",
                    self.tokens(image),
                    f = patch * merge,
                )
            }
            Self::Fixed { side, tokens } => {
                format!(
                    "every image is resized to {side}×{side}: {tokens} tokens per image, whatever its size"
                )
            }
            Self::Anyres { side, .. } => {
                let best = self.resized(image);
                format!(
                    "{image} goes to the {best} grid ({} tiles of {side} px and a {side}×{side} view of the whole); the tiles' features unpadded to the image's shape, a newline token a row: {} tokens per image",
                    self.crops(image) - 1,
                    self.tokens(image)
                )
            }
        }
    }
}

/// transformers' `select_best_resolution`: the grid resolution that keeps the most of the
/// image (scaled to fit, capped at its own pixels) and, among those, wastes the least.
fn best_resolution(image: ImageSize, pins: &[(u16, u16)]) -> (u64, u64) {
    let (oh, ow) = (image.height.max(1) as f64, image.width.max(1) as f64);
    let mut best = pins.first().map_or((1, 1), |&(h, w)| (u64::from(h), u64::from(w)));
    let (mut most, mut least) = (0u64, u64::MAX);
    for (h, w) in pins.iter().map(|&(h, w)| (u64::from(h), u64::from(w))) {
        let scale = (w as f64 / ow).min(h as f64 / oh);
        let (dw, dh) = ((ow * scale) as u64, (oh * scale) as u64);
        let effective = (dw * dh).min(image.height * image.width);
        let wasted = (h * w).saturating_sub(effective);
        if effective > most || (effective == most && wasted < least) {
            (best, most, least) = ((h, w), effective, wasted);
        }
    }
    best
}

/// `LlavaNextProcessor._get_unpadded_features`: the tiles' `rows × cols` feature grid with the
/// padding the resize added to the image's shorter side removed; `(rows, cols)` left.
fn unpadded(image: ImageSize, mut rows: u64, mut cols: u64) -> (u64, u64) {
    let (h, w) = (image.height.max(1) as f64, image.width.max(1) as f64);
    // Python's `int(round(x, 7))`
    let round7 = |x: f64| ((x * 1e7).round() / 1e7) as u64;
    if w / h > cols as f64 / rows.max(1) as f64 {
        let new = round7(h * (cols as f64 / w));
        rows -= 2 * (rows.saturating_sub(new) / 2);
    } else {
        let new = round7(w * (rows as f64 / h));
        cols -= 2 * (cols.saturating_sub(new) / 2);
    }
    (rows, cols)
}

/// transformers' Pixtral resize (`pixtral/image_processing_pixtral.py`): scaled down by the
/// larger of `h / longest_edge` and `w / longest_edge` when over it (each side floored), then
/// each side rounded up to a multiple of `f`.
pub fn rows_resize(image: ImageSize, f: u64, longest_edge: u64) -> ImageSize {
    let f = f.max(1);
    let (mut h, mut w) = (image.height.max(1), image.width.max(1));
    let edge = longest_edge.max(1) as f64;
    let ratio = (h as f64 / edge).max(w as f64 / edge);
    if ratio > 1.0 {
        h = ((h as f64 / ratio).floor() as u64).max(1);
        w = ((w as f64 / ratio).floor() as u64).max(1);
    }
    ImageSize { height: (h - 1) / f * f + f, width: (w - 1) / f * f + f }
}

/// Python's `round` on `n / d` (halves to even), for positive integers.
fn round_half_even(n: u64, d: u64) -> u64 {
    let (q, r) = (n / d, n % d);
    match (2 * r).cmp(&d) {
        std::cmp::Ordering::Greater => q + 1,
        std::cmp::Ordering::Equal => q + (q & 1),
        std::cmp::Ordering::Less => q,
    }
}

/// transformers' `smart_resize` (`qwen2_vl/image_processing_qwen2_vl.py`): both sides rounded
/// to multiples of `factor`, then scaled down (floor) into `max_pixels` or up (ceil) to
/// `min_pixels`, keeping the aspect ratio.
pub fn smart_resize(image: ImageSize, factor: u64, min_pixels: u64, max_pixels: u64) -> ImageSize {
    let f = factor.max(1);
    let (h, w) = (image.height, image.width);
    let (mut hb, mut wb) = (round_half_even(h, f) * f, round_half_even(w, f) * f);
    let (hf, wf, ff) = (h as f64, w as f64, f as f64);
    if hb * wb > max_pixels {
        let beta = (hf * wf / max_pixels as f64).sqrt();
        hb = f.max((hf / beta / ff).floor() as u64 * f);
        wb = f.max((wf / beta / ff).floor() as u64 * f);
    } else if hb * wb < min_pixels {
        let beta = (min_pixels as f64 / (hf * wf)).sqrt();
        hb = (hf * beta / ff).ceil() as u64 * f;
        wb = (wf * beta / ff).ceil() as u64 * f;
    }
    ImageSize { height: hb, width: wb }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Mistral-Small-3.1's processor (longest edge 1540, 14-pixel patches merged 2×2), values
    /// from transformers 5.25's `get_resize_output_image_size` and `PixtralProcessor`.
    #[test]
    fn pixtral_rows_match_transformers() {
        let rule = ImageTokens::Rows { patch: 14, merge: 2, longest_edge: 1540 };
        let hw = |height, width| ImageSize { height, width };
        // within the edge: rounded up to 28 px
        assert_eq!(rule.resized(hw(1024, 768)), hw(1036, 784));
        assert_eq!(rule.tokens(hw(1024, 768)), 37 * (28 + 1));
        assert_eq!(rule.patches(hw(1024, 768)), 37 * 28 * 4);
        // over it: scaled down (floored), then rounded up
        assert_eq!(rule.resized(hw(3000, 2000)), hw(1540, 1036));
        assert_eq!(rule.tokens(hw(3000, 2000)), 55 * 38);
        assert_eq!(rule.resized(hw(112, 168)), hw(112, 168));
        assert_eq!(rule.tokens(hw(112, 168)), 4 * 7);
    }

    const QWEN25: ImageTokens =
        ImageTokens::Resized { patch: 14, merge: 2, min_pixels: 3136, max_pixels: 12_845_056 };

    /// Values from transformers 5.25's `smart_resize` (Python).
    #[test]
    fn smart_resize_matches_transformers() {
        let sq = ImageSize::square;
        assert_eq!(smart_resize(sq(1024), 28, 3136, 12_845_056), sq(1036));
        // 1022 / 28 = 36.5: Python rounds the half to even (36)
        assert_eq!(smart_resize(sq(1022), 28, 3136, 12_845_056), sq(1008));
        assert_eq!(smart_resize(sq(1024), 28, 3136, 1_003_520), sq(980));
        assert_eq!(smart_resize(sq(20), 28, 3136, 12_845_056), sq(56));
        assert_eq!(
            smart_resize(ImageSize { height: 480, width: 640 }, 28, 3136, 12_845_056),
            ImageSize { height: 476, width: 644 }
        );
        assert_eq!(smart_resize(sq(8000), 32, 65_536, 16_777_216), sq(4096));
        assert_eq!(QWEN25.tokens(sq(1024)), 1369);
        assert_eq!(QWEN25.patches(sq(1024)), 5476);
        assert!(QWEN25.describe(sq(1024)).contains("resized to 1036×1036"));
        assert!(QWEN25.check(ImageSize { height: 10, width: 2100 }).is_err());
        let llava = ImageTokens::Fixed { side: 336, tokens: 576 };
        assert_eq!(llava.tokens(sq(1024)), 576);
    }

    #[test]
    fn anyres_counts_what_transformers_llava_next_processor_counts() {
        let sq = ImageSize::square;
        let mut pins = [(0, 0); MAX_PINS];
        pins[..5].copy_from_slice(&[(336, 672), (672, 336), (672, 672), (1008, 336), (336, 1008)]);
        let next = ImageTokens::Anyres { side: 336, patch: 14, pins, n: 5, full: false };
        // `LlavaNextProcessor._get_number_of_features` (transformers 5.25) less the class token
        // ("default" strategy), at these (height, width)
        for ((h, w), tokens, best) in [
            ((336, 336), 1176, (336, 672)),
            ((672, 672), 2928, (672, 672)),
            ((1024, 1024), 2928, (672, 672)),
            ((1024, 768), 2352, (672, 672)),
            ((768, 1024), 2340, (672, 672)),
            ((500, 1500), 2328, (336, 1008)),
            ((224, 224), 1176, (336, 672)),
            ((2000, 300), 1368, (1008, 336)),
        ] {
            let image = ImageSize { height: h, width: w };
            assert_eq!(next.tokens(image), tokens, "{h}×{w}");
            assert_eq!(next.resized(image), ImageSize { height: best.0, width: best.1 }, "{h}×{w}");
        }
        assert_eq!(next.crops(sq(1024)), 5);
        assert_eq!(next.patches(sq(1024)), 5 * 576);
        assert!(next.describe(sq(1024)).contains("4 tiles of 336 px"));
    }
}
