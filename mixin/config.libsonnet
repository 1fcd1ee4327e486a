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
    // recording rule and panel takes one value of an account's series (the max, or the min
    // where the worst case is the low one) whatever the number of replicas serving them. One
    // replica down while another serves is a ticket (ReputationExporterReplicaDown), all down
    // a page (ReputationExporterDown).
    replicaLabel: 'instance',
    // The target label that tells the shards of metrics.shards apart (the scrape configuration
    // sets it from the `shard` parameter). Every shard carries the exporter's and the API's own
    // metrics, so alerts and panels take one copy (max or min without it) and never count,
    // page or sum a process' values once per shard.
    shardLabel: 'shard',

    // The API's alerts (ReputationApiDown, ReputationApiTokenRejected, ReputationDataStale)
    // stay firing this long (keep_firing_for) when their series go missing (a failed scrape, a
    // restart): two missed scrapes at the 1m interval scrape.yml ships.
    keepFiringFor: '3m',
    // The per-asset pages (the events the exporter serves) stay firing this long when no
    // replica serves them: a replica's restart (a cold one serves a listing from its first
    // report round) or a rollout is no end.
    eventKeepFiringFor: '5m',
    // metrics.max_age of the exporter: while no replica serves an account's lists (past it in
    // an API outage, or every replica down), the per-asset pages hold what was served this
    // far back, what the lists said last.
    listsMaxAge: '1h',

    // ReputationSenderScoreLowAssets (warning, one per account): assets below the floor, for
    // this long.
    senderScoreFloor: 70,
    senderScoreLowFor: '30m',
    // The dashboard colours scores from here on green (orange between floor and this).
    senderScoreGood: 80,
    // ReputationSenderScoreDropped (critical): the score fell this many points at an API check
    // (reputation_senderscore_drop_event); it lasts until the API's next check.
    senderScoreDrop: 10,
    // ReputationBlacklistListed and ReputationAssetBlacklisted (critical): a listing (or a rise
    // of the count no report named) that began less than this many seconds ago pages; an older
    // one (a fleet's standing listings, first seen at installation) does not. The page ends
    // with the listing, or when the listing is this old: from then on it is one of the
    // account's standing listings (ReputationBlacklistedAssets). The exporter serves the
    // events of 12 hours: a longer time pages nothing more.
    listingNewSeconds: 43200,
    // ReputationSndsRedAssets (warning, one per account): assets SNDS rates red, for this long.
    sndsRedFor: '1h',
    // The account-level warnings name this many of their worst assets (of the worstKept the
    // recording rules keep per kind and shard).
    worstNamed: 5,
    // ReputationBlacklistedAssets and ReputationSndsBlockedAssets (info): the standing
    // conditions of an account, one alert each, once they have stood this long.
    standingFor: '15m',
    // Routing by team: a regular expression on asset tags (e.g. 'team-.+'). When set, the
    // per-asset critical alerts carry the asset's matching tag as a `team` label (one per
    // asset), for Alertmanager to route on (deploy/alertmanager/alertmanager.yml). Tags need
    // asset reports; assets without a matching tag alert without `team`. Empty: no `team`
    // label.
    teamTag: '',
    // ReputationApiDown: polls of an endpoint failing after their retries this long.
    apiDownFor: '30m',
    // ReputationApiTokenRejected.
    tokenRejectedFor: '5m',
    // ReputationDataStale (critical): the last successful list poll of every replica older
    // than this (seconds), for staleFor. The one page of an API outage: it must fire before
    // metrics.max_age (1h by default) drops the asset series: keep this plus staleFor below
    // metrics.max_age.
    staleAfterSeconds: 2700,
    staleFor: '5m',
    // How long a replica's last success still counts after its last scrape: a replica that
    // restarts (a rollout, a node drain) while another cannot reach the API does not make
    // the data look stale.
    replicaHeld: '15m',
    // ReputationExporterDown (no replica serves the account), ReputationExporterReplicaDown
    // (one of several does not) and ReputationExporterReloadFailed.
    exporterDownFor: '5m',
    reloadFailedFor: '5m',
    // ReputationShardsMissing and ReputationShardingMismatch (group reputation.fleet, for
    // the global view: the one Prometheus, or Thanos / Mimir's ruler or the federating server
    // over a hashmod fleet, never a server that scrapes some shards only).
    // A shard not scraped for shardsSeenWindow, and still not after shardsMissingFor, pages:
    // a dead server of a hashmod fleet within 5 minutes (its shards' last samples are at most
    // a scrape and a federation or remote-write interval old, 2 minutes at the shipped 1m).
    shardsSeenWindow: '3m',
    shardsMissingFor: '1m',
    // ReputationGlobalViewDown (group reputation.alerts, on the servers of a hashmod fleet):
    // the servers' scrape job of the global view (the federating Prometheus, or the store and
    // its ruler) that fails this long pages: two failed scrapes at the shipped 1m, within 5
    // minutes of its death (deploy/prometheus/fleet/scrape-shards.yml).
    globalViewSelector: 'job="reputation-global"',
    globalViewDownFor: '1m',

    // Each alert links runbookUrl#<alert name in lower case>, the runbook's heading for it.
    runbookUrl: 'https://github.com/reputation-exporter/reputation-exporter/blob/main/docs/runbook.md',

    // The recording rules of the fleet's first screen, evaluated at the pace the data changes
    // (poll.interval, 5m by default) rather than every minute: the worst Sender Scores and the
    // most blacklisted assets kept per account and kind, and the events kept per account
    // (listings begun in the last changesWindowSeconds, score drops and SNDS blocks at the
    // API's last check). A Prometheus that reads the results looks back 5m for a sample by
    // default, as long as this interval: a query in the seconds an evaluation takes finds none
    // (about 2.5 s at 100,000 assets). A federating global view gets each result up to its
    // federation interval later, so it runs with a longer look-back
    // (deploy/prometheus/fleet/federate.yml).
    rulesInterval: '5m',
    // The fleet alerts read the recorded results over four of their evaluations.
    recordedWindow: '20m',
    worstKept: 25,
    // The asset view's picker lists at most this many assets matching the search.
    assetPickerMax: 1000,
    changesKept: 50,
    changesWindowSeconds: 86400,

    // The dashboard's address in your Grafana (e.g.
    // 'https://grafana.example.com/d/reputation-exporter'); when set, the account-level
    // warnings link it (annotation dashboard_url). Empty: no link.
    dashboardUrl: '',
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
