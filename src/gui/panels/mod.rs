//! One file per panel. Each draws itself and returns [`Intent`](super::intent::Intent)s; none
//! computes memory itself.

pub mod breakdown;
pub mod cluster;
pub mod compare;
pub mod controls;
pub mod curves;
pub mod drop;
pub mod headline;
pub mod live;
pub mod menu;
pub mod options;
pub mod serve;
pub mod shortcuts;
pub mod status;
pub mod tabs;
pub mod timeline;
pub mod why;

/// Formats bytes as GiB for display (MiB below 0.1 GiB).
pub fn gib(bytes: u64) -> String {
    let g = bytes as f64 / crate::units::GIB;
    if bytes == 0 || g >= 0.1 {
        format!("{g:.1} GiB")
    } else {
        format!("{:.1} MiB", bytes as f64 / crate::units::MIB)
    }
}

/// Exact bytes with thousands separators, for tooltips.
pub fn exact(bytes: u64) -> String {
    let s = bytes.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out + " bytes"
}
