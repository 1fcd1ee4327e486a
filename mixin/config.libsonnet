// Everything an operator may want to change, in one place. Override any of it in your own
// jsonnet:
//   (import 'github.com/reputation-exporter/reputation-exporter/mixin/mixin.libsonnet') + {
//     _config+:: { senderScoreFloor: 80, selector: 'job="mail-reputation"' },
//   }
{
  _config+:: {
    // Selects the series of the asset and API metrics (the jobs scraping /metrics with one
    // account or /probe with several); every alert and recording rule uses it.
    selector: 'job="reputation"',
    // Selects the exporter's own /metrics (reload status): with several accounts it is
    // usually scraped as a job of its own (deploy/prometheus/scrape-accounts.yml).
    exporterSelector: 'job=~"reputation|reputation-exporter"',
    // The label that tells accounts (or replicas) apart; replicas report the same asset, so
    // recording rules and panels take the max without it.
    instanceLabel: 'instance',

    // ReputationSenderScoreLow: a score below the floor for this long.
    senderScoreFloor: 70,
    senderScoreLowFor: '30m',
    // The dashboard colours scores from here on green (orange between floor and this).
    senderScoreGood: 80,
    // ReputationSenderScoreDropped: this many points below the highest of the window.
    senderScoreDrop: 10,
    senderScoreDropWindow: '24h',
    senderScoreDropFor: '15m',
    // ReputationAssetBlacklisted: the count higher than at any time in this window.
    listingWindow: '6h',
    // ReputationSndsRed and ReputationSndsBlocked.
    sndsRedFor: '1h',
    sndsBlockedFor: '15m',
    // ReputationApiDown: an endpoint failing this long.
    apiDownFor: '30m',
    // ReputationApiUnavailable: this many 503 answers within the window.
    api503Count: 10,
    api503Window: '1h',
    // ReputationApiTokenRejected.
    tokenRejectedFor: '5m',
    // ReputationDataStale: the last successful list poll older than this (seconds).
    staleAfterSeconds: 3600,
    staleFor: '5m',
    // ReputationExporterDown and ReputationExporterReloadFailed.
    exporterDownFor: '5m',
    reloadFailedFor: '5m',

    // keep_firing_for (Prometheus 2.42 and later): a restart or a scrape gap leaves the asset
    // series missing for a few minutes; without it a firing alert would resolve in the gap
    // and page again after it. A real recovery resolves that much later.
    keepFiringFor: '15m',
    // The listing alerts: a large fleet's first report round after a start can take this long.
    listingKeepFiringFor: '30m',

    // Each alert links runbookUrl#<alert name in lower case>, the runbook's heading for it.
    runbookUrl: 'https://github.com/reputation-exporter/reputation-exporter/blob/main/docs/runbook.md',

    // The dashboard.
    dashboardUid: 'reputation-exporter',
    dashboardTitle: 'Sending reputation',
    dashboardRefresh: '5m',
    dashboardTags: ['reputation', 'email', 'prometheus'],
    // How far trend panels look back for the last sample: a day of daily history plus slack
    // for drifting or DST-crossing history dates.
    trendLookback: '26h',
  },
}
