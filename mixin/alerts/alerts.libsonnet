// The alerts. Each links its heading of the runbook; thresholds and durations come from
// _config (config.libsonnet).
//
// Every alert is one condition on what the exporter serves now: what is new and since when
// comes from the API's own data (a listing's start, the change at the API's last check), so no
// rule keeps history or reads its own alerts. The replicas (_config.replicaLabel) and shards
// (_config.shardLabel) that serve the same series are joined once per rule, so an event pages
// once however many serve it; `keep_firing_for` carries a firing alert over a scrape gap or a
// restart, and Alertmanager's inhibition keeps an API outage to one page
// (deploy/alertmanager/alertmanager.yml).
{
  local c = $._config,
  local runbook(name) = '%s#%s' % [c.runbookUrl, std.asciiLower(name)],
  // An alert of this mixin: its name, severity and runbook link set in one way.
  local alert(name, severity, expr, summary, description, extra={}) = {
    alert: name,
    expr: expr,
    labels: { severity: severity },
    annotations: {
      summary: summary,
      description: description,
      runbook_url: runbook(name),
    },
  } + extra,
  local pendingFor(duration) = { 'for': duration },
  // Carried over a gap in the data (a failed scrape, a restart): resolved only when the data
  // has said it is over for this long.
  local bridged = { keep_firing_for: c.keepFiringFor },
  // The account an alert is about, in its description.
  local who = '{{ if $labels.%(a)s }}account {{ $labels.%(a)s }} (job {{ $labels.job }}){{ else }}job {{ $labels.job }}{{ end }}' % { a: c.accountLabel },

  local account = 'job, %(accountLabel)s' % c,
  local asset = account + ', kind, asset',
  // One value of a series per account (and asset), whichever replicas and shards serve it.
  local one(metric, matchers='', aggregation='max') =
    '%s without (%s, %s) (%s{%s%s})'
    % [aggregation, c.replicaLabel, c.shardLabel, metric, c.selector, if matchers == '' then '' else ', ' + matchers],
  // A comparison after a selector, or nothing.
  local compared(condition) = if condition == '' then '' else ' ' + condition,
  // The series of `metric` for which some replica says `condition`, one per account and asset:
  // filtered before the replicas are joined, so the join only sees the few that match.
  local any(metric, condition, matchers='', aggregation='max') =
    '%s without (%s, %s) (%s{%s%s}%s)'
    % [aggregation, c.replicaLabel, c.shardLabel, metric, c.selector, if matchers == '' then '' else ', ' + matchers, compared(condition)],
  // One copy of a process' own series, however many shards serve it.
  local once(aggregation, expr) = '%s without (%s) (%s)' % [aggregation, c.shardLabel, expr],
  // A series of the recording rules.
  local rec(name) = '%s{%s}' % [name, c.selector],
  // An event the exporter serves (docs/metrics.md, "Events"), one per account and label set
  // whichever replicas and shards serve it, where `condition` holds. While no replica serves
  // the account's lists (an API outage past metrics.max_age, every replica down or started
  // cold in one), what was served within listsMaxAge stands: a replica serves events only
  // with its lists, so that is what they said last, and an outage closes no page.
  // `aggregation` joins the replicas' values (the earliest sight of a rise: min).
  local event(metric, condition='', aggregation='max') =
    '%(one)s\nor\n%(held)s\nunless on (job, %(a)s) max without (%(r)s, %(s)s, kind) (reputation_assets{%(sel)s}) > 0' % {
      one: any(metric, condition, aggregation=aggregation),
      held: '%s without (%s, %s) (last_over_time(%s{%s}[%s])%s)' % [aggregation, c.replicaLabel, c.shardLabel, metric, c.selector, c.listsMaxAge, compared(condition)],
      a: c.accountLabel,
      r: c.replicaLabel,
      s: c.shardLabel,
      sel: c.selector,
    },
  // Carried over a replica's restart: an event ends when the data says so, not at a gap.
  local eventBridged = { keep_firing_for: c.eventKeepFiringFor },
  // A recording rule's result, over four of its evaluations (they come every rulesInterval).
  local recorded(name) = 'last_over_time(%s{%s}[%s])' % [name, c.selector, c.recordedWindow],
  // The first `c.worstNamed` assets of a recorded list of worst assets (`order`: bottomk or
  // topk) of the alert's account, for a description: "kind asset (value), ..." lowest first,
  // or without the value, by name.
  local worst(name, order, value=true) =
    local selection = '%(order)s(%(n)d, last_over_time(%(name)s{%(sel)s, %(a)s=%%q}[%(w)s]))' % {
      order: order,
      n: c.worstNamed,
      name: name,
      sel: std.strReplace(c.selector, '"', '\\"'),
      a: c.accountLabel,
      w: c.recordedWindow,
    };
    local asked = 'query (printf "%s" $labels.%s)' % [if value then 'sort(%s)' % selection else selection, c.accountLabel];
    '{{ range $i, $worst := %s }}{{ if $i }}, {{ end }}{{ .Labels.kind }} {{ .Labels.asset }}%s{{ end }}'
    % [if value then asked else asked + ' | sortByLabel "asset"', if value then ' ({{ .Value }})' else ''],
  // The dashboard, linked from the account-level alerts when its address is configured.
  local dashboard =
    if c.dashboardUrl == '' then {} else {
      annotations+: { dashboard_url: '%s?var-job={{ $labels.job }}&var-account={{ $labels.%s }}' % [c.dashboardUrl, c.accountLabel] },
    },

  // What a page about one asset says of it, from the series the exporter serves (each a
  // query when the alert fires): its host names and its tags (the owner), comma-separated, and
  // a link to the asset in the dashboard when its address is configured.
  local ofAsset(metric, label) =
    '{{ range $i, $s := query (printf "max by (%(l)s) (%(m)s{%(sel)s, %(a)s=%%q, kind=%%q, asset=%%q})" $labels.%(a)s $labels.kind $labels.asset) | sortByLabel "%(l)s" }}{{ if $i }}, {{ end }}{{ $s.Labels.%(l)s }}{{ end }}'
    % { l: label, m: metric, sel: std.strReplace(c.selector, '"', '\\"'), a: c.accountLabel },
  local aboutAsset = {
    annotations+: {
      hostnames: ofAsset('reputation_asset_hostname_info', 'hostname'),
      owner: ofAsset('reputation_asset_tag_info', 'tag'),
    } + if c.dashboardUrl == '' then {} else {
      dashboard_url: '%s?var-job={{ $labels.job }}&var-account={{ $labels.%s }}&var-kind={{ $labels.kind }}&var-search={{ $labels.asset }}&var-asset={{ $labels.asset }}' % [c.dashboardUrl, c.accountLabel],
    },
  },
  // What a listing's page says of its blacklist (reputation_blacklist_info): the removal page
  // with the asset filled in, and the policy in words; for a list the exporter does not know,
  // that it does not.
  local blacklistInfo(label) =
    '{{ with query (printf "max by (%(l)s) (reputation_blacklist_info{%(sel)s, %(a)s=%%q, blacklist=%%q})" $labels.%(a)s $labels.blacklist) }}%(tail)s{{ end }}'
    % {
      l: label,
      sel: std.strReplace(c.selector, '"', '\\"'),
      a: c.accountLabel,
      tail: if label == 'removal' then '{{ reReplaceAll "[{]asset[}]" $labels.asset (. | first | label "removal") }}' else '{{ . | first | label "%s" }}' % label,
    },
  local aboutBlacklist = {
    annotations+: {
      removal_url: blacklistInfo('removal'),
      removal_policy: blacklistInfo('summary'),
      removal_advice: blacklistInfo('advice'),
      listed_since: '{{ with query (printf "max(reputation_blacklist_listed_since_timestamp_seconds{%(sel)s, %(a)s=%%q, kind=%%q, asset=%%q, blacklist=%%q})" $labels.%(a)s $labels.kind $labels.asset $labels.blacklist) }}{{ . | first | value | humanizeTimestamp }}{{ end }}'
                    % { sel: std.strReplace(c.selector, '"', '\\"'), a: c.accountLabel },
    },
  },

  // `expr` with the asset's team tag as a `team` label, when _config.teamTag names them (one
  // team per asset: of several matching tags, the alert carries one; an asset without one
  // alerts without `team`).
  local team(expr) =
    if c.teamTag == '' then expr else
      local tags = 'max without (tag) (topk by (%s) (1, label_replace(%s, "team", "$1", "tag", "(.*)")))'
                   % [asset, one('reputation_asset_tag_info', 'tag=~"%s"' % c.teamTag)];
      '(%(expr)s) * on (%(asset)s) group_left (team) %(tags)s\nor\n(%(expr)s) unless on (%(asset)s) %(tags)s'
      % { expr: expr, asset: asset, tags: tags },

  prometheusAlerts+:: {
    groups+: [
      {
        name: 'reputation.alerts',
        rules: [
          // A score drop the exporter tells from the lists (reputation_senderscore_drop_event:
          // at the API's last check, or at one no list showed), held by it through an answer
          // that flips; its scores are its identity. It ends at the API's next check.
          alert(
            'ReputationSenderScoreDropped',
            'critical',
            team(event('reputation_senderscore_drop_event', '>= %d' % c.senderScoreDrop)),
            'Sender Score dropped sharply.',
            'The Sender Score of {{ $labels.kind }} {{ $labels.asset }} dropped {{ $value }} points, from {{ $labels.from }} to {{ $labels.to }}, at an API check (after a time without the API: at a check no poll saw).',
            eventBridged + aboutAsset,
          ),
          // A listing a report names, begun at an API check less than listingNewSeconds ago
          // (reputation_blacklisting_event_timestamp_seconds; blacklist, asset and check are
          // its identity): the listings that stand when monitoring starts never page. It
          // resolves when the listing ends, or once it is no longer new; an account's standing
          // listings are then ReputationBlacklistedAssets. A listing named after its rise paged
          // unnamed (ReputationAssetBlacklisted) is that page's, and does not page again.
          alert(
            'ReputationBlacklistListed',
            'critical',
            team('time() - (%s) < %d' % [event('reputation_blacklisting_event_timestamp_seconds'), c.listingNewSeconds]),
            'Asset newly listed on a blacklist.',
            '{{ $labels.kind }} {{ $labels.asset }} was listed on {{ $labels.blacklist }} {{ $value | humanizeDuration }} ago.',
            eventBridged + aboutAsset + aboutBlacklist,
          ),
          // A rise of the list's count that no report named within a poll and 3 minutes
          // (reputation_blacklisting_unnamed_event_timestamp_seconds, the asset its identity);
          // it stands until its listings end, named or not.
          alert(
            'ReputationAssetBlacklisted',
            'critical',
            team('time() - (%s) < %d' % [event('reputation_blacklisting_unnamed_event_timestamp_seconds', aggregation='min'), c.listingNewSeconds]),
            'Asset newly blacklisted; no report names the blacklist.',
            'The blacklist count of {{ $labels.kind }} {{ $labels.asset }} rose {{ $value | humanizeDuration }} ago, and no asset report named the new listing in time (reports off or not selected for it, or its report could not be had); a report that names it later does not page again.',
            eventBridged + aboutAsset,
          ),
          alert(
            'ReputationSndsBlocked',
            'critical',
            team(event('reputation_snds_block_event')),
            'Microsoft SNDS newly reports the asset blocked.',
            "Microsoft SNDS reports {{ $labels.kind }} {{ $labels.asset }} blocked since the API's last check (after a time without the API: since a check no poll saw): Outlook.com rejects its mail.",
            eventBridged + aboutAsset,
          ),
          alert(
            'ReputationApiDown',
            'warning',
            '%s == 0' % one('reputation_api_up'),
            'The reputation API keeps failing.',
            'Polls of the API endpoint {{ $labels.endpoint }} for %s have failed after their retries for %s on every replica; the exported values are ageing.' % [who, c.apiDownFor],
            pendingFor(c.apiDownFor) + bridged,
          ),
          alert(
            'ReputationApiTokenRejected',
            'critical',
            '%s == 0' % one('reputation_api_auth_ok', aggregation='min'),
            "The reputation API rejects the exporter's token.",
            'The API answers 401/403 for %s: the token is wrong, expired or lacks access. No new data arrives.' % who,
            pendingFor(c.tokenRejectedFor) + bridged,
          ),
          // The one page of an API outage: no replica has polled the lists for
          // staleAfterSeconds (a replica's last success counts for replicaHeld after its last
          // scrape, so that a rollout during an outage does not end it). It fires before
          // metrics.max_age drops the asset series; the pages open then stay open, as the
          // event alerts hold what the lists said last.
          alert(
            'ReputationDataStale',
            'critical',
            'time() - min without (endpoint) (max without (%s, %s) (max_over_time(reputation_last_success_timestamp_seconds{%s, endpoint=~"ip-list|domain-list"}[%s]))) > %d' % [c.replicaLabel, c.shardLabel, c.selector, c.replicaHeld, c.staleAfterSeconds],
            'Reputation data is stale.',
            'No replica has polled the lists of %s for {{ $value | humanizeDuration }}; past metrics.max_age the asset series are dropped and no new listing can page. The pages already open stay open for metrics.max_age more.' % who,
            pendingFor(c.staleFor) + bridged,
          ),
          // No replica serves every shard of its own: a replica counts as up only when all its
          // shards are scraped, so replicas on different metrics.shards (a rollout of it) cover
          // for each other.
          alert(
            'ReputationExporterDown',
            'critical',
            'max without (%s) (min without (%s) (up{%s})) == 0' % [c.replicaLabel, c.shardLabel, c.selector],
            'The reputation exporter cannot be scraped.',
            'Prometheus cannot scrape any replica of %s, or of one of its shards: no reputation data and no reputation alerts from it.' % who,
            pendingFor(c.exporterDownFor),
          ),
          alert(
            'ReputationExporterReplicaDown',
            'warning',
            '%s == 0\nand on (%s)\nmax without (%s) (min without (%s) (up{%s})) == 1\n' % [once('min', 'up{%s}' % c.selector), account, c.replicaLabel, c.shardLabel, c.selector],
            'A replica of the reputation exporter cannot be scraped.',
            'Prometheus cannot scrape {{ $labels.%s }} (or one of its shards); another replica serves %s, so no data is missing.' % [c.replicaLabel, who],
            pendingFor(c.exporterDownFor),
          ),
          alert(
            'ReputationExporterReloadFailed',
            'warning',
            '%s == 0' % once('max', 'reputation_exporter_config_last_reload_successful{%(exporterSelector)s}' % c),
            'The exporter refused its new configuration.',
            '{{ $labels.%(replicaLabel)s }} refused the configuration it was asked to reload (SIGHUP or POST /-/reload) and runs the previous one; the next restart would fail the same way.' % c,
            pendingFor(c.reloadFailedFor),
          ),
          // The global view of a hashmod fleet, watched from its servers (their job
          // globalViewSelector scrapes it): it evaluates the account-wide alerts, so it cannot
          // page its own death. Every server sends the same alert, one in Alertmanager once the
          // servers' own external label is dropped from their alerts (scrape-shards.yml).
          alert(
            'ReputationGlobalViewDown',
            'critical',
            'up{%s} == 0' % c.globalViewSelector,
            "The fleet's global view cannot be scraped.",
            '{{ $labels.instance }} of the global view (job {{ $labels.job }}) does not answer the fleet servers: the account-wide alerts (ReputationShardsMissing among them) are not evaluated and the fleet dashboard shows nothing new. Per-asset pages still come from the servers.',
            pendingFor(c.globalViewDownFor),
          ),
        ],
      },
      // The account as a whole, from the recording rules (rules.libsonnet) and the shards'
      // own series: where every shard is seen (the one Prometheus, or the global view of a
      // hashmod fleet, which holds the rules' results and not every asset).
      {
        name: 'reputation.fleet',
        rules: [
          // The standing listings of an account: one ticket, whatever their number. A new
          // listing pages on its own (ReputationBlacklistListed) and stays here until it ends.
          alert(
            'ReputationBlacklistedAssets',
            'info',
            'sum by (%s) (%s) > 0' % [account, recorded('account_kind:reputation_blacklisted_assets:count')],
            'Assets are listed on blacklists.',
            '{{ $value }} asset(s) of %s are listed on at least one blacklist. New listings page on their own; see the dashboard for these.' % who,
            pendingFor(c.standingFor),
          ),
          alert(
            'ReputationSndsBlockedAssets',
            'info',
            'sum by (%s) (%s) > 0' % [account, recorded('account_kind:reputation_snds_blocked_assets:count')],
            'Microsoft SNDS reports assets blocked.',
            '{{ $value }} asset(s) of %s are blocked by Microsoft SNDS. New blocks page on their own; see the dashboard for these.' % who,
            pendingFor(c.standingFor),
          ),

          // The standing conditions of assets, one ticket per account whatever their number
          // (an alert per asset would be tens of thousands on a large fleet, past what
          // Prometheus' notifier queue holds): how many, and the worst of them by name.
          alert(
            'ReputationSenderScoreLowAssets',
            'warning',
            'sum by (%s) (%s) > 0' % [account, recorded('account_kind:reputation_senderscore_low_assets:count')],
            'Assets have a low Sender Score.',
            '{{ $value }} asset(s) of %s have a Sender Score below %s; mail from them is likely to be filtered. Lowest: %s.' % [who, c.senderScoreFloor, worst('asset:reputation_senderscore:bottomk', 'bottomk')],
            pendingFor(c.senderScoreLowFor) + dashboard,
          ),
          alert(
            'ReputationSndsRedAssets',
            'warning',
            'sum by (%s) (last_over_time(account_kind:reputation_snds_reputation:count{%s, reputation_snds_reputation="red"}[%s])) > 0' % [account, c.selector, c.recordedWindow],
            'Microsoft SNDS rates assets red.',
            '{{ $value }} asset(s) of %s are rated red by Microsoft SNDS: Outlook.com filters most of their mail. Among them: %s.' % [who, worst('asset:reputation_snds_red:topk', 'topk', value=false)],
            pendingFor(c.sndsRedFor) + dashboard,
          ),

          alert(
            'ReputationShardsMissing',
            'critical',
            // The shards seen in the last shardsSeenWindow, not at an instant: a server that
            // dies sends no stale markers (federation and remote write keep its last samples
            // for the whole look-back), so an instant count would see it for minutes more.
            |||
              count by (%(account)s, %(replicaLabel)s) (count_over_time(reputation_exporter_shards{%(selector)s}[%(shardsSeenWindow)s]))
              < max by (%(account)s, %(replicaLabel)s) (max_over_time(reputation_exporter_shards{%(selector)s}[%(shardsSeenWindow)s]))
            ||| % (c { account: account }),
            'Shards of the exporter are not scraped.',
            'Only {{ $value }} shard(s) of {{ $labels.%(replicaLabel)s }} were scraped in the last %(shardsSeenWindow)s, fewer than its metrics.shards: a Prometheus server of the fleet (or its remote write) is down, or a shard is left out of the scrape configuration. The assets of the missing shards have no series and no alerts.' % c,
            pendingFor(c.shardsMissingFor),
          ),
          alert(
            'ReputationShardingMismatch',
            'critical',
            'stdvar by (%(account)s, %(replicaLabel)s) (reputation_exporter_shards{%(selector)s}) != 0' % (c { account: account }),
            'Shards of the exporter disagree on metrics.shards.',
            'The shards of {{ $labels.%(replicaLabel)s }} scraped say different numbers of shards (replicas with different metrics.shards?): some assets are in two shards and others in none.' % c,
            pendingFor(c.shardsMissingFor),
          ),
        ],
      },
    ],
  },
}
