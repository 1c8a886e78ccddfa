//! How a vision model turns an image into tokens: its patch grid ([`Patches`], read from the
//! config) and the image a run feeds it ([`ImageSize`], a scenario input).

use serde::{Deserialize, Serialize};

/// The largest image side accepted (pixels): far beyond any published vision model's input.
pub const MAX_IMAGE_SIDE: u64 = 16_384;

/// When the model's learned positions follow an image of another size than the config's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PositionInterpolation {
    /// Only when the forward is asked to (`interpolate_pos_encoding=True`: ViT); another size
    /// without it is refused by the model.
    OnRequest,
    /// On every forward whose grid differs from the config's (DINOv2).
    Always,
}

/// A patch-embedding model's input grid: square `patch`-pixel patches (a stride-`patch`
/// convolution, so a side of `n` pixels gives `n / patch` patches), then `prefix` extra tokens
/// (class and register tokens) in front.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Patches {
    /// Patch side in pixels (`patch_size`).
    pub patch: u64,
    /// The image the learned positions were made for (`image_size`), height and width.
    pub image: ImageSize,
    /// Tokens in front of the patches (the class token, register tokens).
    pub prefix: u64,
    /// Input channels (`num_channels`).
    pub channels: u64,
    /// How positions follow another image size.
    pub interpolation: PositionInterpolation,
    /// A learned mask token for masked-image pre-training (DINOv2's `use_mask_token`): stored,
    /// but a forward without `bool_masked_pos` never uses it, so it gets no gradient.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mask_token: bool,
    /// A convolutional network's input rather than a patch grid: `patch` is the network's total
    /// stride (its last feature map's pixels), there are no tokens and no positions.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub conv: bool,
    /// A convolutional network whose strided layers pad (ResNet's `k // 2`): each halves a side
    /// rounding up, so its last map is `ceil(side / stride)`; unpadded ones (ConvNeXt) floor.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ceil: bool,
}

impl Patches {
    /// Patches of an image: `floor(h/p) · floor(w/p)` (the convolution drops a partial patch).
    pub fn patches(&self, image: ImageSize) -> u64 {
        let p = self.patch.max(1);
        (image.height / p) * (image.width / p)
    }

    /// Tokens of an image: its patches and the prefix tokens (a convolutional network's
    /// sample is one image: 1).
    pub fn tokens(&self, image: ImageSize) -> u64 {
        if self.conv {
            return 1;
        }
        self.patches(image) + self.prefix
    }

    /// Input values of one image (`channels · h · w`).
    pub fn pixels(&self, image: ImageSize) -> u64 {
        self.channels * image.height * image.width
    }

    /// A convolutional network's last feature map for `image` (rows, columns).
    pub fn feature_map(&self, image: ImageSize) -> (u64, u64) {
        let p = self.patch.max(1);
        let side = |n: u64| if self.ceil { n.div_ceil(p) } else { n / p };
        (side(image.height).max(1), side(image.width).max(1))
    }

    /// Does `image` need the positions interpolated (a grid other than the config's)?
    pub fn interpolates(&self, image: ImageSize) -> bool {
        if self.conv {
            return false;
        }
        let p = self.patch.max(1);
        (image.height / p, image.width / p) != (self.image.height / p, self.image.width / p)
    }

    /// Why `image` cannot be fed to this model, if it cannot.
    pub fn check(&self, image: ImageSize) -> Result<(), String> {
        let p = self.patch;
        if self.conv && (image.height < p || image.width < p) {
            return Err(format!("image {image} has a side under the network's total stride ({p} pixels)"));
        }
        if image.height < p || image.width < p {
            return Err(format!("image {image} is smaller than one {p}×{p} patch"));
        }
        if image.height > MAX_IMAGE_SIDE || image.width > MAX_IMAGE_SIDE {
            return Err(format!("image {image} has a side over {MAX_IMAGE_SIDE} pixels"));
        }
        Ok(())
    }

    /// "576 patches (24×24 of 16 px) + 1 class token = 577 tokens", and how the positions
    /// follow.
    pub fn describe(&self, image: ImageSize) -> String {
        let p = self.patch.max(1);
        if self.conv {
            let (h, w) = self.feature_map(image);
            return format!("{image}: the last stage's feature map is {h}×{w} (total stride {p})");
        }
        let prefix = match self.prefix {
            0 => String::new(),
            1 => " + 1 class token".to_owned(),
            n => format!(" + {n} class/register tokens"),
        };
        let n = self.patches(image);
        let mut s = format!(
            "{image}: {n} patch{} ({}×{} of {p} px){prefix} = {} tokens per image",
            if n == 1 { "" } else { "es" },
            image.height / p,
            image.width / p,
            self.tokens(image)
        );
        let (dh, dw) = (image.height % p, image.width % p);
        if dh > 0 || dw > 0 {
            s.push_str(&format!(
                " (the stride-{p} convolution drops the last {dh} rows and {dw} columns of pixels)"
            ));
        }
        if self.interpolates(image) {
            s.push_str(&format!(
                "; positions interpolated from the {}×{} grid of {}",
                self.image.height / p,
                self.image.width / p,
                self.image
            ));
            if self.interpolation == PositionInterpolation::OnRequest {
                s.push_str(" (the forward needs interpolate_pos_encoding=True)");
            }
        }
        s
    }
}

/// An input image's height and width in pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ImageSize {
    /// Rows.
    pub height: u64,
    /// Columns.
    pub width: u64,
}

impl ImageSize {
    /// A square image.
    pub const fn square(side: u64) -> Self {
        Self { height: side, width: side }
    }
}

impl std::fmt::Display for ImageSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}×{}", self.height, self.width)
    }
}

impl std::str::FromStr for ImageSize {
    type Err = String;

    /// `448`, `448x448`, `384x640` (height × width; `×` and `X` also read).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let side =
            |t: &str| {
                t.trim().parse::<u64>().ok().filter(|&n| (1..=MAX_IMAGE_SIDE).contains(&n)).ok_or_else(|| {
                    format!("`{s}` is not an image size (N or HxW, 1..={MAX_IMAGE_SIDE} pixels)")
                })
            };
        match s.split_once(['x', 'X', '×']) {
            Some((h, w)) => Ok(Self { height: side(h)?, width: side(w)? }),
            None => side(s).map(Self::square),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VIT: Patches = Patches {
        patch: 16,
        image: ImageSize::square(224),
        prefix: 1,
        channels: 3,
        interpolation: PositionInterpolation::OnRequest,
        mask_token: false,
        conv: false,
        ceil: false,
    };

    #[test]
    fn tokens_follow_the_convolution() {
        assert_eq!(VIT.tokens(ImageSize::square(224)), 197);
        assert_eq!(VIT.tokens(ImageSize::square(384)), 577);
        // a partial patch is dropped by the stride-16 convolution
        assert_eq!(VIT.tokens(ImageSize { height: 230, width: 250 }), 14 * 15 + 1);
        assert!(!VIT.interpolates(ImageSize::square(224)));
        assert!(!VIT.interpolates(ImageSize::square(239)));
        assert!(VIT.interpolates(ImageSize::square(240)));
        assert_eq!(VIT.pixels(ImageSize::square(224)), 3 * 224 * 224);
    }

    #[test]
    fn parses_and_refuses() {
        assert_eq!("448".parse::<ImageSize>(), Ok(ImageSize::square(448)));
        assert_eq!("384x640".parse::<ImageSize>(), Ok(ImageSize { height: 384, width: 640 }));
        assert_eq!("384×640".parse::<ImageSize>(), Ok(ImageSize { height: 384, width: 640 }));
        for bad in ["", "0", "x", "12x", "-3", "99999", "1.5"] {
            assert!(bad.parse::<ImageSize>().is_err(), "{bad}");
        }
        assert!(VIT.check(ImageSize::square(8)).is_err());
        assert!(VIT.describe(ImageSize::square(384)).contains("interpolate_pos_encoding=True"));
        assert!(!VIT.describe(ImageSize::square(224)).contains("interpolated"));
        assert!(
            VIT.describe(ImageSize { height: 230, width: 224 })
                .contains("drops the last 6 rows and 0 columns")
        );
        assert!(VIT.describe(ImageSize::square(16)).contains(": 1 patch (1×1"));
    }
}
