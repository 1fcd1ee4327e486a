// The alerts. Each links its heading of the runbook; thresholds and durations come from
// _config (config.libsonnet).
//
// Every alert is about one account (_config.accountLabel), or one asset of it: the replicas
// (_config.replicaLabel) and slices (_config.shardLabel) that serve the same series are one
// source, so an event pages once however many serve it. A page that was firing stays firing
// through what says nothing new (a restart of the exporter or of Prometheus within the gap
// window, an API outage of any length) and ends at the first sample that says it is over.
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
  // The account an alert is about, in its description.
  local who = '{{ if $labels.%(a)s }}account {{ $labels.%(a)s }} (job {{ $labels.job }}){{ else }}job {{ $labels.job }}{{ end }}' % { a: c.accountLabel },

  // What an alert is about: an account, an asset of it, a listing of an asset.
  local account = 'job, %(accountLabel)s' % c,
  local asset = account + ', kind, asset',
  local listing = asset + ', blacklist',
  // Who serves it: aggregated away.
  local servers = '%(replicaLabel)s, %(shardLabel)s' % c,
  local series(name, matchers='') = '%s{%s%s}' % [name, c.selector, if matchers == '' then '' else ', ' + matchers],
  // One value of a series per account, whoever serves it: of the replicas that serve it now,
  // else its last sample within the window (a restart, a scrape gap, Prometheus down).
  local merged(selector, window=c.gapWindow, aggregation='max') =
    '(%(a)s without (%(s)s) (%(x)s) or %(a)s without (%(s)s) (last_over_time(%(x)s[%(w)s])))'
    % { a: aggregation, s: servers, x: selector, w: window },
  // One copy of a process' own series, however many slices serve it.
  local once(aggregation, expr) = '%s without (%s) (%s)' % [aggregation, c.shardLabel, expr],
  // An alert of this name that was firing (or `states`) within the gap window, with the labels
  // it had: the page's own memory, which a Prometheus restart within the window keeps.
  local was(name, states='firing') =
    'max without (alertname, alertstate) (last_over_time(ALERTS{%s, alertname="%s", alertstate=~"%s"}[%s]))'
    % [c.selector, name, states, c.gapWindow],
  // A recording rule's result, bridged over the gap window (a restart leaves it without a
  // sample until the exporter serves again).
  local recorded(name) = 'last_over_time(%s{%s}[%s])' % [name, c.selector, c.gapWindow],
  // The account's lists are polled fine by some replica now.
  local fresh = 'max without (%s) (%s) == 1' % [servers, series('reputation_up')],
  // A page kept while nothing says it is over: `name` was firing, no sample of `data` (the
  // series it reads) remains within the window, and the asset is not gone from fresh lists
  // (an API outage, every replica down, Prometheus without samples: the page neither
  // resolves nor pages again when the data comes back). `over` also ends it.
  local held(name, key, data, over='') =
    local kept = '(\n  %s\n  unless on (%s) %s%s\n)' % [was(name), key, data, if over == '' then '' else '\n  unless on (%s) %s' % [asset, over]];
    '%(kept)s\nand on (%(asset)s) %(known)s\nor\n%(kept)s\nunless on (%(account)s) %(fresh)s\n'
    % { kept: kept, asset: asset, account: account, known: merged(series('reputation_asset_info')), fresh: fresh },

  local score = merged(series('reputation_senderscore')),
  local count = merged(series('reputation_blacklistings')),
  local listed = merged(series('reputation_blacklist_listed'), c.reportGapWindow),
  local changed = merged(series('reputation_blacklist_last_change_timestamp_seconds'), c.reportGapWindow),
  local blocked = merged(series('reputation_snds_blocked')),
  // A listing a report names whose event is younger than listingNewSeconds.
  local named = '%s == 1 and on (%s) time() - %s < %s' % [listed, listing, changed, c.listingNewSeconds],
  // A listing the list's count paged for (ReputationAssetBlacklisted) within the time a
  // listing counts as new: the report that names it later must not page it again.
  local counted = 'max without (alertname, alertstate) (max_over_time(ALERTS{%s, alertname="ReputationAssetBlacklisted", alertstate="firing"}[%ss]))' % [c.selector, c.listingNewSeconds],

  // `expr` with the asset's team tag as a `team` label, when _config.teamTag names them.
  local team(expr) =
    if c.teamTag == '' then expr else
      local tags = merged(series('reputation_asset_tag_info', 'tag=~"%s"' % c.teamTag), c.reportGapWindow);
      |||
        max without (tag) (
          label_replace(
            (%(expr)s) * on (%(asset)s) group_left (tag) max by (%(asset)s, tag) (%(tags)s),
            "team", "$1", "tag", "(.*)"
          )
        )
        or
        (%(expr)s) unless on (%(asset)s) %(tags)s
      ||| % { expr: std.rstripChars(expr, '\n'), asset: asset, tags: tags },
  // A per-asset event: `expr` (with its team), or the page kept while nothing says it is over.
  local event(name, key, expr, data, over='') =
    '(\n%s\n)\nor\n%s' % [std.rstripChars(team(expr), '\n'), held(name, key, data, over)],

  prometheusAlerts+:: {
    groups+: [
      {
        name: 'reputation.alerts',
        rules: [
          // A standing condition: reported at warning, never paged. -1 / null scores give no
          // sample, so they never fire this.
          alert(
            'ReputationSenderScoreLow',
            'warning',
            '%s < %s' % [score, c.senderScoreFloor],
            'Sender Score is low.',
            'The Sender Score of {{ $labels.kind }} {{ $labels.asset }} is {{ $value }}, below %(senderScoreFloor)s. Mail from it is likely to be filtered.' % c,
            pendingFor(c.senderScoreLowFor),
          ),
          // A change: pages. Needs the window's history, so a new installation never fires it.
          alert(
            'ReputationSenderScoreDropped',
            'critical',
            event(
              'ReputationSenderScoreDropped',
              asset,
              'max without (%s) (max_over_time(%s[%s])) - %s >= %s' % [servers, series('reputation_senderscore'), c.senderScoreDropWindow, score, c.senderScoreDrop],
              score,
            ),
            'Sender Score dropped sharply.',
            'The Sender Score of {{ $labels.kind }} {{ $labels.asset }} is {{ $value }} points below its highest value of the last %(senderScoreDropWindow)s.' % c,
            pendingFor(c.senderScoreDropFor),
          ),
          // A new listing, named (asset reports, which follow the list): the listing event is
          // younger than listingNewSeconds when first seen, so the standing listings of a new
          // installation (days or months old) never page, and the list's count has not paged
          // it already. Once firing it lasts until the delisting, however long that takes.
          alert(
            'ReputationBlacklistListed',
            'critical',
            event(
              'ReputationBlacklistListed',
              listing,
              |||
                %(listed)s == 1
                and on (%(listing)s)
                (
                  (time() - %(changed)s < %(listingNewSeconds)s unless on (%(asset)s) %(counted)s)
                  or on (%(listing)s) %(was)s
                )
              ||| % (c {
                       asset: asset,
                       listing: listing,
                       listed: listed,
                       changed: changed,
                       counted: counted,
                       was: was('ReputationBlacklistListed'),
                     }),
              listed,
              // The list says the asset is on no blacklist.
              over='%s == 0' % count,
            ),
            'Asset newly listed on a blacklist.',
            '{{ $labels.kind }} {{ $labels.asset }} is newly listed on {{ $labels.blacklist }}.',
          ),
          // A new listing from the list's count, for the listings no report names (reports
          // off, not selected, 404, failing): the count rose above its lowest of the window
          // and, for listingCountFor, no report named a new listing of the asset. Once firing,
          // a report that names it later changes nothing: one listing, one page. It resolves
          // when the count falls back, or when the listing has stood the whole window.
          alert(
            'ReputationAssetBlacklisted',
            'critical',
            event(
              'ReputationAssetBlacklisted',
              asset,
              |||
                %(count)s > 0
                and on (%(asset)s) %(rise)s > 0
                unless on (%(asset)s) (%(named)s unless on (%(asset)s) %(was)s)
              ||| % (c {
                       asset: asset,
                       count: count,
                       // Risen on every replica that serves the count: by then the replica
                       // that reports on the asset has seen it too, and followed it.
                       rise:
                         '(min without (%(s)s) (%(x)s - %(low)s) or min without (%(s)s) (last_over_time(%(x)s[%(g)s]) - %(low)s))'
                         % { s: servers, x: series('reputation_blacklistings'), g: c.gapWindow, low: 'min_over_time(%s[%s])' % [series('reputation_blacklistings'), c.listingWindow] },
                       named: named,
                       was: was('ReputationAssetBlacklisted'),
                     }),
              count,
            ),
            'Asset newly blacklisted.',
            '{{ $labels.kind }} {{ $labels.asset }} is now listed on {{ $value }} blacklist(s), more than in the last %(listingWindow)s.' % c,
            pendingFor(c.listingCountFor),
          ),
          alert(
            'ReputationSndsRed',
            'warning',
            '%s == 1' % merged(series('reputation_snds_reputation', 'reputation_snds_reputation="red"')),
            'Microsoft SNDS reputation is red.',
            'Microsoft SNDS rates {{ $labels.kind }} {{ $labels.asset }} red: Outlook.com filters most of its mail.',
            pendingFor(c.sndsRedFor),
          ),
          // A new block: blocked now and not at some time in the window; it lasts until the
          // block is lifted. A block first seen at installation does not page.
          alert(
            'ReputationSndsBlocked',
            'critical',
            event(
              'ReputationSndsBlocked',
              asset,
              |||
                %(blocked)s == 1
                and on (%(asset)s)
                (
                  min without (%(servers)s) (min_over_time(%(blocks)s[%(sndsBlockedNewWindow)s])) == 0
                  or on (%(asset)s) %(was)s
                )
              ||| % (c {
                       asset: asset,
                       servers: servers,
                       blocked: blocked,
                       blocks: series('reputation_snds_blocked'),
                       was: was('ReputationSndsBlocked', 'firing|pending'),
                     }),
              blocked,
            ),
            'Microsoft SNDS newly reports the asset blocked.',
            'Microsoft SNDS reports {{ $labels.kind }} {{ $labels.asset }} as blocked: Outlook.com rejects its mail.',
            pendingFor(c.sndsBlockedFor),
          ),
          // Polls that fail after their retries on every replica (503s the retries got past
          // are no symptom). An endpoint has no reputation_api_up before its first outcome;
          // for asset it is 0 after 5 failed reports in a row.
          alert(
            'ReputationApiDown',
            'warning',
            '%s == 0' % merged(series('reputation_api_up')),
            'The reputation API keeps failing.',
            'Polls of the API endpoint {{ $labels.endpoint }} for %s have failed after their retries for %s on every replica; the exported values are ageing.' % [who, c.apiDownFor],
            pendingFor(c.apiDownFor),
          ),
          alert(
            'ReputationApiTokenRejected',
            'critical',
            '%s == 0' % merged(series('reputation_api_auth_ok'), aggregation='min'),
            "The reputation API rejects the exporter's token.",
            'The API answers 401/403 for %s: the token is wrong, expired or lacks access. No new data arrives.' % who,
            pendingFor(c.tokenRejectedFor),
          ),
          // The one page of an API outage: no replica has polled the lists for
          // staleAfterSeconds, so the asset series are gone and no new event can page.
          alert(
            'ReputationDataStale',
            'critical',
            'time() - min without (endpoint) (max without (%s) (%s)) > %s' % [servers, series('reputation_last_success_timestamp_seconds', 'endpoint=~"ip-list|domain-list"'), c.staleAfterSeconds],
            'Reputation data is stale.',
            'No replica has polled the lists of %s for {{ $value | humanizeDuration }}; past metrics.max_age the asset series are dropped and no new listing can page. The listing pages already firing stay firing.' % who,
            pendingFor(c.staleFor),
          ),
          // No replica serves the account (or one of its slices).
          alert(
            'ReputationExporterDown',
            'critical',
            'min without (%s) (max without (%s) (%s)) == 0' % [c.shardLabel, c.replicaLabel, series('up')],
            'The reputation exporter cannot be scraped.',
            'Prometheus cannot scrape any replica of %s, or of one of its slices: no reputation data and no reputation alerts from it.' % who,
            pendingFor(c.exporterDownFor),
          ),
          // One replica down while another serves everything: nothing is lost, a ticket.
          alert(
            'ReputationExporterReplicaDown',
            'warning',
            '%s == 0\nand on (%s)\nmin without (%s) (max without (%s) (%s)) == 1\n' % [once('min', series('up')), account, c.shardLabel, c.replicaLabel, series('up')],
            'A replica of the reputation exporter cannot be scraped.',
            'Prometheus cannot scrape {{ $labels.%s }} (or one of its slices); another replica serves %s, so no data is missing.' % [c.replicaLabel, who],
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
        ],
      },
      // The account as a whole, from the recording rules (rules.libsonnet) and the slices'
      // own series: where every slice is seen (the one Prometheus, or the global view of a
      // hashmod fleet, which holds the rules' results and not every asset).
      {
        name: 'reputation.fleet',
        rules: [
          // The standing listings of an account: one alert, whatever their number (from the
          // recording rules, so that a global view evaluates it over every slice).
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

          alert(
            'ReputationShardsMissing',
            'critical',
            |||
              count by (%(account)s, %(replicaLabel)s) (reputation_exporter_shards{%(selector)s})
              < max by (%(account)s, %(replicaLabel)s) (reputation_exporter_shards{%(selector)s})
            ||| % (c { account: account }),
            'Slices of the exporter are not scraped.',
            'Only {{ $value }} slice(s) of {{ $labels.%(replicaLabel)s }} are scraped, fewer than its metrics.shards: the assets of the others have no series and no alerts.' % c,
            pendingFor(c.shardsMissingFor),
          ),
          alert(
            'ReputationShardingMismatch',
            'critical',
            'stdvar by (%(account)s, %(replicaLabel)s) (reputation_exporter_shards{%(selector)s}) != 0' % (c { account: account }),
            'Slices of the exporter disagree on metrics.shards.',
            'The slices of {{ $labels.%(replicaLabel)s }} scraped say different numbers of slices (replicas with different metrics.shards?): some assets are in two slices and others in none.' % c,
            pendingFor(c.shardsMissingFor),
          ),
        ],
      },
    ],
  },
}
