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
    // The label that tells accounts apart: replicas of one account share it (the shipped
    // scrape files and ServiceMonitors set it on every target). Every alert is about one
    // account (and asset), so that its replicas page once.
    accountLabel: 'account',
    // The label that tells the replicas of an account apart (processes, pods): every alert,
    // recording rule and panel takes one value of an account's series whatever the number of
    // replicas serving them, from the replicas that serve it now, else the last within the
    // gap window. One replica down while another serves is a ticket
    // (ReputationExporterReplicaDown), all down a page (ReputationExporterDown).
    replicaLabel: 'instance',
    // The target label that tells the slices of metrics.shards apart (the scrape configuration
    // sets it from the `shard` parameter). Every slice carries the exporter's and the API's own
    // metrics, so alerts and panels take one copy (max or min without it) and never count,
    // page or sum a process' values once per slice.
    shardLabel: 'shard',

    // Gaps bridged: where no replica serves a series now, every reputation alert reads its
    // last sample within this window, so a restart of the exporter or of Prometheus, or a
    // scrape gap, neither resolves a firing alert nor restarts a pending one's `for`, while
    // the first sample that contradicts it resolves it at once. List-side series come back
    // within a poll after a start. A page that was firing is remembered (its ALERTS series)
    // over this window too: a Prometheus down for up to this long keeps it, and Alertmanager
    // keeps it only if Prometheus runs with --rules.alert.resend-delay of a quarter of it
    // (docs/deploying.md).
    gapWindow: '20m',
    // The asset-report series (listings, blacklist events) come back as a large fleet's first
    // report round after a start reaches each asset.
    reportGapWindow: '90m',

    // ReputationSenderScoreLow (warning): a score below the floor for this long.
    senderScoreFloor: 70,
    senderScoreLowFor: '30m',
    // The dashboard colours scores from here on green (orange between floor and this).
    senderScoreGood: 80,
    // ReputationSenderScoreDropped (critical): this many points below the highest of the
    // window.
    senderScoreDrop: 10,
    senderScoreDropWindow: '24h',
    senderScoreDropFor: '15m',
    // ReputationBlacklistListed (critical): a listing whose event is younger than this is
    // new and pages; an older one (a fleet's standing listings, first seen at installation)
    // does not. A page lasts until the delisting.
    listingNewSeconds: 43200,
    // ReputationAssetBlacklisted (critical, the listings no report names): the count higher
    // than at any time in this window...
    listingWindow: '6h',
    // ...for this long, the time the report that names the listing (fetched at once: reports
    // follow the list) takes to arrive; when it does, ReputationBlacklistListed pages instead.
    listingCountFor: '2m',
    // ReputationSndsBlocked (critical): blocked now, and not blocked at some time in this
    // window (a new block); it lasts until the block is lifted.
    sndsBlockedNewWindow: '6h',
    sndsBlockedFor: '15m',
    // ReputationSndsRed (warning).
    sndsRedFor: '1h',
    // ReputationBlacklistedAssets and ReputationSndsBlockedAssets (info): the standing
    // conditions of an account, one alert each, once they have stood this long.
    standingFor: '15m',
    // Routing by team: a regular expression on asset tags (e.g. 'team-.+'). When set, the
    // per-asset critical alerts carry the asset's matching tag as a `team` label (an asset
    // with two carries two alerts, one per team), for Alertmanager to route on
    // (deploy/alertmanager/alertmanager.yml). Tags need asset reports; assets without a
    // matching tag alert without `team`. Empty: no `team` label.
    teamTag: '',
    // ReputationApiDown: polls of an endpoint failing after their retries this long.
    apiDownFor: '30m',
    // ReputationApiTokenRejected.
    tokenRejectedFor: '5m',
    // ReputationDataStale (critical): the last successful list poll of every replica older
    // than this (seconds; metrics.max_age, after which the exporter drops the asset series,
    // so no alert sees a new event). It is the one page of an API outage: the listing and
    // block pages that were firing stay firing through it, neither resolved nor paged again.
    staleAfterSeconds: 3600,
    staleFor: '5m',
    // ReputationExporterDown (no replica serves the account), ReputationExporterReplicaDown
    // (one of several does not) and ReputationExporterReloadFailed.
    exporterDownFor: '5m',
    reloadFailedFor: '5m',
    // ReputationShardsMissing and ReputationShardingMismatch (group reputation.fleet, for
    // the global view: the one Prometheus, or Thanos / Mimir's ruler or the federating server
    // over a hashmod fleet, never a server that scrapes some slices only).
    shardsMissingFor: '15m',

    // Each alert links runbookUrl#<alert name in lower case>, the runbook's heading for it.
    runbookUrl: 'https://github.com/reputation-exporter/reputation-exporter/blob/main/docs/runbook.md',

    // The recording rules of the fleet's first screen: the worst Sender Scores and the most
    // blacklisted assets kept per account and kind, and the events of the last changesWindowSeconds kept per account
    // (new listings, score drops, new SNDS blocks), recorded every changesInterval.
    worstKept: 25,
    // The asset view's picker lists at most this many assets matching the search.
    assetPickerMax: 1000,
    changesKept: 50,
    changesWindowSeconds: 86400,
    changesInterval: '5m',

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
