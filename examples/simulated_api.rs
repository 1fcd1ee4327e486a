//! The simulated API on its own, for the benchmarks:
//! `cargo run --release --example simulated_api -- ASSETS [ADDRESS [REPORT_DELAY_MS]]`.
//! Four in five assets are IP addresses, the rest domains; each asset report answers after
//! REPORT_DELAY_MS (default 0). It prints its base URL and serves until killed. The token is
//! `demo-token`.

use reputation_exporter::demo::SimulatedApi;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let assets: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let address = args.next().unwrap_or_else(|| "127.0.0.1:0".into());
    let delay: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(0);
    let ips = assets * 4 / 5;
    let api = SimulatedApi::new(ips, assets - ips);
    api.set_report_delay(std::time::Duration::from_millis(delay));
    let listener = tokio::net::TcpListener::bind(&address).await?;
    println!("http://{}", listener.local_addr()?);
    axum::serve(listener, api.router()).await
}
