//! A cluster's GPUs from Prometheus: the memory NVIDIA's DCGM exporter scrapes
//! (`DCGM_FI_DEV_FB_USED` / `_FREE` / `_RESERVED` in MiB, `DCGM_FI_DEV_GPU_UTIL` in percent,
//! labelled by `Hostname` and `gpu`), read back through the HTTP API (`/api/v1/query`,
//! `/api/v1/query_range`).
//!
//! Every request has a timeout and a response-size bound, is retried with backoff when the
//! server cannot be reached or answers 5xx, and each failure is one message a user can act on.
//! The source is a [`Sampler`] like NVML, so the same background thread runs it.

use super::{GpuSample, MonitorError, Sampler, Snapshot};
use serde_json::Value;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where and what to query.
#[derive(Clone, Debug, PartialEq)]
pub struct PromConfig {
    /// Base URL of the Prometheus server (`http://prometheus:9090`).
    pub url: String,
    /// A PromQL label selector added to every metric (`{job="train-42"}`), or empty.
    pub selector: String,
    /// The label naming the host (DCGM exporter: `Hostname`).
    pub host_label: String,
    /// The label naming the GPU on its host (DCGM exporter: `gpu`).
    pub gpu_label: String,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Largest response body read, bytes.
    pub max_bytes: u64,
    /// Retries after the first try when the server is unreachable or answers 5xx.
    pub retries: u32,
}

impl PromConfig {
    /// The DCGM exporter's labels, a 5 s timeout, 16 MiB responses, 2 retries.
    pub fn new(url: &str) -> Self {
        Self {
            url: url.trim_end_matches('/').to_owned(),
            selector: String::new(),
            host_label: "Hostname".into(),
            gpu_label: "gpu".into(),
            timeout: Duration::from_secs(5),
            max_bytes: 16 << 20,
            retries: 2,
        }
    }

    /// Checks the URL and the selector (one-line errors naming the flag).
    pub fn validate(&self) -> Result<(), String> {
        if !(self.url.starts_with("http://") || self.url.starts_with("https://")) {
            return Err(format!("--prometheus {}: not an http:// or https:// URL", self.url));
        }
        let s = self.selector.trim();
        let braced = s.starts_with('{') && s.ends_with('}');
        if !s.is_empty() && !braced {
            return Err(format!(
                "--selector {s}: a PromQL label selector in braces, e.g. {{job=\"train-42\"}}"
            ));
        }
        for l in [&self.host_label, &self.gpu_label] {
            if l.is_empty() || !l.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!("label name \"{l}\" is not a Prometheus label name"));
            }
        }
        Ok(())
    }

    fn metric(&self, name: &str) -> String {
        format!("{name}{}", self.selector.trim())
    }
}

/// What went wrong talking to Prometheus.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PromError {
    /// No connection (refused, DNS, timeout).
    #[error("Prometheus at {url} is unreachable: {why}")]
    Unreachable { url: String, why: String },
    /// An HTTP error status that is not a Prometheus error body.
    #[error("Prometheus at {url} answered HTTP {status}")]
    Http { url: String, status: u16 },
    /// The body is not a Prometheus API response.
    #[error("{url} is not a Prometheus API: {why}")]
    NotPrometheus { url: String, why: String },
    /// Prometheus refused the query.
    #[error("Prometheus refused the query {query}: {error_type}: {error}")]
    Query { query: String, error_type: String, error: String },
    /// The response is larger than the bound.
    #[error("the response to {query} is larger than {limit_mib} MiB; narrow --selector or --range")]
    TooLarge { query: String, limit_mib: u64 },
    /// Nothing matched.
    #[error(
        "no series matched {query} (is the DCGM exporter scraped, and does --selector match its labels?)"
    )]
    NoSeries { query: String },
}

/// One GPU's used memory over a range (also the series of a `monitor --range --json` recording).
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
pub struct Series {
    /// Host label.
    pub host: String,
    /// GPU label (its index on the host when numeric).
    pub gpu: String,
    /// Model name (`modelName` label), if any.
    #[serde(default)]
    pub name: String,
    /// Total memory, bytes (used + free + reserved at the last point).
    pub total: u64,
    /// (unix seconds, used bytes).
    pub points: Vec<(f64, u64)>,
}

/// The Prometheus source.
pub struct PrometheusSource {
    cfg: PromConfig,
    agent: ureq::Agent,
}

const MIB: f64 = 1_048_576.0;

impl PrometheusSource {
    /// A source for `cfg` (validated).
    pub fn new(cfg: PromConfig) -> Result<Self, String> {
        cfg.validate()?;
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(cfg.timeout))
            .http_status_as_error(false)
            .build()
            .into();
        Ok(Self { cfg, agent })
    }

    /// The configuration.
    pub fn config(&self) -> &PromConfig {
        &self.cfg
    }

    /// `GET path?params` with retries; the `data` of a successful response.
    fn get(&self, path: &str, params: &[(&str, String)]) -> Result<Value, PromError> {
        let url = format!("{}{path}", self.cfg.url);
        let query = params.first().map_or_else(String::new, |p| p.1.clone());
        let mut delay = Duration::from_millis(200);
        let mut last = None;
        for attempt in 0..=self.cfg.retries {
            if attempt > 0 {
                std::thread::sleep(delay);
                delay = (delay * 2).min(Duration::from_secs(2));
            }
            let mut req = self.agent.get(&url);
            for (k, v) in params {
                req = req.query(*k, v);
            }
            let mut resp = match req.call() {
                Ok(r) => r,
                Err(e) => {
                    last = Some(PromError::Unreachable { url: self.cfg.url.clone(), why: e.to_string() });
                    continue;
                }
            };
            let status = resp.status().as_u16();
            let body = match resp.body_mut().with_config().limit(self.cfg.max_bytes).read_to_string() {
                Ok(b) => b,
                Err(ureq::Error::BodyExceedsLimit(_)) => {
                    return Err(PromError::TooLarge { query, limit_mib: self.cfg.max_bytes >> 20 });
                }
                Err(e) => {
                    last = Some(PromError::Unreachable { url: self.cfg.url.clone(), why: e.to_string() });
                    continue;
                }
            };
            match parse_response(&self.cfg.url, &query, status, &body) {
                Err(e @ PromError::Http { status: 500..=599, .. }) => last = Some(e),
                other => return other,
            }
        }
        Err(last.unwrap_or_else(|| PromError::Unreachable {
            url: self.cfg.url.clone(),
            why: "no attempt".into(),
        }))
    }

    /// The cluster's GPUs now.
    pub fn instant(&self) -> Result<Vec<GpuSample>, PromError> {
        let q = |m: &str| self.cfg.metric(m);
        let used = self.vector(&q("DCGM_FI_DEV_FB_USED"))?;
        if used.is_empty() {
            return Err(PromError::NoSeries { query: q("DCGM_FI_DEV_FB_USED") });
        }
        let free = self.vector(&q("DCGM_FI_DEV_FB_FREE"))?;
        let reserved = self.vector(&q("DCGM_FI_DEV_FB_RESERVED"))?;
        let util = self.vector(&q("DCGM_FI_DEV_GPU_UTIL"))?;
        let find = |v: &[(Labels, f64)], l: &Labels| v.iter().find(|x| x.0.key == l.key).map(|x| x.1);
        let mut out: Vec<GpuSample> = used
            .iter()
            .map(|(l, u)| {
                let used = (u * MIB) as u64;
                let free = find(&free, l).map_or(0, |f| (f * MIB) as u64);
                let reserved = find(&reserved, l).map_or(0, |r| (r * MIB) as u64);
                GpuSample {
                    index: l.index(),
                    name: l.name.clone(),
                    total: used + free + reserved,
                    used,
                    free,
                    util_pct: find(&util, l).map(|p| p.round().clamp(0.0, 100.0) as u32),
                    processes: Vec::new(),
                    host: Some(l.key.0.clone()),
                }
            })
            .collect();
        out.sort_by(|a, b| (&a.host, a.index).cmp(&(&b.host, b.index)));
        Ok(out)
    }

    /// Every GPU's used memory from `start` to `end` (unix seconds) every `step` seconds. A GPU's
    /// total is used + free (+ reserved) at its last point in the range that has both, so a GPU
    /// that stopped reporting (its node down) keeps its total; the instant query stands in only
    /// where the range has no free-memory series.
    pub fn range(&self, start: f64, end: f64, step: f64) -> Result<Vec<Series>, PromError> {
        let query = self.cfg.metric("DCGM_FI_DEV_FB_USED");
        let used = self.matrix(&query, start, end, step)?;
        if used.is_empty() {
            return Err(PromError::NoSeries { query });
        }
        let free = self.matrix(&self.cfg.metric("DCGM_FI_DEV_FB_FREE"), start, end, step)?;
        let reserved = self.matrix(&self.cfg.metric("DCGM_FI_DEV_FB_RESERVED"), start, end, step)?;
        let mut now: Option<Vec<GpuSample>> = None;
        let mut out = Vec::new();
        for (l, pts) in used {
            let of =
                |m: &[(Labels, Vec<(f64, f64)>)]| m.iter().find(|x| x.0.key == l.key).map(|x| x.1.clone());
            let (free, reserved) = (of(&free).unwrap_or_default(), of(&reserved).unwrap_or_default());
            let at = |v: &[(f64, f64)], t: f64| v.iter().find(|p| (p.0 - t).abs() < 1e-3).map(|p| p.1);
            let points: Vec<(f64, u64)> = pts.iter().map(|&(t, v)| (t, (v * MIB) as u64)).collect();
            let from_range = pts.iter().rev().find_map(|&(t, u)| {
                at(&free, t).map(|f| ((u + f + at(&reserved, t).unwrap_or(0.0)) * MIB) as u64)
            });
            let total = match from_range {
                Some(t) => t,
                None => {
                    let now = now.get_or_insert_with(|| self.instant().unwrap_or_default());
                    now.iter()
                        .find(|g| g.host.as_deref() == Some(l.key.0.as_str()) && g.index == l.index())
                        .map_or(0, |g| g.total)
                }
            };
            out.push(Series {
                host: l.key.0.clone(),
                gpu: l.key.1.clone(),
                name: l.name.clone(),
                total,
                points,
            });
        }
        out.sort_by(|a, b| (&a.host, gpu_order(&a.gpu)).cmp(&(&b.host, gpu_order(&b.gpu))));
        Ok(out)
    }

    /// A range query's series: labels and (unix seconds, value) points.
    fn matrix(&self, query: &str, start: f64, end: f64, step: f64) -> Result<Vec<Matrix>, PromError> {
        let data = self.get(
            "/api/v1/query_range",
            &[
                ("query", query.to_owned()),
                ("start", format!("{start:.3}")),
                ("end", format!("{end:.3}")),
                ("step", format!("{}", step.max(0.001))),
            ],
        )?;
        let rows = result_rows(&self.cfg.url, &data, "matrix")?;
        Ok(rows
            .iter()
            .map(|r| {
                let pts = r
                    .get("values")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(point)
                    .collect();
                (labels(&self.cfg, r), pts)
            })
            .collect())
    }

    fn vector(&self, query: &str) -> Result<Vec<(Labels, f64)>, PromError> {
        let data = self.get("/api/v1/query", &[("query", query.to_owned())])?;
        let rows = result_rows(&self.cfg.url, &data, "vector")?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                let v = r.get("value").and_then(point)?;
                Some((labels(&self.cfg, r), v.1))
            })
            .collect())
    }
}

impl Sampler for PrometheusSource {
    fn sample(&mut self) -> Result<Snapshot, MonitorError> {
        let gpus = self.instant().map_err(|e| MonitorError::Source(e.to_string()))?;
        Ok(Snapshot { t_s: unix_now(), gpus })
    }

    /// The last `span_s` seconds at 240 points (a point every second at least).
    fn history(&mut self, span_s: f64) -> Result<Vec<Snapshot>, MonitorError> {
        let end = unix_now();
        let step = (span_s / 240.0).max(1.0);
        let series = self.range(end - span_s, end, step).map_err(|e| MonitorError::Source(e.to_string()))?;
        Ok(super::recording::snapshots(&series))
    }
}

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// "90s", "15m", "1h", "2d" (or bare seconds) as seconds.
pub fn parse_duration(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, mul) = match t.char_indices().last() {
        Some((i, 's')) => (&t[..i], 1.0),
        Some((i, 'm')) => (&t[..i], 60.0),
        Some((i, 'h')) => (&t[..i], 3600.0),
        Some((i, 'd')) => (&t[..i], 86400.0),
        _ => (t, 1.0),
    };
    match num.parse::<f64>() {
        Ok(v) if v > 0.0 && v.is_finite() && v * mul <= 90.0 * 86400.0 => Ok(v * mul),
        _ => Err(format!("--range {s}: a duration such as 90s, 15m, 1h or 2d (at most 90d)")),
    }
}

/// A range query's series: its labels and (unix seconds, value) points.
type Matrix = (Labels, Vec<(f64, f64)>);

struct Labels {
    /// (host, gpu)
    key: (String, String),
    name: String,
}

impl Labels {
    fn index(&self) -> u32 {
        self.key.1.parse().unwrap_or(u32::MAX)
    }
}

fn gpu_order(g: &str) -> (u32, String) {
    (g.parse().unwrap_or(u32::MAX), g.to_owned())
}

fn labels(cfg: &PromConfig, row: &Value) -> Labels {
    let m = row.get("metric");
    let get = |k: &str| m.and_then(|m| m.get(k)).and_then(Value::as_str).unwrap_or("").to_owned();
    let host = get(&cfg.host_label);
    // without the host label, the scrape target names the machine
    let host = if host.is_empty() { get("instance") } else { host };
    Labels { key: (host, get(&cfg.gpu_label)), name: get("modelName") }
}

/// `[ts, "value"]`.
fn point(p: &Value) -> Option<(f64, f64)> {
    let a = p.as_array()?;
    let t = a.first()?.as_f64()?;
    let v: f64 = a.get(1)?.as_str()?.parse().ok()?;
    v.is_finite().then_some((t, v))
}

fn result_rows(url: &str, data: &Value, want: &str) -> Result<Vec<Value>, PromError> {
    let kind = data.get("resultType").and_then(Value::as_str).unwrap_or("");
    if kind != want {
        return Err(PromError::NotPrometheus {
            url: url.to_owned(),
            why: format!("resultType \"{kind}\" where \"{want}\" was expected"),
        });
    }
    data.get("result")
        .and_then(Value::as_array)
        .cloned()
        .ok_or_else(|| PromError::NotPrometheus { url: url.to_owned(), why: "no data.result array".into() })
}

/// The `data` of a Prometheus API response body, or what is wrong with it.
pub(crate) fn parse_response(url: &str, query: &str, status: u16, body: &str) -> Result<Value, PromError> {
    let v: Value = match serde_json::from_str(body) {
        Ok(v) => v,
        Err(e) if (200..300).contains(&status) => {
            return Err(PromError::NotPrometheus {
                url: url.to_owned(),
                why: format!("the body is not JSON ({e})"),
            });
        }
        Err(_) => return Err(PromError::Http { url: url.to_owned(), status }),
    };
    match v.get("status").and_then(Value::as_str) {
        Some("success") => v.get("data").cloned().ok_or_else(|| PromError::NotPrometheus {
            url: url.to_owned(),
            why: "a success without data".into(),
        }),
        Some("error") => Err(PromError::Query {
            query: query.to_owned(),
            error_type: v.get("errorType").and_then(Value::as_str).unwrap_or("error").to_owned(),
            error: v.get("error").and_then(Value::as_str).unwrap_or("").to_owned(),
        }),
        _ if !(200..300).contains(&status) => Err(PromError::Http { url: url.to_owned(), status }),
        _ => Err(PromError::NotPrometheus { url: url.to_owned(), why: "no \"status\" field".into() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_read_or_named() {
        let ok = r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#;
        assert!(parse_response("u", "q", 200, ok).is_ok());
        let err = r#"{"status":"error","errorType":"bad_data","error":"parse error at char 5"}"#;
        assert!(matches!(parse_response("u", "q", 400, err), Err(PromError::Query { .. })));
        assert!(matches!(parse_response("u", "q", 200, "<html>"), Err(PromError::NotPrometheus { .. })));
        assert!(matches!(
            parse_response("u", "q", 502, "bad gateway"),
            Err(PromError::Http { status: 502, .. })
        ));
        assert!(matches!(parse_response("u", "q", 200, "{\"a\":1}"), Err(PromError::NotPrometheus { .. })));
    }

    #[test]
    fn durations_and_selectors_are_checked() {
        assert_eq!(parse_duration("1h"), Ok(3600.0));
        assert_eq!(parse_duration("90s"), Ok(90.0));
        assert_eq!(parse_duration("15m"), Ok(900.0));
        assert!(
            parse_duration("1w").is_err() && parse_duration("-5m").is_err() && parse_duration("").is_err()
        );
        let mut c = PromConfig::new("http://127.0.0.1:9090/");
        assert_eq!(c.url, "http://127.0.0.1:9090");
        assert!(c.validate().is_ok());
        c.selector = "job=\"x\"".into();
        assert!(c.validate().unwrap_err().contains("--selector"));
        c.selector = "{job=\"x\"}".into();
        assert_eq!(c.metric("DCGM_FI_DEV_FB_USED"), "DCGM_FI_DEV_FB_USED{job=\"x\"}");
        assert!(PromConfig::new("localhost:9090").validate().is_err());
    }
}
