//! A small CPU rasterizer for egui's output, so a picture (the slide export) can be drawn without
//! a window or a GPU: egui lays the frame out, epaint tessellates it into textured triangles, and
//! this fills them into an RGBA image the way egui's own painters do — the vertex colour times the
//! texture's texel (both premultiplied, in gamma space, the texture sampled bilinearly), blended
//! "source over" onto what is there, inside each primitive's clip rectangle.

use eframe::egui::{self, Color32, ColorImage, TextureId, epaint};
use std::collections::HashMap;

/// The textures a frame's meshes sample, kept up to date with its `TexturesDelta`s.
#[derive(Default)]
pub struct Textures {
    images: HashMap<TextureId, ColorImage>,
}

impl Textures {
    /// Applies a frame's texture changes (whole images and patches; frees).
    pub fn apply(&mut self, delta: &egui::TexturesDelta) {
        for (id, deltas) in &delta.set {
            for d in deltas {
                let egui::ImageData::Color(img) = &d.image;
                match d.pos {
                    None => {
                        self.images.insert(*id, ColorImage::clone(img));
                    }
                    Some([x0, y0]) => {
                        if let Some(dst) = self.images.get_mut(id) {
                            let [w, h] = img.size;
                            for y in 0..h {
                                for x in 0..w {
                                    let (dx, dy) = (x0 + x, y0 + y);
                                    if dx < dst.size[0] && dy < dst.size[1] {
                                        dst.pixels[dy * dst.size[0] + dx] = img.pixels[y * w + x];
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        for id in &delta.free {
            self.images.remove(id);
        }
    }

    /// The texel at `uv` (0..1), bilinear; white where the texture is unknown.
    fn sample(&self, id: TextureId, u: f32, v: f32) -> [f32; 4] {
        let Some(img) = self.images.get(&id) else { return [255.0; 4] };
        let [w, h] = img.size;
        if w == 0 || h == 0 {
            return [255.0; 4];
        }
        let x = (u * w as f32 - 0.5).clamp(0.0, (w - 1) as f32);
        let y = (v * h as f32 - 0.5).clamp(0.0, (h - 1) as f32);
        let (x0, y0) = (x.floor() as usize, y.floor() as usize);
        let (x1, y1) = ((x0 + 1).min(w - 1), (y0 + 1).min(h - 1));
        let (fx, fy) = (x - x0 as f32, y - y0 as f32);
        let px = |x: usize, y: usize| img.pixels[y * w + x].to_array();
        let (a, b, c, d) = (px(x0, y0), px(x1, y0), px(x0, y1), px(x1, y1));
        let mut out = [0.0; 4];
        for (i, o) in out.iter_mut().enumerate() {
            let top = f32::from(a[i]) * (1.0 - fx) + f32::from(b[i]) * fx;
            let bottom = f32::from(c[i]) * (1.0 - fx) + f32::from(d[i]) * fx;
            *o = top * (1.0 - fy) + bottom * fy;
        }
        out
    }
}

/// Fills `primitives` (points, drawn at `ppp` pixels per point) into `target`.
pub fn paint(
    target: &mut ColorImage,
    primitives: &[epaint::ClippedPrimitive],
    textures: &Textures,
    ppp: f32,
) {
    let [w, h] = target.size;
    for p in primitives {
        let epaint::Primitive::Mesh(mesh) = &p.primitive else { continue };
        // the clip rectangle in whole pixels, inside the image
        let clip = p.clip_rect;
        let cx0 = ((clip.min.x * ppp).floor().max(0.0) as usize).min(w);
        let cy0 = ((clip.min.y * ppp).floor().max(0.0) as usize).min(h);
        let cx1 = ((clip.max.x * ppp).ceil().max(0.0) as usize).min(w);
        let cy1 = ((clip.max.y * ppp).ceil().max(0.0) as usize).min(h);
        for tri in mesh.indices.chunks_exact(3) {
            let v = |i: u32| mesh.vertices.get(i as usize);
            let (Some(a), Some(b), Some(c)) = (v(tri[0]), v(tri[1]), v(tri[2])) else { continue };
            triangle(target, [a, b, c], mesh.texture_id, textures, ppp, [cx0, cy0, cx1, cy1]);
        }
    }
}

fn triangle(
    target: &mut ColorImage,
    v: [&epaint::Vertex; 3],
    tex: TextureId,
    textures: &Textures,
    ppp: f32,
    [cx0, cy0, cx1, cy1]: [usize; 4],
) {
    let p: [(f32, f32); 3] = v.map(|v| (v.pos.x * ppp, v.pos.y * ppp));
    let area = (p[1].0 - p[0].0) * (p[2].1 - p[0].1) - (p[2].0 - p[0].0) * (p[1].1 - p[0].1);
    if area.abs() < 1e-6 {
        return;
    }
    let min_x = p.iter().map(|q| q.0).fold(f32::INFINITY, f32::min).floor().max(cx0 as f32) as usize;
    let max_x = p.iter().map(|q| q.0).fold(f32::NEG_INFINITY, f32::max).ceil().min(cx1 as f32) as usize;
    let min_y = p.iter().map(|q| q.1).fold(f32::INFINITY, f32::min).floor().max(cy0 as f32) as usize;
    let max_y = p.iter().map(|q| q.1).fold(f32::NEG_INFINITY, f32::max).ceil().min(cy1 as f32) as usize;
    let colors: [[f32; 4]; 3] = v.map(|v| v.color.to_array().map(f32::from));
    let width = target.size[0];
    // the whole triangle one colour over a white texel (a filled shape): no sampling needed
    let flat = colors[0] == colors[1] && colors[1] == colors[2];
    let white_uv = |v: &epaint::Vertex| v.uv == epaint::WHITE_UV;
    let untextured = tex == TextureId::default() && v.iter().all(|v| white_uv(v));
    let edge =
        |a: (f32, f32), b: (f32, f32), x: f32, y: f32| (b.0 - a.0) * (y - a.1) - (b.1 - a.1) * (x - a.0);
    for y in min_y..max_y {
        let py = y as f32 + 0.5;
        for x in min_x..max_x {
            let px = x as f32 + 0.5;
            let w0 = edge(p[1], p[2], px, py) / area;
            let w1 = edge(p[2], p[0], px, py) / area;
            let w2 = 1.0 - w0 - w1;
            if w0 < 0.0 || w1 < 0.0 || w2 < 0.0 {
                continue;
            }
            let mut src = if flat {
                colors[0]
            } else {
                let mut c = [0.0; 4];
                for (i, ci) in c.iter_mut().enumerate() {
                    *ci = w0 * colors[0][i] + w1 * colors[1][i] + w2 * colors[2][i];
                }
                c
            };
            if !untextured {
                let u = w0 * v[0].uv.x + w1 * v[1].uv.x + w2 * v[2].uv.x;
                let t = w0 * v[0].uv.y + w1 * v[1].uv.y + w2 * v[2].uv.y;
                let texel = textures.sample(tex, u, t);
                for (s, t) in src.iter_mut().zip(texel) {
                    *s = *s * t / 255.0;
                }
            }
            if src[3] <= 0.0 && src[..3].iter().all(|c| *c <= 0.0) {
                continue;
            }
            let dst = &mut target.pixels[y * width + x];
            let d = dst.to_array().map(f32::from);
            let k = 1.0 - src[3] / 255.0;
            let out: [f32; 4] = std::array::from_fn(|i| (src[i] + d[i] * k).clamp(0.0, 255.0));
            *dst = Color32::from_rgba_premultiplied(
                out[0].round() as u8,
                out[1].round() as u8,
                out[2].round() as u8,
                out[3].round() as u8,
            );
        }
    }
}
