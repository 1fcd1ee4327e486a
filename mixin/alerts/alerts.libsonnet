// The alerts. Each links its heading of the runbook; thresholds and durations come from
// _config (config.libsonnet).
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
  // The last sample of a series within the gap window: a restart's gap keeps the alert
  // (and its `for`), a contradicting sample ends it at the next evaluation.
  local last(selector, window=c.gapWindow) = 'last_over_time(%s[%s])' % [selector, window],
  local asset = 'job, %(instanceLabel)s, kind, asset' % c,
  // Still firing (or pending): what keeps a new event's page up until the event is over.
  local still(name, states='firing') = 'ALERTS{%s, alertname="%s", alertstate=~"%s"}' % [c.selector, name, states],
  local pendingFor(duration) = { 'for': duration },
  // One copy of a process' own series, however many slices serve it.
  local once(aggregation, expr) = '%s without (%s) (%s)' % [aggregation, c.shardLabel, expr],
  // `expr` with the asset's team tag as a `team` label, when _config.teamTag names them.
  local team(expr) =
    if c.teamTag == '' then expr else
      local tags = 'reputation_asset_tag_info{%s, tag=~"%s"}' % [c.selector, c.teamTag];
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
            '%s < %s' % [last('reputation_senderscore{%(selector)s}' % c), c.senderScoreFloor],
            'Sender Score is low.',
            'The Sender Score of {{ $labels.kind }} {{ $labels.asset }} is {{ $value }}, below %(senderScoreFloor)s. Mail from it is likely to be filtered.' % c,
            pendingFor(c.senderScoreLowFor),
          ),
          // A change: pages. Needs the window's history, so a new installation never fires it.
          alert(
            'ReputationSenderScoreDropped',
            'critical',
            team('max_over_time(reputation_senderscore{%(selector)s}[%(senderScoreDropWindow)s]) - %(last)s >= %(senderScoreDrop)s' % (c { last: last('reputation_senderscore{%(selector)s}' % c) })),
            'Sender Score dropped sharply.',
            'The Sender Score of {{ $labels.kind }} {{ $labels.asset }} is {{ $value }} points below its highest value of the last %(senderScoreDropWindow)s.' % c,
            pendingFor(c.senderScoreDropFor),
          ),
          // A new listing (needs asset reports, names the blacklist): the listing event is
          // younger than listingNewSeconds when first seen, so the standing listings of a new
          // installation (days or months old) never page. Once firing it lasts until the
          // delisting, however long that takes.
          alert(
            'ReputationBlacklistListed',
            'critical',
            team(|||
              %(listed)s == 1
              and on (%(asset)s, blacklist)
              (
                time() - %(changed)s < %(listingNewSeconds)s
                or on (%(asset)s, blacklist) %(still)s
              )
            ||| % (c {
                     asset: asset,
                     listed: last('reputation_blacklist_listed{%(selector)s}' % c, c.reportGapWindow),
                     changed: last('reputation_blacklist_last_change_timestamp_seconds{%(selector)s}' % c, c.reportGapWindow),
                     still: still('ReputationBlacklistListed'),
                   })),
            'Asset newly listed on a blacklist.',
            '{{ $labels.kind }} {{ $labels.asset }} is newly listed on {{ $labels.blacklist }}.',
          ),
          // A new listing from the list endpoint's count, for assets without asset reports
          // (with reports, ReputationBlacklistListed says the same with the blacklist's name):
          // the count rose above its lowest of the window; it resolves when the count falls
          // back, or when the listing has stood the whole window.
          alert(
            'ReputationAssetBlacklisted',
            'critical',
            team(|||
              %(count)s > 0
              and %(count)s > min_over_time(reputation_blacklistings{%(selector)s}[%(listingWindow)s])
              unless on (%(asset)s) %(reported)s
            ||| % (c {
                     asset: asset,
                     count: last('reputation_blacklistings{%(selector)s}' % c),
                     reported: last('reputation_blacklist_listed{%(selector)s}' % c, c.reportGapWindow),
                   })),
            'Asset newly blacklisted.',
            '{{ $labels.kind }} {{ $labels.asset }} is now listed on {{ $value }} blacklist(s), more than in the last %(listingWindow)s.' % c,
          ),
          // The standing listings of an account: one alert, whatever their number.
          alert(
            'ReputationBlacklistedAssets',
            'info',
            'count by (job, %(instanceLabel)s) (%(count)s > 0)' % (c { count: last('reputation_blacklistings{%(selector)s}' % c) }),
            'Assets are listed on blacklists.',
            '{{ $value }} asset(s) of {{ $labels.%(instanceLabel)s }} are listed on at least one blacklist. New listings page on their own; see the dashboard for these.' % c,
            pendingFor(c.standingFor),
          ),
          alert(
            'ReputationSndsRed',
            'warning',
            '%s == 1' % last('reputation_snds_reputation{%(selector)s, reputation_snds_reputation="red"}' % c),
            'Microsoft SNDS reputation is red.',
            'Microsoft SNDS rates {{ $labels.kind }} {{ $labels.asset }} red: Outlook.com filters most of its mail.',
            pendingFor(c.sndsRedFor),
          ),
          // A new block: blocked now and not at some time in the window; it lasts until the
          // block is lifted. A block first seen at installation does not page.
          alert(
            'ReputationSndsBlocked',
            'critical',
            team(|||
              %(blocked)s == 1
              and on (%(asset)s)
              (
                min_over_time(reputation_snds_blocked{%(selector)s}[%(sndsBlockedNewWindow)s]) == 0
                or on (%(asset)s) %(still)s
              )
            ||| % (c {
                     asset: asset,
                     blocked: last('reputation_snds_blocked{%(selector)s}' % c),
                     still: still('ReputationSndsBlocked', 'firing|pending'),
                   })),
            'Microsoft SNDS newly reports the asset blocked.',
            'Microsoft SNDS reports {{ $labels.kind }} {{ $labels.asset }} as blocked: Outlook.com rejects its mail.',
            pendingFor(c.sndsBlockedFor),
          ),
          alert(
            'ReputationSndsBlockedAssets',
            'info',
            'count by (job, %(instanceLabel)s) (%(blocked)s == 1)' % (c { blocked: last('reputation_snds_blocked{%(selector)s}' % c) }),
            'Microsoft SNDS reports assets blocked.',
            '{{ $value }} asset(s) of {{ $labels.%(instanceLabel)s }} are blocked by Microsoft SNDS. New blocks page on their own; see the dashboard for these.' % c,
            pendingFor(c.standingFor),
          ),
          // Polls that fail after their retries (503s the retries got past are no symptom).
          // An endpoint has no reputation_api_up before its first outcome, and the gap window
          // carries the state across a restart; for asset it is 0 after 5 failed reports in a
          // row.
          alert(
            'ReputationApiDown',
            'warning',
            '%s == 0' % once('max', last('reputation_api_up{%(selector)s}' % c)),
            'The reputation API keeps failing.',
            'Polls of the API endpoint {{ $labels.endpoint }} by {{ $labels.%(instanceLabel)s }} have failed after their retries for %(apiDownFor)s; the exported values are ageing.' % c,
            pendingFor(c.apiDownFor),
          ),
          alert(
            'ReputationApiTokenRejected',
            'critical',
            '%s == 0' % once('max', last('reputation_api_auth_ok{%(selector)s}' % c)),
            "The reputation API rejects the exporter's token.",
            'The API answers 401/403 to {{ $labels.%(instanceLabel)s }}: the token is wrong, expired or lacks access. No new data arrives.' % c,
            pendingFor(c.tokenRejectedFor),
          ),
          alert(
            'ReputationDataStale',
            'warning',
            'time() - %s > %s' % [once('max', 'reputation_last_success_timestamp_seconds{%(selector)s, endpoint=~"ip-list|domain-list"}' % c), c.staleAfterSeconds],
            'Reputation data is stale.',
            'The last successful poll of {{ $labels.endpoint }} by {{ $labels.%(instanceLabel)s }} was {{ $value | humanizeDuration }} ago; after metrics.max_age its asset series disappear.' % c,
            pendingFor(c.staleFor),
          ),
          alert(
            'ReputationExporterDown',
            'critical',
            '%s == 0' % once('min', 'up{%(selector)s}' % c),
            'The reputation exporter cannot be scraped.',
            'Prometheus cannot scrape {{ $labels.%(instanceLabel)s }} (or one of its slices): no reputation data and no reputation alerts from it.' % c,
            pendingFor(c.exporterDownFor),
          ),
          alert(
            'ReputationExporterReloadFailed',
            'warning',
            '%s == 0' % once('max', 'reputation_exporter_config_last_reload_successful{%(exporterSelector)s}' % c),
            'The exporter refused its new configuration.',
            '{{ $labels.%(instanceLabel)s }} refused the configuration it was asked to reload (SIGHUP or POST /-/reload) and runs the previous one; the next restart would fail the same way.' % c,
            pendingFor(c.reloadFailedFor),
          ),
        ],
      },
      // A fleet of slices (metrics.shards) as a whole: only where every slice is seen.
      {
        name: 'reputation.fleet',
        rules: [
          alert(
            'ReputationShardsMissing',
            'critical',
            |||
              count by (job, %(instanceLabel)s) (reputation_exporter_shards{%(selector)s})
              < max by (job, %(instanceLabel)s) (reputation_exporter_shards{%(selector)s})
            ||| % c,
            'Slices of the exporter are not scraped.',
            'Only {{ $value }} slice(s) of {{ $labels.%(instanceLabel)s }} are scraped, fewer than its metrics.shards: the assets of the others have no series and no alerts.' % c,
            pendingFor(c.shardsMissingFor),
          ),
          alert(
            'ReputationShardingMismatch',
            'critical',
            'stdvar by (job, %(instanceLabel)s) (reputation_exporter_shards{%(selector)s}) != 0' % c,
            'Slices of the exporter disagree on metrics.shards.',
            'The slices of {{ $labels.%(instanceLabel)s }} scraped say different numbers of slices (replicas with different metrics.shards?): some assets are in two slices and others in none.' % c,
            pendingFor(c.shardsMissingFor),
          ),
        ],
      },
    ],
  },
}
