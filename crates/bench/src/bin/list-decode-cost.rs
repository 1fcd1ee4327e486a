//! What decoding a list costs in time and memory, for a good list and for one that is mostly
//! garbage: `cargo run --release --bin list-decode-cost -- good|garbage [ITEMS]`.
//!
//! `good` is ITEMS (default 30,000, about 10 MB) simulated ip-list items; `garbage` is one usable
//! item and ITEMS (default 5,000,000, about 10 MB) unusable ones (`0`). Prints the body size, the
//! decode time, whether the list was taken as the fleet, and the peak resident memory of the
//! process (`VmHWM`) before and after decoding.

use std::time::Instant;

use reputation_exporter::model::AssetSet;
use reputation_exporter::vocabulary::Kind;
use reputation_simulate::ip_item;

fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "good".into());
    let items: Option<usize> = args.next().and_then(|a| a.parse().ok());
    let body = match which.as_str() {
        "garbage" => {
            let n = items.unwrap_or(5_000_000);
            let mut body = String::with_capacity(n * 2 + 64);
            body.push_str(r#"[{"ip": "192.0.2.1", "senderscore": 80}"#);
            for _ in 0..n {
                body.push_str(",0");
            }
            body.push(']');
            body.into_bytes()
        }
        _ => {
            let n = items.unwrap_or(30_000);
            let mut body = b"[".to_vec();
            for i in 0..n {
                if i > 0 {
                    body.push(b',');
                }
                serde_json::to_writer(&mut body, &ip_item(i, 0)).unwrap();
            }
            body.push(b']');
            body
        }
    };
    let before = peak_rss_mb();
    let started = Instant::now();
    let decoded = AssetSet::decode(&body, Kind::Ip, 64).expect("a JSON array");
    let taken = decoded.refusal().is_none();
    let took = started.elapsed();
    let assets = decoded.set.assets.len();
    drop(decoded);
    println!(
        "{which}: body {:.1} MB, decoded in {:.0} ms, {assets} usable, taken as the fleet: {taken}, \
         peak RSS {before:.0} MB before decoding, {:.0} MB after",
        body.len() as f64 / 1e6,
        took.as_secs_f64() * 1000.0,
        peak_rss_mb()
    );
}
