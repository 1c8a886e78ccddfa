//! Throwaway: the tables as they were before `strings!`, to check that every text is unchanged.
#![allow(dead_code)]

mod en;
mod live;
mod options;
mod zh;

#[test]
fn every_text_is_what_it_was() {
    use crate::gui::lang::{self, Lang};
    let d = |v: &dyn std::fmt::Debug| format!("{v:?}");
    let pairs = [
        (d(&en::EN), d(&super::main::EN)),
        (d(&zh::ZH), d(&super::main::ZH)),
        (d(&en::SERVE_EN_OLD), d(&super::serve::SERVE_EN)),
        (d(&zh::ZH_SERVE), d(&super::serve::SERVE_ZH)),
        (d(&en::CLUSTER_EN_OLD), d(&super::cluster::CLUSTER_EN)),
        (d(&zh::ZH_CLUSTER), d(&super::cluster::CLUSTER_ZH)),
        (d(&options::OPTIONS_EN), d(&super::options::OPTIONS_EN)),
        (d(&options::OPTIONS_ZH), d(&super::options::OPTIONS_ZH)),
        (d(&live::LIVE_EN_OLD), d(&super::live::LIVE_EN)),
        (d(&live::LIVE_ZH_OLD), d(&super::live::LIVE_ZH)),
    ];
    for (old, new) in &pairs {
        assert_eq!(old, new);
        assert!(old.len() > 100);
    }
    let mut n = 0;
    for l in [Lang::En, Lang::ZhCn] {
        lang::set(l);
        for (f, _) in crate::export::Format::ALL {
            assert_eq!(en::export_label(f), super::export_label(f));
            n += 1;
        }
    }
    lang::set(Lang::En);
    println!(
        "{} tables and {n} export labels compared; total {} bytes",
        pairs.len(),
        pairs.iter().map(|p| p.0.len()).sum::<usize>()
    );
}
