//! A model fetched from the Hugging Face Hub by its id (the controls' Hub field): `hub::load` runs
//! on the "vramscope-hub" thread and its answer comes back over a channel the app polls each
//! frame, so the window keeps drawing. Cancel frees the field at once; each fetch carries a
//! generation, and the answer of one that was cancelled (or replaced) is dropped when it arrives.
//! Runtime only: the recent ids are kept in the saved view (`View::hub_recent`).

use crate::hub::{self, Access, HubId, Source};
use crate::model::preset::Loaded;
use std::sync::mpsc;

/// What a fetch answers: the model and where it came from, or the one-line error.
pub type Fetched = Result<(Loaded, Source), String>;

/// The fetch in flight: its generation and the id as typed.
struct Pending {
    generation: u64,
    id: String,
}

/// The Hub field's fetches.
pub struct HubFetch {
    /// Where the Hub is and how to reach it (the environment's, as the CLI reads it; tests point
    /// it at a fake Hub and a temporary cache).
    pub access: Access,
    /// The text of the Hub id field.
    pub input: String,
    /// The last generation handed out.
    generation: u64,
    pending: Option<Pending>,
    /// Answers of cancelled or replaced fetches dropped so far.
    dropped: u64,
    tx: mpsc::Sender<(u64, Fetched)>,
    rx: mpsc::Receiver<(u64, Fetched)>,
}

impl Default for HubFetch {
    fn default() -> Self {
        Self::new(Access::from_env(false))
    }
}

impl HubFetch {
    /// No fetch yet, reaching the Hub through `access`.
    pub fn new(access: Access) -> Self {
        let (tx, rx) = mpsc::channel();
        Self { access, input: String::new(), generation: 0, pending: None, dropped: 0, tx, rx }
    }

    /// The id being fetched, if a fetch is in flight.
    pub fn pending(&self) -> Option<&str> {
        self.pending.as_ref().map(|p| p.id.as_str())
    }

    /// The field's text to edit and the id being fetched, together (for the panel).
    pub fn field(&mut self) -> (&mut String, Option<&str>) {
        (&mut self.input, self.pending.as_ref().map(|p| p.id.as_str()))
    }

    /// Starts fetching `id` (`shown` is the id as typed); one in flight is dropped. `Err` when
    /// the thread could not start.
    pub fn start(
        &mut self,
        id: HubId,
        shown: &str,
        repaint: impl Fn() + Send + 'static,
    ) -> Result<(), String> {
        self.generation += 1;
        let generation = self.generation;
        let (tx, access) = (self.tx.clone(), self.access.clone());
        std::thread::Builder::new()
            .name("vramscope-hub".into())
            .spawn(move || {
                let answer = hub::load(&id, &access).map_err(|e| e.to_string());
                // the window may be gone: then nobody is waiting
                let _ = tx.send((generation, answer));
                repaint();
            })
            .map_err(|e| e.to_string())?;
        self.pending = Some(Pending { generation, id: shown.to_owned() });
        Ok(())
    }

    /// Stops waiting for the fetch in flight (its answer is dropped when it comes); the id it was.
    pub fn cancel(&mut self) -> Option<String> {
        self.pending.take().map(|p| p.id)
    }

    /// The answer of the fetch in flight once it has come, with the id as typed; answers of
    /// cancelled fetches are dropped.
    pub fn poll(&mut self) -> Option<(String, Fetched)> {
        while let Ok((generation, answer)) = self.rx.try_recv() {
            if self.pending.as_ref().is_some_and(|p| p.generation == generation) {
                return self.pending.take().map(|p| (p.id, answer));
            }
            self.dropped += 1;
        }
        None
    }

    /// How many answers of cancelled or replaced fetches were dropped when they came.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gui::state::{AppState, MAX_RECENT_HUB};

    fn offline_nowhere() -> Access {
        Access::from_vars(true, |_| None)
    }

    #[test]
    fn a_cancelled_fetch_is_dropped_and_the_next_one_answers() {
        let mut f = HubFetch::new(offline_nowhere());
        let id = |s: &str| hub::parse_id(s, None).and_then(Result::ok).unwrap();
        f.start(id("acme/one"), "acme/one", || {}).unwrap();
        assert_eq!(f.cancel().as_deref(), Some("acme/one"));
        assert_eq!(f.pending(), None);
        f.start(id("acme/two"), "acme/two", || {}).unwrap();
        let t0 = std::time::Instant::now();
        let got = loop {
            if let Some(g) = f.poll() {
                break g;
            }
            assert!(t0.elapsed().as_secs() < 10, "no answer");
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        assert_eq!(got.0, "acme/two", "the cancelled fetch's answer was dropped");
        assert!(f.dropped() <= 1);
        // offline with no cache anywhere: it says so
        assert!(got.1.unwrap_err().contains("acme/two"));
        assert_eq!(f.pending(), None);
    }

    #[test]
    fn the_recent_ids_are_newest_first_once_each_and_a_state_without_them_loads() {
        let mut st = AppState::default();
        for i in 0..10 {
            st.view.remember_hub(&format!("org/m{i}"));
        }
        st.view.remember_hub("org/m5");
        assert_eq!(st.view.hub_recent.len(), MAX_RECENT_HUB);
        assert_eq!(st.view.hub_recent[..3], ["org/m5", "org/m9", "org/m8"]);
        let back = AppState::from_stored(Some(&st.to_stored())).unwrap().unwrap();
        assert_eq!(back.view.hub_recent, st.view.hub_recent);
        // a state saved before the field existed
        let stored = st.to_stored();
        let at = stored.find(",hub_recent:").unwrap();
        let end = at + stored[at..].find(']').unwrap() + 1;
        let old = format!("{}{}", &stored[..at], &stored[end..]);
        assert!(!old.contains("hub_recent"), "{old}");
        let back = AppState::from_stored(Some(&old)).unwrap().unwrap();
        assert!(back.view.hub_recent.is_empty());
    }
}
