//! A vision-language model's images: how many a sample carries, their size, and the tokens they
//! add to the decoder's sequence ([`Scenario::seq`] is text and image tokens together).

use super::check::no_image_input;
use super::{Scenario, ScenarioError};
use crate::model::image_tokens::{ImageTokens, MAX_IMAGES};
use crate::model::pixels::ImageSize;

/// The images of one sample, as the decoder sees them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VlmImages {
    /// Images per sample.
    pub count: u64,
    /// Their size (before the processor resizes them).
    pub size: ImageSize,
    /// The processor's rule.
    pub rule: ImageTokens,
}

impl VlmImages {
    /// Tokens of one image in the decoder's sequence.
    pub fn per_image(&self) -> u64 {
        self.rule.tokens(self.size)
    }

    /// Image tokens of one sample.
    pub fn tokens(&self) -> u64 {
        self.count * self.per_image()
    }

    /// "4 images of 1024×1024 × 1369 tokens = 5476 image tokens (1024×1024 resized to …)".
    pub fn describe(&self) -> String {
        format!(
            "{} image{} of {} × {} tokens = {} image tokens a sample; {}",
            self.count,
            if self.count == 1 { "" } else { "s" },
            self.size,
            self.per_image(),
            self.tokens(),
            self.rule.describe(self.size)
        )
    }
}

impl Scenario {
    /// How this model's processor turns an image into decoder tokens; `None` for a model without
    /// a vision tower whose image tokens are modelled.
    pub fn image_rule(&self) -> Option<ImageTokens> {
        self.model.transformer()?.vision?.image_tokens
    }

    /// The images a sample carries (`None` without images or for a text model).
    pub fn vlm_images(&self) -> Option<VlmImages> {
        let rule = self.image_rule()?;
        let size = self.image?;
        (self.images > 0).then_some(VlmImages { count: self.images, size, rule })
    }

    /// Image tokens of one sample (0 without images).
    pub fn image_tokens(&self) -> u64 {
        self.vlm_images().map_or(0, |v| v.tokens())
    }

    /// Bytes of the micro-batch's `pixel_values` as the processor hands them over (fp32): Qwen-VL's
    /// flattened patches (`channels · temporal · patch²` values each), Pixtral's resized picture,
    /// a fixed-size model's `channels · side²` a picture.
    pub fn pixel_values_bytes(&self) -> u64 {
        let (Some(v), Some(t)) = (self.vlm_images(), self.model.transformer().and_then(|t| t.vision)) else {
            return 0;
        };
        let per_image = match v.rule {
            ImageTokens::Resized { patch, .. } => {
                v.rule.patches(v.size) * t.num_channels * t.temporal_patch * patch * patch
            }
            ImageTokens::Rows { .. } => {
                let r = v.rule.resized(v.size);
                t.num_channels * r.height * r.width
            }
            ImageTokens::Fixed { side, .. } => t.num_channels * side * side,
            // the anyres tiles and the view of the whole, each a `side` crop
            ImageTokens::Anyres { side, .. } => v.rule.crops(v.size) * t.num_channels * side * side,
        };
        self.batch * v.count * per_image * 4
    }

    /// Text tokens of one sample: the sequence less its image tokens.
    pub fn text_tokens(&self) -> u64 {
        self.seq.saturating_sub(self.image_tokens())
    }

    /// Gives each sample `count` images of `size`, keeping its text tokens: the sequence becomes
    /// text + image tokens. `count` 0 removes the images.
    pub fn set_images(&mut self, count: u64, size: ImageSize) -> Result<(), ScenarioError> {
        let Some(rule) = self.image_rule() else {
            return Err(ScenarioError::Invalid(no_image_input(&self.model)));
        };
        check_count(count)?;
        rule.check(size).map_err(ScenarioError::Invalid)?;
        let text = self.text_tokens();
        self.images = count;
        self.image = (count > 0).then_some(size);
        self.seq = text + self.image_tokens();
        Ok(())
    }

    /// A vision-language model's images: a size with a count, a count with a size, and a
    /// sequence holding their tokens and some text.
    pub(super) fn check_images(&self, rule: ImageTokens) -> Result<(), ScenarioError> {
        let bad = |m: String| Err(ScenarioError::Invalid(m));
        check_count(self.images)?;
        let size = match (self.images, self.image) {
            (0, None) => return Ok(()),
            (0, Some(i)) => return bad(format!("image size {i} set without images (--images N)")),
            (n, None) => return bad(format!("{n} images per sample without their size (--image-size HxW)")),
            (_, Some(i)) => i,
        };
        rule.check(size).map_err(ScenarioError::Invalid)?;
        let tokens = self.image_tokens();
        if self.seq <= tokens {
            return bad(format!(
                "sequence length {} does not leave room for text beside the {tokens} image tokens of {} image(s) of {size}",
                self.seq, self.images
            ));
        }
        Ok(())
    }
}

fn check_count(count: u64) -> Result<(), ScenarioError> {
    if count > MAX_IMAGES {
        return Err(ScenarioError::Invalid(format!("{count} images per sample is over {MAX_IMAGES}")));
    }
    Ok(())
}
